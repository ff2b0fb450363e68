"""relu^2 attention whose memory is linear in length: query blocks, recomputed in the backward pass.

Computes O = (relu(Q K^T)^2 * M) V, with M the causal mask (or all ones), one block of ``block`` query rows at a
time. The forward pass keeps only O; the backward pass recomputes each block's (block x n) scores from the saved
Q, K, V, so the memory autograd holds is O(n (s + e)) instead of O(n^2). A causal block multiplies only the keys
up to its last row, so about half of the n x n products a dense masked matrix spends are skipped.

Row normalisers (1/(t s), 1/t^2, padding) are diagonal and are applied by the caller to O: relu^2 attention has
no normaliser that needs the whole row, unlike softmax.

Under autocast (bf16 or fp16 on a GPU, bf16 on the CPU) the blocks run in the autocast dtype with autocast off, as
autocast would run the matmuls, and the backward pass accumulates dQ, dK and dV over blocks in float32.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch


def _block_scores(q: torch.Tensor, k: torch.Tensor, r0: int, r1: int, causal: bool) -> tuple[torch.Tensor, int]:
    """relu(Q_r K^T) for rows r0:r1 over the keys they may see (keys < r1 when causal), causal mask applied."""
    end = r1 if causal else k.shape[1]
    r = torch.relu(q[:, r0:r1] @ k[:, :end].transpose(-1, -2))  # (b, r1 - r0, end)
    if causal:
        # only the diagonal tile holds masked entries: row r0 + i sees keys j <= r0 + i
        diag = r[:, :, r0:end]
        diag.mul_(torch.ones(r1 - r0, end - r0, dtype=torch.bool, device=q.device).tril())
    return r, end


class _Relu2BlockAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, block: int) -> torch.Tensor:
        b, n, _ = q.shape
        out = q.new_empty(b, n, v.shape[-1])
        for r0 in range(0, n, block):
            r1 = min(n, r0 + block)
            r, end = _block_scores(q, k, r0, r1, causal)
            out[:, r0:r1] = r.square_() @ v[:, :end]
        ctx.save_for_backward(q, k, v)
        ctx.causal, ctx.block = causal, block
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v = ctx.saved_tensors
        n = q.shape[1]
        acc = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype  # sums over blocks
        dq, dk, dv = (torch.zeros(t.shape, dtype=acc, device=t.device) for t in (q, k, v))
        grad_out = grad_out.to(q.dtype).contiguous()
        with _no_autocast(q.device.type):
            for r0 in range(0, n, ctx.block):
                r1 = min(n, r0 + ctx.block)
                r, end = _block_scores(q, k, r0, r1, ctx.causal)
                g = grad_out[:, r0:r1]
                dv[:, :end] += (r * r).transpose(-1, -2) @ g  # dV = P^T dO with P = relu(S)^2
                ds = (g @ v[:, :end].transpose(-1, -2)).mul_(r).mul_(2.0)  # dS = 2 relu(S) (dO V^T), masked via r
                dq[:, r0:r1] = ds @ k[:, :end]
                dk[:, :end] += ds.transpose(-1, -2) @ q[:, r0:r1]
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None


def _no_autocast(device_type: str) -> Any:
    """A context with autocast off on ``device_type`` (a no-op where autocast does not exist)."""
    if torch.amp.is_autocast_available(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def relu2_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, block: int = 256) -> torch.Tensor:
    """O = (relu(Q K^T)^2 * M) V in query blocks, M the causal mask when ``causal``; memory O(n (s + e))."""
    if q.dim() != 3 or k.shape != q.shape or v.dim() != 3 or v.shape[:2] != q.shape[:2]:
        raise ValueError(f"q and k must be (batch, n, s) and v (batch, n, e); got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive integer; got {block!r}")
    device = q.device.type
    if torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)  # the dtype autocast would run these matmuls in
        q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    with _no_autocast(device):
        out: torch.Tensor = _Relu2BlockAttention.apply(q, k, v, bool(causal), block)
    return out
