"""A BERT-style encoder with its masked-LM head, the model that Su 2021 (kexue.fm/archives/8444) widens.

Index legend: b - batch, n - positions, d - width, h - heads, k - head width d' = d / h.

x = LN(E_tok[idx] + E_pos[t] + E_seg[segment]); each layer is post-LN: x <- LN(x + MHA(x)), x <- LN(x + FFN(x)),
with MHA's logits q.k / sqrt(d') (``scaled``) or q.k (T5-style, unscaled) and FFN W_2 act(W_1 x + b_1) + b_2
(GELU or ReLU). The MLM head is LN(GELU(W_h x + b_h)) followed by E_tok^T plus a bias (``tied``) or by its own
output matrix. Every linear layer and norm has a bias, so a widening must carry biases exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

FFNS = ("gelu", "relu")


@dataclass(frozen=True)
class BertConfig:
    """Sizes and choices of the encoder."""

    vocab: int = 256
    d: int = 64
    heads: int = 4
    layers: int = 2
    ffn: str = "gelu"
    ffn_mult: int = 4
    ctx: int = 128
    segments: int = 2
    scaled: bool = True  # logits q.k / sqrt(d'); False: q.k (T5-style)
    tied: bool = True  # the output layer is E_tok^T (plus a bias); False: its own matrix
    eps: float = 1e-12  # LayerNorm epsilon (BERT's)

    def __post_init__(self) -> None:
        for name in ("vocab", "d", "heads", "layers", "ffn_mult", "ctx", "segments"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.d % self.heads:
            raise ValueError(f"d ({self.d}) must be divisible by heads ({self.heads})")
        if self.ffn not in FFNS:
            raise ValueError(f"ffn must be one of {', '.join(FFNS)}; got {self.ffn!r}")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be finite and >= 0; got {self.eps!r}")

    @property
    def hidden(self) -> int:
        """The FFN's hidden width, ffn_mult d."""
        return self.ffn_mult * self.d


class BertLayer(nn.Module):
    """Post-LN: x <- LN(x + W_o MHA(W_q x, W_k x, W_v x)); x <- LN(x + W_2 act(W_1 x))."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.q, self.k, self.v, self.o = (nn.Linear(cfg.d, cfg.d) for _ in range(4))
        self.norm1 = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.w1 = nn.Linear(cfg.d, cfg.hidden)
        self.w2 = nn.Linear(cfg.hidden, cfg.d)
        self.norm2 = nn.LayerNorm(cfg.d, eps=cfg.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.cfg.heads
        # (b, n, d) -> (b, h, n, k): a head is a contiguous slice of d' units
        q, k, v = (t.view(b, n, h, d // h).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
        scale = 1 / math.sqrt(d // h) if self.cfg.scaled else 1.0
        a = F.scaled_dot_product_attention(q, k, v, scale=scale)
        x = self.norm1(x + self.o(a.transpose(1, 2).reshape(b, n, d)))
        act = F.gelu if self.cfg.ffn == "gelu" else F.relu
        return self.norm2(x + self.w2(act(self.w1(x))))


class Bert(nn.Module):
    """Embeddings, post-LN layers and the masked-LM head; forward gives logits over the vocabulary."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d)
        self.pos = nn.Embedding(cfg.ctx, cfg.d)
        self.seg = nn.Embedding(cfg.segments, cfg.d)
        self.emb_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.d, cfg.d)
        self.head_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.out_bias = nn.Parameter(torch.zeros(cfg.vocab))
        self.out = None if cfg.tied else nn.Linear(cfg.d, cfg.vocab, bias=False)
        for p in self.parameters():
            nn.init.normal_(p, std=0.02)  # BERT's N(0, 0.02^2), biases and norms included: nothing is left at 0 or 1
        with torch.no_grad():
            for norm in self.norms():
                norm.weight.add_(1.0)

    def norms(self) -> list[nn.LayerNorm]:
        """Every LayerNorm, in order."""
        return [m for m in self.modules() if isinstance(m, nn.LayerNorm)]

    def forward(self, idx: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        """idx (b, n) -> logits (b, n, vocab); segments (b, n) default 0."""
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, length); got {tuple(idx.shape)}")
        if idx.shape[1] > self.cfg.ctx:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds ctx {self.cfg.ctx}")
        seg = torch.zeros_like(idx) if segments is None else segments
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device)) + self.seg(seg)
        x = self.emb_norm(x)
        for layer in self.layers:
            x = layer(x)
        y = self.head_norm(F.gelu(self.head(x)))
        out = self.tok.weight if self.out is None else self.out.weight
        return F.linear(y, out) + self.out_bias
