"""FLASH-Quad, FLASH and Transformer++ of equal parameters, trained side by side on text and on recall.

Four architectures (:class:`analysis.models.lm.LanguageModel`): Transformer++ (``layers`` layers: pre-RMSNorm,
RoPE, SwiGLU), FLASH-Quad as 2 x ``layers`` GAU layers with post-norm and with pre-norm (e = 2d, so two GAU layers
hold a Transformer layer's 12 d^2), and FLASH (the same post-norm stack, quadratic attention inside chunks of
``chunk`` and linear attention across them). Each is trained with the same seeds (same initial draw of shared
shapes aside, the same batches) on

* the byte corpus: validation loss along training, against steps and against the measured training time (every trial
  runs with the same thread count, so their times are comparable ratios);
* single-token recall (:class:`analysis.recall.LookupTask`) with a growing number of pairs: held-out accuracy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.data import PINNED_CORPUS_PATH
from analysis.core.trial import Trial
from analysis.experiments.base import Workload, corpus_of, mean_se, run_seed
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.recall import LookupTask, recall_metrics
from analysis.train import TrainConfig, token_stats, train_lm
from analysis.stats import Estimate, mean_estimate, paired_estimate
from analysis.verify import Claim, estimate_fields

NAME = "gau-quality"
PRIORITY = 20  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 1  # raised when the layout of run()'s data changes
ARCHS = ("transformer", "flash-quad-post", "flash-quad-pre", "flash")
ARCH_LABELS = {"transformer": "Transformer++", "flash-quad-post": "FLASH-Quad (post-norm)",
               "flash-quad-pre": "FLASH-Quad (pre-norm)", "flash": "FLASH"}


@dataclass(frozen=True)
class Config:
    """Sizes, budgets and seeds of both tasks."""

    d: int
    layers: int  # Transformer layers; the GAU stacks have twice as many
    heads: int
    s: int
    chunk: int
    seeds: tuple[int, ...]
    ctx: int
    steps: int
    batch: int
    lr: float
    evals: int  # validation evaluations along training
    eval_windows: int
    lr_check: float  # a second learning rate, one seed, to show the ordering does not hinge on lr
    pairs: tuple[int, ...]
    keys: int
    values: int
    queries: int
    recall_d: int
    recall_steps: int
    recall_lr: float
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


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, layers=1, heads=2, s=16, chunk=8, seeds=(0, 1), ctx=32, steps=10, batch=8, lr=3e-3,
                    evals=2, eval_windows=8, lr_check=1e-2, pairs=(2, 4), keys=8, values=4, queries=2, recall_d=32,
                    recall_steps=8, recall_lr=1e-2, eval_sequences=32),
    "cpu": Config(d=96, layers=2, heads=4, s=32, chunk=16, seeds=(0, 1, 2), ctx=64, steps=600, batch=32, lr=3e-3,
                  evals=24, eval_windows=128, lr_check=1e-2, pairs=(4, 16, 64), keys=64, values=16, queries=4,
                  recall_d=64, recall_steps=800, recall_lr=1e-2, eval_sequences=512),
    # 10 Transformer layers of d = 512 (31.5 M parameters in the blocks; the GAU stacks 32.8 M), sized from H100 step
    # times (analysis.plan.h100_seconds): 12 text trials of 2000 steps at 1024 tokens, 4 to 5 minutes each
    "gpu": Config(d=512, layers=10, heads=8, s=128, chunk=128, seeds=(0, 1), ctx=1024, steps=2000, batch=32, lr=1e-3,
                  evals=20, eval_windows=128, lr_check=3e-3, pairs=(64, 256), keys=1024, values=16,
                  queries=16, recall_d=256, recall_steps=1000, recall_lr=3e-3, eval_sequences=1024,
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


def _text(cfg: Config, arch: str, seed: int, lr: float, device: torch.device) -> dict[str, Any]:
    """Train on the corpus; validation loss at ``evals`` points with the training seconds spent to reach each."""
    corpus = corpus_of(cfg)
    model = LanguageModel(model_config(cfg, arch))
    every = max(1, cfg.steps // cfg.evals)
    curve: list[tuple[int, float, float]] = []  # (step, seconds of training, validation loss)
    clock = {"train": 0.0, "last": time.perf_counter()}

    def on_step(step: int, m: torch.nn.Module) -> None:
        now = time.perf_counter()
        if step > 0:
            clock["train"] += now - clock["last"]
        if step % every == 0 or step == cfg.steps:
            if device.type == "cuda":
                torch.cuda.synchronize()
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
    return {"task": "text", "arch": arch, "seed": seed, "lr": lr, "parameters": model.num_parameters(),
            "curve": curve, "val_loss": val, "val_se": val_se, "diverged_at": log.diverged_at,
            "seconds_per_step": clock["train"] / (log.diverged_at or cfg.steps)}


def _recall(cfg: Config, arch: str, seed: int, pairs: int, device: torch.device) -> dict[str, Any]:
    """Train on LookupTask with ``pairs`` bindings; held-out query accuracy and loss."""
    task = LookupTask(pairs, keys=cfg.keys, values=cfg.values, queries=cfg.queries)
    model = LanguageModel(model_config(cfg, arch, task.vocab, task.length, cfg.recall_d))
    log = train_lm(model, task.source(), TrainConfig(steps=cfg.recall_steps, batch=cfg.batch, lr=cfg.recall_lr,
                                                     warmup=max(1, cfg.recall_steps // 10), seed=run_seed(cfg, seed)),
                   task.length, device, progress=False)
    x, y = (torch.from_numpy(t).to(device) for t in task.batch(cfg.eval_sequences, seed=cfg.seed + 2**31 + pairs))
    with torch.no_grad():
        accuracy, loss = recall_metrics(model.eval()(x), y)
    return {"task": "recall", "arch": arch, "seed": seed, "pairs": pairs, "accuracy": accuracy, "loss": loss,
            "parameters": model.num_parameters(), "diverged_at": log.diverged_at}


def trials(cfg: Config) -> list[Trial]:
    """Every (architecture, seed) on text at lr, one seed at lr_check, and every (architecture, seed, pairs) on
    recall; seeded with run_seed(cfg, seed), so that a seed gives every architecture the same batches."""
    def trial(task: str, arch: str, seed: int, extra: float) -> Trial:
        tag = f"lr{extra:.4g}" if task == "text" else f"pairs{extra}"
        return Trial(f"{task}.{arch}.{tag}.seed{seed}", run_seed(cfg, seed),
                     {"task": task, "arch": arch, "seed": seed, ("lr" if task == "text" else "pairs"): extra})

    out = [trial("text", a, seed, cfg.lr) for a in ARCHS for seed in cfg.seeds]
    out += [trial("text", a, cfg.seeds[0], cfg.lr_check) for a in ARCHS]
    return out + [trial("recall", a, seed, p) for p in cfg.pairs for a in ARCHS for seed in cfg.seeds]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> dict[str, Any]:
    """One model trained: on text (validation curve against steps and seconds) or on recall (held-out accuracy)."""
    p = trial.params
    if p["task"] == "text":
        return _text(cfg, p["arch"], p["seed"], p["lr"], device)
    return _recall(cfg, p["arch"], p["seed"], p["pairs"], device)


def assemble(cfg: Config, results: list[dict[str, Any]], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the learning rates, pairs and chance level."""
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "lr": cfg.lr,
            "lr_check": cfg.lr_check, "pairs": list(cfg.pairs), "chance": 1 / cfg.values, "runs": results}


def _text_runs(data: dict[str, Any], arch: str, lr: float | None = None) -> list[dict[str, Any]]:
    lr = data["lr"] if lr is None else lr
    return [r for r in data["runs"] if r["task"] == "text" and r["arch"] == arch and r["lr"] == lr]


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


def paired_gap(data: dict[str, Any], a: str, b: str) -> tuple[float, float]:
    """Mean and SE over seeds of val_loss(a) - val_loss(b), paired by seed (nats/byte)."""
    ra = {r["seed"]: r["val_loss"] for r in _text_runs(data, a)}
    rb = {r["seed"]: r["val_loss"] for r in _text_runs(data, b)}
    return mean_se(ra[s] - rb[s] for s in sorted(ra) if s in rb)


def convergence_ratio(data: dict[str, Any], a: str, b: str, axis: int = 0) -> tuple[float, float]:
    """Mean and SE over seeds of (steps, or seconds with axis 1, for ``a`` to reach the loss both end at) over the
    same for ``b``; the common target of a seed is the higher of the two final losses."""
    ra = {r["seed"]: r["curve"] for r in _text_runs(data, a)}
    rb = {r["seed"]: r["curve"] for r in _text_runs(data, b)}
    ratios = []
    for seed in sorted(set(ra) & set(rb)):
        target = max(ra[seed][-1][2], rb[seed][-1][2])
        ta, tb = steps_to_reach(ra[seed], target, axis), steps_to_reach(rb[seed], target, axis)
        ratios.append(ta / tb)
    return mean_se(ratios)


def recall_table(data: dict[str, Any], arch: str) -> dict[str, list[float]]:
    """Mean and SE over seeds of recall accuracy at each number of pairs."""
    mean, se = [], []
    for p in data["pairs"]:
        m, e = mean_se(r["accuracy"] for r in data["runs"] if r["task"] == "recall" and r["arch"] == arch
                       and r["pairs"] == p)
        mean.append(m)
        se.append(e)
    return {"pairs": list(data["pairs"]), "mean": mean, "se": se}


def _recall_gap(data: dict[str, Any], a: str, b: str, pairs: int) -> tuple[float, float]:
    """Mean and SE over seeds of accuracy(a) - accuracy(b) at ``pairs``."""
    acc = {(r["arch"], r["seed"]): r["accuracy"] for r in data["runs"] if r["task"] == "recall" and r["pairs"] == pairs}
    seeds = sorted({s for (_, s) in acc})
    return mean_se(acc[(a, s)] - acc[(b, s)] for s in seeds if (a, s) in acc and (b, s) in acc)


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per architecture: parameters, final loss, seconds per step; the paired gaps and convergence ratios the claims
    use; recall accuracy against pairs; the ordering at the second learning rate."""
    out: dict[str, Any] = {"archs": {}}
    for a in ARCHS:
        runs = _text_runs(data, a)
        checked = _text_runs(data, a, data["lr_check"])
        out["archs"][a] = {
            "parameters": runs[0]["parameters"],
            "val_loss": mean_se(r["val_loss"] for r in runs),
            "seconds_per_step": float(np.median([r["seconds_per_step"] for r in runs])),
            "val_loss_lr_check": checked[0]["val_loss"] if checked else math.nan,
            "recall": recall_table(data, a)}
    base = out["archs"]["transformer"]
    for a in ARCHS[1:]:
        out["archs"][a]["time_ratio"] = out["archs"][a]["seconds_per_step"] / base["seconds_per_step"]
        out["archs"][a]["param_ratio"] = out["archs"][a]["parameters"] / base["parameters"]
    out["gap_quad_tfm"] = paired_gap(data, "flash-quad-post", "transformer")
    out["gap_quad_pre_tfm"] = paired_gap(data, "flash-quad-pre", "transformer")
    out["gap_flash_quad"] = paired_gap(data, "flash", "flash-quad-post")
    out["steps_ratio"] = convergence_ratio(data, "flash-quad-post", "transformer")
    out["time_ratio_to_target"] = convergence_ratio(data, "flash-quad-post", "transformer", axis=1)
    out["steps_ratio_flash"] = convergence_ratio(data, "flash", "transformer")
    top = data["pairs"][-1]
    out["top_pairs"] = top
    out["recall_gap_quad_tfm"] = _recall_gap(data, "flash-quad-post", "transformer", top)
    out["recall_gap_flash_quad"] = _recall_gap(data, "flash", "flash-quad-post", top)
    check = {a: out["archs"][a]["val_loss_lr_check"] for a in ARCHS}
    main = {a: out["archs"][a]["val_loss"][0] for a in ARCHS}
    out["order"] = sorted(ARCHS, key=main.__getitem__)
    out["order_lr_check"] = sorted(ARCHS, key=check.__getitem__)
    return out


SOURCE = "Su 2022, kexue.fm/archives/8934 (after Hua et al. 2022)"
COMMENTS = "Su 2022, kexue.fm/archives/8934, readers' comments (GAU/FLASH 20k steps where a Transformer takes 8k)"


def loss_gap(data: dict[str, Any], a: str, b: str) -> Estimate:
    """val_loss(a) - val_loss(b) at the main learning rate, paired by seed (a seed gives both the same batches)."""
    ra = {r["seed"]: r["val_loss"] for r in _text_runs(data, a)}
    rb = {r["seed"]: r["val_loss"] for r in _text_runs(data, b)}
    seeds = sorted(set(ra) & set(rb))
    return paired_estimate([ra[s] for s in seeds], [rb[s] for s in seeds])


def recall_gap(data: dict[str, Any], a: str, b: str, pairs: int) -> Estimate:
    """accuracy(a) - accuracy(b) at ``pairs``, paired by seed (same batches and the same held-out sequences)."""
    acc = {(r["arch"], r["seed"]): r["accuracy"] for r in data["runs"] if r["task"] == "recall" and r["pairs"] == pairs}
    seeds = sorted(s for (arch, s) in acc if arch == a and (b, s) in acc)
    return paired_estimate([acc[(a, s)] for s in seeds], [acc[(b, s)] for s in seeds])


def steps_ratio(data: dict[str, Any], a: str, b: str) -> Estimate:
    """Per seed, steps for ``a`` to reach the loss both end at over the same for ``b`` (:func:`convergence_ratio`),
    as a mean over seeds."""
    ra = {r["seed"]: r["curve"] for r in _text_runs(data, a)}
    rb = {r["seed"]: r["curve"] for r in _text_runs(data, b)}
    ratios = []
    for seed in sorted(set(ra) & set(rb)):
        target = max(ra[seed][-1][2], rb[seed][-1][2])
        ratios.append(steps_to_reach(ra[seed], target) / steps_to_reach(rb[seed], target))
    return mean_estimate(ratios, "seeds")


def lr_check_gap(data: dict[str, Any], a: str, b: str) -> dict[str, float]:
    """val_loss(a) - val_loss(b) of the seed run at both learning rates: at the main one and at lr_check (NaN when
    that seed was not run at lr_check)."""
    seed = min(r["seed"] for r in _text_runs(data, a, data["lr_check"])) if _text_runs(data, a, data["lr_check"]) else None
    def at(arch: str, lr: float) -> float:
        return next((r["val_loss"] for r in _text_runs(data, arch, lr) if r["seed"] == seed), math.nan)
    return {"seed": math.nan if seed is None else float(seed), "main": at(a, data["lr"]) - at(b, data["lr"]),
            "check": at(a, data["lr_check"]) - at(b, data["lr_check"])}


def lr_words(data: dict[str, Any], a: str, b: str) -> str:
    """'at one peak learning rate, 0.003, for every architecture; at 0.01 (seed 0 only) the gap is +0.018 (+0.068
    at 0.003 for that seed)': what the second learning rate says of a loss gap."""
    g = lr_check_gap(data, a, b)
    head = f"at one peak learning rate, {data['lr']:g}, for every architecture"
    if not math.isfinite(g["check"]):
        return head
    flip = " (the order flips)" if (g["check"] > 0) != (g["main"] > 0) else ""
    return (f"{head}; at {data['lr_check']:g} (seed {g['seed']:.0f} only, no error estimate) the gap is "
            f"{g['check']:+.3f}{flip}, against {g['main']:+.3f} at {data['lr']:g} for that seed")


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """FLASH-Quad against Transformer++, FLASH against FLASH-Quad, and the comments' slower convergence; every
    difference paired by seed, judged by its Student-t interval."""
    s = summary(data)
    top = s["top_pairs"]
    loss_what, acc_what = "the paired loss difference", "the paired accuracy difference"
    ratio = steps_ratio(data, "flash-quad-post", "transformer")
    gap_flash = loss_gap(data, "flash", "flash-quad-post")
    quad = s["archs"]["flash-quad-post"]["val_loss"][0]
    return [
        Claim("flashquad-beats-transformer",
              f"FLASH-Quad (post-norm GAU) reaches a lower validation loss than Transformer++ of equal parameters: "
              f"loss(FLASH-Quad) - loss(Transformer++) < 0 ({lr_words(data, 'flash-quad-post', 'transformer')}; "
              f"{label})",
              SOURCE, predicted=0.0, kind="below", unit="nats/byte",
              **estimate_fields(loss_gap(data, "flash-quad-post", "transformer"), loss_what, sided="one")),
        Claim("flashquad-beats-transformer-recall",
              f"FLASH-Quad recalls at least as well as Transformer++ with {top} pairs: accuracy(Transformer++) - "
              f"accuracy(FLASH-Quad) <= 0 ({label})",
              SOURCE, predicted=0.0, kind="upper_bound", unit="accuracy (fraction)",
              **estimate_fields(recall_gap(data, "transformer", "flash-quad-post", top), acc_what, sided="one")),
        Claim("flash-matches-flashquad",
              f"FLASH is about as good as FLASH-Quad: loss(FLASH) - loss(FLASH-Quad) = 0 ('about as good' states no "
              f"size, so the interval decides; the gap is {100 * gap_flash.value / quad:.1f}% of the loss; "
              f"{lr_words(data, 'flash', 'flash-quad-post')}; {label})",
              SOURCE, predicted=0.0, unit="nats/byte", **estimate_fields(gap_flash, loss_what)),
        Claim("flash-matches-flashquad-recall",
              f"FLASH recalls as well as FLASH-Quad with {top} pairs: accuracy(FLASH-Quad) - accuracy(FLASH) <= 0 "
              f"({label})",
              SOURCE, predicted=0.0, kind="upper_bound", unit="accuracy drop (fraction)",
              **estimate_fields(recall_gap(data, "flash-quad-post", "flash", top), acc_what, sided="one")),
        Claim("gau-converges-slower-direction",
              f"GAU converges slower than the Transformer: FLASH-Quad's ratio of steps to the loss both reach is "
              f"above 1 ({label})",
              COMMENTS, predicted=1.0, kind="above", unit="ratio of steps",
              **estimate_fields(ratio, "the per-seed ratio of steps (evaluations interpolated)", sided="one")),
        Claim("gau-converges-slower",
              f"GAU converges slower than the Transformer: FLASH-Quad needs 20k/8k = 2.5 times the steps to reach "
              f"the loss both reach ({label})",
              COMMENTS, predicted=2.5, unit="ratio of steps",
              **estimate_fields(ratio, "the per-seed ratio of steps (evaluations interpolated)")),
    ]


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
