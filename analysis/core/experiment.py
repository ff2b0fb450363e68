"""The experiment protocol that every experiment and benchmark module follows, and the helpers they share.

A module of :mod:`analysis.core.registry` (found by discovery) defines

* ``NAME``: its command-line name, and a module docstring whose first line says what it measures;
* ``Config``: a frozen dataclass with a ``seed: int`` field (and ``corpus_file`` where it trains on text);
* ``CONFIGS``: one ``Config`` per scale (smoke, cpu, gpu);
* ``DATA_VERSION``: an integer raised whenever the layout of its assembled data changes;
* its work, as independent trials (:mod:`analysis.core.trials`): ``trials(cfg)``, ``run_trial(cfg, trial, device)``
  annotated to return a dataclass of its own (or a union of them, one per kind of trial: :mod:`analysis.core.typed`),
  ``assemble(cfg, results, device_type)``, which receives those typed results and returns plain data, and
  ``trial_plan(cfg, trial)``; or, where the work is one sequential
  measurement on the CPU (a benchmark whose points share one process and its drift, sampling from one stream),
  ``run(cfg)`` (plain data, every random draw derived from ``cfg.seed``) and ``plan(cfg)``, which the protocol
  treats as one trial;
* ``claims(data, label) -> list[Claim]``: the chapter's claims, computed from the data alone;
* optionally ``summary(data) -> dict``: the numbers and decisions a chapter states in its prose.

Plans list :class:`Workload` items, costed by :mod:`analysis.compute.plan` and :mod:`analysis.compute.campaign` (Workload is
defined here, so that a record's code fingerprint does not follow the costing code). The runner
(:mod:`analysis.core.runner`) picks the device and seeds torch, numpy and random from the trial before it runs.
``analysis.core.trials.protocol_problems`` checks every registered module against this list
(``tests/test_protocol.py``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from analysis.core.size import validate_size
from analysis.tasks.data import file_corpus, stdlib_corpus

SEED_STRIDE = 10_000  # run seed = cfg.seed * SEED_STRIDE + replicate index: seed 0 keeps the replicate indices


@dataclass(frozen=True)
class Workload:
    """One kind of work: a model trained ``count`` x ``steps`` steps at (batch, ctx), or a counted amount of FLOPs."""

    label: str
    model: Any = None  # a ModelConfig; None for counted work
    batch: int = 1
    ctx: int = 1
    steps: int = 0  # training steps (forward + backward + AdamW)
    eval_batches: int = 0  # forward-only batches of (batch, ctx)
    count: int = 1
    flops: float = 0.0  # counted work, when model is None
    memory_bytes: float = 0.0
    overhead_s: float = 0.0  # seconds no count captures (compiling kernels and graphs), added to any estimate as is

    def __post_init__(self) -> None:
        if self.count < 1 or self.batch < 1 or self.ctx < 1 or self.steps < 0 or self.eval_batches < 0:
            raise ValueError(f"workload {self.label!r}: count, batch, ctx must be >= 1 and steps, eval_batches >= 0")
        if self.model is None and not (self.flops >= 0 and math.isfinite(self.flops)):
            raise ValueError(f"workload {self.label!r}: flops must be finite and >= 0")
        if not (self.overhead_s >= 0 and math.isfinite(self.overhead_s)):
            raise ValueError(f"workload {self.label!r}: overhead_s must be finite and >= 0")


def config_for(module: ModuleType, size: str, **overrides: Any) -> Any:
    """``module.CONFIGS[scale]`` with the given top-level fields replaced (None leaves a field as it is)."""
    cfg = module.CONFIGS[validate_size(size)]
    fields = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(k for k, v in overrides.items() if v is not None and k not in fields)
    if unknown:
        raise ValueError(f"{', '.join(k.replace('_', '-') for k in unknown)} does not apply to experiment {module.NAME!r}")
    return dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})


def config_dict(cfg: Any) -> dict[str, Any]:
    """Plain data of a config dataclass, for a results record."""
    return dataclasses.asdict(cfg)


def run_seed(cfg: Any, replicate: int) -> int:
    """The seed of replicate ``replicate`` of a run configured with ``cfg.seed``: seed * 10000 + replicate."""
    if not 0 <= replicate < SEED_STRIDE:
        raise ValueError(f"replicate must be in [0, {SEED_STRIDE}); got {replicate}")
    if cfg.seed < 0:
        raise ValueError(f"seed must be >= 0; got {cfg.seed}")
    return int(cfg.seed) * SEED_STRIDE + int(replicate)


def corpus_of(cfg: Any) -> Any:
    """The training corpus of a config: ``cfg.corpus_file`` when set, else the standard-library corpus."""

    path = getattr(cfg, "corpus_file", None)
    return file_corpus(path) if path else stdlib_corpus()


def mean_se(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard error s / sqrt(m) of m values (SE 0 for one value; NaN, NaN for none)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se
