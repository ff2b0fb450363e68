"""The softmax scale that maximises the softmax gradient (kexue.fm/archives/9812).

For p = softmax(alpha s), (1/2)||dp/ds||_1 = alpha (1 - sum_i p_i^2). The source replaces
sum_i p_i^2 by its mean-field value E[e^{2 alpha s}] / (n E[e^{alpha s}]^2) = R(alpha)/n and
maximises alpha (1 - R(alpha)/n). Setting the derivative to zero gives the condition

    R(alpha) (1 + alpha (ln R)'(alpha)) = n                                   (stationarity)

* normal scores s ~ N(0, 1): R = e^{alpha^2}, so (1 + 2 alpha^2) e^{alpha^2} = n and
  alpha* = sqrt(W0(sqrt(e) n / 2) - 1/2) (Lambert W, principal branch);
* cosine scores, the cosine of two random directions in d >= 3 dimensions, density
  (1 - s^2)^{(d-3)/2} / B(1/2, (d-1)/2) on [-1, 1]: E[e^{alpha s}] = Gamma(nu+1) (2/alpha)^nu I_nu(alpha)
  with nu = d/2 - 1, evaluated in log space (scaled Bessel functions for small nu, the Debye
  uniform expansion for large nu) so that nothing over- or underflows for d up to 2^20.

The exact expected objective, without the mean-field step, follows from the Gumbel-max identity
p_i = P(argmax_j (alpha s_j + G_j) = i): E[alpha (1 - sum p^2)] = n (n-1) int f_Y^2 F_Y^{n-2} with Y = S + G/alpha
(:func:`exact_objective`), computed by discrete convolution on a lattice and tested against mpmath at n = 2 and
in the limit alpha -> infinity, where it tends to L_n = n (n-1) int f^2 F^{n-2} (:func:`exact_objective_limit`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import sympy as sp
from scipy import special

from analysis.theory.validate import checked_array, checked_range

FloatArray = npt.NDArray[np.float64]
ArrayLike = npt.ArrayLike

MAX_N = 1e15
MAX_D = 2.0**20
# Above this Bessel order the Debye expansion (5 terms) is accurate to ~1e-14; below it, scipy's ive.
_DEBYE_MIN_ORDER = 40.0


# --- validation ----------------------------------------------------------------------


def _as_n(n: ArrayLike) -> FloatArray:
    return checked_range(n, "n", 2, MAX_N)


def _as_d(d: ArrayLike) -> FloatArray:
    return checked_range(d, "d", 3, MAX_D, integer=True)


def _as_alpha(alpha: ArrayLike) -> FloatArray:
    a = checked_range(alpha, "alpha", 0, np.inf)
    return a


# --- the softmax Jacobian --------------------------------------------------------------


def softmax_jacobian_half_l1(scores: ArrayLike, alpha: float) -> float:
    """(1/2) sum_ij |dp_i/ds_j| for p = softmax(alpha s), summed entry by entry (no identity used)."""
    s = np.asarray(scores, dtype=np.float64)
    a = float(_as_alpha(alpha))
    z = a * s - (a * s).max()
    p = np.exp(z) / np.exp(z).sum()
    jac = a * (np.diag(p) - np.outer(p, p))
    return 0.5 * float(np.abs(jac).sum())


def gradient_objective(scores: ArrayLike, alpha: ArrayLike) -> FloatArray:
    """alpha (1 - sum_i p_i^2) for p = softmax(alpha s) along the last axis of ``scores`` (eq. target)."""
    s = np.asarray(scores, dtype=np.float64)
    a = np.asarray(_as_alpha(alpha))[..., None]
    z = a * s
    logp = z - special.logsumexp(z, axis=-1, keepdims=True)
    return a[..., 0] * (1.0 - np.exp(special.logsumexp(2 * logp, axis=-1)))


def symbolic_jacobian_identity(n: int = 3) -> sp.Expr:
    """Sympy: (1/2) sum_ij |alpha (p_i delta_ij - p_i p_j)| - alpha (1 - sum p_i^2) for n classes; simplifies to 0."""
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    alpha = sp.Symbol("alpha", positive=True)
    p = sp.symbols(f"p1:{n + 1}", positive=True)
    # with 0 < p_i and sum p = 1: p_i - p_i^2 > 0 and p_i p_j > 0, so |.| drops the signs as below
    total = sum(alpha * (p[i] - p[i] ** 2) for i in range(n)) + sum(
        alpha * p[i] * p[j] for i in range(n) for j in range(n) if i != j
    )
    diff = sp.Rational(1, 2) * total - alpha * (1 - sum(pi**2 for pi in p))
    return sp.simplify(diff.subs(p[-1], 1 - sum(p[:-1])))


# --- normal scores ---------------------------------------------------------------------


def mean_field_objective_normal(alpha: ArrayLike, n: ArrayLike) -> FloatArray:
    """alpha (1 - e^{alpha^2} / n): the source's mean-field objective for N(0, 1) scores."""
    a, nn = _as_alpha(alpha), _as_n(n)
    return a * (1.0 - np.exp(a**2 - np.log(nn)))


def alpha_star_normal(n: ArrayLike) -> FloatArray:
    """alpha* = sqrt(W0(sqrt(e) n / 2) - 1/2): maximiser of alpha (1 - e^{alpha^2}/n), n >= 2."""
    nn = _as_n(n)
    # W0(x) for large x through its log form keeps full precision: w + ln w = ln x.
    log_x = 0.5 + np.log(nn) - math.log(2.0)
    w = _lambertw_from_log(log_x)
    return np.sqrt(w - 0.5)


def _lambertw_from_log(log_x: FloatArray) -> FloatArray:
    """W0(e^{log_x}) for real log_x, by Newton on w + ln w = log_x (quadratic convergence)."""
    x_small = log_x < 1.0
    w = np.where(x_small, np.real(special.lambertw(np.exp(np.minimum(log_x, 1.0)))), log_x - np.log(np.maximum(log_x, 1.0)))
    for _ in range(6):
        w = w - (w + np.log(w) - log_x) / (1.0 + 1.0 / w)
    return w


def source_fit_normal(n: ArrayLike) -> FloatArray:
    """The source's fit 0.84 sqrt(ln n)."""
    return 0.84 * np.sqrt(np.log(_as_n(n)))


def n_for_alpha_normal(alpha: ArrayLike) -> FloatArray:
    """The n at which alpha* takes the value alpha: n = (1 + 2 alpha^2) e^{alpha^2} (inverse of alpha_star_normal)."""
    a = _as_alpha(alpha)
    return (1.0 + 2.0 * a**2) * np.exp(a**2)


# --- cosine scores ---------------------------------------------------------------------


def cosine_density(s: ArrayLike, d: ArrayLike) -> FloatArray:
    """p(s) = (1 - s^2)^{(d-3)/2} / B(1/2, (d-1)/2) on [-1, 1]: the cosine of two random directions in R^d."""
    x = np.asarray(s, dtype=np.float64)
    dd = _as_d(d)
    inside = np.abs(x) < 1
    log_p = 0.5 * (dd - 3) * np.log1p(-np.where(inside, x * x, 0.0)) - special.betaln(0.5, 0.5 * (dd - 1))
    return np.where(inside, np.exp(log_p), 0.0)


def cosine_cdf(s: ArrayLike, d: ArrayLike) -> FloatArray:
    """P(S <= s) = I_{(1+s)/2}((d-1)/2, (d-1)/2): (1+S)/2 is Beta((d-1)/2, (d-1)/2)."""
    x = np.clip(np.asarray(s, dtype=np.float64), -1.0, 1.0)
    half = 0.5 * (_as_d(d) - 1)
    return special.betainc(half, half, 0.5 * (1 + x))


def _debye_log_i(nu: FloatArray, x: FloatArray) -> FloatArray:
    """ln I_nu(x) - [nu eta - ln sqrt(2 pi nu) - ln(1+z^2)/4] is the series term; returns the pieces combined.

    Returns ln I_nu(x) + ln Gamma(nu + 1) + nu ln(2/x) = ln E[e^{x s}] directly, written so that the
    large terms cancel analytically: r(nu) + nu (q - ln(1 + q/2)) - ln(1+z^2)/4 + ln(1 + sum u_k/nu^k),
    with z = x/nu, q = sqrt(1+z^2) - 1 and r(nu) the Stirling remainder of ln Gamma(nu + 1).
    """
    z = x / nu
    root = np.sqrt(1.0 + z * z)
    q = z * z / (root + 1.0)  # sqrt(1+z^2) - 1 without cancellation
    half_q = 0.5 * q
    t = 1.0 / root
    t2 = t * t
    u1 = t * (3.0 - 5.0 * t2) / 24.0
    u2 = t2 * (81.0 - 462.0 * t2 + 385.0 * t2 * t2) / 1152.0
    u3 = t * t2 * (30375.0 - 369603.0 * t2 + 765765.0 * t2**2 - 425425.0 * t2**3) / 414720.0
    u4 = t2 * t2 * (4465125.0 - 94121676.0 * t2 + 349922430.0 * t2**2 - 446185740.0 * t2**3 + 185910725.0 * t2**4) / 39813120.0
    series = u1 / nu + u2 / nu**2 + u3 / nu**3 + u4 / nu**4
    inv = 1.0 / nu
    stirling = inv / 12.0 - inv**3 / 360.0 + inv**5 / 1260.0 - inv**7 / 1680.0
    # nu (q - ln(1 + q/2)) = nu (q/2 + (q/2 - log1p(q/2)))
    return stirling + nu * (half_q + (half_q - np.log1p(half_q))) - 0.25 * np.log1p(z * z) + np.log1p(series)


def _log_mgf_shifted(a: FloatArray, dd: FloatArray) -> FloatArray:
    """ln E[e^{a s}] - a for a > 0: the linear term is taken out so that ln R = f(2a) - 2 f(a) has no a - a cancellation."""
    nu = 0.5 * dd - 1.0
    out = np.empty(a.shape)
    big = nu >= _DEBYE_MIN_ORDER
    if np.any(big):
        out[big] = _debye_log_i(nu[big], a[big]) - a[big]
    if np.any(~big):
        ns, xs = nu[~big], a[~big]
        far = xs > _hankel_min_x(ns)  # scipy's ive returns NaN beyond x ~ 1e9; the Hankel series does not
        log_ive = np.empty_like(xs)
        log_ive[~far] = np.log(special.ive(ns[~far], xs[~far]))
        log_ive[far] = np.log(_hankel_series(ns[far], xs[far])[0]) - 0.5 * np.log(2 * np.pi * xs[far])
        out[~big] = special.gammaln(ns + 1) + ns * np.log(2.0 / xs) + log_ive
    return out


def log_mgf_cosine(alpha: ArrayLike, d: ArrayLike) -> FloatArray:
    """ln E[e^{alpha s}] = ln Gamma(nu+1) + nu ln(2/alpha) + ln I_nu(alpha), nu = d/2 - 1 (closed form, log space)."""
    a = _as_alpha(alpha)
    dd = _as_d(d)
    a, dd = np.broadcast_arrays(a, dd)
    shape = a.shape
    a, dd = a.ravel(), dd.ravel()
    out = np.zeros(a.shape)
    pos = a > 0
    out[pos] = _log_mgf_shifted(a[pos], dd[pos]) + a[pos]
    return out.reshape(shape)


def _bessel_ratio(nu: FloatArray, x: FloatArray) -> FloatArray:
    """A_nu(x) = I_{nu+1}(x) / I_nu(x) = d/dx ln E[e^{x s}] (for the cosine with nu = d/2 - 1)."""
    nu, x = np.broadcast_arrays(nu, x)
    out = np.empty(nu.shape)
    big = nu >= _DEBYE_MIN_ORDER
    if np.any(big):
        nb, xb = nu[big], x[big]
        # ln I_{nu+1}(x) - ln I_nu(x) from the log-MGF form: the Gamma and power terms give ln(x / (2 (nu+1)))
        out[big] = np.exp(_debye_log_i(nb + 1.0, xb) - _debye_log_i(nb, xb) + np.log(xb / (2.0 * (nb + 1.0))))
    if np.any(~big):
        ns, xs = nu[~big], x[~big]
        far = xs > _hankel_min_x(ns)
        ratio = np.empty_like(xs)
        ratio[~far] = special.ive(ns[~far] + 1.0, xs[~far]) / special.ive(ns[~far], xs[~far])
        s_nu, diff = _hankel_series(ns[far], xs[far])
        ratio[far] = 1.0 - diff / s_nu
        out[~big] = ratio
    return out


_HANKEL_TERMS = 12


def _hankel_min_x(nu: FloatArray) -> FloatArray:
    """Where the Hankel (large-x) series of I_nu is used for 1 - A_nu: x > max(1000, 50 nu^2)."""
    return np.maximum(1000.0, 50.0 * nu * nu)


def _hankel_series(nu: FloatArray, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """S_nu(x) = I_nu(x) sqrt(2 pi x) e^{-x} ~ sum_k (-1)^k a_k(nu) / x^k, and S_nu - S_{nu+1} termwise.

    a_k(nu) = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k); used where x > max(1000, 50 nu^2).
    """
    s_nu, diff = np.ones_like(x), np.zeros_like(x)
    a_nu, a_next = np.ones_like(x), np.ones_like(x)
    mu0, mu1 = 4.0 * nu * nu, 4.0 * (nu + 1.0) ** 2
    for k in range(1, _HANKEL_TERMS + 1):
        odd = (2 * k - 1) ** 2
        a_nu = a_nu * (mu0 - odd) / (k * 8.0 * x)
        a_next = a_next * (mu1 - odd) / (k * 8.0 * x)
        sign = -1.0 if k % 2 else 1.0
        s_nu += sign * a_nu
        diff += sign * (a_nu - a_next)
    return s_nu, diff


def _bessel_ratio_complement(nu: FloatArray, x: FloatArray) -> FloatArray:
    """1 - A_nu(x), accurate also where A_nu(x) -> 1 (x >> nu^2), via the Hankel series difference."""
    nu, x = np.broadcast_arrays(nu, x)
    far = x > _hankel_min_x(nu)
    out = np.empty(nu.shape)
    out[~far] = 1.0 - _bessel_ratio(nu[~far], x[~far])
    if np.any(far):
        s_nu, diff = _hankel_series(nu[far], x[far])
        out[far] = diff / s_nu
    return out


def _stationarity_cosine(log_alpha: FloatArray, d: FloatArray) -> FloatArray:
    """ln R(alpha) + ln(1 + alpha (ln R)'(alpha)) for cosine scores; alpha* solves this = ln n."""
    a = np.exp(log_alpha)
    nu = 0.5 * d - 1.0
    log_r = _log_mgf_shifted(2 * a, d) - 2 * _log_mgf_shifted(a, d)
    a1, a2 = _bessel_ratio(nu, a), _bessel_ratio(nu, 2 * a)
    # (ln R)' = 2 A(2a) - 2 A(a); where A -> 1 write it as 2 (1 - A(a)) - 2 (1 - A(2a)) to avoid cancellation
    near_one = a1 > 0.5
    dlog_r = 2.0 * (a2 - a1)
    if np.any(near_one):
        c1 = _bessel_ratio_complement(nu[near_one], a[near_one])
        c2 = _bessel_ratio_complement(nu[near_one], 2 * a[near_one])
        dlog_r[near_one] = 2.0 * (c1 - c2)
    # (ln R)' > 0; clipping only matters at absurd bracket ends (alpha ~ 1e12 with d large), where
    # the Debye ratio A ~ 1 carries ~1e-4 of cancellation and only the sign of the result is used
    return log_r + np.log1p(a * np.maximum(dlog_r, 0.0))


def mean_field_objective_cosine(alpha: ArrayLike, n: ArrayLike, d: ArrayLike) -> FloatArray:
    """alpha (1 - E[e^{2 alpha s}] / (n E[e^{alpha s}]^2)) for cosine scores in d dimensions."""
    a, nn, dd = np.broadcast_arrays(_as_alpha(alpha), _as_n(n), _as_d(d))
    shape = a.shape
    a, nn, dd = a.ravel(), nn.ravel(), dd.ravel()
    log_r = np.zeros(a.shape)
    pos = a > 0
    # ln R = f(2a) - 2 f(a) with f = ln E[e^{a s}] - a: no a - a cancellation at large alpha
    log_r[pos] = _log_mgf_shifted(2 * a[pos], dd[pos]) - 2 * _log_mgf_shifted(a[pos], dd[pos])
    return (a * (1.0 - np.exp(log_r - np.log(nn)))).reshape(shape)


def alpha_star_cosine(n: ArrayLike, d: ArrayLike) -> FloatArray:
    """Maximiser of the mean-field objective for cosine scores: root of the stationarity condition in ln alpha."""
    nn, dd = np.broadcast_arrays(_as_n(n), _as_d(d))
    shape = nn.shape
    nn, dd = nn.ravel(), dd.ravel()  # the solver works on flat arrays
    target = np.log(nn)
    # Bracket: the large-d (normal) value sets the scale; alpha* lies within [1e-3, 4 n] times it.
    # Bracket: for small alpha the condition is ~ 3 alpha^2 / (2 (nu + 1)) < ln 2 at alpha = 0.05 sqrt(nu + 1);
    # for large alpha R grows at least like alpha^{nu + 1/2}, so alpha* < 4 n + sqrt(d) alpha*_normal.
    nu = 0.5 * dd - 1.0
    lo = np.log(0.05 * np.sqrt(nu + 1.0))
    hi = np.log(4.0 * nn + np.sqrt(dd) * alpha_star_normal(nn) + 10.0)
    return np.exp(_solve_increasing(lambda la: _stationarity_cosine(la, dd), target, lo, hi)).reshape(shape)


def _solve_increasing(fn, target: FloatArray, lo: FloatArray, hi: FloatArray, tol: float = 2e-14) -> FloatArray:
    """Root of fn(x) = target for increasing fn, vectorised: bisection to a narrow bracket, then Illinois steps."""
    lo, hi = lo.copy(), hi.copy()
    f_lo, f_hi = fn(lo) - target, fn(hi) - target
    if not (np.all(f_lo < 0) and np.all(f_hi > 0)):
        raise RuntimeError("the stationarity condition was not bracketed (or evaluated to NaN)")
    for _ in range(8):  # bisection: shrink the bracket 256x so regula falsi starts well
        mid = 0.5 * (lo + hi)
        f_mid = fn(mid) - target
        left = f_mid > 0
        hi, f_hi = np.where(left, mid, hi), np.where(left, f_mid, f_hi)
        lo, f_lo = np.where(left, lo, mid), np.where(left, f_lo, f_mid)
    side = np.zeros(lo.shape, dtype=np.int8)
    for _ in range(100):
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        x = np.where(np.isfinite(x) & (x > lo) & (x < hi), x, 0.5 * (lo + hi))
        f_x = fn(x) - target
        left = f_x > 0
        hi, f_hi_new = np.where(left, x, hi), np.where(left, f_x, f_hi)
        lo, f_lo_new = np.where(left, lo, x), np.where(left, f_lo, f_x)
        # Illinois: halve the stale end's value when the same side moves twice
        f_lo = np.where(left & (side == 1), 0.5 * f_lo_new, f_lo_new)
        f_hi = np.where(~left & (side == -1), 0.5 * f_hi_new, f_hi_new)
        side = np.where(left, 1, -1).astype(np.int8)
        if np.all((hi - lo) <= tol * np.maximum(1.0, np.abs(hi))) or np.all(f_x == 0):
            break
    return np.where(np.abs(f_lo) < np.abs(f_hi), lo, hi)


def alpha_star_cosine_reference(n: float, d: int, digits: int = 40) -> float:
    """alpha* for cosine scores from the stationarity condition in ``digits``-digit arithmetic (mpmath)."""
    import mpmath

    (nn,) = _as_n([n])
    (dd,) = _as_d([d])
    with mpmath.workdps(digits):
        nu = mpmath.mpf(dd) / 2 - 1
        log_n = mpmath.log(mpmath.mpf(nn))

        def log_m(a: "mpmath.mpf") -> "mpmath.mpf":
            return mpmath.loggamma(nu + 1) + nu * mpmath.log(2 / a) + mpmath.log(mpmath.besseli(nu, a))

        def ratio(a: "mpmath.mpf") -> "mpmath.mpf":
            return mpmath.besseli(nu + 1, a) / mpmath.besseli(nu, a)

        def h(la: "mpmath.mpf") -> "mpmath.mpf":
            a = mpmath.exp(la)
            return log_m(2 * a) - 2 * log_m(a) + mpmath.log(1 + a * (2 * ratio(2 * a) - 2 * ratio(a))) - log_n

        start = mpmath.log(float(alpha_star_cosine(nn, dd)))
        return float(mpmath.exp(mpmath.findroot(h, start)))


def alpha_star_normal_reference(n: float, digits: int = 40) -> float:
    """alpha* for normal scores from (1 + 2 a^2) e^{a^2} = n in ``digits``-digit arithmetic (mpmath)."""
    import mpmath

    (nn,) = _as_n([n])
    with mpmath.workdps(digits):
        w = mpmath.lambertw(mpmath.sqrt(mpmath.e) * mpmath.mpf(nn) / 2)
        return float(mpmath.sqrt(mpmath.re(w) - mpmath.mpf(1) / 2))


def alpha_star_large_d(n: ArrayLike, d: ArrayLike) -> FloatArray:
    """Large-d law: Var[s] = 1/d, so alpha*(n, d) -> sqrt(d) * alpha*_normal(n)."""
    return np.sqrt(_as_d(d)) * alpha_star_normal(n)


def source_fit_cosine(n: ArrayLike) -> FloatArray:
    """The source's fit 3.5 ln n (stated for d = 128)."""
    return 3.5 * np.log(_as_n(n))


def source_comment_large_d(d: ArrayLike) -> FloatArray:
    """The source's reply on d: alpha* inversely proportional to sqrt(d - 3) (normalised to 1 at d = 128)."""
    return np.sqrt(125.0) / np.sqrt(_as_d(d) - 3.0)


def alpha_star(scores: str, n: ArrayLike, d: ArrayLike | None = None) -> FloatArray:
    """Mean-field alpha* for ``scores`` = 'normal' (multiplier of 1/sqrt(d)) or 'cosine' (needs d)."""
    if scores == "normal":
        return alpha_star_normal(n)
    if scores == "cosine":
        if d is None:
            raise ValueError("d is required for cosine scores")
        return alpha_star_cosine(n, d)
    raise ValueError(f"scores must be 'normal' or 'cosine'; got {scores!r}")


def entropy_invariant_scale(n: ArrayLike) -> FloatArray:
    """log_512(n): the entropy-invariant multiplier of 1/sqrt(d) (kexue.fm/archives/8823), 1 at n = 512."""
    return np.log(_as_n(n)) / math.log(512.0)


# --- finite samples: the extreme-value (Poisson-Dirichlet) picture ----------------------


def top_score_location(scores: str, n: ArrayLike, d: ArrayLike | None = None) -> FloatArray:
    """b_n with P(S > b_n) = 1/n: where the largest of n scores sits (Gumbel location)."""
    nn = _as_n(n)
    if scores == "normal":
        return -special.ndtri(1.0 / nn)  # inverse survival function of N(0, 1), accurate for tiny 1/n
    if scores == "cosine":
        if d is None:
            raise ValueError("d is required for cosine scores")
        half = 0.5 * (_as_d(d) - 1)
        # (1 + S)/2 ~ Beta(half, half): upper tail 1/n through the complemented inverse
        return 2.0 * special.betainccinv(half, half, 1.0 / nn) - 1.0
    raise ValueError(f"scores must be 'normal' or 'cosine'; got {scores!r}")


def finite_sample_plateau(scores: str, n: ArrayLike, d: ArrayLike | None = None) -> FloatArray:
    """h(b_n) = n p(b_n): the level the finite-sample mean of alpha (1 - sum p^2) tends to for alpha >> b_n.

    Near the top, n scores form a Poisson process of intensity ~ e^{-h x} with h the hazard rate at b_n;
    softmax weights over it are Poisson-Dirichlet(m = h / alpha), for which E[1 - sum p^2] = m, so the
    objective tends to alpha m = h.
    """
    nn = _as_n(n)
    b = top_score_location(scores, nn, d)
    if scores == "normal":
        return nn * np.exp(-0.5 * b * b) / math.sqrt(2 * math.pi)
    return nn * cosine_density(b, d if d is not None else 3)


# --- the exact expected objective ---------------------------------------------------------
#
# The Gumbel-max identity p_i = P(argmax_j (alpha s_j + G_j) = i | s) gives, for n i.i.d. scores with density f,
#
#     E[alpha (1 - sum_i p_i^2)] = n (n - 1) \int f_Y(t)^2 F_Y(t)^{n-2} dt,     Y = S + G / alpha,     (eq-exact)
#
# G standard Gumbel: the objective is the density at zero of the gap between the two largest of n perturbed
# scores. As alpha -> infinity it tends to L_n = n (n - 1) \int f^2 F^{n-2} (the same for the scores themselves)
# and, Y having the extra variance pi^2 / (6 alpha^2), approaches it as L_n + (pi^2 / 6) D_n / alpha^2.

EXACT_MAX_N = 1e6  # the lattice resolves the top of n scores up to here (relative error < 1e-9)
EXACT_MIN_D = 16  # below, (1 - s^2)^{(d-3)/2} is too rough at s = +-1 for the lattice's accuracy


def _exact_law(scores: str, d: float | None) -> tuple[float, float, float]:
    """(sigma, lo, hi): the scores' standard deviation and the support the lattice covers, after validation."""
    if scores == "normal":
        # P(|S| > 10.5) = 9e-26: below 1e-19 of the top tail 1/n even at n = EXACT_MAX_N
        return 1.0, -10.5, 10.5
    if scores == "cosine":
        if d is None:
            raise ValueError("d is required for cosine scores")
        (dd,) = checked_range([d], "d", EXACT_MIN_D, MAX_D, integer=True)
        return 1.0 / math.sqrt(dd), -1.0, 1.0
    raise ValueError(f"scores must be 'normal' or 'cosine'; got {scores!r}")


def _exact_pdf(scores: str, s: FloatArray, d: float | None) -> FloatArray:
    """The score density f on the points ``s``."""
    if scores == "normal":
        return np.exp(-0.5 * s * s) / math.sqrt(2 * math.pi)
    return cosine_density(s, d)


def _exact_log_cdf_sf(scores: str, s: FloatArray, d: float | None) -> tuple[FloatArray, FloatArray]:
    """ln F(s) and ln(1 - F(s)), each accurate in its own tail."""
    if scores == "normal":
        return special.log_ndtr(s), special.log_ndtr(-s)
    half = 0.5 * (float(d) - 1)  # (1 + S)/2 ~ Beta(half, half), symmetric
    with np.errstate(divide="ignore"):
        return (np.log(special.betainc(half, half, np.clip(0.5 * (1 + s), 0, 1))),
                np.log(special.betainc(half, half, np.clip(0.5 * (1 - s), 0, 1))))


def _exact_width(scores: str, n_max: float, d: float | None) -> float:
    """min(sigma, 1/h(b_n)): the narrowest feature of the top of n scores (h the hazard at the top score)."""
    sigma, _, _ = _exact_law(scores, d)
    return min(sigma, 1.0 / float(finite_sample_plateau(scores, max(n_max, 2.0), d)))


def _gumbel_lattice(scores: str, alpha: float, ns: FloatArray, d: float | None) -> FloatArray:
    """n (n-1) sum_t delta f_Y(t)^2 F_Y(t)^{n-2} on a lattice of step delta (eq-exact), one value per n.

    f_Y = f * k and the tails of F_Y are discrete convolutions on one lattice of step
    delta = min(sigma, 1/h, 1/alpha)/4, k the density of G/alpha; the trapezoid rule on these smooth, fast-decaying
    integrands converges geometrically, and delta/4 of the narrowest feature is at its float64 floor.
    """
    from scipy import signal

    _, lo, hi = _exact_law(scores, d)
    delta = min(_exact_width(scores, float(ns.max()), d), 1.0 / alpha) / 4.0
    j = np.arange(math.floor(lo / delta), math.ceil(hi / delta) + 1)
    f = _exact_pdf(scores, j * delta, d) * delta
    # G/alpha on [-4, 46]/alpha: P(G < -4) = 2e-24, P(G > 46) = 1e-20
    k = np.arange(math.floor(-4.0 / (alpha * delta)), math.ceil(46.0 / (alpha * delta)) + 1)
    z = alpha * delta * k
    e = np.exp(-z)
    kernels = (alpha * np.exp(-z - e), np.exp(-e), -np.expm1(-e))  # density, P(G/alpha <= u), P(G/alpha > u)
    # exact summation while it is cheap; FFT (absolute error ~1e-16) beyond
    direct = f.size * k.size <= 2e7
    dens, cdf, sf = (np.convolve(f, ker) if direct else signal.fftconvolve(f, ker) for ker in kernels)
    # the lattice index of t is i = j + k - (j0 + k0); below its kernel's support each term is 0 or 1:
    # F_Y misses the scores far below t (forward sums), 1 - F_Y those far above t (backward sums)
    i = np.arange(dens.size)
    ahead = np.concatenate([np.cumsum(f[::-1])[::-1][1:], [0.0]])  # sum over j' > j
    below = np.cumsum(f)  # sum over j' <= j
    span = k.size
    cdf = cdf + np.where(i - span >= 0, below[np.clip(i - span, 0, f.size - 1)], 0.0)
    sf = sf + np.where(i < f.size, ahead[np.clip(i, 0, f.size - 1)], 0.0)
    with np.errstate(divide="ignore"):
        log_cdf = np.where(sf < 0.5, np.log1p(-np.minimum(sf, 0.5)), np.log(np.maximum(cdf, 0.0)))
    # F_Y^0 = 1 also where F_Y underflows to 0 (n = 2)
    return np.array([nn * (nn - 1) * delta * np.sum(dens * dens * (np.exp((nn - 2) * log_cdf) if nn > 2 else 1.0))
                     for nn in ns])


def _limit_lattice(scores: str, n: FloatArray, d: float | None) -> tuple[FloatArray, FloatArray]:
    """(L_n, D_n) on a lattice of step min(sigma, 1/h)/8 (trapezoid; the integrands vanish at both ends).

    L_n = n(n-1) int f^2 F^{n-2};  D_n = (n(n-1)/2) [-2 int f'^2 F^{n-2} - (n-2) int f^2 f' F^{n-3}].
    """
    _, lo, hi = _exact_law(scores, d)
    delta = _exact_width(scores, float(n.max()), d) / 8.0
    s = np.arange(math.floor(lo / delta), math.ceil(hi / delta) + 1) * delta
    s = s[(s > -1.0) & (s < 1.0)] if scores == "cosine" else s
    f = _exact_pdf(scores, s, d)
    # f'/f: -s (normal), -(d-3) s / (1 - s^2) (cosine)
    slope = -s if scores == "normal" else -(float(d) - 3.0) * s / (1.0 - s * s)
    log_cdf, log_sf = _exact_log_cdf_sf(scores, s, d)
    # ln F where F is small, log1p(-(1-F)) where 1 - F is small
    log_f = np.where(log_sf < math.log(0.5), np.log1p(-np.exp(np.minimum(log_sf, math.log(0.5)))), log_cdf)
    lim, curv = [], []
    for nn in n:
        # F^0 = 1 also where F underflows to 0
        w2 = np.exp((nn - 2) * log_f) if nn > 2 else np.ones_like(s)
        w3 = np.exp((nn - 3) * log_f)
        lim.append(nn * (nn - 1) * delta * np.sum(f * f * w2))
        curv.append(0.5 * nn * (nn - 1) * delta * np.sum(-2 * (slope * f) ** 2 * w2 - (nn - 2) * f**3 * slope * w3))
    return np.array(lim), np.array(curv)


def exact_objective_limit(scores: str, n: ArrayLike, d: int | None = None) -> FloatArray:
    """L_n = n(n-1) int f(s)^2 F(s)^{n-2} ds: the alpha -> infinity limit of the exact objective (eq-exact-limit),
    the density at zero of the gap between the two largest of n scores."""
    nn = checked_range(n, "n", 2, EXACT_MAX_N)
    _exact_law(scores, d)
    with np.errstate(under="ignore"):  # F^{n-2} underflows to 0 far below the top: intended
        return _limit_lattice(scores, nn.ravel(), d)[0].reshape(nn.shape)


def exact_objective_curvature(scores: str, n: ArrayLike, d: int | None = None) -> FloatArray:
    """D_n of E[alpha (1 - sum p^2)] = L_n + (pi^2/6) D_n / alpha^2 + O(alpha^-3) (eq-exact-asymptote): the
    derivative of L_n in the variance of noise added to every score, Gumbel noise G/alpha having pi^2/(6 alpha^2)."""
    nn = checked_range(n, "n", 2, EXACT_MAX_N)
    _exact_law(scores, d)
    with np.errstate(under="ignore"):  # F^{n-2} underflows to 0 far below the top: intended
        return _limit_lattice(scores, nn.ravel(), d)[1].reshape(nn.shape)


def exact_objective(scores: str, alpha: ArrayLike, n: ArrayLike, d: int | None = None) -> FloatArray:
    """E over n i.i.d. scores of alpha (1 - sum_i p_i^2), p = softmax(alpha s): n(n-1) int f_Y^2 F_Y^{n-2},
    Y = S + G/alpha with G standard Gumbel (eq-exact), for normal or cosine (d >= 16) scores; n real in [2, 1e6].

    Three regimes, each to better than 1e-9 relative: alpha sigma < 1e-3, the even series
    alpha (1 - 1/n) - alpha^3 sigma^2 (n-1)/n^2 (next term alpha^5 sigma^4); alpha w > 2e3 (w = min(sigma, 1/h)), the
    asymptote L_n + (pi^2/6) D_n / alpha^2 (next term ~ (alpha w)^-3); between them the lattice of
    :func:`_gumbel_lattice`.
    """
    a = checked_array(alpha, "alpha", lambda x: np.isfinite(x) & (x > 0), "a finite number > 0")
    nn = checked_range(n, "n", 2, EXACT_MAX_N)
    sigma, _, _ = _exact_law(scores, d)
    a, nn = np.broadcast_arrays(a, nn)
    shape = a.shape
    a, nn = a.ravel(), nn.ravel()
    with np.errstate(under="ignore"):  # densities and F^{n-2} underflow to 0 in the far tails: intended
        return _exact_regimes(scores, a, nn, d, sigma).reshape(shape)


def _exact_regimes(scores: str, a: FloatArray, nn: FloatArray, d: float | None, sigma: float) -> FloatArray:
    """:func:`exact_objective` on flat, validated arrays: each alpha in its regime."""
    out = np.empty(a.shape)
    width = _exact_width(scores, float(nn.max()), d)
    small = a * sigma < 1e-3
    large = a * width > 2e3
    out[small] = a[small] * (1 - 1 / nn[small]) - a[small] ** 3 * sigma**2 * (nn[small] - 1) / nn[small] ** 2
    if np.any(large):
        lim, curv = _limit_lattice(scores, nn[large], d)
        out[large] = lim + (math.pi**2 / 6) * curv / a[large] ** 2
    middle = ~(small | large)
    for value in np.unique(a[middle]):
        at = middle & (a == value)
        ns = np.unique(nn[at])
        got = _gumbel_lattice(scores, float(value), ns, d)
        out[at] = got[np.searchsorted(ns, nn[at])]
    return out


def exact_objective_pair_reference(scores: str, alpha: float, d: int | None = None, digits: int = 30) -> float:
    """E[alpha (1 - p_1^2 - p_2^2)] for n = 2 in ``digits``-digit arithmetic (mpmath): with Delta = s_1 - s_2,
    1 - sum p^2 = 2 sigma(alpha Delta) sigma(-alpha Delta) = 1 / (2 cosh^2(alpha Delta / 2)), so the objective is
    E[alpha / (2 cosh^2(alpha Delta / 2))], a one-dimensional integral over the density of Delta (eq-exact-pair)."""
    import mpmath

    (a,) = checked_array([alpha], "alpha", lambda x: np.isfinite(x) & (x > 0), "a finite number > 0")
    _exact_law(scores, d)
    with mpmath.workdps(digits):
        am = mpmath.mpf(float(a))

        def kernel(x: "mpmath.mpf") -> "mpmath.mpf":
            return am / (2 * mpmath.cosh(am * x / 2) ** 2)

        w = 1 / am
        if scores == "normal":
            # Delta ~ N(0, 2)
            def dens(x: "mpmath.mpf") -> "mpmath.mpf":
                return mpmath.exp(-x * x / 4) / (2 * mpmath.sqrt(mpmath.pi))

            cuts = [-mpmath.inf, -40 * w, -w, 0, w, 40 * w, mpmath.inf]
        else:
            m = mpmath.mpf(int(d) - 3) / 2
            norm = 1 / mpmath.beta(mpmath.mpf(1) / 2, mpmath.mpf(int(d) - 1) / 2)

            def dens(x: "mpmath.mpf") -> "mpmath.mpf":
                # the autocorrelation of the cosine density, even in x, supported on [-2, 2]
                x = abs(x)
                if x >= 2:
                    return mpmath.mpf(0)
                # each factor clipped at 0: the nodes at the ends may round just outside [-1, 1]
                return norm**2 * mpmath.quad(lambda s: (max(0, 1 - s * s) * max(0, 1 - (s - x) ** 2)) ** m,
                                             [x - 1, x / 2, 1])

            cuts = [-2, -min(40 * w, 1), -min(w, 1), 0, min(w, 1), min(40 * w, 1), 2]
        return float(mpmath.quad(lambda x: dens(x) * kernel(x), sorted(set(cuts))))


def exact_objective_limit_reference(scores: str, n: float, d: int | None = None, digits: int = 30) -> float:
    """L_n = n(n-1) int f^2 F^{n-2} in ``digits``-digit arithmetic (mpmath quadrature, split at the top score)."""
    import mpmath

    (nn,) = checked_range([n], "n", 2, EXACT_MAX_N)
    _exact_law(scores, d)
    top = float(top_score_location(scores, nn, d))
    with mpmath.workdps(digits):
        nm = mpmath.mpf(float(nn))
        if scores == "normal":
            def pdf(s: "mpmath.mpf") -> "mpmath.mpf":
                return mpmath.npdf(s)

            def cdf(s: "mpmath.mpf") -> "mpmath.mpf":
                return mpmath.ncdf(s)

            lo, hi = mpmath.mpf(-12), mpmath.mpf(12)
        else:
            half = mpmath.mpf(int(d) - 1) / 2
            norm = 1 / mpmath.beta(mpmath.mpf(1) / 2, half)

            def pdf(s: "mpmath.mpf") -> "mpmath.mpf":
                return norm * (1 - s * s) ** ((int(d) - 3) / mpmath.mpf(2))

            def cdf(s: "mpmath.mpf") -> "mpmath.mpf":
                return mpmath.betainc(half, half, 0, (1 + s) / 2, regularized=True)

            lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
        t = mpmath.mpf(top)
        h = 1 / mpmath.mpf(float(finite_sample_plateau(scores, nn, d)))
        cuts = [lo] + [c for c in (t - 20 * h, t - 4 * h, t, t + 4 * h, t + 20 * h) if lo < c < hi] + [hi]
        return float(mpmath.quad(lambda s: nm * (nm - 1) * pdf(s) ** 2 * cdf(s) ** (nm - 2), cuts))


def exact_alpha_at_share(scores: str, share: float, n: float, d: int | None = None) -> float:
    """The alpha at which the exact objective first reaches ``share`` of its limit L_n: F(alpha) = share L_n,
    solved in ln alpha (Brent) between alpha = share L_n / 2 (where F <= alpha (1 - 1/n) is below) and a point past
    the asymptote's crossing (eq-exact-asymptote)."""
    from scipy import optimize

    (q,) = checked_array([share], "share", lambda x: np.isfinite(x) & (x > 0) & (x < 1), "a number in (0, 1)")
    (nn,) = checked_range([n], "n", 2, EXACT_MAX_N)
    _exact_law(scores, d)
    with np.errstate(under="ignore"):
        lim, curv = (float(v[0]) for v in _limit_lattice(scores, np.array([nn]), d))
    target = float(q) * lim

    def gap(log_alpha: float) -> float:
        return float(exact_objective(scores, math.exp(log_alpha), nn, d)) - target

    lo = math.log(0.5 * target)  # F(alpha) <= alpha (1 - 1/n) < target there
    hi = math.log(2.0 * max(math.sqrt(math.pi**2 * abs(curv) / (6 * lim * (1 - float(q)))), target))
    while gap(hi) <= 0:  # the asymptote is approached from below: step past its crossing
        hi += math.log(2.0)
    return math.exp(optimize.brentq(gap, lo, hi, xtol=1e-10, rtol=1e-12))


# --- published scale choices -------------------------------------------------------------------------------------


def qknorm_initial_scale(length: ArrayLike) -> FloatArray:
    """g_0 = log2(L^2 - L): QK-norm's initial value of its learned scale of cosine logits, L the 97.5th percentile of
    the training sequences' lengths (Henry et al. 2020; log2 of the off-diagonal entries of an L x L score matrix)."""
    ln = checked_range(length, "length", 2, MAX_N)
    return np.log2(ln) + np.log2(ln - 1.0)


def gau_alpha_factor(n: ArrayLike) -> FloatArray:
    """ln(max(n, 16)) / ln 512: the factor GAU-α's softmax_plus puts on its logits q.k/sqrt(d), n the keys a row
    attends to (floored at 16, 'very short sequences do worse with the scale')."""
    return np.log(np.maximum(_as_n(n), 16.0)) / math.log(512.0)


def log_length_factor(n: ArrayLike) -> FloatArray:
    """ln n: the factor Chiang and Cholak (2022) put on the attention logits q.k/sqrt(d) for n keys."""
    return np.log(_as_n(n))


def qknorm_length_for_scale(scale: ArrayLike) -> FloatArray:
    """The training length L at which QK-norm starts its scale at ``scale``: the root L > 1 of log2(L^2 - L) = g,
    L = (1 + sqrt(1 + 2^(g + 2))) / 2 (inverse of :func:`qknorm_initial_scale`)."""
    g = checked_range(scale, "scale", 1, 100)
    return 0.5 * (1.0 + np.sqrt(1.0 + np.exp2(g + 2.0)))
