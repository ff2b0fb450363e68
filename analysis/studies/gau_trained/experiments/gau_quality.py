"""FLASH-Quad, FLASH and Transformer++ of equal parameters, trained side by side on text and on recall.

Four architectures (:class:`analysis.models.lm.LanguageModel`): Transformer++ (``layers`` layers: pre-RMSNorm,
RoPE, SwiGLU), FLASH-Quad as 2 x ``layers`` GAU layers with post-norm and with pre-norm (e = 2d, so two GAU layers
hold a Transformer layer's 12 d^2), and FLASH (the same post-norm stack, quadratic attention inside chunks of
``chunk`` and linear attention across them). Each is trained with the same seeds (same initial draw of shared
shapes aside, the same batches) on

* the byte corpus: validation loss along training, against steps and against the measured training time (every trial
  runs with the same thread count, so their times are comparable ratios);
* single-token recall (:class:`analysis.tasks.recall.LookupTask`) with a growing number of pairs: held-out accuracy at half
  the budget and at its end.

Every architecture is trained at every peak learning rate of a small grid per task, so that none loses by its
learning rate: each comparison is made at each architecture's best, paired by seed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, direction, mean_estimate, paired_estimate, planned_detectable_multiple
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.tasks.data import PINNED_CORPUS_PATH
from analysis.tasks.recall import LookupTask, recall_metrics
from analysis.training.train import TrainConfig, token_stats, train_lm

NAME = "gau-quality"
PRIORITY = 20  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 2  # 1: one learning rate; 2: a learning-rate grid per task, recall at half the budget
ARCHS = ("transformer", "flash-quad-post", "flash-quad-pre", "flash")
ARCH_LABELS = {"transformer": "Transformer++", "flash-quad-post": "FLASH-Quad (post-norm)",
               "flash-quad-pre": "FLASH-Quad (pre-norm)", "flash": "FLASH"}


@dataclass(frozen=True)
class Config:
    """Sizes, budgets, learning-rate grids and seeds of both tasks."""

    d: int
    layers: int  # Transformer layers; the GAU stacks have twice as many
    heads: int
    s: int
    chunk: int
    seeds: tuple[int, ...]
    ctx: int
    steps: int
    batch: int
    lrs: tuple[float, ...]  # peak learning rates on text, increasing: every architecture and seed at each
    evals: int  # validation evaluations along training
    eval_windows: int
    pairs: tuple[int, ...]
    keys: int
    values: int
    queries: int
    recall_d: int
    recall_steps: int
    recall_lrs: tuple[float, ...]  # peak learning rates on recall, increasing: every pairs, architecture and seed
    eval_sequences: int
    corpus_file: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one; got {self.seeds!r}")
        if not 1 <= self.evals <= self.steps:
            raise ValueError(f"evals must be in [1, steps]; got {self.evals}")
        if max(self.pairs) > self.keys:
            raise ValueError(f"pairs ({max(self.pairs)}) must not exceed keys ({self.keys})")
        for name in ("lrs", "recall_lrs"):
            grid = getattr(self, name)
            if not grid or grid[0] <= 0 or any(b <= a for a, b in zip(grid, grid[1:])):
                raise ValueError(f"{name} must be positive and increasing; got {grid!r}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, layers=1, heads=2, s=16, chunk=8, seeds=(0, 1), ctx=32, steps=10, batch=8, lrs=(3e-3, 1e-2),
                    evals=2, eval_windows=8, pairs=(2, 4), keys=8, values=4, queries=2, recall_d=32,
                    recall_steps=8, recall_lrs=(3e-3, 1e-2), eval_sequences=32),
    # three seeds at every learning rate (2 df for a paired t interval); about an hour on 2 cores, 2 trials at a time
    "cpu": Config(d=96, layers=2, heads=4, s=32, chunk=16, seeds=(0, 1, 2), ctx=64, steps=600, batch=32,
                  lrs=(3e-3, 1e-2, 3e-2), evals=24, eval_windows=128, pairs=(4, 16, 64), keys=64, values=16,
                  queries=4, recall_d=64, recall_steps=800, recall_lrs=(3e-3, 1e-2), eval_sequences=512),
    # 10 Transformer layers of d = 512 (31.5 M parameters in the blocks; the GAU stacks 32.8 M) at 1024 tokens. Three
    # seeds, not two: a one-sided paired t test over n seeds detects planned_detectable_multiple(n) per-seed SDs, 5.8 at
    # 2 seeds (1 df) and 2.3 at 3, so a third seed buys 2.5x the resolution for 1.5x the trials. 800 steps of 32 x 1024
    # tokens (26 M tokens, 0.57 of the corpus, 0.8 tokens a parameter) is the longest budget, in hundreds of steps,
    # with which `lease plan` decides the headline comparison in the second lent command on an H100; one epoch (1400
    # steps) would take the fifth. Both are far below the published runs' budgets; the chapter's published-work row
    # says so
    "gpu": Config(d=512, layers=10, heads=8, s=128, chunk=128, seeds=(0, 1, 2), ctx=1024, steps=800, batch=32,
                  lrs=(1e-3, 3e-3), evals=20, eval_windows=128, pairs=(64, 256), keys=1024, values=16,
                  queries=16, recall_d=256, recall_steps=1000, recall_lrs=(3e-3,), eval_sequences=1024,
                  corpus_file=PINNED_CORPUS_PATH),
}


def model_config(cfg: Config, arch: str, vocab: int = 256, ctx: int | None = None, d: int | None = None
                 ) -> ModelConfig:
    """The architecture ``arch`` at the config's size (equal parameters: 2 GAU layers per Transformer layer)."""
    d, ctx = d or cfg.d, ctx or cfg.ctx
    if arch == "transformer":
        return ModelConfig(vocab=vocab, d=d, layers=cfg.layers, block="transformer", residual="pre", norm="rmsnorm",
                           ffn="swiglu", positions="rope", heads=cfg.heads, ctx=ctx)
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {', '.join(ARCHS)}; got {arch!r}")
    return ModelConfig(vocab=vocab, d=d, layers=2 * cfg.layers, block="flash" if arch == "flash" else "gau",
                       residual="pre" if arch == "flash-quad-pre" else "post", s=cfg.s, chunk=cfg.chunk, ctx=ctx)


@dataclass(frozen=True)
class TextRun:
    """One model trained on text: (step, training seconds, validation loss) along training, the final validation loss
    and its SE over windows, where it diverged and the training seconds per step."""

    task: str
    arch: str
    seed: int
    lr: float
    parameters: int
    curve: list[tuple[int, float, float]]
    val_loss: float
    val_se: float
    diverged_at: int | None
    seconds_per_step: float


@dataclass(frozen=True)
class RecallRun:
    """One model trained on recall: held-out accuracy and loss at the end and at half the budget, and the training
    loss along the way."""

    task: str
    arch: str
    seed: int
    pairs: int
    lr: float
    accuracy: float
    loss: float
    half_step: int
    accuracy_half: float
    loss_half: float
    train_steps: list[int]
    train_loss: list[float]
    parameters: int
    diverged_at: int | None


def _text(cfg: Config, arch: str, seed: int, lr: float, device: torch.device) -> TextRun:
    """Train on the corpus; validation loss at ``evals`` points with the training seconds spent to reach each."""
    corpus = corpus_of(cfg)
    model = LanguageModel(model_config(cfg, arch))
    every = max(1, cfg.steps // cfg.evals)
    curve: list[tuple[int, float, float]] = []  # (step, seconds of training, validation loss)
    clock = {"train": 0.0, "last": time.perf_counter()}

    def on_step(step: int, m: torch.nn.Module) -> None:
        evaluate = step % every == 0 or step == cfg.steps
        if evaluate and device.type == "cuda":
            torch.cuda.synchronize()  # the queued steps count as training time (the trainer does not wait per step)
        now = time.perf_counter()
        if step > 0:
            clock["train"] += now - clock["last"]
        if evaluate:
            loss = float(token_stats(m, corpus.val, cfg.ctx, cfg.eval_windows, device).loss.mean())
            curve.append((step, round(clock["train"], 4), loss))
            m.train()
        clock["last"] = time.perf_counter()

    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=lr,
                                                    warmup=max(1, cfg.steps // 20), seed=run_seed(cfg, seed)),
                   cfg.ctx, device, on_step, progress=False)
    final = token_stats(model, corpus.val, cfg.ctx, cfg.eval_windows, device).loss
    per_window = final.reshape(-1, cfg.ctx).mean(axis=1)
    val, val_se = mean_se(per_window)
    return TextRun("text", arch, seed, lr, model.num_parameters(), curve, val, val_se, log.diverged_at,
                   clock["train"] / (log.diverged_at or cfg.steps))


def _recall(cfg: Config, arch: str, seed: int, pairs: int, lr: float, device: torch.device) -> RecallRun:
    """Train on LookupTask with ``pairs`` bindings at peak learning rate ``lr``; held-out query accuracy and loss at
    half the budget and at its end, and the training loss along the way."""
    task = LookupTask(pairs, keys=cfg.keys, values=cfg.values, queries=cfg.queries)
    model = LanguageModel(model_config(cfg, arch, task.vocab, task.length, cfg.recall_d))
    x, y = (torch.from_numpy(t).to(device) for t in task.batch(cfg.eval_sequences, seed=cfg.seed + 2**31 + pairs))
    half_step = cfg.recall_steps // 2
    half: list[float] = []

    def held_out(m: torch.nn.Module) -> tuple[float, float]:
        with torch.no_grad():
            out = recall_metrics(m.eval()(x), y)
        m.train()
        return out

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step == half_step:
            half.extend(held_out(m))

    log = train_lm(model, task.source(), TrainConfig(steps=cfg.recall_steps, batch=cfg.batch, lr=lr,
                                                     warmup=max(1, cfg.recall_steps // 10), seed=run_seed(cfg, seed)),
                   task.length, device, on_step, progress=False, log_every=max(1, cfg.recall_steps // 40))
    accuracy, loss = held_out(model)
    return RecallRun("recall", arch, seed, pairs, lr, accuracy, loss, half_step, half[0] if half else math.nan,
                     half[1] if half else math.nan, log.steps, [float(f"{v:.5g}") for v in log.train_loss],
                     model.num_parameters(), log.diverged_at)


def trials(cfg: Config) -> list[Trial]:
    """Every (architecture, learning rate, seed) on text and every (pairs, architecture, learning rate, seed) on
    recall; seeded with run_seed(cfg, seed), so that a seed gives every architecture and learning rate the same
    batches."""
    def trial(task: str, arch: str, seed: int, lr: float, pairs: int | None = None) -> Trial:
        tag = f"lr{lr:.4g}" if pairs is None else f"pairs{pairs}.lr{lr:.4g}"
        params: dict[str, Any] = {"task": task, "arch": arch, "seed": seed, "lr": lr}
        if pairs is not None:
            params["pairs"] = pairs
        return Trial(f"{task}.{arch}.{tag}.seed{seed}", run_seed(cfg, seed), params)

    out = [trial("text", a, seed, lr) for a in ARCHS for lr in cfg.lrs for seed in cfg.seeds]
    return out + [trial("recall", a, seed, lr, p) for p in cfg.pairs for a in ARCHS for lr in cfg.recall_lrs
                  for seed in cfg.seeds]


# the claims' own stakes in the gpu campaign's order (lower first): the headline comparison right after FLASH's speed
# (10), before length transfer (gau-length's 12), so that two lent commands decide it; FLASH against FLASH-Quad at the
# experiment's own PRIORITY
CLAIM_PRIORITY = {"flashquad-beats-transformer": 11, "gau-converges-slower-direction": 11, "gau-converges-slower": 11,
                  "flashquad-beats-transformer-recall": 14}


def claim_trials(cfg: Config) -> dict[str, list[str]]:
    """The trials each claim reads, seed by seed (a campaign cut short then holds whole seeds of a comparison): a text
    comparison every learning rate of its architectures, a recall comparison theirs at the most pairs; 'about as
    good' also reads the FLASH-Quad to Transformer++ gap it must resolve."""
    top = max(cfg.pairs)

    def reads(task: str, *archs: str) -> list[str]:
        chosen = [t for t in trials(cfg) if t.params["task"] == task and t.params["arch"] in archs
                  and t.params.get("pairs") in (None, top)]
        return [t.key for t in sorted(chosen, key=lambda t: (t.params["seed"], archs.index(t.params["arch"])))]

    head = reads("text", "transformer", "flash-quad-post")
    return {"flashquad-beats-transformer": head, "gau-converges-slower-direction": head, "gau-converges-slower": head,
            "flashquad-beats-transformer-recall": reads("recall", "transformer", "flash-quad-post"),
            "flash-matches-flashquad": reads("text", "transformer", "flash-quad-post", "flash"),
            "flash-matches-flashquad-recall": reads("recall", "flash-quad-post", "flash")}


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> TextRun | RecallRun:
    """One model trained: on text (validation curve against steps and seconds) or on recall (held-out accuracy)."""
    p = trial.params
    if p["task"] == "text":
        return _text(cfg, p["arch"], p["seed"], p["lr"], device)
    return _recall(cfg, p["arch"], p["seed"], p["pairs"], p["lr"], device)


def assemble(cfg: Config, results: list[TextRun | RecallRun], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the learning-rate grids, pairs, chance level and the text budget."""
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "lrs": list(cfg.lrs),
            "recall_lrs": list(cfg.recall_lrs), "steps": cfg.steps, "recall_steps": cfg.recall_steps,
            "pairs": list(cfg.pairs), "chance": 1 / cfg.values, "runs": [fields_of(r) for r in results]}


def steps_to_reach(curve: list[list[float]], target: float, axis: int = 0) -> float:
    """The step (axis 0) or training seconds (axis 1) at which a validation curve first reaches ``target``, linear
    between evaluations; inf when it never does."""
    pts = np.asarray(curve, dtype=float)
    below = np.nonzero(pts[:, 2] <= target)[0]
    if below.size == 0:
        return math.inf
    i = int(below[0])
    if i == 0:
        return float(pts[0, axis])
    (x0, y0), (x1, y1) = (pts[i - 1, axis], pts[i - 1, 2]), (pts[i, axis], pts[i, 2])
    return float(x0 + (x1 - x0) * (y0 - target) / (y0 - y1)) if y0 != y1 else float(x1)


def loss_at(run: dict[str, Any], step: int | None = None) -> float:
    """A text run's validation loss at the end (``step`` None) or at the evaluation at ``step`` of its curve (NaN for
    a run that diverged, or one without that evaluation)."""
    if run["diverged_at"] is not None:
        return math.nan
    if step is None:
        return float(run["val_loss"])
    return next((float(loss) for at, _, loss in run["curve"] if at == step), math.nan)


def _runs(data: dict[str, Any], task: str, arch: str, lr: float, pairs: int | None = None) -> list[dict[str, Any]]:
    return [r for r in data["runs"] if r["task"] == task and r["arch"] == arch and r["lr"] == lr
            and (pairs is None or r["pairs"] == pairs)]


def _score(data: dict[str, Any], task: str, arch: str, lr: float, pairs: int | None, half: bool) -> dict[int, float]:
    """seed -> the quantity the learning rate is chosen by: text loss (lower is better) or recall error, 1 -
    accuracy (lower is better), at the end or at half the budget; NaN for a run that diverged."""
    out = {}
    for r in _runs(data, task, arch, lr, pairs):
        if task == "text":
            out[r["seed"]] = loss_at(r, data["steps"] // 2 if half else None)
        else:
            acc = r["accuracy_half"] if half else r["accuracy"]
            out[r["seed"]] = math.nan if r["diverged_at"] is not None else 1.0 - acc
    return out


def lr_grid(data: dict[str, Any], task: str) -> list[float]:
    """The learning rates of a task's grid, increasing."""
    return sorted(data["lrs"] if task == "text" else data["recall_lrs"])


def best_lr(data: dict[str, Any], task: str, arch: str, pairs: int | None = None, half: bool = False) -> float:
    """The learning rate of the grid with the lowest mean over seeds of text loss (task 'text') or recall error (task
    'recall', at ``pairs``), among those at which no seed diverged; at half the budget with ``half``; NaN when every
    one diverged."""
    means = {}
    for lr in lr_grid(data, task):
        v = list(_score(data, task, arch, lr, pairs, half).values())
        if v and all(math.isfinite(x) for x in v):
            means[lr] = float(np.mean(v))
    return min(means, key=means.__getitem__) if means else math.nan


def at_edge(data: dict[str, Any], task: str, lr: float) -> str:
    """'the largest' or 'the smallest' when ``lr`` is an end of a grid of two or more, else ''."""
    grid = lr_grid(data, task)
    if len(grid) < 2 or lr not in grid:
        return ""
    return "the largest" if lr == grid[-1] else "the smallest" if lr == grid[0] else ""


def lr_table(data: dict[str, Any], task: str, arch: str, pairs: int | None = None) -> list[dict[str, float]]:
    """Per learning rate of the grid: mean and SE over seeds of text loss or recall accuracy (over seeds that did not
    diverge) and the share of seeds that diverged."""
    out = []
    for lr in lr_grid(data, task):
        runs = _runs(data, task, arch, lr, pairs)
        ok = [r for r in runs if r["diverged_at"] is None]
        m, e = mean_se(r["val_loss" if task == "text" else "accuracy"] for r in ok)
        out.append({"lr": lr, "mean": m, "se": e, "diverged": 1 - len(ok) / len(runs) if runs else math.nan})
    return out


def best_gap(data: dict[str, Any], task: str, a: str, b: str, pairs: int | None = None, half: bool = False
             ) -> Estimate | None:
    """Text loss of ``a`` minus that of ``b`` (task 'text'), or recall accuracy of ``a`` minus that of ``b`` (task
    'recall', at ``pairs``), each at its best learning rate (:func:`best_lr`), paired by seed (a seed gives both the
    same batches); at half the budget with ``half``; None when either diverged at every learning rate."""
    la, lb = best_lr(data, task, a, pairs, half), best_lr(data, task, b, pairs, half)
    if not (math.isfinite(la) and math.isfinite(lb)):
        return None
    sa, sb = _score(data, task, a, la, pairs, half), _score(data, task, b, lb, pairs, half)
    seeds = sorted(set(sa) & set(sb))
    sign = 1.0 if task == "text" else -1.0  # recall scores are errors: accuracy(a) - accuracy(b) = -(err a - err b)
    return paired_estimate([sign * sa[k] for k in seeds], [sign * sb[k] for k in seeds])


def recall_table(data: dict[str, Any], arch: str) -> dict[str, list[float]]:
    """Mean and SE over seeds of recall accuracy at each number of pairs, each at the architecture's best learning
    rate there, and that learning rate."""
    mean, se, lrs = [], [], []
    for p in data["pairs"]:
        lr = best_lr(data, "recall", arch, p)
        m, e = mean_se(r["accuracy"] for r in _runs(data, "recall", arch, lr, p) if r["diverged_at"] is None)
        mean.append(m)
        se.append(e)
        lrs.append(lr)
    return {"pairs": list(data["pairs"]), "mean": mean, "se": se, "lr": lrs}


def text_runs(data: dict[str, Any], arch: str) -> list[dict[str, Any]]:
    """An architecture's text runs at its best learning rate."""
    return _runs(data, "text", arch, best_lr(data, "text", arch))


def ratio_estimate(data: dict[str, Any], a: str, b: str, axis: int = 0) -> Estimate:
    """Per seed, the steps (axis 0) or training seconds (axis 1) for ``a`` to reach the loss both end at over the same
    for ``b``, each at its best learning rate, as a mean over seeds; the common target of a seed is the higher of the
    two final losses."""
    ra = {r["seed"]: r["curve"] for r in text_runs(data, a)}
    rb = {r["seed"]: r["curve"] for r in text_runs(data, b)}
    ratios = []
    for seed in sorted(set(ra) & set(rb)):
        target = max(ra[seed][-1][2], rb[seed][-1][2])
        ratios.append(steps_to_reach(ra[seed], target, axis) / steps_to_reach(rb[seed], target, axis))
    return mean_estimate(ratios, "seeds")


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per architecture: parameters, best learning rate on text (at the end and at half the budget) and its loss,
    the loss at every learning rate, seconds per step, recall against pairs; the paired gaps and convergence ratios
    the claims use; the order of the architectures by their best loss."""
    out: dict[str, Any] = {"archs": {}}
    top = data["pairs"][-1]
    present = archs_in(data)
    for a in present:
        lr = best_lr(data, "text", a)
        runs = _runs(data, "text", a, lr)
        out["archs"][a] = {
            "parameters": data["runs"][[r["arch"] for r in data["runs"]].index(a)]["parameters"],
            "lr": lr, "lr_half": best_lr(data, "text", a, half=True), "lr_edge": at_edge(data, "text", lr),
            "val_loss": mean_se(r["val_loss"] for r in runs),
            "seconds_per_step": float(np.median([r["seconds_per_step"] for r in runs])) if runs else math.nan,
            "lrs": lr_table(data, "text", a),
            "recall": recall_table(data, a),
            "recall_lrs": lr_table(data, "recall", a, top),
            "recall_lr": best_lr(data, "recall", a, top), "recall_lr_half": best_lr(data, "recall", a, top, True)}
    base = out["archs"].get("transformer")
    for a in present[1:] if base is not None else ():
        out["archs"][a]["time_ratio"] = out["archs"][a]["seconds_per_step"] / base["seconds_per_step"]
        out["archs"][a]["param_ratio"] = out["archs"][a]["parameters"] / base["parameters"]
    # a partial campaign (analysis.core.trials.decided_claims) holds some architectures: what they compare
    text, recall = archs_in(data, "text"), archs_in(data, "recall")
    out["gaps"] = {f"{a}-{b}": best_gap(data, "text", a, b) for a, b in TEXT_GAPS if {a, b} <= set(text)}
    out["half_gaps"] = {f"{a}-{b}": best_gap(data, "text", a, b, half=True) for a, b in TEXT_GAPS
                        if {a, b} <= set(text)}
    out["recall_gaps"] = {f"{a}-{b}": best_gap(data, "recall", a, b, top) for a, b in RECALL_GAPS
                          if {a, b} <= set(recall)}
    out["recall_half_gaps"] = {f"{a}-{b}": best_gap(data, "recall", a, b, top, True) for a, b in RECALL_GAPS
                               if {a, b} <= set(recall)}
    for key, a, axis in (("steps_ratio", "flash-quad-post", 0), ("time_ratio_to_target", "flash-quad-post", 1),
                         ("steps_ratio_flash", "flash", 0)):
        if {a, "transformer"} <= set(text):
            out[key] = ratio_estimate(data, a, "transformer", axis=axis)
    out["top_pairs"] = top
    out["order"] = sorted(text, key=lambda a: out["archs"][a]["val_loss"][0])
    return out


def archs_in(data: dict[str, Any], task: str | None = None) -> list[str]:
    """The architectures with runs in ``data`` (on ``task``, or on either), in :data:`ARCHS` order."""
    return [a for a in ARCHS if any(r["arch"] == a and task in (None, r["task"]) for r in data["runs"])]


TEXT_GAPS = (("flash-quad-post", "transformer"), ("flash-quad-pre", "transformer"), ("flash", "flash-quad-post"),
             ("flash-quad-pre", "flash-quad-post"))
RECALL_GAPS = (("transformer", "flash-quad-post"), ("flash-quad-post", "flash"), ("flash-quad-post", "flash-quad-pre"))
SOURCE = "Su 2022, kexue.fm/archives/8934 (after Hua et al. 2022)"
COMMENTS = "Su 2022, kexue.fm/archives/8934, readers' comments (GAU/FLASH 20k steps where a Transformer takes 8k)"


@dataclass(frozen=True)
class Design:
    """What a planned run's seeds can detect of the FLASH-Quad minus Transformer++ loss gap, at the per-seed SD that
    a finished run measured: the statement made before the planned run."""

    seeds: int  # of the planned config: each paired gap has seeds - 1 df
    multiple: float  # the gap a one-sided paired t test detects, in per-seed SDs (planned_detectable_multiple)
    sd: float  # the finished run's SD of the per-seed gap (nats/byte)
    gap: float  # the finished run's mean gap (nats/byte)

    @property
    def detects(self) -> float:
        """The detectable gap at the finished run's SD: multiple x sd (nats/byte)."""
        return self.multiple * self.sd

    @property
    def max_sd(self) -> float:
        """The largest per-seed SD at which the planned run detects a gap as large as the finished run's: |gap| /
        multiple."""
        return abs(self.gap) / self.multiple


def planned_design(data: dict[str, Any], planned: Config) -> Design | None:
    """:class:`Design` of ``planned`` from the paired FLASH-Quad (post-norm) minus Transformer++ text gap of a
    finished run (``data``), each at its best learning rate; None when that run has no error estimate."""
    gap = best_gap(data, "text", "flash-quad-post", "transformer")
    if gap is None or not gap.resolved:
        return None
    n = len(planned.seeds)
    return Design(n, planned_detectable_multiple(n, sided="one"), gap.se * math.sqrt(gap.n), gap.value)


def gap_words(gap: Estimate | None) -> str:
    """'smaller than', 'larger than' or 'indistinguishable from' 0 by the two-sided 95% t interval of a paired gap;
    'undecided against' without an error estimate, 'not comparable with' without a gap."""
    if gap is None:
        return "not comparable with"
    return direction(gap) or "undecided against"


def undecided_words(data: dict[str, Any], task: str, a: str, b: str, pairs: int | None = None) -> str:
    """Why a comparison of ``a`` with ``b`` at their best learning rates is not yet a verdict (empty when it is): the
    comparison changed between half the budget and its end, or the architecture that does worse has its best
    learning rate at an end of the grid and gained over the grid's last step at least the gap, so that one step
    beyond might close it."""
    end, half = best_gap(data, task, a, b, pairs), best_gap(data, task, a, b, pairs, half=True)
    if end is None:
        return ""
    steps = data["steps"] if task == "text" else data["recall_steps"]
    if half is not None and gap_words(half) != gap_words(end):
        return (f"the comparison changed over the second half of the budget: {gap_words(half)} 0 at step "
                f"{steps // 2}, {gap_words(end)} 0 at step {steps}")
    worse_is_a = end.value > 0 if task == "text" else end.value < 0
    worse = a if worse_is_a else b
    lr = best_lr(data, task, worse, pairs)
    edge = at_edge(data, task, lr)
    if not edge or end.value == 0:
        return ""
    # the gain of the grid's last step towards that end: one step beyond closes the gap only if it gains as much again
    grid = lr_grid(data, task)
    inner = grid[-2] if edge == "the largest" else grid[1]
    scores = [float(np.mean(list(_score(data, task, worse, x, pairs, False).values()))) for x in (inner, lr)]
    gain = scores[0] - scores[1] if math.isfinite(scores[0]) else math.inf
    if gain < abs(end.value):
        return ""
    return (f"{ARCH_LABELS[worse]}, which does worse, has its best learning rate at {edge} of the grid ({lr:g}) and "
            f"gained {gain:.3g} over the grid's last step, as much as the gap: one beyond it might close the gap")


def lr_words(data: dict[str, Any], task: str, a: str, b: str, pairs: int | None = None) -> str:
    """'each at its best peak learning rate of 0.003, 0.01, 0.03 (FLASH-Quad (post-norm) 0.01, Transformer++ 0.003)'."""
    grid = ", ".join(f"{lr:g}" for lr in lr_grid(data, task))
    best = ", ".join(f"{ARCH_LABELS[x]} {best_lr(data, task, x, pairs):g}" for x in (a, b))
    return f"each at its best peak learning rate of {grid} ({best})"


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """FLASH-Quad against Transformer++, FLASH against FLASH-Quad, and the comments' slower convergence; each
    architecture at its best learning rate, every difference paired by seed and judged by its Student-t interval,
    and not decided while it changes over the second half of the budget or its loser sits at an end of the grid."""
    s = summary(data)
    top = s["top_pairs"]
    loss_what, acc_what = "the paired loss difference", "the paired accuracy difference"
    gaps, recall_gaps = s["gaps"], s["recall_gaps"]

    def fields(est: Estimate | None, what: str, sided: str, task: str, a: str, b: str) -> dict[str, Any]:
        if est is None:
            return {"measured": 0.0, "uncertainty": 0.0, "tolerance": 0.0, "detectable": math.inf,
                    "tolerance_basis": "no comparison: an architecture diverged at every learning rate",
                    "undecided": "an architecture diverged at every learning rate"}
        half = best_gap(data, task, a, b, top if task == "recall" else None, half=True)
        basis = estimate_fields(est, what, sided=sided)
        if half is not None:
            steps = data["steps"] if task == "text" else data["recall_steps"]
            basis["tolerance_basis"] += f"; at step {steps // 2} it was {half.value:+.3f} (SE {half.se:.2g})"
        return {**basis, "undecided": undecided_words(data, task, a, b, top if task == "recall" else None)}

    # a partial campaign holds some comparisons (analysis.core.trials.decided_claims): each claim is made from its own
    out: list[Claim] = []
    if "flash-quad-post-transformer" in gaps:
        gap_quad = gaps["flash-quad-post-transformer"]
        out.append(Claim(
            "flashquad-beats-transformer",
            f"FLASH-Quad (post-norm GAU) reaches a lower validation loss than Transformer++ of equal parameters: "
            f"loss(FLASH-Quad) - loss(Transformer++) < 0 "
            f"({lr_words(data, 'text', 'flash-quad-post', 'transformer')}; {label})",
            SOURCE, predicted=0.0, kind="below", unit="nats/byte",
            **fields(gap_quad, loss_what, "one", "text", "flash-quad-post", "transformer")))
    if "transformer-flash-quad-post" in recall_gaps:
        out.append(Claim(
            "flashquad-beats-transformer-recall",
            f"FLASH-Quad recalls at least as well as Transformer++ with {top} pairs: accuracy(Transformer++) - "
            f"accuracy(FLASH-Quad) <= 0 ({lr_words(data, 'recall', 'transformer', 'flash-quad-post', top)}; "
            f"{label})",
            SOURCE, predicted=0.0, kind="upper_bound", unit="accuracy (fraction)",
            # 'at least as well' must exclude a drop as large as the one between FLASH-Quad and FLASH here
            effect=abs(recall_gaps["flash-quad-post-flash"].value) if recall_gaps.get("flash-quad-post-flash")
            else None,
            **fields(recall_gaps["transformer-flash-quad-post"], acc_what, "one", "recall", "transformer",
                     "flash-quad-post")))
    if {"flash-flash-quad-post", "flash-quad-post-transformer"} <= set(gaps):
        gap_quad, gap_flash = gaps["flash-quad-post-transformer"], gaps["flash-flash-quad-post"]
        quad = s["archs"]["flash-quad-post"]["val_loss"][0]
        out.append(Claim(
            "flash-matches-flashquad",
            f"FLASH is about as good as FLASH-Quad: loss(FLASH) - loss(FLASH-Quad) = 0 ('about as good' states no "
            f"size; to say it the run must detect a gap as large as the one between FLASH-Quad and Transformer++ "
            f"here, {abs(gap_quad.value) if gap_quad else math.nan:.3g} nats/byte; the gap is "
            f"{100 * (gap_flash.value if gap_flash else math.nan) / quad:.1f}% of the loss; "
            f"{lr_words(data, 'text', 'flash', 'flash-quad-post')}; {label})",
            SOURCE, predicted=0.0, unit="nats/byte", effect=abs(gap_quad.value) if gap_quad else None,
            **fields(gap_flash, loss_what, "two", "text", "flash", "flash-quad-post")))
    if "flash-quad-post-flash" in recall_gaps:
        out.append(Claim(
            "flash-matches-flashquad-recall",
            f"FLASH recalls as well as FLASH-Quad with {top} pairs: accuracy(FLASH-Quad) - accuracy(FLASH) <= 0 "
            f"({lr_words(data, 'recall', 'flash-quad-post', 'flash', top)}; {label})",
            SOURCE, predicted=0.0, kind="upper_bound", unit="accuracy drop (fraction)",
            # as for the loss: a drop as large as the one between Transformer++ and FLASH-Quad here
            effect=abs(recall_gaps["transformer-flash-quad-post"].value)
            if recall_gaps.get("transformer-flash-quad-post") else None,
            **fields(recall_gaps["flash-quad-post-flash"], acc_what, "one", "recall", "flash-quad-post", "flash")))
    if "steps_ratio" in s:
        ratio = s["steps_ratio"]
        out.append(Claim(
            "gau-converges-slower-direction",
            f"GAU converges slower than the Transformer: FLASH-Quad's ratio of steps to the loss both reach is "
            f"above 1 ({lr_words(data, 'text', 'flash-quad-post', 'transformer')}; {label})",
            COMMENTS, predicted=1.0, kind="above", unit="ratio of steps",
            **estimate_fields(ratio, "the per-seed ratio of steps (evaluations interpolated)", sided="one")))
        out.append(Claim(
            "gau-converges-slower",
            f"GAU converges slower than the Transformer: FLASH-Quad needs 20k/8k = 2.5 times the steps to reach "
            f"the loss both reach ({lr_words(data, 'text', 'flash-quad-post', 'transformer')}; {label})",
            COMMENTS, predicted=2.5, unit="ratio of steps", alternative=1.0,
            alternative_note="no slower: the same number of steps",
            **estimate_fields(ratio, "the per-seed ratio of steps (evaluations interpolated)")))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The model a trial trains and its evaluations."""
    p = trial.params
    arch = p["arch"]
    if p["task"] == "text":
        evals = (cfg.evals + 2) * -(-cfg.eval_windows // cfg.batch)
        return [Workload(f"text, {ARCH_LABELS[arch]}", model_config(cfg, arch), cfg.batch, cfg.ctx, cfg.steps, evals)]
    task = LookupTask(p["pairs"], keys=cfg.keys, values=cfg.values, queries=cfg.queries)
    return [Workload(f"recall {p['pairs']} pairs, {ARCH_LABELS[arch]}",
                     model_config(cfg, arch, task.vocab, task.length, cfg.recall_d), cfg.batch, task.length,
                     cfg.recall_steps, -(-cfg.eval_sequences // cfg.batch))]
