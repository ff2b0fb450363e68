"""Parameters and forward FLOPs of GAU (FLASH-Quad), FLASH and a Transformer++ layer, symbolically (kexue.fm/archives/8934).

Counts are of this book's modules (``analysis.models.gau.GAU``, ``analysis.models.lm.Attention`` and the SwiGLU
``FeedForward``), biases included. FLOPs count matrix products only (2 per multiply-add), as
``torch.utils.flop_counter.FlopCounterMode`` does; element-wise work (Swish, relu^2, scale-offsets, norms) is left
out. Symbols: d model width, e GAU expansion, s GAU key size, n sequence length, c FLASH chunk, h SwiGLU hidden
width (round(8 d / 3) for the book's FeedForward with ffn_mult 4).

Per token, forward:

* GAU: linear 2 (3 d e + d s); attention 2 n (s + e) (the full n x n matrix, as the book's and the public
  implementations compute it, causal or not);
* FLASH: linear as GAU; quadratic inside chunks 2 c (s + e); the linear attention across chunks 4 s e
  (K^T V, then Q (K^T V));
* Transformer++ layer: linear 2 (4 d^2) + 2 (3 d h); attention 4 n d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

d, e, s, n, c, h = sp.symbols("d e s n c h", positive=True)

GAU_PARAMS = 3 * d * e + d * s + 2 * e + s + d + 4 * s  # W_u, W_v (2 d e + 2 e), W_z (d s + s), W_o (e d + d), 2 scale-offsets
FLASH_PARAMS = GAU_PARAMS + 4 * s  # 4 scale-offsets: quadratic and linear Q, K
MHA_PARAMS = 4 * d**2 + 4 * d
SWIGLU_PARAMS = 3 * d * h + 2 * h + d
TRANSFORMER_PARAMS = MHA_PARAMS + SWIGLU_PARAMS

GAU_LINEAR_FLOPS = 2 * (3 * d * e + d * s)
GAU_QUADRATIC_FLOPS = 2 * n * (s + e)
FLASH_CHUNK_FLOPS = 2 * c * (s + e)
FLASH_LINEAR_ATTENTION_FLOPS = 4 * s * e
MHA_LINEAR_FLOPS = 2 * 4 * d**2
MHA_QUADRATIC_FLOPS = 4 * n * d
SWIGLU_FLOPS = 2 * 3 * d * h


def swiglu_hidden(width: int, ffn_mult: int = 4) -> int:
    """h = round(2 ffn_mult d / 3): the SwiGLU width with the parameters of a two-matrix FFN of ffn_mult d."""
    _positive_ints(width=width, ffn_mult=ffn_mult)
    return int(round(2 * ffn_mult * width / 3))


def _positive_ints(**values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")


def _subs(expr: sp.Expr, **values: int) -> int:
    return int(expr.subs({sp.Symbol(k, positive=True): v for k, v in values.items()}))


@dataclass(frozen=True)
class LayerCounts:
    """Parameters and forward FLOPs per token of one layer, split into the length-independent and the n-growing part."""

    parameters: int
    linear_flops: int
    length_flops: int

    @property
    def flops(self) -> int:
        """Forward FLOPs per token: linear_flops + length_flops."""
        return self.linear_flops + self.length_flops


def gau_counts(width: int, expansion: int, key: int, length: int) -> LayerCounts:
    """GAU (FLASH-Quad): 3de + ds + 2e + 5s + d parameters; 2(3de + ds) + 2n(s + e) FLOPs per token."""
    _positive_ints(width=width, expansion=expansion, key=key, length=length)
    v = dict(d=width, e=expansion, s=key, n=length)
    return LayerCounts(_subs(GAU_PARAMS, **v), _subs(GAU_LINEAR_FLOPS, **v), _subs(GAU_QUADRATIC_FLOPS, **v))


def flash_counts(width: int, expansion: int, key: int, length: int, chunk: int) -> LayerCounts:
    """FLASH: GAU's parameters + 4s; 2(3de + ds) + 2c(s + e) + 4se FLOPs per token (n a multiple of c)."""
    _positive_ints(width=width, expansion=expansion, key=key, length=length, chunk=chunk)
    if length % chunk:
        raise ValueError(f"length ({length}) must be a multiple of chunk ({chunk}); padding adds work")
    v = dict(d=width, e=expansion, s=key, c=chunk)
    return LayerCounts(_subs(FLASH_PARAMS, **v), _subs(GAU_LINEAR_FLOPS, **v),
                       _subs(FLASH_CHUNK_FLOPS + FLASH_LINEAR_ATTENTION_FLOPS, **v))


def transformer_counts(width: int, length: int, ffn_mult: int = 4) -> LayerCounts:
    """Transformer++ layer (MHA + SwiGLU of hidden h): 4d^2 + 4d + 3dh + 2h + d parameters; 8d^2 + 6dh + 4nd FLOPs."""
    _positive_ints(width=width, length=length)
    v = dict(d=width, n=length, h=swiglu_hidden(width, ffn_mult))
    return LayerCounts(_subs(TRANSFORMER_PARAMS, **v), _subs(MHA_LINEAR_FLOPS + SWIGLU_FLOPS, **v),
                       _subs(MHA_QUADRATIC_FLOPS, **v))


def two_gau_over_transformer(width: int, key: int = 128, ffn_mult: int = 4) -> float:
    """Parameters of 2 GAU layers (e = 2d) over one Transformer++ layer: (12d^2 + 2ds + ...) / (12d^2 + ...)."""
    return 2 * gau_counts(width, 2 * width, key, 1).parameters / transformer_counts(width, 1, ffn_mult).parameters


def quadratic_ratio_per_layer(width: int, expansion: int, key: int) -> float:
    """GAU's n-growing FLOPs over multi-head attention's, layer for layer: 2n(s + e) / (4nd) = (s + e) / (2d)."""
    _positive_ints(width=width, expansion=expansion, key=key)
    return (key + expansion) / (2 * width)


def flash_break_even_length(expansion: int, key: int, chunk: int) -> float:
    """The n above which FLASH costs fewer FLOPs than GAU: 2n(s + e) > 2c(s + e) + 4se, i.e. n > c + 2se/(s + e)."""
    _positive_ints(expansion=expansion, key=key, chunk=chunk)
    return chunk + 2 * key * expansion / (key + expansion)


def break_even_symbolic() -> sp.Expr:
    """The break-even n of FLASH against GAU, solved by sympy from the two FLOP counts."""
    (root,) = sp.solve(sp.Eq(GAU_QUADRATIC_FLOPS, FLASH_CHUNK_FLOPS + FLASH_LINEAR_ATTENTION_FLOPS), n)
    return sp.simplify(root)


def relative_gap(a: float, b: float) -> float:
    """|a - b| / |b|, for counts that should agree exactly."""
    if b == 0 or not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"relative_gap needs finite values and b != 0; got {a!r}, {b!r}")
    return abs(a - b) / abs(b)
