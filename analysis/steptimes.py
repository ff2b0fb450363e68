"""Training-step times of every model a scale trains, measured through the trainer itself, and the step-time model
fitted to them.

For each distinct (model, batch, length) that the experiments of a scale train (their plans' training workloads),
:func:`time_steps` runs :func:`analysis.train.train_lm` for ``warmup + repeats`` steps on random bytes and times
each step between the trainer's per-step callbacks (the device synchronised at each), so that a measured step is
the one the experiments run: on a GPU bf16 autocast, fused AdamW, clipping and the compiled model (``compile_mode``
"auto": CUDA graphs; the warm-up steps absorb the compilation and the graph capture). The median of the timed
steps is kept, with the smallest and largest, tokens per second, achieved FLOP/s (the step's counted FLOPs, from
:func:`analysis.plan.cached_step_cost`) and, on a GPU, the fraction of the H100's dense bf16 peak.

A GPU's measurements are written to ``results/benchmarks/steptimes.<scale>.<device>.json``;
:func:`analysis.plan.h100_steps` reads the H100 ones beside the steps measured before, so that the campaign's
estimates follow them.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from analysis.plan import H100_BF16_DENSE_FLOPS, MeasuredStep, cached_step_cost
from analysis.scale import validate_scale

BENCH_DIR = Path(__file__).resolve().parent.parent / "results" / "benchmarks"


@dataclass(frozen=True)
class StepTiming:
    """One model's measured training steps."""

    label: str  # "experiment: workload label" of the first workload that trains it
    model: dict[str, Any]  # the ModelConfig's fields
    batch: int
    ctx: int
    layers: int
    parameters: int
    flops: float  # counted FLOPs of one step (forward + backward)
    seconds: float  # median over the timed steps
    fastest: float
    slowest: float
    steps: int  # timed steps (after the warm-up ones)
    compile_mode: str = "auto"  # "auto": as the experiments' run trains (CUDA graphs on a GPU for long runs), or another

    @property
    def tokens_per_s(self) -> float:
        """batch x ctx / seconds."""
        return self.batch * self.ctx / self.seconds

    @property
    def flops_per_s(self) -> float:
        """Counted FLOPs / seconds."""
        return self.flops / self.seconds

    def measured_step(self, source: str) -> MeasuredStep:
        """This timing as a MeasuredStep (the median seconds), for the step-time fit."""
        from analysis.models.lm import ModelConfig

        return MeasuredStep(self.label, ModelConfig(**self.model), self.batch, self.ctx, self.seconds, source)


def training_models(scale: str, only: list[str] | None = None) -> list[tuple[str, Any, int, int, int]]:
    """(label, model config, batch, ctx, steps of its longest run) of every distinct model the experiments of
    ``scale`` train, in experiment order, the largest number of training steps first within each."""
    from analysis.core.trials import Experiment
    from analysis.experiments import EXPERIMENTS, config_for, get_experiment

    scale = validate_scale(scale)
    names = list(only) if only else sorted(EXPERIMENTS)
    seen: set[tuple[Any, int, int]] = set()
    out: list[tuple[str, Any, int, int, int]] = []
    for name in names:
        exp = Experiment(get_experiment(name))
        cfg = config_for(exp.module, scale)
        work = [w for w in exp.plan(cfg) if w.model is not None and w.steps > 0]
        for w in sorted(work, key=lambda w: -w.steps * w.count):
            key = (w.model, w.batch, w.ctx)
            if key not in seen:
                seen.add(key)
                out.append((f"{name}: {w.label}", w.model, w.batch, w.ctx, w.steps))
    return out


COMPILE_MODES = ("auto", "eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs")


def time_steps(label: str, model_cfg: Any, batch: int, ctx: int, device: torch.device, repeats: int = 5,
               warmup: int = 3, compile_mode: str = "auto", run_steps: int | None = None) -> StepTiming:
    """Median seconds of ``repeats`` training steps of ``model_cfg`` after ``warmup`` untimed ones (train_lm on
    random bytes, learning rate 1e-4), compiled as ``compile_mode`` says: "auto" as a run of ``run_steps`` steps
    (default: the steps timed here) trains on ``device``, "eager" not at all."""
    from analysis.models.lm import LanguageModel
    from analysis.train import TrainConfig, resolve_compile_mode, train_lm

    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0; got {repeats}, {warmup}")
    if compile_mode not in COMPILE_MODES:
        raise ValueError(f"compile_mode must be one of {', '.join(COMPILE_MODES)}; got {compile_mode!r}")
    mode = (resolve_compile_mode("auto", device.type, run_steps or warmup + repeats) if compile_mode == "auto"
            else None if compile_mode == "eager" else compile_mode)
    gen = np.random.default_rng(0)
    tokens = gen.integers(0, model_cfg.vocab, size=max(4 * batch * (ctx + 1), 4 * ctx + 8), dtype=np.uint8)
    torch.manual_seed(0)
    model = LanguageModel(model_cfg)
    params = sum(p.numel() for p in model.parameters())
    stamps: list[float] = []

    def on_step(step: int, _: torch.nn.Module) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()
        stamps.append(time.perf_counter())

    train_lm(model, tokens, TrainConfig(steps=warmup + repeats, batch=batch, lr=1e-4, seed=0), ctx, device,
             on_step=on_step, progress=False, explode_factor=math.inf, compile_mode=mode)
    durations = np.diff(stamps)[warmup:]
    if durations.size < 1:
        raise RuntimeError(f"{label}: training stopped after {len(stamps) - 1} of {warmup + repeats} steps")
    flops = cached_step_cost(model_cfg, batch, ctx)[2]
    return StepTiming(label, asdict(model_cfg), batch, ctx, int(model_cfg.layers), int(params), float(flops),
                      float(statistics.median(durations)), float(durations.min()), float(durations.max()),
                      int(durations.size), compile_mode)


def measure(scale: str, device: torch.device, budget_s: float = math.inf, only: list[str] | None = None,
            repeats: int = 5, warmup: int = 3, progress: bool = True, compile_mode: str = "auto") -> list[StepTiming]:
    """:func:`time_steps` for each model of :func:`training_models`, in order, until ``budget_s`` seconds are
    spent (a model started is finished)."""
    start = time.perf_counter()
    out = []
    for label, model_cfg, batch, ctx, steps in training_models(scale, only):
        if time.perf_counter() - start >= budget_s:
            break
        timing = time_steps(label, model_cfg, batch, ctx, device, repeats, warmup, compile_mode, steps)
        out.append(timing)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        if progress:
            print(f"{timing.label}: {1e3 * timing.seconds:.1f} ms a step ({timing.layers} layers, "
                  f"{timing.flops_per_s / 1e12:.3g} TFLOP/s)", flush=True)
    return out


def device_tag(name: str) -> str:
    """A file-name tag of a device name: 'NVIDIA H100 80GB HBM3' -> 'h100', a CPU -> 'cpu'."""
    if name.startswith("CPU"):
        return "cpu"
    m = re.search(r"\b([A-Z]\d{2,4}[A-Za-z]?)\b", name)
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def save(timings: list[StepTiming], scale: str, directory: str | Path | None = None) -> Path:
    """Write the timings with their provenance to ``<directory>/steptimes.<scale>.<device tag>.json``; timings in
    another compile mode than the experiments' ("auto") go to ``...<device tag>.<mode>.json``, outside the fit."""
    from analysis.results import device_name, provenance

    if not timings:
        raise ValueError("timings must hold at least one measured model")
    folder = Path(directory) if directory is not None else BENCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    modes = {t.compile_mode for t in timings}
    if len(modes) != 1:
        raise ValueError(f"timings must share one compile mode; got {sorted(modes)}")
    mode = modes.pop()
    suffix = "" if mode == "auto" else f".{mode}"
    path = folder / f"steptimes.{validate_scale(scale)}.{device_tag(device_name())}{suffix}.json"
    rows = [{**asdict(t), "tokens_per_s": t.tokens_per_s, "flops_per_s": t.flops_per_s,
             "bf16_peak_fraction": t.flops_per_s / H100_BF16_DENSE_FLOPS} for t in timings]
    payload = {"scale": scale, "provenance": provenance(sum(t.seconds * t.steps for t in timings)), "rows": rows}
    path.write_text(json.dumps(payload, indent=1, default=float) + "\n")
    return path


def load(path: str | Path) -> list[StepTiming]:
    """The timings of a file written by :func:`save`."""
    from analysis.models.lm import ModelConfig

    rows = json.loads(Path(path).read_text())["rows"]
    fields = StepTiming.__dataclass_fields__
    out = []
    for r in rows:
        ModelConfig(**r["model"])  # a model this code can build
        out.append(StepTiming(**{k: r[k] for k in fields if k in r}))  # files before compile_mode: "auto"
    return out
