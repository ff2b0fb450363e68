"""Side statements of four sources, each decided by the cheapest run that can: GAU's nu and relu^2 sparsity
(kexue.fm/archives/8990), signed against non-negative Q and K (kexue.fm/archives/8934), padding and repetition when
widening (kexue.fm/archives/8444) and the notes' one-hot entropy (DL——Transformer notes).

* nu: "for a rough estimate take nu = 0.6" (简单估计时,取ν=0.6就行了), against nu = sqrt(E[Swish(eps)^2]) by
  quadrature.
* relu^2 sparsity: "in GAU as it is, however the scale factor is adjusted, its sparsity cannot change; to change it
  one must change the square of relu^2" (不管怎么调整缩放因子,也不能改变其稀疏性...需要修改的是relu²的平方). Sampled:
  GAU's weights relu(q.k)^2 with q, k = Z gamma + beta from one shared Z ~ N(0, 1); sparsity as the share of zero
  weights and the effective number of keys per row, (sum w)^2 / sum w^2; under a scale c outside relu^2, under an
  offset beta inside it, and with the power 4.
* Signed Q and K: "signed Q, K fit better than non-negative ones" (有正有负的Q,K比非负的Q,K拟合能力更强). Sampled:
  softmax attention matrices, their best rank-r signed factorisation (truncated SVD) against a non-negative one
  (Lee-Seung multiplicative updates, best of several starts): the ratio of relative residuals.
* LeakyReLU: "a common nonlinearity that satisfies A(x/sqrt 2) = A(x)/sqrt 2 is ReLU (also LeakyReLU)"; and "with
  ReLU and no attention scale, widening k-fold is: repeat every dimension k times and divide by sqrt k". Computed in
  float64: the identity's gap, and a block of unscaled dot-product attention and a ReLU FFN widened 3-fold.
* Padding (a comment): "pad with random numbers, not zeros (all zeros get the same gradient, unless you use
  dropout)"; "for a matrix, pad rows with 0 and columns with random numbers: ... it does not change the computation
  and gives non-zero, distinct gradients". Measured by autograd on a ReLU MLP whose hidden layer gains new units.
* The notes' entropy code: "the entropy of the true distribution (should be 0, since it is certain)"; the code clips
  probabilities at 1e-10 before the logarithm, with 100,000 classes. Run as the notes wrote it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from analysis.core.experiment import Workload
from analysis.core.stats import mean_estimate
from analysis.core.verify import Claim, estimate_fields
from analysis.theory.gau_init import activation_moments

NAME = "source-side-checks"
DATA_VERSION = 1
GAU_POST = "kexue.fm/archives/8990"
FLASH_POST = "kexue.fm/archives/8934"
WIDENING_POST = "kexue.fm/archives/8444"
NOTES = "DL——Transformer study notes"
COMMENT = "a reader's comment on kexue.fm/archives/8444"
EPS64 = float(torch.finfo(torch.float64).eps)
NOTES_CLIP = 1e-10
NOTES_DIGITS = 6  # the notes print the entropy with {:.6f}


@dataclass(frozen=True)
class Config:
    """Sizes of the sampled checks: GAU's relu^2 weights, the factorisations, the widened networks, the notes' code."""

    n: int  # tokens per GAU weight matrix
    s: int  # GAU's shared width
    matrices: int  # independent weight matrices: the units of the sparsity SEs
    scales: tuple[float, ...]  # the scales c applied outside relu^2
    offset: float  # the offset beta added inside, in units of Z's SD
    fit_n: int  # size of each attention matrix that is factorised
    fit_rank: int  # the rank of both factorisations
    fit_matrices: int  # independent attention matrices: the units of the residual ratio's SE
    nmf_steps: int  # multiplicative updates per start
    nmf_starts: int  # random starts; the best residual is kept
    d: int  # width of the widened block and MLP
    hidden: int  # the MLP's hidden width before padding
    new: int  # hidden units added by padding
    batch: int  # examples in the gradient checks
    dropout: float  # dropout on the hidden layer in the dropout check
    classes: int  # the notes' number of classes
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n < 2 or self.s < 1 or self.matrices < 2:
            raise ValueError(f"n must be >= 2, s >= 1 and matrices >= 2; got {self.n!r}, {self.s!r}, {self.matrices!r}")
        if 1.0 not in self.scales or any(c <= 0 for c in self.scales):
            raise ValueError(f"scales must be positive and include 1; got {self.scales!r}")
        if not 1 <= self.fit_rank < self.fit_n or self.fit_matrices < 2:
            raise ValueError(f"fit_rank must be in [1, fit_n) and fit_matrices >= 2; got {self.fit_rank!r}, "
                             f"{self.fit_n!r}, {self.fit_matrices!r}")
        if self.nmf_steps < 1 or self.nmf_starts < 1:
            raise ValueError(f"nmf_steps and nmf_starts must be >= 1; got {self.nmf_steps!r}, {self.nmf_starts!r}")
        if self.new < 2 or self.hidden < 1 or self.d < 2 or self.batch < 1:
            raise ValueError("new must be >= 2 (a pair to compare) and d >= 2, hidden, batch >= 1")
        if not 0 < self.dropout < 1:
            raise ValueError(f"dropout must be in (0, 1); got {self.dropout!r}")
        if self.classes < 2:
            raise ValueError(f"classes must be >= 2; got {self.classes!r}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(n=32, s=16, matrices=4, scales=(0.1, 1.0, 10.0), offset=0.5, fit_n=16, fit_rank=4,
                    fit_matrices=3, nmf_steps=50, nmf_starts=2, d=8, hidden=8, new=4, batch=4, dropout=0.1,
                    classes=100_000),
    # cpu: GAU's s = 128 at n = 512; 32 matrices of each kind put the SEs of the means near 1% of their spread
    "cpu": Config(n=512, s=128, matrices=32, scales=(0.01, 0.1, 1.0, 10.0, 100.0), offset=0.5, fit_n=128,
                  fit_rank=16, fit_matrices=32, nmf_steps=1000, nmf_starts=2, d=64, hidden=128, new=32, batch=64,
                  dropout=0.1, classes=100_000),
    "gpu": Config(n=1024, s=128, matrices=64, scales=(0.01, 0.1, 1.0, 10.0, 100.0), offset=0.5, fit_n=256,
                  fit_rank=32, fit_matrices=64, nmf_steps=5000, nmf_starts=3, d=128, hidden=256, new=64, batch=128,
                  dropout=0.1, classes=100_000),
}


# --- GAU: nu and relu^2 sparsity -------------------------------------------------------------------------------------

def sparsity(weights: torch.Tensor) -> tuple[float, float]:
    """(share of zero weights, mean effective keys per row (sum w)^2 / sum w^2) of a non-negative n x n matrix."""
    zero = float((weights == 0).double().mean())
    eff = weights.sum(-1) ** 2 / (weights ** 2).sum(-1).clamp_min(torch.finfo(weights.dtype).tiny)
    return zero, float(eff.mean())


def relu2_weights(z: torch.Tensor, scale: float = 1.0, offset: float = 0.0, power: int = 2) -> torch.Tensor:
    """GAU's unnormalised weights relu(c q.k / sqrt s)^power with q = k = z + offset (gamma = 1, as at init)."""
    q = z + offset
    return F.relu(scale * (q @ q.T) / math.sqrt(z.shape[-1])) ** power


def relu2_checks(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """Per matrix: sparsity under each scale (relu^2 and, for contrast, softmax), with the offset, and at power 4."""
    rows = []
    for _ in range(cfg.matrices):
        z = torch.randn(cfg.n, cfg.s, generator=gen, dtype=torch.float64)
        base = sparsity(relu2_weights(z))
        row: dict[str, Any] = {"zero": base[0], "eff": base[1]}
        row["scaled_eff"] = [sparsity(relu2_weights(z, c))[1] for c in cfg.scales]
        row["scaled_zero"] = [sparsity(relu2_weights(z, c))[0] for c in cfg.scales]
        row["softmax_eff"] = [sparsity(torch.softmax(c * (z @ z.T) / math.sqrt(cfg.s), -1))[1] for c in cfg.scales]
        row["offset_zero"], row["offset_eff"] = sparsity(relu2_weights(z, offset=cfg.offset))
        row["power4_zero"], row["power4_eff"] = sparsity(relu2_weights(z, power=4))
        rows.append(row)
    mu, nu2 = activation_moments("swish")
    return {"rows": rows, "scales": list(cfg.scales), "offset": cfg.offset, "n": cfg.n, "s": cfg.s,
            "mu": mu, "nu": math.sqrt(nu2)}


# --- FLASH: signed against non-negative factors ----------------------------------------------------------------------

def nmf_residual(a: torch.Tensor, rank: int, steps: int, starts: int, gen: torch.Generator) -> float:
    """min over starts of ||A - WH||_F / ||A||_F for non-negative W, H (Lee and Seung's multiplicative updates)."""
    best = math.inf
    tiny = torch.finfo(a.dtype).tiny
    for _ in range(starts):
        w = torch.rand(a.shape[0], rank, generator=gen, dtype=a.dtype)
        h = torch.rand(rank, a.shape[1], generator=gen, dtype=a.dtype)
        for _ in range(steps):
            h = h * (w.T @ a) / (w.T @ w @ h + tiny)
            w = w * (a @ h.T) / (w @ h @ h.T + tiny)
        best = min(best, float(torch.linalg.norm(a - w @ h) / torch.linalg.norm(a)))
    return best


def svd_residual(a: torch.Tensor, rank: int) -> float:
    """||A - A_r||_F / ||A||_F for the truncated SVD A_r, the best signed rank-r fit (Eckart-Young)."""
    sv = torch.linalg.svdvals(a)
    return float(torch.sqrt((sv[rank:] ** 2).sum() / (sv ** 2).sum()))


def factor_checks(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """Per attention matrix softmax(Q K^T / sqrt d), d = 64: the signed and the non-negative rank-r residuals."""
    rows = []
    for _ in range(cfg.fit_matrices):
        q = torch.randn(cfg.fit_n, 64, generator=gen, dtype=torch.float64)
        k = torch.randn(cfg.fit_n, 64, generator=gen, dtype=torch.float64)
        a = torch.softmax(q @ k.T / 8.0, dim=-1)
        rows.append({"signed": svd_residual(a, cfg.fit_rank),
                     "nonneg": nmf_residual(a, cfg.fit_rank, cfg.nmf_steps, cfg.nmf_starts, gen)})
    return {"rows": rows, "n": cfg.fit_n, "rank": cfg.fit_rank}


# --- widening: the identity, k-fold repetition, padding --------------------------------------------------------------

def homogeneity_gap(name: str) -> float:
    """max |sqrt 2 A(x / sqrt 2) - A(x)| / max |A(x)| on x in [-8, 8] (float64): 0 when A(x/√2) = A(x)/√2."""
    x = torch.linspace(-8, 8, 4001, dtype=torch.float64)
    act = {"leaky_relu": lambda t: F.leaky_relu(t, 0.01), "relu": F.relu, "gelu": F.gelu}[name]
    return float((math.sqrt(2) * act(x / math.sqrt(2)) - act(x)).abs().max() / act(x).abs().max())


def block(x: torch.Tensor, p: dict[str, torch.Tensor], act: str) -> torch.Tensor:
    """x + Attn(x) then + FFN: dot-product attention without a 1/sqrt(d) scale, FFN with ReLU or GELU."""
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    h = x + torch.softmax(q @ k.T, -1) @ v @ p["wo"]
    f = F.relu if act == "relu" else F.gelu
    return h + f(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def repeat_widen(p: dict[str, torch.Tensor], k: int) -> dict[str, torch.Tensor]:
    """The source's k-fold rule: every dimension repeated k times; matrices divided by k, biases by sqrt k."""
    out = {}
    for name, w in p.items():
        if w.dim() == 2:
            out[name] = w.repeat_interleave(k, 0).repeat_interleave(k, 1) / k
        else:
            out[name] = w.repeat_interleave(k) / math.sqrt(k)
    return out


def repeat_checks(cfg: Config, gen: torch.Generator, k: int = 3) -> dict[str, float]:
    """The widened block's output against the small one's repeated and divided by sqrt k, relative (float64)."""
    d, f = cfg.d, 2 * cfg.d
    shapes = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, f), "b1": (f,), "w2": (f, d),
              "b2": (d,)}
    p = {n: torch.randn(*s, generator=gen, dtype=torch.float64) / math.sqrt(s[0] if len(s) == 2 else 1)
         for n, s in shapes.items()}
    x = torch.randn(8, d, generator=gen, dtype=torch.float64)
    wide_p = repeat_widen(p, k)
    wide_x = x.repeat_interleave(k, 1) / math.sqrt(k)
    out: dict[str, float] = {"k": float(k)}
    for act in ("relu", "gelu"):
        want = block(x, p, act).repeat_interleave(k, 1) / math.sqrt(k)
        out[act] = float((block(wide_x, wide_p, act) - want).abs().max() / want.abs().max())
    return out


def padded_mlp(cfg: Config, gen: torch.Generator, scheme: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A ReLU MLP d -> hidden -> d, its hidden layer padded with ``new`` units: W1 (d x h) gains columns and W2
    (h x d) gains rows; 'zero-rows' pads W2's rows with 0 and W1's columns with random numbers (the comment's
    scheme), 'zeros' pads both with 0, 'random' both with random numbers."""
    w1 = torch.randn(cfg.d, cfg.hidden, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d)
    w2 = torch.randn(cfg.hidden, cfg.d, generator=gen, dtype=torch.float64) / math.sqrt(cfg.hidden)
    cols = torch.randn(cfg.d, cfg.new, generator=gen, dtype=torch.float64) / math.sqrt(cfg.d)
    rows = torch.randn(cfg.new, cfg.d, generator=gen, dtype=torch.float64) / math.sqrt(cfg.hidden)
    if scheme == "zero-rows":
        rows = torch.zeros_like(rows)
    elif scheme == "zeros":
        cols, rows = torch.zeros_like(cols), torch.zeros_like(rows)
    elif scheme != "random":
        raise ValueError(f"scheme must be 'zero-rows', 'zeros' or 'random'; got {scheme!r}")
    return torch.cat([w1, cols], 1), torch.cat([w2, rows], 0)


def mlp_gradients(w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, y: torch.Tensor, dropout: float = 0.0,
                  gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of W1 and W2 of the mean squared error of relu(x W1) W2, with dropout on the hidden layer when
    asked."""
    a, b = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
    h = F.relu(x @ a)
    if dropout:
        keep = (torch.rand(h.shape, generator=gen, dtype=h.dtype) >= dropout).to(h.dtype)
        h = h * keep / (1 - dropout)
    ((h @ b - y) ** 2).mean().backward()
    assert a.grad is not None and b.grad is not None
    return a.grad, b.grad


def new_part(cfg: Config, g1: torch.Tensor, g2: torch.Tensor) -> torch.Tensor:
    """The new units' rows of the gradients (W1's new columns and W2's new rows), one row per new unit."""
    return torch.cat([g1[:, cfg.hidden:].T, g2[cfg.hidden:, :]], 1)


def new_gradients(cfg: Config, w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  dropout: float = 0.0, gen: torch.Generator | None = None) -> torch.Tensor:
    """The gradients of the new units' weights (:func:`new_part` of :func:`mlp_gradients`)."""
    return new_part(cfg, *mlp_gradients(w1, w2, x, y, dropout, gen))


def spread(grads: torch.Tensor) -> float:
    """The largest distance between two new units' gradients."""
    return float(torch.cdist(grads, grads).max())


def padding_checks(cfg: Config, gen: torch.Generator) -> dict[str, Any]:
    """Lossless or not, each scheme's output gap; the share of new weights whose gradient is exactly 0 at the first
    step and after one SGD step; the new units' gradient spread, with and without dropout."""
    x = torch.randn(cfg.batch, cfg.d, generator=gen, dtype=torch.float64)
    y = torch.randn(cfg.batch, cfg.d, generator=gen, dtype=torch.float64)
    out: dict[str, Any] = {"d": cfg.d, "new": cfg.new, "dropout": cfg.dropout}
    state = gen.get_state()
    masks = torch.Generator().manual_seed(cfg.seed + 1)  # dropout's draws, apart from the weights'
    for scheme in ("zero-rows", "zeros", "random"):
        gen.set_state(state)  # the three schemes share the old weights and the random padding
        w1, w2 = padded_mlp(cfg, gen, scheme)
        reference = F.relu(x @ w1[:, :cfg.hidden]) @ w2[:cfg.hidden]
        gap = float((F.relu(x @ w1) @ w2 - reference).abs().max() / reference.abs().max())
        g1, g2 = mlp_gradients(w1, w2, x, y)
        g = new_part(cfg, g1, g2)
        g_step = new_gradients(cfg, w1 - 0.1 * g1, w2 - 0.1 * g2, x, y)  # after one SGD step
        out[scheme] = {"gap": gap, "zero_share": float((g == 0).double().mean()),
                       "zero_share_step2": float((g_step == 0).double().mean()), "spread": spread(g),
                       "norm": float(g.norm()),
                       "dropout_spread": spread(new_gradients(cfg, w1, w2, x, y, cfg.dropout, masks))}
    return out


# --- the notes' entropy code -----------------------------------------------------------------------------------------

def notes_onehot_entropy(classes: int) -> float:
    """The notes' entropy(true_dist): clip a one-hot vector at 1e-10, then -sum p ln p (numpy, as they wrote it)."""
    p = np.zeros(classes)
    p[499 % classes] = 1.0
    p = np.clip(p, NOTES_CLIP, 1.0)
    return float(-np.sum(p * np.log(p)))


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Every check; plain data (one stream of random draws from cfg.seed)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    return {"device_type": "cpu", "relu2": relu2_checks(cfg, gen), "factor": factor_checks(cfg, gen),
            "homogeneity": {a: homogeneity_gap(a) for a in ("leaky_relu", "relu", "gelu")},
            "repeat": repeat_checks(cfg, gen), "padding": padding_checks(cfg, gen),
            "notes_entropy": {"classes": cfg.classes, "printed": round(notes_onehot_entropy(cfg.classes), NOTES_DIGITS),
                              "value": notes_onehot_entropy(cfg.classes),
                              "closed_form": (cfg.classes - 1) * NOTES_CLIP * math.log(1 / NOTES_CLIP)}}


def plan(cfg: Config) -> list[Workload]:
    """relu^2 and softmax weight matrices, NMF updates and SVDs, small networks: counted FLOPs."""
    gau = cfg.matrices * (len(cfg.scales) * 2 + 3) * 2.0 * cfg.n ** 2 * cfg.s
    nmf = cfg.fit_matrices * cfg.nmf_starts * cfg.nmf_steps * 8.0 * cfg.fit_n ** 2 * cfg.fit_rank
    return [Workload("relu^2 sparsity, factorisations, widened blocks", flops=gau + nmf,
                     memory_bytes=8.0 * (cfg.n ** 2 + cfg.n * cfg.s))]


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """nu = 0.6; relu^2's sparsity under a scale and an offset; signed factors; LeakyReLU; 3-fold repetition;
    padding schemes; the notes' one-hot entropy."""
    r, f, pad, ne = data["relu2"], data["factor"], data["padding"], data["notes_entropy"]
    rows = r["rows"]

    def worst(key: str) -> float:  # the largest relative change of the effective keys over the scales, any matrix
        return max(abs(e / row["eff"] - 1) for row in rows for e in row[key])

    offset_change = mean_estimate([row["offset_eff"] / row["eff"] - 1 for row in rows], "matrices")
    power_change = float(np.mean([row["power4_eff"] / row["eff"] - 1 for row in rows]))
    ratio = mean_estimate([row["signed"] / row["nonneg"] for row in f["rows"]], "attention matrices")
    zero_share = mean_estimate([row["offset_zero"] - row["zero"] for row in rows], "matrices")
    s_nu6 = (0.6 / r["nu"]) ** 6
    rr, zr, zz, rand = data["repeat"], pad["zero-rows"], pad["zeros"], pad["random"]
    columns_share = pad["d"] * pad["new"] / (pad["d"] * pad["new"] + pad["new"] * pad["d"])  # W1's new columns
    return [
        Claim("nu-rounded", f"For a rough estimate GAU's $\\nu$ may be taken as 0.6 ($\\nu = \\sqrt{{E[\\mathrm{{Swish}}"
              f"(\\varepsilon)^2]}}$ by quadrature; computed)", GAU_POST, predicted=0.6, measured=r["nu"],
              uncertainty=0.0, tolerance=0.05, tolerance_basis="one significant figure: half a unit of 0.1",
              alternative=r["mu"], alternative_note="the mean μ of Swish, which the analysis does not use",
              corrected=r["nu"], corrected_note=f"ν = {r['nu']:.4f}; 0.6 raises the predicted output sν⁶/n by "
                                                f"{100 * (s_nu6 - 1):.1f}%", unit="", computed=True),
        Claim("relu2-scale-keeps-sparsity",
              f"No scale factor changes the sparsity of GAU's $\\mathrm{{relu}}^2$ weights (largest relative change "
              f"of the effective keys per row, $c$ = {', '.join(f'{c:g}' for c in r['scales'])} outside "
              f"$\\mathrm{{relu}}^2$, {len(rows)} matrices, $n = {r['n']}$, $s = {r['s']}$; {label})", GAU_POST,
              predicted=0.0, measured=worst("scaled_eff"), uncertainty=0.0, tolerance=64 * EPS64,
              tolerance_basis="64 float64 ulps: sums of squares of up to a thousand weights",
              alternative=worst("softmax_eff"), alternative_note="softmax's change under the same scales",
              unit=""),
        Claim("relu2-only-power-changes-sparsity",
              f"... and only the power of $\\mathrm{{relu}}^2$ can change it: an offset $\\beta = {r['offset']:g}$ "
              f"in $q = k = Z + \\beta$ leaves the effective keys per row unchanged (relative change, mean over "
              f"{len(rows)} matrices; {label})", GAU_POST, predicted=0.0,
              **estimate_fields(offset_change, "the effective keys' relative change"), effect=power_change,
              corrected=offset_change.value,
              corrected_note=f"GAU's own offsets change it too: the share of zero weights moves by "
                             f"{zero_share.value:+.3f} with the offset", unit=""),
        Claim("signed-qk-fits-better",
              f"Signed $Q$, $K$ fit an attention matrix better than non-negative ones (relative residual of the best "
              f"rank-{f['rank']} signed fit over the best non-negative one, {len(f['rows'])} softmax matrices of "
              f"size {f['n']}; {label})", FLASH_POST, predicted=1.0,
              **estimate_fields(ratio, "the residual ratio", sided="one"), kind="below", unit=""),
        Claim("leaky-relu-identity",
              "LeakyReLU satisfies $A(x/\\sqrt2) = A(x)/\\sqrt2$, as ReLU does (largest gap relative to "
              "$\\max|A(x)|$ on $[-8, 8]$, float64; computed)", WIDENING_POST, predicted=0.0,
              measured=data["homogeneity"]["leaky_relu"], uncertainty=0.0, tolerance=4 * EPS64,
              tolerance_basis="4 float64 ulps: one product and one division", alternative=data["homogeneity"]["gelu"],
              alternative_note="GELU's gap, which the source says breaks the identity", unit="",
              computed=True),
        Claim("repeat-k-lossless",
              f"With ReLU and no attention scale, widening {rr['k']:.0f}-fold by repeating every dimension and "
              f"dividing by $\\sqrt{{{rr['k']:.0f}}}$ is lossless (an attention and FFN block, largest output gap "
              f"relative to the largest output, float64; {label})", WIDENING_POST, predicted=0.0,
              measured=rr["relu"], uncertainty=0.0, tolerance=256 * EPS64,
              tolerance_basis="256 float64 ulps: two matrix products and a softmax in a block of width d",
              alternative=rr["gelu"], alternative_note="the same block with GELU in its FFN", unit=""),
        Claim("zero-rows-lossless",
              f"Padding a matrix's new rows with 0 and its new columns with random numbers leaves the computation "
              f"unchanged (a ReLU MLP whose hidden layer gains {pad['new']} units; largest output gap, relative; "
              f"{label})", COMMENT, predicted=0.0, measured=zr["gap"], uncertainty=0.0, tolerance=64 * EPS64,
              tolerance_basis="64 float64 ulps: sums that gain zero terms", alternative=rand["gap"],
              alternative_note="padding rows and columns both with random numbers", unit=""),
        Claim("zero-rows-gradients",
              f"... and gives every new weight a non-zero gradient (share of the new units' weights whose gradient "
              f"is exactly 0 at the first step; {label})", COMMENT, predicted=0.0, measured=zr["zero_share"],
              uncertainty=0.0, tolerance=0.0, tolerance_basis="exact: a count of zero gradients", kind="upper_bound",
              alternative=zz["zero_share"], alternative_note="zero padding everywhere, which the comment rejects",
              corrected=columns_share,
              corrected_note=f"the random columns, {columns_share:.2g} of the new weights (d x new of them against "
                             f"new x d zero rows), have a zero gradient "
                             f"until one step has moved the zero rows; after one SGD step the share is "
                             f"{zr['zero_share_step2']:.2g}", unit=""),
        Claim("zeros-same-gradient",
              f"Padding with zeros gives the new units the same gradient (largest distance between two new units' "
              f"gradients; {label})", COMMENT, predicted=0.0, measured=zz["spread"], uncertainty=0.0, tolerance=0.0,
              tolerance_basis="exact: the gradients are computed, no sampling", alternative=zr["spread"],
              alternative_note="the spread under the comment's own scheme",
              corrected=zz["norm"], corrected_note="the same because it is zero: the zero units never move",
              unit=""),
        Claim("zeros-dropout-breaks",
              f"... unless dropout is used: with dropout $p = {pad['dropout']:g}$ on the hidden layer the new units' "
              f"gradients differ (largest distance between two; {label})", COMMENT, predicted=0.0,
              measured=zz["dropout_spread"], uncertainty=0.0, tolerance=0.0,
              tolerance_basis="exact: the gradients are computed, no sampling", kind="above",
              corrected_note="dropout cannot separate units whose weights are all zero; it separates copies",
              unit=""),
        Claim("notes-onehot-entropy",
              f"The notes' code gives the one-hot true distribution the entropy 0 ({ne['classes']:,} classes, as "
              f"printed with {NOTES_DIGITS} decimals; computed)", NOTES, predicted=0.0, measured=ne["printed"],
              uncertainty=0.0, tolerance=0.5 * 10 ** -NOTES_DIGITS,
              tolerance_basis=f"half the last printed digit, {0.5 * 10 ** -NOTES_DIGITS:g}",
              alternative=ne["closed_form"], alternative_note="the clip's own entropy, (K − 1) · 10⁻¹⁰ · ln 10¹⁰",
              corrected=ne["closed_form"],
              corrected_note="each of the K − 1 clipped zeros adds 10⁻¹⁰ · ln 10¹⁰ nats", unit="nats",
              computed=True),
    ]
