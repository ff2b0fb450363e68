"""Paired variants: one language model trained in several variants on the same batches per seed, and the paired
differences of their final validation losses.

An experiment built on this module names its variants (the first is the base), a label for each and how to build
the model of a variant. Every (variant, seed) is one trial seeded with ``run_seed(cfg, seed)``, so one seed gives
every variant the same batches (and, where the experiment builds variants from one model's weights, the same
initial values). Each gap is loss(base) - loss(variant) over the seeds both finished, with a Student-t interval on
the seeds' differences (:func:`analysis.core.stats.paired_estimate`), at the end of training and at the validation point
before it, so a reader sees whether the gap was still moving.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import corpus_of, run_seed
from analysis.core.stats import Estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.models.lm import LanguageModel
from analysis.training.train import TrainConfig, token_stats, train_lm


def _variants(variants: Sequence[str]) -> tuple[str, ...]:
    out = tuple(variants)
    if len(out) < 2 or len(set(out)) != len(out):
        raise ValueError(f"variants must be at least two distinct names (a base and one variant); got {list(out)}")
    return out


def paired_trials(cfg: Any, variants: Sequence[str]) -> list[Trial]:
    """Every (variant, seed) of ``cfg.seeds``, seeded with run_seed(cfg, seed): one seed, the same batches."""
    return [Trial(f"{v}.seed{seed}", run_seed(cfg, seed), {"variant": v, "seed": seed})
            for v in _variants(variants) for seed in cfg.seeds]


@dataclass(frozen=True)
class VariantRun:
    """One variant trained for one seed: its parameters, the mean validation loss at the end, [step, loss] along
    training and the step where it diverged (None when it did not)."""

    variant: str
    seed: int
    parameters: int
    val_loss: float
    curve: list[list[float]]
    diverged_at: int | None


def train_variant(cfg: Any, trial: Trial, build: Callable[[Any, str], LanguageModel],
                  device: torch.device) -> tuple[VariantRun, LanguageModel]:
    """One variant trained (AdamW, warm-up over the first 5% of ``cfg.steps``): its parameters, the mean validation
    loss over ``cfg.eval_windows`` fixed windows at the end and at ``cfg.evals`` points along training; and the
    trained model."""
    variant, seed = trial.params["variant"], trial.params["seed"]
    corpus = corpus_of(cfg)
    model = build(cfg, variant)
    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
                                                    warmup=max(1, cfg.steps // 20), seed=run_seed(cfg, seed)),
                   cfg.ctx, device, progress=False, val_tokens=corpus.val, eval_every=max(1, cfg.steps // cfg.evals),
                   eval_windows=cfg.eval_windows)
    final = token_stats(model, corpus.val, cfg.ctx, cfg.eval_windows, device).loss
    return VariantRun(variant, seed, model.num_parameters(), float(np.mean(final)),
                      [list(p) for p in zip(log.val_steps, log.val_loss)], log.diverged_at), model


def paired_gap(data: dict[str, Any], variant: str, against: str, point: int | None = None) -> Estimate:
    """val_loss(variant) - val_loss(against) paired by seed over the seeds both finished (nats/byte), at validation
    point ``point`` of the curves when given, else at the end."""
    def loss(r: dict[str, Any]) -> float:
        return float(r["val_loss"] if point is None else r["curve"][point][1])
    by = {(r["variant"], r["seed"]): loss(r) for r in data["runs"] if r["diverged_at"] is None}
    seeds = sorted(s for (v, s) in by if v == variant and (against, s) in by)
    if not seeds:
        raise ValueError(f"no seed finished both {variant!r} and {against!r}")
    return paired_estimate([by[(variant, s)] for s in seeds], [by[(against, s)] for s in seeds])


def paired_summary(data: dict[str, Any], variants: Sequence[str], labels: Mapping[str, str],
                   pairs: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """Per variant: label, mean final loss over its finished seeds and parameters; per variant after the base,
    loss(base) - loss(variant) paired by seed at the end and at the previous validation point, and how it moved
    (``gaps``); the same for each (a, b) of ``pairs`` as loss(a) - loss(b) (``pair_gaps["a:b"]``); diverged runs."""
    variants = _variants(variants)
    out: dict[str, Any] = {"variants": {}, "gaps": {}, "pair_gaps": {},
                           "diverged": [r for r in data["runs"] if r["diverged_at"]]}
    for v in variants:
        runs = [r for r in data["runs"] if r["variant"] == v and r["diverged_at"] is None]
        if not runs:
            raise ValueError(f"variant {v!r} has no finished run")
        out["variants"][v] = {"label": labels[v], "val_loss": float(np.mean([r["val_loss"] for r in runs])),
                              "parameters": runs[0]["parameters"]}
    points = len(data["runs"][0]["curve"])
    previous_step = data["runs"][0]["curve"][points - 2][0] if points >= 2 else data["steps"]

    def moved(a: str, b: str) -> dict[str, Any]:
        end = paired_gap(data, a, b)
        before = paired_gap(data, a, b, point=points - 2) if points >= 2 else end
        return {"end": end, "previous": before, "drift": end.value - before.value, "previous_step": previous_step}

    for v in variants[1:]:
        out["gaps"][v] = moved(variants[0], v)
    for a, b in pairs:
        out["pair_gaps"][f"{a}:{b}"] = moved(a, b)
    return out
