"""The gpu campaign as one ordered queue of trials, split into the lent commands that run it, each with the claims it
decides.

Order. A claim that declares the trials it reads (an experiment's ``claim_trials``) is one unit of the queue; an
experiment that declares none is one unit, its whole record. Units go by the claim's own priority (the module's
``CLAIM_PRIORITY``, else its ``PRIORITY``), then the experiment's, then the order of declaration; a unit adds the
trials it reads that no earlier unit added. Trials that no claim reads (figures and tables only) go after the first
tier (:data:`FIGURES_PRIORITY`). A stored trial made by older code is run again in its unit's place, so a stale
record of a higher priority is refreshed before new trials of a lower one.

Sizes. A trial's seconds come from the GPU kind's step basis (:func:`analysis.compute.plan.gpu_basis`: its own measured
step for a measured model, else the fitted step model), or from that experiment's trials already stored from this
kind of GPU once there are some (:class:`analysis.compute.campaign.Estimator`). Compiling is counted apart, once per
model and lent command: a process that has compiled a model reuses its graphs for the next trial of it.

Leases. :func:`split_leases` runs the queue as a lent command's campaign runs it (:func:`analysis.core.runner.
run_queue`): within the time a command has for trials, it starts the first trial, in queue order, whose margin-scaled
estimate still fits, and a new command starts when none does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analysis.compute.campaign import Estimator, UNKNOWN_TRIAL_S, priority_of, runs_on
from analysis.compute.plan import StepBasis, cost_key, gpu_basis, run_compiles
from analysis.core.registry import EXPERIMENTS, config_for, get_experiment
from analysis.core.results import device_tag, find_record, write_json_atomic
from analysis.core.runner import QueueItem, QueueReport, run_trials
from analysis.core.size import validate_size
from analysis.core.stats import CONFIDENCE, POWER, planned_detectable_multiple
from analysis.core.trials import Experiment, MixedDevicesError, TrialFile, assemble_record, claim_reads, trial_status

QUEUE_SCHEMA = "analysis.lease-queue/1"
COMMAND_S = 590.0  # one lent command as scripts/lease.sh runs it: 10 s under the 600 s a command may run; the
# machine's start (about 30 s) comes before it, so a session's 900 s leave room for a second, short command
START_S = 40.0  # before the first trial: Python, imports, the corpus restored and its hash checked, the wheels
END_S = 20.0  # after the last: the final packing, and the grace between SIGTERM and SIGKILL
TRIAL_MARGIN = 1.25  # a trial starts only if its estimate times this still fits: an estimate is not a measurement
FIGURES_PRIORITY = 50  # trials no claim reads run after the first tier (analysis.compute.campaign.FIRST_TIER_PRIORITY)
RECORD = "(record)"  # the unit of an experiment that declares no claim trials, while it has no cpu record to name


@dataclass(frozen=True)
class QueuedTrial:
    """One trial of the queue: what runs, its expected seconds without compiling, the compiling of each model it
    trains (seconds by model digest, paid by the first trial of a model in a command), the claims that read it, and
    whether it replaces a trial stored by older code."""

    experiment: str
    key: str
    trial_id: str
    seconds: float
    compiles: dict[str, float]
    claims: tuple[str, ...]
    refresh: bool = False

    def cost(self, compiled: set[str]) -> float:
        """Expected seconds in a process that has compiled the models in ``compiled``."""
        return self.seconds + sum(s for m, s in self.compiles.items() if m not in compiled)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the queue file."""
        return {**asdict(self), "claims": list(self.claims)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> QueuedTrial:
        """The trial of a queue file's entry."""
        return cls(str(doc["experiment"]), str(doc["key"]), str(doc["trial_id"]), float(doc["seconds"]),
                   {str(k): float(v) for k, v in doc["compiles"].items()}, tuple(doc["claims"]),
                   bool(doc.get("refresh", False)))


def model_digest(model: Any, batch: int, ctx: int) -> str:
    """A short name of what a compile is reused for: the model up to fields that change no graph, its batch, length."""
    return hashlib.sha256(repr(cost_key(model, batch, ctx)).encode()).hexdigest()[:12]


def trial_costs(exp: Experiment, cfg: Any, trial: Any, basis: StepBasis) -> tuple[float, dict[str, float]]:
    """(seconds without compiling, compiling seconds by model digest) of one trial by the step basis; a trial whose
    plan counts nothing takes :data:`analysis.compute.campaign.UNKNOWN_TRIAL_S` until this kind of GPU has timed one."""
    seconds, compiles = 0.0, {}
    workloads = exp.trial_plan(cfg, trial)
    if all(w.model is None and w.flops <= 0 and w.overhead_s <= 0 for w in workloads):
        return UNKNOWN_TRIAL_S, {}  # work no count captures: an hour-long loop and an instant one look alike
    for w in workloads:
        seconds += w.overhead_s
        if w.model is None:
            seconds += w.count * w.flops / basis.model.flops_per_s
            continue
        steps_s, overhead = basis.run_parts(w)
        seconds += w.count * steps_s
        if run_compiles(w.steps):
            digest = model_digest(w.model, w.batch, w.ctx)
            compiles[digest] = max(compiles.get(digest, 0.0), overhead)
        else:
            seconds += w.count * overhead
    return seconds, compiles


def claim_keys(exp: Experiment, directory: str | os.PathLike[str] | None = None) -> list[str]:
    """The keys of the claims an experiment's record makes: those it declares trials for, else those its gpu record
    makes (stale or not), else its cpu record's, else one name for the record (:data:`RECORD`)."""
    declared = getattr(exp.module, "claim_trials", None)
    if declared is not None:

        return list(declared(config_for(exp.module, "gpu")))
    for size in ("gpu", "cpu"):
        record = find_record(exp.name, size, directory)
        keys = [c.key for c in exp.module.claims(record.data, f"recorded-{size}")] if record is not None else []
        if keys:
            return keys
    return [RECORD]


@dataclass(frozen=True)
class Unit:
    """A claim (or a whole record) and the trials it reads, at its place in the queue."""

    priority: float
    experiment_priority: int
    experiment: str
    order: int
    claims: tuple[str, ...]
    trials: tuple[str, ...]


def _units(exp: Experiment, cfg: Any, directory: str | os.PathLike[str] | None) -> list[Unit]:
    keys = [t.key for t in exp.trials(cfg)]
    priority = priority_of(exp.module)
    reads = claim_reads(exp, cfg)
    if not reads:
        return [Unit(priority, priority, exp.name, 0, tuple(claim_keys(exp, directory)), tuple(keys))]
    own = getattr(exp.module, "CLAIM_PRIORITY", {})
    units = [Unit(own.get(claim, priority), priority, exp.name, i, (claim,), tuple(trials))
             for i, (claim, trials) in enumerate(reads.items())]
    read = {t for trials in reads.values() for t in trials}
    rest = tuple(k for k in keys if k not in read)
    if rest:
        units.append(Unit(FIGURES_PRIORITY + priority / 100, priority, exp.name, len(units), (), rest))
    return units


def _device_of(status: Any, tag: str) -> str | None:
    """The device name of the stored trials made on a GPU tagged ``tag`` (the most of them), None without any."""
    names = [f.provenance.get("device") for f in status.stored.values() if f.provenance.get("device_type") == "cuda"
             and device_tag(str(f.provenance.get("device", ""))) == tag]
    return max(set(names), key=names.count) if names else None


def build_queue(size: str = "gpu", tag: str = "h100", only: Sequence[str] | None = None,
                directory: str | os.PathLike[str] | None = None) -> list[QueuedTrial]:
    """The trials a lent GPU of kind ``tag`` has left to run at ``size``, in campaign order (module docstring):
    missing ones, and stored ones made by older code; experiments whose config runs on the CPU left out."""

    size = validate_size(size)
    names = list(only) if only else sorted(EXPERIMENTS)
    basis = gpu_basis(tag)
    units: list[Unit] = []
    plans: dict[str, tuple[Experiment, Any, Any, Estimator | None]] = {}
    for name in names:
        exp = Experiment(get_experiment(name))
        cfg = config_for(exp.module, size)
        if runs_on(cfg, "cuda") != "cuda":
            continue
        status = trial_status(exp, size, cfg, directory)
        device = _device_of(status, tag)
        est = Estimator.from_status(exp, cfg, status, device, "cuda", tag) if device else None
        plans[name] = (exp, cfg, status, est if est is not None and est.measured else None)
        units.extend(_units(exp, cfg, directory))
    units.sort(key=lambda u: (u.priority, u.experiment_priority, u.experiment, u.order))
    readers: dict[tuple[str, str], list[str]] = {}
    for u in units:
        for key in u.trials:
            readers.setdefault((u.experiment, key), []).extend(u.claims)
    out: list[QueuedTrial] = []
    seen: set[tuple[str, str]] = set()
    for u in units:
        exp, cfg, status, est = plans[u.experiment]
        by_key = {t.key: (t, i) for t, i in zip(status.trials, status.ids)}
        for key in u.trials:
            if (u.experiment, key) in seen:
                continue
            seen.add((u.experiment, key))
            trial, tid = by_key[key]
            stored = status.stored.get(tid)
            if stored is not None and stored.fingerprint.get("code") == status.code:
                continue
            if est is not None:  # this kind of GPU has run trials of it: their times, compiling included
                seconds, compiles = est.seconds(trial), {}
            else:
                seconds, compiles = trial_costs(exp, cfg, trial, basis)
            out.append(QueuedTrial(u.experiment, key, tid, seconds, compiles,
                                   tuple(dict.fromkeys(readers[(u.experiment, key)])), stored is not None))
    return out


@dataclass
class Lease:
    """One lent command's share of the queue: its trials, their expected seconds (compiling included, before the
    margin), the compiling in them, and the claims whose last trial it runs."""

    number: int
    trials: list[QueuedTrial] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)  # each trial's expected seconds here, its compiling included
    seconds: float = 0.0
    compile_s: float = 0.0
    decides: list[tuple[str, str]] = field(default_factory=list)


def margin_for(tag: str = "h100") -> float:
    """The factor a trial's estimate is scaled by before it is started: :data:`TRIAL_MARGIN`, or more when the
    fitted step model misses one of the steps it was fitted to by more (a trial sized by the fit can be that far
    off)."""
    return max(TRIAL_MARGIN, 1.0 + gpu_basis(tag).model.worst_error)


def trial_window(command_s: float = COMMAND_S) -> float:
    """Seconds a lent command of ``command_s`` has for trials: its limit less start-up and the end margin."""
    window = command_s - START_S - END_S
    if not (window > 0 and math.isfinite(window)):
        raise ValueError(f"command_s must exceed {START_S + END_S:.0f} s of start-up and packing; got {command_s!r}")
    return window


def split_leases(queue: Sequence[QueuedTrial], command_s: float = COMMAND_S, margin: float | None = None,
                 limit: int = 1000, tag: str = "h100") -> list[Lease]:
    """The queue as successive lent commands run it: each starts, in order, the first trial whose estimate times
    ``margin`` fits what is left of its window (:func:`trial_window`), compiling each model once; a trial that fits
    no whole window still runs alone in one (and will be cut off: the sizes keep every trial within a window). The
    margin defaults to :func:`margin_for` the GPU kind ``tag``."""
    margin = margin_for(tag) if margin is None else margin
    if margin < 1:
        raise ValueError(f"margin must be at least 1; got {margin!r}")
    window = trial_window(command_s)
    left = list(queue)
    leases: list[Lease] = []
    while left and len(leases) < limit:
        lease, used, compiled = Lease(len(leases) + 1), 0.0, set()
        while left:
            pick = next((t for t in left if used + margin * t.cost(compiled) <= window), None)
            if pick is None:
                if not lease.trials:
                    pick = left[0]
                else:
                    break
            cost = pick.cost(compiled)
            lease.compile_s += cost - pick.seconds
            lease.seconds += cost
            used += margin * cost
            compiled.update(pick.compiles)
            lease.trials.append(pick)
            lease.costs.append(cost)
            left.remove(pick)
        leases.append(lease)
    _mark_decided(queue, leases)
    return leases


def _mark_decided(queue: Sequence[QueuedTrial], leases: list[Lease]) -> None:
    """Each lease's decided claims: those whose last queued trial it runs (claims with nothing left to run are
    decided already and named by none)."""
    last: dict[tuple[str, str], int] = {}
    where = {(t.experiment, t.key): lease.number for lease in leases for t in lease.trials}
    for t in queue:
        for claim in t.claims:
            ref = (t.experiment, claim)
            last[ref] = max(last.get(ref, 0), where.get((t.experiment, t.key), math.inf))  # type: ignore[arg-type]
    for ref, number in last.items():
        if number != math.inf:
            leases[int(number) - 1].decides.append(ref)


def save_queue(queue: Sequence[QueuedTrial], path: str | os.PathLike[str], size: str, tag: str,
               margin: float | None = None) -> Path:
    """Write the queue (with the scale and GPU kind it was sized for, and the margin its runner applies: default
    :func:`margin_for` the kind) atomically to ``path``."""

    doc = {"schema": QUEUE_SCHEMA, "scale": validate_size(size), "device": tag,
           "margin": margin_for(tag) if margin is None else margin, "trials": [t.to_dict() for t in queue]}
    write_json_atomic(Path(path), doc)
    return Path(path)


@dataclass(frozen=True)
class QueueFile:
    """A prepared queue as it travels: its scale, the GPU kind it was sized for, the margin, the trials."""

    scale: str
    device: str
    margin: float
    trials: list[QueuedTrial]


def load_queue(path: str | os.PathLike[str]) -> QueueFile:
    """The queue file at ``path``; ValueError naming the file when it is not one."""
    try:
        doc = json.loads(Path(path).read_text())
        if doc.get("schema") != QUEUE_SCHEMA:
            raise ValueError(f"schema is {doc.get('schema')!r}, not {QUEUE_SCHEMA!r}")
        return QueueFile(validate_size(doc["scale"]), str(doc["device"]), float(doc["margin"]),
                         [QueuedTrial.from_dict(t) for t in doc["trials"]])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a lease queue ({err})") from None


def claim_seeds(experiment: str, claim: str, size: str = "gpu") -> int:
    """How many seeds the trials a claim reads span at ``size`` (0 for a claim that declares no trials or whose
    trials are not seeded)."""
    exp = Experiment(get_experiment(experiment))
    cfg = config_for(exp.module, validate_size(size))
    params = {t.key: t.params for t in exp.trials(cfg)}
    return len({params[k]["seed"] for k in claim_reads(exp, cfg).get(claim, []) if "seed" in params[k]})


def seeds_line(decides: Sequence[tuple[str, str]], size: str = "gpu") -> str | None:
    """Why the seeds of a lease's seeded claims suffice: the smallest true difference a paired t test over their
    seeds detects, lambda(n - 1) / sqrt(n) per-seed SDs (:func:`analysis.core.stats.planned_detectable_multiple`), one-
    and two-sided at the book's confidence and power; None when no claim it decides reads two seeds or more."""
    seeded = [(e, c, n) for e, c in decides if (n := claim_seeds(e, c, size)) >= 2]
    if not seeded:
        return None
    clauses = [f"{', '.join(f'{e} {c}' for e, c, k in seeded if k == n)} over {n} seeds: a paired t test detects "
               f"a true difference of {planned_detectable_multiple(n, sided='one'):.2g} (one-sided) or "
               f"{planned_detectable_multiple(n):.2g} (two-sided) per-seed SDs"
               for n in sorted({n for _, _, n in seeded})]
    return f"  seeds: {'; '.join(clauses)}, at {CONFIDENCE:.0%} confidence and {POWER:.0%} power"


def lease_table(leases: Sequence[Lease], tag: str, shown: int = 3, size: str = "gpu") -> list[str]:
    """Lines for a reader: per lent command (the first ``shown``, then the rest summed), its trials by experiment,
    its expected minutes with the compiling in them, the claims it decides, and what their seeds can detect
    (:func:`seeds_line`)."""
    lines = []
    for lease in leases[:shown]:
        by_exp: dict[str, int] = {}
        for t in lease.trials:
            by_exp[t.experiment] = by_exp.get(t.experiment, 0) + 1
        refresh = sum(t.refresh for t in lease.trials)
        lines.append(f"lease {lease.number} on one {tag.upper()}: {len(lease.trials)} trials "
                     + ("(" + ", ".join(f"{n} {e}" for e, n in by_exp.items()) + ")")
                     + (f", {refresh} of them run again for code changed since" if refresh else "")
                     + f"; about {lease.seconds / 60:.1f} minutes, {lease.compile_s / 60:.1f} of them compiling; "
                     f"decides {len(lease.decides)} claim{'' if len(lease.decides) == 1 else 's'}"
                     + (": " + ", ".join(f"{e} {c}" for e, c in lease.decides) if lease.decides else ""))
        seeds = seeds_line(lease.decides, size)
        if seeds:
            lines.append(seeds)
    rest = leases[shown:]
    if rest:
        lines.append(f"leases {rest[0].number} to {rest[-1].number}: {sum(len(x.trials) for x in rest)} trials, "
                     f"about {sum(x.seconds for x in rest) / 60:.0f} minutes, deciding "
                     f"{sum(len(x.decides) for x in rest)} claims")
    return lines


def queue_items(queue: Sequence[QueuedTrial], size: str, directory: str | os.PathLike[str] | None = None
                ) -> list[QueueItem]:
    """The queue's trials that are still to run here, as the runner's items: a trial whose file today's code has
    stored is left out; one stored by older code, or missing, is run (no FLOP is counted here: the estimates came
    with the queue)."""

    out = []
    statuses: dict[str, Any] = {}
    for q in queue:
        if q.experiment not in statuses:
            exp = Experiment(get_experiment(q.experiment))
            cfg = config_for(exp.module, size)
            statuses[q.experiment] = (exp, cfg, trial_status(exp, size, cfg, directory))
        exp, cfg, status = statuses[q.experiment]
        by_key = {t.key: (t, i) for t, i in zip(status.trials, status.ids)}
        if q.key not in by_key:
            raise ValueError(f"the queue names trial {q.key!r} of {q.experiment}, which today's config does not have: "
                             "prepare the queue again")
        trial, tid = by_key[q.key]
        stored = status.stored.get(tid)
        if stored is not None and stored.fingerprint.get("code") == status.code:
            continue
        out.append(QueueItem(exp, size, cfg, trial, tid, q.seconds, tuple(q.compiles.items())))
    return out


def run_queued(queue: Sequence[QueuedTrial], size: str, budget_s: float | None,
               directory: str | os.PathLike[str] | None = None, margin: float = TRIAL_MARGIN,
               after_trial: Callable[[], object] | None = None, progress: bool = True) -> QueueReport:
    """Run the queue's trials still to run here, in its order, within ``budget_s`` (each started only if its estimate
    times ``margin`` fits), in this process; ``after_trial()`` runs after each trial's file is stored (a lease packs
    what it has then). Every record whose trials are then all stored is assembled. Returns the runner's report."""

    items = queue_items(queue, size, directory)

    def on_finish(item: QueueItem, tf: TrialFile, k: int, n: int) -> None:
        if progress:
            print(f"[{k}/{n}] {item.exp.name} {item.trial.key}: {tf.wall_time_s:.1f} s (expected "
                  f"{item.expected_s(set()):.1f} s at most)", flush=True)
        if after_trial is not None:
            after_trial()

    report = run_trials(items, "inline", None, None, None, directory, budget_s, on_finish, keep_going=True,
                        margin=margin)
    for name in dict.fromkeys(item.exp.name for item, _ in report.finished):
        item = next(i for i, _ in report.finished if i.exp.name == name)
        try:
            record, _ = assemble_record(item.exp, size, item.config, directory)
        except MixedDevicesError as err:
            print(f"{name}: no record: {err}", flush=True)
            continue
        if record is not None and progress:
            print(f"{name}: every trial stored; record assembled", flush=True)
    if after_trial is not None and report.finished:
        after_trial()
    return report
