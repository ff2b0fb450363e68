"""FLASH's local and global attention, each alone and together, trained side by side at n = 512 in eight chunks.

Source 001 (Su 2022, kexue.fm/archives/8934) reports the FLASH paper's ablation: "local attention is relatively more
important than global attention, and the mix works best" (局部注意力比全局注意力更重要,而混合式的效果最好). This
experiment trains the post-norm FLASH decoder (relu² scaled 1/(c s) inside chunks of c = n/8 positions, RoPE, linear
attention across chunks) in three arms on the same initial weights and batches per seed
(:mod:`analysis.models.flash_parts`): both parts (FLASH), the local part alone, and linear attention alone with every
query over every earlier key (FLASH's global term alone would leave a position blind to its own chunk); and a fourth
arm, FLASH-Quad (relu² over all earlier keys), re-decides gau-quality's "FLASH is about as good as FLASH-Quad" where
a window holds eight chunks rather than four. The sizes, budget and seeds are gau-ablations'; the gaps are paired by
seed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from analysis.core.experiment import Workload, corpus_of
from analysis.core.paired import VariantRun, paired_summary, paired_trials, train_variant
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim, estimate_fields
from analysis.models.flash_parts import PARTS, with_parts
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.studies.gau_trained.experiments.gau_ablations import CONFIGS as ABLATION_CONFIGS, Config

NAME = "flash-parts"
PRIORITY = 57  # beside gau-ablations and gau-heads
DATA_VERSION = 1
VARIANTS = (*PARTS, "quad")  # mixed (FLASH) first: the base of every gap; quad: FLASH-Quad, no chunks
CHUNKS = 8  # chunks per training window: c = ctx / 8
LABELS = {"mixed": "local + global (FLASH)", "local": "local only (relu² inside chunks)",
          "global": "global only (linear attention, per token)", "quad": "FLASH-Quad (relu² over all keys)"}
PAIRS = (("local", "global"),)  # loss(local) - loss(global): which part matters more
SOURCE = "Su 2022, kexue.fm/archives/8934"

# gau-ablations' sizes, budgets and seeds: four arms of 4 seeds, 16 trials of about 2 minutes on one thread.
CONFIGS: dict[str, Config] = dict(ABLATION_CONFIGS)


def chunk_of(cfg: Config) -> int:
    """The chunk length c = ctx / CHUNKS (at least 1)."""
    return max(1, cfg.ctx // CHUNKS)


def model_config(cfg: Config) -> ModelConfig:
    """The post-norm FLASH decoder every arm starts from (relu² / (c s) in chunks of ctx / 8, RoPE)."""
    return ModelConfig(vocab=256, d=cfg.d, e=cfg.e, s=cfg.s, layers=cfg.layers, block="flash", residual="post",
                       gau_norm="relu2_ns", positions="rope", ctx=cfg.ctx, chunk=chunk_of(cfg))


def build(cfg: Config, variant: str) -> LanguageModel:
    """FLASH with its attention cut to ``variant``'s parts, on the weights FLASH itself starts from; for ``quad``,
    FLASH-Quad (the GAU without chunks), whose seeded weights are FLASH's too (the scale-offsets of Q and K are
    initialised to constants, so the random draws are the same and only FLASH's two extra scale-offsets differ)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if variant == "quad":
        return LanguageModel(dataclasses.replace(model_config(cfg), block="gau"))
    model = LanguageModel(model_config(cfg))
    with_parts(model, variant)
    return model


def trials(cfg: Config) -> list[Trial]:
    """Every (variant, seed), seeded with run_seed(cfg, seed): one seed gives every variant the same batches."""
    return paired_trials(cfg, VARIANTS)


@dataclass(frozen=True)
class ChunkRun(VariantRun):
    """One variant trained, and FLASH's chunk length."""

    chunk: int


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> ChunkRun:
    """One variant trained: validation loss along training and at the end (mean over the fixed windows)."""
    run, _ = train_variant(cfg, trial, build, device)
    return ChunkRun(**fields_of(run), chunk=chunk_of(cfg))


def assemble(cfg: Config, results: list[ChunkRun], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the corpus and the sizes that matter to the claims."""
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "ctx": cfg.ctx, "s": cfg.s,
            "chunk": chunk_of(cfg), "steps": cfg.steps, "runs": [fields_of(r) for r in results]}


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The model a trial trains and its validation passes: FLASH for the mixed and local arms; for the global arm,
    whose attention is a masked n x n product, and for FLASH-Quad, the GAU of the same sizes."""
    evals = (cfg.evals + 1) * -(-cfg.eval_windows // cfg.batch)
    variant = trial.params["variant"]
    model = model_config(cfg)
    if variant in ("global", "quad"):
        model = dataclasses.replace(model, block="gau")
    return [Workload(f"FLASH, {LABELS[variant]}", model, cfg.batch, cfg.ctx, cfg.steps, evals)]


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Per arm: mean final loss and parameters; loss(FLASH) - loss(arm) and loss(local) - loss(global), paired by
    seed, at the end and at the previous validation point; diverged runs."""
    return paired_summary(data, VARIANTS, LABELS, PAIRS)


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The mix beats each part alone, and local beats global: each paired loss difference < 0 (one-sided t); FLASH
    is about as good as FLASH-Quad with several chunks: loss(FLASH) - loss(FLASH-Quad) = 0 (two-sided t)."""
    s = summary(data)
    n, c, what, unit = data["ctx"], data["chunk"], "the paired loss difference", "nats/byte"
    where = f"$n$ = {n}, chunks of {c}"
    return [
        Claim("flash-mix-beats-local",
              f"FLASH's mix of local and global attention reaches a lower validation loss than its local part alone "
              f"({where}): loss(mixed) − loss(local) < 0 ({label})", SOURCE, predicted=0.0, kind="below", unit=unit,
              **estimate_fields(s["gaps"]["local"]["end"], what, sided="one")),
        Claim("flash-mix-beats-global",
              f"FLASH's mix of local and global attention reaches a lower validation loss than global linear "
              f"attention alone ({where}): loss(mixed) − loss(global) < 0 ({label})", SOURCE, predicted=0.0,
              kind="below", unit=unit, **estimate_fields(s["gaps"]["global"]["end"], what, sided="one")),
        Claim("flash-local-beats-global",
              f"In FLASH, local attention matters more than global: the local part alone reaches a lower validation "
              f"loss than global linear attention alone ({where}): loss(local) − loss(global) < 0 ({label})",
              SOURCE, predicted=0.0, kind="below", unit=unit,
              **estimate_fields(s["pair_gaps"]["local:global"]["end"], what, sided="one")),
        Claim("flash-matches-flashquad-chunks",
              f"FLASH is about as good as FLASH-Quad when a window holds several chunks ({where}): loss(FLASH) − "
              f"loss(FLASH-Quad) = 0 ('about as good' states no size, so the interval decides; {label})", SOURCE,
              predicted=0.0, unit=unit, **estimate_fields(s["gaps"]["quad"]["end"], what),
              # the smallest gap the source calls better: the mix's over its local part
              effect=abs(s["gaps"]["local"]["end"].value)),
    ]
