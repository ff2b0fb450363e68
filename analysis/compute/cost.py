"""What one training step of a model costs, counted on the meta device: parameters, FLOPs and saved activations.

Kept apart from :mod:`analysis.compute.plan` (which reads the experiment registry) so that an experiment that counts its
own FLOPs does not depend, through its code fingerprint, on the list of experiments.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F

from analysis.models.lm import LanguageModel, ModelConfig


def build_model(config: Any) -> torch.nn.Module:
    """The language model of a ModelConfig (analysis.models.lm)."""

    if isinstance(config, ModelConfig):
        return LanguageModel(config)
    raise TypeError(f"model must be a ModelConfig; got {type(config).__name__}")


def _loss(model: torch.nn.Module, idx: torch.Tensor) -> torch.Tensor:
    logits = model(idx)
    if isinstance(logits, tuple):
        logits = logits[0]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1))


def step_cost(config: Any, batch: int, ctx: int) -> tuple[int, float, float, float]:
    """(parameters, forward FLOPs, forward+backward FLOPs, bytes saved for backward) of one step, on the meta device.

    Every layer of a stack is the same module, so each of the four is a + b L exactly in the layer count L:
    a deep stack is counted from its 1- and 2-layer versions (tests/test_plan.py checks the identity).
    """
    layers = config.layers
    if layers <= 2:
        return _step_cost_direct(config, batch, ctx)
    one = _step_cost_direct(dataclasses.replace(config, layers=1), batch, ctx)
    two = _step_cost_direct(dataclasses.replace(config, layers=2), batch, ctx)
    params, fwd, fwd_bwd, saved = (u + (layers - 1) * (v - u) for u, v in zip(one, two))
    return int(params), float(fwd), float(fwd_bwd), float(saved)


def _step_cost_direct(config: Any, batch: int, ctx: int) -> tuple[int, float, float, float]:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = build_model(config)
    params = sum(p.numel() for p in model.parameters())
    idx = torch.zeros(batch, ctx, dtype=torch.long, device="meta")
    saved = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal saved
        saved += t.numel() * t.element_size()
        return t

    counter = FlopCounterMode(display=False)
    with counter, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = _loss(model, idx)
        forward = counter.get_total_flops()
        loss.backward()
    return params, float(forward), float(counter.get_total_flops()), float(saved)
