"""GAU with several heads at the same parameters: the shared key Z (width s) and the value V (width e) split into h
heads of s/h and e/h, each with its own relu² attention, normalised by its own key size.

FLASH's GAU uses one head; the source says one GAU head does as well as several or better. This module makes the
comparison at equal parameters. Head j of Q and K takes rotary pairs j, j + h, j + 2h, ... of the rotated s-vector,
so every head spans the whole range of RoPE's frequencies, as a multi-head layer whose heads each rotate their own
pairs does. Head j of V takes the contiguous slice j e/h .. (j + 1) e/h, and the output gate U multiplies the
concatenated heads, as in GAU.
"""

from __future__ import annotations

import torch
from torch import nn

from analysis.models.gau import GAU, GAUConfig
from analysis.models.lean import relu2_attention


class MultiHeadGAU(GAU):
    """GAU (:class:`analysis.models.gau.GAU`) whose attention is h heads: per head
    A_j = relu²(Q_j K_j^T) / (t s/h), t the keys row t sees, O = (U ⊙ [A_1 V_1, ..., A_h V_h]) W_o."""

    def __init__(self, cfg: GAUConfig, heads: int) -> None:
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
            raise ValueError(f"heads must be a positive integer; got {heads!r}")
        if cfg.s % (2 * heads) or cfg.e % heads:
            raise ValueError(f"heads must divide e ({cfg.e}) and s / 2 ({cfg.s // 2}, rotary pairs); got {heads}")
        if not cfg.lean:
            raise ValueError("several heads need quadratic relu² attention on the lean path (no chunk, norm "
                             f"relu2_ns or relu2_n2, backend auto or lean); got chunk {cfg.chunk!r}, norm "
                             f"{cfg.norm!r}, backend {cfg.backend!r}")
        super().__init__(cfg)
        self.heads = heads

    def blocked(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[A_1 V_1, ..., A_h V_h] (b, n, e) by query blocks; one head is GAU's own path."""
        h = self.heads
        if h == 1:
            return super().blocked(q, k, v, mask)
        cfg = self.cfg
        b, n, s = q.shape
        e = v.shape[-1]

        def pairs(x: torch.Tensor) -> torch.Tensor:  # (b, n, s) -> (b h, n, s/h): head j takes pairs j, j + h, ...
            return x.reshape(b, n, s // (2 * h), h, 2).permute(0, 3, 1, 2, 4).reshape(b * h, n, s // h)

        vh = v.reshape(b, n, h, e // h).permute(0, 2, 1, 3).reshape(b * h, n, e // h)
        mh = mask.repeat_interleave(h, dim=0)
        seen = mh.to(q.dtype).cumsum(-1) if cfg.causal else mh.to(q.dtype).sum(-1, keepdim=True).expand_as(mh)
        seen = seen.clamp(min=1)
        scale = 1 / (seen * (s // h)) if cfg.norm == "relu2_ns" else 1 / seen**2
        out = relu2_attention(pairs(q), pairs(k), vh, cfg.causal, cfg.query_block) * scale[..., None]
        return out.reshape(b, h, n, e // h).permute(0, 2, 1, 3).reshape(b, n, e)


def with_heads(model: nn.Module, heads: int) -> nn.Module:
    """``model`` with every GAU sublayer replaced by a :class:`MultiHeadGAU` of the same config, ``heads`` heads and
    the GAU's own weights (the same parameters and the same initial values); one head leaves the model as it is."""
    if heads == 1:
        return model
    found = 0
    for module in model.modules():
        f = getattr(module, "f", None)
        if isinstance(f, GAU) and not isinstance(f, MultiHeadGAU):
            several = MultiHeadGAU(f.cfg, heads)
            several.load_state_dict(f.state_dict())
            module.f = several.to(next(f.parameters()).device)
            found += 1
    if not found:
        raise ValueError("model has no GAU sublayer (a module with a GAU as its .f) to give heads")
    return model
