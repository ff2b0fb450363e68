"""How big is a GAU layer at initialisation? (kexue.fm/archives/8990)

With x ~ N(0, I), weights W_u, W_v, W_z ~ N(0, sigma_w^2) and W_o ~ N(0, sigma_o^2), the pre-activations
are N(0, sigma_in^2) with sigma_in^2 = d sigma_w^2 (1 under LeCun), and U, V, Z have per-entry mean mu and
second moment nu^2 of phi(sigma_in eps). The source then argues:

* A_ii = relu^2(|Z_i|^2)/(n s) ~ s nu^4 / n and A_ij ~ s mu^4 / n, so A ~ (s nu^4 / n) I;
* hence O ~ (s nu^4/n) (U * V) W_o and RMS(O) ~ s nu^6 / n (0.01 at s = 128, n = 512).

The step that fails: the n - 1 off-diagonal entries of a row, each ~69x smaller than the diagonal,
add up to c_i = sum_{j != i} A_ij, which does not shrink with n; and V has mean mu != 0 (Swish is not
centred), so (A V)_i ~ A_ii V_i + c_i mu carries an n-independent term. The corrected prediction is

    RMS(O)^2 = g_o nu^2 (E[A_ii^2] nu^2 + 2 E[A_ii] E[c] mu^2 + E[c^2] mu^2),   g_o = e sigma_o^2,

with E[A_ii] = (s nu^4 + m4 - nu^4) / n (m4 = E[phi^4]) and c_i = (1/s) E_j[relu^2(Z_i . Z_j) | Z_i]:
given Z_i, Z_i . Z_j is ~ N(mu S_i, (nu^2 - mu^2) |Z_i|^2 + s^2 c1^4 / d) with S_i = sum_k Z_ik ~ N(s mu, s (nu^2 - mu^2));
the last variance term comes from the random correlation rho ~ N(0, 1/d) of two inputs in d dimensions
(c1 = E[eps phi(eps)], the first Hermite coefficient of phi).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special

SQRT2 = math.sqrt(2.0)


def _swish(x: float) -> float:
    return x * special.expit(x)


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / SQRT2))


def _gelu_tanh(x: float) -> float:
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS: dict[str, Callable[[float], float]] = {
    "swish": _swish,
    "relu": lambda x: max(x, 0.0),
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "tanh": math.tanh,
    "sigmoid": lambda x: float(special.expit(x)),
    "identity": lambda x: x,
}


def _activation(name: str) -> Callable[[float], float]:
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {name!r}")
    return ACTIVATIONS[name]


def _check_sigma(sigma: float) -> float:
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be positive and finite; got {sigma!r}")
    return float(sigma)


def activation_moment(name: str, power: int, sigma: float = 1.0) -> float:
    """E[phi(sigma eps)^power] for eps ~ N(0, 1), by adaptive quadrature split at 0 (relative error ~1e-13)."""
    phi = _activation(name)
    sig = _check_sigma(sigma)
    if power not in (1, 2, 3, 4):
        raise ValueError(f"power must be 1, 2, 3 or 4; got {power!r}")

    def integrand(e: float) -> float:
        return math.exp(-0.5 * e * e) / math.sqrt(2 * math.pi) * phi(sig * e) ** power

    total = 0.0
    for lo, hi in ((-np.inf, 0.0), (0.0, np.inf)):
        total += integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-13, limit=400)[0]
    return total


def first_hermite_coefficient(name: str, sigma: float = 1.0) -> float:
    """c1 = E[eps phi(sigma eps)]: E[phi(sigma a) phi(sigma b)] = mu^2 + rho c1^2 + O(rho^2) for corr(a, b) = rho."""
    phi = _activation(name)
    sig = _check_sigma(sigma)
    total = 0.0
    for lo, hi in ((-np.inf, 0.0), (0.0, np.inf)):
        total += integrate.quad(lambda e: math.exp(-0.5 * e * e) / math.sqrt(2 * math.pi) * e * phi(sig * e),
                                lo, hi, epsabs=0.0, epsrel=1e-13, limit=400)[0]
    return total


def activation_moments(name: str, sigma: float = 1.0) -> tuple[float, float]:
    """(mu, nu^2) = (E[phi(sigma eps)], E[phi(sigma eps)^2]): for Swish at sigma = 1, 0.2066 and 0.3557."""
    return activation_moment(name, 1, sigma), activation_moment(name, 2, sigma)


def activation_moment_reference(name: str, power: int, sigma: float = 1.0, digits: int = 30) -> float:
    """The same expectation in ``digits``-digit arithmetic (mpmath), for the accuracy tests."""
    import mpmath

    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {name!r}")
    _check_sigma(sigma)
    with mpmath.workdps(digits):
        sig = mpmath.mpf(sigma)
        funcs = {
            "swish": lambda x: x / (1 + mpmath.exp(-x)),
            "relu": lambda x: x if x > 0 else mpmath.mpf(0),
            "gelu": lambda x: x * (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2,
            "gelu_tanh": lambda x: x * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3))) / 2,
            "tanh": mpmath.tanh,
            "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)),
            "identity": lambda x: x,
        }
        f = funcs[name]
        val = mpmath.quad(lambda e: mpmath.exp(-e * e / 2) / mpmath.sqrt(2 * mpmath.pi) * f(sig * e) ** power,
                          [-mpmath.inf, 0, mpmath.inf])
        return float(val)


def _relu2_gaussian(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """E[relu(X)^2] for X ~ N(m, v)."""
    sd = np.sqrt(v)
    t = m / sd
    return (m * m + v) * special.ndtr(t) + m * sd * np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)


@dataclass(frozen=True)
class GAUPrediction:
    """Predicted sizes at initialisation (per entry: RMS = sqrt(mean of squares))."""

    mu: float
    nu2: float
    a_diag_source: float  # s nu^4 / n
    a_offdiag_source: float  # s mu^4 / n
    diag_offdiag_ratio_source: float  # nu^4 / mu^4
    rms_source: float  # s nu^6 / n (the source's O(.) taken literally)
    a_diag: float  # E[A_ii] = (s nu^4 + m4 - nu^4) / n
    a_offdiag: float  # E[A_ij], Gaussian E[relu^2] of Z_i . Z_j, / (n s)
    row_offdiag_mass: float  # E[c], the off-diagonal row sum
    rms_corrected: float


def gau_output_rms(s: int, n: int, d: int, e: int, init: str = "lecun", activation: str = "swish") -> GAUPrediction:
    """Source and corrected predictions of the GAU output RMS at initialisation (input x ~ N(0, I))."""
    for name, value in (("s", s), ("n", n), ("d", d), ("e", e)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    if s > e:
        raise ValueError(f"s (key size {s}) must not exceed e (expanded width {e})")
    if init == "lecun":
        sigma_in, gain_out = 1.0, 1.0
    elif init == "std0.02":
        sigma_in, gain_out = math.sqrt(d) * 0.02, e * 0.02**2
    else:
        raise ValueError(f"init must be 'lecun' or 'std0.02'; got {init!r}")
    return gau_output_rms_scaled(s, n, d, sigma_in, gain_out, activation)


def gau_output_rms_softmax(n: int, sigma_in: float, gain_out: float, activation: str = "swish") -> float:
    """RMS of GAU's output with softmax attention in its near-uniform limit (eq-softmax-mode):
    sqrt(g_o nu^2 (mu^2 + (nu^2 - mu^2)/n)), A V the mean of V over n keys; valid while the logits' spread is small."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    _check_sigma(sigma_in)
    _check_sigma(gain_out)
    mu, nu2 = activation_moments(activation, sigma_in)
    return math.sqrt(gain_out * nu2 * (mu * mu + (nu2 - mu * mu) / n))


def gau_output_rms_scaled(s: int, n: int, d: int, sigma_in: float, gain_out: float,
                          activation: str = "swish") -> GAUPrediction:
    """Predictions for pre-activations N(0, sigma_in^2) and output gain g_o = e sigma_o^2 (weights scaled by lambda:
    sigma_in = lambda, g_o = lambda^2 under LeCun); d enters through the input correlations rho ~ N(0, 1/d)."""
    _check_sigma(sigma_in)
    _check_sigma(gain_out)
    mu, nu2 = activation_moments(activation, sigma_in)
    m4 = activation_moment(activation, 4, sigma_in)
    var = nu2 - mu * mu
    nu4 = nu2 * nu2
    a_diag = (s * nu4 + m4 - nu4) / n
    # Off-diagonal row mass: given Z_i, Z_i . Z_j ~ N(mu S_i, var |Z_i|^2) with |Z_i|^2 ~ s nu^2 and
    # S_i ~ N(s mu, s var); average over S_i by Gauss-Hermite quadrature.
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    s_i = s * mu + math.sqrt(s * var) * nodes
    # two independent inputs have correlation rho ~ N(0, 1/d), which moves Z_i . Z_j by s rho c1^2
    c1 = first_hermite_coefficient(activation, sigma_in)
    extra = (s * c1 * c1) ** 2 / d
    c_i = _relu2_gaussian(mu * s_i, np.full_like(s_i, var * s * nu2 + extra)) / s * (n - 1) / n
    c_mean = float(weights @ c_i)
    c_second = float(weights @ (c_i * c_i))
    a_off = c_mean / (n - 1) if n > 1 else 0.0
    mean_v2 = mu * mu + var / n  # square of the mean of V over n keys
    av2 = (a_diag * a_diag) * nu2 + 2 * a_diag * c_mean * mu * mu + c_second * mean_v2
    return GAUPrediction(
        mu=mu, nu2=nu2,
        a_diag_source=s * nu4 / n, a_offdiag_source=s * mu**4 / n, diag_offdiag_ratio_source=nu4 / mu**4,
        rms_source=s * nu2**3 / n,
        a_diag=a_diag, a_offdiag=a_off, row_offdiag_mass=c_mean,
        rms_corrected=math.sqrt(gain_out * nu2 * av2),
    )
