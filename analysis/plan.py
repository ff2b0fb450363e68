"""The dry run of a scale: what every experiment would cost, proven to build and step without running it.

Each experiment's ``plan(cfg)`` lists its work as :class:`analysis.experiments.base.Workload` items: a
language model trained (or evaluated) ``count`` times for ``steps`` steps at
(batch, ctx), or an exact count of the FLOPs and bytes of its sampling work.
:func:`plan_experiment` turns them into

* parameters of the largest model;
* FLOPs per run: one training step (forward and backward) of each model counted by
  ``torch.utils.flop_counter.FlopCounterMode`` on the meta device, times steps and
  count; sampling work by its stated count;
* estimated H100 minutes, FLOPs / (989 TFLOP/s dense bf16 x utilisation), with the
  utilisation a stated assumption (25%: small models do not fill an H100);
* estimated peak memory: 16 bytes per parameter (fp32 weights, gradients, AdamW's two
  moments) plus the activations saved for backward, measured on the meta device;

and, with ``execute=True``, builds each distinct model on the CPU and runs one
truncated training step (batch 1, at most 64 positions) where it has at most
20 M parameters, else one full-size step on the meta device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import torch

from analysis.cost import _loss, build_model, step_cost

H100_BF16_DENSE_FLOPS = 989e12  # NVIDIA H100 SXM, dense bf16 tensor-core peak
UTILISATION = 0.25
H100_MEMORY_GB = 80.0
BYTES_PER_PARAM_TRAINING = 16  # fp32 weights + gradients + AdamW exp_avg + exp_avg_sq
CPU_STEP_MAX_PARAMS = 20_000_000
CPU_STEP_MAX_CTX = 64


@lru_cache(maxsize=None)
def cached_step_cost(model: Any, batch: int, ctx: int) -> tuple[int, float, float, float]:
    """:func:`analysis.cost.step_cost`, counted once per (model config, batch, ctx): an experiment split into trials
    lists the same model in many of them."""
    return step_cost(model, batch, ctx)


@dataclass
class Estimate:
    """What a scale of one experiment costs (estimated) and whether its models built and stepped."""

    experiment: str
    scale: str
    parameters: int = 0  # of the largest model
    flops: float = 0.0
    peak_memory_gb: float = 0.0
    utilisation: float = UTILISATION
    stepped: list[str] = field(default_factory=list)  # "label: cpu step" / "label: meta step"

    @property
    def h100_minutes(self) -> float:
        """FLOPs / (989e12 x utilisation) / 60."""
        return self.flops / (H100_BF16_DENSE_FLOPS * self.utilisation) / 60.0

    @property
    def fits(self) -> bool:
        """Whether the estimated peak memory is within one H100's 80 GB."""
        return self.peak_memory_gb <= H100_MEMORY_GB


def truncated_step(config: Any, ctx: int, params: int) -> str:
    """Build the model (``params`` parameters) on the CPU and run one AdamW step at batch 1, min(ctx, 64) positions;
    above 20 M parameters, one full-length step on the meta device. Returns which."""
    device = "cpu" if params <= CPU_STEP_MAX_PARAMS else "meta"
    with torch.device(device):
        model = build_model(config)
    if device == "meta":
        _loss(model, torch.zeros(1, ctx, dtype=torch.long, device="meta")).backward()
        return "meta step (full length)"
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 256, (1, min(ctx, CPU_STEP_MAX_CTX)), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss = _loss(model, idx)
    loss.backward()
    opt.step()
    if not math.isfinite(float(loss.detach())):
        raise RuntimeError(f"the truncated step of {config} gave a non-finite loss")
    return "cpu step (truncated)"


def plan_experiment(name: str, scale: str, execute: bool = True) -> Estimate:
    """The cost estimate of experiment ``name`` at ``scale``; with ``execute``, each model is built and stepped once."""
    from analysis.core.trials import Experiment
    from analysis.experiments import config_for, get_experiment

    exp = Experiment(get_experiment(name))
    cfg = config_for(exp.module, scale)
    est = Estimate(name, scale)
    peak = 0.0
    stepped: dict[Any, str] = {}
    for w in exp.plan(cfg):
        if w.model is None:
            est.flops += w.count * w.flops
            peak = max(peak, w.memory_bytes)
            continue
        params, fwd, fwd_bwd, saved = cached_step_cost(w.model, w.batch, w.ctx)
        est.parameters = max(est.parameters, params)
        est.flops += w.count * (w.steps * fwd_bwd + w.eval_batches * fwd)
        peak = max(peak, BYTES_PER_PARAM_TRAINING * params + saved)
        if execute and w.model not in stepped:
            stepped[w.model] = truncated_step(w.model, w.ctx, params)
            est.stepped.append(f"{w.label}: {stepped[w.model]}")
    est.peak_memory_gb = peak / 1e9
    return est


def plan_table(estimates: list[Estimate]) -> str:
    """A Markdown table of estimates, with a total row."""
    head = ("| experiment | parameters (largest model) | FLOPs | H100 minutes at "
            f"{100 * UTILISATION:.0f}% | peak memory (GB, of 80) |\n|---|---:|---:|---:|---:|")
    rows = [f"| {e.experiment} | {e.parameters:,} | {e.flops:.2e} | {e.h100_minutes:.3g} | "
            f"{e.peak_memory_gb:.3g}{'' if e.fits else ' (does not fit)'} |" for e in estimates]
    total = sum(e.flops for e in estimates)
    minutes = sum(e.h100_minutes for e in estimates)
    rows.append(f"| **all** | | {total:.2e} | {minutes:.3g} | |")
    return "\n".join([head, *rows])
