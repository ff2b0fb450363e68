"""The dry run of a scale: what every experiment would cost, proven to build and step without running it.

Each experiment's ``plan(cfg)`` lists its work as :class:`analysis.core.experiment.Workload` items: a
language model trained (or evaluated) ``count`` times for ``steps`` steps at
(batch, ctx), or an exact count of the FLOPs and bytes of its sampling work.
:func:`plan_experiment` turns them into

* parameters of the largest model;
* FLOPs per run: one training step (forward and backward) of each model counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on the meta device, times steps and
  count; sampling work by its stated count;
* estimated H100 minutes from the step times measured on an H100 (:data:`H100_STEPS`): a training step costs a
  fixed time per layer (kernel launches) plus its FLOPs at a fitted rate (:func:`h100_step_model`); a forward-only
  batch a third of both; counted sampling work its FLOPs at the fitted rate;
* estimated peak memory: 16 bytes per parameter (fp32 weights, gradients, AdamW's two
  moments) plus the activations saved for backward, measured on the meta device;

and, with ``execute=True``, builds each distinct model on the CPU and runs one
truncated training step (batch 1, at most 64 positions) where it has at most
20 M parameters, else one full-length step on the meta device with at most 2 layers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from analysis.compute.cost import _loss, build_model, step_cost
from analysis.core.registry import config_for, get_experiment
from analysis.core.trials import Experiment
from analysis.models.lm import ModelConfig
from analysis.training.train import resolve_compile_mode

H100_BF16_DENSE_FLOPS = 989e12  # NVIDIA H100 SXM, dense bf16 tensor-core peak
H100_MEMORY_GB = 80.0
BYTES_PER_PARAM_TRAINING = 16  # fp32 weights + gradients + AdamW exp_avg + exp_avg_sq
CPU_STEP_MAX_PARAMS = 20_000_000
CPU_STEP_MAX_CTX = 64
BENCH_DIR = Path(__file__).resolve().parents[2] / "results" / "benchmarks"  # the benchmarks' records


@dataclass(frozen=True)
class MeasuredStep:
    """One training step's time measured on a GPU: the model, batch and length it ran, and where it is reported."""

    label: str
    model: Any  # a ModelConfig
    batch: int
    ctx: int
    seconds: float
    source: str
    compiled: bool | None = None  # True: torch.compile ran; False: it failed and the run was eager; None: eager as asked
    overhead_s: float | None = None  # what its run's untimed first steps took beyond as many timed ones (compiling,
    #                                  capturing CUDA graphs, moving the model to the device); None: not measured
    eager_seconds: float | None = None  # the same model's eager step, timed beside a compiled one; None: not timed


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
    compiled: bool | None = None  # whether torch.compile ran (False: it failed and the steps were eager); None: not asked
    overhead_s: float | None = None  # the untimed first steps' time beyond as many median steps: compiling, capturing
    #                                  CUDA graphs, moving the model to the device (None: a file from before)
    eager_seconds: float | None = None  # median eager step of the same model, when the timed steps were compiled

    @property
    def break_even_steps(self) -> float | None:
        """Steps after which compiling pays: overhead_s / (eager_seconds - seconds); inf when the compiled step is
        not faster; None when either time was not measured."""
        if self.overhead_s is None or self.eager_seconds is None:
            return None
        saved = self.eager_seconds - self.seconds
        return self.overhead_s / saved if saved > 0 else math.inf

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

        return MeasuredStep(self.label, ModelConfig(**self.model), self.batch, self.ctx, self.seconds, source,
                            self.compiled, self.overhead_s, self.eager_seconds)


def load(path: str | Path) -> list[StepTiming]:
    """The timings of a file written by :func:`save`."""

    rows = json.loads(Path(path).read_text())["rows"]
    fields = StepTiming.__dataclass_fields__
    out = []
    for r in rows:
        ModelConfig(**r["model"])  # a model this code can build
        out.append(StepTiming(**{k: r[k] for k in fields if k in r}))  # files before compile_mode: "auto"
    return out


def h100_steps() -> tuple[MeasuredStep, ...]:
    """The training steps measured on an H100 that size the gpu campaign (:func:`gpu_steps` of tag "h100")."""
    return gpu_steps("h100")


def gpu_steps(tag: str = "h100", directory: Any = None) -> tuple[MeasuredStep, ...]:
    """The measured training steps that size the campaign on a GPU tagged ``tag`` ("h100", "h200"): the steps
    ``python -m analysis steptimes`` timed on that kind through the trainer's own path, else those timed so on an
    H100; else the compiled steps of that kind's efficiency record (:func:`efficiency_steps`), else an H100's; else
    the four eager steps timed by hand on an H100 (:data:`H100_STEPS_NOTE`). The hand-timed steps ran a path the
    trainer no longer takes on CUDA (eager, unfused AdamW, the dense GAU), so a fit is never made over both: the
    two-term model would average a launch cost that compilation removes with one it keeps."""
    for read in (benchmarked_steps, efficiency_steps):
        for t in dict.fromkeys((tag, "h100")):
            steps = read(t, directory)
            if len(steps) >= 2:
                return steps
    return hand_measured_h100_steps()


def gpu_steps_basis(tag: str = "h100", directory: Any = None) -> str:
    """Where :func:`gpu_steps` of ``tag`` comes from, in words: "the H200's steptimes record" or the hand-timed steps."""
    steps = gpu_steps(tag, directory)
    if steps == hand_measured_h100_steps():
        return f"the {len(steps)} H100 training steps timed by hand ({H100_STEPS_NOTE})"
    files = sorted({s.source for s in steps})
    return f"{len(steps)} training steps timed by `steptimes` ({', '.join(files)})"


def benchmarked_steps(tag: str, directory: Any = None) -> tuple[MeasuredStep, ...]:
    """Every step timed by ``python -m analysis steptimes`` on devices tagged ``tag``, as MeasuredStep."""

    folder = Path(directory) if directory is not None else BENCH_DIR
    out = []
    for path in sorted(folder.glob(f"steptimes.*.{tag}.json")):
        out.extend(t.measured_step(path.name) for t in load(path))
    return tuple(out)


def efficiency_steps(tag: str, directory: Any = None) -> tuple[MeasuredStep, ...]:
    """The compiled training steps of the efficiency record ``efficiency.gpu.<tag>.json`` (``steptimes --targets``),
    as MeasuredStep: each target's step timed as a long run trains it, with the eager step timed beside it."""

    path = (Path(directory) if directory is not None else BENCH_DIR) / f"efficiency.gpu.{tag}.json"
    if not path.is_file():
        return ()
    out = []
    for row in json.loads(path.read_text()).get("rows", []):
        timing = row.get("timing") or {}
        if timing.get("compiled") is not True:  # a compile that failed timed an eager step: not this path
            continue
        out.append(MeasuredStep(row["label"], ModelConfig(**row["model"]), int(row["batch"]), int(row["ctx"]),
                                float(row["seconds"]), path.name, True, timing.get("overhead_s"),
                                row.get("eager_seconds")))
    return tuple(out)


def hand_measured_h100_steps() -> tuple[MeasuredStep, ...]:
    """The four steps timed by hand on an H100 before the trainer's fast path (:data:`H100_STEPS_NOTE`): an 8-layer
    GAU of d = 256 at 512 tokens, and gau-quality's Transformer++, FLASH-Quad and FLASH at d = 512, 1,024 tokens."""

    quality = "gau-quality's gpu size, measured on an H100 before its 4-hour run was cut (README, commit d030333)"
    gau = dict(vocab=256, d=512, layers=16, residual="post", s=128, chunk=128, ctx=1024, gau_backend="dense")
    return (
        MeasuredStep("GAU, 8 layers, d = 256, n = 512", ModelConfig(d=256, layers=8, block="gau", s=64, ctx=512,
                                                                     gau_backend="dense"),
                     32, 512, 0.036, "gau-length's gpu sizing on an H100 (commit a33b6de)"),
        MeasuredStep("Transformer++, 8 layers, d = 512, n = 1024",
                     ModelConfig(vocab=256, d=512, layers=8, block="transformer", residual="pre", norm="rmsnorm",
                                 ffn="swiglu", positions="rope", heads=8, ctx=1024), 32, 1024, 0.080, quality),
        MeasuredStep("FLASH-Quad, 16 GAU layers, d = 512, n = 1024", ModelConfig(block="gau", **gau),  # type: ignore[arg-type]
                     32, 1024, 0.093, quality),
        MeasuredStep("FLASH, 16 layers, d = 512, n = 1024", ModelConfig(block="flash", **gau),  # type: ignore[arg-type]
                     32, 1024, 0.116, quality),
    )


H100_STEPS_NOTE = ("measured on one H100 80GB HBM3 with torch 2.11 in eager mode, bf16 autocast, AdamW (not fused), "
                   "the GAU's dense n x n path, batch 32")


@dataclass(frozen=True)
class StepTimeModel:
    """t = L x layer_s + F / flops_per_s for a training step of L layers and F FLOPs (forward + backward), fitted to
    measured steps; a forward-only batch costs a third of both terms."""

    layer_s: float
    flops_per_s: float
    worst_error: float  # the largest |predicted / measured - 1| over the steps it was fitted to

    def step_s(self, layers: int, fwd_bwd_flops: float) -> float:
        """Seconds of one training step: layers x layer_s + FLOPs / flops_per_s."""
        return layers * self.layer_s + fwd_bwd_flops / self.flops_per_s

    def eval_s(self, layers: int, fwd_flops: float) -> float:
        """Seconds of one forward-only batch: (layers x layer_s) / 3 + FLOPs / flops_per_s."""
        return layers * self.layer_s / 3.0 + fwd_flops / self.flops_per_s


def fit_step_model(steps: tuple[MeasuredStep, ...]) -> StepTimeModel:
    """Non-negative least squares in relative error: a, b >= 0 minimising sum_i ((L_i a + F_i b) / t_i - 1)^2."""
    from scipy.optimize import nnls

    if len(steps) < 2:
        raise ValueError(f"steps must hold at least 2 measured steps to fit 2 parameters; got {len(steps)}")
    for m in steps:
        if not (math.isfinite(m.seconds) and m.seconds > 0):
            raise ValueError(f"seconds of measured step {m.label!r} must be positive and finite; got {m.seconds!r}")
    flops = [cached_step_cost(m.model, m.batch, m.ctx)[2] for m in steps]
    rows = np.array([[m.model.layers / m.seconds, f / m.seconds] for m, f in zip(steps, flops)])
    (a, b), _ = nnls(rows, np.ones(len(steps)))
    model = StepTimeModel(float(a), 1.0 / float(b) if b > 0 else math.inf, 0.0)
    worst = max(abs(model.step_s(m.model.layers, f) / m.seconds - 1) for m, f in zip(steps, flops))
    return dataclasses.replace(model, worst_error=float(worst))


def h100_step_model() -> StepTimeModel:
    """The step-time model fitted to :func:`h100_steps` (the H100 step times this book has measured)."""
    return gpu_step_model("h100")


def gpu_step_model(tag: str = "h100") -> StepTimeModel:
    """The step-time model fitted to :func:`gpu_steps` of ``tag`` (t = L a + F / rate, in relative error)."""
    return gpu_basis(tag).model


def cost_key(model: Any, batch: int, ctx: int) -> tuple[Any, int, int]:
    """(model, batch, ctx) with the fields that change no count (:data:`COST_FREE_FIELDS`) set to one value: the
    key under which a measured step stands for every model that costs the same."""
    if dataclasses.is_dataclass(model) and all(hasattr(model, f) for f in COST_FREE_FIELDS):
        model = dataclasses.replace(model, **COST_FREE_FIELDS)
    return model, int(batch), int(ctx)


def run_compiles(steps: int) -> bool:
    """Whether a training run of ``steps`` steps on CUDA is compiled (the trainer's "auto": CUDA graphs for runs of at
    least :data:`analysis.training.train.COMPILE_MIN_STEPS` steps)."""

    return steps > 0 and resolve_compile_mode("auto", "cuda", steps) is not None


def fit_compile_overhead(steps: tuple[MeasuredStep, ...]) -> tuple[float, float] | None:
    """(base s, s per layer) of a compiled run's overhead o = base + L x per_layer, by least squares with both >= 0
    over the measured compiled steps that carry their overhead; with one such step (or one layer count) o is
    proportional to L through it; None when none was measured."""
    from scipy.optimize import nnls

    pts = [(m.model.layers, m.overhead_s) for m in steps if m.compiled is True and m.overhead_s is not None]
    if not pts:
        return None
    if len({layers for layers, _ in pts}) < 2:
        return 0.0, sum(o / layers for layers, o in pts) / len(pts)
    (base, per_layer), _ = nnls(np.array([[1.0, layers] for layers, _ in pts]), np.array([o for _, o in pts]))
    return float(base), float(per_layer)


# A compiled run's overhead (inductor compiling forward and backward, capturing the CUDA graphs) while no GPU of the
# kind has timed one: base + per layer, in seconds. An assumption, not a measurement: compiling a 12-layer GPT takes
# tens of seconds, and a stack's repeated layers share their kernels' code. A lease's own trials replace it
COMPILE_PRIOR = (30.0, 1.0)


@dataclass(frozen=True)
class StepBasis:
    """The measured steps that size work on a GPU: a measured (model, batch, length) is sized by its own step and
    the overhead its run measured; any other by the step model fitted to all of them and, when its run compiles,
    the compiling overhead fitted to the measured ones (:func:`fit_compile_overhead`), else :data:`COMPILE_PRIOR`."""

    model: StepTimeModel
    measured: dict[tuple[Any, int, int], MeasuredStep]
    compile_fit: tuple[float, float] | None  # (base s, s per layer), None: no compiled run's overhead measured

    def compile_overhead_s(self, layers: int) -> float:
        """Seconds a compiled run of ``layers`` layers spends compiling: the fit, else :data:`COMPILE_PRIOR`."""
        base, per_layer = self.compile_fit if self.compile_fit is not None else COMPILE_PRIOR
        return base + layers * per_layer

    def run_parts(self, w: Any) -> tuple[float, float]:
        """(steps s, overhead s) of one run of workload ``w`` (a trained or evaluated model): steps x step + eval
        batches x a third of a step, from its own measured step where there is one; the overhead is its compiling,
        paid once per model in a process (0 for an eager run)."""
        _, fwd, fwd_bwd, _ = cached_step_cost(w.model, w.batch, w.ctx)
        layers = int(w.model.layers)
        compiles = run_compiles(w.steps)
        m = self.measured.get(cost_key(w.model, w.batch, w.ctx))
        if m is not None and (m.compiled is not None) == compiles:  # timed as this run trains
            overhead = m.overhead_s if m.overhead_s is not None else (self.compile_overhead_s(layers) if compiles
                                                                      else 0.0)
            return w.steps * m.seconds + w.eval_batches * m.seconds / 3.0, overhead
        if m is not None and not compiles and m.eager_seconds is not None:  # an eager run of a model timed compiled
            return w.steps * m.eager_seconds + w.eval_batches * m.eager_seconds / 3.0, 0.0
        overhead = self.compile_overhead_s(layers) if compiles else 0.0
        return w.steps * self.model.step_s(layers, fwd_bwd) + w.eval_batches * self.model.eval_s(layers, fwd), overhead

    def run_seconds(self, w: Any) -> float:
        """Seconds of one run of workload ``w``, its compiling included (:meth:`run_parts`)."""
        return sum(self.run_parts(w))

    def seconds(self, workloads: Any, compiled: set[Any] | None = None) -> float:
        """Expected seconds of a list of workloads: each run by :meth:`run_parts`, times its count; counted FLOPs
        of sampling work at the fitted rate; plus each workload's stated overhead. With ``compiled``, the cost keys of
        the models a process has already compiled, a model in it pays no overhead again (dynamo reuses its graphs
        for a new instance of the same model) and each model compiled here is added to it; without, every run pays
        its own."""
        total = 0.0
        for w in workloads:
            total += w.overhead_s
            if w.model is None:
                total += w.count * w.flops / self.model.flops_per_s
                continue
            steps_s, overhead = self.run_parts(w)
            if compiled is None:
                total += w.count * (steps_s + overhead)
                continue
            key = cost_key(w.model, w.batch, w.ctx)
            total += w.count * steps_s + (0.0 if key in compiled else overhead)
            if overhead > 0 and run_compiles(w.steps):
                compiled.add(key)
        return total


def step_basis(steps: tuple[MeasuredStep, ...]) -> StepBasis:
    """The :class:`StepBasis` of measured ``steps``: their fitted step model, each by its cost key, their compiling
    overhead fit."""
    return StepBasis(fit_step_model(steps), {cost_key(m.model, m.batch, m.ctx): m for m in steps},
                     fit_compile_overhead(steps))


@lru_cache(maxsize=8)
def gpu_basis(tag: str = "h100") -> StepBasis:
    """The :class:`StepBasis` of :func:`gpu_steps` of ``tag``."""
    return step_basis(gpu_steps(tag))


def h100_seconds(workloads: Any) -> float:
    """Expected H100 seconds of a list of workloads (:func:`gpu_seconds` of tag "h100")."""
    return gpu_seconds(workloads, "h100")


def gpu_seconds(workloads: Any, tag: str = "h100", compiled: set[Any] | None = None) -> float:
    """Expected seconds of a list of workloads on a GPU tagged ``tag`` (:meth:`StepBasis.seconds` of
    :func:`gpu_basis`): a model's own measured step and overhead where it was timed, else the fitted step model
    (:meth:`StepTimeModel.step_s` per training step, :meth:`StepTimeModel.eval_s` per forward-only batch) and the
    fitted compiling overhead (once per model with ``compiled``); counted FLOPs at the fitted rate; plus each
    workload's stated overhead."""
    return gpu_basis(tag).seconds(workloads, compiled)


# ModelConfig fields that change no count of a step (a scalar factor on the logits, the initial draw): models that
# differ only in them share one count
COST_FREE_FIELDS = {"attn_alpha": 1.0, "cosine_scale": 10.0, "init": "xavier"}


def cached_step_cost(model: Any, batch: int, ctx: int) -> tuple[int, float, float, float]:
    """:func:`analysis.compute.cost.step_cost`, counted once per (model config, batch, ctx) up to :data:`COST_FREE_FIELDS`:
    an experiment split into trials lists the same model in many of them, or a model at many logit scales."""
    return _counted_step_cost(*cost_key(model, batch, ctx))


@lru_cache(maxsize=None)
def _counted_step_cost(model: Any, batch: int, ctx: int) -> tuple[int, float, float, float]:
    return step_cost(model, batch, ctx)


@dataclass
class Estimate:
    """What a scale of one experiment costs (estimated) and whether its models built and stepped."""

    experiment: str
    scale: str
    parameters: int = 0  # of the largest model
    flops: float = 0.0
    peak_memory_gb: float = 0.0
    h100_seconds: float = 0.0  # from the measured step times (h100_seconds)
    stepped: list[str] = field(default_factory=list)  # "label: cpu step" / "label: meta step"

    @property
    def h100_minutes(self) -> float:
        """Expected H100 minutes: h100_seconds / 60."""
        return self.h100_seconds / 60.0

    @property
    def utilisation(self) -> float:
        """The bf16 peak fraction those minutes imply: FLOPs / (h100_seconds x 989e12)."""
        return self.flops / (self.h100_seconds * H100_BF16_DENSE_FLOPS) if self.h100_seconds > 0 else 0.0

    @property
    def fits(self) -> bool:
        """Whether the estimated peak memory is within one H100's 80 GB."""
        return self.peak_memory_gb <= H100_MEMORY_GB


def truncated_step(config: Any, ctx: int, params: int) -> str:
    """Build the model (``params`` parameters) on the CPU and run one AdamW step at batch 1, min(ctx, 64) positions;
    above 20 M parameters, one full-length step on the meta device of the same model cut to at most 2 layers (its
    layers are one block repeated, so two give every shape, and a meta step costs seconds per layer). Returns which."""
    device = "cpu" if params <= CPU_STEP_MAX_PARAMS else "meta"
    if device == "meta" and isinstance(getattr(config, "layers", None), int) and config.layers > 2:
        config = dataclasses.replace(config, layers=2)
    with torch.device(device):
        model = build_model(config)
    if device == "meta":
        _loss(model, torch.zeros(1, ctx, dtype=torch.long, device="meta")).backward()
        return "meta step (full length, at most 2 layers)"
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 256, (1, min(ctx, CPU_STEP_MAX_CTX)), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss = _loss(model, idx)
    loss.backward()
    opt.step()
    if not math.isfinite(float(loss.detach())):
        raise RuntimeError(f"the truncated step of {config} gave a non-finite loss")
    return "cpu step (truncated)"


def _step_group(model: Any, params: int) -> tuple[Any, bool]:
    """Models that differ only in layer count and are stepped the same way (on the CPU, or on the meta device) share
    a group: (the config with 1 layer, whether it steps on the CPU)."""
    return dataclasses.replace(model, layers=1), params <= CPU_STEP_MAX_PARAMS


def plan_experiment(name: str, size: str, execute: bool = True) -> Estimate:
    """The cost estimate of experiment ``name`` at ``size``; with ``execute``, each model is built and stepped once."""

    exp = Experiment(get_experiment(name))
    cfg = config_for(exp.module, size)
    est = Estimate(name, size)
    peak = 0.0
    stepped: dict[Any, str] = {}
    workloads = exp.plan(cfg)
    # a stack's layers are one module repeated: a model that differs from a deeper one only in its layer count, and
    # is stepped the same way, is proven to build and step by the deeper one's step
    deepest: dict[tuple[Any, bool], int] = {}
    for w in workloads:
        if w.model is not None:
            group = _step_group(w.model, cached_step_cost(w.model, w.batch, w.ctx)[0])
            deepest[group] = max(deepest.get(group, 0), w.model.layers)
    est.h100_seconds = h100_seconds(workloads)
    for w in workloads:
        if w.model is None:
            est.flops += w.count * w.flops
            peak = max(peak, w.memory_bytes)
            continue
        params, fwd, fwd_bwd, saved = cached_step_cost(w.model, w.batch, w.ctx)
        est.parameters = max(est.parameters, params)
        est.flops += w.count * (w.steps * fwd_bwd + w.eval_batches * fwd)
        peak = max(peak, BYTES_PER_PARAM_TRAINING * params + saved)
        if execute and w.model not in stepped:
            layers = deepest[_step_group(w.model, params)]
            if layers > w.model.layers:  # the same layers, more of them, stepped on the same device
                stepped[w.model] = f"covered by the {layers}-layer step of the same model"
            else:
                stepped[w.model] = truncated_step(w.model, w.ctx, params)
            est.stepped.append(f"{w.label}: {stepped[w.model]}")
    est.peak_memory_gb = peak / 1e9
    return est


def plan_table(estimates: list[Estimate]) -> str:
    """A Markdown table of estimates, with a total row."""
    head = ("| experiment | parameters (largest model) | FLOPs | H100 minutes (from measured steps) | "
            "implied bf16 utilisation | peak memory (GB, of 80) |\n|---|---:|---:|---:|---:|---:|")
    rows = [f"| {e.experiment} | {e.parameters:,} | {e.flops:.2e} | {e.h100_minutes:.3g} | "
            f"{100 * e.utilisation:.2g}% | {e.peak_memory_gb:.3g}{'' if e.fits else ' (does not fit)'} |"
            for e in estimates]
    total = sum(e.flops for e in estimates)
    minutes = sum(e.h100_minutes for e in estimates)
    rows.append(f"| **all** | | {total:.2e} | {minutes:.3g} | | |")
    return "\n".join([head, *rows])


def text_passes(name: str, size: str, train_tokens: int) -> float:
    """Passes over ``train_tokens`` of training text by the longest-trained model of one trial: the largest
    steps x batch x ctx over the trials' training workloads, divided by ``train_tokens`` (an upper bound where a
    workload trains on a synthetic task instead)."""

    if train_tokens < 1:
        raise ValueError(f"train_tokens must be at least 1; got {train_tokens}")
    exp = Experiment(get_experiment(name))
    cfg = config_for(exp.module, size)
    seen = max((w.steps * w.batch * w.ctx for t in exp.trials(cfg) for w in exp.trial_plan(cfg, t)
                if w.model is not None), default=0)
    return seen / train_tokens
