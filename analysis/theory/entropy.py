"""Entropy of a prediction against its loss (appendix of the notes DL--Transformer).

A prediction over K classes puts probability p on the correct class and spreads
1 - p evenly over the other K - 1 ("the spread prediction"). All values in nats
unless a name says bits.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import sympy as sp
from scipy import special

from analysis.theory.validate import checked_array

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]

# Classes are counted in float64: K - 1 is exact up to 2**53.
MAX_CLASSES = 2.0**53


def _as_classes(classes: ArrayLike, name: str = "classes") -> FloatArray:
    return checked_array(
        classes, name, lambda k: np.isfinite(k) & (k >= 1) & (k <= MAX_CLASSES) & (k == np.floor(k)),
        "an integer in [1, 2**53]",
    )


def _as_probability(p: ArrayLike, name: str = "p") -> FloatArray:
    return checked_array(p, name, lambda q: np.isfinite(q) & (q > 0) & (q <= 1), "a probability in (0, 1]")


def _as_loss(loss: ArrayLike, name: str = "loss") -> FloatArray:
    return checked_array(loss, name, lambda x: np.isfinite(x) & (x >= 0), "a finite loss in [0, inf) nats")


def _check_single_class(k: FloatArray, p: FloatArray) -> None:
    if np.any((k == 1) & (p != 1)):
        raise ValueError("p must be 1 when classes == 1 (a single class takes all the probability)")


def binary_entropy(p: ArrayLike) -> FloatArray:
    """h(p) = -p ln p - (1-p) ln(1-p), in nats; p in (0, 1]."""
    q = _as_probability(p)
    # xlog1py(0, -1) = 0, so p = 1 is exact; log1p keeps p -> 0 accurate.
    return special.entr(q) - special.xlog1py(1.0 - q, -q)


def cross_entropy_loss(p: ArrayLike) -> FloatArray:
    """L = -ln p: the cross-entropy loss of a prediction giving p to the correct class."""
    return -np.log(_as_probability(p))


def spread_prediction_entropy(p: ArrayLike, classes: ArrayLike) -> FloatArray:
    """H(p, K) = h(p) + (1 - p) ln(K - 1): entropy of the spread prediction, eq. (entropy-closed-form)."""
    q = _as_probability(p)
    k = _as_classes(classes)
    q, k = np.broadcast_arrays(q, k)
    _check_single_class(k, q)
    log_rest = np.log(np.where(k > 1, k - 1.0, 1.0))
    return binary_entropy(q) + (1.0 - q) * log_rest


def entropy_upper_bound(loss: ArrayLike, classes: ArrayLike) -> FloatArray:
    """H_max(L, K) = p L + h-term with p = e^{-L}: the largest entropy of any K-class distribution with loss L.

    Written in L so that it stays accurate both for L -> 0 (1 - p = -expm1(-L))
    and for L -> inf (p underflows harmlessly).
    """
    x = _as_loss(loss)
    k = _as_classes(classes)
    x, k = np.broadcast_arrays(x, k)
    if np.any((k == 1) & (x != 0)):
        raise ValueError("loss must be 0 when classes == 1 (a single class takes all the probability)")
    p = np.exp(-x)
    rest = -np.expm1(-x)  # 1 - p, accurate near L = 0
    # ln(1 - p): log1p(-p) while p is small (large L), log(rest) near L = 0; 0 * ln 0 := 0.
    log_rest = np.where(p < 0.5, np.log1p(-np.minimum(p, 0.5)), np.log(np.where(rest > 0, rest, 1.0)))
    rest_term = -rest * log_rest
    log_rest = np.log(np.where(k > 1, k - 1.0, 1.0))
    return p * x + rest_term + rest * log_rest


def peak_probability(classes: ArrayLike) -> FloatArray:
    """p = 1/K: where H(p, K) peaks, at H = ln K (the uniform prediction)."""
    return 1.0 / _as_classes(classes)


def distribution_entropy(probs: ArrayLike, axis: int = -1) -> FloatArray:
    """H(q) = -sum_i q_i ln q_i along ``axis`` (rows must be non-negative and sum to 1)."""
    q = np.asarray(probs, dtype=np.float64)
    if q.size == 0:
        raise ValueError("probs must not be empty")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError("probs must be finite and non-negative")
    sums = q.sum(axis=axis)
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-9 * q.shape[axis]):
        raise ValueError(f"probs must sum to 1 along axis {axis}; got sums in [{sums.min()!r}, {sums.max()!r}]")
    return special.entr(q).sum(axis=axis)


def spread_prediction_entropy_direct(p: float, classes: int) -> float:
    """The notes' computation: build the K-vector and sum -q_i ln q_i (exact summation, math.fsum)."""
    (q,) = _as_probability([p])
    (k,) = _as_classes([classes])
    if k > 10**8:
        raise ValueError(f"classes must be at most 1e8 for direct summation; got {int(k)}")
    _check_single_class(np.array([k]), np.array([q]))
    kk = int(k)
    if kk == 1:
        return 0.0
    vec = np.full(kk, (1.0 - q) / (kk - 1))
    vec[0] = q
    return math.fsum(special.entr(vec).tolist())


def spread_prediction_entropy_reference(p: float, classes: int, digits: int = 50) -> float:
    """H(p, K) in ``digits``-digit arithmetic (mpmath) for the given float p: the reference for accuracy tests."""
    import mpmath

    (q,) = _as_probability([p])
    (k,) = _as_classes([classes])
    _check_single_class(np.array([k]), np.array([q]))
    with mpmath.workdps(digits):
        pm, km = mpmath.mpf(float(q)), mpmath.mpf(int(k))
        if km == 1 or pm == 1:
            return 0.0
        rest = 1 - pm
        # log1p: at 50 digits 1 - 1e-300 rounds to 1, and log(rest) would lose the p-sized term.
        h = -pm * mpmath.log(pm) - rest * mpmath.log1p(-pm) + rest * mpmath.log(km - 1)
        return float(h)


def direct_sum_error_bound(entropy: ArrayLike) -> FloatArray:
    """eps (4H + 2): first-order float64 rounding bound on |closed form - direct sum| (both sides' errors)."""
    return np.finfo(np.float64).eps * (4.0 * np.asarray(entropy, dtype=np.float64) + 2.0)


def entropy_bits(nats: ArrayLike) -> FloatArray:
    """Convert nats to bits: x / ln 2."""
    return np.asarray(nats, dtype=np.float64) / math.log(2.0)


# --- symbolic derivations -------------------------------------------------------------


def symbolic_spread_entropy() -> dict[str, sp.Expr]:
    """Sympy: the K-term sum for the spread prediction and its closed form; ``difference`` simplifies to 0."""
    p = sp.Symbol("p", positive=True)
    k = sp.Symbol("K", integer=True, positive=True)
    rest = (1 - p) / (k - 1)
    direct = -p * sp.log(p) - (k - 1) * rest * sp.log(rest)
    closed = -p * sp.log(p) - (1 - p) * sp.log(1 - p) + (1 - p) * sp.log(k - 1)
    diff = sp.simplify(sp.expand_log(direct - closed, force=True))
    return {"direct": direct, "closed_form": closed, "difference": diff}


def symbolic_grouping_identity(others: int) -> dict[str, sp.Expr]:
    """Sympy: H(p, (1-p) r) = h(p) + (1-p) H(r) for any r on ``others`` classes; ``difference`` is 0.

    With H(r) = ln m - KL(r || uniform) and KL >= 0 this gives the bound
    H <= h(p) + (1-p) ln(K-1), with equality iff r is uniform.
    """
    if not isinstance(others, int) or others < 1:
        raise ValueError(f"others must be an integer >= 1; got {others!r}")
    p = sp.Symbol("p", positive=True)
    r = sp.symbols(f"r1:{others + 1}", positive=True)
    constraint = {r[-1]: 1 - sum(r[:-1])}
    h_r = -sum(ri * sp.log(ri) for ri in r)
    full = -p * sp.log(p) - sum((1 - p) * ri * sp.log((1 - p) * ri) for ri in r)
    grouped = -p * sp.log(p) - (1 - p) * sp.log(1 - p) + (1 - p) * h_r
    diff = sp.simplify(sp.expand_log(full - grouped, force=True).subs(constraint))
    kl_uniform = sum(ri * sp.log(ri * others) for ri in r)
    gap = sp.simplify(sp.expand_log(sp.log(others) - h_r - kl_uniform, force=True).subs(constraint))
    return {"difference": diff, "entropy_deficit_minus_kl": gap}
