"""What autograd saves for the backward pass: each saved tensor's shape and bytes, counted by a pack hook."""

from __future__ import annotations

from typing import Any

import torch


def saved_tensors(fn: Any) -> list[tuple[tuple[int, ...], int]]:
    """(shape, bytes) of every tensor autograd saves for backward while ``fn()`` runs (one entry per saved tensor)."""
    saved: list[tuple[tuple[int, ...], int]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append((tuple(t.shape), t.numel() * t.element_size()))
        return t.detach()  # returning t itself makes a cycle through autograd that no collector frees

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return saved


def saved_shapes(fn: Any) -> list[tuple[int, ...]]:
    """The shape of every tensor autograd saves for backward while ``fn()`` runs (one entry per saved tensor)."""
    return [shape for shape, _ in saved_tensors(fn)]
