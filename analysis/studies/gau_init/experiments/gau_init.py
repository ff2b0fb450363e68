"""GAU at initialisation: the entries of A, the output RMS over a grid, scaling all weights by lambda, and GAU-α's
init (its weights at L^(-1/3) of LeCun's scale, L = 24 layers) with relu² and with GAU-α's own softmax attention.

Layers are built with :class:`analysis.models.gau.GAU` (Q(Z) = K(Z) = Z at initialisation, as the
source assumes) and fed x ~ N(0, I). Every quantity is averaged over seeds, with its spread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from analysis.core.experiment import Workload
from analysis.core.stats import Estimate, from_se
from analysis.core.trial import Trial
from analysis.core.verify import Claim, estimate_fields
from analysis.models.gau import GAU, GAUConfig
from analysis.theory import gau_init as th

NAME = "gau-init"
DATA_VERSION = 2  # raised when the layout of the record's data changes
SOURCE = "Su 2022, kexue.fm/archives/8990"


@dataclass(frozen=True)
class Config:
    """The grid and the number of seeds."""

    ns: tuple[int, ...]
    ss: tuple[int, ...]
    widths: tuple[tuple[int, int], ...]  # (d, e)
    inits: tuple[str, ...]
    seeds: int
    lambdas: tuple[float, ...]
    alpha_layers: int = 24  # GAU-α's depth: its weights are drawn at L^(-1/3) / sqrt(fan-in)
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(ns=(64, 512), ss=(32, 128), widths=((256, 512),), inits=("lecun", "std0.02"), seeds=2,
                    lambdas=(0.1, 1.0, 3.0)),
    "cpu": Config(ns=(64, 256, 512, 1024, 4096), ss=(32, 64, 128, 256), widths=((768, 1536), (256, 512)),
                  inits=("lecun", "std0.02"), seeds=3, lambdas=tuple(np.geomspace(0.05, 4, 13).round(4))),
    "gpu": Config(ns=(64, 256, 512, 1024, 4096, 8192), ss=(32, 64, 128, 256), widths=((768, 1536), (256, 512), (1024, 2048)),
                  inits=("lecun", "std0.02"), seeds=8, lambdas=tuple(np.geomspace(0.05, 4, 25).round(4))),
}




@torch.no_grad()
def measure_layer(d: int, e: int, s: int, n: int, init: str, seed: int, device: torch.device,
                  weight_scale: float = 1.0, norm: str = "relu2_ns") -> dict[str, float]:
    """One layer, one input: output RMS, mean diagonal / off-diagonal entries of A and the off-diagonal row mass."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    torch.manual_seed(seed)
    layer = GAU(GAUConfig(d=d, e=e, s=s, init=init, norm=norm)).to(device)
    if weight_scale != 1.0:
        for lin in (layer.to_uv, layer.to_z, layer.to_out):
            lin.weight.mul_(weight_scale)
    x = torch.randn(1, n, d, generator=gen).to(device)
    out = layer(x)
    z = F.silu(layer.to_z(x))
    _, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    q, k = layer.qk(z)
    a = layer.attention(q, k, torch.ones(1, n, dtype=torch.bool, device=device))[0]
    diag = a.diagonal()
    off_mass = a.sum(-1) - diag
    diag_term = (diag[:, None] * v[0]).pow(2).mean().sqrt()
    off_term = (a @ v[0] - diag[:, None] * v[0]).pow(2).mean().sqrt()
    return {
        "rms": float(out.pow(2).mean().sqrt()),
        "a_diag": float(diag.mean()),
        "a_offdiag": float(off_mass.mean() / max(n - 1, 1)),
        "row_offdiag_mass": float(off_mass.mean()),
        "av_diag_rms": float(diag_term),
        "av_offdiag_rms": float(off_term),
    }


def _mean_std(rows: list[dict[str, float]]) -> dict[str, float]:
    out = {}
    for key in rows[0]:
        values = np.array([r[key] for r in rows])
        out[key] = float(values.mean())
        out[key + "_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return out


def measure(d: int, e: int, s: int, n: int, init: str, seeds: int, device: torch.device, base_seed: int = 0,
            weight_scale: float = 1.0, norm: str = "relu2_ns") -> dict[str, float]:
    """Mean and standard deviation over seeds of :func:`measure_layer`."""
    return _mean_std([measure_layer(d, e, s, n, init, base_seed + k, device, weight_scale, norm)
                      for k in range(seeds)])


def sweep_point(cfg: Config) -> tuple[int, int, int, int]:
    """(d, e, s, n) of the lambda sweep: the first width, s = 128 and n = 512 when in the grid."""
    d, e = cfg.widths[0]
    return d, e, 128 if 128 in cfg.ss else cfg.ss[-1], 512 if 512 in cfg.ns else cfg.ns[len(cfg.ns) // 2]


def trials(cfg: Config) -> list[Trial]:
    """The grid per (width, initialisation), and the lambda sweep; layers are seeded cfg.seed + k, k < cfg.seeds."""
    return ([Trial(f"grid.d{d}.e{e}.{init}", cfg.seed, {"d": d, "e": e, "init": init})
             for d, e in cfg.widths for init in cfg.inits] + [Trial("sweep", cfg.seed), Trial("gau-alpha", cfg.seed)])


ALPHA_NORMS = ("relu2_ns", "softmax_log512")  # the source's attention and GAU-α's softmax_plus


def alpha_lambdas(cfg: Config) -> tuple[float, float, float]:
    """GAU-α's weight scale against LeCun's, lambda_a = L^(-1/3), and its neighbours lambda_a / sqrt 2, sqrt 2 lambda_a."""
    lam = float(cfg.alpha_layers) ** (-1 / 3)
    return lam / np.sqrt(2), lam, lam * np.sqrt(2)


def alpha_prediction(norm: str, s: int, n: int, d: int, lam: float) -> float:
    """The book's prediction of the output RMS with every weight at lambda times LeCun's: the corrected relu² law, or
    for softmax its near-uniform limit (eq-softmax-mode)."""
    if norm == "relu2_ns":
        return th.gau_output_rms_scaled(s, n, d, lam, lam ** 2).rms_corrected
    return th.gau_output_rms_softmax(n, lam, lam ** 2)


@dataclass(frozen=True)
class Rows:
    """One trial's measured rows: a grid point (d, e, s, n, init) or a lambda each, with its predictions."""

    rows: list[dict[str, Any]]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Rows:
    """Measured and predicted RMS and entries of A at every (s, n) of one width and initialisation, or the
    output RMS against lambda."""
    if trial.key == "gau-alpha":
        d, e, s, n = sweep_point(cfg)
        return Rows([{"norm": norm, "lambda": float(lam),
                      **measure(d, e, s, n, "lecun", cfg.seeds, device, trial.seed, float(lam), norm),
                      "pred": alpha_prediction(norm, s, n, d, float(lam))}
                     for norm in ALPHA_NORMS for lam in alpha_lambdas(cfg)])
    if trial.key == "sweep":
        d, e, s, n = sweep_point(cfg)
        return Rows([{"lambda": float(lam), **measure(d, e, s, n, "lecun", cfg.seeds, device, trial.seed, float(lam)),
                      "pred_corrected": th.gau_output_rms_scaled(s, n, d, float(lam), float(lam) ** 2).rms_corrected}
                     for lam in cfg.lambdas])
    d, e, init = (trial.params[k] for k in ("d", "e", "init"))
    rows = []
    for s in cfg.ss:
        for n in cfg.ns:
            pred = th.gau_output_rms(s, n, d, e, init)
            rows.append({"d": d, "e": e, "s": s, "n": n, "init": init,
                         **measure(d, e, s, n, init, cfg.seeds, device, trial.seed),
                         **{f"pred_{k}": v for k, v in dataclasses.asdict(pred).items()}})
    return Rows(rows)


def assemble(cfg: Config, results: list[Rows], device_type: str) -> dict[str, Any]:
    """Moments, the RMS grid with both predictions, and the lambda sweep."""
    moments = {name: {"mean": th.activation_moment(name, 1), "second_moment": th.activation_moment(name, 2)}
               for name in th.ACTIVATIONS}
    *grid, sweep, alpha = results
    d, e, s, n = sweep_point(cfg)
    return {"device_type": device_type, "seeds": cfg.seeds, "moments": moments,
            "grid": [row for r in grid for row in r.rows], "sweep": {"d": d, "e": e, "s": s, "n": n, "rows": sweep.rows},
            "gau_alpha": {"d": d, "e": e, "s": s, "n": n, "layers": cfg.alpha_layers, "rows": alpha.rows}}


def local_exponents(sweep: dict[str, Any], key: str) -> tuple[np.ndarray, np.ndarray]:
    """d ln RMS / d ln lambda between neighbouring lambdas (at their geometric midpoints)."""
    lam = np.array([r["lambda"] for r in sweep["rows"]])
    rms = np.array([r[key] for r in sweep["rows"]])
    return np.sqrt(lam[1:] * lam[:-1]), np.diff(np.log(rms)) / np.diff(np.log(lam))


def reference_row(data: dict[str, Any]) -> dict[str, Any]:
    """The LeCun grid point nearest the source's s = 128, n = 512 in log distance (the widest d on ties)."""
    grid = [r for r in data["grid"] if r["init"] == "lecun"]
    if not grid:
        raise ValueError("the grid has no LeCun point")
    return min(grid, key=lambda r: (abs(np.log(r["s"] / 128)), abs(np.log(r["n"] / 512)), -r["d"]))


def entry_ratio(ref: dict[str, Any]) -> tuple[float, float]:
    """How many times smaller an off-diagonal entry of A is than a diagonal one at a grid point: the measured
    A_ii / A_ij, and the source's (s nu^4/n) / (s mu^4/n) = nu^4 / mu^4. ValueError when an entry is not positive."""
    for name in ("a_diag", "a_offdiag", "pred_a_diag_source", "pred_a_offdiag_source"):
        if not ref[name] > 0:
            raise ValueError(f"ref[{name!r}] must be > 0; got {ref[name]!r}")
    return ref["a_diag"] / ref["a_offdiag"], ref["pred_a_diag_source"] / ref["pred_a_offdiag_source"]


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The reference point, and how many times smaller than its unit-RMS input the output is, measured and per source."""
    ref = reference_row(data)
    return {"reference": ref, "where": f"s = {ref['s']}, n = {ref['n']}, d = {ref['d']}",
            "times_below_input": 1 / ref["rms"], "source_times_below_input": 1 / ref["pred_rms_source"],
            "over_source": ref["rms"] / ref["pred_rms_source"]}


def seed_estimate(mean: float, sd: float, seeds: int, scale: float = 1.0) -> Estimate:
    """The mean over ``seeds`` seeds of a recorded quantity with standard deviation ``sd`` over seeds, divided by
    ``scale``: its standard error sd / sqrt(seeds), with seeds - 1 degrees of freedom."""
    return from_se(mean / scale, sd / scale / np.sqrt(seeds), seeds, "seeds")


def init_words(init: str) -> str:
    """An initialisation's name as the prose writes it: 'lecun' as 'LeCun', 'std0.02' as 'std 0.02'."""
    if init == "lecun":
        return "LeCun"
    if init.startswith("std"):
        return f"std {init[3:]}"
    raise ValueError(f"init must be 'lecun' or 'std<value>'; got {init!r}")


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The source's magnitude claims at s = 128, n = 512 (or the nearest grid point), and across the grid. Each
    measurement is a mean over the recorded seeds, tested by its standard error with Student's t (seeds - 1 df);
    every grid point and lambda reuses the same seeds, so points are not independent of each other."""
    grid = [r for r in data["grid"] if r["init"] == "lecun"]
    ref = reference_row(data)
    where = f"$d = {ref['d']}$, $e = {ref['e']}$, $s = {ref['s']}$, $n = {ref['n']}$, LeCun"
    ratios = np.array([r["rms"] / r["pred_rms_corrected"] for r in data["grid"]])
    worst_at = int(np.argmax(np.abs(np.log(ratios))))
    worst = data["grid"][worst_at]
    big_n = [r for r in grid if r["s"] == ref["s"] and r["d"] == ref["d"]]
    seeds = int(data.get("seeds", 1)) or 1
    log_n = np.log([r["n"] for r in big_n])
    slope = float(np.polyfit(log_n, np.log([r["rms"] for r in big_n]), 1)[0]) if len(big_n) > 1 else 0.0
    # standard error of the slope, from the seed error of each ln RMS (sd / mean / sqrt(seeds)), propagated as if
    # independent: the points share their seeds, and a shared error moves every ln RMS alike, which leaves the slope
    sig = np.array([r["rms_std"] / r["rms"] / np.sqrt(seeds) for r in big_n])
    centred = log_n - log_n.mean()
    slope_se = float(np.sqrt(np.sum(sig**2 * centred**2)) / np.sum(centred**2)) if len(big_n) > 1 else 0.0
    mom = data["moments"]["swish"]
    mids, exps = local_exponents(data["sweep"], "rms")
    one = int(np.argmin(np.abs(mids - 1.0)))
    sweep = data["sweep"]["rows"]
    lam = np.array([r["lambda"] for r in sweep])
    ln_err = np.array([r["rms_std"] / r["rms"] / np.sqrt(seeds) for r in sweep])
    exp_se = float(np.hypot(ln_err[one], ln_err[one + 1]) / np.log(lam[one + 1] / lam[one]))
    # the rivals: the corrected law's slope in n, local exponent and worst-point ratio, and the next printed digit
    corrected_slope = (float(np.polyfit(log_n, np.log([r["pred_rms_corrected"] for r in big_n]), 1)[0])
                       if len(big_n) > 1 else 0.0)
    corrected_exp = float(local_exponents(data["sweep"], "pred_corrected")[1][one])
    mean_digit = 0.2066 + float(np.copysign(1e-4, mom["mean"] - 0.2066))
    moment_digit = 0.35575 + float(np.copysign(1e-4, mom["second_moment"] - 0.35575))
    a_diag = seed_estimate(ref["a_diag"], ref["a_diag_std"], seeds)
    a_off = seed_estimate(ref["a_offdiag"], ref["a_offdiag_std"], seeds)
    rms = seed_estimate(ref["rms"], ref["rms_std"], seeds)
    ratio = seed_estimate(worst["rms"], worst["rms_std"], seeds, worst["pred_rms_corrected"])
    return [
        Claim("swish-mean", "$\\mu = E[\\mathrm{Swish}(\\varepsilon)] = 0.2066$ for $\\varepsilon \\sim N(0, 1)$", SOURCE, 0.2066, mom["mean"], 1e-13, 5e-5,
              "the source gives 4 decimals: ±5e-5 rounding; quadrature error ~1e-13", computed=True,
              alternative=mean_digit, alternative_note=f"the neighbouring value at 4 decimals, {mean_digit:.4f}"),
        Claim("swish-second-moment", "$\\nu^2 = E[\\mathrm{Swish}(\\varepsilon)^2] = 0.3557\\cdots$, truncated: the value lies in "
              "$[0.3557, 0.3558)$ (predicted: the interval's midpoint)", SOURCE, 0.35575, mom["second_moment"], 1e-13,
              5e-5, "the source truncates to 4 decimals (0.3557⋯): the true value lies in [0.3557, 0.3558), "
              "midpoint ± 5e-5; quadrature error ~1e-13", computed=True, alternative=moment_digit,
              alternative_note=f"the midpoint of the neighbouring truncated interval, {moment_digit:.5f}"),
        Claim("a-diag", f"$A_{{ii}} \\approx s\\nu^4/n$ ({where}; mean over seeds; {label})", SOURCE,
              ref["pred_a_diag_source"], **estimate_fields(a_diag, "the mean of $A_{ii}$"),
              effect=ref["pred_a_diag"] - ref["pred_a_diag_source"],
              corrected=ref["pred_a_diag"], corrected_note="$(s\\nu^4 + m_4 - \\nu^4)/n$: $|Z_i|^2$ fluctuates"),
        Claim("a-offdiag", f"$A_{{ij}} \\approx s\\mu^4/n$ for $i \\neq j$ ({where}; mean over seeds; {label})", SOURCE,
              ref["pred_a_offdiag_source"], **estimate_fields(a_off, "the mean of $A_{ij}$"),
              effect=ref["pred_a_offdiag"] - ref["pred_a_offdiag_source"],
              corrected=ref["pred_a_offdiag"], corrected_note="$E[\\mathrm{relu}^2]$ of $Z_i \\cdot Z_j$ with its spread $s(\\nu^4 - \\mu^4)$ included"),
        Claim("rms-source", f"$\\mathrm{{RMS}}(\\mathrm{{GAU}}(x)) \\approx s\\nu^6/n \\approx 0.01$ ({where}; mean over seeds; {label})", SOURCE,
              ref["pred_rms_source"], **estimate_fields(rms, "the mean RMS"),
              effect=ref["pred_rms_corrected"] - ref["pred_rms_source"],
              corrected=ref["pred_rms_corrected"],
              corrected_note="the off-diagonal row mass $c \\approx s\\mu^4 + \\ldots$ does not shrink with $n$, and $V$ has mean $\\mu$"),
        Claim("rms-slope", f"RMS falls as $1/n$ (log-log slope in $n$ at $s = {ref['s']}$, $d = {ref['d']}$; {label})",
              SOURCE, -1.0, **estimate_fields(
                  from_se(slope, slope_se, seeds, "seeds"),
                  "the slope, propagated from each point's seed SE of ln RMS as if independent (the points share seeds)"),
              alternative=corrected_slope, alternative_note=f"the corrected law's slope over the same points, "
                                                            f"{corrected_slope:.3g}"),
        Claim("rms-corrected-grid", f"The corrected prediction fits the whole grid: measured / predicted RMS "
              f"({len(ratios)} points over $n, s, d, e$, LeCun and std 0.02; worst at $n = {worst['n']}$, $s = {worst['s']}$, "
              f"$d = {worst['d']}$, {init_words(worst['init'])}; {label})", "this book", 1.0,
              **estimate_fields(ratio, "the worst point's ratio"),
              alternative=worst["pred_rms_source"] / worst["pred_rms_corrected"],
              alternative_note="the ratio the source's $s\\nu^6/n$ would give at that point"),
        Claim("lambda7", f"Scaling every weight by $\\lambda$ scales the output by $\\lambda^7$ (local exponent at $\\lambda \\approx 1$; {label})",
              SOURCE, 7.0, **estimate_fields(
                  from_se(float(exps[one]), exp_se, seeds, "seeds"),
                  "the finite-difference exponent, from the seed SEs of its two RMS values as if independent "
                  "(both use the same seeds)"),
              alternative=corrected_exp, alternative_note=f"the corrected law's local exponent between the same "
                                                          f"lambdas, {corrected_exp:.3g}"),
        half_claim(data["sweep"], seeds, label),
        *alpha_claims(data["gau_alpha"], seeds, label),
    ]


def exponent_at_half(sweep: dict[str, Any], seeds: int, key: str = "rms") -> tuple[float, float, float]:
    """log2 RMS(lambda = 1) - log2 RMS(lambda = 1/2): the exponent p with RMS(1/2) = 2^-p RMS(1), read from the
    lambda sweep by linear interpolation in (ln lambda, ln RMS); with its seed SE (the two interpolated values taken
    as independent, which overstates it: they share the seeds) and the interpolation error (linear against cubic
    through the four nearest points)."""
    rows = sweep["rows"]
    x = np.log([r["lambda"] for r in rows])
    y = np.log([r[key] for r in rows])
    if not (x[0] < np.log(0.5) and x[-1] > 0.0):
        raise ValueError("the lambda sweep must span 1/2 to 1")
    se = np.array([r["rms_std"] / r["rms"] / np.sqrt(seeds) for r in rows]) if key == "rms" else np.zeros(len(rows))

    def at(point: float) -> tuple[float, float, float]:
        i = int(np.searchsorted(x, point))
        w = (point - x[i - 1]) / (x[i] - x[i - 1])
        linear = (1 - w) * y[i - 1] + w * y[i]
        near = slice(max(0, i - 2), min(len(x), i + 2))
        cubic = float(np.polyval(np.polyfit(x[near], y[near], min(3, len(x[near]) - 1)), point))
        return float(linear), float(np.hypot((1 - w) * se[i - 1], w * se[i])), abs(cubic - float(linear))

    (y1, s1, e1), (yh, sh, eh) = at(0.0), at(float(np.log(0.5)))
    return (y1 - yh) / np.log(2), float(np.hypot(s1, sh) / np.log(2)), (e1 + eh) / np.log(2)


def half_claim(sweep: dict[str, Any], seeds: int, label: str) -> Claim:
    """The source's use of lambda^7: with every weight halved (its 0.02 init against LeCun's 0.036 at d = 768) the
    output shrinks by 2^-7, 'also of order 0.01'; measured as the exponent between lambda = 1/2 and 1, its tolerance
    the t interval of the seed SE plus the interpolation error."""
    p, p_se, p_interp = exponent_at_half(sweep, seeds)
    corrected, _, _ = exponent_at_half(sweep, seeds, key="pred_corrected")
    fields = estimate_fields(from_se(p, p_se, seeds, "seeds"), "the exponent between two interpolated points of the "
                             "sweep, their seed SEs taken as independent (they share the seeds)")
    fields["tolerance"] += p_interp
    fields["tolerance_basis"] += f"; plus {p_interp:.2g} for the interpolation (linear against cubic in log-log)"
    return Claim("lambda7-half", f"Halving every weight ($\\lambda = 1/2$) scales the output by $2^{{-7}}$, "
                 f"'also of order 0.01': measured as the exponent $p$ with RMS(1/2) = $2^{{-p}}$ RMS(1) "
                 f"($d$ = {sweep['d']}, $n$ = {sweep['n']}, $s$ = {sweep['s']}; the measured factor is "
                 f"{2 ** -p:.2g}; {label})", SOURCE, 7.0, **fields, unit="exponent",
                 corrected=corrected, corrected_note="the chapter's corrected RMS formula at the same two points",
                 alternative=corrected, alternative_note=f"the corrected RMS formula's exponent, {corrected:.3g}")


def alpha_exponent(rows: list[dict[str, Any]], seeds: int, key: str = "rms") -> tuple[float, float]:
    """d ln RMS / d ln lambda across GAU-α's lambda_a / sqrt 2 .. sqrt 2 lambda_a (three rows of one attention), with its
    seed SE (the two ends' relative SEs taken as independent, which overstates it: they share the seeds)."""
    lo, hi = rows[0], rows[-1]
    p = float(np.log(hi[key] / lo[key]) / np.log(hi["lambda"] / lo["lambda"]))
    if key != "rms":
        return p, 0.0
    rel = np.hypot(lo["rms_std"] / lo["rms"], hi["rms_std"] / hi["rms"]) / np.sqrt(seeds)
    return p, float(rel / np.log(hi["lambda"] / lo["lambda"]))


def alpha_claims(alpha: dict[str, Any], seeds: int, label: str) -> list[Claim]:
    """The lambda^7 law at GAU-α's init, with relu² and with GAU-α's softmax attention, and the softmax mode's RMS."""
    by = {norm: [r for r in alpha["rows"] if r["norm"] == norm] for norm in ALPHA_NORMS}
    relu, soft = by["relu2_ns"], by["softmax_log512"]
    lam, layers = relu[1]["lambda"], alpha["layers"]
    where = f"$d = {alpha['d']}$, $s = {alpha['s']}$, $n = {alpha['n']}$; {label}"
    at = f"at GAU-α's init, $\\lambda = {layers}^{{-1/3}} = {lam:.3f}$ of LeCun's scale"
    out = []
    for key, rows, attention, rival in (("relu2", relu, "relu² attention", "the corrected relu² law's"),
                                        ("softmax", soft, "GAU-α's softmax attention, logits times $\\ln n/\\ln 512$",
                                         "the softmax mode's")):
        p, se = alpha_exponent(rows, seeds)
        law, _ = alpha_exponent(rows, seeds, "pred")
        out.append(Claim(
            f"gau-alpha-lambda7-{key}",
            f"Scaling every weight by $\\lambda$ scales GAU's output by $\\lambda^7$ {at}, with {attention} (local "
            f"exponent from $\\lambda/\\sqrt2$ to $\\sqrt2\\lambda$; {where})", SOURCE, 7.0,
            **estimate_fields(from_se(p, se, seeds, "seeds"), "the local exponent, the two ends' seed SEs taken as "
                              "independent (they share the seeds)"), unit="exponent",
            alternative=law, alternative_note=f"{rival} exponent there, {law:.3g}", corrected=law,
            corrected_note=f"{rival} exponent (eq-softmax-mode for softmax)"))
    mid = soft[1]
    out.append(Claim(
        "gau-alpha-softmax-rms",
        f"With softmax attention {at}, GAU's output RMS is the near-uniform limit "
        f"$\\sqrt{{g_o\\,\\nu^2(\\mu^2 + (\\nu^2 - \\mu^2)/n)}}$ ({where})",
        "this book (the softmax mode of the GAU law)", mid["pred"],
        **estimate_fields(seed_estimate(mid["rms"], mid["rms_std"], seeds), "the output RMS"), unit="RMS",
        alternative=relu[1]["pred"], alternative_note="the corrected relu² law at the same init"))
    return out


def gau_forward_flops(n: int, d: int, e: int, s: int) -> float:
    """Multiply-adds x 2 of one GAU layer on n tokens: projections 2n d (2e + s) + 2n e d, scores 2n^2 s, mixing 2n^2 e."""
    return 2.0 * n * d * (2 * e + s) + 2.0 * n * e * d + 2.0 * n * n * s + 2.0 * n * n * e


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """Forward passes of single GAU layers (one width's grid, or the lambda sweep), as counted FLOPs."""
    if trial.key == "gau-alpha":
        d, e, s, n = sweep_point(cfg)
        return [Workload("GAU-α's init, two attentions", flops=cfg.seeds * 6 * gau_forward_flops(n, d, e, s),
                         memory_bytes=4.0 * (n * n * 3 + n * (3 * e + d)))]
    if trial.key == "sweep":
        d, e, s, n = sweep_point(cfg)
        return [Workload("lambda sweep at initialisation", flops=cfg.seeds * len(cfg.lambdas) * gau_forward_flops(n, d, e, s),
                         memory_bytes=4.0 * (n * n * 3 + n * (3 * e + d)))]
    d, e = trial.params["d"], trial.params["e"]
    n = max(cfg.ns)
    return [Workload(f"GAU layers at initialisation, d = {d}", flops=cfg.seeds * sum(
        gau_forward_flops(n, d, e, s) for n in cfg.ns for s in cfg.ss if s <= e),
        memory_bytes=4.0 * (n * n * 3 + n * (3 * e + d)))]
