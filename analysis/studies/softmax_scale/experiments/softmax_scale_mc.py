"""The source's objective alpha (1 - sum_i p_i^2) on finite samples of n scores.

For each score distribution (normal, or the cosine in d dimensions) and n, draw ``reps``
rows of n scores and evaluate the objective on a grid of alpha around the mean-field
alpha*, with the same rows for every alpha (common random numbers). Reported per (kind, n):
the mean curve with its standard error, the median (typical-row) curve, the median's
maximiser with a bootstrap error, the objective at the mean-field alpha*, and the mean
objective deep in the condensed phase (alpha = 4 h(b_n)) against the Poisson-Dirichlet
plateau h(b_n) of :func:`analysis.theory.softmax_scale.finite_sample_plateau`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from analysis.core.experiment import Workload
from analysis.core.stats import from_se, t_quantile
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.theory import softmax_scale as sc

NAME = "softmax-scale-mc"
DATA_VERSION = 2  # raised when the layout of the record's data changes
KINDS = ("normal", "cosine")


@dataclass(frozen=True)
class Config:
    """Sample sizes and grids."""

    ns: tuple[int, ...]
    reps: int
    grid: int
    bootstrap: int
    d: int = 128  # dimension of the cosine scores
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(ns=(16, 256), reps=64, grid=40, bootstrap=50),
    "cpu": Config(ns=(16, 64, 256, 1024, 4096, 16384), reps=400, grid=80, bootstrap=200),
    "gpu": Config(ns=(16, 64, 256, 1024, 4096, 16384), reps=4000, grid=120, bootstrap=400),
}




def sample_scores(kind: str, n: int, d: int, reps: int, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """``reps`` rows of n scores: N(0, 1), or cosines in d dimensions ((1 + s)/2 ~ Beta((d-1)/2, (d-1)/2))."""
    if kind == "normal":
        return rng.standard_normal((reps, n))
    if kind == "cosine":
        half = 0.5 * (d - 1)
        return 2.0 * rng.beta(half, half, size=(reps, n)) - 1.0
    raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")


def objective_rows(scores: torch.Tensor, alphas: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """alpha (1 - sum p^2) for every row of ``scores`` (reps, n) and every alpha: shape (reps, len(alphas))."""
    out = []
    for a in alphas:
        lse1 = torch.logsumexp(a * scores, dim=-1)
        lse2 = torch.logsumexp(2 * a * scores, dim=-1)
        out.append(a * (1.0 - torch.exp(lse2 - 2 * lse1)))
    return torch.stack(out, dim=1).cpu().numpy()


def _argmax_refined(curve: npt.NDArray[np.float64], log_alpha: npt.NDArray[np.float64]) -> float:
    """Grid argmax refined by a parabola through the three points around it (in ln alpha)."""
    i = int(np.argmax(curve))
    if 0 < i < curve.size - 1:
        y0, y1, y2 = curve[i - 1 : i + 2]
        denom = y0 - 2 * y1 + y2
        if denom < 0:
            step = log_alpha[1] - log_alpha[0]
            return float(np.exp(log_alpha[i] + 0.5 * step * (y0 - y2) / denom))
    return float(np.exp(log_alpha[i]))


def typical_maximiser(rows: npt.NDArray[np.float64], log_alpha: npt.NDArray[np.float64], bootstrap: int,
                      rng: np.random.Generator) -> tuple[float, float]:
    """argmax of the median objective over rows, and its bootstrap standard error."""
    best = _argmax_refined(np.median(rows, axis=0), log_alpha)
    draws = [
        _argmax_refined(np.median(rows[rng.integers(0, rows.shape[0], rows.shape[0])], axis=0), log_alpha)
        for _ in range(bootstrap)
    ]
    return best, float(np.std(draws, ddof=1)) if bootstrap > 1 else 0.0


def measure(kind: str, n: int, cfg: Config, device: torch.device, rng: np.random.Generator) -> dict[str, Any]:
    """All finite-sample quantities for one (kind, n)."""
    d = cfg.d
    alpha_mf = float(sc.alpha_star(kind, n, d if kind == "cosine" else None))
    plateau = float(sc.finite_sample_plateau(kind, n, d if kind == "cosine" else None))
    log_alpha = np.linspace(np.log(0.25 * alpha_mf), np.log(5.0 * alpha_mf), cfg.grid)
    scores = torch.from_numpy(sample_scores(kind, n, d, cfg.reps, rng)).to(device)
    rows = objective_rows(scores, np.exp(log_alpha))
    extra = objective_rows(scores, np.array([alpha_mf, 4.0 * plateau]))
    alpha_fs, alpha_fs_se = typical_maximiser(rows, log_alpha, cfg.bootstrap, rng)
    se = rows.std(axis=0, ddof=1) / np.sqrt(cfg.reps)
    return {
        "kind": kind,
        "n": n,
        "alpha": np.exp(log_alpha),
        "mean": rows.mean(axis=0),
        "mean_se": se,
        "median": np.median(rows, axis=0),
        "alpha_mean_field": alpha_mf,
        "alpha_finite_sample": alpha_fs,
        "alpha_finite_sample_se": alpha_fs_se,
        "top_score_location": float(sc.top_score_location(kind, n, d if kind == "cosine" else None)),
        "plateau_predicted": plateau,
        "objective_at_mean_field": float(extra[:, 0].mean()),
        "objective_at_mean_field_se": float(extra[:, 0].std(ddof=1) / np.sqrt(cfg.reps)),
        "plateau_measured": float(extra[:, 1].mean()),
        "plateau_measured_se": float(extra[:, 1].std(ddof=1) / np.sqrt(cfg.reps)),
        "median_max": float(np.median(rows, axis=0).max()),
    }


def trials(cfg: Config) -> list[Trial]:
    """One trial: every (kind, n) draws from one stream seeded cfg.seed, in turn."""
    return [Trial("all", cfg.seed)]


@dataclass(frozen=True)
class Rows:
    """The key width d, a row per (kind, n) (the sampled optimum and its rivals) and the rows each one averaged."""

    d: int
    rows: list[dict[str, Any]]
    reps: int


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Rows:
    """Every (kind, n) of the config."""
    rng = np.random.default_rng(trial.seed)
    return Rows(cfg.d, [measure(kind, n, cfg, device, rng) for kind in KINDS for n in cfg.ns], cfg.reps)


def assemble(cfg: Config, results: list[Rows], device_type: str) -> dict[str, Any]:
    """The one trial's rows, with the device type."""
    (only,) = results
    return {"device_type": device_type, **fields_of(only)}


def finite_sample_alpha(kind: str, n: int, d: int | None = None, reps: int = 256, seed: int = 0) -> dict[str, float]:
    """The typical-row maximiser for one n (used by the command line); n is limited to 2**20."""
    if not isinstance(n, (int, np.integer)) or not 2 <= n <= 2**20:
        raise ValueError(f"n must be an integer in [2, 2**20] for the finite-sample value; got {n!r}")
    cfg = Config(ns=(int(n),), reps=reps, grid=60, bootstrap=30, d=d or 128, seed=seed)
    row = measure(kind, int(n), cfg, torch.device("cpu"), np.random.default_rng(seed))
    return {"alpha": row["alpha_finite_sample"], "se": row["alpha_finite_sample_se"]}


EXACT_EVERY = 4  # the exact objective is compared at every 4th point of each row's alpha grid (its cost)


def exact_against_mc(data: dict[str, Any]) -> dict[str, Any]:
    """The exact expected objective (:func:`analysis.theory.softmax_scale.exact_objective`) against the Monte Carlo
    mean of every row: at every ``EXACT_EVERY``-th alpha of its grid, at the mean-field alpha* and at 4 h(b_n). The
    largest distance in standard errors of the mean and where it lies; the Bonferroni-corrected 95% Student-t
    critical value for that many points; and, for the rival the Monte Carlo must tell apart, the mean-field
    objective's smallest distance from the exact one at alpha*, in the standard errors of the mean there."""

    reps = int(data["reps"])
    worst, worst_at, rival, points = 0.0, {}, math.inf, 0
    for r in data["rows"]:
        d = int(data["d"]) if r["kind"] == "cosine" else None
        star = r["alpha_mean_field"]
        alpha = np.concatenate([np.asarray(r["alpha"])[::EXACT_EVERY], [star, 4.0 * r["plateau_predicted"]]])
        mean = np.concatenate([np.asarray(r["mean"])[::EXACT_EVERY],
                               [r["objective_at_mean_field"], r["plateau_measured"]]])
        se = np.concatenate([np.asarray(r["mean_se"])[::EXACT_EVERY],
                             [r["objective_at_mean_field_se"], r["plateau_measured_se"]]])
        exact = sc.exact_objective(r["kind"], alpha, r["n"], d)
        z = np.abs(exact - mean) / se
        points += z.size
        if z.max() > worst:
            i = int(np.argmax(z))
            worst, worst_at = float(z[i]), {"kind": r["kind"], "n": r["n"], "alpha_over_star": float(alpha[i] / star)}
        mf = float(sc.mean_field_objective_normal(star, r["n"]) if d is None
                   else sc.mean_field_objective_cosine(star, r["n"], d))
        rival = min(rival, abs(mf - float(exact[-2])) / r["objective_at_mean_field_se"])
    # two-sided 95% over all points at once (Bonferroni), t with the rows' degrees of freedom
    critical = t_quantile(reps - 1, 1 - 0.05 / points)
    # a shift of critical + t_0.8 standard errors is found with 80% power (t_quantile(., 0.6) is the 0.8 quantile)
    return {"max_z": worst, "worst": worst_at, "points": points, "critical": critical, "rival_min_z": rival,
            "detectable": critical + t_quantile(reps - 1, 0.6)}


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Per kind, at the largest n: mean-field alpha* as the finite-sample maximiser, and the plateau h(b_n) (corrected:
    the exact objective at the same alpha); both Student-t intervals over the independent rows (the maximiser's SE a
    bootstrap over rows). And the exact objective against every row's Monte Carlo mean (:func:`exact_against_mc`)."""
    out = []
    reps = int(data["reps"])
    check = exact_against_mc(data)
    worst = check["worst"]
    out.append(Claim(
        key="exact-vs-monte-carlo",
        statement=f"The exact expected objective $n(n-1)\\int f_Y^2 F_Y^{{n-2}}$ is the mean of "
                  f"$\\alpha(1 - \\sum_i p_i^2)$ over rows of $n$ scores ({check['points']} points of "
                  f"{len(data['rows'])} Monte Carlo curves of {reps} rows, among them every curve's $\\alpha^*$, "
                  f"where the mean-field objective lies at least {check['rival_min_z']:.0f} standard errors away; "
                  f"largest distance at {worst['kind']} scores, $n$ = {worst['n']:,}, "
                  f"$\\alpha = {worst['alpha_over_star']:.2f}\\,\\alpha^*$; {label})",
        source="this book (the exact objective without the mean-field step)",
        predicted=check["critical"], measured=check["max_z"], uncertainty=0.0, tolerance=0.0,
        tolerance_basis=f"the Bonferroni-corrected 95% critical value for {check['points']} points, Student t with "
                        f"{reps - 1} df; the prediction is that bound itself",
        kind="upper_bound", unit="standard errors (largest)",
        detectable=check["detectable"], effect=check["rival_min_z"],
    ))
    for kind in KINDS:
        rows = [r for r in data["rows"] if r["kind"] == kind]
        r = max(rows, key=lambda x: x["n"])
        where = f"{kind} scores{' ($d = ' + str(data['d']) + '$)' if kind == 'cosine' else ''}, $n$ = {r['n']:,}"
        argmax = from_se(r["alpha_finite_sample"], r["alpha_finite_sample_se"], reps, "independent rows")
        out.append(Claim(
            key=f"finite-argmax-{kind}",
            statement=f"The mean-field $\\alpha^*$ maximises the objective on actual samples (typical row), {where} ({label})",
            source="Su 2023 (kexue.fm/archives/9812), mean-field step",
            predicted=r["alpha_mean_field"],
            **estimate_fields(argmax, "the median-curve maximiser (its SE a bootstrap over the rows)"),
            alternative=float(max(r["alpha"])),
            alternative_note="no finite maximiser: the curve rises to the grid's last $\\alpha$",
        ))
        plateau = from_se(r["plateau_measured"], r["plateau_measured_se"], reps, "independent rows")
        d = int(data["d"]) if kind == "cosine" else None
        out.append(Claim(
            key=f"finite-plateau-{kind}",
            statement=f"For $\\alpha \\gg b_n$ the mean objective tends to the Poisson-Dirichlet level $h(b_n) = n\\,p(b_n)$, {where} ({label})",
            source="this book (extreme-value correction of the mean-field step)",
            predicted=r["plateau_predicted"],
            **estimate_fields(plateau, "the Monte Carlo mean at $\\alpha = 4 h(b_n)$"),
            corrected=float(sc.exact_objective(kind, 4.0 * r["plateau_predicted"], r["n"], d)),
            corrected_note="the exact expected objective at the same $\\alpha = 4h(b_n)$, below its limit $L_n$",
            alternative=r["objective_at_mean_field"],
            alternative_note="no rise past the mean-field optimum: the mean objective at $\\alpha^*$",
        ))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """Per kind and n: sampling the scores (cosines cost 2d per score) and the objective on the alpha grid (~10/score)."""
    per_n = [cfg.reps * n * (cfg.grid * 10.0 + 2.0 * cfg.d + 2.0) for n in cfg.ns]
    return [Workload("score rows and objectives", flops=float(sum(per_n)),
                     memory_bytes=8.0 * cfg.reps * max(cfg.ns) * 3)]
