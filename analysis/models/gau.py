"""The Gated Attention Unit (GAU) and FLASH's mixed chunk attention (kexue.fm/archives/8934).

O = (U * (A V)) W_o with U = Swish(X W_u), V = Swish(X W_v), Z = Swish(X W_z) and Q, K per-dimension
scale-offsets of the shared Z. Index legend: b - batch, n / t - positions (queries / keys j),
d - model width, e - expanded width, s - key size, g / h - chunk index, c - chunk length.

Attention normalisations (``norm``), for real (unpadded) keys and, when causal, keys j <= t:

* ``relu2_ns``: relu^2(q.k) / (n s), the source's choice; causal row t uses t keys, so / (t s);
* ``relu2_n2``: relu^2(q.k / n), the paper's appendix code (effectively 1/n^2); causal: / t;
* ``softmax``: softmax(q.k / sqrt(s)); ``softmax_log512``: softmax(log_512(n) q.k / sqrt(s)), causal row t with
  log_512(t), the keys it sees (a factor of the total length would leak later tokens into earlier rows).

FLASH (``chunk`` = c): relu^2 attention inside each chunk of c positions, normalised by the keys it
sees (c, or the in-chunk position when causal), plus linear attention across chunks,
Q_g^lin sum_h K_h^lin^T V_h / n, causal with an exclusive cumulative sum over chunks normalised by
the (g - 1) c keys it sums. A length that c does not divide is padded and the padding masked.

``backend`` picks how quadratic relu^2 attention is computed. ``"lean"`` computes it ``query_block`` = B query rows
at a time and recomputes each block in the backward pass (:mod:`analysis.models.lean`): the same output (equal in
float64 to rounding), memory linear in n, and a causal row skips the keys after it. ``"kernel"`` runs the fused
Triton kernel (:mod:`analysis.models.triton_relu2`): tiles in SRAM, memory linear in n. ``"dense"`` forms the n x n
matrix A (needed to read or replace A). ``"auto"``, the default, is the kernel on CUDA (where Triton is installed),
lean on other devices, wherever they apply (relu2_ns or relu2_n2 without chunks), and dense elsewhere (softmax,
FLASH).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from analysis.models import triton_relu2
from analysis.models.lean import relu2_attention

NORMS = ("relu2_ns", "relu2_n2", "softmax", "softmax_log512")
INITS = ("lecun", "xavier", "std0.02")
BACKENDS = ("auto", "lean", "dense", "kernel")


@dataclass(frozen=True)
class GAUConfig:
    """Sizes and choices of one GAU / FLASH layer."""

    d: int = 256
    e: int = 512
    s: int = 128
    norm: str = "relu2_ns"
    causal: bool = False
    rope: bool = False
    chunk: int | None = None  # FLASH mixed chunk attention when set
    init: str = "lecun"
    qk_scale_init: float = 1.0  # the source assumes Q(Z) = K(Z) = Z at initialisation
    backend: str = "auto"  # "lean" (query blocks), "kernel" (Triton), "dense" (n x n), "auto": see the module
    query_block: int = 256  # rows per block of the lean path: memory linear in n

    def __post_init__(self) -> None:
        for name in ("d", "e", "s"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.s > self.e:
            raise ValueError(f"s (key size {self.s}) must not exceed e (expanded width {self.e})")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {', '.join(NORMS)}; got {self.norm!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}; got {self.init!r}")
        if self.chunk is not None and (not isinstance(self.chunk, int) or self.chunk < 1):
            raise ValueError(f"chunk must be a positive integer or None; got {self.chunk!r}")
        if self.chunk is not None and self.norm not in ("relu2_ns",):
            raise ValueError(f"FLASH mixed chunk attention uses relu2_ns; got norm {self.norm!r}")
        if not isinstance(self.query_block, int) or isinstance(self.query_block, bool) or self.query_block < 1:
            raise ValueError(f"query_block must be a positive integer; got {self.query_block!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {self.backend!r}")
        if self.backend in ("lean", "kernel") and not self.lean_applies:
            raise ValueError(f"backend {self.backend!r} applies to quadratic relu^2 attention (no chunk, norm relu2_ns or "
                             f"relu2_n2); got chunk {self.chunk!r}, norm {self.norm!r}")
        if self.rope and self.s % 2:
            raise ValueError(f"rope needs an even key size s; got {self.s}")

    @property
    def lean_applies(self) -> bool:
        """Whether the lean query-block path computes this layer exactly: quadratic relu^2 attention, no chunks."""
        return self.chunk is None and self.norm in ("relu2_ns", "relu2_n2")

    @property
    def lean(self) -> bool:
        """Whether the layer avoids the n x n matrix (lean path or kernel): backend "lean" or "kernel", or "auto"
        where it applies."""
        return self.backend in ("lean", "kernel") or (self.backend == "auto" and self.lean_applies)

    def uses_kernel(self, device_type: str) -> bool:
        """Whether a layer on ``device_type`` runs the fused kernel: backend "kernel", or "auto" on CUDA where the
        lean path applies and Triton is installed."""
        if self.backend == "kernel":
            return True
        return self.backend == "auto" and self.lean_applies and device_type == "cuda" and triton_relu2.available()


def init_linear(layer: nn.Linear, scheme: str) -> None:
    """LeCun N(0, 1/fan_in), Xavier N(0, 2/(fan_in + fan_out)), or N(0, 0.02^2); biases zero."""
    fan_out, fan_in = layer.weight.shape
    std = {"lecun": 1 / math.sqrt(fan_in), "xavier": math.sqrt(2 / (fan_in + fan_out)), "std0.02": 0.02}[scheme]
    nn.init.normal_(layer.weight, std=std)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)


def rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on the last axis (pairs (2i, 2i+1) rotated by t * 10000^{-2i/s})."""
    half = x.shape[-1] // 2
    freq = 10000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angle = positions.to(torch.float32)[:, None] * freq[None, :]  # (n, s/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class ScaleOffset(nn.Module):
    """k heads of z * gamma_h + beta_h (per dimension), from one shared z: (b, n, s) -> k x (b, n, s)."""

    def __init__(self, s: int, heads: int, scale_init: float) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.full((heads, s), float(scale_init)))
        self.beta = nn.Parameter(torch.zeros(heads, s))

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = z[..., None, :] * self.gamma + self.beta  # (b, n, k, s)
        return out.unbind(dim=-2)


class GAU(nn.Module):
    """One GAU layer (quadratic attention), or FLASH's mixed chunk version when cfg.chunk is set."""

    def __init__(self, cfg: GAUConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.to_uv = nn.Linear(cfg.d, 2 * cfg.e)
        self.to_z = nn.Linear(cfg.d, cfg.s)
        self.to_out = nn.Linear(cfg.e, cfg.d)
        for layer in (self.to_uv, self.to_z, self.to_out):
            init_linear(layer, cfg.init)
        self.qk = ScaleOffset(cfg.s, 4 if cfg.chunk else 2, cfg.qk_scale_init)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (b, n, d) -> (b, n, d); key_mask (b, n) True for real tokens (padding is ignored as a key)."""
        if x.dim() != 3 or x.shape[-1] != self.cfg.d:
            raise ValueError(f"x must have shape (batch, length, {self.cfg.d}); got {tuple(x.shape)}")
        b, n, _ = x.shape
        mask = torch.ones(b, n, dtype=torch.bool, device=x.device) if key_mask is None else key_mask.to(torch.bool)
        if mask.shape != (b, n):
            raise ValueError(f"key_mask must have shape {(b, n)}; got {tuple(mask.shape)}")
        u, v = F.silu(self.to_uv(x)).chunk(2, dim=-1)  # (b, n, e) each
        z = F.silu(self.to_z(x))  # (b, n, s)
        v = v * mask[..., None]  # padded positions contribute nothing as values
        if self.cfg.chunk:
            mixed = self._mixed_chunk(z, v, mask)
        else:
            q, k = self.qk(z)
            if self.cfg.rope:
                pos = torch.arange(n, device=x.device)
                q, k = rope(q, pos), rope(k, pos)
            mixed = self.blocked(q, k, v, mask) if self.cfg.lean else self.attention(q, k, mask) @ v
        return self.to_out(u * mixed)

    def attention(self, q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """A (b, n, n): the normalised attention matrix over real (and, if causal, earlier) keys."""
        cfg = self.cfg
        b, n, s = q.shape
        allowed = mask[:, None, :].expand(b, n, n)
        if cfg.causal:
            allowed = allowed & torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        keys = allowed.sum(-1, keepdim=True).clamp(min=1).to(q.dtype)  # keys each row sees
        logits = q @ k.transpose(-1, -2)  # (b, n, n)
        if cfg.norm == "relu2_ns":
            a = F.relu(logits) ** 2 / (keys * s)
        elif cfg.norm == "relu2_n2":
            a = F.relu(logits / keys) ** 2
        else:
            scale: float | torch.Tensor = 1 / math.sqrt(s)
            if cfg.norm == "softmax_log512":
                scale = scale * torch.log(keys) / math.log(512)  # the keys this row sees: no leak when causal
            a = (logits * scale).masked_fill(~allowed, float("-inf")).softmax(-1)
            return torch.nan_to_num(a)  # rows with no key (all padding) are zero
        return a * allowed

    def blocked(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """A V without the n x n matrix: (relu(Q K^T)^2 * M) V by query blocks (or the fused kernel), row t scaled by
        1/(t_k s) (relu2_ns) or 1/t_k^2 (relu2_n2), t_k the real keys row t sees; v is already zero at padded keys."""
        cfg = self.cfg
        if cfg.uses_kernel(q.device.type):
            return triton_relu2.relu2_attention_fused(
                q, k, v, triton_relu2.row_scale_for(mask, cfg.s, cfg.norm, cfg.causal), cfg.causal)
        seen = mask.to(q.dtype).cumsum(-1) if cfg.causal else mask.to(q.dtype).sum(-1, keepdim=True).expand_as(mask)
        seen = seen.clamp(min=1)
        scale = 1 / (seen * cfg.s) if cfg.norm == "relu2_ns" else 1 / seen**2
        return relu2_attention(q, k, v, cfg.causal, cfg.query_block) * scale[..., None]

    def _mixed_chunk(self, z: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """FLASH: quadratic relu^2 inside chunks plus linear attention across chunks."""
        cfg = self.cfg
        c = int(cfg.chunk or 1)
        b, n, s = z.shape
        pad = (-n) % c
        if pad:
            z, v = F.pad(z, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
            mask = F.pad(mask, (0, pad), value=False)
        length = n + pad
        g = length // c
        q_quad, k_quad, q_lin, k_lin = self.qk(z)
        if cfg.rope:
            pos = torch.arange(length, device=z.device)
            q_quad, k_quad, q_lin, k_lin = (rope(t, pos) for t in (q_quad, k_quad, q_lin, k_lin))
        k_lin = k_lin * mask[..., None]
        # (b, length, .) -> (b, g, c, .)
        qq, kq, ql, kl, vv, mm = (t.reshape(b, g, c, *t.shape[2:]) for t in (q_quad, k_quad, q_lin, k_lin, v, mask))
        allowed = mm[:, :, None, :].expand(b, g, c, c)
        if cfg.causal:
            allowed = allowed & torch.ones(c, c, dtype=torch.bool, device=z.device).tril()
        keys = allowed.sum(-1, keepdim=True).clamp(min=1).to(z.dtype)
        quad = (F.relu(qq @ kq.transpose(-1, -2)) ** 2 / (keys * s) * allowed) @ vv  # (b, g, c, e)
        kv = kl.transpose(-1, -2) @ vv  # (b, g, s, e): K_h^T V_h per chunk
        real = mask.sum(-1).clamp(min=1).to(z.dtype)  # (b,)
        if cfg.causal:
            # exclusive cumulative sum over chunks: chunk g sees chunks h < g, i.e. the real keys among (g-1) c
            kv_before = kv.cumsum(dim=1) - kv
            seen = (mm.sum(-1).cumsum(dim=1) - mm.sum(-1)).clamp(min=1).to(z.dtype)  # (b, g)
            lin = (ql @ kv_before) / seen[:, :, None, None]
        else:
            lin = (ql @ kv.sum(dim=1, keepdim=True)) / real[:, None, None, None]
        out = (quad + lin).reshape(b, length, -1)
        return out[:, :n]

    def linear_part(self, z: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The non-causal global term computed without chunks: Q^lin (K^lin^T V) / n (for tests and checks)."""
        _, _, q_lin, k_lin = self.qk(z)
        k_lin = k_lin * mask[..., None]
        return (q_lin @ (k_lin.transpose(-1, -2) @ v)) / mask.sum(-1).clamp(min=1).to(z.dtype)[:, None, None]

    def num_parameters(self) -> int:
        """Trainable parameters: about 3 d e for e >> s (W_u, W_v, W_o)."""
        return sum(p.numel() for p in self.parameters())


def kernel_gau(cfg: Any) -> torch.nn.Module:
    """A GAU layer (:class:`GAU`) of ``cfg`` whose relu^2 attention runs the fused kernel on any
    device (backend "kernel"): quadratic relu^2 attention only (no chunk, norm relu2_ns or relu2_n2)."""
    if cfg.backend == "dense":
        raise ValueError("kernel_gau replaces the lean path; got backend 'dense'")
    return GAU(dataclasses.replace(cfg, backend="kernel"))
