"""A small causal pre-norm Transformer language model (nanoGPT's shape).

Index legend for shapes: b - batch, t - position, d - model width, h - heads,
k - head width (d = h k), v - vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class LMConfig:
    """Sizes of the language model: the one place where they are set."""

    vocab: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    ctx: int = 128
    ffn_mult: int = 4
    init_std: float = 0.02
    attn_kind: str = "dot"  # "dot": logits alpha q.k / sqrt(k); "cosine": logits scale * cos(q, k)
    attn_alpha: float = 1.0  # multiplier of 1/sqrt(k) for dot-product attention
    cosine_scale: float = 10.0  # fixed (or initial, when learned) scale of cosine attention
    learn_cosine_scale: bool = False

    def __post_init__(self) -> None:
        if self.attn_kind not in ("dot", "cosine"):
            raise ValueError(f"attn_kind must be 'dot' or 'cosine'; got {self.attn_kind!r}")
        for name in ("attn_alpha", "cosine_scale"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be positive and finite; got {value!r}")
        for name in ("vocab", "d_model", "n_layers", "n_heads", "ctx", "ffn_mult"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not math.isfinite(self.init_std) or self.init_std <= 0:
            raise ValueError(f"init_std must be positive and finite; got {self.init_std!r}")


class CausalSelfAttention(nn.Module):
    """Multi-head causal softmax attention, dot-product (scale alpha/sqrt(k)) or cosine (scale s, fixed or learned).

    With ``track_softmax_gradient`` set, attention is computed explicitly and the mean over rows of
    alpha (1 - sum_j p_j^2), the softmax's (1/2)||dp/ds||_1 with respect to the scores s = q.k/sqrt(k)
    (dot) or s = cos(q, k) (cosine), is kept in ``softmax_gradient``.
    """

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.kind = cfg.attn_kind
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        head = cfg.d_model // cfg.n_heads
        self.dot_scale = cfg.attn_alpha / math.sqrt(head)
        log_scale = torch.tensor(math.log(cfg.cosine_scale))
        if cfg.learn_cosine_scale:
            self.log_cosine_scale = nn.Parameter(log_scale)
        else:
            self.register_buffer("log_cosine_scale", log_scale)
        self.track_softmax_gradient = False
        self.softmax_gradient: float | None = None

    def logit_scale(self) -> torch.Tensor:
        """The multiplier of q.k (dot) or of cos(q, k) (cosine)."""
        if self.kind == "cosine":
            return self.log_cosine_scale.exp()
        return torch.tensor(self.dot_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        # (b, t, d) -> (b, h, t, k)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        if self.kind == "cosine":
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        scale = self.logit_scale().to(x.dtype)
        if self.track_softmax_gradient:
            logits = scale * (q @ k.transpose(-2, -1))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            p = logits.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            # in the theory's units: alpha for s = q.k/sqrt(k), the cosine scale for s = cos(q, k)
            theory_scale = self.logit_scale() * (math.sqrt(q.shape[-1]) if self.kind == "dot" else 1.0)
            self.softmax_gradient = float((theory_scale * (1 - (p * p).sum(-1))).mean().detach())
            y = p @ v
        else:
            # the scale multiplies q so that a learned cosine scale receives its gradient
            y = F.scaled_dot_product_attention(q * scale, k, v, is_causal=True, scale=1.0)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """x + Attn(LN(x)), then x + FFN(LN(x)) with a GELU feed-forward layer."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.ffn = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.ffn_mult * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.ffn_mult * cfg.d_model, cfg.d_model),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    """Token and learned position embeddings, pre-norm blocks, final LayerNorm, tied output layer."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.ctx, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)

    def _init(self, m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=self.cfg.init_std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """idx (b, t) of token ids -> logits (b, t, v)."""
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, time); got {tuple(idx.shape)}")
        t = idx.shape[1]
        if t > self.cfg.ctx:
            raise ValueError(f"sequence length {t} exceeds ctx {self.cfg.ctx}")
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def attention_layers(self) -> list[CausalSelfAttention]:
        """The attention module of every block, in order."""
        return [cast(Block, block).attn for block in self.blocks]

    def num_parameters(self) -> int:
        """Number of trainable parameters (the tied output layer counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
