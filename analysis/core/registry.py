"""The registry of experiments, found by discovery: every module of a study's ``experiments`` package
(``analysis/studies/<chapter>/experiments/``) is one, named by its module name with ``-`` for ``_``; each follows the protocol of :mod:`analysis.core.trials` and :mod:`analysis.core.experiment`.

``EXPERIMENTS`` maps each experiment's command-line name to its module.
:func:`run_and_record` runs one at a scale and saves its record with provenance
and fingerprints; :func:`staleness` says how a record differs from what today's
code and config would produce.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from analysis.core.experiment import config_dict, config_for
from analysis.core.fingerprint import code_fingerprint, config_differences, config_fingerprint
from analysis.core.results import Record, find_record, record_path
from analysis.core.size import validate_size
from analysis.core.trials import Experiment, assemble_record, protocol_problems


def _discover() -> dict[str, str]:
    """Experiment name -> module name, from every study's experiments package."""
    found: dict[str, str] = {}
    studies = Path(__file__).resolve().parent.parent / "studies"
    for folder in sorted(p for p in studies.glob("*/experiments") if p.is_dir()):
        for m in pkgutil.iter_modules([str(folder)]):
            name = m.name.replace("_", "-")
            if m.name.startswith("_"):
                continue
            if name in found:
                raise RuntimeError(f"experiment {name!r} is defined twice: {found[name]} and in {folder}")
            found[name] = f"analysis.studies.{folder.parent.name}.experiments.{m.name}"
    return dict(sorted(found.items()))


MODULES = _discover()
NAMES = tuple(MODULES)


class _Registry(Mapping[str, ModuleType]):
    """Experiment name -> module (:data:`MODULES`), imported and checked against the protocol on first use, so that
    importing one experiment does not import them all."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in NAMES:
            raise KeyError(name)

        module = importlib.import_module(MODULES[name])
        problems = protocol_problems(module) + ([] if module.NAME == name else [f"NAME is {module.NAME!r}"])
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


def current_record(name: str, size: str, directory: str | None = None) -> tuple[Record | None, list[str]]:
    """The record of ``name`` at ``size`` (None when there is none) and its staleness reasons."""
    record = find_record(name, size, directory)
    return record, ([] if record is None else staleness(record))
