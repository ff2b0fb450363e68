"""Campaigns: the missing trials of a scale, run in priority order within a time budget, resumable at any point.

Order. Experiments go by their module's ``PRIORITY`` (lower first; 50 when it has none), then by the estimated
seconds of their missing trials (cheapest first, so that a short lease completes whole records), then by name;
within an experiment, trials go in the order of ``trials(cfg)``.

Estimates. Once trials of an experiment are stored from this device, a trial's expected seconds are its counted
FLOPs (its ``trial_plan``, one training step counted on the meta device by :func:`analysis.compute.plan.cached_step_cost`)
divided by the throughput those trials measured (their summed seconds over their summed FLOPs). Before that, on a
GPU, they come from the step times measured on an H100 (:func:`analysis.compute.plan.h100_seconds`: a time per layer and
step for kernel launches plus the FLOPs at a rate fitted to those steps), and on a CPU from an assumed throughput
(:data:`CPU_ASSUMED_FLOPS`). A trial whose plan counts no FLOPs takes the mean seconds of the experiment's stored
trials on this device, else :data:`UNKNOWN_TRIAL_S`.

A campaign starts no trial that it expects not to finish within the budget, stops between trials on SIGINT or
SIGTERM, and, killed outright, loses only the trials in flight: run again, it continues where it was. When every
trial of an experiment is stored, its record is assembled (:func:`analysis.core.trials.assemble_record`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.compute.plan import COMPILE_PRIOR, cached_step_cost, gpu_basis, gpu_seconds, gpu_steps, run_compiles
from analysis.core.registry import EXPERIMENTS, config_for, get_experiment
from analysis.core.results import device_name, device_tag, record_path
from analysis.core.runner import QueueItem, QueueReport, pick_device, run_trials
from analysis.core.size import validate_size
from analysis.core.trials import Experiment, TrialFile, TrialStatus, assemble_record, trial_status
from analysis.training.train import COMPILE_MIN_STEPS

DEFAULT_PRIORITY = 50
# Experiments below this PRIORITY measure at gpu scale the claims whose cpu verdicts contradict published work or
# cannot be decided at cpu scale (FLASH's speed and memory, quality at equal parameters, deep GAU, the recall scale,
# widening, length transfer): the campaign's first tier. The rest re-measure at gpu scale claims that the cpu records
# already decide, and run after it.
FIRST_TIER_PRIORITY = 50
# The throughput assumed on a CPU before a trial of the experiment has been timed there (FLOP/s of training work):
# 10 GFLOP/s (2 cores measured 15 to 30 GFLOP/s on the recorded cpu trials of this book, so it errs long).
CPU_ASSUMED_FLOPS = 10e9
UNKNOWN_TRIAL_S = 60.0
# A lent GPU session at present: 15 minutes of device time, of which starting the machine takes one to two and no
# machine starts with under four left, so a session runs one command of the campaign, of 9 minutes
# (scripts/lease.sh); the rest of the 10-minute command limit is for start-up and packing the trial files.
GPU_LEASE_S = 9 * 60.0
GPU_TRIAL_MAX_S = 8 * 60.0  # every trial fits one such command
# What the gpu configs are sized to at the H100 step times measured so far (eager steps; a lease's compiled steps
# replace them, analysis.compute.plan.gpu_steps): the first tier within 210 minutes and everything within 275, about eight
# and eleven sessions when a session lent 25 minutes of campaign (gau-quality's third seed took the first tier from
# 7 to 8 such sessions; widening's fourth seed, which its claim needs at the cpu record's spread, from 200 to 206
# minutes, 8.2 sessions). At one 9-minute command a session these are 23 and 31 sessions
GPU_FIRST_TIER_S = 210 * 60.0
GPU_CAMPAIGN_S = 275 * 60.0


def lease_count(seconds: float) -> float:
    """Lent GPU sessions that ``seconds`` of campaign take, at one command of :data:`GPU_LEASE_S` a session."""
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise ValueError(f"seconds must be finite and >= 0; got {seconds!r}")
    return seconds / GPU_LEASE_S


def priority_of(module: Any) -> int:
    """An experiment module's PRIORITY in the campaign's order (lower first; :data:`DEFAULT_PRIORITY` without one)."""
    return int(getattr(module, "PRIORITY", DEFAULT_PRIORITY))


def parse_budget(text: str) -> float:
    """Seconds of a budget written as 90, 90s, 9m or 1.5h."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"budget must be a positive number of seconds, or end in s, m or h (e.g. 9m); got {text!r}")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def workload_flops(workloads: Sequence[Any]) -> float:
    """FLOPs of a list of workloads: count x (steps x forward-backward + eval batches x forward), or counted work."""
    flops = 0.0
    for w in workloads:
        if w.model is None:
            flops += w.count * w.flops
            continue
        _, fwd, fwd_bwd, _ = cached_step_cost(w.model, w.batch, w.ctx)
        flops += w.count * (w.steps * fwd_bwd + w.eval_batches * fwd)
    return flops


def runs_on(cfg: Any, device_type: str) -> str:
    """The device type an experiment's trials run on: its config's ``device`` where it names one ("cpu": a CPU
    benchmark whatever the machine has; "cuda"), else the machine's ``device_type``."""
    device = getattr(cfg, "device", None)
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"an experiment's device must be 'cpu' or 'cuda'; got {device!r}")
    return device or device_type


@dataclass
class Estimator:
    """Expected seconds of the trials of one experiment at one scale on this device.

    A trial's time is overhead + FLOPs / rate. Uncalibrated, the rate is the device's step model (analysis.compute.plan's
    fitted GPU steps, or :data:`CPU_ASSUMED_FLOPS`) and the overhead the workloads' own. Each stored trial timed on
    this device calibrates it: its time beyond the model's is overhead (compiling kernels, start-up), averaged over
    those trials; once they span two FLOP counts, a least-squares line through (FLOPs, seconds) with a positive
    slope and an intercept of at least zero replaces both. A single trial's time is never scaled by a FLOP ratio,
    which would multiply its fixed overhead too (a short check trial dominated by compiling once sized the longest
    trials of its experiment at days)."""

    exp: Experiment
    cfg: Any
    device_type: str
    gpu_tag: str = "h100"  # on CUDA, the kind whose measured steps size an unmeasured trial (analysis.compute.plan.gpu_steps)
    points: list[tuple[float, float, float]] = field(default_factory=list)  # counted trials: (FLOPs, s, model's s)
    uncounted_s: float = 0.0  # seconds of the stored trials whose plan counts no FLOPs
    uncounted_n: int = 0

    @classmethod
    def from_status(cls, exp: Experiment, cfg: Any, status: TrialStatus, device: str, device_type: str,
                    gpu_tag: str = "h100") -> Estimator:
        """Calibrated on the stored trials of ``status`` that ran on ``device``."""
        est = cls(exp, cfg, runs_on(cfg, device_type), gpu_tag)
        by_key = {t.key: t for t in status.trials}
        for tf in status.stored.values():
            if tf.provenance.get("device") == device and tf.key in by_key:
                workloads = exp.trial_plan(cfg, by_key[tf.key])
                flops = workload_flops(workloads)
                if flops > 0:
                    est.points.append((flops, tf.wall_time_s, est.model_seconds(workloads)))
                else:
                    est.uncounted_s += tf.wall_time_s
                    est.uncounted_n += 1
        return est

    @property
    def measured(self) -> bool:
        """Whether a stored trial timed on this device calibrates the estimate."""
        return bool(self.points) or self.uncounted_n > 0

    def model_seconds(self, workloads: Sequence[Any], compiled: set[Any] | None = None) -> float:
        """Seconds of ``workloads`` by the device's step model alone, their stated overhead included; on a GPU, a
        model's compiling once per process when ``compiled`` carries the models compiled before (:meth:`seconds`)."""
        if self.device_type == "cuda":
            return gpu_seconds(workloads, self.gpu_tag, compiled)
        return workload_flops(workloads) / CPU_ASSUMED_FLOPS + sum(w.overhead_s for w in workloads)

    def line(self) -> tuple[float, float] | None:
        """(intercept s, slope s/FLOP) of the least-squares line through the counted trials, when they span two
        FLOP counts and the fit has a positive slope and an intercept >= 0 (else None)."""
        xs = [f for f, _, _ in self.points]
        if len(set(xs)) < 2:
            return None
        ys = [t for _, t, _ in self.points]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        intercept = my - slope * mx
        return (intercept, slope) if slope > 0 and intercept >= 0 else None

    def seconds(self, trial: Any, compiled: set[Any] | None = None) -> float:
        """Expected seconds of ``trial``; with ``compiled`` (the cost keys of the models the process that runs it
        will have compiled before it, updated here), an uncalibrated GPU estimate charges a model's compiling only to
        the first trial that trains it, as one process of a campaign pays it once."""
        workloads = self.exp.trial_plan(self.cfg, trial)
        flops = workload_flops(workloads)
        if flops <= 0:
            return self.uncounted_s / self.uncounted_n if self.uncounted_n else UNKNOWN_TRIAL_S
        fit = self.line()
        if fit is not None:
            return fit[0] + fit[1] * flops
        model = self.model_seconds(workloads, compiled)
        if not self.points:
            return model
        overhead = sum(max(0.0, t - m) for _, t, m in self.points) / len(self.points)
        return model + overhead


@dataclass
class ExperimentPlan:
    """One experiment in a campaign: its config, trial status and the expected seconds of each missing trial."""

    exp: Experiment
    cfg: Any
    status: TrialStatus
    estimates: dict[str, float] = field(default_factory=dict)  # trial key -> seconds
    measured: bool = False
    estimator: Estimator | None = None

    @property
    def priority(self) -> int:
        """The module's PRIORITY (lower first)."""
        return priority_of(self.exp.module)

    @property
    def first_tier(self) -> bool:
        """Whether the experiment is in the campaign's first tier (PRIORITY below :data:`FIRST_TIER_PRIORITY`)."""
        return self.priority < FIRST_TIER_PRIORITY

    @property
    def missing_s(self) -> float:
        """Expected seconds of the missing trials."""
        return sum(self.estimates[t.key] for t in self.status.missing)


def campaign_plans(size: str, only: Sequence[str] | None = None, directory: str | os.PathLike[str] | None = None,
                   refresh_stale: bool = False, estimate_on: str | None = None) -> list[ExperimentPlan]:
    """Every (or each named) experiment at ``size`` with its trial status and estimates, in campaign order.

    Estimates are for this machine's device, or, with ``estimate_on`` ("cpu" or "cuda"), for a device of that type
    before any trial was timed on it (the assumed throughput, and the launch floor on a GPU)."""

    size = validate_size(size)
    if estimate_on not in (None, "cpu", "cuda"):
        raise ValueError(f"estimate_on must be cpu or cuda; got {estimate_on!r}")
    names = list(only) if only else sorted(EXPERIMENTS)
    device_type = estimate_on or pick_device().type
    here = device_name() if estimate_on is None else f"an unmeasured {estimate_on} device"
    tag = device_tag(here) if estimate_on is None and device_type == "cuda" else "h100"
    plans = []
    for name in names:
        exp = Experiment(get_experiment(name))
        cfg = config_for(exp.module, size)
        status = trial_status(exp, size, cfg, directory)
        if refresh_stale:
            stale = {exp.trial_id(cfg, t) for t in status.stale}
            status = TrialStatus(status.experiment, size, status.trials, status.ids,
                                 {i: f for i, f in status.stored.items() if i not in stale}, status.code)
        est = Estimator.from_status(exp, cfg, status, here, device_type, tag)
        compiled: set[Any] = set()  # within one experiment here; across them below, in the order they run
        plans.append(ExperimentPlan(exp, cfg, status, {t.key: est.seconds(t, compiled) for t in status.missing},
                                    est.measured, est))
    plans.sort(key=lambda p: (p.priority, p.missing_s, p.exp.name))
    if device_type == "cuda":  # one process runs them all: a model compiled by an earlier experiment is not again
        compiled = set()
        for p in plans:
            if p.estimator is not None and not p.measured:
                p.estimates = {t.key: p.estimator.seconds(t, compiled) for t in p.status.missing}
    return plans


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def status_lines(plans: Sequence[ExperimentPlan], size: str, estimate_on: str | None = None,
                 trials: bool = False) -> list[str]:
    """One line per experiment: trials done of all, and the expected time of what is left; with ``trials``, a line
    per missing trial with its expected time."""
    where = device_name() if estimate_on is None else f"an unmeasured {estimate_on} device (estimates only)"
    lines = [f"campaign at {size} scale on {where}, in the order it runs:"]
    unmeasured = "from plan"
    uncompiled_note = ""
    if (estimate_on or pick_device().type) == "cuda":
        tag = device_tag(device_name()) if estimate_on is None else "h100"
        steps = gpu_steps(tag)
        timed = {s.source for s in steps if s.source.startswith("steptimes.")}
        unmeasured = f"from {', '.join(sorted(timed))}" if timed else "from H100 step times"
        if gpu_basis(tag).compile_fit is None:
            compiling = sum(any(w.model is not None and run_compiles(w.steps) for w in p.exp.trial_plan(p.cfg, t))
                            for p in plans if not p.measured for t in p.status.missing)
            if compiling:
                base, per_layer = COMPILE_PRIOR
                uncompiled_note = (f"  compiling not yet timed on this kind of GPU: {compiling} of the trials left "
                                   f"train compiled (runs of {COMPILE_MIN_STEPS} steps or more); each model's first "
                                   f"run is charged an assumed {base:.0f} s + {per_layer:g} s per layer until a "
                                   "lease's trials measure it")
    for p in plans:
        left = len(p.status.missing)
        basis = "measured here" if p.measured else unmeasured
        lines.append(f"  {p.exp.name}: {p.status.describe()}" +
                     (f"; {left} left, about {_minutes(p.missing_s)} ({basis})" if left else "; complete"))
        if trials:
            lines.extend(f"    {t.key}: {_minutes(p.estimates[t.key])}" for t in p.status.missing)
    total = sum(p.missing_s for p in plans)
    left = sum(len(p.status.missing) for p in plans)
    lines.append(f"left: {left} trials, about {_minutes(total)}")
    if size == "gpu" and any(p.first_tier for p in plans):
        # lent GPU sessions count the trials that need a GPU; a CPU benchmark runs on any machine with the time
        on_cpu = [p for p in plans if runs_on(p.cfg, "cuda") == "cpu" and p.status.missing]
        gpu = [p for p in plans if p not in on_cpu]
        first = [p for p in gpu if p.first_tier]
        first_s = sum(p.missing_s for p in first)
        gpu_s = sum(p.missing_s for p in gpu)
        lines.append(f"  first tier (priority below {FIRST_TIER_PRIORITY}): {sum(len(p.status.missing) for p in first)}"
                     f" trials, about {_minutes(first_s)}, {lease_count(first_s):.1f} lent sessions of one "
                     f"{GPU_LEASE_S / 60:.0f}-minute command; everything: {lease_count(gpu_s):.1f}")
        if on_cpu:
            lines.append("  on a CPU (no GPU needed, left out of those sessions): " + ", ".join(
                f"{p.exp.name}, about {_minutes(p.missing_s)}" for p in on_cpu))
    if uncompiled_note:
        lines.append(uncompiled_note)
    return lines


def run_campaign(size: str, budget_s: float | None = None, only: Sequence[str] | None = None,
                 executor: str = "inline", workers: int | None = None, threads: int | None = None,
                 address: str | None = None, directory: str | os.PathLike[str] | None = None,
                 refresh_stale: bool = False, progress: bool = True, per_gpu: int = 1, keep_going: bool = False,
                 after_trial: Any = None) -> tuple[QueueReport, list[ExperimentPlan]]:
    """Run the missing trials of ``size`` within ``budget_s``; assemble every record that became complete. With
    ``keep_going``, a failed trial skips the rest of its experiment in this run, not the other experiments;
    ``after_trial()`` runs after each trial's file is stored (a lease repacks its results then)."""
    plans = campaign_plans(size, only, directory, refresh_stale)
    items = [QueueItem(p.exp, size, p.cfg, t, p.exp.trial_id(p.cfg, t), p.estimates[t.key])
             for p in plans for t in p.status.missing]

    def on_finish(item: QueueItem, tf: TrialFile, k: int, n: int) -> None:
        if progress:
            print(f"[{k}/{n}] {item.exp.name} {item.trial.key}: {tf.wall_time_s:.1f} s "
                  f"(expected {item.estimate_s:.1f} s)", flush=True)
        if after_trial is not None:
            after_trial()

    report = run_trials(items, executor, workers, threads, address, directory, budget_s, on_finish, per_gpu,
                        keep_going)
    ran = {item.exp.name for item, _ in report.finished}
    for p in plans:
        if p.exp.name in ran or (p.status.complete and not _record_exists(p, directory)):
            record, _ = assemble_record(p.exp, size, p.cfg, directory)
            if record is not None and progress:
                print(f"{p.exp.name}: all {p.status.total} trials stored; record assembled", flush=True)
    return report, plans


def _record_exists(plan: ExperimentPlan, directory: str | os.PathLike[str] | None) -> bool:

    return record_path(plan.exp.name, plan.status.scale, directory).exists()


def report_lines(report: QueueReport, size: str, only: Sequence[str] | None,
                 directory: str | os.PathLike[str] | None = None, statuses: bool = True) -> list[str]:
    """What a campaign run did, why it stopped, and (with ``statuses``) what is left, with expected times."""
    lines = [f"ran {len(report.finished)} trials in {_minutes(report.wall_time_s)}"]
    for item, err in report.failed:
        lines.append(f"FAILED: {item.exp.name} {item.trial.key}: {type(err).__name__}: {err}")
    for name in dict.fromkeys(i.exp.name for i in report.skipped):
        n = sum(i.exp.name == name for i in report.skipped)
        lines.append(f"skipped after that failure: {n} more trial(s) of {name} (the other experiments went on)")
    if report.stopped == "budget":
        lines.append(f"stopped: the next trials are expected to outrun the budget ({len(report.left)} left)")
    elif report.stopped == "signal":
        lines.append(f"stopped on a signal between trials ({len(report.left)} left)")
    return lines + (status_lines(campaign_plans(size, only, directory), size) if statuses else [])


def never_fits(plans: Sequence[ExperimentPlan], budget_s: float) -> list[str]:
    """Per experiment, its missing trials expected to take longer than a whole budget (a campaign of that budget never
    starts them): how many, and the longest."""
    out = []
    for p in plans:
        long = [p.estimates[t.key] for t in p.status.missing if p.estimates[t.key] > budget_s]
        if long:
            out.append(f"{p.exp.name}: {len(long)} of its {len(p.status.missing)} missing trials "
                       f"(the longest about {_minutes(max(long))})")
    return out
