"""Deep GAU without warmup (kexue.fm/archives/8990), put at risk: the learning-rate stability boundary against depth.

At each depth D (in Transformer layers) the stack is either 2D post-norm GAU layers (e = 2d), or D Transformer
layers with post-norm, pre-norm or DeepNorm residuals. Each is trained at every learning rate of a grid, with and
without warmup, over seeds, on the real corpus. A run *trains* when it neither diverges (a non-finite loss or one
above 3x the first) nor stays at the loss of a model that ignores context: its validation loss must be below the corpus's unigram entropy
by more than three times the seed-to-seed spread of validation losses (the median over settings of the seeds'
standard deviation; ``margin`` with a single seed). The largest learning rate at which every seed trains is the
stability boundary. The source predicts that post-norm GAU's boundary neither falls with depth nor needs warmup,
while a post-norm Transformer's does. Recorded per run: the training loss and the total gradient norm before clipping
at every step, divergence, the validation loss per window at half the budget and at its end, and at initialisation the
per-sublayer update size ||x_{l+1} - x_l|| / ||x_l||. A run that did not train is told apart as diverged, slow (its
fall over the second half of the budget could carry it to the threshold within another half) or stalled; and every
boundary is also read at half the budget, so that one still moving with the budget is not taken for a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, direction, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig, update_sizes
from analysis.tasks.data import PINNED_CORPUS_PATH, fixed_windows
from analysis.training.train import GradNorms, TrainConfig, token_stats, train_lm

NAME = "deep-gau"
PRIORITY = 30  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 3  # 2: a learning-rate grid per architecture, depth and warmup; 3: gradient norms, per-step loss and
# the validation loss per window at half the budget
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
    # three seeds (2 df for a paired t interval) and 240 steps, so that half the budget is the 120 steps of the
    # previous record; about 45 minutes on 2 cores, 2 trials at a time, nine tenths of it at depth 24
    "cpu": Config(d=32, s=16, depths=(2, 24), ctx=64, batch=8, steps=240, lrs=(1e-3, 10**-2.5, 1e-2, 10**-1.5),
                  warmups=(0, 48), seeds=(0, 1, 2), eval_windows=32),
    # sized from H100 step times (analysis.compute.plan.h100_seconds): about 4 ms per layer and step in kernel launches, so
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


def half_step(cfg: Config) -> int:
    """The step at which a run's validation loss is also measured: half the budget."""
    return cfg.steps // 2


def _sig(values: list[float]) -> list[float]:
    """Values at five significant digits (the per-step series, so that a record stays small)."""
    return [float(f"{v:.5g}") for v in values]


@dataclass(frozen=True)
class Run:
    """One stack trained: its setting, update sizes at initialisation, loss and pre-clip gradient norm at every
    step, where it diverged, and the validation loss per window at half the budget and at the end (mean and SE)."""

    depth: int
    block: str
    residual: str
    warmup: int
    lr: float
    seed: int
    parameters: int
    update_sizes: list[float]
    train_steps: list[int]
    train_loss: list[float]
    grad_norm: list[float]
    diverged_at: int | None
    val_loss: float
    val_se: float
    half_step: int
    val_windows: list[float]
    val_half_windows: list[float]
    val_half: float


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Run:
    """One stack trained at one learning rate and warmup: its loss and gradient norm (before clipping) at every step,
    divergence, the validation loss per window at half the budget and at the end, and update sizes at init."""
    p = trial.params
    depth, block, residual, warmup, lr, seed = (p[k] for k in ("depth", "block", "residual", "warmup", "lr", "seed"))
    corpus = corpus_of(cfg)
    model = LanguageModel(model_config(cfg, block, residual, depth)).to(device)
    with torch.no_grad():
        probe = fixed_windows(corpus.val, cfg.ctx, 4)[0].to(device)
        _, hidden = model.eval()(probe, return_hidden=True)

    def window_losses(m: torch.nn.Module) -> list[float]:
        # windows are independent; tokens within one are not
        losses = token_stats(m, corpus.val, cfg.ctx, cfg.eval_windows, device).loss
        return [float(v) for v in losses.reshape(-1, cfg.ctx).mean(axis=1)]

    meter = GradNorms(model)
    half: list[float] = []

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step > 0:
            meter.step()
        if step == half_step(cfg):
            half.extend(window_losses(m))

    try:
        log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=lr, warmup=warmup,
                                                        seed=run_seed(cfg, seed)), cfg.ctx, device, progress=False,
                       log_every=1, on_step=on_step)
    finally:
        meter.close()
    # on a GPU the trainer finds a divergence up to 15 steps late: keep the norms of the steps before it, as on a CPU
    norms = meter.norms if log.diverged_at is None else meter.norms[: log.diverged_at]
    full = window_losses(model) if log.diverged_at is None else []
    val, val_se = mean_se(full) if full else (math.nan, math.nan)
    return Run(depth, block, residual, warmup, lr, seed, model.num_parameters(), update_sizes(hidden), log.steps,
               _sig(log.train_loss), _sig(norms), log.diverged_at, val, val_se, half_step(cfg), full, half,
               float(np.mean(half)) if half else math.nan)


def assemble(cfg: Config, results: list[Run], device_type: str) -> dict[str, Any]:
    """The runs in trial order, the unigram entropy of the corpus, and the threshold a run must beat to count as
    trained (the unigram entropy less 3x the seed spread, or less ``margin`` with one seed)."""
    corpus = corpus_of(cfg)
    unigram = unigram_entropy(corpus.train)
    runs = [fields_of(r) for r in results]
    spread = seed_spread(runs)
    margin = 3 * spread if math.isfinite(spread) else cfg.margin
    return {"device_type": device_type, "corpus": corpus.summary(), "unigram_entropy": unigram,
            "seed_spread": spread, "threshold": unigram - margin, "runs": runs}


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
    """The largest learning rate of the grid at which every seed might still train with a longer budget (0 when
    there is none): every seed trained or is slow (:func:`failure_kind`) where the half-budget losses were recorded,
    else every seed did not diverge."""
    rows = _rows(data, depth, block, residual, warmup)
    if has_half(data):
        def might(r: dict[str, Any]) -> bool:
            return failure_kind(data, r) in ("trained", "slow")
    else:
        def might(r: dict[str, Any]) -> bool:
            return r["diverged_at"] is None and math.isfinite(r["val_loss"])
    ok = [lr for lr in sorted({r["lr"] for r in rows}) if all(might(r) for r in rows if r["lr"] == lr)]
    return max(ok) if ok else 0.0


def at_context_free(data: dict[str, Any], run: dict[str, Any]) -> bool:
    """Whether a run that did not diverge ended within the trained margin (unigram entropy - threshold) of the unigram
    entropy: at the loss of a model that ignores context, neither trained nor still descending from above it."""
    margin = data["unigram_entropy"] - data["threshold"]
    return (run["diverged_at"] is None and math.isfinite(run["val_loss"]) and not trained(data, run)
            and abs(run["val_loss"] - data["unigram_entropy"]) <= margin)


def at_half(data: dict[str, Any]) -> dict[str, Any]:
    """The runs as they stood at half the budget: each run's validation loss there, and divergence only where it
    came before it; the threshold stays the full budget's. The view holds no half of its own, so slow and stalled
    runs are not told apart in it (a record without half-budget losses: ValueError)."""
    if any("val_half" not in r for r in data["runs"]):
        raise ValueError("data must hold each run's half-budget validation loss (val_half; data version 3 or later)")
    runs = []
    for r in data["runs"]:
        gone = r["diverged_at"] is not None and r["diverged_at"] < r["half_step"]
        view = {k: v for k, v in r.items() if k not in ("val_half", "val_half_windows")}  # no half of the half
        runs.append({**view, "val_loss": math.nan if gone else r["val_half"], "diverged_at": r["diverged_at"] if gone
                     else None, "val_windows": r["val_half_windows"], "train_steps": [r["half_step"]]})
    return {**data, "runs": runs}


def late_drop(run: dict[str, Any]) -> Estimate | None:
    """The fall of the validation loss over the second half of the budget, paired over validation windows (the same
    windows at both points: half-budget minus final loss, nu = windows - 1); None for a run that diverged."""
    if run["diverged_at"] is not None or not run.get("val_half_windows") or not run.get("val_windows"):
        return None
    return paired_estimate(run["val_half_windows"], run["val_windows"], units="validation windows")


def failure_kind(data: dict[str, Any], run: dict[str, Any]) -> str:
    """'trained', 'diverged', 'slow' or 'stalled'. Slow: the one-sided 95% t upper bound of its fall over the second
    half of the budget (:func:`late_drop`) is at least its distance above the threshold, so at that pace it could
    train within another half budget; stalled: not even then (a linear pace is generous: loss curves flatten)."""
    if trained(data, run):
        return "trained"
    drop = late_drop(run)
    if drop is None:
        return "diverged"
    return "slow" if drop.upper() >= run["val_loss"] - data["threshold"] else "stalled"


def grad_facts(runs: list[dict[str, Any]], trained_runs: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """Of runs' gradient norms before clipping: the median over runs of the first step's norm, the largest ratio of a
    later step's norm to the run's first (and the step where the largest is), the largest ratio after the first
    tenth of the budget, and the median over runs of the median norm over the last tenth; of ``trained_runs`` (those
    that trained, a subset), how many there are, the same last-tenth median, and the share of their steps whose norm
    exceeds the clip at 1."""
    def arrays(rs: list[dict[str, Any]]) -> list[np.ndarray]:
        return [np.asarray(r["grad_norm"], dtype=float) for r in rs if r.get("grad_norm")]

    norms, good = arrays(runs), arrays(trained_runs or [])
    out = {"trained_n": float(len(good)), "trained_final": math.nan, "trained_clipped": math.nan}
    if good:
        out["trained_final"] = float(np.median([np.median(g[-max(1, len(g) // 10):]) for g in good]))
        out["trained_clipped"] = float(np.mean(np.concatenate(good) > 1.0))
    if not norms:
        return {"first": math.nan, "peak": math.nan, "peak_step": math.nan, "late_peak": math.nan, "final": math.nan,
                **out}
    peaks = [(float(g.max() / g[0]), int(g.argmax()) + 1) for g in norms]
    tenth = [max(1, len(g) // 10) for g in norms]
    return {"first": float(np.median([g[0] for g in norms])), "peak": max(p for p, _ in peaks),
            "peak_step": float(max(peaks)[1]),
            "late_peak": max(float(g[k:].max() / g[0]) if g.size > k else math.nan for g, k in zip(norms, tenth)),
            "final": float(np.median([np.median(g[-k:]) for g, k in zip(norms, tenth)])), **out}


def moving_average(values: list[float] | np.ndarray, window: int) -> np.ndarray:
    """m_t = (1/w) sum_{i=t-w+1..t} x_i: the trailing mean over ``window`` values, one per full window."""
    x = np.asarray(values, dtype=float)
    if not 1 <= window <= max(1, x.size):
        raise ValueError(f"window must be in [1, {x.size}] for {x.size} values; got {window!r}")
    c = np.concatenate([[0.0], np.cumsum(x)])
    return (c[window:] - c[:-window]) / window


def loss_peak(data: dict[str, Any]) -> float:
    """The largest ratio of a logged training loss to the run's first, over every run (above 1: a loss spike; the
    trainer stops a run as diverged at 3)."""
    return max(max(r["train_loss"][1:], default=r["train_loss"][0]) / r["train_loss"][0]
               for r in data["runs"] if r["train_loss"])


def failure_modes(data: dict[str, Any]) -> dict[str, Any]:
    """How the runs that did not train failed: how many diverged, how many ended at the context-free loss and how
    many above it, how many are slow and how many stalled (:func:`failure_kind`, where the half-budget losses were
    recorded; else NaN) and how many stalled runs sit at the context-free loss, the largest training-loss ratio to
    the first, and the budget in steps."""
    failed = [r for r in data["runs"] if not trained(data, r)]
    flat = [r for r in failed if at_context_free(data, r)]
    diverged = sum(r["diverged_at"] is not None for r in failed)
    out: dict[str, Any] = {"runs": len(data["runs"]), "failed": len(failed), "diverged": diverged,
                           "context_free": len(flat), "above": len(failed) - len(flat) - diverged,
                           "peak": loss_peak(data), "steps": max(max(r["train_steps"], default=0) for r in data["runs"]),
                           "slow": math.nan, "stalled": math.nan, "stalled_flat": math.nan}
    if all("val_half" in r for r in data["runs"]):
        kinds = [failure_kind(data, r) for r in failed]
        out.update(slow=kinds.count("slow"), stalled=kinds.count("stalled"),
                   stalled_flat=sum(k == "stalled" and at_context_free(data, r) for k, r in zip(kinds, failed)))
    return out


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


def has_half(data: dict[str, Any]) -> bool:
    """Whether every run recorded its validation loss at half the budget (data version 3 or later)."""
    return all("val_half" in r for r in data["runs"])


def boundaries(data: dict[str, Any]) -> dict[str, dict[int, list[float]]]:
    """architecture label -> warmup -> the boundary (:func:`boundary`) at each depth, in increasing depth."""
    depths = sorted({r["depth"] for r in data["runs"]})
    warmups = sorted({r["warmup"] for r in data["runs"]})
    return {arch_label(b, r): {w: [boundary(data, d, b, r, w) for d in depths] for w in warmups} for b, r in ARCHS}


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The boundary of every (architecture, depth, warmup), at the end and at half the budget; at the largest depth
    without warmup, each architecture's best loss, how GAU's compares with it (paired by seed, 95% t interval) at the
    end and at half the budget, the strongest Transformer, and each architecture's gradient norms; and how the runs
    that did not train failed."""
    depths = sorted({r["depth"] for r in data["runs"]})
    warm = max(r["warmup"] for r in data["runs"])
    deep = depths[-1]
    gau = best_loss(data, deep, "gau", "post", 0)
    half = at_half(data) if has_half(data) else None
    out: dict[str, Any] = {"depths": depths, "depth": deep, "warmup": warm, "boundaries": boundaries(data),
                           "gau": gau, "grid_step": grid_step(data), "threshold": data["threshold"],
                           "unigram": data["unigram_entropy"], "failures": failure_modes(data), "gaps": {},
                           "half_step": half["runs"][0]["half_step"] if half else None,
                           "half_boundaries": boundaries(half) if half else None, "half_gaps": {},
                           "grads": {arch_label(b, r): grad_facts([x for x in _rows(data, deep, b, r, 0)
                                                                   if x["diverged_at"] is None],
                                                                  [x for x in _rows(data, deep, b, r, 0)
                                                                   if trained(data, x)])
                                     for b, r in ARCHS}}
    for block, residual in ARCHS[1:]:
        out[residual] = best_loss(data, deep, block, residual, 0)
        out["gaps"][residual] = best_gap(data, deep, ("gau", "post"), (block, residual))
        out[f"gau_vs_{residual}"] = gap_words(out["gaps"][residual])
        out["half_gaps"][residual] = best_gap(half, deep, ("gau", "post"), (block, residual)) if half else None
    finite = [r for _, r in ARCHS[1:] if math.isfinite(out[r]["val_loss"])]
    out["strongest"] = min(finite, key=lambda r: out[r]["val_loss"]) if finite else None
    return out


def _ratio(a: float, b: float) -> float:
    """a / b for boundaries (0 when b is 0: nothing trained)."""
    return a / b if b > 0 else 0.0


def depth_range(data: dict[str, Any], block: str, residual: str, warmup: int = 0) -> tuple[float, float]:
    """The boundary ratio deepest / shallowest depth as the runs allow it: from the runs that did not train counted as
    failures (:func:`boundary` deep over :func:`stable_boundary` shallow) to the runs that might still train counted
    as trainable (the reverse: slow ones, or without half-budget losses every one that did not diverge); one value
    when every run trained, diverged or stalled."""
    depths = sorted({r["depth"] for r in data["runs"]})
    lowest = min(r["lr"] for r in data["runs"]) / grid_step(data)  # below the grid: nothing trains
    lo = _ratio(boundary(data, depths[-1], block, residual, warmup),
                stable_boundary(data, depths[0], block, residual, warmup))
    hi = stable_boundary(data, depths[-1], block, residual, warmup) / (
        boundary(data, depths[0], block, residual, warmup) or lowest)
    return lo, max(lo, hi)


def budget_words(s: dict[str, Any]) -> str:
    """How the runs that did not train failed, in words for a tolerance basis: diverged, slow or stalled, the
    largest training-loss ratio to the first, and post-norm GAU's and Transformer's gradient norms before clipping."""
    f = s["failures"]
    head = f"{f['steps']} steps: of {f['runs']} runs {f['failed']} did not train"
    if not math.isfinite(f["slow"]):
        return (f"{head}, {f['diverged']} of them diverged, {f['context_free']} ended at the context-free loss and "
                f"{f['above']} above it; no logged training loss rose above {f['peak']:.2f} x the first "
                f"(no gradient norms recorded)")
    g, t = s["grads"]["post-norm GAU"], s["grads"]["post-norm Transformer"]
    return (f"{head}: {f['diverged']} diverged, {f['slow']} were slow and {f['stalled']} stalled ({f['stalled_flat']} "
            f"of them at the context-free loss); no training loss rose above {f['peak']:.2f} x the first; at depth "
            f"{s['depth']} without warmup the gradient norm before clipping (at 1) starts at {g['first']:.3g} for "
            f"post-norm GAU and {t['first']:.3g} for the post-norm Transformer, and its largest is {g['peak']:.3g} "
            f"and {t['peak']:.3g} times the first")


def drift_words(before: tuple[float, float], after: tuple[float, float], half: int, steps: int) -> str:
    """Why a ratio range read at half the budget and at its end does not decide: its midpoint moved by more than the
    final range's half width (empty when it did not)."""
    mid_b, mid_a = sum(before) / 2, sum(after) / 2
    if abs(mid_a - mid_b) <= (after[1] - after[0]) / 2 + 1e-12:
        return ""
    return (f"still moving with the budget: {before[0]:.2g} to {before[1]:.2g} at step {half}, {after[0]:.2g} to "
            f"{after[1]:.2g} at step {steps}")


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
    budget = budget_words(s)
    where = f"from depth {shallow} to {deep} ({2 * shallow} to {2 * deep} GAU layers), {label}"
    lo, hi = depth_range(data, "gau", "post")
    t_lo, t_hi = depth_range(data, "transformer", "post")
    half = at_half(data) if has_half(data) else None
    depth_drift = warm_drift = ""
    if half is not None:
        # the ratio of trained runs' boundaries, the reading that moves with the budget, at half of it and at its end
        lo_half = depth_range(half, "gau", "post")[0]
        depth_drift = drift_words((lo_half, lo_half), (lo, lo), s["half_step"], f["steps"])
        hb, now = s["half_boundaries"]["post-norm GAU"], _ratio(gau[0][-1], gau[s["warmup"]][-1])
        before = _ratio(hb[0][-1], hb[s["warmup"]][-1])
        warm_drift = drift_words((before, before), (now, now), s["half_step"], f["steps"])
    # the rival: GAU needs warmup as much as the post-norm Transformer does, measured at the deepest depth at which
    # the Transformer trains with warmup (without one, the run says nothing about its warmup)
    trains = [i for i, b in enumerate(tfm[s["warmup"]]) if b > 0]
    warm_ratio = _ratio(tfm[0][trains[-1]], tfm[s["warmup"]][trains[-1]]) if trains else None
    warm_note = ("GAU needs warmup as much as the post-norm Transformer does (its ratio at depth "
                 f"{s['depths'][trains[-1]]}, the deepest at which it trains with warmup)" if trains else "")
    out = [
        Claim("gau-lr-depth",
              f"Post-norm GAU's largest trainable learning rate without warmup does not fall with depth by more than "
              f"one grid step ({where}; trained within {f['steps']} steps; a run that is slow rather than stalled "
              f"might still train: the ratio is the range both readings allow; post-norm Transformer's "
              + (f"ratio {t_lo:.2g})" if t_lo == t_hi else f"range {t_lo:.2g} to {t_hi:.2g})"),
              "Su 2022, kexue.fm/archives/8990", step ** -1.5, (lo + hi) / 2, (hi - lo) / 2, (hi - lo) / 2,
              f"half the range of ratios the runs allow ({lo:.2g}: a run that did not train counts as a failure; "
              f"{hi:.2g}: {'a slow' if half is not None else 'a'} run {'' if half is not None else 'that did not diverge '}"
              f"counts as trainable); {budget}; the grid steps x{step:.3g}, so "
              f"'falls by at most one step' is a ratio above {step:.3g}^-1.5",
              kind="above", unit="ratio deep / shallow", detectable=resolves, undecided=depth_drift),
        Claim("gau-lr-no-warmup",
              f"At depth {deep} ({2 * deep} GAU layers), post-norm GAU trains without warmup at the largest learning "
              f"rate it trains at with warmup (trained within {f['steps']} steps; {label})",
              "Su 2022, kexue.fm/archives/8990", 1.0, _ratio(gau[0][-1], gau[s["warmup"]][-1]), 0.0, tol,
              f"{basis}; the grid resolves a fall of two steps (ratio {step ** -2:.2g}); {budget}",
              kind="lower_bound", unit="ratio without / with warmup", approx_rel=0.0,
              alternative=warm_ratio, alternative_note=warm_note, detectable=resolves,
              effect=None if warm_ratio is None else 1.0 - warm_ratio, undecided=warm_drift),
    ]
    what = "the paired loss difference (each at its best learning rate)"

    def gap_fields(residual: str) -> dict[str, Any]:
        # the gap at the end, with the gap at half the budget beside it; a conclusion that changed over the second
        # half of the budget is not yet a verdict
        fields = estimate_fields(s["gaps"][residual], what, sided="one")
        before = s["half_gaps"].get(residual)
        if before is None:
            return fields
        fields["tolerance_basis"] += (f"; at step {s['half_step']} the gap was {before.value:+.3f} " + (
            f"(SE {before.se:.2g}), {gap_words(before)} 0" if before.resolved else "(one seed)"))
        if gap_words(before) != s[f"gau_vs_{residual}"]:
            fields["undecided"] = (f"the comparison changed over the second half of the budget: "
                                   f"{gap_words(before)} 0 at step {s['half_step']}, {s[f'gau_vs_{residual}']} 0 at "
                                   f"step {f['steps']}")
        return fields

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
            kind="below", unit="nats/byte", **gap_fields("post")))
    strongest = s["strongest"]
    if strongest is not None and strongest != "post" and s["gaps"][strongest] is not None:
        name = arch_label("transformer", strongest)
        out.append(Claim(
            "gau-vs-strongest-transformer",
            f"Without warmup, each at its best learning rate, post-norm GAU reaches a lower loss than the strongest "
            f"Transformer of equal parameters here, the {name} (depth {deep}, {label})",
            "Su 2022, kexue.fm/archives/8990 (standard Transformer tricks not needed for GAU)", 0.0,
            kind="below", unit="nats/byte", **gap_fields(strongest)))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The stack a trial trains and its validation batches."""
    p = trial.params
    return [Workload(f"{arch_label(p['block'], p['residual'])}, depth {p['depth']}",
                     model_config(cfg, p["block"], p["residual"], p["depth"]), cfg.batch, cfg.ctx, cfg.steps,
                     -(-cfg.eval_windows // cfg.batch))]
