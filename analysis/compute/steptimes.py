"""Training-step times of every model a scale trains, measured through the trainer itself, and the step-time model
fitted to them.

For each distinct (model, batch, length) that the experiments of a scale train (their plans' training workloads),
:func:`time_steps` runs :func:`analysis.training.train.train_lm` for ``warmup + repeats`` steps on random bytes and times
each step between the trainer's per-step callbacks (the device synchronised at each), so that a measured step is
the one the experiments run: on a GPU bf16 autocast, fused AdamW, clipping and the compiled model (``compile_mode``
"auto": CUDA graphs; the warm-up steps absorb the compilation and the graph capture). The median of the timed
steps is kept, with the smallest and largest, tokens per second, achieved FLOP/s (the step's counted FLOPs, from
:func:`analysis.compute.plan.cached_step_cost`) and, on a GPU, the fraction of the H100's dense bf16 peak. So is the
overhead: what the untimed first steps took beyond as many median steps (compiling, capturing the graphs); and,
for a compiled model, its eager step timed beside, so that the steps after which compiling pays are measured too.

A GPU's measurements are written to ``results/benchmarks/steptimes.<scale>.<device>.json``;
:func:`analysis.compute.plan.gpu_steps` reads them, so that the campaign's estimates follow them: a timed model by its own
step and overhead, any other by the fit.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from analysis.compute.plan import (
    BENCH_DIR,
    H100_BF16_DENSE_FLOPS,
    MeasuredStep,
    StepTiming,
    cached_step_cost,
    h100_seconds,
    load,
)

from analysis.core.registry import EXPERIMENTS, config_for, get_experiment
from analysis.core.results import device_name, device_tag, provenance, write_json_atomic
from analysis.core.size import validate_size
from analysis.core.trials import Experiment
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.training.train import TrainConfig, resolve_compile_mode, train_lm




def training_models(size: str, only: list[str] | None = None) -> list[tuple[str, Any, int, int, int]]:
    """(label, model config, batch, ctx, steps of its longest run) of every distinct model the experiments of
    ``size`` train, those that cost the campaign most first: the expected H100 seconds of every workload that trains
    the model (:func:`analysis.compute.plan.h100_seconds`), summed, descending, so that a budget that stops early has timed
    the models that size the campaign most."""

    size = validate_size(size)
    names = list(only) if only else sorted(EXPERIMENTS)
    first: dict[tuple[Any, int, int], tuple[str, int]] = {}  # key -> (label of its first workload, longest run)
    cost: dict[tuple[Any, int, int], float] = {}
    for name in names:
        exp = Experiment(get_experiment(name))
        cfg = config_for(exp.module, size)
        for w in exp.plan(cfg):
            if w.model is None or w.steps <= 0:
                continue
            key = (w.model, w.batch, w.ctx)
            label, steps = first.get(key, (f"{name}: {w.label}", 0))
            first[key] = (label, max(steps, w.steps))
            cost[key] = cost.get(key, 0.0) + h100_seconds([w])
    order = sorted(first, key=lambda k: -cost[k])  # stable: ties keep the experiments' order
    return [(first[k][0], k[0], k[1], k[2], first[k][1]) for k in order]


COMPILE_MODES = ("auto", "eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs")


def time_steps(label: str, model_cfg: Any, batch: int, ctx: int, device: torch.device, repeats: int = 5,
               warmup: int = 3, compile_mode: str = "auto", run_steps: int | None = None,
               eager_too: bool = True) -> StepTiming:
    """Median seconds of the training steps of ``model_cfg`` after the ``warmup`` + 1 untimed ones (train_lm on
    random bytes, learning rate 1e-4, ``warmup + repeats`` steps), compiled as ``compile_mode`` says: "auto" as a run
    of ``run_steps`` steps (default: the steps timed here) trains on ``device``, "eager" not at all. The overhead is
    the untimed steps' time, from the call, beyond as many median steps; when the steps were compiled and
    ``eager_too``, the same model is timed again eagerly (:attr:`StepTiming.break_even_steps`)."""

    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0; got {repeats}, {warmup}")
    if compile_mode not in COMPILE_MODES:
        raise ValueError(f"compile_mode must be one of {', '.join(COMPILE_MODES)}; got {compile_mode!r}")
    mode = (resolve_compile_mode("auto", device.type, run_steps or warmup + repeats) if compile_mode == "auto"
            else None if compile_mode == "eager" else compile_mode)
    durations, overhead, params, compiled = _timed_run(label, model_cfg, batch, ctx, device, repeats, warmup, mode)
    eager = None
    if compiled and eager_too:
        if device.type == "cuda":  # the compiled run's graphs and memory pool go before the eager run allocates
            gc.collect()
            torch.cuda.empty_cache()
        try:
            eager = float(statistics.median(_timed_run(label, model_cfg, batch, ctx, device, repeats, warmup,
                                                       None)[0]))
        except torch.OutOfMemoryError:  # an eager step can need more memory than the compiled one: not timed
            eager = None
    flops = cached_step_cost(model_cfg, batch, ctx)[2]
    return StepTiming(label, asdict(model_cfg), batch, ctx, int(model_cfg.layers), int(params), float(flops),
                      float(statistics.median(durations)), float(durations.min()), float(durations.max()),
                      int(durations.size), compile_mode, compiled, overhead, eager)


def _timed_run(label: str, model_cfg: Any, batch: int, ctx: int, device: torch.device, repeats: int, warmup: int,
               mode: str | None) -> tuple[npt.NDArray[np.float64], float, int, bool | None]:
    """One train_lm run of ``warmup + repeats`` steps timed at each step: (durations of the steps after the
    ``warmup`` + 1 untimed ones, overhead s, parameters, whether compile ran)."""

    gen = np.random.default_rng(0)
    # bytes where the vocabulary fits one (the corpora's own dtype), else int32 (a recall task's larger vocabulary)
    dtype = np.uint8 if model_cfg.vocab <= 256 else np.int32
    tokens = gen.integers(0, model_cfg.vocab, size=max(4 * batch * (ctx + 1), 4 * ctx + 8), dtype=dtype)
    torch.manual_seed(0)
    model = LanguageModel(model_cfg)
    params = sum(p.numel() for p in model.parameters())
    stamps: list[float] = []

    def on_step(step: int, _: torch.nn.Module) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()
        stamps.append(time.perf_counter())

    start = time.perf_counter()
    log = train_lm(model, tokens, TrainConfig(steps=warmup + repeats, batch=batch, lr=1e-4, seed=0), ctx, device,
                   on_step=on_step, progress=False, explode_factor=math.inf, compile_mode=mode)
    durations = np.diff(stamps)[warmup:]
    if durations.size < 1:
        raise RuntimeError(f"{label}: training stopped after {len(stamps) - 1} of {warmup + repeats} steps")
    overhead = max(0.0, stamps[warmup] - start - (warmup + 1) * float(np.median(durations)))
    return durations, overhead, params, log.compiled


def measure(size: str, device: torch.device, budget_s: float = math.inf, only: list[str] | None = None,
            repeats: int = 5, warmup: int = 3, progress: bool = True, compile_mode: str = "auto",
            on_timing: Callable[[list[StepTiming]], None] | None = None) -> list[StepTiming]:
    """:func:`time_steps` for each model of :func:`training_models`, in order, until ``budget_s`` seconds are
    spent (a model started is finished); ``on_timing`` is given the timings so far after each model (to save them
    as they come, so that a command cut short keeps what it measured)."""
    start = time.perf_counter()
    out: list[StepTiming] = []
    for label, model_cfg, batch, ctx, steps in training_models(size, only):
        if time.perf_counter() - start >= budget_s:
            break
        timing = time_steps(label, model_cfg, batch, ctx, device, repeats, warmup, compile_mode, steps)
        out.append(timing)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        if on_timing is not None:
            on_timing(out)
        if progress:
            print(f"{timing.label}: {1e3 * timing.seconds:.1f} ms a step ({timing.layers} layers, "
                  f"{timing.flops_per_s / 1e12:.3g} TFLOP/s), {timing.overhead_s:.1f} s of overhead"
                  + (f"; eager {1e3 * timing.eager_seconds:.1f} ms" if timing.eager_seconds is not None else ""),
                  flush=True)
    return out


def save(timings: list[StepTiming], size: str, directory: str | Path | None = None) -> Path:
    """Write the timings with their provenance to ``<directory>/steptimes.<scale>.<device tag>.json``; timings in
    another compile mode than the experiments' ("auto") go to ``...<device tag>.<mode>.json``, outside the fit."""

    if not timings:
        raise ValueError("timings must hold at least one measured model")
    folder = Path(directory) if directory is not None else BENCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    modes = {t.compile_mode for t in timings}
    if len(modes) != 1:
        raise ValueError(f"timings must share one compile mode; got {sorted(modes)}")
    mode = modes.pop()
    suffix = "" if mode == "auto" else f".{mode}"
    path = folder / f"steptimes.{validate_size(size)}.{device_tag(device_name())}{suffix}.json"
    rows = [{**asdict(t), "tokens_per_s": t.tokens_per_s, "flops_per_s": t.flops_per_s,
             "bf16_peak_fraction": t.flops_per_s / H100_BF16_DENSE_FLOPS} for t in timings]
    payload = {"scale": size, "provenance": provenance(sum(t.seconds * t.steps for t in timings)), "rows": rows}
    write_json_atomic(path, payload)
    return path


# What the fast training step is held to on an H100 (dense bf16 peak :data:`analysis.compute.plan.H100_BF16_DENSE_FLOPS`):
# models of at least TARGET_MIN_PARAMS parameters at 1,024 tokens reach PEAK_FRACTION_TARGET of the peak in counted
# FLOPs, and the 8-layer GAU of d = 256 SPEEDUP_TARGET times the tokens/s of its step timed by hand on the eager path
PEAK_FRACTION_TARGET = 0.35
SPEEDUP_TARGET = 10.0
TARGET_MIN_PARAMS = 100_000_000
TARGET_RUN_STEPS = 1000  # the targets are timed as a run this long trains: compiled, with CUDA graphs, on a GPU


@dataclass(frozen=True)
class Target:
    """A model whose training step is held to a target on an H100: a fraction of the bf16 peak in counted FLOPs
    (``min_peak_fraction``), or a multiple of a reference step's tokens/s (``reference``, ``min_speedup``)."""

    name: str
    label: str
    model: Any  # a ModelConfig
    batch: int
    ctx: int
    min_peak_fraction: float | None = None
    reference: MeasuredStep | None = None
    min_speedup: float | None = None


@dataclass(frozen=True)
class TargetResult:
    """A target's timed step (compiled as the experiments train), the eager step of the same model timed in the same
    process, and whether the target is met (None: not a measurement, off a GPU or at smoke scale)."""

    target: Target
    timing: StepTiming
    eager: StepTiming
    measured: bool  # timed on a CUDA device at gpu scale

    @property
    def peak_fraction(self) -> float:
        """Counted FLOPs per second / the H100's dense bf16 peak."""
        return self.timing.flops_per_s / H100_BF16_DENSE_FLOPS

    @property
    def speedup(self) -> float | None:
        """tokens/s / the reference step's tokens/s (None without a reference)."""
        ref = self.target.reference
        return None if ref is None else self.timing.tokens_per_s / (ref.batch * ref.ctx / ref.seconds)

    @property
    def eager_speedup(self) -> float:
        """Eager seconds per token / compiled seconds per token, both timed here."""
        return self.eager.seconds / self.timing.seconds

    @property
    def met(self) -> bool | None:
        """peak_fraction >= min_peak_fraction, or speedup >= min_speedup; None when not measured."""
        if not self.measured:
            return None
        t = self.target
        if t.min_peak_fraction is not None:
            return self.peak_fraction >= t.min_peak_fraction
        speedup = self.speedup
        return speedup is not None and t.min_speedup is not None and speedup >= t.min_speedup

    def row(self) -> dict[str, Any]:
        """The result as one JSON row."""
        t = self.target
        return {"name": t.name, "label": t.label, "model": asdict(t.model), "batch": t.batch, "ctx": t.ctx,
                "parameters": self.timing.parameters, "flops": self.timing.flops, "seconds": self.timing.seconds,
                "tokens_per_s": self.timing.tokens_per_s, "bf16_peak_fraction": self.peak_fraction,
                "min_peak_fraction": t.min_peak_fraction, "reference": None if t.reference is None else {
                    "label": t.reference.label, "batch": t.reference.batch, "ctx": t.reference.ctx,
                    "seconds": t.reference.seconds, "source": t.reference.source},
                "speedup": self.speedup, "min_speedup": t.min_speedup, "eager_seconds": self.eager.seconds,
                "eager_speedup": self.eager_speedup, "met": self.met,
                "timing": asdict(self.timing), "eager": asdict(self.eager)}

    def line(self) -> str:
        """One printed line: the step, its throughput, and the target with its outcome."""
        t = self.target
        if t.min_peak_fraction is not None:
            goal = f"{100 * self.peak_fraction:.1f}% of the bf16 peak (target {100 * t.min_peak_fraction:.0f}%)"
        else:
            goal = f"{self.speedup:.1f}x the eager reference's tokens/s (target {t.min_speedup:g}x)"
        outcome = {True: "met", False: "NOT met", None: "not a measurement"}[self.met]
        return (f"{t.label}: {1e3 * self.timing.seconds:.1f} ms a step, {self.timing.tokens_per_s:,.0f} tokens/s, "
                f"{goal}: {outcome}; {self.eager_speedup:.2f}x the eager step timed here")


def time_targets(targets: Sequence[Target], size: str, device: torch.device, repeats: int = 5, warmup: int = 3,
                 progress: bool = True, on_result: Callable[[list[TargetResult]], None] | None = None,
                 skip: frozenset[str] = frozenset()) -> list[TargetResult]:
    """Each of ``targets`` (but those named in ``skip``) timed twice by :func:`time_steps`: as
    a run of :data:`TARGET_RUN_STEPS` steps trains (compiled, CUDA graphs, on a GPU) and eagerly; ``on_result`` is
    given the results so far after each target."""
    out: list[TargetResult] = []
    measured = device.type == "cuda" and validate_size(size) == "gpu"
    for t in targets:
        if t.name in skip:
            continue
        timing = time_steps(t.label, t.model, t.batch, t.ctx, device, repeats, warmup, "auto", TARGET_RUN_STEPS)
        eager = time_steps(t.label, t.model, t.batch, t.ctx, device, repeats, warmup, "eager")
        out.append(TargetResult(t, timing, eager, measured))
        if device.type == "cuda":
            torch.cuda.empty_cache()
        if on_result is not None:
            on_result(out)
        if progress:
            print(out[-1].line(), flush=True)
    return out


def targets_path(size: str, directory: str | Path | None = None, tag: str | None = None) -> Path:
    """``<directory>/efficiency.<scale>.<device tag>.json``: the efficiency record of this device (or ``tag``)."""

    folder = Path(directory) if directory is not None else BENCH_DIR
    return folder / f"efficiency.{validate_size(size)}.{tag or device_tag(device_name())}.json"


def recorded_targets(size: str, targets: Sequence[Target], directory: str | Path | None = None,
                     tag: str | None = None) -> dict[str, dict[str, Any]]:
    """The rows of this device's (or ``tag``'s) efficiency record by target name, {} without one; rows of a target
    not in ``targets``, or of another model or size, are left out (they are timed again)."""
    path = targets_path(size, directory, tag)
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text()).get("rows", [])
    now = {t.name: t for t in targets}
    return {r["name"]: r for r in rows if r.get("name") in now and r.get("model") == asdict(now[r["name"]].model)
            and (r.get("batch"), r.get("ctx")) == (now[r["name"]].batch, now[r["name"]].ctx)}


def save_targets(results: list[TargetResult], size: str, targets: Sequence[Target],
                 directory: str | Path | None = None, earlier: dict[str, dict[str, Any]] | None = None) -> Path:
    """Write the results with their provenance to ``<directory>/efficiency.<scale>.<device tag>.json``, beside the
    ``earlier`` rows (:func:`recorded_targets`) of the targets not timed again; each new row carries its date, and the
    record's provenance is this run's."""

    if not results:
        raise ValueError("results must hold at least one timed target")
    path = targets_path(size, directory)
    wall = sum(r.timing.seconds * r.timing.steps + r.eager.seconds * r.eager.steps for r in results)
    prov = provenance(wall)
    rows = {**(earlier or {}), **{r.target.name: {**r.row(), "date": prov["date"]} for r in results}}
    order = [t.name for t in targets]
    payload = {"scale": size, "peak_flops": H100_BF16_DENSE_FLOPS, "provenance": prov,
               "rows": sorted(rows.values(), key=lambda r: order.index(r["name"]) if r["name"] in order else 99)}
    write_json_atomic(path, payload)
    return path


def efficiency_table(targets: Sequence[Target], size: str = "gpu", directory: str | Path | None = None) -> str:
    """Markdown: each efficiency record of ``size`` (one per GPU kind) as a table, per target: parameters, the
    compiled step (ms), the eager step timed beside it, eager over compiled, the counted-FLOP fraction of the bf16
    peak, and the target with whether it is met; a sentence when no GPU has timed them."""
    import re

    folder = Path(directory) if directory is not None else BENCH_DIR
    parts = []
    for path in sorted(folder.glob(f"efficiency.{validate_size(size)}.*.json")):
        tag = path.name.split(".")[2]
        prov = json.loads(path.read_text()).get("provenance", {})
        rows = recorded_targets(size, targets, folder, tag)
        if not rows:
            continue
        lines = ["| model | parameters | step, compiled | eager | speed-up | bf16 peak | target: met? |",
                 "|---|--:|--:|--:|--:|--:|---|"]
        for r in rows.values():
            met = {True: "yes", False: "**no**", None: "not a measurement"}[r.get("met")]
            if r.get("min_peak_fraction") is not None:
                goal = f"≥ {100 * r['min_peak_fraction']:.0f}% of the peak: {met}"
            else:
                got = f"{r['speedup']:.1f}x, " if r.get("speedup") is not None else ""
                goal = (f"≥ {r['min_speedup']:g}x the {1e3 * r['reference']['seconds']:.0f} ms eager step's "
                        f"tokens/s: {got}{met}")
            label = re.sub(r", [0-9.]+ M parameters", "", r["label"])
            lines.append(f"| {label} | {r['parameters'] / 1e6:.1f} M | {1e3 * r['seconds']:.1f} ms | "
                         f"{1e3 * r['eager_seconds']:.1f} ms | {r['eager_speedup']:.2f}x | "
                         f"{100 * r['bf16_peak_fraction']:.1f}% | {goal} |")
        where = (f"{prov.get('device', tag)}, torch {prov.get('torch', '?')}, commit "
                 f"{str(prov.get('git_commit', '?'))[:10]}, {str(prov.get('date', '?'))[:10]}")
        parts.append(f"Measured on {where} (`{path.name}`; speed-up: the eager step over the compiled one):\n\n"
                     + "\n".join(lines))
    if not parts:
        return ("No GPU has timed the efficiency targets yet (`python -m analysis steptimes --targets` on a GPU "
                "records them).")
    return "\n\n".join(parts)
