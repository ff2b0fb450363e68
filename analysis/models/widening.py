"""Function-preserving widening of BERT-style encoders, decoder LMs and GAU / FLASH LMs (kexue.fm/archives/8444).

A *lift* L maps a small vector x (d units) to a wide one (D units): x~_r = a_r x_{i(r)}; the r with i(r) = i
are unit i's copies, and a_r = 0 marks a wide unit held at zero. A linear layer y = W x + b whose input arrives
lifted by L_in and whose output must leave lifted by L_out becomes

    W~_{jr} = a^out_j W_{i(j) i(r)} c_r,   b~_j = a^out_j b_{i(j)},   c_r = a_r / sum_{r' ~ r} a_{r'}^2,

c the least-squares left inverse of L_in (sum over a unit's copies of c_r a_r = 1), so W~ x~ + b~ = L_out(W x + b)
exactly, for any lifts. Everything else follows from what each nonlinearity commutes with:

* elementwise activations (GELU, Swish) need pure copies (a = 1) of their input; ReLU also allows a > 0;
* a norm needs every unit's copies to carry the same sum of squares rho = sum a_r^2, then RMSNorm is exact with
  eps~ = rho (d / D) eps; LayerNorm needs in addition equal multiplicities (D = k d) and equal a;
* attention needs q~.k~ = tau q.k, tau = sqrt(D_h / d_h) when logits are divided by sqrt(head width) (or by the GAU's
  s), 1 otherwise, and each head's units lifted inside that head (local repetition);
* RoPE rotates pairs at frequencies fixed by their position in the head: pairs must move as pairs, and a wide
  pair reproduces a small pair's rotation only at the same frequency, i.e. at pair k i (k = D_h / d_h).

The stream of the residual network is lifted with a_r = 1 / sqrt(m_i) (norm-preserving: rho = 1). An integer k
gives the source's "repeat, then divide by sqrt(k)"; D not a multiple of d gives uneven multiplicities.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from analysis.models.bert import Bert, BertConfig
from analysis.models.lm import LanguageModel, ModelConfig, RMSNorm, ScaleNorm

ROPE_MODES = ("place", "pairs", "local")
REPETITIONS = ("local", "global")
CHECKPOINT_FORMAT = "analysis-model/1"
# a fixed probe of real text (bytes), the same for every model: the start of this module's documentation
PROBE_TEXT = (__doc__ or "").encode()


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Torch's default dtype inside the block. The models create a few constants (the attention scale, key counts)
    in it, so a float64 comparison must also make those float64."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


class WideningError(ValueError):
    """A widening that cannot be done as asked (factor, sizes, architecture)."""


@dataclass(frozen=True)
class Lift:
    """x~_r = scale_r x_{index_r}: ``small`` units lifted to len(index) units (scale 0: a unit held at zero)."""

    index: torch.Tensor  # (D,) int64
    scale: torch.Tensor  # (D,) float64
    small: int

    def __post_init__(self) -> None:
        if self.index.dim() != 1 or self.index.shape != self.scale.shape:
            raise WideningError("a lift's index and scale must be vectors of one length")
        if self.index.numel() and (int(self.index.min()) < 0 or int(self.index.max()) >= self.small):
            raise WideningError(f"a lift's index must lie in [0, {self.small})")
        if bool((self.gain() <= 0).any()):
            raise WideningError("every small unit needs a nonzero copy (a lift must be injective)")

    @property
    def wide(self) -> int:
        """D, the number of wide units."""
        return int(self.index.numel())

    def gain(self) -> torch.Tensor:
        """rho_i = sum over unit i's copies of a_r^2, (small,)."""
        return torch.zeros(self.small, dtype=torch.float64).index_add_(0, self.index, self.scale**2)

    def left_inverse(self) -> torch.Tensor:
        """c_r = a_r / rho_{i(r)}: x_i = sum over i's copies of c_r x~_r."""
        return self.scale / self.gain()[self.index]

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """x~ = L x along the last axis."""
        return x[..., self.index] * self.scale.to(x.dtype)

    def uniform_gain(self) -> bool:
        """Whether every unit's copies carry the same rho (what a norm needs)."""
        g = self.gain()
        return bool(torch.allclose(g, g[0].expand_as(g), rtol=1e-12, atol=0.0))

    @staticmethod
    def repeat(d: int, wide: int, gain: float | None = 1.0, mode: str = "local") -> Lift:
        """Unit i copied m_i = wide // d (+1 for the first wide % d units) times, adjacently (``local``) or as whole
        tiles (``global``); a_r = sqrt(gain / m_i), or 1 (pure copies) when gain is None."""
        if wide < d:
            raise WideningError(f"cannot widen {d} units to {wide}")
        if mode not in REPETITIONS:
            raise WideningError(f"repetition must be one of {', '.join(REPETITIONS)}; got {mode!r}")
        if mode == "global":
            if wide % d:
                raise WideningError(f"global repetition needs a whole number of tiles; {wide} is not a multiple of {d}")
            index = torch.arange(d).repeat(wide // d)
        else:
            counts = torch.full((d,), wide // d, dtype=torch.int64) + (torch.arange(d) < wide % d)
            index = torch.repeat_interleave(torch.arange(d), counts)
        m = torch.bincount(index, minlength=d).to(torch.float64)[index]
        scale = torch.ones(wide, dtype=torch.float64) if gain is None else torch.sqrt(gain / m)
        return Lift(index, scale, d)

    @staticmethod
    def pairs(d: int, k: int, gain: float | None = 1.0, place: bool = False) -> Lift:
        """RoPE pairs (2i, 2i+1) repeated k times as pairs: wide pair p copies small pair p // k (the source's
        pairwise repetition). ``place`` keeps only wide pair k i (the one at small pair i's frequency) and holds the
        others at zero, with a = sqrt(gain); otherwise a = sqrt(gain / k), or 1 when gain is None."""
        if d % 2:
            raise WideningError(f"RoPE needs an even width; got {d}")
        p = torch.arange(k * d) // 2  # wide pair of each wide unit
        index = 2 * (p // k) + torch.arange(k * d) % 2
        if gain is None:
            return Lift(index, torch.ones(k * d, dtype=torch.float64), d)
        if place:
            scale = torch.where(p % k == 0, math.sqrt(gain), 0.0).to(torch.float64)
        else:
            scale = torch.full((k * d,), math.sqrt(gain / k), dtype=torch.float64)
        return Lift(index, scale, d)

    @staticmethod
    def identity(d: int) -> Lift:
        """No widening (an output vocabulary)."""
        return Lift(torch.arange(d), torch.ones(d, dtype=torch.float64), d)

    @staticmethod
    def cat(*lifts: Lift) -> Lift:
        """Lifts of consecutive blocks (heads, or the q, k, v parts of a fused matrix) as one lift."""
        offsets = [0]
        for lift in lifts[:-1]:
            offsets.append(offsets[-1] + lift.small)
        return Lift(torch.cat([lift.index + o for lift, o in zip(lifts, offsets)]),
                    torch.cat([lift.scale for lift in lifts]), sum(lift.small for lift in lifts))


def widen_linear(weight: torch.Tensor, bias: torch.Tensor | None, out: Lift, inp: Lift, split: float = 0.0,
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """W~_{jr} = a^out_j W_{i(j) i(r)} c_r, b~_j = a^out_j b_{i(j)} (float64); ``split`` > 0 multiplies each W~_{jr}
    by 1 + eta_{jr} with eta ~ N(0, split^2) centred over each unit's copies (weights c_r a_r): the function is
    unchanged, because a unit's copies carry the same value, but the copies' weights differ (Net2Net's noise)."""
    if weight.shape != (out.small, inp.small):
        raise WideningError(f"weight of shape {tuple(weight.shape)} does not fit lifts of {out.small} x {inp.small}")
    w = weight.detach().to(torch.float64)[out.index][:, inp.index] * out.scale[:, None] * inp.left_inverse()[None, :]
    if split > 0:
        eta = torch.randn(w.shape, generator=generator, dtype=torch.float64) * split
        share = inp.scale * inp.left_inverse()  # c_r a_r: sums to 1 over a unit's copies
        mean = torch.zeros(out.wide, inp.small, dtype=torch.float64).index_add_(1, inp.index, eta * share)
        w = w * (1 + eta - mean[:, inp.index])
    b = None if bias is None else bias.detach().to(torch.float64)[out.index] * out.scale
    return w, b


def widen_norm(weight: torch.Tensor | None, bias: torch.Tensor | None, lift: Lift, eps: float,
               kind: str) -> tuple[torch.Tensor | None, torch.Tensor | None, float, bool]:
    """A norm whose input and output are lifted by ``lift``, rho = sum of a^2 over a unit's copies, d / D its width
    ratio. RMSNorm and LayerNorm normalise x~_r to a_r n(x)_i / sqrt(rho d / D) when eps~ = rho (d / D) eps, so
    g~_r = g_i sqrt(rho d / D) and beta~_r = a_r beta_i give a_r (g_i n(x)_i + beta_i); ScaleNorm g x / (||x|| + eps)
    gets g~ = g sqrt(rho), eps~ = sqrt(rho) eps. Returns (weight~, bias~, eps~, exact): exact when rho is the same for
    every unit, and for LayerNorm (whose mean counts copies) also every unit copied equally often with equal a."""
    if kind not in ("layernorm", "rmsnorm", "scalenorm"):
        raise WideningError(f"norm kind must be layernorm, rmsnorm or scalenorm; got {kind!r}")
    r = float(lift.gain().mean())
    ratio = lift.small / lift.wide
    exact = lift.uniform_gain()
    if kind == "layernorm":
        counts = torch.bincount(lift.index, minlength=lift.small)
        exact = exact and bool((counts == counts[0]).all()) and bool((lift.scale == lift.scale[0]).all())
    if kind == "scalenorm":
        if weight is None:
            raise WideningError("ScaleNorm needs its scalar g")
        return weight.detach().to(torch.float64) * math.sqrt(r), None, math.sqrt(r) * eps, exact
    w = None if weight is None else weight.detach().to(torch.float64)[lift.index] * math.sqrt(r * ratio)
    b = None if bias is None else bias.detach().to(torch.float64)[lift.index] * lift.scale
    return w, b, r * ratio * eps, exact


def _set(param: torch.Tensor, value: torch.Tensor) -> None:
    with torch.no_grad():
        param.copy_(value.to(param.dtype))


@dataclass
class Widening:
    """A widened model, the lift of its residual stream, and per linear weight its (output, input) lifts."""

    model: nn.Module
    stream: Lift
    lifts: dict[str, tuple[Lift, Lift]]
    exact: bool  # whether every transform used is exact (RoPE pairs, uneven LayerNorm and noise are not)


def _check_factor(d: int, wide: int) -> None:
    if not isinstance(wide, int) or isinstance(wide, bool) or wide < d:
        raise WideningError(f"the wide width must be an integer >= the small width {d}; got {wide!r}")
    if wide == d:
        raise WideningError(f"the wide width {wide} equals the small width: nothing to widen (factor 1)")


def _norm_kind(module: nn.Module) -> str:
    if isinstance(module, nn.LayerNorm):
        return "layernorm"
    if isinstance(module, RMSNorm):
        return "rmsnorm"
    if isinstance(module, ScaleNorm):
        return "scalenorm"
    raise WideningError(f"cannot widen a norm of type {type(module).__name__}")


class _Builder:
    """Copies a small model's parameters into a wide one, lifting each; records the lifts of linear weights."""

    def __init__(self, small: nn.Module, wide: nn.Module, split: float, seed: int) -> None:
        self.small = dict(small.named_parameters())
        self.wide = dict(wide.named_parameters())
        self.small_modules = dict(small.named_modules())
        self.wide_modules = dict(wide.named_modules())
        self.split = split
        self.gen = torch.Generator().manual_seed(seed)
        self.lifts: dict[str, tuple[Lift, Lift]] = {}
        self.done: set[str] = set()

    def norm(self, name: str, lift: Lift, exact_eps: bool, out: torch.Tensor | None = None) -> bool:
        """The norm module ``name`` with input lifted by ``lift``; its output scaled per unit by ``out`` when given
        (a norm reading pure copies that must write the stream's lift). Returns whether it is exact."""
        small, wide = self.small_modules[name], self.wide_modules[name]
        kind = _norm_kind(small)
        weight = small.g if kind == "scalenorm" else small.weight
        w, b, eps, exact = widen_norm(weight, getattr(small, "bias", None), lift, float(small.eps), kind)
        scale = 1.0 if out is None else out
        for param, value in (("g" if kind == "scalenorm" else "weight", w), ("bias", b)):
            if value is not None:
                _set(self.wide[f"{name}.{param}"], value * scale)
                self.done.add(f"{name}.{param}")
        wide.eps = eps if exact_eps else small.eps
        return exact and (exact_eps or eps == small.eps)

    def linear(self, name: str, out: Lift, inp: Lift) -> None:
        w, b = widen_linear(self.small[f"{name}.weight"], self.small.get(f"{name}.bias"), out, inp, self.split, self.gen)
        _set(self.wide[f"{name}.weight"], w)
        self.done.add(f"{name}.weight")
        if b is not None:
            _set(self.wide[f"{name}.bias"], b)
            self.done.add(f"{name}.bias")
        self.lifts[f"{name}.weight"] = (out, inp)

    def columns(self, name: str, lift: Lift) -> None:
        """An embedding table (rows: tokens) whose columns are lifted."""
        _set(self.wide[name], lift.apply(self.small[name].detach().to(torch.float64)))
        self.done.add(name)

    def same(self, name: str) -> None:
        _set(self.wide[name], self.small[name].detach())
        self.done.add(name)

    def finish(self, noise: float) -> None:
        missing = sorted(set(self.wide) - self.done)
        if missing:
            raise WideningError(f"parameters left unwidened: {', '.join(missing[:5])}")
        if noise > 0:
            with torch.no_grad():
                for p in self.wide.values():
                    if p.dim() >= 2:
                        p.add_(torch.randn(p.shape, generator=self.gen, dtype=torch.float64).to(p.dtype)
                               * noise * p.std())


def _qk_lifts(d: int, wide: int, tau: float, rope: str | None, repetition: str = "local") -> tuple[Lift, Lift]:
    """The lifts of one head's q and k with q~.k~ = tau q.k: RoPE ``place`` puts q at pair k i only (a^2 = k tau^2)
    and k on every copy (a^2 = 1/k), one product per unit; ``pairs`` repeats pairs (a^2 = tau / k each); otherwise
    units are repeated (a^2 = tau / m_i)."""
    if rope in ("place", "pairs"):
        if wide % d:
            raise WideningError(f"RoPE keeps a pair's frequency only for an integer factor; head width {d} -> {wide}")
        k = wide // d
        if rope == "place":
            return Lift.pairs(d, k, k * tau**2, place=True), Lift.pairs(d, k, 1.0)
        lift = Lift.pairs(d, k, tau)
        return lift, lift
    lift = Lift.repeat(d, wide, tau, repetition)
    return lift, lift


def _attention_lifts(dh: int, wide_dh: int, heads: int, tau: float, rope: str | None,
                     repetition: str) -> tuple[Lift, Lift, Lift]:
    """q, k and v lifts over all heads: q~.k~ = tau q.k inside each head, v with rho = 1."""
    if repetition == "global":
        d, wide = dh * heads, wide_dh * heads
        return Lift.repeat(d, wide, tau, "global"), Lift.repeat(d, wide, tau, "global"), Lift.repeat(d, wide, 1.0, "global")
    q, kk = _qk_lifts(dh, wide_dh, tau, rope)
    v = Lift.repeat(dh, wide_dh, 1.0)
    return Lift.cat(*[q] * heads), Lift.cat(*[kk] * heads), Lift.cat(*[v] * heads)


def widen_bert(model: Bert, factor: int, *, repetition: str = "local", qk_factor: bool = True,
               exact_eps: bool = True, ffn_copies: bool = True, split: float = 0.0, noise: float = 0.0,
               seed: int = 0) -> Widening:
    """A BERT-style encoder ``factor`` times wider with the same heads: the stream "repeat, divide by sqrt(k)";
    q, k with the k^(1/4) factor when logits are scaled (``qk_factor`` False leaves it out); the GELU FFN's W_1 and the
    head's dense layer as pure copies (W/sqrt(k), b), ReLU's as the stream (``ffn_copies`` False treats GELU's like
    ReLU's, which is not exact); LayerNorm eps / k (``exact_eps``)."""
    cfg = model.cfg
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 2:
        raise WideningError(f"a BERT widens by an integer factor >= 2; got {factor!r}")
    wide_cfg = dataclasses.replace(cfg, d=factor * cfg.d)
    wide = Bert(wide_cfg).to(next(model.parameters()).dtype)
    d, dh, h = cfg.d, cfg.d // cfg.heads, cfg.heads
    stream = Lift.repeat(d, factor * d, 1.0, repetition)
    tau = math.sqrt(factor) if (cfg.scaled and qk_factor) else 1.0
    q, k, v = _attention_lifts(dh, factor * dh, h, tau, None, repetition)
    copies = cfg.ffn == "gelu" and ffn_copies
    hidden = Lift.repeat(cfg.hidden, factor * cfg.hidden, None if copies else 1.0, repetition)
    head = Lift.repeat(d, factor * d, None, repetition)
    b = _Builder(model, wide, split, seed)
    for name in ("tok.weight", "pos.weight", "seg.weight"):
        b.columns(name, stream)
    exact = True
    for i in range(cfg.layers):
        p = f"layers.{i}"
        b.linear(f"{p}.q", q, stream)
        b.linear(f"{p}.k", k, stream)
        b.linear(f"{p}.v", v, stream)
        b.linear(f"{p}.o", stream, v)
        b.linear(f"{p}.w1", hidden, stream)
        b.linear(f"{p}.w2", stream, hidden)
    b.linear("head", head, stream)
    # the head's LayerNorm reads pure copies (rho = k) and must write the stream's lift
    exact &= b.norm("head_norm", head, exact_eps, out=stream.scale)
    for name in ["emb_norm"] + [f"layers.{i}.norm{j}" for i in range(cfg.layers) for j in (1, 2)]:
        exact &= b.norm(name, stream, exact_eps)
    b.same("out_bias")
    if not cfg.tied:
        b.linear("out", Lift.identity(cfg.vocab), stream)
    b.finish(noise)
    exact &= repetition == "local" or h == 1
    exact &= cfg.ffn == "relu" or ffn_copies
    return Widening(wide, stream, b.lifts, exact and tau == (math.sqrt(factor) if cfg.scaled else 1.0) and noise == 0)


def wide_lm_config(cfg: ModelConfig, width: int) -> ModelConfig:
    """The config of ``cfg`` at width ``width``: d, head width, the GAU's e and s scaled by width / d."""
    _check_factor(cfg.d, width)
    ratio = width / cfg.d
    e, s = cfg.expanded * ratio, cfg.s * ratio
    if cfg.block != "transformer" and not (e.is_integer() and s.is_integer()):
        raise WideningError(f"width {width} scales e = {cfg.expanded} and s = {cfg.s} to non-integers ({e:g}, {s:g})")
    if cfg.block == "transformer" and width % cfg.heads:
        raise WideningError(f"width {width} does not split into {cfg.heads} heads")
    return dataclasses.replace(cfg, d=width, e=int(e) if cfg.e is not None else None,
                               s=int(s) if cfg.block != "transformer" else cfg.s)


def _ffn_hidden(model: LanguageModel, name: str) -> int:
    return int(dict(model.named_modules())[name].w1.out_features)


def widen_lm(model: LanguageModel, width: int, *, rope: str = "place", repetition: str = "local",
             exact_eps: bool = True, split: float = 0.0, noise: float = 0.0, seed: int = 0) -> Widening:
    """A LanguageModel (Transformer, GAU or FLASH blocks; any residual arrangement and norm) at width ``width``.

    RoPE (``rope``): ``place`` puts small pair i at wide pair k i, the pair that rotates at its frequency, and holds
    the query's other pairs at zero (exact); ``pairs`` is the source's pairwise repetition (approximate); ``local``
    repeats units one by one (breaks the pairs). A width that is not a multiple of d needs learned positions.
    """
    cfg = model.cfg
    if rope not in ROPE_MODES:
        raise WideningError(f"rope must be one of {', '.join(ROPE_MODES)}; got {rope!r}")
    wide_cfg = wide_lm_config(cfg, width)
    if cfg.block == "transformer" and cfg.attn != "dot":
        raise WideningError("widening supports dot-product attention; this model uses cosine attention")
    uses_rope = cfg.positions == "rope" or cfg.block != "transformer"
    if uses_rope and width % cfg.d and rope != "local":
        raise WideningError(f"RoPE needs an integer factor (width {width} is not a multiple of d = {cfg.d}); "
                            "train with learned positions to widen by a fraction")
    wide = LanguageModel(wide_cfg).to(next(model.parameters()).dtype)
    stream = Lift.repeat(cfg.d, width, 1.0, repetition)
    b = _Builder(model, wide, split, seed)
    b.columns("embed.weight", stream)
    if cfg.positions == "learned":
        b.columns("pos.weight", stream)
    exact = True
    rope_mode = rope if uses_rope else None
    for i, layer in enumerate(model.sublayers):
        p = f"sublayers.{i}"
        for name in [f"{p}.norm"] + ([f"{p}.inner"] if layer.inner is not None else []):
            exact &= b.norm(name, stream, exact_eps)
        f = layer.f
        if type(f).__name__ == "Attention":
            dh, wdh = cfg.d // cfg.heads, width // cfg.heads
            q, k, v = _attention_lifts(dh, wdh, cfg.heads, math.sqrt(wdh / dh), rope_mode, repetition)
            b.linear(f"{p}.f.qkv", Lift.cat(q, k, v), stream)
            b.linear(f"{p}.f.out", stream, v)
            exact &= rope_mode != "pairs" and (rope_mode != "local" or not uses_rope)
        elif type(f).__name__ == "FeedForward":
            h = Lift.repeat(_ffn_hidden(model, p + ".f"), _ffn_hidden(wide, p + ".f"), None, repetition)
            b.linear(f"{p}.f.w1", h, stream)
            if cfg.ffn == "swiglu":
                b.linear(f"{p}.f.w3", h, stream)
            b.linear(f"{p}.f.w2", stream, h)
        else:
            exact &= _widen_gau(b, f, p, cfg, wide_cfg, stream, rope_mode or "local", repetition)
    if not isinstance(model.final_norm, nn.Identity):
        exact &= b.norm("final_norm", stream, exact_eps)
    b.finish(noise)
    return Widening(wide, stream, b.lifts, exact and noise == 0)


def _widen_gau(b: _Builder, gau: Any, p: str, cfg: ModelConfig, wide_cfg: ModelConfig, stream: Lift,
               rope: str, repetition: str) -> bool:
    """GAU: U, V, Z as pure copies (Swish follows), q / k scale-offsets with q~.k~ = tau q.k (tau = sqrt(s~/s) for
    relu^2/(n s) and softmax, 1 for relu^2(q.k/n) and for FLASH's linear part), W_o reading the copies."""
    e, we, s, ws = cfg.expanded, wide_cfg.expanded, cfg.s, wide_cfg.s
    uv = Lift.repeat(e, we, None, repetition)
    b.linear(f"{p}.f.to_uv", Lift.cat(uv, uv), stream)
    exact = True
    if rope in ("place", "pairs"):
        k = ws // s
        z = Lift.pairs(s, k, None)
    else:
        z = Lift.repeat(s, ws, None, repetition)
        exact = False  # RoPE pairs are broken by unit-wise repetition
    b.linear(f"{p}.f.to_z", z, stream)
    b.linear(f"{p}.f.to_out", stream, uv)
    tau_quad = 1.0 if cfg.gau_norm == "relu2_n2" else math.sqrt(ws / s)
    heads = [tau_quad, tau_quad] + ([1.0, 1.0] if cfg.block == "flash" else [])
    gammas, betas = [], []
    for h, tau in enumerate(heads):
        query, key = _qk_lifts(s, ws, tau, rope, repetition)
        lift = query if h % 2 == 0 else key
        # q~_r = a_r (gamma_i z_i + beta_i) with z~_r = z_i: gamma~_r = a_r gamma_i, beta~_r = a_r beta_i
        gammas.append(gau.qk.gamma.detach().to(torch.float64)[h][lift.index] * lift.scale)
        betas.append(gau.qk.beta.detach().to(torch.float64)[h][lift.index] * lift.scale)
    _set(b.wide[f"{p}.f.qk.gamma"], torch.stack(gammas))
    _set(b.wide[f"{p}.f.qk.beta"], torch.stack(betas))
    b.done.update({f"{p}.f.qk.gamma", f"{p}.f.qk.beta"})
    return exact and rope != "pairs"


def subspace_residual(hidden: torch.Tensor, lift: Lift) -> float:
    """||x~ - P x~|| / ||x~||, P the orthogonal projection onto the lift's range (each unit's copies in proportion
    a_r): 0 while the wide model computes inside the copied subspace."""
    x = hidden.detach().to(torch.float64)
    coef = torch.zeros(*x.shape[:-1], lift.small, dtype=torch.float64).index_add_(-1, lift.index, x * lift.scale)
    proj = lift.apply(coef / lift.gain())
    return float((x - proj).norm() / x.norm().clamp(min=1e-300))


def weight_residual(model: nn.Module, lifts: dict[str, tuple[Lift, Lift]]) -> float:
    """Over every lifted linear weight W~: ||W~ - P W~|| / ||W~||, P the projection onto the lifted matrices
    a^out_j M_{i(j) i(r)} c_r (each block of copies one value, in the lift's proportions; zero units zero)."""
    params = dict(model.named_parameters())
    off, total = 0.0, 0.0
    for name, (out, inp) in lifts.items():
        w = params[name].detach().to(torch.float64)
        basis = out.scale[:, None] * inp.left_inverse()[None, :]
        num = torch.zeros(out.small, inp.small, dtype=torch.float64)
        den = torch.zeros(out.small, inp.small, dtype=torch.float64)
        rows = out.index[:, None].expand_as(w)
        cols = inp.index[None, :].expand_as(w)
        num.index_put_((rows, cols), w * basis, accumulate=True)
        den.index_put_((rows, cols), basis * basis, accumulate=True)
        fit = (num / den.clamp(min=1e-300))[out.index][:, inp.index] * basis
        off += float(((w - fit) ** 2).sum())
        total += float((w**2).sum())
    return math.sqrt(off / max(total, 1e-300))


def lift_gradient(grad: torch.Tensor, out: Lift, inp: Lift) -> torch.Tensor:
    """The gradient a copy-widened linear weight has when the small weight's gradient is G:
    dL/dW~_{jr} = c^out_j G_{i(j) i(r)} a^in_r (the roles of a and c swap)."""
    return grad.detach().to(torch.float64)[out.index][:, inp.index] * out.left_inverse()[:, None] * inp.scale[None, :]


def probe_batch(vocab: int, length: int, batch: int = 2) -> torch.Tensor:
    """A fixed batch of real text: ``batch`` windows of ``length`` bytes of :data:`PROBE_TEXT`, taken mod vocab."""
    data = torch.tensor(list(PROBE_TEXT), dtype=torch.int64) % vocab
    starts = [(i * 977) % (data.numel() - length) for i in range(batch)]
    return torch.stack([data[s : s + length] for s in starts])


def max_logit_difference(small: nn.Module, wide: nn.Module, idx: torch.Tensor) -> tuple[float, float]:
    """(max |logits_wide - logits_small|, the same relative to max |logits_small|) on ``idx``."""
    small.eval()
    wide.eval()
    with torch.no_grad():
        a, b = small(idx), wide(idx)
    diff = float((a - b).abs().max())
    return diff, diff / float(a.abs().max())


# --- checkpoints -----------------------------------------------------------------------------------------------


def save_checkpoint(model: nn.Module, path: str | os.PathLike[str]) -> None:
    """Write {format, arch, config, state_dict, eps per norm} for :func:`load_checkpoint`."""
    if isinstance(model, Bert):
        arch = "bert"
    elif isinstance(model, LanguageModel):
        arch = "lm"
    else:
        raise WideningError(f"cannot save a {type(model).__name__}; expected a Bert or a LanguageModel")
    eps = {name: float(m.eps) for name, m in model.named_modules() if hasattr(m, "eps") and isinstance(m.eps, float)}
    torch.save({"format": CHECKPOINT_FORMAT, "arch": arch, "config": dataclasses.asdict(model.cfg),
                "state_dict": model.state_dict(), "eps": eps, "dtype": str(next(model.parameters()).dtype)}, path)


def load_checkpoint(path: str | os.PathLike[str]) -> nn.Module:
    """The model saved by :func:`save_checkpoint`; WideningError naming the problem for anything else."""
    p = Path(path)
    if not p.is_file():
        raise WideningError(f"no checkpoint file at {p}")
    try:
        state: Any = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a corrupted or foreign file: say so, whatever torch raised
        raise WideningError(f"{p} is not a readable checkpoint ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise WideningError(f"{p} is not a checkpoint of format {CHECKPOINT_FORMAT} (save it with "
                            "analysis.models.widening.save_checkpoint)")
    arch = state.get("arch")
    try:
        model: nn.Module
        if arch == "bert":
            model = Bert(BertConfig(**state["config"]))
        elif arch == "lm":
            model = LanguageModel(ModelConfig(**state["config"]))
        else:
            raise WideningError(f"{p}: unknown architecture {arch!r} (expected 'bert' or 'lm')")
        model = model.to(getattr(torch, str(state.get("dtype", "torch.float32")).replace("torch.", "")))
        model.load_state_dict(state["state_dict"])
    except WideningError:
        raise
    except (TypeError, ValueError, KeyError, RuntimeError) as exc:
        raise WideningError(f"{p}: the weights do not fit its {arch} config ({str(exc).splitlines()[0][:160]})") from None
    modules = dict(model.named_modules())
    for name, eps in state.get("eps", {}).items():
        if name in modules:
            modules[name].eps = float(eps)
    return model


def widen_checkpoint(path: str | os.PathLike[str], factor: int, out: str | os.PathLike[str],
                     rope: str = "place") -> dict[str, Any]:
    """Widen the model in ``path`` by an integer ``factor``, write it to ``out`` (which must not exist) and return
    the largest logit difference on :func:`probe_batch` (the input file is only read)."""
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 2:
        raise WideningError(f"factor must be an integer >= 2; got {factor!r}")
    dest = Path(out)
    if dest.exists():
        raise WideningError(f"output {dest} exists; choose a new path (nothing is overwritten)")
    if not dest.parent.is_dir():
        raise WideningError(f"the output's folder {dest.parent} does not exist")
    model = load_checkpoint(path)
    with default_dtype(next(model.parameters()).dtype):  # the models' constants in the checkpoint's precision
        if isinstance(model, Bert):
            vocab, ctx, d, arch = model.cfg.vocab, model.cfg.ctx, model.cfg.d, "bert"
            widening = widen_bert(model, factor)
        else:
            assert isinstance(model, LanguageModel)
            vocab, ctx, d, arch = model.cfg.vocab, model.cfg.ctx, model.cfg.d, model.cfg.block
            widening = widen_lm(model, factor * d, rope=rope)
        idx = probe_batch(vocab, min(ctx, 64))
        diff, rel = max_logit_difference(model, widening.model, idx)
    save_checkpoint(widening.model, dest)
    return {"input": str(path), "output": str(dest), "arch": arch, "factor": factor, "d": d, "wide_d": factor * d, "exact": widening.exact,
            "max_abs_logit_difference": diff, "relative_logit_difference": rel,
            "dtype": str(next(model.parameters()).dtype).replace("torch.", "")}
