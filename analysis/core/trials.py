"""An experiment as a list of independent trials, each stored as its own file, and its record assembled from them.

A trial is one unit of work that needs nothing from any other (a seed x a grid point). An experiment module
(:mod:`analysis.core.experiment` lists the rest of its protocol) declares

* ``trials(cfg) -> list[Trial]``: its trials, in the order its record lists them;
* ``run_trial(cfg, trial, device) -> dict``: one trial's plain data, every random draw derived from ``trial.seed``
  (the runner has already seeded torch, numpy and random with it);
* ``assemble(cfg, results, device_type) -> dict``: the record's data from the trials' results, in the order of
  ``trials(cfg)``, and the type of device they ran on ("cpu", "cuda");
* ``trial_plan(cfg, trial) -> list[Workload]``: the work of one trial; ``plan(cfg)`` is their concatenation.

A module without ``trials`` is one trial (key ``all``) that calls its ``run(cfg)``: :class:`Experiment` adapts it.

Each finished trial is written at once, atomically, to ``results/trials/<experiment>.<scale>/<key>.<id>.json``,
where ``id`` hashes the experiment, its config, its data version and the trial (:func:`trial_id`). A run killed at
any moment loses only the trials in flight; a trial made on another machine is taken in by copying its file. The
record ``results/<experiment>.<scale>.json`` is assembled from the trial files once all of them are there
(:func:`assemble_record`); until then the experiment is partial, "k of m trials".

A module may declare ``claim_trials(cfg) -> dict[claim key, list[trial key]]``: the trials each claim reads, in the
order a campaign should run them. A claim whose trials are all stored, by today's code and on one kind of device, is
decided from them before the record is complete (:func:`decided_claims`): its data are assembled from the stored
trials its decided claims read, and ``claims(data, label)`` must then give those claims exactly as the full record
would (``tests/test_protocol.py`` holds every declaring module to that at smoke scale).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from analysis.core.experiment import config_dict
from analysis.core.fingerprint import code_fingerprint, config_fingerprint
from analysis.core.results import (
    PROVENANCE_KEYS,
    Record,
    ResultsFileError,
    device_tag,
    from_jsonable,
    results_dir,
    save_record,
    to_jsonable,
    write_json_atomic,
)

from analysis.core.size import SIZES, validate_size
from analysis.core.trial import Trial
from analysis.core.typed import from_data, result_type
from analysis.tasks.data import prepare_corpus


TRIAL_SCHEMA = "analysis.trial/1"


def trial_id(experiment: str, config: Mapping[str, Any], data_version: int, trial: Trial) -> str:
    """SHA-256 (first 16 hex digits) of the experiment, its config, data version and the trial's key, seed, params."""
    doc = {"experiment": experiment, "config": to_jsonable(dict(config)), "data_version": data_version,
           "key": trial.key, "seed": trial.seed, "params": to_jsonable(dict(trial.params))}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Experiment:
    """An experiment module seen through the trial protocol (a module without ``trials`` is one trial)."""

    module: ModuleType

    @property
    def name(self) -> str:
        """The experiment's command-line name."""
        return str(self.module.NAME)

    @property
    def split(self) -> bool:
        """Whether the module declares its own trials (else it is one trial, ``all``)."""
        return hasattr(self.module, "trials")

    @cached_property
    def code(self) -> str:
        """The code fingerprint of the module and everything of the package it imports."""
        return code_fingerprint(self.module.__name__)

    def trials(self, cfg: Any) -> list[Trial]:
        """The trials of ``cfg``; their keys are unique."""
        if not self.split:
            return [Trial("all", int(cfg.seed))]
        out = list(self.module.trials(cfg))
        keys = [t.key for t in out]
        if len(set(keys)) != len(keys) or not out:
            raise ValueError(f"{self.name}: trials(cfg) must give at least one trial and distinct keys")
        return out

    def run_trial(self, cfg: Any, trial: Trial, device: Any) -> Any:
        """One trial's result: the dataclass ``run_trial`` is annotated to return, or plain data."""
        if not self.split:
            return dict(self.module.run(cfg))
        result = self.module.run_trial(cfg, trial, device)
        return result if self.result_type is not None else dict(result)

    @cached_property
    def result_type(self) -> type | None:
        """The dataclass of a trial's result (``run_trial``'s return annotation); None for plain data."""
        return result_type(self.module.run_trial) if self.split else None

    def assemble(self, cfg: Any, results: Sequence[Mapping[str, Any]], device_type: str) -> dict[str, Any]:
        """The record's data from the stored results of ``trials(cfg)``, in that order, run on ``device_type``; each
        rebuilt as the trial's result type first, where it has one."""
        if not self.split:
            (only,) = results
            return dict(only)
        rt = self.result_type
        typed = [from_data(rt, r, f"{self.name} result") for r in results] if rt is not None else list(results)
        return dict(self.module.assemble(cfg, typed, device_type))

    def trial_plan(self, cfg: Any, trial: Trial) -> list[Any]:
        """The workloads of one trial (all of ``plan(cfg)`` for a one-trial experiment)."""
        return list(self.module.plan(cfg) if not self.split else self.module.trial_plan(cfg, trial))

    def plan(self, cfg: Any) -> list[Any]:
        """Every trial's workloads, in trial order."""
        return [w for t in self.trials(cfg) for w in self.trial_plan(cfg, t)]

    def trial_id(self, cfg: Any, trial: Trial) -> str:
        """:func:`trial_id` of one trial under ``cfg``."""
        return trial_id(self.name, config_dict(cfg), int(self.module.DATA_VERSION), trial)


ONE_TRIAL = ("run", "plan")  # a module that is one trial
SPLIT = ("trials", "run_trial", "assemble", "trial_plan")  # a module split into trials


def protocol_problems(module: ModuleType) -> list[str]:
    """What ``module`` lacks of the experiment protocol (empty when it conforms)."""

    problems = [f"no {a}" for a in ("NAME", "Config", "CONFIGS", "DATA_VERSION", "claims") if not hasattr(module, a)]
    wanted = SPLIT if hasattr(module, "trials") else ONE_TRIAL
    problems += [f"no {a}" for a in wanted if not callable(getattr(module, a, None))]
    if problems:
        return problems
    if not (module.__doc__ or "").strip():
        problems.append("no module docstring")
    if hasattr(module, "trials") and result_type(module.run_trial) is None:
        problems.append("run_trial is not annotated to return a dataclass (or a union of them): its typed result")
    if not dataclasses.is_dataclass(module.Config):
        problems.append("Config is not a dataclass")
    elif "seed" not in {f.name for f in dataclasses.fields(module.Config)}:
        problems.append("Config has no seed field")
    if set(module.CONFIGS) != set(SIZES):
        problems.append(f"CONFIGS has scales {sorted(module.CONFIGS)}, not {sorted(SIZES)}")
    elif not all(isinstance(c, module.Config) for c in module.CONFIGS.values()):
        problems.append("a CONFIGS entry is not a Config")
    if not isinstance(module.DATA_VERSION, int) or module.DATA_VERSION < 1:
        problems.append("DATA_VERSION must be a positive integer")
    return problems


@dataclass(frozen=True)
class TrialFile:
    """A finished trial as stored: what ran, its result, where and how long, and what code produced it."""

    experiment: str
    scale: str
    key: str
    id: str
    seed: int
    params: dict[str, Any]
    result: dict[str, Any]
    provenance: dict[str, Any]
    fingerprint: dict[str, Any]  # config, code, data_version

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of this trial."""
        return {"schema": TRIAL_SCHEMA, **to_jsonable(dataclasses.asdict(self))}

    @property
    def wall_time_s(self) -> float:
        """Seconds the trial ran."""
        return float(self.provenance.get("wall_time_s", 0.0))


def trials_dir(experiment: str, size: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """results/trials/<experiment>.<scale>/"""
    validate_size(size)
    if not experiment or "/" in experiment or experiment.startswith("."):
        raise ValueError(f"experiment must be a plain name; got {experiment!r}")
    return Path(directory if directory is not None else results_dir()) / "trials" / f"{experiment}.{size}"


def trial_path(t: TrialFile, directory: str | os.PathLike[str] | None = None) -> Path:
    """results/trials/<experiment>.<scale>/<key>.<id>.json"""
    return trials_dir(t.experiment, t.scale, directory) / f"{t.key}.{t.id}.json"


def save_trial(t: TrialFile, directory: str | os.PathLike[str] | None = None) -> Path:
    """Write a finished trial atomically and return its path."""
    path = trial_path(t, directory)
    write_json_atomic(path, t.to_dict())
    return path


def load_trial(path: str | os.PathLike[str]) -> TrialFile:
    """Read and validate a trial file; any problem raises ResultsFileError naming the file."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultsFileError(f"{p}: not a readable trial file ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != TRIAL_SCHEMA:
        raise ResultsFileError(f"{p}: not a trial file (expected schema {TRIAL_SCHEMA!r})")
    kinds = {"experiment": str, "scale": str, "key": str, "id": str, "seed": int, "params": dict, "result": dict,
             "provenance": dict, "fingerprint": dict}
    bad = [k for k, kind in kinds.items() if not isinstance(doc.get(k), kind)]
    if bad:
        raise ResultsFileError(f"{p}: malformed trial file: {', '.join(bad)} missing or of the wrong type")
    return TrialFile(**{k: doc[k] for k in kinds})


def stored_trials(experiment: str, size: str, directory: str | os.PathLike[str] | None = None
                  ) -> dict[str, TrialFile]:
    """The trial files of an experiment at a scale, by trial id."""
    folder = trials_dir(experiment, size, directory)
    out: dict[str, TrialFile] = {}
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            t = load_trial(path)
            out[t.id] = t
    return out


@dataclass(frozen=True)
class TrialStatus:
    """Which trials of a config are stored (and whether by today's code) and which are missing."""

    experiment: str
    scale: str
    trials: list[Trial]
    ids: list[str]
    stored: dict[str, TrialFile]
    code: str

    @property
    def total(self) -> int:
        """How many trials the config has."""
        return len(self.trials)

    @property
    def done(self) -> list[Trial]:
        """Trials with a stored result."""
        return [t for t, i in zip(self.trials, self.ids) if i in self.stored]

    @property
    def missing(self) -> list[Trial]:
        """Trials without a stored result."""
        return [t for t, i in zip(self.trials, self.ids) if i not in self.stored]

    @property
    def stale(self) -> list[Trial]:
        """Stored trials made by other code than today's."""
        return [t for t, i in zip(self.trials, self.ids) if i in self.stored and self.stored[i].fingerprint.get("code")
                != self.code]

    @property
    def orphans(self) -> list[TrialFile]:
        """Stored trial files that are no trial of the config (made under another config or data version)."""
        wanted = set(self.ids)
        return [f for i, f in self.stored.items() if i not in wanted]

    @property
    def complete(self) -> bool:
        """Whether every trial is stored."""
        return not self.missing

    def describe(self) -> str:
        """'k of m trials' (with how many are stale)."""
        stale, orphans = len(self.stale), len(self.orphans)
        return (f"{len(self.done)} of {self.total} trials" + (f" ({stale} made by older code)" if stale else "")
                + (f"; {orphans} stored trial files match no trial of today's config" if orphans else ""))


def trial_status(exp: Experiment, size: str, cfg: Any, directory: str | os.PathLike[str] | None = None
                 ) -> TrialStatus:
    """The status of every trial of ``cfg``."""
    trials = exp.trials(cfg)
    return TrialStatus(exp.name, size, trials, [exp.trial_id(cfg, t) for t in trials],
                       stored_trials(exp.name, size, directory), exp.code)


def _joined(values: Sequence[Any]) -> Any:
    unique = list(dict.fromkeys(v for v in values))
    return unique[0] if len(unique) == 1 else ", ".join(str(v) for v in unique)


def combined_provenance(files: Sequence[TrialFile]) -> dict[str, Any]:
    """One provenance for a record from its trials': each field's value when all agree, else the distinct values
    joined; the latest date; the summed wall time; dirty when any trial was."""
    p = [f.provenance for f in files]
    out = {k: _joined([q.get(k) for q in p]) for k in PROVENANCE_KEYS if k not in ("date", "git_dirty", "wall_time_s")}
    out["git_dirty"] = any(bool(q.get("git_dirty")) for q in p)
    out["date"] = max(str(q.get("date", "")) for q in p)
    out["wall_time_s"] = round(sum(float(q.get("wall_time_s", 0.0)) for q in p), 2)
    for extra in ("threads", "executor", "device_type", "cpu_capability"):
        if any(extra in q for q in p):
            out[extra] = _joined([q.get(extra) for q in p])
    return out


def device_type(files: Sequence[TrialFile]) -> str:
    """The device type the trials ran on ("cpu", "cuda"; the distinct ones joined when they differ)."""
    return str(_joined([f.provenance.get("device_type", "cpu") for f in files]))


class MixedDevicesError(ValueError):
    """Trials made on different kinds of GPU, which one record (or one decided claim) must not mix."""


def device_kinds(files: Sequence[TrialFile]) -> list[str]:
    """The kinds of GPU the trials ran on ('h100', 'h200'; CPU trials left out), in order of first appearance."""

    return list(dict.fromkeys(device_tag(str(f.provenance.get("device", ""))) for f in files
                              if f.provenance.get("device_type") == "cuda"))


def check_one_kind(files: Sequence[TrialFile], what: str) -> None:
    """MixedDevicesError when ``files`` ran on more than one kind of GPU: a step time or a peak fraction read across
    an H100 and an H200 would describe neither."""
    kinds = device_kinds(files)
    if len(kinds) > 1:
        raise MixedDevicesError(f"{what}: its trials ran on {' and '.join(kinds)}; one record holds trials of one kind "
                                f"of GPU (move the other kind's trial files aside and run them again on one kind)")


def assemble_record(exp: Experiment, size: str, cfg: Any, directory: str | os.PathLike[str] | None = None,
                    write: bool = True) -> tuple[Record | None, TrialStatus]:
    """The record of ``cfg`` assembled from its trial files (None while any is missing), written to
    results/<experiment>.<scale>.json when ``write``; MixedDevicesError when they ran on two kinds of GPU."""
    status = trial_status(exp, size, cfg, directory)
    if not status.complete:
        return None, status
    files = [status.stored[i] for i in status.ids]
    check_one_kind(files, f"{exp.name} at {size} scale")
    prepare_corpus(cfg)
    data = exp.assemble(cfg, [from_jsonable(f.result) for f in files], device_type(files))
    codes = {f.fingerprint.get("code") for f in files}
    fingerprint = {"config": config_fingerprint(config_dict(cfg)),
                   "code": codes.pop() if len(codes) == 1 else "mixed",
                   "data_version": int(exp.module.DATA_VERSION)}
    record = Record(exp.name, size, int(cfg.seed), config_dict(cfg), data, combined_provenance(files),
                    fingerprint, trials={"total": status.total, "done": len(files)})
    if write:
        save_record(record, directory)
    return record, status


def claim_reads(exp: Experiment, cfg: Any) -> dict[str, list[str]]:
    """Claim key -> the keys of the trials it reads, in the order a campaign runs them (the module's
    ``claim_trials``); {} for a module that declares none, whose claims all read the whole record."""
    declared = getattr(exp.module, "claim_trials", None)
    if declared is None:
        return {}
    reads = {str(k): [str(t) for t in v] for k, v in declared(cfg).items()}
    known = {t.key for t in exp.trials(cfg)}
    for key, keys in reads.items():
        unknown = sorted(set(keys) - known)
        if not keys or unknown:
            raise ValueError(f"{exp.name}: claim {key!r} must read at least one of its trials; unknown: {unknown}")
    return reads


@dataclass(frozen=True)
class Decided:
    """The claims a partial campaign decides: their data (assembled from the trials they read), the keys of the
    claims decided, and how many of the config's trials are stored by today's code ('12 of 48 trials')."""

    data: dict[str, Any]
    keys: tuple[str, ...]
    done: int
    total: int

    @property
    def trials_words(self) -> str:
        """'12 of 48 trials'."""
        return f"{self.done} of {self.total} trials"


def decided_claims(exp: Experiment, size: str, cfg: Any, directory: str | os.PathLike[str] | None = None
                   ) -> Decided | None:
    """The declared claims (:func:`claim_reads`) whose trials are all stored by today's code while the record is not
    complete; None when none is, or when every trial is stored (the record decides them all). MixedDevicesError when
    the trials they read ran on two kinds of GPU."""
    reads = claim_reads(exp, cfg)
    if not reads:
        return None
    status = trial_status(exp, size, cfg, directory)
    if status.complete:
        return None
    current = {t.key: status.stored[i] for t, i in zip(status.trials, status.ids)
               if i in status.stored and status.stored[i].fingerprint.get("code") == status.code}
    keys = tuple(k for k, needed in reads.items() if all(t in current for t in needed))
    if not keys:
        return None
    wanted = {t for k in keys for t in reads[k]}
    files = [current[t.key] for t in status.trials if t.key in wanted]
    check_one_kind(files, f"{exp.name}'s decided claims at {size} scale")
    prepare_corpus(cfg)
    data = exp.assemble(cfg, [from_jsonable(f.result) for f in files], device_type(files))
    return Decided(data, keys, len(current), status.total)
