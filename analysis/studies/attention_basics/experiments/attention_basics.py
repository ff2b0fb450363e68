"""Scaled dot-product attention, heads and sinusoidal positions, as the Transformer notes state them.

Measured: the moments of q.k for Gaussian q, k against d; the entropy and Jacobian norm of softmax rows with
and without the 1/sqrt(d) factor (sampled keys, plus autograd on a few rows); the parameters of multi-head
attention against the number of heads; heads initialised identically, trained with and without attention
dropout and with a tiny perturbation; the shift matrix M_k of sinusoidal positions and the dot product of
two positions, raw and through random query/key projections; permutation equivariance without positions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of
from analysis.core.stats import CONFIDENCE, difference, from_se
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import Attention, LanguageModel, ModelConfig
from analysis.tasks.data import PINNED_CORPUS_PATH
from analysis.theory import transformer_basics as tb
from analysis.training.train import TrainConfig, train_lm

NAME = "attention-basics"
DATA_VERSION = 1  # raised when the layout of the record's data changes
SOURCE = "DL——Transformer study notes"
VARIANTS = ("identical", "identical + attention dropout", "identical + 1e-6 perturbation", "independent init")
VARIANT_SLUGS = ("identical", "identical-dropout", "identical-perturbation", "independent")  # their trial keys


@dataclass(frozen=True)
class Config:
    """Sampling sizes, the softmax grid, and the symmetry-training run."""

    qk_dims: tuple[int, ...]
    qk_pairs: int
    keys: int  # n, keys per softmax row
    rows: int
    row_dims: tuple[int, ...]
    d: int  # symmetry model width
    heads: int
    layers: int
    ctx: int
    batch: int
    steps: int
    lr: float
    attn_dropout: float
    pe_d: int
    pe_positions: int
    corpus_file: str | None = None
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(qk_dims=(1, 4, 16, 64, 256), qk_pairs=20_000, keys=128, rows=64, row_dims=(4, 16, 64, 256, 1024),
                    d=32, heads=4, layers=1, ctx=32, batch=4, steps=10, lr=3e-3, attn_dropout=0.1, pe_d=64,
                    pe_positions=512),
    "cpu": Config(qk_dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), qk_pairs=400_000, keys=512, rows=4096,
                  row_dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), d=64, heads=4, layers=2, ctx=64,
                  batch=16, steps=300, lr=3e-3, attn_dropout=0.1, pe_d=512, pe_positions=8192),
    "gpu": Config(qk_dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096), qk_pairs=4_000_000, keys=4096,
                  rows=8192, row_dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096), d=256, heads=8,
                  layers=4, ctx=256, batch=32, steps=2000, lr=1e-3, attn_dropout=0.1, pe_d=512, pe_positions=65536,
                  corpus_file=PINNED_CORPUS_PATH),
}




# --- q.k moments and softmax saturation -----------------------------------------------------------


def _batch_se(values: np.ndarray, statistic: Callable[[np.ndarray], float] = np.mean, batches: int = 20) -> float:
    """Standard error of ``statistic`` of ``values`` from its spread over ``batches`` equal batches."""
    parts = np.array_split(values, batches)
    return float(np.std([statistic(p) for p in parts], ddof=1) / math.sqrt(batches))


def _excess_kurtosis(x: np.ndarray) -> float:
    """E[x^4] / E[x^2]^2 - 3 of a centred sample."""
    return float((x**4).mean() / (x**2).mean() ** 2 - 3)


def qk_moments(cfg: Config, gen: torch.Generator) -> list[dict[str, float]]:
    """Sample variance and excess kurtosis of q.k for q, k ~ N(0, I_d), with batch standard errors."""
    rows = []
    for d in cfg.qk_dims:
        chunks = []
        left = cfg.qk_pairs
        while left:
            m = min(left, max(1, 2_000_000 // d))
            q = torch.randn(m, d, generator=gen, dtype=torch.float64)
            k = torch.randn(m, d, generator=gen, dtype=torch.float64)
            chunks.append((q * k).sum(-1).numpy())
            left -= m
        s = np.concatenate(chunks)
        z2 = s * s
        var = float(z2.mean())  # the mean is 0 exactly in distribution
        rows.append({"d": d, "pairs": int(s.size), "var": var, "var_se": _batch_se(z2), "kurtosis": _excess_kurtosis(s),
                     "kurtosis_se": _batch_se(s, _excess_kurtosis),
                     "ks_normal": float(_ks_normal(s / math.sqrt(d)))})
    return rows


def _ks_normal(x: np.ndarray) -> float:
    from scipy import stats

    return float(stats.kstest(x[:20000], "norm").statistic)


def saturation(cfg: Config, gen: torch.Generator) -> list[dict[str, Any]]:
    """Row entropy and ||J||_F of softmax(q.k_j * c) over n sampled keys, c = 1/sqrt(d) (scaled) or 1."""
    out = []
    for d in cfg.row_dims:
        ent: dict[str, list[np.ndarray]] = {"scaled": [], "unscaled": []}
        jac: dict[str, list[np.ndarray]] = {"scaled": [], "unscaled": []}
        chunk = max(1, 4_000_000 // (cfg.keys * d))
        left = cfg.rows
        while left:
            m = min(left, chunk)
            q = torch.randn(m, 1, d, generator=gen)
            k = torch.randn(m, cfg.keys, d, generator=gen)
            s = (q @ k.transpose(1, 2))[:, 0, :].double().numpy()
            for name, c in (("scaled", 1 / math.sqrt(d)), ("unscaled", 1.0)):
                h, j = tb.softmax_stats(s * c)
                ent[name].append(h)
                jac[name].append(j)
            left -= m
        row: dict[str, Any] = {"d": d}
        for name in ("scaled", "unscaled"):
            h, j = np.concatenate(ent[name]), np.concatenate(jac[name])
            row[name] = {"entropy_mean": float(h.mean()), "entropy_se": float(h.std(ddof=1) / math.sqrt(h.size)),
                         "jac_mean": float(j.mean()), "jac_se": float(j.std(ddof=1) / math.sqrt(j.size)),
                         "jac_median": float(np.median(j)), "jac_median_se": _median_se(j),
                         "jac_q10": float(np.quantile(j, 0.1)), "jac_q90": float(np.quantile(j, 0.9))}
        out.append(row)
    return out


def _median_se(x: np.ndarray, reps: int = 200) -> float:
    rng = np.random.default_rng(0)
    meds = [np.median(rng.choice(x, x.size)) for _ in range(reps)]
    return float(np.std(meds, ddof=1))


def autograd_jacobian_check(gen: torch.Generator, rows: int = 8, n: int = 64) -> float:
    """Largest relative gap between ||J||_F from autograd (float64) and from :func:`tb.softmax_stats`."""
    worst = 0.0
    for i in range(rows):
        # up to logit spreads of ~5: beyond, autograd's own 1 - p_max cancels and it is the less accurate one
        x = torch.randn(n, generator=gen, dtype=torch.float64) * (0.3 * 1.5**i)
        jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), x)
        auto = float(torch.linalg.matrix_norm(jac))
        _, ours = tb.softmax_stats(x.numpy())
        worst = max(worst, abs(auto - float(ours)) / float(ours))
    return worst


# --- heads -------------------------------------------------------------------------------------------


def head_spread(model: LanguageModel) -> float:
    """max over layers and heads of ||theta_h - theta_0|| / ||theta_0||: 0 when all heads are identical."""
    worst = 0.0
    with torch.no_grad():
        for att in model.attention_layers():
            heads = [att.head_parameters(h) for h in range(att.heads)]
            worst = max(worst, max(float((h - heads[0]).norm() / heads[0].norm()) for h in heads[1:]))
    return worst


def make_heads_identical(model: LanguageModel, perturbation: float = 0.0, seed: int = 0) -> None:
    """Copy head 0 into every head of every attention layer; optionally add relative noise of that size."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for att in model.attention_layers():
            for h in range(1, att.heads):
                att.copy_head(0, h)
            if perturbation:
                for p in (att.qkv.weight, att.qkv.bias, att.out.weight):
                    p.add_(perturbation * p.abs().mean() * torch.randn(p.shape, generator=gen))


@dataclass(frozen=True)
class Sampling:
    """The sampled checks (the trial "sampling")."""

    qk: list[dict[str, float]]
    keys: int
    saturation: list[dict[str, Any]]
    autograd_jacobian_gap: float
    mha: list[dict[str, int]]
    merged_wo_gap: float
    positions: dict[str, Any]
    permutation: dict[str, float]


@dataclass(frozen=True)
class Spread:
    """One initialisation's head spread at the training checkpoints, and its last training loss."""

    steps: list[int]
    spread: list[float]
    final_train_loss: float


def symmetry(cfg: Config, variant: str, device: torch.device) -> Spread:
    """Head spread during training from one of the initialisations of :data:`VARIANTS` (the runner has seeded the
    initial draw)."""
    corpus = corpus_of(cfg)
    checkpoints = sorted({0, 1, cfg.steps // 10, cfg.steps // 3, cfg.steps})
    mcfg = ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer", residual="pre", heads=cfg.heads,
                       ctx=cfg.ctx, attn_dropout=cfg.attn_dropout if "dropout" in variant else 0.0)
    model = LanguageModel(mcfg)
    if variant != "independent init":
        make_heads_identical(model, 1e-6 if "perturbation" in variant else 0.0, cfg.seed)
    spreads: dict[int, float] = {}

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step in checkpoints:
            spreads[step] = head_spread(m)  # type: ignore[arg-type]

    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed),
                   cfg.ctx, device, on_step=on_step, progress=False)
    return Spread(sorted(spreads), [spreads[s] for s in sorted(spreads)], log.train_loss[-1])


def merged_output_projection(gen: torch.Generator, d: int = 64, n: int = 16) -> float:
    """Single head: max |softmax(.) X W_v W_o - softmax(.) X (W_v W_o)| relative to the output's scale (float64)."""
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    wq, wk, wv, wo = (torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d) for _ in range(4))
    a = torch.softmax((x @ wq) @ (x @ wk).T / math.sqrt(d), -1)
    two = (a @ (x @ wv)) @ wo
    one = a @ (x @ (wv @ wo))
    return float((two - one).abs().max() / two.abs().max())


# --- positions -----------------------------------------------------------------------------------------


def _pe_float32(count: int, d: int) -> torch.Tensor:
    """Sinusoidal positions as float32 code computes them: angle = position * frequency, rounded in float32."""
    ang = torch.arange(count, dtype=torch.float32)[:, None] * torch.from_numpy(tb.pe_frequencies(d)).float()
    out = torch.empty(count, d)
    out[:, 0::2], out[:, 1::2] = torch.sin(ang), torch.cos(ang)
    return out


def _rotate(v: torch.Tensor, count: int) -> torch.Tensor:
    """RoPE in float64: R_p v for p = 0 .. count - 1, pairs (2i, 2i+1) rotated by p w_i."""
    ang = torch.arange(count, dtype=torch.float64)[:, None] * torch.from_numpy(tb.pe_frequencies(v.shape[-1]))
    v1, v2 = v[0::2], v[1::2]
    return torch.stack((v1 * ang.cos() - v2 * ang.sin(), v1 * ang.sin() + v2 * ang.cos()), dim=-1).flatten(-2)


def positions(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """M_k error in float64 and float32, the positional dot product against k, raw and through projections."""
    d, big_p = cfg.pe_d, cfg.pe_positions
    pe = tb.sinusoidal_pe(np.arange(big_p, dtype=np.float64), d)
    p32 = _pe_float32(big_p, d)
    shifts = [k for k in (1, 2, 5, 10, 50, 100, 1000) if k < big_p // 2]
    err64, err32 = [], []
    for k in shifts:
        m = tb.pe_shift_matrix(k, d)
        err64.append(float(np.abs(pe[:-k] @ m.T - pe[k:]).max()))
        err32.append(float((p32[:-k] @ torch.from_numpy(m).float().T - p32[k:]).abs().max()))
    pe32_err = np.abs(p32.double().numpy() - pe).max(-1)
    every = max(1, big_p // 256)
    ks = np.arange(0, min(big_p // 2, 1024), max(1, min(big_p // 2, 1024) // 64))
    dots = [(pe[: big_p - k] * pe[k:]).sum(-1) for k in ks]
    dot_pred_err = max(float(np.abs(row - tb.pe_dot(k, d)).max()) for row, k in zip(dots, ks))
    # through random projections: PE_p W_q W_k^T PE_(p+k), its spread over p against its size
    wq = torch.randn(d, d, generator=gen, dtype=torch.float64).numpy() / math.sqrt(d)
    wk = torch.randn(d, d, generator=gen, dtype=torch.float64).numpy() / math.sqrt(d)
    pq, pk = pe @ wq, pe @ wk
    proj = []
    for k in ks[:32]:
        vals = (pq[: big_p - k] * pk[k:]).sum(-1)
        proj.append({"k": int(k), "mean": float(vals.mean()), "std": float(vals.std())})
    # with RoPE instead: the same content x at every position, q_p = R_p W_q x, k_(p+k) = R_(p+k) W_k x
    x = torch.randn(d, generator=gen, dtype=torch.float64)
    qv = torch.from_numpy(wq.T).double() @ x
    kv = torch.from_numpy(wk.T).double() @ x
    rq, rk = (_rotate(v, big_p) for v in (qv, kv))
    rope_rel = []
    for k in ks[1:32]:
        vals = (rq[: big_p - k] * rk[k:]).sum(-1)
        rope_rel.append(float(vals.std() / vals.abs().mean()))
    all_k = np.arange(0, 2001)
    return {"d": d, "positions": big_p, "shifts": shifts, "m_err64": err64, "m_err32": err32,
            "pe32_pos": list(range(0, big_p, every)), "pe32_err_by_pos": pe32_err[::every].tolist(),
            "dot_spread_over_p": max(float(np.ptp(row)) for row in dots), "dot_pred_err": dot_pred_err,
            "dot_mirror_err": float(np.abs(tb.pe_dot(all_k, d) - tb.pe_dot(-all_k, d)).max()), "projected": proj,
            "rope_spread": max(rope_rel), "dot_curve_k": all_k.tolist(), "dot_curve": tb.pe_dot(all_k, d).tolist()}


def permutation(gen: torch.Generator, n: int = 12, d: int = 32) -> dict[str, float]:
    """Self-attention output under a permutation of its input rows: error of equivariance without and with PE."""
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    w = [torch.randn(d, d, generator=gen, dtype=torch.float64) / math.sqrt(d) for _ in range(3)]
    perm = torch.randperm(n, generator=gen)
    pe = torch.from_numpy(tb.sinusoidal_pe(np.arange(n), d))

    def attn(t: torch.Tensor) -> torch.Tensor:
        return torch.softmax((t @ w[0]) @ (t @ w[1]).T / math.sqrt(d), -1) @ (t @ w[2])

    scale = float(attn(x).abs().max())
    no_pe = float((attn(x[perm]) - attn(x)[perm]).abs().max()) / scale
    with_pe = float((attn(x[perm] + pe) - attn(x + pe)[perm]).abs().max()) / scale
    return {"without_pe": no_pe, "with_pe": with_pe}


def mha_counts(d: int = 512) -> list[dict[str, int]]:
    """Parameters of torch.nn.MultiheadAttention and of the book's Attention for every head count dividing d."""
    rows = []
    for h in (1, 2, 4, 8, 16, 32, 64):
        if d % h or (d // h) % 2:
            continue
        torch_mha = torch.nn.MultiheadAttention(d, h)
        ours = Attention(ModelConfig(d=d, heads=h, block="transformer"))
        rows.append({"heads": h, "torch": sum(p.numel() for p in torch_mha.parameters()),
                     "ours": sum(p.numel() for p in ours.parameters()), "formula": tb.mha_parameters(d, h)})
    return rows


def trials(cfg: Config) -> list[Trial]:
    """The sampled checks (one generator seeded cfg.seed, drawn in turn), and a training run per variant of
    :data:`VARIANTS`, each from the initial draw of cfg.seed."""
    return [Trial("sampling", cfg.seed)] + [Trial(f"symmetry.{slug}", cfg.seed, {"variant": variant})
                                            for slug, variant in zip(VARIANT_SLUGS, VARIANTS)]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Sampling | Spread:
    """The sampled checks, or one variant's head spread during training."""
    if trial.key != "sampling":
        return symmetry(cfg, trial.params["variant"], device)
    gen = torch.Generator().manual_seed(trial.seed)
    return Sampling(qk_moments(cfg, gen), cfg.keys, saturation(cfg, gen), autograd_jacobian_check(gen), mha_counts(),
                    merged_output_projection(gen), positions(cfg, gen), permutation(gen))


def assemble(cfg: Config, results: list[Sampling | Spread], device_type: str) -> dict[str, Any]:
    """Every measurement of the chapter; plain data."""
    sampling, *runs = results
    return {"device_type": device_type, **fields_of(sampling),
            "symmetry": {"device_type": device_type, "runs": {v: fields_of(r) for v, r in zip(VARIANTS, runs)}}}


# --- claims ---------------------------------------------------------------------------------------------

EPS64 = float(np.finfo(np.float64).eps)
QK_BATCHES = 20  # the batches _batch_se splits the q.k pairs into: the units of the q.k claims
# the record does not keep the number of softmax rows per width: the fewest any config samples stands for it, which
# leaves the t interval wider, not narrower, than the run's own
ROWS_AT_LEAST = min(c.rows for c in CONFIGS.values())


def worst_variance_row(qk: list[dict[str, Any]]) -> dict[str, Any]:
    """The d whose sampled Var[q.k]/d is furthest from 1 in units of its standard error."""
    return max(qk, key=lambda r: abs(r["var"] / r["d"] - 1) / (r["var_se"] / r["d"]))


def projected_spread(pos: dict[str, Any]) -> float:
    """Median over k > 0 of std over p / |mean| of the positional score PE_p W_q W_k^T PE_(p+k)."""
    return float(np.median([r["std"] / max(abs(r["mean"]), 1e-300) for r in pos["projected"] if r["k"] > 0]))


def dropped_outer_gap(rows: int = 8, n: int = 64, seed: int = 0) -> float:
    """The relative gap the closed form would show had it dropped $p p^\\top$ ($\\|\\mathrm{diag}(p)\\|_F$ against
    $\\|J\\|_F$), smallest over rows of the logit spreads autograd_jacobian_check draws."""
    rng = np.random.default_rng(seed)
    gaps = []
    for i in range(rows):
        x = rng.standard_normal(n) * (0.3 * 1.5**i)
        _, jac = tb.softmax_stats(x)
        p = np.exp(x - x.max())
        p /= p.sum()
        gaps.append(abs(float(np.sqrt((p**2).sum())) - float(jac)) / float(jac))
    return min(gaps)


def wrong_order_gap(d: int = 64, n: int = 16, seed: int = 0) -> float:
    """The relative output gap of the merge taken in the wrong order, $W_o W_v$ for $W_v W_o$, at the sizes of
    merged_output_projection."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    wq, wk, wv, wo = (rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(4))
    z = (x @ wq) @ (x @ wk).T / math.sqrt(d)
    a = np.exp(z - z.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    right, wrong = a @ x @ wv @ wo, a @ x @ wo @ wv
    return float(np.abs(right - wrong).max() / np.abs(right).max())


def shift_without_rotation(d: int, k: int) -> float:
    """How far $PE(p + k)$ lies from $PE(p)$ at most, had $M_k$ been the identity: $\\max_i 2|\\sin(k w_i / 2)|$."""
    return float(np.max(2 * np.abs(np.sin(k * tb.pe_frequencies(d) / 2))))


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The chapter's claims from one run."""
    out = []
    qk = data["qk"]
    worst = worst_variance_row(qk)
    # the worst of len(qk) widths is shown: each is tested at 1 - 0.05 / len(qk) (Bonferroni), so that all hold
    # together at 95%
    family = 1 - (1 - CONFIDENCE) / len(qk)
    var = from_se(worst["var"] / worst["d"], worst["var_se"] / worst["d"], QK_BATCHES, "batches of pairs")
    fields = estimate_fields(var, "the sample variance / d", confidence=family)
    fields["tolerance_basis"] += f" (95% for all {len(qk)} widths together: Bonferroni)"
    out.append(Claim("qk-variance", f"$\\mathrm{{Var}}[q \\cdot k] = d$ for $q, k \\sim N(0, I_d)$ (worst of $d = {qk[0]['d']} \\ldots {qk[-1]['d']}$; "
                     f"shown $d = {worst['d']}$, {label})", SOURCE + "; Vaswani et al. 2017, footnote 4",
                     1.0, **fields, unit="× d", alternative=1 / worst["d"],
                     alternative_note="a variance that does not grow with $d$ (1, as $q \\cdot k/\\sqrt{d}$ has): $1/d$ "
                                      "in units of $d$"))
    small = qk[0]
    kurt = from_se(small["kurtosis"], small["kurtosis_se"], QK_BATCHES, "batches of pairs")
    out.append(Claim("qk-normal", f"$q \\cdot k$ is normal, $N(0, d)$ (excess kurtosis 0; at $d = {small['d']}$, {label})",
                     SOURCE, 0.0, **estimate_fields(kurt, "the sample excess kurtosis"), unit="excess kurtosis",
                     effect=tb.qk_moments(small["d"])[1], corrected=tb.qk_moments(small["d"])[1],
                     corrected_note="$q \\cdot k$ is a sum of $d$ products of normals: excess kurtosis $6/d$, normal only as $d$ grows"))
    sat = data["saturation"]
    lo, hi = sat[0], sat[-1]
    n = data["keys"]
    big_d = hi["d"]
    rows, units = ROWS_AT_LEAST, "sampled rows or more"
    gap = from_se(hi["unscaled"]["jac_median"] - hi["scaled"]["jac_median"],
                  math.hypot(hi["unscaled"]["jac_median_se"], hi["scaled"]["jac_median_se"]), rows, units)
    out.append(Claim("unscaled-saturates",
                     f"Without $1/\\sqrt{{d}}$ the softmax gradient vanishes: the median $\\|J\\|_F$ at $d = {big_d}$, $n = {n}$ is below "
                     f"the scaled row's (unscaled minus scaled median; {label})", SOURCE, 0.0,
                     **estimate_fields(gap, "the difference of medians (bootstrap SE of each over the rows)",
                                       sided="one"), kind="below"))
    law = tb.saturated_jacobian_median(n, big_d)
    median = from_se(hi["unscaled"]["jac_median"], hi["unscaled"]["jac_median_se"], rows, units)
    out.append(Claim("saturation-law",
                     f"Derived here: unscaled, the median $\\|J\\|_F = 2e^{{-t}}$ with $P(|q|\\,G > t) = 1/2$, $G$ the top-two gap of $n$ "
                     f"normals ($d = {big_d}$, $n = {n}$, {label})", "derived in this chapter", law,
                     **estimate_fields(median, "the median (bootstrap SE over the rows)"), alternative=0.0,
                     alternative_note="a gradient that vanishes outright, as a one-hot row's does"))
    flat = difference(from_se(hi["scaled"]["entropy_mean"], hi["scaled"]["entropy_se"], rows, units),
                      from_se(lo["scaled"]["entropy_mean"], lo["scaled"]["entropy_se"], rows, units))
    out.append(Claim("scaled-entropy-flat",
                     f"With $1/\\sqrt{{d}}$ the row entropy does not depend on $d$ ($d = {hi['d']}$ against $d = {lo['d']}$, "
                     f"$n = {n}$, {label})", SOURCE, lo["scaled"]["entropy_mean"],
                     **{**estimate_fields(flat, "the difference of mean entropies (independent rows, Welch)"),
                        "measured": hi["scaled"]["entropy_mean"]}, unit="nats",
                     alternative=hi["unscaled"]["entropy_mean"],
                     alternative_note=f"the unscaled rows' entropy at $d = {hi['d']}$",
                     corrected=float(tb.mean_field_entropy(n, 1.0)),
                     corrected_note="$\\ln n - 1/2$ (mean field, $\\sigma = 1$): logits given $q$ are $N(0, |q|^2/d)$ with "
                                    "$E|q|^2/d = 1$, so only the spread of $|q|$ depends on $d$"))
    out.append(Claim("softmax-jacobian-autograd", f"$\\|J\\|_F$ of softmax from its closed form = autograd ({label})",
                     "identity $J = \\mathrm{diag}(p) - p p^\\top$", 0.0, data["autograd_jacobian_gap"], 0.0, 1e3 * EPS64,
                     "1000 float64 ulps (autograd sums $n^2$ rounded products)", kind="upper_bound", unit="relative",
                     provenance="book", alternative=dropped_outer_gap(),
                     alternative_note="a closed form without $p p^\\top$, $\\|\\mathrm{diag}(p)\\|_F$: its gap at the "
                                      "same logit spreads (smallest)"))
    counts = data["mha"]
    spread = max(r["torch"] for r in counts) - min(r["torch"] for r in counts)
    width = (math.isqrt(counts[0]["formula"] + 1) - 1) // 2  # 4d^2 + 4d + 1 = (2d + 1)^2
    span = counts[-1]["heads"] - counts[0]["heads"]
    out.append(Claim("mha-params", f"Multi-head attention has $4d^2 + 4d$ parameters for every head count "
                     f"($d = 512$, $h = {counts[0]['heads']} \\ldots {counts[-1]['heads']}$; spread over $h$, {label})",
                     SOURCE, 0.0, float(spread), 0.0, 0.0, "an exact count", unit="parameters",
                     alternative=float(3 * (width**2 + width) * span),
                     alternative_note="heads of full width $d$ each, $3h(d^2 + d) + d^2 + d$ parameters: their spread"))
    out.append(Claim("wo-merge", f"Single head: $W_v W_o$ merge into one matrix (relative output gap, {label})",
                     SOURCE, 0.0, data["merged_wo_gap"], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound",
                     unit="relative", alternative=wrong_order_gap(),
                     alternative_note="the product in the wrong order, $W_o W_v$: its gap"))
    sym = data["symmetry"]["runs"]
    same = sym["identical"]["spread"][-1]
    out.append(Claim("heads-stay-identical", f"Heads initialised identically stay identical under training "
                     f"(head spread after {sym['identical']['steps'][-1]} AdamW steps, {label})", SOURCE, 0.0, same, 0.0,
                     0.0, "exact: any difference breaks the symmetry", kind="upper_bound", unit="relative",
                     alternative=sym["identical + 1e-6 perturbation"]["spread"][-1],
                     alternative_note="heads started 1e-6 apart, trained the same: their spread"))
    independent = {"alternative": sym["independent init"]["spread"][-1],
                   "alternative_note": "independently initialised heads, trained the same: their spread"}
    pert = sym["identical + 1e-6 perturbation"]
    out.append(Claim("heads-symmetry-stable", f"The identical-heads state is stable: a 1e-6 asymmetry stays "
                     f"that small (head spread after {pert['steps'][-1]} steps, {label})",
                     "implied by the notes' 'forever identical'", pert["spread"][0], pert["spread"][-1], 0.0,
                     pert["spread"][0],
                     "the initial spread again (a factor 2 of growth); one run: a counterexample refutes stability, "
                     "no seed spread is needed", kind="upper_bound",
                     unit="relative", **independent))
    drop = sym["identical + attention dropout"]["spread"][-1]
    out.append(Claim("heads-dropout", f"... also when trained with attention dropout, as the original "
                     f"Transformer is (head spread after {sym['identical']['steps'][-1]} steps, {label})", SOURCE, 0.0,
                     drop, 0.0, 0.0, "exact: the notes' claim predicts 0; one run with a nonzero spread is a counterexample",
                     kind="upper_bound", unit="relative", **independent))
    pos = data["positions"]
    bound64 = 8 * pos["positions"] * EPS64
    out.append(Claim("pe-shift", f"$PE(p + k) = M_k\\, PE(p)$ with $M_k$ block rotations (max error over $p < "
                     f"{pos['positions']}$, $k$ up to {pos['shifts'][-1]}, float64; {label})", SOURCE + "; Vaswani et al. 2017",
                     0.0, max(pos["m_err64"]), 0.0, bound64,
                     "$8\\, p_{\\max}\\, \\epsilon$: the rounding of the angle $p\\, w_i$ in float64", kind="upper_bound", unit="absolute",
                     alternative=shift_without_rotation(pos["d"], pos["shifts"][0]),
                     alternative_note=f"no rotation, $M_k = I$: $PE(p + {pos['shifts'][0]})$ against $PE(p)$, about "
                                      "$\\max_i 2|\\sin(k w_i/2)|$"))
    reach = min(pos["positions"] // 2, 1024)  # the shifts k the dot product is checked at
    out.append(Claim("pe-dot-relative", f"$PE(p) \\cdot PE(p + k)$ depends on $k$ only and equals $\\sum_i \\cos(k\\, w_i)$ "
                     f"(max error over $p$, {label})", "derived", 0.0, pos["dot_pred_err"], 0.0, pos["d"] * bound64,
                     "$d$ times the $M_k$ rounding bound", kind="upper_bound", unit="absolute",
                     alternative=max(abs(pos["dot_curve"][0] - v) for k, v in zip(pos["dot_curve_k"], pos["dot_curve"])
                                     if k < reach),
                     alternative_note="a dot product that does not fall with $k$, $|PE|^2 = d/2$"))
    rel = projected_spread(pos)
    out.append(Claim("pe-projected", f"Through random $W_q, W_k$ the positional score $PE(p)\\, W_q W_k^\\top PE(p+k)$ still "
                     f"depends on $k$ only (median over $k$ of its std over $p$ / $|$mean$|$; {label})",
                     "the relative-position reading of $PE(p+k) = M_k\\, PE(p)$", 0.0, rel, 0.0, 1e3 * EPS64,
                     "1000 float64 ulps, as for the exact identities", kind="upper_bound", unit="relative",
                     provenance="book",  # the notes claim only the "possibility" of relative positions
                     # the rival: a position p that moves the score by as much as its mean; no law gives its value
                     effect=1.0))
    out.append(Claim("rope-relative", f"With RoPE the score of a fixed content pair depends on $k$ only "
                     f"(max over $k$ of std over $p$ / mean $|$score$|$; {label})", "Su et al. 2021 (RoPE)", 0.0,
                     pos["rope_spread"], 0.0, 1e3 * EPS64 * math.sqrt(pos["positions"]),
                     "1000 float64 ulps times $\\sqrt{p_{\\max}}$ (angles $p\\, w_i$ rounded)", kind="upper_bound", unit="relative",
                     alternative=rel, alternative_note="sinusoidal positions added before the same projections: "
                                                       "their spread (median over $k$)"))
    perm = data["permutation"]
    out.append(Claim("bag-of-words", f"Without positions, self-attention is permutation-equivariant "
                     f"(relative error; with PE it is {perm['with_pe']:.2g}, {label})", SOURCE + " (after kexue.fm/archives/4765)",
                     0.0, perm["without_pe"], 0.0, 1e3 * EPS64, "1000 float64 ulps", kind="upper_bound", unit="relative",
                     alternative=perm["with_pe"], alternative_note="the same layer with sinusoidal positions added"))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """Sampling (q.k pairs, softmax rows with their Jacobian norms) as counted FLOPs, or one symmetry run."""
    if trial.key != "sampling":
        model = ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer", residual="pre", heads=cfg.heads, ctx=cfg.ctx)
        return [Workload(f"head-symmetry run, {trial.params['variant']}", model, cfg.batch, cfg.ctx, cfg.steps, 0)]
    qk = sum(2.0 * d * cfg.qk_pairs for d in cfg.qk_dims)
    rows = sum(2.0 * 2 * cfg.rows * cfg.keys * (d + 10) for d in cfg.row_dims)  # with and without 1/sqrt(d)
    return [Workload("q.k pairs and softmax rows", flops=qk + rows,
                     memory_bytes=8.0 * (2 * 2_000_000 + cfg.qk_pairs + 3 * 4_000_000 + 4 * cfg.rows * cfg.keys))]  # chunked draws
