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
from analysis.experiments.base import Workload, compare, corpus_of, mean_se, run_seed
from analysis.models.lm import LanguageModel, ModelConfig, update_sizes
from analysis.train import (
    TrainConfig,
    fixed_windows,
    token_stats,
    train_lm,
)
from analysis.verify import Claim

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


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The boundary of every (architecture, depth, warmup); and at the largest depth without warmup, each
    architecture's best loss and how GAU's compares with it (3 SE)."""
    depths = sorted({r["depth"] for r in data["runs"]})
    warm = max(r["warmup"] for r in data["runs"])
    bounds = {arch_label(b, r): {w: [boundary(data, d, b, r, w) for d in depths] for w in (0, warm)} for b, r in ARCHS}
    deep = depths[-1]
    gau = best_loss(data, deep, "gau", "post", 0)
    out: dict[str, Any] = {"depths": depths, "depth": deep, "warmup": warm, "boundaries": bounds, "gau": gau,
                           "grid_step": grid_step(data), "threshold": data["threshold"],
                           "unigram": data["unigram_entropy"]}
    for block, residual in ARCHS[1:]:
        other = best_loss(data, deep, block, residual, 0)
        out[residual] = other
        finite = all(math.isfinite(v) for v in (gau["val_loss"], other["val_loss"]))
        out[f"gau_vs_{residual}"] = (compare(gau["val_loss"], gau["se"], other["val_loss"], other["se"])
                                     if finite else "not comparable with (no learning rate trained without divergence)")
    return out


def _ratio(a: float, b: float) -> float:
    """a / b for boundaries (0 when b is 0: nothing trained)."""
    return a / b if b > 0 else 0.0


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Post-norm GAU's boundary does not fall with depth and does not need warmup; its best loss without warmup
    is below the post-norm Transformer's at the largest depth."""
    s = summary(data)
    shallow, deep = s["depths"][0], s["depths"][-1]
    gau, tfm = s["boundaries"]["post-norm GAU"], s["boundaries"]["post-norm Transformer"]
    step = s["grid_step"]
    # a boundary is known to one step of the grid: a ratio of 1/step is one step down, within the resolution
    tol = 1.0 - 1.0 / step
    basis = f"one step of the learning-rate grid (x{step:.3g}): a boundary is known to that resolution"
    where = f"from depth {shallow} to {deep} ({2 * shallow} to {2 * deep} GAU layers), {label}"
    # the rival: GAU needs warmup as much as the post-norm Transformer does, measured at the deepest depth at which
    # the Transformer trains with warmup (without one, the run says nothing about its warmup)
    trains = [i for i, b in enumerate(tfm[s["warmup"]]) if b > 0]
    warm_ratio = _ratio(tfm[0][trains[-1]], tfm[s["warmup"]][trains[-1]]) if trains else None
    warm_note = ("GAU needs warmup as much as the post-norm Transformer does (its ratio at depth "
                 f"{s['depths'][trains[-1]]}, the deepest at which it trains with warmup)" if trains else "")
    gap_se = float(np.hypot(s["gau"]["se"], s["post"]["se"]))
    gap_ok = math.isfinite(gap_se) and math.isfinite(s["gau"]["val_loss"]) and math.isfinite(s["post"]["val_loss"])
    out = [
        Claim("gau-lr-depth",
              f"Post-norm GAU's largest trainable learning rate without warmup does not fall with depth ({where})",
              "Su 2022, kexue.fm/archives/8990", 1.0, _ratio(gau[0][-1], gau[0][0]), 0.0, tol, basis,
              kind="lower_bound", unit="ratio deep / shallow", approx_rel=0.0,
              alternative=_ratio(tfm[0][-1], tfm[0][0]),
              alternative_note="GAU's boundary falls with depth as the post-norm Transformer's does"),
        Claim("gau-lr-no-warmup",
              f"At depth {deep} ({2 * deep} GAU layers), post-norm GAU trains without warmup at the largest learning "
              f"rate it trains at with warmup ({label})",
              "Su 2022, kexue.fm/archives/8990", 1.0, _ratio(gau[0][-1], gau[s["warmup"]][-1]), 0.0, tol, basis,
              kind="lower_bound", unit="ratio without / with warmup", approx_rel=0.0,
              alternative=warm_ratio, alternative_note=warm_note),
    ]
    if gap_ok:
        out.append(Claim(
            "gau-vs-postnorm-transformer",
            f"Without warmup, each at its best learning rate, post-norm GAU reaches a lower loss than a post-norm "
            f"Transformer of equal parameters (depth {deep}, {label})",
            "Su 2022, kexue.fm/archives/8990 (standard Transformer tricks not needed for GAU)", s["post"]["val_loss"],
            s["gau"]["val_loss"], gap_se, 3 * gap_se, "3 standard errors over seeds of the difference (0 with one seed)",
            kind="upper_bound", unit="nats/byte"))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The stack a trial trains and its validation batches."""
    p = trial.params
    return [Workload(f"{arch_label(p['block'], p['residual'])}, depth {p['depth']}",
                     model_config(cfg, p["block"], p["residual"], p["depth"]), cfg.batch, cfg.ctx, cfg.steps,
                     -(-cfg.eval_windows // cfg.batch))]
