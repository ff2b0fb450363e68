"""One GAU head against several at the same parameters, trained side by side at n = 512.

Source 001 (Su 2022, kexue.fm/archives/8934) says a GAU needs one head: "a GAU with only one head reaches the same or
even better results" (只要一个头的GAU,就可以达到相同甚至更好的效果), so the h n^2 matrices of multi-head attention are
saved. The source compares GAU with multi-head attention, where the whole layer changes. This experiment isolates
the head count: the post-norm GAU decoder of ``gau-ablations``' base (relu² scaled 1/(n s), RoPE, the same sizes,
seeds and batches) against the same decoder whose key Z and value V are split into several heads
(:class:`analysis.models.gau_heads.MultiHeadGAU`), with the same parameters, initial weights and FLOPs. Every
variant trains on the same batches per seed, so the gaps are paired by seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from analysis.core.experiment import Workload, corpus_of
from analysis.core.paired import VariantRun, paired_summary, paired_trials, train_variant
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.gau_heads import with_heads
from analysis.models.lm import LanguageModel
from analysis.studies.gau_trained.experiments.gau_ablations import CONFIGS as ABLATION_CONFIGS, Config, model_config

NAME = "gau-heads"
PRIORITY = 56  # beside gau-ablations
DATA_VERSION = 1
HEADS = {"heads1": 1, "heads4": 4}
VARIANTS = tuple(HEADS)
SOURCE = "Su 2022, kexue.fm/archives/8934"

# The sizes, budgets and seeds of gau-ablations (its base is this experiment's one-head arm): two arms of 4 seeds,
# 8 trials of about 4 minutes on one thread.
CONFIGS: dict[str, Config] = dict(ABLATION_CONFIGS)


def label(variant: str, s: int) -> str:
    """The variant in words, with the key size each head gets (s / h)."""
    h = HEADS[variant]
    return "1 head (GAU)" if h == 1 else f"{h} heads, key size {s} split {h} ways"


def build(cfg: Config, variant: str) -> LanguageModel:
    """The one-head GAU decoder of gau-ablations' base, with its GAU layers given ``HEADS[variant]`` heads on the
    same initial weights."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    model = LanguageModel(model_config(cfg, "base"))
    with_heads(model, HEADS[variant])
    return model


def trials(cfg: Config) -> list[Trial]:
    """Every (variant, seed), seeded with run_seed(cfg, seed): one seed gives every variant the same batches."""
    return paired_trials(cfg, VARIANTS)


@dataclass(frozen=True)
class HeadsRun(VariantRun):
    """One variant trained, and its number of heads."""

    heads: int


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> HeadsRun:
    """One variant trained: validation loss along training and at the end (mean over the fixed windows)."""
    run, _ = train_variant(cfg, trial, build, device)
    return HeadsRun(**fields_of(run), heads=HEADS[trial.params["variant"]])


def assemble(cfg: Config, results: list[HeadsRun], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the corpus and the sizes that matter to the claims."""
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "ctx": cfg.ctx, "s": cfg.s,
            "steps": cfg.steps, "runs": [fields_of(r) for r in results]}


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The model a trial trains and its validation passes (heads change neither parameters nor FLOPs)."""
    evals = (cfg.evals + 1) * -(-cfg.eval_windows // cfg.batch)
    return [Workload(f"GAU, {label(trial.params['variant'], cfg.s)}", model_config(cfg, "base"), cfg.batch, cfg.ctx,
                     cfg.steps, evals)]


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per variant: mean final loss and parameters; loss(1 head) - loss(variant) paired by seed at the end and at the
    previous validation point (how the gap moved over the last part of training); diverged runs."""
    return paired_summary(data, VARIANTS, {v: label(v, data["s"]) for v in VARIANTS})


def last_interval_gain(data: dict[str, Any]) -> float:
    """Mean loss the 1-head model gains over its last validation interval: 'not worse' must exclude a gap worth that
    much training (the claims' effect)."""
    runs = [r for r in data["runs"] if r["variant"] == VARIANTS[0] and not r.get("diverged_at")]
    return float(sum(r["curve"][-2][1] - r["curve"][-1][1] for r in runs) / len(runs))


def claims(data: dict[str, Any], label_: str) -> list[Claim]:
    """One head is not worse than several at the same parameters: loss(1 head) - loss(h heads) <= 0 within its
    one-sided interval, paired by seed."""
    s = summary(data)
    out = []
    for v in VARIANTS[1:]:
        h = HEADS[v]
        out.append(Claim(f"one-head-not-worse-{h}",
                         f"One GAU head reaches the same or a better validation loss than {h} heads with the same "
                         f"parameters (key size {data['s']} split {h} ways, $n$ = {data['ctx']}): loss(1 head) − "
                         f"loss({h} heads) ≤ 0 within its one-sided interval ({label_})", SOURCE, predicted=0.0,
                         kind="upper_bound", unit="nats/byte", effect=last_interval_gain(data),
                         **estimate_fields(s["gaps"][v]["end"], "the paired loss difference", sided="one")))
    return out
