"""The registry of experiments; each module follows the protocol of :mod:`analysis.experiments.base`.

``EXPERIMENTS`` maps each experiment's command-line name to its module.
:func:`run_and_record` runs one at a scale and saves its record with provenance
and fingerprints; :func:`staleness` says how a record differs from what today's
code and config would produce.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from analysis.experiments.base import config_dict, config_for, conformance_problems
from analysis.fingerprint import (
    code_fingerprint,
    config_differences,
    config_fingerprint,
)
from analysis.results import Record, find_record, provenance, save_record
from analysis.scale import validate_scale

NAMES = ("entropy-bound", "entropy-lm", "softmax-scale-checks", "softmax-scale-mc", "softmax-scale-train", "gau-init",
         "coord-check", "deep-gau", "attention-basics", "norms-depth", "ffn-basics", "flash-counts", "flash-bench", "widening",
         "softmax-scale-recall", "gau-quality", "gau-length")


class _Registry(Mapping[str, ModuleType]):
    """Experiment name -> module (analysis.experiments.<name with _>), imported and checked against the protocol on
    first use, so that importing one experiment does not import them all."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)
        module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
        problems = conformance_problems(module) + ([] if module.NAME == name else [f"NAME is {module.NAME!r}"])
        if problems:
            raise TypeError(f"{module.__name__} does not follow the experiment protocol: {'; '.join(problems)}")
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)


EXPERIMENTS: Mapping[str, ModuleType] = _Registry()


def get_experiment(name: str) -> ModuleType:
    """The experiment module called ``name``; ValueError listing the known names otherwise."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {', '.join(sorted(EXPERIMENTS))}; got {name!r}")
    return EXPERIMENTS[name]


def fingerprint(module: ModuleType, cfg: Any) -> dict[str, Any]:
    """What a record stores of what produced it: config and code fingerprints and the data version."""
    return {"config": config_fingerprint(config_dict(cfg)), "code": code_fingerprint(module.__name__),
            "data_version": module.DATA_VERSION}


def run_and_record(name: str, scale: str, directory: str | None = None, progress: bool = True,
                   **overrides: Any) -> tuple[Record, str]:
    """Run experiment ``name`` at ``scale`` and save its record; returns (record, path)."""
    module = get_experiment(name)
    cfg = config_for(module, validate_scale(scale), **overrides)
    start = time.perf_counter()
    data = module.run(cfg, progress=progress)
    record = Record(name, scale, cfg.seed, config_dict(cfg), data, provenance(time.perf_counter() - start),
                    fingerprint(module, cfg))
    return record, str(save_record(record, directory))


def staleness(record: Record) -> list[str]:
    """Why ``record`` may not be what today's code and config at its scale produce (empty when it is current)."""
    if record.fingerprint is None:
        return ["recorded before records carried fingerprints"]
    module = get_experiment(record.experiment)
    cfg = config_for(module, record.scale, seed=record.seed, corpus_file=record.config.get("corpus_file"))
    today = fingerprint(module, cfg)
    reasons = []
    if record.fingerprint.get("config") != today["config"]:
        diff = config_differences(record.config, config_dict(cfg))
        reasons.append("config differs (" + "; ".join(diff[:4]) + ("; ..." if len(diff) > 4 else "") + ")")
    if record.fingerprint.get("code") != today["code"]:
        reasons.append("the experiment's code has changed since")
    if record.fingerprint.get("data_version") != today["data_version"]:
        reasons.append(f"data version {record.fingerprint.get('data_version')}, today {today['data_version']}")
    return reasons


def current_record(name: str, scale: str, directory: str | None = None) -> tuple[Record | None, list[str]]:
    """The record of ``name`` at ``scale`` (None when there is none) and its staleness reasons."""
    record = find_record(name, scale, directory)
    return record, ([] if record is None else staleness(record))
