"""One module per experiment: a config per scale, a run() returning plain data, recorded results.

``EXPERIMENTS`` maps each experiment's command-line name to its module; every
module defines ``NAME``, ``CONFIGS`` (smoke / cpu / gpu) and
``run(config, progress) -> dict``.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import dataclasses

from analysis.experiments import attention_basics, deep_gau, ffn_basics, norms_depth, entropy_lm, gau_init, softmax_scale_mc, softmax_scale_train
from analysis.results import Record, provenance, save_record
from analysis.scale import validate_scale

EXPERIMENTS: dict[str, ModuleType] = {m.NAME: m for m in (entropy_lm, softmax_scale_mc, softmax_scale_train, gau_init, deep_gau,
                                                  attention_basics, norms_depth, ffn_basics)}


def get_experiment(name: str) -> ModuleType:
    """The experiment module called ``name``; ValueError listing the known names otherwise."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {', '.join(sorted(EXPERIMENTS))}; got {name!r}")
    return EXPERIMENTS[name]


def run_and_record(name: str, scale: str, directory: str | None = None, progress: bool = True, **overrides: Any) -> tuple[Record, str]:
    """Run experiment ``name`` at ``scale`` and save its record; returns (record, path)."""
    module = get_experiment(name)
    fields = {f.name for f in dataclasses.fields(module.Config)}
    for key, value in overrides.items():
        if value is not None and key not in fields:
            raise ValueError(f"{key.replace('_', '-')} does not apply to experiment {name!r}")
    config = module.config_for(validate_scale(scale), **overrides)
    start = time.perf_counter()
    data = module.run(config, progress=progress)
    record = Record(name, scale, config.seed, module.config_dict(config), data, provenance(time.perf_counter() - start))
    return record, str(save_record(record, directory))
