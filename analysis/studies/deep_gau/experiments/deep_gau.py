"""Deep GAU without warmup (kexue.fm/archives/8990), put at risk: the learning-rate stability boundary against depth.

At each depth D (in Transformer layers) the stack is either 2D post-norm GAU layers (e = 2d), or D Transformer
layers with post-norm, pre-norm or DeepNorm residuals. Each is trained at every learning rate of a grid, with and
without warmup, over seeds, on the real corpus. A run *trains* when it neither diverges (a non-finite loss or one
above 3x the first) nor stays at the loss of a model that ignores context: its validation loss must be below the corpus's unigram entropy
by more than three times the seed-to-seed spread of validation losses (the median over settings of the seeds'
standard deviation; ``margin`` with a single seed). The largest learning rate at which every seed trains is the
stability boundary. The source predicts that post-norm GAU's boundary neither falls with depth nor needs warmup,
while a post-norm Transformer's does. Recorded per run: the training and validation loss, divergence, and at
initialisation the per-sublayer update size ||x_{l+1} - x_l|| / ||x_l||.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.data import PINNED_CORPUS_PATH
from analysis.core.trial import Trial
from analysis.experiments.base import Workload, corpus_of, mean_se, run_seed
from analysis.models.lm import LanguageModel, ModelConfig, update_sizes
from analysis.train import (
    TrainConfig,
    fixed_windows,
    token_stats,
    train_lm,
)
from analysis.stats import Estimate, direction, paired_estimate
from analysis.verify import Claim, estimate_fields

NAME = "deep-gau"
PRIORITY = 30  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 2  # 2: a learning-rate grid per architecture, depth and warmup
ARCHS = (("gau", "post"), ("transformer", "post"), ("transformer", "pre"), ("transformer", "deepnorm"))


@dataclass(frozen=True)
class Config:
    """Sizes, depths, the learning-rate grid, budget and seeds."""

    d: int
    s: int
    depths: tuple[int, ...]  # in Transformer layers; GAU stacks have twice as many
    ctx: int
    batch: int
    steps: int
    lrs: tuple[float, ...]  # increasing
    warmups: tuple[int, ...]  # (0, w): without and with warmup
    seeds: tuple[int, ...]
    eval_windows: int
    margin: float = 0.1  # nats/byte below the unigram entropy a run must reach to count as trained, with one seed
    corpus_file: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.lrs or any(b <= a for a, b in zip(self.lrs, self.lrs[1:])) or self.lrs[0] <= 0:
            raise ValueError(f"lrs must be positive and increasing; got {self.lrs!r}")
        if len(self.warmups) != 2 or self.warmups[0] != 0 or not 0 < self.warmups[1] <= self.steps:
            raise ValueError(f"warmups must be (0, w) with 0 < w <= steps; got {self.warmups!r}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, s=16, depths=(1, 2), ctx=32, batch=4, steps=6, lrs=(1e-3, 1e-2), warmups=(0, 3), seeds=(0,),
                    eval_windows=4),
    "cpu": Config(d=32, s=16, depths=(2, 6, 24), ctx=64, batch=8, steps=120, lrs=(1e-3, 10**-2.5, 1e-2, 10**-1.5),
                  warmups=(0, 24), seeds=(0, 1), eval_windows=32),  # 11 minutes on 2 cores, 2 trials at a time
    # sized from H100 step times (analysis.plan.h100_seconds): about 4 ms per layer and step in kernel launches, so
    # a 96-layer GAU stack takes 0.4 s a step; 48 trials, about 40 H100 minutes, the longest about 2 minutes
    "gpu": Config(d=384, s=128, depths=(12, 48), ctx=256, batch=32, steps=300, lrs=(10**-3.5, 1e-3, 10**-2.5),
                  warmups=(0, 30), seeds=(0,), eval_windows=128,
                  corpus_file=PINNED_CORPUS_PATH),
}


def model_config(cfg: Config, block: str, residual: str, depth: int) -> ModelConfig:
    """The stack for one architecture at one depth (2 GAU layers per Transformer layer, e = 2 d)."""
    layers = 2 * depth if block == "gau" else depth
    return ModelConfig(d=cfg.d, layers=layers, block=block, residual=residual, ctx=cfg.ctx, heads=4, s=cfg.s,
                       init="xavier")


def unigram_entropy(tokens: np.ndarray) -> float:
    """H = -sum_b p_b ln p_b over byte frequencies: the loss of the best model that ignores context (nats/byte)."""
    p = np.bincount(tokens, minlength=256) / tokens.size
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def trials(cfg: Config) -> list[Trial]:
    """Every (depth, architecture, warmup, learning rate, seed); a seed gives the same initialisation at every
    learning rate and warmup (run_seed(cfg, seed))."""
    return [Trial(f"d{depth}.{block}-{residual}.w{warmup}.lr{lr:.4g}.seed{seed}", run_seed(cfg, seed),
                  {"depth": depth, "block": block, "residual": residual, "warmup": warmup, "lr": lr, "seed": seed})
            for depth in cfg.depths for block, residual in ARCHS for warmup in cfg.warmups for lr in cfg.lrs
            for seed in cfg.seeds]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> dict[str, Any]:
    """One stack trained at one learning rate and warmup: its losses, divergence and update sizes at init."""
    p = trial.params
    depth, block, residual, warmup, lr, seed = (p[k] for k in ("depth", "block", "residual", "warmup", "lr", "seed"))
    corpus = corpus_of(cfg)
    model = LanguageModel(model_config(cfg, block, residual, depth)).to(device)
    with torch.no_grad():
        probe = fixed_windows(corpus.val, cfg.ctx, 4)[0].to(device)
        _, hidden = model.eval()(probe, return_hidden=True)
    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=lr, warmup=warmup,
                                                    seed=run_seed(cfg, seed)), cfg.ctx, device, progress=False)
    val, val_se = math.nan, math.nan
    if log.diverged_at is None:
        losses = token_stats(model, corpus.val, cfg.ctx, cfg.eval_windows, device).loss
        per_window = losses.reshape(-1, cfg.ctx).mean(axis=1)  # windows are independent; tokens within are not
        val, val_se = mean_se(per_window)
    return {"depth": depth, "block": block, "residual": residual, "warmup": warmup, "lr": lr, "seed": seed,
            "parameters": model.num_parameters(), "update_sizes": update_sizes(hidden),
            "train_steps": log.steps, "train_loss": log.train_loss, "diverged_at": log.diverged_at,
            "val_loss": val, "val_se": val_se}


def assemble(cfg: Config, results: list[dict[str, Any]], device_type: str) -> dict[str, Any]:
    """The runs in trial order, the unigram entropy of the corpus, and the threshold a run must beat to count as
    trained (the unigram entropy less 3x the seed spread, or less ``margin`` with one seed)."""
    corpus = corpus_of(cfg)
    unigram = unigram_entropy(corpus.train)
    spread = seed_spread(results)
    margin = 3 * spread if math.isfinite(spread) else cfg.margin
    return {"device_type": device_type, "corpus": corpus.summary(), "unigram_entropy": unigram,
            "seed_spread": spread, "threshold": unigram - margin, "runs": results}


def seed_spread(runs: list[dict[str, Any]]) -> float:
    """The median, over settings with two or more seeds that did not diverge, of the seeds' standard deviation of
    the validation loss (NaN when no setting has two)."""
    cells: dict[tuple[Any, ...], list[float]] = {}
    for r in runs:
        if r["diverged_at"] is None and math.isfinite(r["val_loss"]):
            cells.setdefault((r["depth"], r["block"], r["residual"], r["warmup"], r["lr"]), []).append(r["val_loss"])
    stds = [float(np.std(v, ddof=1)) for v in cells.values() if len(v) > 1]
    return float(np.median(stds)) if stds else math.nan


def arch_label(block: str, residual: str) -> str:
    """'post-norm GAU', 'pre-norm Transformer', ..."""
    name = "GAU" if block == "gau" else "Transformer"
    return f"{'DeepNorm' if residual == 'deepnorm' else residual + '-norm'} {name}"


def _rows(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> list[dict[str, Any]]:
    return [r for r in data["runs"] if (r["depth"], r["block"], r["residual"], r["warmup"]) ==
            (depth, block, residual, warmup)]


def trained(data: dict[str, Any], run: dict[str, Any]) -> bool:
    """Neither diverged nor left at the context-free loss: validation loss <= the data's threshold (the unigram
    entropy less three seed spreads)."""
    return run["diverged_at"] is None and math.isfinite(run["val_loss"]) and run["val_loss"] <= data["threshold"]


def lr_curve(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> list[dict[str, float]]:
    """Per learning rate: mean validation loss over seeds that did not diverge, its standard error over seeds,
    the share of seeds that diverged and the share that trained."""
    rows = _rows(data, depth, block, residual, warmup)
    out = []
    for lr in sorted({r["lr"] for r in rows}):
        at = [r for r in rows if r["lr"] == lr]
        loss, se = mean_se(r["val_loss"] for r in at if r["diverged_at"] is None)
        out.append({"lr": lr, "val_loss": loss, "se": se if se == se else 0.0,
                    "diverged": sum(r["diverged_at"] is not None for r in at) / len(at),
                    "trained": sum(trained(data, r) for r in at) / len(at)})
    return out


def boundary(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> float:
    """The largest learning rate of the grid at which every seed trains (0 when there is none)."""
    ok = [row["lr"] for row in lr_curve(data, depth, block, residual, warmup) if row["trained"] == 1.0]
    return max(ok) if ok else 0.0


def best_loss(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> dict[str, float]:
    """The learning rate with the lowest mean validation loss among those where no seed diverged, and that loss."""
    rows = [r for r in lr_curve(data, depth, block, residual, warmup) if r["diverged"] == 0 and math.isfinite(r["val_loss"])]
    if not rows:
        return {"lr": math.nan, "val_loss": math.nan, "se": math.nan}
    return min(rows, key=lambda r: r["val_loss"])


def grid_step(data: dict[str, Any]) -> float:
    """The ratio of neighbouring learning rates of the grid (the resolution of a boundary)."""
    lrs = sorted({r["lr"] for r in data["runs"]})
    return float(np.exp(np.mean(np.diff(np.log(lrs))))) if len(lrs) > 1 else 1.0


def stable_boundary(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> float:
    """The largest learning rate of the grid at which no seed diverged (0 when every one did): the boundary when a run
    that neither diverged nor trained counts as one that might still train with a longer budget."""
    rows = _rows(data, depth, block, residual, warmup)
    ok = [lr for lr in sorted({r["lr"] for r in rows})
          if all(r["diverged_at"] is None and math.isfinite(r["val_loss"]) for r in rows if r["lr"] == lr)]
    return max(ok) if ok else 0.0


def at_context_free(data: dict[str, Any], run: dict[str, Any]) -> bool:
    """Whether a run that did not diverge ended within the trained margin (unigram entropy - threshold) of the unigram
    entropy: at the loss of a model that ignores context, neither trained nor still descending from above it."""
    margin = data["unigram_entropy"] - data["threshold"]
    return (run["diverged_at"] is None and math.isfinite(run["val_loss"]) and not trained(data, run)
            and abs(run["val_loss"] - data["unigram_entropy"]) <= margin)


def loss_peak(data: dict[str, Any]) -> float:
    """The largest ratio of a logged training loss to the run's first, over every run (above 1: a loss spike; the
    trainer stops a run as diverged at 3)."""
    return max(max(r["train_loss"][1:], default=r["train_loss"][0]) / r["train_loss"][0]
               for r in data["runs"] if r["train_loss"])


def failure_modes(data: dict[str, Any]) -> dict[str, Any]:
    """How the runs that did not train failed: how many diverged, how many ended at the context-free loss, how many
    above it (still descending), the largest training-loss ratio to the first, and the budget in steps."""
    failed = [r for r in data["runs"] if not trained(data, r)]
    flat = [r for r in failed if at_context_free(data, r)]
    return {"runs": len(data["runs"]), "failed": len(failed),
            "diverged": sum(r["diverged_at"] is not None for r in failed), "context_free": len(flat),
            "above": len(failed) - len(flat) - sum(r["diverged_at"] is not None for r in failed),
            "peak": loss_peak(data), "steps": max(max(r["train_steps"], default=0) for r in data["runs"])}


def best_gap(data: dict[str, Any], depth: int, a: tuple[str, str], b: tuple[str, str], warmup: int = 0
             ) -> Estimate | None:
    """Validation loss of architecture ``a`` minus that of ``b``, each at its best learning rate (:func:`best_loss`),
    paired by seed (a seed gives both the same batches); None when either has no learning rate without divergence."""
    la, lb = best_loss(data, depth, *a, warmup)["lr"], best_loss(data, depth, *b, warmup)["lr"]
    if not (math.isfinite(la) and math.isfinite(lb)):
        return None
    va = {r["seed"]: r["val_loss"] for r in _rows(data, depth, *a, warmup) if r["lr"] == la}
    vb = {r["seed"]: r["val_loss"] for r in _rows(data, depth, *b, warmup) if r["lr"] == lb}
    seeds = sorted(set(va) & set(vb))
    return paired_estimate([va[s] for s in seeds], [vb[s] for s in seeds])


def gap_words(gap: Estimate | None) -> str:
    """'smaller than', 'larger than' or 'indistinguishable from' by the two-sided 95% t interval of a paired gap;
    'not comparable with' when there is none, 'undecided against (one seed)' without an error estimate."""
    if gap is None:
        return "not comparable with (no learning rate trained without divergence)"
    return direction(gap) or "undecided against (one seed)"


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The boundary of every (architecture, depth, warmup); at the largest depth without warmup, each architecture's
    best loss, how GAU's compares with it (paired by seed, 95% t interval), the strongest Transformer; and how the
    runs that did not train failed."""
    depths = sorted({r["depth"] for r in data["runs"]})
    warm = max(r["warmup"] for r in data["runs"])
    bounds = {arch_label(b, r): {w: [boundary(data, d, b, r, w) for d in depths] for w in (0, warm)} for b, r in ARCHS}
    deep = depths[-1]
    gau = best_loss(data, deep, "gau", "post", 0)
    out: dict[str, Any] = {"depths": depths, "depth": deep, "warmup": warm, "boundaries": bounds, "gau": gau,
                           "grid_step": grid_step(data), "threshold": data["threshold"],
                           "unigram": data["unigram_entropy"], "failures": failure_modes(data), "gaps": {}}
    for block, residual in ARCHS[1:]:
        out[residual] = best_loss(data, deep, block, residual, 0)
        out["gaps"][residual] = best_gap(data, deep, ("gau", "post"), (block, residual))
        out[f"gau_vs_{residual}"] = gap_words(out["gaps"][residual])
    finite = [r for _, r in ARCHS[1:] if math.isfinite(out[r]["val_loss"])]
    out["strongest"] = min(finite, key=lambda r: out[r]["val_loss"]) if finite else None
    return out


def _ratio(a: float, b: float) -> float:
    """a / b for boundaries (0 when b is 0: nothing trained)."""
    return a / b if b > 0 else 0.0


def depth_range(data: dict[str, Any], block: str, residual: str, warmup: int = 0) -> tuple[float, float]:
    """The boundary ratio deepest / shallowest depth as the runs allow it: from the runs that did not train counted as
    failures (:func:`boundary` deep over :func:`stable_boundary` shallow) to the runs that did not diverge counted as
    trainable (the reverse); one value when every run either trained or diverged."""
    depths = sorted({r["depth"] for r in data["runs"]})
    lowest = min(r["lr"] for r in data["runs"]) / grid_step(data)  # below the grid: nothing trains
    lo = _ratio(boundary(data, depths[-1], block, residual, warmup),
                stable_boundary(data, depths[0], block, residual, warmup))
    hi = stable_boundary(data, depths[-1], block, residual, warmup) / (
        boundary(data, depths[0], block, residual, warmup) or lowest)
    return lo, max(lo, hi)


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Post-norm GAU's boundary does not fall with depth and does not need warmup; without warmup and each at its best
    learning rate, its loss at the largest depth is below the post-norm Transformer's and the strongest
    Transformer's."""
    s = summary(data)
    shallow, deep = s["depths"][0], s["depths"][-1]
    gau, tfm = s["boundaries"]["post-norm GAU"], s["boundaries"]["post-norm Transformer"]
    step = s["grid_step"]
    f = s["failures"]
    # a boundary is known to one step of the grid: a ratio of 1/step is one step down, within the resolution
    tol = 1.0 - 1.0 / step
    resolves = 1.0 - step ** -2  # the smallest fall of a ratio the grid resolves: two steps
    basis = f"one step of the learning-rate grid (x{step:.3g}): a boundary is known to that resolution"
    budget = (f"{f['steps']} steps: of {f['runs']} runs {f['failed']} did not train, {f['diverged']} of them diverged, "
              f"{f['context_free']} ended at the context-free loss and {f['above']} above it; no logged training loss "
              f"rose above {f['peak']:.2f} x the first (no gradient norms recorded)")
    where = f"from depth {shallow} to {deep} ({2 * shallow} to {2 * deep} GAU layers), {label}"
    lo, hi = depth_range(data, "gau", "post")
    t_lo, t_hi = depth_range(data, "transformer", "post")
    # the rival: GAU needs warmup as much as the post-norm Transformer does, measured at the deepest depth at which
    # the Transformer trains with warmup (without one, the run says nothing about its warmup)
    trains = [i for i, b in enumerate(tfm[s["warmup"]]) if b > 0]
    warm_ratio = _ratio(tfm[0][trains[-1]], tfm[s["warmup"]][trains[-1]]) if trains else None
    warm_note = ("GAU needs warmup as much as the post-norm Transformer does (its ratio at depth "
                 f"{s['depths'][trains[-1]]}, the deepest at which it trains with warmup)" if trains else "")
    out = [
        Claim("gau-lr-depth",
              f"Post-norm GAU's largest trainable learning rate without warmup does not fall with depth by more than "
              f"one grid step ({where}; trained within {f['steps']} steps, and runs that neither trained nor diverged "
              f"may be slow rather than unstable: the ratio is the range both readings allow; post-norm "
              f"Transformer's range {t_lo:.2g} to {t_hi:.2g})",
              "Su 2022, kexue.fm/archives/8990", step ** -1.5, (lo + hi) / 2, (hi - lo) / 2, (hi - lo) / 2,
              f"half the range of ratios the runs allow ({lo:.2g}: a run that did not train counts as a failure; "
              f"{hi:.2g}: a run that did not diverge counts as trainable); {budget}; the grid steps x{step:.3g}, so "
              f"'falls by at most one step' is a ratio above {step:.3g}^-1.5",
              kind="above", unit="ratio deep / shallow", detectable=resolves),
        Claim("gau-lr-no-warmup",
              f"At depth {deep} ({2 * deep} GAU layers), post-norm GAU trains without warmup at the largest learning "
              f"rate it trains at with warmup (trained within {f['steps']} steps; {label})",
              "Su 2022, kexue.fm/archives/8990", 1.0, _ratio(gau[0][-1], gau[s["warmup"]][-1]), 0.0, tol,
              f"{basis}; the grid resolves a fall of two steps (ratio {step ** -2:.2g}); {budget}",
              kind="lower_bound", unit="ratio without / with warmup", approx_rel=0.0,
              alternative=warm_ratio, alternative_note=warm_note, detectable=resolves,
              effect=None if warm_ratio is None else 1.0 - warm_ratio),
    ]
    what = "the paired loss difference (each at its best learning rate)"
    post = s["gaps"]["post"]
    if post is not None:
        collapsed = tfm[0][-1] == 0
        out.append(Claim(
            "gau-vs-postnorm-transformer",
            f"Without warmup, each at its best learning rate, post-norm GAU reaches a lower loss than a post-norm "
            f"Transformer of equal parameters (depth {deep}, {label}"
            + ("; the Transformer trains at no learning rate of the grid there, so this compares GAU with a model "
               "left at the context-free loss)" if collapsed else ")"),
            "Su 2022, kexue.fm/archives/8990 (standard Transformer tricks not needed for GAU)", 0.0,
            kind="below", unit="nats/byte", **estimate_fields(post, what, sided="one")))
    strongest = s["strongest"]
    if strongest is not None and strongest != "post" and s["gaps"][strongest] is not None:
        name = arch_label("transformer", strongest)
        out.append(Claim(
            "gau-vs-strongest-transformer",
            f"Without warmup, each at its best learning rate, post-norm GAU reaches a lower loss than the strongest "
            f"Transformer of equal parameters here, the {name} (depth {deep}, {label})",
            "Su 2022, kexue.fm/archives/8990 (standard Transformer tricks not needed for GAU)", 0.0,
            kind="below", unit="nats/byte", **estimate_fields(s["gaps"][strongest], what, sided="one")))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The stack a trial trains and its validation batches."""
    p = trial.params
    return [Workload(f"{arch_label(p['block'], p['residual'])}, depth {p['depth']}",
                     model_config(cfg, p["block"], p["residual"], p["depth"]), cfg.batch, cfg.ctx, cfg.steps,
                     -(-cfg.eval_windows // cfg.batch))]
