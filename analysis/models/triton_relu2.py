"""GAU's relu^2 attention as fused Triton kernels: tiles in SRAM, never the n x n matrix in global memory.

Computes, for one sequence of n positions (index legend of :mod:`analysis.models.gau`),

    Q = Z_q * gamma_q + beta_q,   K = Z_k * gamma_k + beta_k      (the per-dimension scale-offsets, folded in)
    O_t = c_t sum_j M_tj relu(Q_t . K_j)^2 V_j                     (M the causal mask, or all ones)

with c_t the row normaliser the caller passes: 1/(t_k s) for relu2_ns and 1/t_k^2 for relu2_n2, t_k the real
keys row t sees (its own key count in a decoder), at least 1. Padded keys contribute nothing because
the caller zeroes V there, as on the lean path (:mod:`analysis.models.lean`). The normaliser is applied to the
scores in float32 before they are rounded to the input dtype, so relu(q.k)^2 never overflows fp16.

Three kernels, in the manner of FlashAttention-2 (Dao 2023) with no softmax and so no running maximum:

* forward, one program per (query block, block of e, sequence): S = Q_i K_j^T in float32, P = c relu(S)^2 M,
  O_i += P V_j. The expanded width e (1,536 at the FLASH base size) does not fit one tile, so each block of e
  recomputes S, which is cheap because s << e.
* backward dQ, dK, one program per (key block, sequence): dP = dO_i V_j^T summed over blocks of e,
  dS = 2 c relu(S) dP M, dK_j += dS^T Q_i in registers and dQ_i += dS K_j by float32 atomic adds.
* backward dV, one program per (key block, block of e, sequence): dV_j += P^T dO_i.

All products accumulate in float32 (``tl.dot`` with fp32 accumulators); inputs are bf16, fp16 or fp32 (fp32 runs
at IEEE precision, not TF32). Gradients of the scale-offsets are reduced in PyTorch from the kernels' dQ and dK.

On a machine without a GPU, importing the package (:mod:`analysis`) sets ``TRITON_INTERPRET=1`` unless it is set:
Triton's interpreter then runs the kernels with NumPy on CPU tensors, which is how the tests run them. Triton reads
the variable when it is imported, so a process that imported Triton without it cannot interpret.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch

try:  # the kernels' language; the module imports without Triton, and available() then says False
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - Triton is pinned in requirements.txt
    triton = tl = None

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
BLOCK_M = 64  # query rows per tile
BLOCK_N = 64  # key rows per tile
BLOCK_E = 128  # columns of V, O per tile


def available() -> bool:
    """Whether Triton is installed (the kernels then run on CUDA, or anywhere under ``TRITON_INTERPRET=1``)."""
    return triton is not None


@torch.compiler.assume_constant_result  # torch.compile reads it once instead of tracing Triton's C getter
def interpreting() -> bool:
    """Whether Triton's interpreter is on (``TRITON_INTERPRET=1``): the kernels then run on CPU tensors."""
    if triton is None:
        return False
    knobs = getattr(triton, "knobs", None)  # Triton >= 3.4; older releases read the variable directly
    if knobs is not None:
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _kernel_sources() -> dict[str, Any]:
    """The three kernels and their helpers, undecorated (decorated by :func:`_kernels`); ``tl`` must be a module global,
    where the interpreter looks for it."""
    def fold(ptr, g_ptr, b_ptr, rows, rs, n, s, stride_b, stride_n, pid_b):  # type: ignore[no-untyped-def]
        # Z * gamma + beta for `rows`, zero outside the n x s block, in the dtype of Z
        inside = (rows[:, None] < n) & (rs[None, :] < s)
        z = tl.load(ptr + pid_b * stride_b + rows[:, None] * stride_n + rs[None, :], mask=inside, other=0.0)
        g = tl.load(g_ptr + rs, mask=rs < s, other=0.0)
        b = tl.load(b_ptr + rs, mask=rs < s, other=0.0)
        x = z.to(tl.float32) * g[None, :] + b[None, :]
        return tl.where(inside, x, 0.0).to(z.dtype)

    def tile(ptr, rows, cols, n, width, stride_b, stride_n, pid_b):  # type: ignore[no-untyped-def]
        # rows x cols of a (batch, n, width) tensor of sequence pid_b, zero outside it
        return tl.load(ptr + pid_b * stride_b + rows[:, None] * stride_n + cols[None, :],
                       mask=(rows[:, None] < n) & (cols[None, :] < width), other=0.0)

    def weights(q, k, c, rm, rn, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,  # type: ignore[no-untyped-def]
                UPCAST: tl.constexpr):
        # P = c relu(Q K^T)^2 M in float32, rows rm, keys rn
        p = tl.maximum(dot_(q, tl.trans(k), PRECISION, UPCAST), 0.0)
        p = p * p * c[:, None]
        if CAUSAL:
            p = tl.where(rm[:, None] >= rn[None, :], p, 0.0)
        return p

    def dot(a, b, PRECISION: tl.constexpr, UPCAST: tl.constexpr):  # type: ignore[no-untyped-def]
        # float32 accumulation; UPCAST multiplies bf16 tiles as float32, where each product is exact
        if UPCAST:
            return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        return tl.dot(a, b, input_precision=PRECISION)

    def fwd(QZ, KZ, V, GQ, BQ, GK, BK, C, O, n, s, e, szb, szn, svb, svn, sob, son, scb,  # type: ignore[no-untyped-def]
            CAUSAL: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr):
        pid_m, pid_e, pid_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rs = tl.arange(0, BLOCK_S)
        re = pid_e * BLOCK_E + tl.arange(0, BLOCK_E)
        q = fold_(QZ, GQ, BQ, rm, rs, n, s, szb, szn, pid_b)
        c = tl.load(C + pid_b * scb + rm, mask=rm < n, other=0.0)
        acc = tl.zeros((BLOCK_M, BLOCK_E), dtype=tl.float32)
        hi = tl.minimum(n, (pid_m + 1) * BLOCK_M) if CAUSAL else n
        for start in range(0, hi, BLOCK_N):
            rn = start + tl.arange(0, BLOCK_N)
            k = fold_(KZ, GK, BK, rn, rs, n, s, szb, szn, pid_b)
            p = weights_(q, k, c, rm, rn, CAUSAL, PRECISION, UPCAST)
            v = tile_(V, rn, re, n, e, svb, svn, pid_b)
            acc += dot_(p.to(v.dtype), v, PRECISION, UPCAST)
        tl.store(O + pid_b * sob + rm[:, None] * son + re[None, :], acc.to(O.dtype.element_ty),
                 mask=(rm[:, None] < n) & (re[None, :] < e))

    def bwd_qk(QZ, KZ, V, GQ, BQ, GK, BK, C, DO, DQ, DK, n, s, e, szb, szn, svb, svn, sdb, sdn,  # type: ignore[no-untyped-def]
               sgb, sgn, scb, CAUSAL: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr):
        pid_n, pid_b = tl.program_id(0), tl.program_id(1)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rs = tl.arange(0, BLOCK_S)
        k = fold_(KZ, GK, BK, rn, rs, n, s, szb, szn, pid_b)
        dk = tl.zeros((BLOCK_N, BLOCK_S), dtype=tl.float32)
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M if CAUSAL else 0  # the first query block that sees these keys
        for start_m in range(lo, n, BLOCK_M):
            rm = start_m + tl.arange(0, BLOCK_M)
            q = fold_(QZ, GQ, BQ, rm, rs, n, s, szb, szn, pid_b)
            c = tl.load(C + pid_b * scb + rm, mask=rm < n, other=0.0)
            r = tl.maximum(dot_(q, tl.trans(k), PRECISION, UPCAST), 0.0)
            dp = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for start_e in range(0, e, BLOCK_E):
                re = start_e + tl.arange(0, BLOCK_E)
                do = tile_(DO, rm, re, n, e, sdb, sdn, pid_b)
                v = tile_(V, rn, re, n, e, svb, svn, pid_b)
                dp += dot_(do, tl.trans(v), PRECISION, UPCAST)
            ds = 2.0 * r * dp * c[:, None]
            if CAUSAL:
                ds = tl.where(rm[:, None] >= rn[None, :], ds, 0.0)
            ds = ds.to(q.dtype)
            dk += dot_(tl.trans(ds), q, PRECISION, UPCAST)
            dq = dot_(ds, k, PRECISION, UPCAST)
            tl.atomic_add(DQ + pid_b * sgb + rm[:, None] * sgn + rs[None, :], dq,
                          mask=(rm[:, None] < n) & (rs[None, :] < s))
        tl.store(DK + pid_b * sgb + rn[:, None] * sgn + rs[None, :], dk,
                 mask=(rn[:, None] < n) & (rs[None, :] < s))

    def bwd_v(QZ, KZ, GQ, BQ, GK, BK, C, DO, DV, n, s, e, szb, szn, sdb, sdn, svb, svn, scb,  # type: ignore[no-untyped-def]
              CAUSAL: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr):
        pid_n, pid_e, pid_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rs = tl.arange(0, BLOCK_S)
        re = pid_e * BLOCK_E + tl.arange(0, BLOCK_E)
        k = fold_(KZ, GK, BK, rn, rs, n, s, szb, szn, pid_b)
        dv = tl.zeros((BLOCK_N, BLOCK_E), dtype=tl.float32)
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M if CAUSAL else 0
        for start_m in range(lo, n, BLOCK_M):
            rm = start_m + tl.arange(0, BLOCK_M)
            q = fold_(QZ, GQ, BQ, rm, rs, n, s, szb, szn, pid_b)
            c = tl.load(C + pid_b * scb + rm, mask=rm < n, other=0.0)
            p = weights_(q, k, c, rm, rn, CAUSAL, PRECISION, UPCAST)
            do = tile_(DO, rm, re, n, e, sdb, sdn, pid_b)
            dv += dot_(tl.trans(p.to(do.dtype)), do, PRECISION, UPCAST)
        tl.store(DV + pid_b * svb + rn[:, None] * svn + re[None, :], dv.to(DV.dtype.element_ty),
                 mask=(rn[:, None] < n) & (re[None, :] < e))

    return {"fold": fold, "tile": tile, "weights": weights, "dot": dot, "fwd": fwd, "bwd_qk": bwd_qk, "bwd_v": bwd_v}


@functools.cache
def _kernels(interpret: bool) -> dict[str, Any]:
    """The kernels, jitted for the interpreter or for the GPU (``interpret`` keys the cache only)."""
    if triton is None:
        raise ValueError("the fused kernel needs Triton (pip install triton; it is pinned in requirements.txt)")
    src = _kernel_sources()
    helpers = {f"{name}_": triton.jit(src[name]) for name in ("fold", "tile", "weights", "dot")}
    out = {}
    for name in ("fwd", "bwd_qk", "bwd_v"):
        fn = src[name]
        fn.__globals__.update(helpers)
        out[name] = triton.jit(fn)
    return out


def _check(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor, row_scale: torch.Tensor,
           gammas: tuple[torch.Tensor, ...]) -> None:
    """Shapes, dtypes and devices the kernels accept, with the offending argument named."""
    if qz.dim() != 3 or kz.shape != qz.shape:
        raise ValueError(f"qz and kz must be (batch, n, s) of one shape; got {tuple(qz.shape)}, {tuple(kz.shape)}")
    b, n, s = qz.shape
    if v.dim() != 3 or v.shape[:2] != (b, n):
        raise ValueError(f"v must be (batch, n, e) = ({b}, {n}, e); got {tuple(v.shape)}")
    if row_scale.shape != (b, n):
        raise ValueError(f"row_scale must be (batch, n) = ({b}, {n}); got {tuple(row_scale.shape)}")
    if not 1 <= s <= 256:
        raise ValueError(f"the key size s must be in [1, 256] (one tile); got {s}")
    if v.dtype not in DTYPES:
        raise ValueError(f"v must be float16, bfloat16 or float32; got {v.dtype}")
    for name, t in zip(("gamma_q", "beta_q", "gamma_k", "beta_k"), gammas):
        if t.shape != (s,):
            raise ValueError(f"{name} must have shape ({s},); got {tuple(t.shape)}")
    devices = {t.device for t in (qz, kz, v, row_scale, *gammas)}
    if len(devices) != 1:
        raise ValueError(f"all inputs must be on one device; got {sorted(map(str, devices))}")
    device = qz.device
    if device.type != "cuda" and not interpreting():
        raise ValueError(f"the Triton kernels run on CUDA, or on the CPU under TRITON_INTERPRET=1; got {device}")


def _launch_config(s: int, dtype: torch.dtype) -> dict[str, Any]:
    """Tile sizes (s padded to a power of two, at least 16, as tl.dot needs), the dot precision, and whether bf16
    tiles are multiplied as float32: only under the interpreter, whose tl.dot reads bf16 as raw bits
    (triton-lang/triton#11584); the products of bf16 values are exact in float32, so only the order of the
    float32 sums can differ from the GPU's."""
    return {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_E": BLOCK_E,
            "BLOCK_S": max(16, 1 << (s - 1).bit_length()),
            "PRECISION": "ieee" if dtype == torch.float32 else "tf32",
            "UPCAST": dtype == torch.bfloat16 and interpreting()}


def _forward(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor, row_scale: torch.Tensor, gq: torch.Tensor,
             bq: torch.Tensor, gk: torch.Tensor, bk: torch.Tensor, causal: bool) -> torch.Tensor:
    """O = c relu(Q K^T)^2 M V by the forward kernel (inputs checked, contiguous and of one dtype)."""
    b, n, s = qz.shape
    e = v.shape[-1]
    out = torch.empty_like(v)
    cfg = _launch_config(s, v.dtype)
    kern = _kernels(interpreting())
    grid = (triton.cdiv(n, cfg["BLOCK_M"]), triton.cdiv(e, cfg["BLOCK_E"]), b)
    kern["fwd"][grid](qz, kz, v, gq, bq, gk, bk, row_scale, out, n, s, e,
                      qz.stride(0), qz.stride(1), v.stride(0), v.stride(1), out.stride(0), out.stride(1),
                      row_scale.stride(0), CAUSAL=causal, **cfg)
    return out


def _backward(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor, row_scale: torch.Tensor, gq: torch.Tensor,
              bq: torch.Tensor, gk: torch.Tensor, bk: torch.Tensor, grad_out: torch.Tensor,
              causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK (float32, w.r.t. Q and K after the scale-offsets) and dV by the two backward kernels."""
    b, n, s = qz.shape
    e = v.shape[-1]
    cfg = _launch_config(s, v.dtype)
    kern = _kernels(interpreting())
    dq = torch.zeros(b, n, s, dtype=torch.float32, device=qz.device)
    dk = torch.zeros_like(dq)
    dv = torch.empty_like(v)
    kern["bwd_qk"][(triton.cdiv(n, cfg["BLOCK_N"]), b)](
        qz, kz, v, gq, bq, gk, bk, row_scale, grad_out, dq, dk, n, s, e, qz.stride(0), qz.stride(1),
        v.stride(0), v.stride(1), grad_out.stride(0), grad_out.stride(1), dq.stride(0), dq.stride(1),
        row_scale.stride(0), CAUSAL=causal, **cfg)
    kern["bwd_v"][(triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(e, cfg["BLOCK_E"]), b)](
        qz, kz, gq, bq, gk, bk, row_scale, grad_out, dv, n, s, e, qz.stride(0), qz.stride(1),
        grad_out.stride(0), grad_out.stride(1), dv.stride(0), dv.stride(1), row_scale.stride(0),
        CAUSAL=causal, **cfg)
    return dq, dk, dv


# The kernels enter autograd and torch.compile as two custom operators: opaque to the compiler, which then neither
# traces into the Triton launches (whose helper functions Inductor's own code generation cannot see) nor breaks
# the graph around them; their fake versions give it the output shapes.
_ARGS = "Tensor qz, Tensor kz, Tensor v, Tensor row_scale, Tensor gq, Tensor bq, Tensor gk, Tensor bk"
_fwd_op = torch.library.custom_op("analysis::relu2_fwd", _forward, mutates_args=(),
                                  schema=f"({_ARGS}, bool causal) -> Tensor")
_bwd_op = torch.library.custom_op("analysis::relu2_bwd", _backward, mutates_args=(),
                                  schema=f"({_ARGS}, Tensor grad_out, bool causal) -> (Tensor, Tensor, Tensor)")


@_fwd_op.register_fake
def _forward_fake(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor, *rest: Any) -> torch.Tensor:
    return torch.empty_like(v)


@_bwd_op.register_fake
def _backward_fake(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor,
                   *rest: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, n, s = qz.shape
    dq = qz.new_empty(b, n, s, dtype=torch.float32)
    return dq, torch.empty_like(dq), torch.empty_like(v)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs[:8])
    ctx.causal = inputs[8]


def _autograd_backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    qz, kz, v, row_scale, gq, bq, gk, bk = ctx.saved_tensors
    dq, dk, dv = _bwd_op(qz, kz, v, row_scale, gq, bq, gk, bk, grad_out.to(v.dtype).contiguous(), ctx.causal)
    # Q = Z_q gamma_q + beta_q: dZ_q = dQ gamma_q, dgamma_q = sum dQ Z_q, dbeta_q = sum dQ (likewise for K)
    zq, zk = qz.float(), kz.float()
    return (
        (dq * gq.float()).to(qz.dtype), (dk * gk.float()).to(kz.dtype), dv, None,
        (dq * zq).sum((0, 1)).to(gq.dtype), dq.sum((0, 1)).to(bq.dtype),
        (dk * zk).sum((0, 1)).to(gk.dtype), dk.sum((0, 1)).to(bk.dtype), None,
    )


_fwd_op.register_autograd(_autograd_backward, setup_context=_setup_context)


def relu2_attention_fused(qz: torch.Tensor, kz: torch.Tensor, v: torch.Tensor, row_scale: torch.Tensor,
                          causal: bool, gamma_q: torch.Tensor | None = None, beta_q: torch.Tensor | None = None,
                          gamma_k: torch.Tensor | None = None, beta_k: torch.Tensor | None = None) -> torch.Tensor:
    """O_t = c_t sum_j M_tj relu(Q_t.K_j)^2 V_j with Q = Z_q gamma_q + beta_q, K = Z_k gamma_k + beta_k (fused kernel).

    ``row_scale`` (batch, n) is c_t: 1/(t_k s) for relu2_ns, 1/t_k^2 for relu2_n2 (:func:`row_scale_for`); V must be
    zero at padded keys. Omitted scale-offsets are the identity. Under autocast, Z and V run in the autocast dtype.
    ``row_scale`` takes no gradient (it depends on the mask only).
    """
    s = qz.shape[-1] if qz.dim() == 3 else 0
    ones = qz.new_ones(s, dtype=torch.float32)
    zeros = qz.new_zeros(s, dtype=torch.float32)
    gammas = tuple(identity if t is None else t
                   for t, identity in zip((gamma_q, beta_q, gamma_k, beta_k), (ones, zeros, ones, zeros)))
    _check(qz, kz, v, row_scale, gammas)
    if row_scale.requires_grad:
        raise ValueError("row_scale must not require a gradient: it is computed from the key mask")
    device = qz.device.type
    if torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device):
        dtype = torch.get_autocast_dtype(device)
        qz, kz, v = qz.to(dtype), kz.to(dtype), v.to(dtype)
    qz, kz = qz.to(v.dtype).contiguous(), kz.to(v.dtype).contiguous()
    v = v.contiguous()
    row_scale = row_scale.float().contiguous()
    gammas = tuple(t.float().contiguous() for t in gammas)
    out: torch.Tensor = _fwd_op(qz, kz, v, row_scale, *gammas, bool(causal))
    return out


def flops(b: int, n: int, s: int, e: int, causal: bool, backward: bool = True) -> float:
    """Useful FLOPs of relu^2 attention: 2 n^2 (s + e) forward and 2 n^2 (2 s + 2 e) backward, halved when causal."""
    for name, value in (("b", b), ("n", n), ("s", s), ("e", e)):
        if value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value}")
    pairs = b * n * n * (0.5 if causal else 1.0)
    total = 2 * pairs * (s + e) + (2 * pairs * (2 * s + 2 * e) if backward else 0.0)
    return float(total)


def row_scale_for(mask: torch.Tensor, s: int, norm: str, causal: bool) -> torch.Tensor:
    """c_t from a key mask (batch, n): 1/(t_k s) for relu2_ns or 1/t_k^2 for relu2_n2, as :class:`GAU` normalises."""
    if norm not in ("relu2_ns", "relu2_n2"):
        raise ValueError(f"norm must be relu2_ns or relu2_n2; got {norm!r}")
    m = mask.to(torch.float32)
    seen = m.cumsum(-1) if causal else m.sum(-1, keepdim=True).expand_as(m)
    seen = seen.clamp(min=1)
    scale = 1 / (seen * s) if norm == "relu2_ns" else 1 / seen**2
    return scale
