"""Normalisation and depth, as the Transformer notes state them.

Measured: incremental decoding against a full pass in causal models with per-token norms (LayerNorm, RMSNorm)
and with norms that mix positions (over the sequence, BatchNorm in training mode); the notes' LayerNorm
examples and RMSNorm formula against torch and the Llama code they quote; the update size of post-norm,
pre-norm and DeepNorm stacks against depth, at initialisation and after one AdamW step; and, in trained pre-
and post-norm models, the cosine similarity of successive residual streams and the loss when consecutive
sublayers are run side by side (depth traded for width).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, mean_estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig, RMSNorm, update_sizes
from analysis.tasks.data import PINNED_CORPUS_PATH, fixed_windows, random_windows
from analysis.theory import transformer_basics as tb
from analysis.training.train import TrainConfig, train_lm

NAME = "norms-depth"
DATA_VERSION = 1  # raised when the layout of the record's data changes
SOURCE = "DL——Transformer study notes"
RESIDUALS = ("post", "pre", "deepnorm")
EPS64 = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Config:
    """Sizes of the decoding check, the depth sweep and the trained pre/post-norm pair."""

    decode_d: int
    decode_len: int
    depth_d: int
    depths: tuple[int, ...]
    depth_seeds: tuple[int, ...]
    step_lr: float
    d: int
    layers: int
    ctx: int
    batch: int
    steps: int
    lr: float
    seeds: tuple[int, ...]
    groups: tuple[int, ...]
    eval_windows: int
    corpus_file: str | None = None
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(decode_d=32, decode_len=12, depth_d=32, depths=(2, 4, 8), depth_seeds=(0, 1), step_lr=1e-3, d=32,
                    layers=4, ctx=32, batch=4, steps=10, lr=3e-3, seeds=(0,), groups=(1, 2, 4), eval_windows=4),
    "cpu": Config(decode_d=64, decode_len=48, depth_d=64, depths=(2, 4, 8, 16, 32, 64), depth_seeds=(0, 1, 2),
                  step_lr=1e-3, d=96, layers=8, ctx=64, batch=16, steps=500, lr=2e-3, seeds=(0, 1),
                  groups=(1, 2, 4, 8), eval_windows=64),
    "gpu": Config(decode_d=256, decode_len=256, depth_d=256, depths=(2, 4, 8, 16, 32, 64, 128, 256),
                  depth_seeds=(0, 1, 2, 3), step_lr=1e-3, d=384, layers=24, ctx=256, batch=32, steps=1000, lr=1e-3,
                  seeds=(0, 1), groups=(1, 2, 4, 8, 16), eval_windows=256,
                  corpus_file=PINNED_CORPUS_PATH),
}




# --- per-token norms and incremental decoding ------------------------------------------------------


class SequenceNorm(nn.Module):
    """Normalises each feature over the positions of a sequence: mixes tokens, so it breaks causality."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)


class TokenBatchNorm(nn.Module):
    """BatchNorm over (batch, position) per feature, in training mode (statistics of the current batch)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(d, dtype=torch.float64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn.train()(x.transpose(1, 2)).transpose(1, 2)


def decoding_gap(model: LanguageModel, idx: torch.Tensor) -> float:
    """max over t of |logits of the full pass at positions < t - logits of the prefix idx[:, :t]|, / max |logits|."""
    with torch.no_grad():
        full = model(idx)
        assert isinstance(full, torch.Tensor)
        worst = 0.0
        for t in range(1, idx.shape[1]):
            prefix = model(idx[:, :t])
            assert isinstance(prefix, torch.Tensor)
            worst = max(worst, float((full[:, :t] - prefix).abs().max()))
    return worst / float(full.abs().max())


def decoding(cfg: Config) -> list[dict[str, Any]]:
    """The decoding gap of causal float64 models with per-token norms and with norms that mix positions."""
    idx = torch.randint(0, 256, (2, cfg.decode_len), generator=torch.Generator().manual_seed(cfg.seed))
    rows = []
    cases = [("transformer", "post", "layernorm", None), ("transformer", "pre", "layernorm", None),
             ("transformer", "pre", "rmsnorm", None), ("gau", "post", "layernorm", None),
             ("transformer", "post", "layernorm", "sequence"), ("transformer", "post", "layernorm", "batch")]
    for block, residual, norm, swap in cases:
        torch.manual_seed(cfg.seed)
        model = LanguageModel(ModelConfig(d=cfg.decode_d, layers=2, block=block, residual=residual, norm=norm,
                                          heads=4, s=16, ctx=cfg.decode_len)).double().eval()
        if swap is not None:
            model.replace_norms(SequenceNorm if swap == "sequence" else lambda: TokenBatchNorm(cfg.decode_d))
        label = f"{residual}-norm {'GAU' if block == 'gau' else 'Transformer'}, " + (
            {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}[norm] if swap is None
            else "norm over positions" if swap == "sequence" else "BatchNorm (training mode)")
        rows.append({"label": label, "per_token": swap is None, "gap": decoding_gap(model, idx)})
    return rows


# --- the notes' LayerNorm and RMSNorm examples -------------------------------------------------------


def llama_rms_norm(hidden: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The forward pass of the LlamaRMSNorm code the notes quote (Hugging Face transformers), transcribed."""
    dtype = hidden.dtype
    h = hidden.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(dtype)


@dataclass(frozen=True)
class Decoding:
    """The decoding gap of each causal float64 model (the trial "decoding")."""

    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class NormExamples:
    """LayerNorm on the notes' inputs, torch against float64, and each RMSNorm version against the standard one."""

    inputs: list[list[float]]
    layernorm_torch: list[list[float]]
    layernorm_float64: list[list[float]]
    printed_error: float
    gap_1234_2345: float
    gap_1234_2468: float
    gap_1234_2468_predicted: float
    rms_versions: dict[str, list[list[float]]]
    rms_gap_to_standard: dict[str, float]


@dataclass(frozen=True)
class DepthRow:
    """One stack of ``depth`` layers: mean update size per sublayer at init and after one step, and the relative
    change of its output after that step."""

    depth: int
    residual: str
    seed: int
    update_init: float
    update_step: float
    model_update: float


@dataclass(frozen=True)
class TrainedRow:
    """One trained Transformer: at init and after training, the stream cosines and norms and the loss with
    sublayers in groups of each size."""

    residual: str
    seed: int
    init: dict[str, Any]
    trained: dict[str, Any]


def norm_examples() -> NormExamples:
    """torch.nn.LayerNorm on the notes' vectors, the eps-predicted gaps, and four RMSNorm versions compared."""
    x = torch.tensor([[1.0, 2, 3, 4], [2, 3, 4, 5], [2, 4, 6, 8], [200, 3, 4, 5]])
    ln = nn.LayerNorm(4)
    out = ln(x).detach()
    pred64 = tb.layer_norm(x.double().numpy(), 1e-5)
    notes_printed = [[-1.3416, -0.4472, 0.4472, 1.3416], [-1.3416, -0.4472, 0.4472, 1.3416], None,
                     [1.7320, -0.5891, -0.5773, -0.5655]]
    printed_err = max(float(np.abs(out[i].numpy() - np.array(p)).max()) for i, p in enumerate(notes_printed) if p)
    rms_in = x.double()
    w = torch.ones(4, dtype=torch.float64)
    versions = {
        "standard x / RMS(x)": tb.rms_norm(rms_in.numpy(), 1e-6),
        "notes (x - mean) / RMS(x)": tb.notes_rms_norm(rms_in.numpy(), 1e-6),
        "quoted Llama code": llama_rms_norm(rms_in.float(), w.float()).double().numpy(),
        "torch.nn.RMSNorm": nn.RMSNorm(4, eps=1e-6)(rms_in.float()).detach().double().numpy(),
        "book's RMSNorm": _book_rms(rms_in),
        "LayerNorm": pred64,
    }
    ref = versions["standard x / RMS(x)"]
    return NormExamples(x.tolist(), out.tolist(), pred64.tolist(), printed_err,
                        float((out[0] - out[1]).abs().max()), float((out[0] - out[2]).abs().max()),
                        float(np.abs(pred64[0] - pred64[2]).max()),
                        {k: np.asarray(v).tolist() for k, v in versions.items()},
                        {k: float(np.abs(np.asarray(v) - ref).max()) for k, v in versions.items()})


def _book_rms(x: torch.Tensor) -> np.ndarray:

    return RMSNorm(4).double()(x).detach().numpy()


# --- update size against depth -------------------------------------------------------------------------


def _final(model: LanguageModel, idx: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    _, hidden = model(idx, return_hidden=True)  # type: ignore[misc]
    return model.final_norm(hidden[-1]), hidden


def depth_row(cfg: Config, depth: int, residual: str, seed: int, device: torch.device) -> dict[str, Any]:
    """At one depth, residual and seed (torch seeded by the runner): mean sublayer update ||x_(l+1) - x_l|| / ||x_l||
    at init and after one AdamW step, and the model update RMS(F(theta_1) - F(theta_0)) / RMS(F(theta_0)) of the
    normalised output F."""
    corpus = corpus_of(cfg)
    probe = fixed_windows(corpus.val, cfg.ctx, 4)[0].to(device)
    model = LanguageModel(ModelConfig(d=cfg.depth_d, layers=depth, block="transformer", residual=residual,
                                      heads=4, ctx=cfg.ctx, init="xavier")).to(device)
    model.eval()
    with torch.no_grad():
        f0, h0 = _final(model, probe)
    x, y = random_windows(corpus.train, cfg.ctx, cfg.batch, torch.Generator().manual_seed(run_seed(cfg, seed)))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.step_lr, betas=(0.9, 0.98), weight_decay=0.0)
    logits = model(x.to(device))
    assert isinstance(logits, torch.Tensor)
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.to(device).reshape(-1)).backward()
    opt.step()
    with torch.no_grad():
        f1, h1 = _final(model, probe)
    return DepthRow(depth, residual, seed, float(np.mean(update_sizes(h0))), float(np.mean(update_sizes(h1))),
                    float((f1 - f0).pow(2).mean().sqrt() / f0.pow(2).mean().sqrt()))


def mean_update(rows: list[dict[str, Any]], residual: str, depth: int, key: str = "model_update") -> tuple[float, float]:
    """Mean over seeds of ``key`` at one depth and residual arrangement, and its standard error (0 with one seed)."""
    vals = [r[key] for r in rows if r["residual"] == residual and r["depth"] == depth]
    return mean_se(vals)


def slope(data: list[dict[str, Any]], residual: str, key: str = "model_update") -> tuple[float, float]:
    """Least-squares slope of log(key) against log(depth) over seeds, and its standard error."""
    rows = [r for r in data if r["residual"] == residual]
    x = np.log([r["depth"] for r in rows])
    y = np.log([r[key] for r in rows])
    a = np.vstack([x, np.ones_like(x)]).T
    coef, res, *_ = np.linalg.lstsq(a, y, rcond=None)
    dof = max(1, len(x) - 2)
    sigma2 = float(np.sum((y - a @ coef) ** 2)) / dof
    cov = sigma2 * np.linalg.inv(a.T @ a)
    return float(coef[0]), float(math.sqrt(cov[0, 0]))


# --- trained pre- and post-norm: successive streams and depth for width --------------------------------


def _stream_cosines(hidden: list[torch.Tensor]) -> list[float]:
    return [float(F.cosine_similarity(a, b, dim=-1).mean()) for a, b in zip(hidden[:-1], hidden[1:])]


def _loss(model: LanguageModel, x: torch.Tensor, y: torch.Tensor, group: int) -> float:
    with torch.no_grad():
        total = 0.0
        for i in range(0, x.shape[0], 32):
            logits = model(x[i : i + 32], group=group)
            assert isinstance(logits, torch.Tensor)
            logits = logits.double()
            total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y[i : i + 32].reshape(-1),
                                           reduction="sum"))
    return total / y.numel()


def trained_row(cfg: Config, residual: str, seed: int, device: torch.device) -> TrainedRow:
    """Train a pre- or post-norm Transformer (torch seeded by the runner); at init and after training, the stream
    cosines and norms, and the loss with sublayers run in groups of each size in ``cfg.groups``."""
    corpus = corpus_of(cfg)
    x, y, _ = fixed_windows(corpus.val, cfg.ctx, cfg.eval_windows)
    x, y = x.to(device), y.to(device)
    model = LanguageModel(ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer", residual=residual,
                                      heads=4, ctx=cfg.ctx, init="xavier")).to(device)
    stages: dict[str, Any] = {}
    for stage in ("init", "trained"):
        if stage == "trained":
            train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
                                                      warmup=cfg.steps // 10, seed=run_seed(cfg, seed)),
                     cfg.ctx, device, progress=False)
        model.eval()
        with torch.no_grad():
            _, hidden = model(x[:16], return_hidden=True)  # type: ignore[misc]
        stages[stage] = {"cosines": _stream_cosines(hidden), "norms": [float(h.norm(dim=-1).mean()) for h in hidden],
                         "loss": {str(g): _loss(model, x, y, g) for g in cfg.groups}}
    return TrainedRow(residual, seed, stages["init"], stages["trained"])


def trials(cfg: Config) -> list[Trial]:
    """The decoding gaps, the norm examples, one model per depth, residual and seed (one AdamW step), and one
    trained model per residual and seed; models seeded with run_seed(cfg, seed)."""
    out = [Trial("decoding", cfg.seed, {"part": "decoding"}), Trial("norms", cfg.seed, {"part": "norms"})]
    out += [Trial(f"depth.{depth}.{residual}.seed{seed}", run_seed(cfg, seed),
                  {"part": "depth", "depth": depth, "residual": residual, "seed": seed})
            for depth in cfg.depths for residual in RESIDUALS for seed in cfg.depth_seeds]
    return out + [Trial(f"trained.{residual}.seed{seed}", run_seed(cfg, seed),
                        {"part": "trained", "residual": residual, "seed": seed})
                  for residual in ("pre", "post") for seed in cfg.seeds]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Decoding | NormExamples | DepthRow | TrainedRow:
    """One part of the chapter's measurements."""
    p = trial.params
    if p["part"] == "decoding":
        return Decoding(decoding(cfg))
    if p["part"] == "norms":
        return norm_examples()
    if p["part"] == "depth":
        return depth_row(cfg, p["depth"], p["residual"], p["seed"], device)
    return trained_row(cfg, p["residual"], p["seed"], device)


def assemble(cfg: Config, results: list[Decoding | NormExamples | DepthRow | TrainedRow], device_type: str
             ) -> dict[str, Any]:
    """Every measurement of the chapter, in the record's layout."""
    parts: dict[str, list[dict[str, Any]]] = {}
    for trial, result in zip(trials(cfg), results):
        parts.setdefault(trial.params["part"], []).append(fields_of(result))
    return {"device_type": device_type, "decoding": parts["decoding"][0]["rows"], "norms": parts["norms"][0],
            "depth": parts["depth"], "trained": parts["trained"], "layers": cfg.layers}


# --- claims ---------------------------------------------------------------------------------------------


def late_cosine(data: dict[str, Any], residual: str) -> float:
    """Mean over seeds of the trained model's mean cosine of successive streams over the upper half of the stack."""
    return float(np.mean(late_cosines(data, residual)))


def late_cosines(data: dict[str, Any], residual: str) -> list[float]:
    """Per seed (in seed order), the trained model's mean cosine of successive streams over the upper half of the
    stack."""
    rows = sorted((r for r in data["trained"] if r["residual"] == residual), key=lambda r: r["seed"])
    return [float(np.mean(r["trained"]["cosines"][len(r["trained"]["cosines"]) // 2 :])) for r in rows]


def group_penalties(data: dict[str, Any], residual: str, group: int) -> list[float]:
    """Per seed (in seed order), the trained loss with sublayers in groups of ``group`` minus the sequential loss."""
    rows = sorted((r for r in data["trained"] if r["residual"] == residual), key=lambda r: r["seed"])
    return [r["trained"]["loss"][str(group)] - r["trained"]["loss"]["1"] for r in rows]


def group_penalty(data: dict[str, Any], residual: str, group: int) -> tuple[float, float]:
    """Mean over seeds of the trained loss with groups of ``group`` minus the sequential loss, and its SE."""
    return mean_se(group_penalties(data, residual, group))


def penalty_difference(data: dict[str, Any], group: int) -> Estimate:
    """Pre-norm's grouping penalty minus post-norm's at ``group``, paired by seed (the two share each seed's
    initial draw, batches and evaluation windows)."""
    return paired_estimate(group_penalties(data, "pre", group), group_penalties(data, "post", group))


def cosine_difference(data: dict[str, Any]) -> Estimate:
    """Pre-norm's late cosine of successive streams minus post-norm's, paired by seed."""
    return paired_estimate(late_cosines(data, "pre"), late_cosines(data, "post"))


def seed_slopes(data: list[dict[str, Any]], residual: str, key: str = "model_update") -> list[float]:
    """Per seed, the least-squares slope of log(key) against log(depth) (seeds with fewer than two depths left out)."""
    out = []
    for seed in sorted({r["seed"] for r in data}):
        rows = [r for r in data if r["residual"] == residual and r["seed"] == seed]
        if len({r["depth"] for r in rows}) > 1:
            out.append(float(np.polyfit(np.log([r["depth"] for r in rows]), np.log([r[key] for r in rows]), 1)[0]))
    return out


def slope_estimate(data: list[dict[str, Any]], residual: str, key: str = "model_update") -> Estimate:
    """The log-log slope of ``key`` against depth: the mean over seeds of each seed's fitted slope, with the SE over
    seeds (a seed's depths share its batch, so seeds, not points, are the independent units)."""
    return mean_estimate(seed_slopes(data, residual, key), "seeds")


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per residual: sequential loss, group penalties at g = 2 and the largest g, late cosine, stream-norm growth;
    and pre-norm's penalties minus post-norm's, paired by seed (:func:`penalty_difference`)."""
    trained = data["trained"]
    groups = sorted(int(g) for g in trained[0]["trained"]["loss"])
    gmax = groups[-1]
    out: dict[str, Any] = {"gmax": gmax, "sublayers": 2 * data["layers"]}
    for res in ("pre", "post"):
        rows = [r for r in trained if r["residual"] == res]
        out[res] = {"loss1": float(np.mean([r["trained"]["loss"]["1"] for r in rows])),
                    "pen2": group_penalty(data, res, 2), "penmax": group_penalty(data, res, gmax),
                    "cosine": late_cosine(data, res),
                    "norm_growth": float(np.mean([r["trained"]["norms"][-1] / r["trained"]["norms"][1] for r in rows]))}
    for key, g in (("pen2", 2), ("penmax", gmax)):
        out[f"{key}_diff"] = penalty_difference(data, g)
    out["pen2_share_of_loss"] = out["pre"]["pen2"][0] / out["pre"]["loss1"]
    return out


def unbiased_variance_gap(nrm: dict[str, Any]) -> float:
    """Largest gap, on the printed examples, between LayerNorm and LayerNorm with the unbiased variance (outputs
    scaled by sqrt((n - 1)/n)): what the printed values would show if the notes had used it (the ln-printed rival)."""
    rows = np.asarray([r for i, r in enumerate(nrm["layernorm_float64"]) if i != 2])  # the notes print no [2,4,6,8]
    n = rows.shape[1]
    return float(np.abs(rows * (np.sqrt((n - 1) / n) - 1)).max())


def mean_over_rms(inputs: list[list[float]]) -> float:
    """max |mean(x)| / RMS(x) over the examples: (x - mean)/RMS(x) differs from x/RMS(x) by exactly that."""
    x = np.asarray(inputs, dtype=np.float64)
    return float(np.max(np.abs(x.mean(1)) / np.sqrt((x * x).mean(1))))


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The chapter's claims from one run."""
    out = []
    per_token = [r for r in data["decoding"] if r["per_token"]]
    worst = max(r["gap"] for r in per_token)
    out.append(Claim("incremental-decoding", f"With per-token norms, later tokens never change earlier outputs: "
                     f"incremental decoding = full pass (worst of {len(per_token)} float64 models, {label})", SOURCE,
                     0.0, worst, 0.0, 1e3 * EPS64, "1000 float64 ulps relative to the largest logit", kind="upper_bound",
                     unit="relative", alternative=min(r["gap"] for r in data["decoding"] if not r["per_token"]),
                     alternative_note="a norm over positions or BatchNorm, which leaks (the smaller gap of the two)"))
    mixing = min(r["gap"] for r in data["decoding"] if not r["per_token"])
    out.append(Claim("mixing-norm-leaks", f"A norm over positions or BatchNorm leaks later tokens into earlier "
                     f"outputs (smallest gap of the two, {label})", "the notes' reason for LayerNorm in decoders",
                     1e3 * EPS64, mixing, 0.0, 0.0, "must exceed the per-token tolerance", kind="lower_bound",
                     unit="relative", alternative=worst, alternative_note="the per-token norms' gap: no leak"))
    nrm = data["norms"]
    out.append(Claim("ln-printed", f"The notes' printed LayerNorm outputs ([1,2,3,4], [2,3,4,5], [200,3,4,5]; "
                     f"{label})", SOURCE, 0.0, nrm["printed_error"], 0.0, 5e-5, "half a unit in the 4th printed decimal",
                     kind="upper_bound", unit="absolute", alternative=unbiased_variance_gap(nrm),
                     alternative_note="LayerNorm with the unbiased variance (torch.var's default), a common slip"))
    out.append(Claim("ln-scale", f"LayerNorm gives the same output for [1,2,3,4] and [2,4,6,8] "
                     f"(float32 torch.nn.LayerNorm, $\\epsilon = 10^{{-5}}$; {label})", SOURCE, 0.0, nrm["gap_1234_2468"], 0.0,
                     1e-6, "8 float32 ulps of an O(1) output", kind="upper_bound", unit="absolute",
                     corrected=nrm["gap_1234_2468_predicted"],
                     corrected_note="$\\epsilon$ breaks scale invariance: $(x - \\mu)/\\sqrt{\\sigma^2 + \\epsilon}$ differs by "
                                    "$\\approx \\epsilon\\,(1/\\sigma_1^2 - 1/\\sigma_2^2)/2$, computed in float64",
                     alternative=nrm["gap_1234_2468_predicted"],
                     alternative_note="the gap $\\epsilon$ predicts, $\\epsilon\\,(1/\\sigma_1^2 - 1/\\sigma_2^2)/2$"))
    gaps = nrm["rms_gap_to_standard"]
    out.append(Claim("rmsnorm-notes", f"The notes' RMSNorm $(x - \\bar x)/\\mathrm{{RMS}}(x)$ equals the standard $x/\\mathrm{{RMS}}(x)$ "
                     f"(max gap on the four example vectors; {label})", SOURCE + "; Zhang and Sennrich 2019", 0.0,
                     gaps["notes (x - mean) / RMS(x)"], 0.0, 1e-6, "8 float32 ulps", kind="upper_bound", unit="absolute",
                     alternative=mean_over_rms(nrm["inputs"]),
                     alternative_note="the term the subtraction adds, the largest $|\\bar x|/\\mathrm{RMS}(x)$"))
    code_gap = max(gaps["quoted Llama code"], gaps["torch.nn.RMSNorm"], gaps["book's RMSNorm"])
    out.append(Claim("rmsnorm-code", f"The Llama code the notes quote, torch.nn.RMSNorm and the book's RMSNorm "
                     f"compute the standard $x/\\mathrm{{RMS}}(x)$ ({label})", "Hugging Face transformers; PyTorch 2.4 or later", 0.0,
                     code_gap, 0.0, 1e-6, "8 float32 ulps (the quoted code computes in float32)", kind="upper_bound",
                     unit="absolute", alternative=gaps["notes (x - mean) / RMS(x)"],
                     alternative_note="the notes' mean-subtracted formula, had the code followed it"))
    depth = data["depth"]
    lo, hi = min(r["depth"] for r in depth), max(r["depth"] for r in depth)
    slope_dn = slope_estimate(depth, "deepnorm")
    out.append(Claim("deepnorm-bounded", f"DeepNorm keeps the model update after one step bounded as depth "
                     f"grows (log-log slope of $\\|\\Delta F\\|$ against $N$, $N = {lo} \\ldots {hi}$, fitted per seed, "
                     f"AdamW; {label})", "Wang et al. 2022 (DeepNet), sec. 4", 0.0,
                     **estimate_fields(slope_dn, "the mean per-seed slope", sided="one"), kind="upper_bound",
                     unit="slope", alternative=slope_estimate(depth, "post").value,
                     alternative_note="post-norm's slope under the same step"))
    dn_post = paired_estimate([r["model_update"] for r in sorted(depth, key=lambda r: r["seed"])
                               if r["residual"] == "deepnorm" and r["depth"] == hi],
                              [r["model_update"] for r in sorted(depth, key=lambda r: r["seed"])
                               if r["residual"] == "post" and r["depth"] == hi])
    out.append(Claim("deepnorm-below-post", f"DeepNorm's one-step model update is below post-norm's: DeepNorm's minus "
                     f"post-norm's, paired by seed (same batch and probe; depth {hi}; {label})",
                     "Wang et al. 2022 (DeepNet), fig. 3", 0.0,
                     **estimate_fields(dn_post, "the paired difference DeepNorm - post-norm", sided="one"),
                     kind="below", unit="relative RMS"))
    gmax = max(int(g) for g in data["trained"][0]["trained"]["loss"])
    for key, group, what in (("prenorm-pairs-cheaper", 2, "pairs of sublayers"),
                             ("prenorm-groups-cheaper", gmax, f"groups of {gmax} sublayers")):
        diff = penalty_difference(data, group)
        out.append(Claim(key, f"Pre-norm: $x_{{t+1}} \\approx x_{{t-1}} + 2 f(\\mathrm{{Norm}}(x_t))$, so pre-norm's depth is "
                         f"partly width: running {what} side by side costs a trained pre-norm model less loss than a "
                         f"post-norm one (pre-norm's loss increase minus post-norm's, paired by seed; {label})",
                         SOURCE + " (after Su, kexue.fm/archives/9009)", 0.0,
                         **estimate_fields(diff, "the paired difference of loss increases, pre - post", sided="one"),
                         kind="below", unit="nats/byte"))
    out.append(Claim("prenorm-cosine", f"Pre-norm's successive residual streams are more alike than post-norm's "
                     f"(mean cosine over the upper half of the trained stack, pre-norm's minus post-norm's, paired by "
                     f"seed; {label})", SOURCE, 0.0,
                     **estimate_fields(cosine_difference(data), "the paired difference of cosines, pre - post",
                                       sided="one"), kind="above", unit="cosine"))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """One AdamW step (and two probes) of a depth trial, or the training and grouped evaluations of a trained one;
    the decoding gaps and the norm examples are too small to count."""
    p = trial.params
    if p["part"] == "depth":
        return [Workload(f"{p['residual']}-norm depth {p['depth']}",
                         ModelConfig(d=cfg.depth_d, layers=p["depth"], block="transformer", residual=p["residual"],
                                     heads=4, ctx=cfg.ctx, init="xavier"), cfg.batch, cfg.ctx, 1, 2)]
    if p["part"] == "trained":
        evals = -(-cfg.eval_windows // cfg.batch) * len(cfg.groups) * 2
        return [Workload(f"trained {p['residual']}-norm", ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer",
                                                                     residual=p["residual"], heads=4, ctx=cfg.ctx,
                                                                     init="xavier"),
                         cfg.batch, cfg.ctx, cfg.steps, evals)]
    return []
