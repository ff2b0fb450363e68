"""FLASH's mixed chunk attention with one of its two parts removed: local (relu² inside chunks) or global (linear).

FLASH adds a local term, relu² attention inside each chunk of c positions normalised by the keys it sees times s,
and a global term, linear attention across chunks (:mod:`analysis.models.gau`). The paper's ablation, which the
source reports, removes one of them. This module builds the three arms on the same weights:

* ``mixed``: FLASH as it is (:meth:`GAU._mixed_chunk`);
* ``local``: the local term alone, V^quad_g = relu²(Q_g K_g^T) V_g / (t_g s) with t_g the keys row t sees in its chunk;
* ``global``: linear attention alone, each query over every earlier key, itself included,
  V^lin_t = Q^lin_t sum_{j <= t} (K^lin_j)^T V_j / t (non-causal: over all n keys, / n).

The causal global arm is per token on purpose: FLASH's own global term sums chunks h < g only, so alone it would
leave every position blind to its own chunk, and the comparison would measure that blindness rather than linear
against local attention. Its cost is that of quadratic attention here (it is formed as a masked n x n product), which
matters for speed, not for the loss it reaches.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from analysis.models.gau import GAU, GAUConfig, rope

PARTS = ("mixed", "local", "global")


class FlashParts(GAU):
    """FLASH's GAU (:class:`analysis.models.gau.GAU` with ``chunk``) computing ``parts`` of its attention: both
    (``mixed``), the in-chunk relu² term (``local``) or per-token linear attention (``global``)."""

    def __init__(self, cfg: GAUConfig, parts: str) -> None:
        if parts not in PARTS:
            raise ValueError(f"parts must be one of {', '.join(PARTS)}; got {parts!r}")
        if not cfg.chunk:
            raise ValueError("parts apply to FLASH's mixed chunk attention: cfg.chunk must be set; got None")
        super().__init__(cfg)
        self.parts = parts

    def _mixed_chunk(self, z: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The chosen parts of FLASH's attention, (b, n, e) before the gate."""
        if self.parts == "mixed":
            return super()._mixed_chunk(z, v, mask)
        return self.local_part(z, v, mask) if self.parts == "local" else self.global_part(z, v, mask)

    def local_part(self, z: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """V^quad_g = relu²(Q_g K_g^T) V_g / (t_g s) inside each chunk g, t_g the real (and, causal, earlier) keys."""
        cfg = self.cfg
        b, n, s = z.shape
        c = int(cfg.chunk or 1)
        pad = (-n) % c
        if pad:
            z, v = F.pad(z, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
            mask = F.pad(mask, (0, pad), value=False)
        length = n + pad
        q, k, _, _ = self.qk(z)
        if cfg.rope:
            pos = torch.arange(length, device=z.device)
            q, k = rope(q, pos), rope(k, pos)
        g = length // c
        qq, kq, vv, mm = (t.reshape(b, g, c, *t.shape[2:]) for t in (q, k, v, mask))
        allowed = mm[:, :, None, :].expand(b, g, c, c)
        if cfg.causal:
            allowed = allowed & torch.ones(c, c, dtype=torch.bool, device=z.device).tril()
        keys = allowed.sum(-1, keepdim=True).clamp(min=1).to(z.dtype)
        out = (F.relu(qq @ kq.transpose(-1, -2)) ** 2 / (keys * s) * allowed) @ vv
        return out.reshape(b, length, -1)[:, :n]

    def global_part(self, z: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """V^lin_t = Q^lin_t sum_{j <= t} (K^lin_j)^T V_j / t over real keys j (non-causal: all of them, / n)."""
        cfg = self.cfg
        _, _, q, k = self.qk(z)
        if cfg.rope:
            pos = torch.arange(z.shape[1], device=z.device)
            q, k = rope(q, pos), rope(k, pos)
        allowed = mask[:, None, :].expand(-1, z.shape[1], -1)
        if cfg.causal:
            allowed = allowed & torch.ones(z.shape[1], z.shape[1], dtype=torch.bool, device=z.device).tril()
        seen = allowed.sum(-1, keepdim=True).clamp(min=1).to(z.dtype)
        return ((q @ k.transpose(-1, -2)) * allowed / seen) @ v


def with_parts(model: nn.Module, parts: str) -> nn.Module:
    """``model`` with every FLASH sublayer (a GAU with a chunk) replaced by a :class:`FlashParts` of the same config,
    ``parts`` and the layer's own weights (the same parameters and initial values); ``mixed`` leaves it as it is."""
    if parts not in PARTS:
        raise ValueError(f"parts must be one of {', '.join(PARTS)}; got {parts!r}")
    if parts == "mixed":
        return model
    found = 0
    for module in model.modules():
        f = getattr(module, "f", None)
        if isinstance(f, GAU) and not isinstance(f, FlashParts) and f.cfg.chunk:
            layer = FlashParts(f.cfg, parts)
            layer.load_state_dict(f.state_dict())
            module.f = layer.to(next(f.parameters()).device)
            found += 1
    if not found:
        raise ValueError("model has no FLASH sublayer (a module whose .f is a GAU with a chunk) to change")
    return model
