"""Intervals and detectable differences that hold with few independent units (seeds, batches, sequences).

Every trained or sampled claim of the book is a mean (or a mean of paired differences) over m independent units with
standard error SE = s / sqrt(m) and nu = m - 1 degrees of freedom. Its interval is Student's t:

    estimate ± t_{1 - a/2, nu} SE          (two-sided, a = 1 - confidence)
    estimate + t_{1 - a, nu} SE            (one-sided bound)

never the normal quantile: with 2 seeds (nu = 1), ±3 SE covers about 80%, and the 95% interval is ±12.7 SE.

The smallest difference a measurement can detect (its minimum detectable effect) at that confidence and power
1 - b is delta = lambda SE, where lambda is the noncentrality at which the t test rejects with probability 1 - b:

    P(|T'_{nu, lambda}| > t_{1 - a/2, nu}) = 1 - b     (T' noncentral t; one-sided: T' > t_{1 - a, nu})

solved exactly (the textbook shortcut t_{1 - a/2} + t_{1 - b}, Cohen 1988 ch. 2, gives only 73% power at nu = 1).
For nu = 2 and 95% / 80% it is 5.6 SE; in the normal limit 2.80 SE. A claim about a difference smaller than delta cannot be decided by the run: its verdict
is *inconclusive* unless it fails outright. With one unit there is no error estimate at all: delta is infinite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as _st
from scipy.optimize import brentq as _brentq

CONFIDENCE = 0.95
POWER = 0.80
Sided = Literal["two", "one"]
Spread = Literal["SE", "SD"]


def _check_level(name: str, value: float) -> float:
    v = float(value)
    if not (0.5 <= v < 1.0):
        raise ValueError(f"{name} must be in [0.5, 1); got {value!r}")
    return v


def _check_dof(dof: float) -> float:
    d = float(dof)
    if math.isnan(d) or d < 1:
        raise ValueError(f"dof must be >= 1 (or inf for the normal limit); got {dof!r}")
    return d


def t_quantile(dof: float, confidence: float = CONFIDENCE, sided: Sided = "two") -> float:
    """Student's t quantile t_{1-a/2, nu} (two-sided) or t_{1-a, nu} (one-sided), a = 1 - confidence; the normal
    quantile when nu is infinite."""
    d, c = _check_dof(dof), _check_level("confidence", confidence)
    if sided not in ("two", "one"):
        raise ValueError(f"sided must be 'two' or 'one'; got {sided!r}")
    q = 1 - (1 - c) / 2 if sided == "two" else c
    return float(_st.norm.ppf(q) if math.isinf(d) else _st.t.ppf(q, d))


def coverage_of(multiple: float, dof: float) -> float:
    """P(|T| <= multiple) for T ~ Student t with nu = dof: what '±multiple SE' really covers."""
    if not (math.isfinite(multiple) and multiple >= 0):
        raise ValueError(f"multiple must be finite and >= 0; got {multiple!r}")
    d = _check_dof(dof)
    dist = _st.norm if math.isinf(d) else _st.t(d)
    return float(dist.cdf(multiple) - dist.cdf(-multiple))


def detectable_multiple(dof: float, confidence: float = CONFIDENCE, power: float = POWER,
                        sided: Sided = "two") -> float:
    """lambda with P(reject | noncentrality lambda) = power for the t test at ``confidence``: the minimum detectable
    effect in standard errors (noncentral t, solved exactly; the normal z_{1-a/2} + z_{1-b} in the limit)."""
    d = _check_dof(dof)
    pw = _check_level("power", power)
    crit = t_quantile(d, confidence, sided)
    if math.isinf(d):
        return crit + float(_st.norm.ppf(pw))

    def rejects(lam: float) -> float:
        p = float(_st.nct.sf(crit, d, lam))
        if sided == "two":  # the far tail: below 1e-300 scipy may return nan, which is 0 here
            far = float(_st.nct.cdf(-crit, d, lam))
            p += far if math.isfinite(far) else 0.0
        return p - pw

    hi = crit + 10.0
    while rejects(hi) < 0:
        hi *= 2
    return float(_brentq(rejects, 0.0, hi, xtol=1e-10))


def planned_detectable_multiple(n: int, confidence: float = CONFIDENCE, power: float = POWER,
                                sided: Sided = "two") -> float:
    """lambda(n - 1) / sqrt(n): the smallest true mean difference that a t test over n units detects, in standard
    deviations of one unit (SD, not SE), stated before a run from its number of units alone."""
    if int(n) != n or n < 2:
        raise ValueError(f"n must be a whole number >= 2 (one unit has no error estimate); got {n!r}")
    return detectable_multiple(n - 1, confidence, power, sided) / math.sqrt(n)


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` independent ``units`` with its standard error and degrees of freedom (nu = n - 1 for a mean;
    the caller's nu for a fitted quantity such as a slope)."""

    value: float
    se: float
    n: int
    units: str
    dof: float | None = None  # None: n - 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"value must be finite; got {self.value!r}")
        if not (math.isfinite(self.se) and self.se >= 0):
            raise ValueError(f"se must be finite and >= 0; got {self.se!r}")
        if int(self.n) != self.n or self.n < 1:
            raise ValueError(f"n must be a whole number >= 1; got {self.n!r}")
        if not self.units.strip():
            raise ValueError("units must name what was averaged (seeds, sequences, ...)")
        if self.dof is not None:
            _check_dof(self.dof)

    @property
    def nu(self) -> float:
        """Degrees of freedom: ``dof`` when given, else n - 1 (0 for one unit: no error estimate)."""
        return float(self.dof) if self.dof is not None else float(self.n - 1)

    @property
    def resolved(self) -> bool:
        """Whether there is an error estimate at all (nu >= 1)."""
        return self.nu >= 1

    def half_width(self, confidence: float = CONFIDENCE, sided: Sided = "two") -> float:
        """t SE: the interval's half width (a one-sided bound's margin); inf without an error estimate."""
        return t_quantile(self.nu, confidence, sided) * self.se if self.resolved else math.inf

    def detectable(self, confidence: float = CONFIDENCE, power: float = POWER, sided: Sided = "two") -> float:
        """lambda SE (:func:`detectable_multiple`): the smallest true difference found at this confidence with this
        power; inf without an error estimate."""
        return detectable_multiple(self.nu, confidence, power, sided) * self.se if self.resolved else math.inf

    def upper(self, confidence: float = CONFIDENCE) -> float:
        """The one-sided upper confidence bound value + t_{1-a} SE."""
        return self.value + self.half_width(confidence, "one")

    def lower(self, confidence: float = CONFIDENCE) -> float:
        """The one-sided lower confidence bound value - t_{1-a} SE."""
        return self.value - self.half_width(confidence, "one")

    def basis(self, what: str, confidence: float = CONFIDENCE, sided: Sided = "two") -> str:
        """The tolerance basis in words: '95% Student-t interval over 3 seeds (2 df), ±4.30 SE of <what>'."""
        pct = f"{100 * confidence:.3g}%"
        if not self.resolved:
            return f"no error estimate: {self.n} {self.units} ({what}); undecidable at any confidence"
        df = "normal limit" if math.isinf(self.nu) else f"{self.nu:g} df"
        q = t_quantile(self.nu, confidence, sided)
        kind = "two-sided" if sided == "two" else "one-sided"
        return f"{pct} {kind} Student-t interval over {self.n} {self.units} ({df}): {q:.3g} SE of {what}"


def mean_estimate(values: Iterable[float], units: str) -> Estimate:
    """Mean, SE = s / sqrt(m) and nu = m - 1 of m independent values (SE 0 and no error estimate for one value)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise ValueError("values must hold at least one value")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"values must be finite; got {v.tolist()!r}")
    scale = float(np.max(np.abs(v))) or 1.0  # scaled, so values near the float range do not overflow their squares
    w = v / scale
    se = scale * float(w.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return Estimate(scale * float(w.mean()), se, int(v.size), units)


def paired_estimate(a: Iterable[float], b: Iterable[float], units: str = "paired seeds") -> Estimate:
    """Mean of the paired differences a_i - b_i, with SE and nu = m - 1 of the differences (runs sharing seeds and
    batches)."""
    x, y = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair up: got {x.size} and {y.size} values")
    return mean_estimate(x - y, units)


def from_se(value: float, se: float, n: int, units: str, dof: float | None = None) -> Estimate:
    """An :class:`Estimate` from a mean and standard error computed elsewhere over ``n`` units."""
    return Estimate(float(value), float(se), int(n), units, dof)


def difference(a: Estimate, b: Estimate, units: str | None = None) -> Estimate:
    """a - b for two independent estimates: SE = sqrt(SE_a^2 + SE_b^2) with Welch-Satterthwaite degrees of freedom
    nu = SE^4 / (SE_a^4 / nu_a + SE_b^4 / nu_b) (use :func:`paired_estimate` where runs share seeds and batches)."""
    se = math.hypot(a.se, b.se)
    name = units or (a.units if a.units == b.units else f"{a.units} and {b.units}")
    if not (a.resolved and b.resolved):  # no error estimate for one side: none for the difference
        return Estimate(a.value - b.value, se, 1, name)
    terms = [e.se ** 4 / e.nu for e in (a, b) if e.se > 0]
    dof = se ** 4 / sum(terms) if terms and se > 0 else a.nu + b.nu
    return Estimate(a.value - b.value, se, a.n + b.n, name, max(1.0, dof))


def direction(d: Estimate, confidence: float = CONFIDENCE) -> str | None:
    """'smaller than', 'larger than' or 'indistinguishable from' 0 for a difference ``d`` by its two-sided t interval;
    None without an error estimate."""
    if not d.resolved:
        return None
    half = d.half_width(confidence)
    if d.value < -half:
        return "smaller than"
    if d.value > half:
        return "larger than"
    return "indistinguishable from"


def compare(a: Estimate, b: Estimate, confidence: float = CONFIDENCE) -> str:
    """'smaller than', 'larger than' or 'indistinguishable from': a against b by the two-sided t interval of a - b
    (:func:`difference`, :func:`direction`), 'undecided (no error estimate)' when either has none."""
    return direction(difference(a, b), confidence) or "undecided (no error estimate)"
