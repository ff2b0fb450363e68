"""Check anyone's attention layer, decoder or Hugging Face model for causal leaks, padding and batch dependence,
incremental decoding that departs from the full pass, and length-dependent scaling.

The method the book used by hand on FLASH-pytorch and on the sources' normalisers, as a tool. Inputs are random
(N(0, 1) features for a layer, uniform token ids for a decoder), two samples of up to L_max tokens; a prefix of p
tokens (the first of ``lengths``) is what the checks compare:

* **causal**: run the prefix, then the same prefix followed by more tokens (total length L); a causal module gives
  the prefix the same outputs. The change at position t < p is ``max |y_L[:, t] - y_p[:, t]| / max |y_p|`` (over
  batch and features, relative to the prefix's largest output).
* **padding**: run the p real tokens alone, then with L - p padding tokens of random content after them, masked
  with the module's mask convention; the real tokens' outputs must not move. For a causal module (``causal`` among
  the checks), the ``attention`` convention's mask is the causal mask and the padding together.
* **left-padding**: the same with the padding before the real tokens (a Hugging Face model is given position ids
  that count the real tokens only, as ``generate`` does). Not a default for a layer or a plain decoder: a module
  whose positions are absolute, or whose chunks start at the first token, fails it by design.
* **batch**: the first sample alone, then beside other samples of random content (first of 2, last of 2, third of
  4); its outputs must not move. A sequence-first module (one that takes (n, batch, d)) fails this check.
* **decoding** (``kind="hf"``, causal models): teacher-forced incremental decoding, the first p tokens in one call
  and then one token per call through the model's ``past_key_values``, must give the full forward pass's logits at
  every real position. The second sample is left-padded by p // 2 tokens, so that a cache that loses the mask shows.
* **length law**: where a causal or padding check fails, the change's component along the largest one,
  ``a(L) = <D_L, D_max> / |D_max|^2``, is compared with what a normaliser phi(L) predicts,
  ``(phi(L) - phi(p)) / (phi(L_max) - phi(p))``, for phi = 1/L, 1/L^2 (the total length), the same of the length
  padded to a multiple of c, and log L; the law is named when its largest residual is under
  :data:`LAW_TOLERANCE` and at most half the runner-up's.

Before the checks, each variant of the module runs the same input twice; a module whose outputs differ (random, or
keeping state between calls) cannot be checked, and :class:`CheckInputError` says so instead of reporting a leak.

Variants: a float64 copy in eval mode and in train mode (every dropout set to p = 0, so that a layer that behaves
differently in training, such as a batch norm over time, is checked), and the module's own dtype (or, with
``autocast``, its own dtype under autocast) in eval mode. Decoding runs in eval mode only.

A change counts as a leak above the rounding threshold :func:`rounding_threshold`. In float64 and float32, where
the sums are carried in the dtype itself, it is ``ROUNDING_ULPS * eps(dtype) * sqrt(L_max)``: float64 at 128 tokens
gives 3.2e-13, float32 1.7e-04, a bound on accumulated rounding that a real leak (a normaliser of the total length
moves outputs by O(1)) exceeds by orders of magnitude. In bfloat16 and float16 (and under autocast) the sums are
carried in float32 (matmuls, softmax and norms accumulate there on the CPU and on CUDA) and each stored value is
rounded to the half dtype, so the threshold is float32's bound plus ``HALF_ULPS * eps(dtype)``, a few flips of a
stored value's last place passed on through the layers with a gain of order one: bfloat16 at 128 tokens gives
6.3e-02, float16 8.0e-03, well under the O(1) change of a half-precision-only leak (a kernel that ignores the mask);
correct layers and tiny Hugging Face models measured at most half a unit of the last place there.

The threshold's dtype is the coarsest the forward pass computes in, recorded while it runs: a float64 model that
rounds its values to float32 somewhere (Hugging Face's Llama norms in float32 whatever its dtype) is held to
float32's threshold, and its lines say "float64 (steps in float32)". Left padding moves every real token to
another position, so there values computed from positions alone count too (this book's float32 rotary angles).

Mask conventions (``mask``): ``"none"`` calls ``module(x)``; ``"key-padding"`` calls ``module(x, **{mask_arg: m})``
with m (batch, n) boolean, True at real tokens; ``"attention"`` passes m (n, n) boolean, True where query t may attend
key j (padding columns False, and, for a causal module, j <= t). ``kind="hf"`` passes ``attention_mask`` (batch, n),
1 at real tokens, and ``position_ids`` where the model's forward takes them, and reads the output's ``.logits``.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

KINDS = ("layer", "lm", "hf")
MASKS = ("none", "key-padding", "attention")
CHECKS = ("causal", "padding", "left-padding", "batch", "decoding")
MODES = ("eval", "train")
DEVICES = ("cpu", "cuda")
AUTOCASTS = {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}
LAW_CHECKS = ("causal", "padding", "left-padding")  # the checks whose change is measured against the total length
ROUNDING_ULPS = 128
HALF_ULPS = 8
HALF_DTYPES = (torch.float16, torch.bfloat16)
LAW_TOLERANCE = 0.03  # largest residual of a named law, as a fraction of the full change
PADDED_MULTIPLES = (2, 4, 8, 16, 32, 64, 128, 256)
MASK_ARGS = ("mask", "key_mask", "attention_mask", "attn_mask")
MAX_WIDTH = 2**16
MAX_VOCAB = 2**31 - 1
MAX_LENGTH = 2**14
MAX_ELEMENTS = 2**27  # the longest length times the width or vocab: four samples' float64 outputs are then 4 GiB
# (seed of the others, batch size, the sample's place): first, last and inside, so that a module that mixes samples
# one way only (a sequence-first causal layer, whose first sample sees itself alone) is caught too
BATCH_RUNS = ((1, 2, 0), (2, 2, 1), (3, 4, 2))
DETERMINISM_HINT = "a random or stateful module cannot be checked (seed it, or keep no state between calls)"


class CheckInputError(ValueError):
    """The target cannot be checked as asked (import, factory, shapes, or the module raised): one line."""


def rounding_threshold(dtype: torch.dtype, length: int) -> float:
    """The largest relative change rounding alone is taken to explain: ROUNDING_ULPS * eps(dtype) * sqrt(length) in
    float64 and float32; float32's bound plus HALF_ULPS * eps(dtype) in float16 and bfloat16."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype; got {dtype}")
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ValueError(f"length must be a positive integer; got {length!r}")
    if dtype in HALF_DTYPES:
        return rounding_threshold(torch.float32, length) + HALF_ULPS * torch.finfo(dtype).eps
    return ROUNDING_ULPS * torch.finfo(dtype).eps * math.sqrt(length)


def load_target(target: str) -> nn.Module:
    """``package.module:factory`` (a callable returning an nn.Module, called with no arguments) or
    ``package.module:object`` (an nn.Module) -> the module."""
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
        raise CheckInputError(f"target must be package.module:factory; got {target!r}")
    module_name, attr = target.split(":")
    try:
        mod = importlib.import_module(module_name)
    except (Exception, SystemExit) as err:  # any import failure, sys.exit included, is the user's target
        raise CheckInputError(f"target {target!r} does not import: {type(err).__name__}: {err}") from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CheckInputError(f"target {target!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, nn.Module):
        return obj
    if not callable(obj):
        raise CheckInputError(f"target {target!r} is neither an nn.Module nor a callable returning one")
    try:
        made = obj()
    except (Exception, SystemExit) as err:
        raise CheckInputError(f"target {target!r}: the factory raised {type(err).__name__}: {err}") from None
    if not isinstance(made, nn.Module):
        raise CheckInputError(f"target {target!r}: the factory returned {type(made).__name__}, not an nn.Module")
    return made


def _ranges(positions: Sequence[int]) -> str:
    """[0, 3, 4, 5] -> '0, 3-5'."""
    runs: list[list[int]] = []
    for t in positions:
        if runs and t == runs[-1][1] + 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _finite(value: float) -> float | None:
    """The value, or None where JSON has no number for it (nan, inf)."""
    return value if math.isfinite(value) else None


CHECK_NAMES = {
    "causal": "causal (appending tokens)",
    "padding": "padding (masked tokens appended)",
    "left-padding": "left padding (masked tokens before)",
    "batch": "batch (other samples beside it)",
    "decoding": "decoding (one token per call through the cache)",
}


@dataclass(frozen=True)
class CheckResult:
    """One check in one variant: the largest relative change of the compared outputs, per position and per run.

    ``worst`` and the per-position changes are inf where an output that should not move became nan or inf."""

    check: str
    dtype: str
    threshold: float
    worst: float
    per_position: list[float]
    lengths: list[int]  # the total length of each run (the length law reads them)
    per_length: list[float]  # the largest change of each run
    mode: str = "eval"
    autocast: str | None = None
    nonfinite: bool = False
    computes_in: str | None = None  # a coarser dtype the forward computes some steps in (the threshold's dtype)

    @property
    def passed(self) -> bool:
        """Whether every change is within the rounding threshold."""
        return self.worst <= self.threshold

    @property
    def leaking_positions(self) -> list[int]:
        """The positions whose change exceeds the threshold."""
        return [t for t, c in enumerate(self.per_position) if not c <= self.threshold]

    @property
    def first_position(self) -> int | None:
        """The first position whose change exceeds the threshold (None when the check passes)."""
        return next(iter(self.leaking_positions), None)

    @property
    def precision(self) -> str:
        """The dtype it ran in, and the autocast dtype if any."""
        out = self.dtype if self.autocast is None else f"{self.dtype} under autocast {self.autocast}"
        return out if self.computes_in is None else f"{out} (steps in {self.computes_in})"

    @property
    def variant(self) -> str:
        """The dtype (and autocast) and mode it ran in, as the report prints them."""
        return f"{self.precision}, {'eval mode' if self.mode == 'eval' else 'train mode (dropout off)'}"

    def line(self) -> str:
        """The verdict line: 'passes', or 'leaks by X at positions ...' (which, and how many of those compared)."""
        head = f"{CHECK_NAMES[self.check]}, {self.variant}, threshold {self.threshold:.1e}: "
        if self.passed:
            return head + f"passes (largest relative change {self.worst:.1e})"
        where = self.leaking_positions
        span = (f"position {where[0]} only" if len(where) == 1 else
                f"positions {_ranges(where)} ({len(where)} of the {len(self.per_position)} compared)")
        if self.nonfinite:
            return head + f"leaks: outputs that should not move become nan or inf, at {span}"
        return head + f"leaks by {self.worst:.3g} at {span}"

    def to_json(self) -> dict[str, Any]:
        """Plain data, with None for a change that is not a finite number."""
        out = asdict(self)
        out["worst"] = _finite(self.worst)
        out["per_position"] = [_finite(c) for c in self.per_position]
        out["per_length"] = [_finite(c) for c in self.per_length]
        return {**out, "passed": self.passed, "first_position": self.first_position}


@dataclass(frozen=True)
class LengthLaw:
    """How a failing check's change grows with the total length, and the known law it matches, if any."""

    check: str
    lengths: list[int]
    coefficient: list[float]  # a(L), the change along the largest one
    residuals: dict[str, float]  # law -> largest |a(L) - predicted|
    law: str | None
    dtype: str = "float64"
    mode: str = "eval"

    def line(self) -> str:
        """One line naming the law, or saying that none of the known ones fits."""
        best = min(self.residuals, key=self.residuals.__getitem__)
        where = f"{self.check}, {self.dtype}, {self.mode} mode"
        if self.law is not None:
            return (f"length law ({where}): the change follows {self.law} "
                    f"(largest residual {self.residuals[self.law]:.1%} of the full change)")
        return (f"length law ({where}): no known law fits (closest: {best}, largest residual "
                f"{self.residuals[best]:.1%})")


@dataclass(frozen=True)
class CheckReport:
    """Every check of one module."""

    target: str
    kind: str
    mask: str
    results: list[CheckResult]
    laws: list[LengthLaw] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device: str = "cpu"

    @property
    def passed(self) -> bool:
        """Whether every check passed (and at least one ran)."""
        return bool(self.results) and all(r.passed for r in self.results)

    def failing(self) -> list[str]:
        """Each failing check, with where it fails when that is not everywhere it ran ('train mode only')."""
        out = []
        for check in dict.fromkeys(r.check for r in self.results):
            ran = [r for r in self.results if r.check == check]
            bad = [r for r in ran if not r.passed]
            if not bad:
                continue
            where = []
            # a qualifier only where the same check passed in another mode (or dtype) beside the failing one
            if len({r.mode for r in bad}) == 1 and any(
                    r.passed and r.mode != bad[0].mode and r.precision in {b.precision for b in bad} for r in ran):
                where.append(f"{bad[0].mode} mode only")
            if len({r.precision for r in bad}) == 1 and any(
                    r.passed and r.precision != bad[0].precision and r.mode in {b.mode for b in bad} for r in ran):
                where.append(f"{bad[0].precision} only")
            out.append(check + (f" ({', '.join(where)})" if where else ""))
        return out

    def lines(self) -> list[str]:
        """The report as the command prints it: one verdict line per check, the laws, what was not checked."""
        mask = "attention_mask" if self.kind == "hf" else self.mask
        out = [f"{self.target} ({self.kind}, mask {mask}, {self.device}):"]
        out += ["  " + r.line() for r in self.results] + ["  " + law.line() for law in self.laws]
        out += [f"  note: {n}" for n in self.notes] + [f"  not checked: {s}" for s in self.skipped]
        out.append("  verdict: " + ("passes every check" if self.passed else "FAILS: " + ", ".join(self.failing())))
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain data of the report; every number finite or None, so that it is valid JSON."""
        return {"target": self.target, "kind": self.kind, "mask": self.mask, "device": self.device,
                "passed": self.passed, "failing": self.failing(), "results": [r.to_json() for r in self.results],
                "laws": [asdict(law) for law in self.laws], "notes": self.notes, "skipped": self.skipped}


def _law_candidates(prefix: int, lengths: Sequence[int]) -> dict[str, list[float]]:
    """Predicted a(L) = (phi(L) - phi(p)) / (phi(L_max) - phi(p)) of every known normaliser phi."""
    phis: dict[str, Callable[[int], float]] = {
        "1/n (the total length)": lambda n: 1 / n,
        "1/n^2 (the total length, squared)": lambda n: 1 / n**2,
        "a log n factor (of the total length)": lambda n: math.log(n),
    }
    for c in PADDED_MULTIPLES:
        if any(n % c for n in [prefix, *lengths]):  # indistinguishable from the total length otherwise
            phis[f"1/n_pad (the length padded to a multiple of {c})"] = lambda n, c=c: 1 / (-(-n // c) * c)
            phis[f"1/n_pad^2 (the length padded to a multiple of {c}, squared)"] = (
                lambda n, c=c: 1 / (-(-n // c) * c) ** 2)
    out = {}
    for name, phi in phis.items():
        span = phi(lengths[-1]) - phi(prefix)
        if span != 0:
            out[name] = [(phi(n) - phi(prefix)) / span for n in lengths]
    return out


def fit_length_law(check: str, prefix: int, lengths: Sequence[int], deltas: Sequence[torch.Tensor],
                   dtype: str = "float64", mode: str = "eval") -> LengthLaw:
    """The change D_L of each length projected on the largest, a(L) = <D_L, D_max> / |D_max|^2, against every known
    normaliser's prediction; the best law is named when its residual is under LAW_TOLERANCE and half the next."""
    if len(lengths) != len(deltas) or not lengths:
        raise ValueError("lengths and deltas must be equally long and not empty")
    ref = deltas[-1].double().flatten()
    norm = float(ref @ ref)
    coef = [float(d.double().flatten() @ ref) / norm if norm > 0 else 0.0 for d in deltas]
    residuals = {name: max(abs(a - b) for a, b in zip(coef, pred))
                 for name, pred in _law_candidates(prefix, lengths).items()}
    ranked = sorted(residuals, key=residuals.__getitem__)
    law = None
    if ranked and residuals[ranked[0]] < LAW_TOLERANCE and (
            len(ranked) == 1 or residuals[ranked[0]] <= 0.5 * residuals[ranked[1]]):
        law = ranked[0]
    return LengthLaw(check, list(lengths), coef, residuals, law, dtype, mode)


def _own_dtype(module: nn.Module) -> torch.dtype:
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)


def _infer(module: nn.Module, kind: str) -> int:
    """d (the first Linear's or LayerNorm's input width) for a layer; vocab (the first Embedding's size) for an lm."""
    for m in module.modules():
        if kind == "lm" and isinstance(m, nn.Embedding):
            return int(m.num_embeddings)
        if kind == "layer" and isinstance(m, nn.Linear):
            return int(m.in_features)
        if kind == "layer" and isinstance(m, nn.LayerNorm):
            return int(m.normalized_shape[-1])
    raise CheckInputError(f"cannot tell the module's {'vocab' if kind == 'lm' else 'width'}: pass "
                          f"{'--vocab' if kind == 'lm' else '--d'}")


def _parameters(module: nn.Module) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return {}


def _mask_arg(module: nn.Module, mask_arg: str | None) -> str:
    if mask_arg is not None:
        return mask_arg
    found = next((name for name in MASK_ARGS if name in _parameters(module)), None)
    if found is None:
        raise CheckInputError(f"the module's forward takes none of {', '.join(MASK_ARGS)}: pass --mask-arg")
    return found


def _sequence_first(module: nn.Module) -> bool:
    """Whether the module is one of torch's sequence-first layers (batch_first=False): it takes (n, batch, d)."""
    if getattr(module, "batch_first", True) is False:
        return True
    if isinstance(module, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return not module.self_attn.batch_first
    if isinstance(module, (nn.TransformerEncoder, nn.TransformerDecoder)) and len(module.layers):
        return _sequence_first(module.layers[0])
    return False


def _disable_dropout(module: nn.Module) -> None:
    """Every dropout to p = 0: the layers, torch's attention's rate, and float rates named *dropout* (Hugging Face's
    attention layers pass such a rate to the attention kernel in training)."""
    for m in module.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.p = 0.0
        for name, value in list(vars(m).items()):
            if "dropout" in name and isinstance(value, float):
                setattr(m, name, 0.0)


@contextlib.contextmanager
def _restored(module: nn.Module) -> Iterator[None]:
    """Runs the block on the module itself, then gives back its parameters, buffers, modes and dropout rates."""
    params = [(p, p.data) for p in module.parameters()]
    buffers = [(m, name, b, b.detach().clone()) for m in module.modules() for name, b in m._buffers.items()
               if b is not None]
    modes = [(m, m.training) for m in module.modules()]
    rates = [(m, name, value) for m in module.modules() for name, value in vars(m).items()
             if name == "p" and isinstance(m, nn.modules.dropout._DropoutNd)
             or "dropout" in name and isinstance(value, float)]
    try:
        yield
    finally:
        with torch.no_grad():
            for p, data in params:
                p.data = data
            for m, name, b, saved in buffers:
                b.copy_(saved)  # a training run may have moved running statistics in place
                m._buffers[name] = b
        for m, training in modes:
            m.training = training
        for m, name, value in rates:
            setattr(m, name, value)


def _select(out: Any, output: int | str | None, kind: str) -> Any:
    """The forward's result named by ``output`` (an index into a tuple, or a key or attribute); a bare tensor as is."""
    if output is None:
        if kind == "hf":
            output = "logits"
        elif isinstance(out, torch.Tensor):
            return out
        elif isinstance(out, (tuple, list)):
            shapes = ", ".join(str(tuple(o.shape)) if isinstance(o, torch.Tensor) else type(o).__name__ for o in out)
            raise CheckInputError(f"the module returns a {type(out).__name__} of {len(out)} ({shapes}): pass "
                                  f"--output INDEX to say which element holds the outputs")
        else:
            raise CheckInputError(f"the module returns a {type(out).__name__}, not a tensor: pass --output NAME "
                                  f"(or --kind hf for a Hugging Face model)")
    try:
        if isinstance(output, int):
            return out[output]
        if isinstance(out, dict) and output in out:
            return out[output]
        return getattr(out, output)
    except (IndexError, KeyError, AttributeError, TypeError):
        raise CheckInputError(f"the module's output ({type(out).__name__}) has no element {output!r} (--output)"
                              ) from None


class _Runner:
    """Calls the module the same way for every check, and turns its failures and odd shapes into one line."""

    def __init__(self, module: nn.Module, kind: str, width: int, mask: str, mask_arg: str | None,
                 output: int | str | None, device: torch.device, autocast: torch.dtype | None,
                 causal: bool) -> None:
        self.module, self.kind, self.width, self.mask, self.output = module, kind, width, mask, output
        self.device, self.autocast, self.causal = device, autocast, causal
        self.mask_arg = _mask_arg(module, mask_arg) if mask != "none" and kind != "hf" else None
        self.takes_positions = "position_ids" in _parameters(module)

    def inputs(self, batch: int, length: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
        """Token ids for a decoder; N(0, 1) features in ``dtype`` (drawn in float64, the same for every dtype)."""
        g = torch.Generator().manual_seed(seed)
        if self.kind in ("lm", "hf"):
            return torch.randint(0, self.width, (batch, length), generator=g)
        return torch.randn(batch, length, self.width, generator=g, dtype=torch.float64).to(dtype)

    def _kwargs(self, x: torch.Tensor, keep: torch.Tensor | None) -> dict[str, Any]:
        b, n = x.shape[:2]
        if self.kind == "hf":
            keep = torch.ones(b, n, dtype=torch.bool) if keep is None else keep
            kwargs: dict[str, Any] = {"attention_mask": keep.long().to(self.device), "use_cache": False}
            if self.takes_positions:
                kwargs["position_ids"] = _positions(keep).to(self.device)
            return kwargs
        if self.mask_arg is None:
            return {}
        keep = torch.ones(b, n, dtype=torch.bool) if keep is None else keep
        if self.mask == "key-padding":
            return {self.mask_arg: keep.to(self.device)}
        allowed = keep[0][None, :].expand(n, n).clone()  # one (n, n) mask: these checks pad every sample alike
        return {self.mask_arg: (allowed.tril() if self.causal else allowed).to(self.device)}

    def _forward(self, x: torch.Tensor, **kwargs: Any) -> Any:
        autocast = (torch.autocast(self.device.type, dtype=self.autocast) if self.autocast is not None
                    else contextlib.nullcontext())
        try:
            with torch.no_grad(), autocast:
                if self.kind == "hf":
                    return self.module(input_ids=x.to(self.device), **kwargs)
                return self.module(x.to(self.device), **kwargs)
        except (Exception, SystemExit) as err:
            raise CheckInputError(f"the module raised {type(err).__name__} on input {tuple(x.shape)}: "
                                  f"{str(err).splitlines()[0] if str(err) else ''}") from None

    def _logits(self, out: Any, x: torch.Tensor) -> torch.Tensor:
        b, n = x.shape[:2]
        y = _select(out, self.output, self.kind)
        if not isinstance(y, torch.Tensor) or y.dim() != 3 or tuple(y.shape[:2]) != (b, n) or (
                self.kind == "layer" and y.shape[2] != self.width):
            want = f"(batch, n, {self.width})" if self.kind == "layer" else "(batch, n, vocab)"
            got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
            raise CheckInputError(f"the module maps input {tuple(x.shape)} to {got}, not {want}")
        return y.detach().double().cpu()

    def __call__(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """The outputs (batch, n, width) in float64 on the CPU; ``keep`` (batch, n) is True at real tokens."""
        return self._logits(self._forward(x, **self._kwargs(x, keep)), x)

    def decode(self, x: torch.Tensor, keep: torch.Tensor, prefix: int) -> torch.Tensor:
        """Teacher-forced incremental decoding: the prefix in one call, then one token per call through the cache."""
        pos = _positions(keep)
        extra: Callable[[int, int], dict[str, Any]] = (
            (lambda a, b: {"position_ids": pos[:, a:b].to(self.device)}) if self.takes_positions else
            (lambda a, b: {}))
        out = self._forward(x[:, :prefix], attention_mask=keep[:, :prefix].long().to(self.device), use_cache=True,
                            **extra(0, prefix))
        logits = [self._logits(out, x[:, :prefix])]
        for t in range(prefix, x.shape[1]):
            cache = getattr(out, "past_key_values", None)
            if cache is None:
                raise CheckInputError("the model returned no past_key_values with use_cache=True: it does not "
                                      "decode incrementally (leave decoding out of --checks)")
            out = self._forward(x[:, t:t + 1], attention_mask=keep[:, :t + 1].long().to(self.device),
                                past_key_values=cache, use_cache=True, **extra(t, t + 1))
            logits.append(self._logits(out, x[:, t:t + 1]))
        return torch.cat(logits, dim=1)


class _Precisions(torch.overrides.TorchFunctionMode):
    """Records the floating dtypes a forward pass computes in besides its own: ``rounded``, those a torch function
    rounds floating input to (a float64 model that norms in float32), and ``made``, those of floating values made
    from no floating input (a float32 rotary angle computed from integer positions)."""

    def __init__(self) -> None:
        super().__init__()
        self.rounded: set[torch.dtype] = set()
        self.made: set[torch.dtype] = set()

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        given = [a for a in _flat([*args, *(kwargs or {}).values()])
                 if isinstance(a, torch.Tensor) and a.is_floating_point()]
        made = [t.dtype for t in _flat([out]) if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if given:
            finest = min(torch.finfo(a.dtype).eps for a in given)
            self.rounded.update(t for t in made if torch.finfo(t).eps > finest)
        else:
            self.made.update(made)
        return out


def _flat(items: Sequence[Any]) -> list[Any]:
    """Tensors and other items, with tuples and lists opened (one level deep is enough for torch's functions)."""
    return [y for x in items for y in (x if isinstance(x, (tuple, list)) else (x,))]


def _coarsest(dtypes: Iterator[torch.dtype] | set[torch.dtype]) -> torch.dtype:
    """The dtype of least precision (largest eps)."""
    return max(dtypes, key=lambda t: torch.finfo(t).eps)


def _positions(keep: torch.Tensor) -> torch.Tensor:
    """Position ids that count the real tokens only, as Hugging Face's ``generate`` makes them (1 at padding)."""
    pos = keep.long().cumsum(-1) - 1
    return pos.masked_fill(~keep, 1)


def _changes(ref: torch.Tensor, outs: Sequence[torch.Tensor], real: torch.Tensor | None = None
             ) -> tuple[list[float], list[float], list[torch.Tensor], bool]:
    """Per position and per run, the largest change relative to the reference's largest output (inf where an output
    is nan or inf); ``real`` (batch, n) limits both to real tokens. Also the changes themselves, and whether any
    output was not finite."""
    weight = torch.ones(ref.shape[:2], dtype=torch.bool) if real is None else real
    scale = float(ref[weight].abs().max()) if bool(weight.any()) else 0.0
    scale = scale or 1.0
    deltas = [(o - ref) * weight[..., None] for o in outs]
    nonfinite = any(not bool(torch.isfinite(o[weight]).all()) for o in outs)
    mags = [torch.nan_to_num(d.abs(), nan=math.inf, posinf=math.inf) for d in deltas]
    per_pos = (torch.stack([m.amax(dim=(0, 2)) for m in mags]).amax(0) / scale).tolist()
    per_run = [float(m.max()) / scale for m in mags]
    return per_pos, per_run, deltas, nonfinite


def _hf_config(module: nn.Module) -> Any:
    config = getattr(module, "config", None)
    if config is None or "input_ids" not in _parameters(module):
        raise CheckInputError("--kind hf takes a Hugging Face model (a module with .config whose forward takes "
                              "input_ids); this one is not")
    if getattr(config, "is_encoder_decoder", False):
        raise CheckInputError("--kind hf checks causal and masked language models; an encoder-decoder is not "
                              "supported")
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _hf_causal(module: nn.Module) -> bool:
    """Whether a Hugging Face model is a causal (generating) one rather than a masked LM."""
    can = getattr(module, "can_generate", None)
    return bool(can()) if callable(can) else type(module).__name__.endswith(("ForCausalLM", "LMHeadModel"))


def _hf_max_positions(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _default_checks(kind: str, mask: str, causal_model: bool) -> tuple[list[str], list[str]]:
    """The checks a kind gets when none are named, and a line for each default left out."""
    if kind == "hf":
        if causal_model:
            return ["causal", "padding", "left-padding", "batch", "decoding"], []
        return ["padding", "left-padding", "batch"], ["causal and decoding (a masked language model attends both "
                                                      "ways; name them in --checks to check anyway)"]
    if mask == "none":
        return ["causal", "batch"], ["padding (the module takes no mask: pass --mask key-padding or attention)"]
    return ["causal", "padding", "batch"], []


def _validate(kind: str, mask: str, checks: Sequence[str] | None, lengths: list[int], modes: Sequence[str],
              device: str, autocast: str, d: int | None, vocab: int | None, seed: int,
              output: int | str | None) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(MASKS)}; got {mask!r}")
    if kind == "hf" and mask != "none":
        raise ValueError("mask does not apply to kind hf (a Hugging Face model is given attention_mask)")
    if checks is not None and (not checks or any(c not in CHECKS for c in checks)):
        raise ValueError(f"checks must be among {', '.join(CHECKS)}; got {list(checks)!r}")
    if not modes or any(m not in MODES for m in modes) or "eval" not in modes:
        raise ValueError(f"modes must be eval, or eval and train; got {list(modes)!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda: CUDA is not available on this machine (torch.cuda.is_available() is False)")
    if autocast not in AUTOCASTS:
        raise ValueError(f"autocast must be one of {', '.join(AUTOCASTS)}; got {autocast!r}")
    if len(lengths) < 2 or any(not isinstance(n, int) or n < 1 for n in lengths) or lengths != sorted(set(lengths)):
        raise ValueError(f"lengths must be at least two increasing positive integers (the first is the prefix); "
                         f"got {lengths!r}")
    if lengths[-1] > MAX_LENGTH:
        raise ValueError(f"lengths must be at most {MAX_LENGTH}; got {lengths[-1]}")
    for name, value, top in (("d", d, MAX_WIDTH), ("vocab", vocab, MAX_VOCAB)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top):
            raise ValueError(f"{name} must be an integer in [1, {top}]; got {value!r}")
    if not isinstance(seed, int) or not 0 <= seed < 2**62:
        raise ValueError(f"seed must be an integer in [0, 2**62); got {seed!r}")
    if output is not None and not isinstance(output, (int, str)):
        raise ValueError(f"output must be an index or a name; got {output!r}")


@dataclass
class _Variant:
    mode: str
    dtype: torch.dtype
    autocast: torch.dtype | None

    def label(self) -> tuple[str, str | None]:
        return str(self.dtype).removeprefix("torch."), (None if self.autocast is None
                                                       else str(self.autocast).removeprefix("torch."))


def check_module(module: nn.Module, kind: str = "layer", *, target: str = "module", d: int | None = None,
                 vocab: int | None = None, lengths: Sequence[int] = (32, 37, 45, 64, 77, 100, 128),
                 mask: str = "none", mask_arg: str | None = None, checks: Sequence[str] | None = None,
                 seed: int = 0, modes: Sequence[str] = MODES, device: str = "cpu", autocast: str = "none",
                 output: int | str | None = None) -> CheckReport:
    """The checks (by default those the kind and mask allow), in float64 (eval and train mode) and in the module's
    own dtype, and the length law of any causal or padding check that fails."""
    lengths = list(lengths)
    _validate(kind, mask, checks, lengths, modes, device, autocast, d, vocab, seed, output)
    if not isinstance(module, nn.Module):
        raise CheckInputError(f"the target is a {type(module).__name__}, not an nn.Module")
    if _sequence_first(module):
        raise CheckInputError(f"the module ({type(module).__name__}) is sequence-first (batch_first=False: it takes "
                              f"(n, batch, d)): build it with batch_first=True, or wrap it to take (batch, n, d)")
    causal_model = True
    if kind == "hf":
        config = _hf_config(module)
        causal_model = _hf_causal(module)
        width = vocab or getattr(config, "vocab_size", None)
        if not isinstance(width, int) or width < 1:
            raise CheckInputError("the model's config gives no vocab_size: pass --vocab")
        longest = _hf_max_positions(config)
        if longest is not None and lengths[-1] > longest:
            raise ValueError(f"lengths must be at most {longest}, the model's longest input (its config); "
                             f"got {lengths[-1]}")
    else:
        width = (vocab if kind == "lm" else d) or _infer(module, kind)
    if lengths[-1] * width > MAX_ELEMENTS:
        name = "d" if kind == "layer" else "vocab"
        raise ValueError(f"{name} ({width}) times the longest of lengths ({lengths[-1]}) must be at most 2**27, so "
                         f"that the outputs fit in memory; shorten lengths")
    skipped: list[str] = []
    if checks is None:
        wanted, skipped = _default_checks(kind, mask, causal_model)
    else:
        wanted = list(dict.fromkeys(checks))
        for check in wanted:
            if check in ("padding", "left-padding") and kind != "hf" and mask == "none":
                raise CheckInputError(f"the {check} check needs the module's mask: pass --mask key-padding or "
                                      f"attention (and --mask-arg if its keyword is not found)")
            if check == "decoding" and (kind != "hf" or not causal_model):
                raise CheckInputError("the decoding check needs a causal Hugging Face model (--kind hf): one that "
                                      "takes past_key_values")
    if "decoding" in wanted and lengths[0] < 2:
        raise ValueError(f"lengths must start at 2 or more for the decoding check; got {lengths[0]}")
    dev = torch.device(device)
    own = _own_dtype(module)
    variants = [_Variant("eval", torch.float64, None)]
    if "train" in modes:
        variants.append(_Variant("train", torch.float64, None))
    if own != torch.float64 or autocast != "none":
        variants.append(_Variant("eval", own, AUTOCASTS[autocast]))
    notes: list[str] = []
    spare: nn.Module | None = None
    try:
        spare = copy.deepcopy(module)  # the first variant's copy
        copyable = True
    except Exception as err:  # a lock, an open file, a generator: the module itself is used, then restored
        copyable = False
        notes.append(f"the module cannot be deep-copied ({type(err).__name__}: {err}): checked in place, its "
                     f"parameters, buffers, modes and dropout rates restored afterwards")
    results: list[CheckResult] = []
    deltas_of: dict[tuple[str, str, str], list[torch.Tensor]] = {}
    for variant in variants:
        with contextlib.ExitStack() as stack:
            if copyable:
                mod, spare = spare or copy.deepcopy(module), None
            else:
                stack.enter_context(_restored(module))
                mod = module
            # the own-dtype variant keeps any parameters or buffers the module holds in another dtype on purpose
            mod = mod.to(device=dev) if variant.dtype == own else mod.to(device=dev, dtype=variant.dtype)
            mod.train(variant.mode == "train")
            if variant.mode == "train":
                _disable_dropout(mod)
            run = _Runner(mod, kind, width, mask, mask_arg, output, dev, variant.autocast, "causal" in wanted)
            checked = [c for c in wanted if c != "decoding" or variant.mode == "eval"]
            for result, deltas in _run_variant(run, variant, checked, lengths, seed):
                results.append(result)
                if deltas is not None:
                    deltas_of[(result.check, result.dtype, result.mode)] = deltas
    laws = []
    for check in LAW_CHECKS:
        bad = [r for r in results if r.check == check and not r.passed and (check, r.dtype, r.mode) in deltas_of]
        if bad:  # the float64 eval run first: its change is the module's mathematics, not its rounding
            r = bad[0]
            laws.append(fit_length_law(check, lengths[0], lengths[1:], deltas_of[(check, r.dtype, r.mode)],
                                       r.precision, r.mode))
    notes += _reasons(results)
    return CheckReport(target, kind, mask if kind != "hf" else "none", results, laws, skipped, notes, device)


def _reasons(results: list[CheckResult]) -> list[str]:
    """Why a check fails where it fails: in the module's own dtype only, in train mode only, or across the batch."""
    out = []
    for check in dict.fromkeys(r.check for r in results):
        ran = [r for r in results if r.check == check]
        bad = [r for r in ran if not r.passed]
        if not bad:
            continue
        f64_eval = [r for r in ran if r.dtype == "float64" and r.mode == "eval"]
        if all(r.dtype != "float64" for r in bad):
            out.append(f"{check} fails in {bad[0].precision} only (float64 passes): not the module's "
                       f"mathematics but a code path or a cast of that dtype, or rounding beyond the threshold")
        elif all(r.mode == "train" for r in bad) and f64_eval:
            out.append(f"{check} fails in train mode only (eval passes, dropout off): a layer that behaves "
                       f"differently in training (a batch norm, a running statistic) mixes what it should not")
        if check == "batch" and any(r.mode == "eval" for r in bad):
            out.append("batch: a sample's outputs depend on the other samples; a sequence-first module (one that "
                       "takes (n, batch, d)) fails this way too")
    return out


def _run_variant(run: _Runner, variant: _Variant, checks: Sequence[str], lengths: list[int], seed: int
                 ) -> Iterator[tuple[CheckResult, list[torch.Tensor] | None]]:
    """Every check in one variant, after the determinism probe; each result with its changes where finite."""
    prefix, longer, longest = lengths[0], lengths[1:], lengths[-1]
    dtype_label, autocast_label = variant.label()
    x = run.inputs(2, longest, seed, variant.dtype)
    with _Precisions() as probe:
        first = run(x)
    second = run(x)
    # the threshold is that of the coarsest dtype the forward computes in: a float64 model may norm in float32
    own = variant.autocast or variant.dtype
    coarsest = _coarsest(probe.rounded | {own})
    threshold = rounding_threshold(coarsest, longest)
    # left padding moves every real token to another position, so values computed from positions alone (a float32
    # rotary angle) are computed anew there, and their precision counts too; elsewhere they are the same in both runs
    moved_coarsest = _coarsest(probe.rounded | probe.made | {own})
    coarser = {c: (None if t == own else str(t).removeprefix("torch."), rounding_threshold(t, longest))
               for c, t in (("same", coarsest), ("moved", moved_coarsest))}
    where = f"in {variant.mode} mode ({dtype_label}{'' if autocast_label is None else ' autocast ' + autocast_label})"
    if not bool(torch.isfinite(first).all()):
        raise CheckInputError(f"the module's outputs are nan or inf on its own input of {longest} tokens {where}: "
                              f"it cannot be checked at that length (try shorter --lengths)")
    apart = float((first - second).abs().max() / (first.abs().max() or 1.0))
    if not apart <= threshold:
        hint = "; its dropout was set to p = 0, so some other randomness or state remains" if variant.mode == "train" \
            else ""
        raise CheckInputError(f"the module is not deterministic {where}: the same input twice gave outputs "
                              f"{apart:.2g} apart (relative to the largest){hint}; {DETERMINISM_HINT}"
                              + (", or pass --modes eval" if variant.mode == "train" else ""))

    def result(check: str, ref: torch.Tensor, outs: list[torch.Tensor], runs: list[int],
               real: torch.Tensor | None = None) -> tuple[CheckResult, list[torch.Tensor] | None]:
        if not bool(torch.isfinite(ref if real is None else ref[real]).all()):
            raise CheckInputError(f"the module's outputs are nan or inf on the {check} check's reference run "
                                  f"{where}: it cannot be checked")
        per_pos, per_run, deltas, nonfinite = _changes(ref, outs, real)
        computes_in, limit = coarser["moved" if check == "left-padding" else "same"]
        res = CheckResult(check, dtype_label, limit, max(per_run), per_pos, runs, per_run, variant.mode,
                          autocast_label, nonfinite, computes_in)
        return res, (None if nonfinite else deltas)

    for check in checks:
        if check == "causal":
            ref = run(x[:, :prefix])
            yield result(check, ref, [run(x[:, :n])[:, :prefix] for n in longer], longer)
        elif check == "padding":
            ref = run(x[:, :prefix], _keep(2, prefix, 0, prefix))
            yield result(check, ref, [run(x[:, :n], _keep(2, n, 0, prefix))[:, :prefix] for n in longer], longer)
        elif check == "left-padding":
            ref = run(x[:, :prefix], _keep(2, prefix, 0, prefix))
            outs = [run(torch.cat([x[:, prefix:n], x[:, :prefix]], dim=1), _keep(2, n, n - prefix, n))[:, n - prefix:]
                    for n in longer]
            yield result(check, ref, outs, longer)
        elif check == "batch":
            ref = run(x[:1])
            outs = []
            for offset, size, place in BATCH_RUNS:
                others = run.inputs(size - 1, longest, seed + offset, variant.dtype)
                outs.append(run(torch.cat([others[:place], x[:1], others[place:]]))[place:place + 1])
            yield result(check, ref, outs, [longest] * len(outs))
        elif check == "decoding":
            keep = _keep(2, longest, 0, longest)
            keep[1, : prefix // 2] = False  # the second sample left-padded: its cache holds masked keys
            full = run(x, keep)
            yield result(check, full, [run.decode(x, keep, prefix)], [longest], real=keep)


def _keep(batch: int, n: int, start: int, stop: int) -> torch.Tensor:
    """(batch, n) True at the real tokens, positions start to stop - 1."""
    pos = torch.arange(n)
    return ((pos >= start) & (pos < stop)).expand(batch, n).clone()
