"""A small causal pre-norm Transformer language model (nanoGPT's shape).

Index legend for shapes: b - batch, t - position, d - model width, h - heads,
k - head width (d = h k), v - vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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

    def __post_init__(self) -> None:
        for name in ("vocab", "d_model", "n_layers", "n_heads", "ctx", "ffn_mult"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not math.isfinite(self.init_std) or self.init_std <= 0:
            raise ValueError(f"init_std must be positive and finite; got {self.init_std!r}")


class CausalSelfAttention(nn.Module):
    """Multi-head softmax attention, causal, through scaled_dot_product_attention (scale 1/sqrt(k))."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        # (b, t, d) -> (b, h, t, k)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
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

    def num_parameters(self) -> int:
        """Number of trainable parameters (the tied output layer counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
