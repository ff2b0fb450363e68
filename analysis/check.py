"""Check anyone's attention layer or decoder for causal leaks, padding dependence and length-dependent scaling.

The method the book used by hand on FLASH-pytorch and on the sources' normalisers, as a tool:

* **causal**: run a prefix of p tokens, then the same prefix followed by more tokens (total length L); a causal
  module gives the prefix the same outputs. The change at position t < p is
  ``max |y_L[:, t] - y_p[:, t]| / max |y_p|`` (over batch and features, relative to the prefix's largest output).
* **padding**: run p real tokens alone, then with L - p padding tokens of random content after them, masked with the
  module's mask convention; the real tokens' outputs must not move.
* **length law**: where a check fails, the change's component along the largest one,
  ``a(L) = <D_L, D_max> / |D_max|^2``, is compared with what a normaliser phi(L) predicts,
  ``(phi(L) - phi(p)) / (phi(L_max) - phi(p))``, for phi = 1/L, 1/L^2 (the total length), the same of the length
  padded to a multiple of c, and log L; the law is named when its largest residual is under
  :data:`LAW_TOLERANCE` and at most half the runner-up's.

Each check runs in float64 (a copy of the module) and in the module's own dtype. A change counts as a leak above
the rounding threshold ``ROUNDING_ULPS * eps(dtype) * sqrt(L_max)``: float64 at 128 tokens gives 1.6e-13, float32
8.6e-5, a bound on accumulated rounding that a real leak (a normaliser of the total length moves outputs by O(1))
exceeds by orders of magnitude.

Mask conventions (``mask``): ``"none"`` calls ``module(x)``; ``"key-padding"`` calls ``module(x, **{mask_arg: m})``
with m (batch, n) boolean, True at real tokens; ``"attention"`` passes m (n, n) boolean, True where query t may attend
key j (padding columns False, and, for a causal check, j <= t).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

KINDS = ("layer", "lm")
MASKS = ("none", "key-padding", "attention")
CHECKS = ("causal", "padding")
ROUNDING_ULPS = 128
LAW_TOLERANCE = 0.03  # largest residual of a named law, as a fraction of the full change
PADDED_MULTIPLES = (2, 4, 8, 16, 32, 64, 128, 256)
MASK_ARGS = ("mask", "key_mask", "attention_mask", "attn_mask")


class CheckInputError(ValueError):
    """The target cannot be checked as asked (import, factory, shapes, or the module raised): one line."""


def rounding_threshold(dtype: torch.dtype, length: int) -> float:
    """ROUNDING_ULPS * eps(dtype) * sqrt(length): the largest relative change rounding alone is taken to explain."""
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype; got {dtype}")
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive integer; got {length!r}")
    return ROUNDING_ULPS * torch.finfo(dtype).eps * math.sqrt(length)


def load_target(target: str) -> nn.Module:
    """``package.module:factory`` (a callable returning an nn.Module, called with no arguments) or
    ``package.module:object`` (an nn.Module) -> the module."""
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
        raise CheckInputError(f"target must be package.module:factory; got {target!r}")
    module_name, attr = target.split(":")
    try:
        mod = importlib.import_module(module_name)
    except Exception as err:  # any import failure is the user's target, not a bug here
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
    except Exception as err:
        raise CheckInputError(f"target {target!r}: the factory raised {type(err).__name__}: {err}") from None
    if not isinstance(made, nn.Module):
        raise CheckInputError(f"target {target!r}: the factory returned {type(made).__name__}, not an nn.Module")
    return made


@dataclass(frozen=True)
class CheckResult:
    """One check in one dtype: the largest relative change of the prefix's (or real tokens') outputs, per position."""

    check: str
    dtype: str
    threshold: float
    worst: float
    per_position: list[float]
    lengths: list[int]
    per_length: list[float]

    @property
    def passed(self) -> bool:
        """Whether every change is within the rounding threshold."""
        return self.worst <= self.threshold

    @property
    def first_position(self) -> int | None:
        """The first position whose change exceeds the threshold (None when the check passes)."""
        return next((t for t, c in enumerate(self.per_position) if c > self.threshold), None)

    def line(self) -> str:
        """The verdict line: 'passes' or 'leaks by X from position t'."""
        what = {"causal": "causal (appending tokens)", "padding": "padding (masked tokens appended)"}[self.check]
        head = f"{what}, {self.dtype}, threshold {self.threshold:.1e}: "
        if self.passed:
            return head + f"passes (largest relative change {self.worst:.1e})"
        return head + f"leaks by {self.worst:.3g} from position {self.first_position}"


@dataclass(frozen=True)
class LengthLaw:
    """How a failing check's change grows with the total length, and the known law it matches, if any."""

    check: str
    lengths: list[int]
    coefficient: list[float]  # a(L), the change along the largest one
    residuals: dict[str, float]  # law -> largest |a(L) - predicted|
    law: str | None

    def line(self) -> str:
        """One line naming the law, or saying that none of the known ones fits."""
        best = min(self.residuals, key=self.residuals.__getitem__)
        if self.law is not None:
            return (f"length law ({self.check}): the change follows {self.law} "
                    f"(largest residual {self.residuals[self.law]:.1%} of the full change)")
        return (f"length law ({self.check}): no known law fits (closest: {best}, largest residual "
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

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(r.passed for r in self.results)

    def lines(self) -> list[str]:
        """The report as the command prints it: one verdict line per check, the laws, what was not checked."""
        out = [f"{self.target} ({self.kind}, mask {self.mask}):"]
        out += ["  " + r.line() for r in self.results] + ["  " + law.line() for law in self.laws]
        out += [f"  not checked: {s}" for s in self.skipped]
        out.append("  verdict: " + ("passes every check" if self.passed else "FAILS: " + ", ".join(
            sorted({r.check for r in self.results if not r.passed}))))
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain data of the report."""
        return {"target": self.target, "kind": self.kind, "mask": self.mask, "passed": self.passed,
                "results": [{**asdict(r), "passed": r.passed, "first_position": r.first_position}
                            for r in self.results],
                "laws": [asdict(law) for law in self.laws], "skipped": self.skipped}


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


def fit_length_law(check: str, prefix: int, lengths: Sequence[int], deltas: Sequence[torch.Tensor]) -> LengthLaw:
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
    return LengthLaw(check, list(lengths), coef, residuals, law)


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


def _mask_arg(module: nn.Module, mask_arg: str | None) -> str:
    if mask_arg is not None:
        return mask_arg
    try:
        params = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    found = next((name for name in MASK_ARGS if name in params), None)
    if found is None:
        raise CheckInputError(f"the module's forward takes none of {', '.join(MASK_ARGS)}: pass --mask-arg")
    return found


class _Caller:
    """Calls the module the same way for every check, and turns its failures and odd shapes into one line."""

    def __init__(self, module: nn.Module, kind: str, width: int, mask: str, mask_arg: str | None) -> None:
        self.module, self.kind, self.width, self.mask = module, kind, width, mask
        self.mask_arg = _mask_arg(module, mask_arg) if mask != "none" else None

    def __call__(self, x: torch.Tensor, real: int | None = None, causal: bool = False) -> torch.Tensor:
        b, n = x.shape[:2]
        kwargs: dict[str, torch.Tensor] = {}
        if self.mask_arg is not None:
            keep = torch.arange(n) < (n if real is None else real)
            if self.mask == "key-padding":
                kwargs[self.mask_arg] = keep.expand(b, n).clone()
            else:
                allowed = keep[None, :].expand(n, n).clone()
                kwargs[self.mask_arg] = allowed.tril() if causal else allowed
        try:
            with torch.no_grad():
                out = self.module(x, **kwargs)
        except Exception as err:
            raise CheckInputError(f"the module raised {type(err).__name__} on input {tuple(x.shape)}: {err}") from None
        if isinstance(out, tuple):
            out = out[0]
        if not isinstance(out, torch.Tensor) or out.dim() != 3 or tuple(out.shape[:2]) != (b, n) or (
                self.kind == "layer" and out.shape[2] != self.width):
            want = f"(batch, n, {self.width})" if self.kind == "layer" else "(batch, n, vocab)"
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise CheckInputError(f"the module maps input {tuple(x.shape)} to {got}, not {want}")
        return out.double()


def _inputs(kind: str, width: int, length: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """Token ids for a decoder; N(0, 1) inputs in ``dtype`` (drawn in float64, the same for every dtype) for a layer."""
    g = torch.Generator().manual_seed(seed)
    if kind == "lm":
        return torch.randint(0, width, (2, length), generator=g)
    return torch.randn(2, length, width, generator=g, dtype=torch.float64).to(dtype)


def _changes(ref: torch.Tensor, outs: Sequence[torch.Tensor]) -> tuple[list[float], list[float], list[torch.Tensor]]:
    """Per position and per length, the largest change relative to the reference's largest output."""
    scale = float(ref.abs().max()) or 1.0
    deltas = [o[:, : ref.shape[1]] - ref for o in outs]
    per_pos = torch.stack([d.abs().amax(dim=(0, 2)) for d in deltas]).amax(0) / scale
    per_len = [float(d.abs().max()) / scale for d in deltas]
    return per_pos.tolist(), per_len, deltas


def check_module(module: nn.Module, kind: str = "layer", *, target: str = "module", d: int | None = None,
                 vocab: int | None = None, lengths: Sequence[int] = (32, 37, 45, 64, 77, 100, 128),
                 mask: str = "none", mask_arg: str | None = None, checks: Sequence[str] = CHECKS,
                 seed: int = 0) -> CheckReport:
    """Causal and padding checks (float64 and the module's dtype) and the length law of any that fails."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {', '.join(MASKS)}; got {mask!r}")
    bad = [c for c in checks if c not in CHECKS]
    if bad or not checks:
        raise ValueError(f"checks must be among {', '.join(CHECKS)}; got {list(checks)!r}")
    lengths = list(lengths)
    if len(lengths) < 2 or any(not isinstance(n, int) or n < 1 for n in lengths) or lengths != sorted(set(lengths)):
        raise ValueError(f"lengths must be at least two increasing positive integers (the first is the prefix); "
                         f"got {lengths!r}")
    for name, value in (("d", d), ("vocab", vocab)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    if not isinstance(module, nn.Module):
        raise CheckInputError(f"the target is a {type(module).__name__}, not an nn.Module")
    width = (vocab if kind == "lm" else d) or _infer(module, kind)
    prefix, longer = lengths[0], lengths[1:]
    own = _own_dtype(module)
    variants = [(copy.deepcopy(module).double().eval(), torch.float64)]
    if own != torch.float64:
        variants.append((copy.deepcopy(module).eval(), own))
    results: list[CheckResult] = []
    failing: dict[str, list[torch.Tensor]] = {}
    skipped = []
    wanted = list(checks)
    if "padding" in wanted and mask == "none":
        wanted.remove("padding")
        skipped.append("padding (the module takes no mask: pass --mask key-padding or attention)")
    for mod, dtype in variants:
        call = _Caller(mod, kind, width, mask, mask_arg)
        x = _inputs(kind, width, lengths[-1], seed, dtype)
        threshold = rounding_threshold(dtype, lengths[-1])
        for check in wanted:
            if check == "causal":
                ref = call(x[:, :prefix], causal=True)
                outs = [call(x[:, :n], causal=True) for n in longer]
            else:
                ref = call(x[:, :prefix], real=prefix)
                outs = [call(x[:, :n], real=prefix) for n in longer]
            per_pos, per_len, deltas = _changes(ref, outs)
            result = CheckResult(check, str(dtype).removeprefix("torch."), threshold, max(per_len), per_pos,
                                 longer, per_len)
            results.append(result)
            if not result.passed and dtype == torch.float64:
                failing[check] = deltas
    laws = [fit_length_law(check, prefix, longer, deltas) for check, deltas in failing.items()]
    return CheckReport(target, kind, mask, results, laws, skipped)
