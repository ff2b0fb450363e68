"""A language model that stacks GAU, FLASH or Transformer blocks, with a choice of residual and norm.

Index legend: b - batch, n - positions, d - model width, h - heads, k - head width.

Residual arrangements of a sublayer f (DeepNet's alpha = (2N)^{1/4} and init scale beta = (8N)^{-1/4},
N the number of layers, for a decoder-only stack):

* ``post``:      x <- Norm(x + f(x))
* ``pre``:       x <- x + f(Norm(x))              (with a final Norm)
* ``sandwich``:  x <- x + Norm(f(Norm(x)))         (with a final Norm)
* ``deepnorm``:  x <- Norm(alpha x + f(x)), the value/output/FFN weights scaled by beta at init

A Transformer layer has two sublayers (multi-head softmax attention, FFN); a GAU or FLASH layer has one.
Its attention logits are alpha q.k / sqrt(k) (``attn="dot"``) or s cos(q, k) (``attn="cosine"``, s fixed or
learned); positions enter by RoPE on q and k or by a learned embedding added to the tokens'. The nanoGPT-shaped
model of the entropy and softmax-scale chapters is ``ModelConfig.gpt(...)``: pre-norm, GELU, learned positions,
N(0, 0.02^2) initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from analysis.models.gau import BACKENDS as GAU_BACKENDS, GAU, GAUConfig, init_linear, rope

BLOCKS = ("gau", "flash", "transformer")
RESIDUALS = ("post", "pre", "sandwich", "deepnorm")
NORMS = ("layernorm", "rmsnorm", "scalenorm")
FFNS = ("relu", "gelu", "swiglu")
POSITIONS = ("rope", "learned")
ATTENTIONS = ("dot", "cosine")


@dataclass(frozen=True)
class ModelConfig:
    """Everything about the model's shape; the one place for sizes."""

    vocab: int = 256
    d: int = 256
    layers: int = 4
    block: str = "gau"
    residual: str = "post"
    norm: str = "layernorm"
    init: str = "xavier"
    ctx: int = 512
    # Transformer blocks
    heads: int = 4
    attn_dropout: float = 0.0  # dropout on the attention weights, in training mode only
    ffn: str = "gelu"
    ffn_mult: int = 4
    attn: str = "dot"  # logits attn_alpha q.k / sqrt(k), or cosine_scale cos(q, k)
    attn_alpha: float = 1.0
    cosine_scale: float = 10.0  # fixed (or initial, when learned) scale of cosine attention
    learn_cosine_scale: bool = False
    positions: str = "rope"  # RoPE on q and k, or a learned embedding added to the input
    # GAU / FLASH blocks
    e: int | None = None  # default 2 d
    s: int = 128
    gau_norm: str = "relu2_ns"
    chunk: int = 64  # FLASH chunk length
    gau_backend: str = "auto"  # GAU attention: "lean", "kernel" (Triton), "dense" (n x n), "auto" (see models.gau)
    gau_query_block: int = 256  # rows per block of the lean GAU path (memory linear in n)

    def __post_init__(self) -> None:
        for name in ("vocab", "d", "layers", "ctx", "heads", "ffn_mult", "s", "chunk"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        for name, allowed in (("block", BLOCKS), ("residual", RESIDUALS), ("norm", NORMS), ("ffn", FFNS),
                              ("attn", ATTENTIONS), ("positions", POSITIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if self.gau_backend not in GAU_BACKENDS:
            raise ValueError(f"gau_backend must be one of {', '.join(GAU_BACKENDS)}; got {self.gau_backend!r}")
        if not isinstance(self.gau_query_block, int) or isinstance(self.gau_query_block, bool) \
                or self.gau_query_block < 1:
            raise ValueError(f"gau_query_block must be a positive integer; got {self.gau_query_block!r}")
        if self.gau_backend in ("lean", "kernel") and (self.block != "gau"
                                                       or self.gau_norm not in ("relu2_ns", "relu2_n2")):
            raise ValueError(f"gau_backend {self.gau_backend!r} applies to GAU blocks with relu^2 attention "
                             f"(gau_norm relu2_ns or relu2_n2); got block {self.block!r}, gau_norm {self.gau_norm!r}")
        if not 0.0 <= self.attn_dropout < 1.0:
            raise ValueError(f"attn_dropout must be in [0, 1); got {self.attn_dropout!r}")
        for name in ("attn_alpha", "cosine_scale"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be positive and finite; got {value!r}")
        if self.block == "transformer" and self.d % self.heads:
            raise ValueError(f"d ({self.d}) must be divisible by heads ({self.heads})")
        if self.block == "transformer" and self.positions == "rope" and (self.d // self.heads) % 2:
            raise ValueError(f"RoPE needs an even head width; d = {self.d} splits into {self.heads} heads of "
                             f"{self.d // self.heads}")
        if self.block != "transformer" and (self.attn != "dot" or self.attn_alpha != 1.0 or self.learn_cosine_scale):
            raise ValueError("attn, attn_alpha and learn_cosine_scale apply to Transformer blocks only; "
                             f"block is {self.block!r}")

    @classmethod
    def gpt(cls, d: int, layers: int, heads: int, ctx: int, **kw: object) -> ModelConfig:
        """The nanoGPT shape: pre-LayerNorm Transformer, GELU FFN of 4 d, learned positions, N(0, 0.02^2) init."""
        base: dict[str, object] = dict(d=d, layers=layers, heads=heads, ctx=ctx, block="transformer",
                                       residual="pre", norm="layernorm", ffn="gelu", init="std0.02",
                                       positions="learned")
        base.update(kw)
        return cls(**base)  # type: ignore[arg-type]

    @property
    def expanded(self) -> int:
        """e, the GAU's expanded width (2 d unless set)."""
        return self.e if self.e is not None else 2 * self.d


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * g: no mean is subtracted."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class ScaleNorm(nn.Module):
    """g x / ||x|| with one scalar g, initialised to sqrt(d) (Nguyen and Salazar)."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.g = nn.Parameter(torch.tensor(math.sqrt(d)))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.g * x / (x.norm(dim=-1, keepdim=True) + self.eps)


def make_norm(kind: str, d: int) -> nn.Module:
    """LayerNorm, RMSNorm or ScaleNorm over the last axis."""
    return {"layernorm": lambda: nn.LayerNorm(d), "rmsnorm": lambda: RMSNorm(d), "scalenorm": lambda: ScaleNorm(d)}[kind]()


class Attention(nn.Module):
    """Multi-head causal softmax attention: logits alpha q.k / sqrt(k) or s cos(q, k), RoPE or not.

    With ``track_softmax_gradient`` set, attention is computed explicitly and the mean over rows of
    scale (1 - sum_j p_j^2), the softmax's (1/2)||dp/ds||_1 for scores s = q.k / sqrt(k) (dot, scale alpha) or
    s = cos(q, k) (cosine, scale s), is kept in ``softmax_gradient``.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.dropout = cfg.attn_dropout
        self.kind = cfg.attn
        self.rope = cfg.positions == "rope"
        self.qkv = nn.Linear(cfg.d, 3 * cfg.d)
        self.out = nn.Linear(cfg.d, cfg.d)
        self.dot_scale = cfg.attn_alpha / math.sqrt(cfg.d // cfg.heads)
        log_scale = torch.tensor(math.log(cfg.cosine_scale))
        if cfg.learn_cosine_scale:
            self.log_cosine_scale = nn.Parameter(log_scale)
        else:
            self.register_buffer("log_cosine_scale", log_scale)
        self.track_softmax_gradient = False
        self.softmax_gradient: float | None = None

    def logit_scale(self) -> torch.Tensor:
        """The multiplier of q.k (dot: alpha / sqrt(k)) or of cos(q, k) (cosine: s)."""
        if self.kind == "cosine":
            return self.log_cosine_scale.exp()
        return torch.tensor(self.dot_scale)

    def head_rows(self, h: int) -> torch.Tensor:
        """Indices of head h's rows in the fused W_qkv: its q, k and v rows, in that order."""
        d = self.out.weight.shape[0]
        k = d // self.heads
        if not 0 <= h < self.heads:
            raise ValueError(f"head must be in [0, {self.heads}); got {h}")
        return torch.cat([torch.arange(part * d + h * k, part * d + (h + 1) * k) for part in range(3)])

    def head_parameters(self, h: int) -> torch.Tensor:
        """Head h's parameters as one flat vector: its rows of W_q, W_k, W_v with biases and its columns of W_o."""
        k = self.out.weight.shape[0] // self.heads
        rows = self.head_rows(h)
        return torch.cat([self.qkv.weight[rows].flatten(), self.qkv.bias[rows],
                          self.out.weight[:, h * k : (h + 1) * k].flatten()])

    @torch.no_grad()
    def copy_head(self, src: int, dst: int) -> None:
        """Overwrite head dst's parameters (q, k, v rows with biases, W_o columns) with head src's."""
        k = self.out.weight.shape[0] // self.heads
        s_rows, d_rows = self.head_rows(src), self.head_rows(dst)
        self.qkv.weight[d_rows] = self.qkv.weight[s_rows]
        self.qkv.bias[d_rows] = self.qkv.bias[s_rows]
        self.out.weight[:, dst * k : (dst + 1) * k] = self.out.weight[:, src * k : (src + 1) * k]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        # (b, n, d) -> (b, h, n, k)
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        if self.rope:
            pos = torch.arange(n, device=x.device)
            q, k = rope(q, pos), rope(k, pos)
        if self.kind == "cosine":
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        scale = self.logit_scale().to(x.dtype)
        if self.track_softmax_gradient:
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            p = (scale * (q @ k.transpose(-2, -1))).masked_fill(~mask, float("-inf")).softmax(dim=-1)
            # in the theory's units: alpha for s = q.k / sqrt(k), the cosine scale for s = cos(q, k)
            theory = self.logit_scale() * (math.sqrt(q.shape[-1]) if self.kind == "dot" else 1.0)
            self.softmax_gradient = float((theory * (1 - (p * p).sum(-1))).mean().detach())
            y = p @ v
        else:
            # the scale multiplies q so that a learned cosine scale receives its gradient
            y = F.scaled_dot_product_attention(q * scale, k, v, is_causal=True, scale=1.0,
                                               dropout_p=self.dropout if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    """W2 act(W1 x) with ReLU or GELU (hidden ffn_mult d), or SwiGLU W2 (Swish(W1 x) * W3 x) with hidden 2/3 of that."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.kind = cfg.ffn
        hidden = cfg.ffn_mult * cfg.d
        if cfg.ffn == "swiglu":
            hidden = int(round(2 * hidden / 3))  # same parameters as the two-matrix FFN
            self.w3 = nn.Linear(cfg.d, hidden)
        self.w1 = nn.Linear(cfg.d, hidden)
        self.w2 = nn.Linear(hidden, cfg.d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "swiglu":
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.relu(self.w1(x)) if self.kind == "relu" else F.gelu(self.w1(x)))


class Residual(nn.Module):
    """One sublayer f wrapped in the chosen residual arrangement and norm."""

    def __init__(self, f: nn.Module, cfg: ModelConfig) -> None:
        super().__init__()
        self.f, self.kind = f, cfg.residual
        self.norm = make_norm(cfg.norm, cfg.d)
        self.inner = make_norm(cfg.norm, cfg.d) if cfg.residual == "sandwich" else None
        self.alpha = (2 * cfg.layers) ** 0.25 if cfg.residual == "deepnorm" else 1.0

    def forward(self, x: torch.Tensor, branch_input: torch.Tensor | None = None) -> torch.Tensor:
        """The residual update of stream x; the branch reads ``branch_input`` instead of x when given."""
        u = x if branch_input is None else branch_input
        if self.kind == "post":
            return self.norm(x + self.f(u))
        if self.kind == "pre":
            return x + self.f(self.norm(u))
        if self.kind == "sandwich":
            assert self.inner is not None
            return x + self.inner(self.f(self.norm(u)))
        return self.norm(self.alpha * x + self.f(u))

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        """f as this arrangement applies it to stream x: f(x) (post, deepnorm), f(Norm x) (pre), Norm f(Norm x)."""
        if self.kind in ("post", "deepnorm"):
            return self.f(x)
        if self.kind == "pre":
            return self.f(self.norm(x))
        assert self.inner is not None
        return self.inner(self.f(self.norm(x)))


class LanguageModel(nn.Module):
    """Token embedding, ``layers`` blocks, optional final norm, tied output layer."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.d)
        self.pos = nn.Embedding(cfg.ctx, cfg.d) if cfg.positions == "learned" else None
        sublayers: list[nn.Module] = []
        for _ in range(cfg.layers):
            if cfg.block == "transformer":
                sublayers += [Residual(Attention(cfg), cfg), Residual(FeedForward(cfg), cfg)]
            else:
                gau = GAU(GAUConfig(d=cfg.d, e=cfg.expanded, s=cfg.s, norm=cfg.gau_norm, causal=True, rope=True,
                                    chunk=cfg.chunk if cfg.block == "flash" else None, init=cfg.init,
                                    backend=cfg.gau_backend if cfg.block == "gau" else "auto",
                                    query_block=cfg.gau_query_block))
                sublayers.append(Residual(gau, cfg))
        self.sublayers = nn.ModuleList(sublayers)
        self.final_norm = make_norm(cfg.norm, cfg.d) if cfg.residual in ("pre", "sandwich") else nn.Identity()
        self._init_weights()

    def _init_weights(self) -> None:
        cfg = self.cfg
        std = 1.0 if cfg.init == "lecun" else 0.02 if cfg.init == "std0.02" else math.sqrt(2 / (cfg.vocab + cfg.d))
        nn.init.normal_(self.embed.weight, std=std)
        if self.pos is not None:
            nn.init.normal_(self.pos.weight, std=std)
        beta = (8 * cfg.layers) ** -0.25 if cfg.residual == "deepnorm" else 1.0
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                init_linear(module, cfg.init)
                # DeepNet scales the value, output and FFN projections (not q, k, or the GAU's z)
                if beta != 1.0 and not name.endswith(("to_z",)):
                    with torch.no_grad():
                        if name.endswith("qkv"):
                            module.weight[2 * cfg.d :].mul_(beta)
                        else:
                            module.weight.mul_(beta)

    def forward(self, idx: torch.Tensor, return_hidden: bool = False,
                group: int = 1) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """idx (b, n) -> logits (b, n, vocab); with ``return_hidden`` also the residual stream after each sublayer.

        ``group`` > 1 runs the sublayers in consecutive groups of that size, every branch in a group reading the
        stream at the group's start (depth traded for width); 1 is the ordinary sequential pass.
        """
        if not isinstance(group, int) or group < 1:
            raise ValueError(f"group must be a positive integer; got {group!r}")
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, length); got {tuple(idx.shape)}")
        if idx.shape[1] > self.cfg.ctx:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds ctx {self.cfg.ctx}")
        x = self.embed(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(idx.shape[1], device=idx.device))
        hidden = [x]
        u = x  # the stream at the start of the current group
        for i, layer in enumerate(self.sublayers):
            if i % group == 0:
                u = x
            x = layer(x, branch_input=None if group == 1 else u)
            hidden.append(x)
        logits = F.linear(self.final_norm(x), self.embed.weight)
        return (logits, hidden) if return_hidden else logits

    def num_parameters(self) -> int:
        """Trainable parameters (the tied output layer counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def residuals(self) -> list[Residual]:
        """Every residual sublayer, in order (two per Transformer layer, one per GAU or FLASH layer)."""
        return [m for m in self.sublayers if isinstance(m, Residual)]

    def attention_layers(self) -> list[Attention]:
        """The multi-head attention module of every Transformer layer, in order (empty for GAU and FLASH)."""
        return [r.f for r in self.residuals() if isinstance(r.f, Attention)]

    @torch.no_grad()
    def branch_ratios(self, idx: torch.Tensor) -> list[float]:
        """RMS(f_l(x_l)) / RMS(x_l) for every residual branch f_l as applied, x_l the stream entering it."""
        x = self.embed(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(idx.shape[1], device=idx.device))
        out = []
        for layer in self.residuals():
            out.append(float(layer.branch(x).pow(2).mean().sqrt() / x.pow(2).mean().sqrt()))
            x = layer(x)
        return out

    def replace_norms(self, make: Callable[[], nn.Module]) -> None:
        """Swap the norm of every residual sublayer (not the final norm) for a fresh ``make()``."""
        for layer in self.residuals():
            layer.norm = make()


def update_sizes(hidden: list[torch.Tensor]) -> list[float]:
    """||x_{l+1} - x_l|| / ||x_l|| for each sublayer: how far each one moves the residual stream."""
    return [float((b - a).norm() / a.norm()) for a, b in zip(hidden[:-1], hidden[1:])]
