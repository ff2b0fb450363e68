"""Length transfer of a causal attention model: a recall task whose length is set apart from its difficulty,
and the measurements that separate the effect of a row's length from the effect of position.

In a causal model the row of position t holds t + 1 keys whatever the sequence's length, so a model trained on
sequences of length n has seen every row length up to n, and evaluating it on shorter sequences is evaluating it on
their prefixes. What is new beyond n is twofold: rows hold more keys, and (with RoPE, which is relative) keys lie at
distances never seen. :class:`SpacedLookupTask` separates the two: its queries always sit at the end of the
sequence, so every query row holds all ``span`` positions, and its filler can lie between the bindings and the
queries (``spread``: new distances and more keys) or all before the bindings (``near``: the distances of training,
only more keys). On text, :func:`truncated_context_loss` gives the loss at the same positions from the last
``context`` tokens only, the in-distribution reference against which the full context's loss is compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from analysis.tasks.data import fixed_windows
from analysis.tasks.recall import IGNORE, LookupTask

LAYOUTS = ("spread", "near")
FILLER = 0  # the token LookupTask leaves unused


@dataclass(frozen=True)
class SpacedLookupTask(LookupTask):
    """LookupTask in a sequence of ``span`` tokens: filler (token 0), the ``pairs`` bindings, filler, then the
    ``queries`` at the end. ``spread``: the filler before the bindings is uniform in [0, span - pairs - queries];
    ``near``: all of it comes first, so the bindings end right before the queries."""

    span: int = 64
    layout: str = "spread"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.span, int) or self.span < self.pairs + self.queries:
            raise ValueError(f"span must be an integer of at least pairs + queries = {self.pairs + self.queries}; "
                             f"got {self.span!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {self.layout!r}")

    @property
    def length(self) -> int:
        """span tokens."""
        return self.span

    def _draw(self, size: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        p, q = self.pairs, self.queries
        core_in, core_tgt = LookupTask(p, self.keys, self.values, q)._draw(size, rng)
        filler = self.span - p - q
        before = rng.integers(0, filler + 1, size) if self.layout == "spread" else np.full(size, filler)
        inputs = np.full((size, self.span), FILLER, dtype=np.int64)
        targets = np.full((size, self.span), IGNORE, dtype=np.int64)
        rows = np.arange(size)[:, None]
        inputs[rows, before[:, None] + np.arange(p)[None, :]] = core_in[:, :p]
        inputs[:, self.span - q :], targets[:, self.span - q :] = core_in[:, p:], core_tgt[:, p:]
        return inputs, targets


@torch.no_grad()
def position_loss(model: nn.Module, tokens: npt.NDArray[np.uint8], length: int, windows: int,
                  device: torch.device) -> npt.NDArray[np.float64]:
    """Mean next-token loss (nats) at each position 0..length-1 over ``windows`` fixed windows: L(t) = mean_w
    -ln p(x_{w,t+1} | x_{w,0..t}). A causal model's loss at evaluation length m is the mean of L(t) over t < m."""
    was = model.training
    model.eval()
    x, y, _ = fixed_windows(tokens, length, windows)
    total = torch.zeros(length, dtype=torch.float64)
    for i in range(0, x.shape[0], 16):
        logp = F.log_softmax(model(x[i : i + 16].to(device)).double(), -1)
        total += -logp.gather(-1, y[i : i + 16].to(device)[..., None]).squeeze(-1).sum(0).cpu()
    model.train(was)
    return (total / x.shape[0]).numpy()


@torch.no_grad()
def truncated_context_loss(model: nn.Module, tokens: npt.NDArray[np.uint8], length: int, context: int, windows: int,
                           device: torch.device, batch: int = 512) -> npt.NDArray[np.float64]:
    """Mean loss at positions t = context-1 .. length-1 of the same windows as :func:`position_loss`, each predicted
    from its last ``context`` tokens only: -ln p(x_{t+1} | x_{t-context+1..t}), the row length of training."""
    if not 1 <= context <= length:
        raise ValueError(f"context must be in [1, length = {length}]; got {context}")
    was = model.training
    model.eval()
    x, y, _ = fixed_windows(tokens, length, windows)
    ends = np.arange(context - 1, length)
    # every (window, end) pair as one sequence of `context` tokens ending at `end`
    seq = torch.stack([x[:, e - context + 1 : e + 1] for e in ends], 1).reshape(-1, context)
    tgt = torch.stack([y[:, e] for e in ends], 1).reshape(-1)
    losses = []
    for i in range(0, seq.shape[0], batch):
        logp = F.log_softmax(model(seq[i : i + batch].to(device))[:, -1].double(), -1)
        losses.append(-logp.gather(-1, tgt[i : i + batch].to(device)[:, None]).squeeze(-1).cpu())
    model.train(was)
    return torch.cat(losses).reshape(x.shape[0], ends.size).mean(0).numpy()


@torch.no_grad()
def attention_rows(model: nn.Module, x: torch.Tensor, rows: torch.Tensor) -> list[dict[str, npt.NDArray[np.float64]]]:
    """Per GAU layer, at the query rows ``rows`` (a boolean (b, n) mask): the row's mass sum_j a_tj (1 for softmax)
    and the entropy -sum_j p_j ln p_j of p = a_t / sum_j a_tj (nats; 0 for a row of zero mass), each (rows,)."""
    captured: list[torch.Tensor] = []
    gaus: list[Any] = [m for m in model.modules() if hasattr(m, "attention") and hasattr(m, "qk")]
    if not gaus:
        raise ValueError("the model has no GAU layer (only GAU attention matrices can be read)")
    for gau in gaus:

        def capture(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor,
                    _f: Callable[..., torch.Tensor] = gau.attention) -> torch.Tensor:
            a = _f(q, k, mask)
            captured.append(a.detach())
            return a

        gau.attention = capture
    configs = [gau.cfg for gau in gaus]
    for gau in gaus:  # the matrix is read on the dense path (the lean one computes the same rows without it)
        if gau.cfg.chunk is None:
            gau.cfg = replace(gau.cfg, backend="dense")
    was = model.training
    try:
        model.eval()
        model(x)
    finally:
        for gau, cfg in zip(gaus, configs):
            del gau.attention  # the instance attribute; the class's method shows again
            gau.cfg = cfg
        model.train(was)
    if len(captured) != len(gaus):
        raise ValueError("a GAU layer computed its attention without the full matrix (FLASH's chunks)")
    out = []
    for a in captured:
        a = a.double()[rows]  # (rows, n)
        mass = a.sum(-1)
        p = a / mass.clamp(min=1e-300)[:, None]
        entropy = -(p * torch.log(p.clamp(min=1e-300))).sum(-1)
        out.append({"mass": mass.cpu().numpy(), "entropy": torch.where(mass > 0, entropy, 0.0).cpu().numpy()})
    return out
