"""Closed forms behind the DL——Transformer study notes: attention scale, heads, positions, norms, FFNs.

Every function is float64 numpy and validates its inputs. The equations, by section:

* scaled dot product: Var[q.k] = d s_q^2 s_k^2 and excess kurtosis 6/d for Gaussian q, k; the softmax row
  entropy H(p) and Jacobian norm ||diag(p) - p p^T||_F, both computed without cancellation; the gap G
  between the two largest of n standard normals, P(G > g) = n int phi(x) Phi(x - g)^(n-1) dx, which sets
  the saturated Jacobian ||J||_F ~ 2 exp(-|q| G) of unscaled logits;
* multi-head attention: 3 d h d_k + h d_k d weights (+ 3 h d_k + d biases), = 4 d^2 + 4 d when h d_k = d;
* sinusoidal positions PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i), w_i = base^(-2i/d); the shift
  PE(p + k) = M_k PE(p) with M_k block-diagonal rotations; PE(p) . PE(p + k) = sum_i cos(k w_i);
* norms: LayerNorm (x - mean)/sqrt(var + eps), RMSNorm x/sqrt(mean(x^2) + eps), the notes' variant
  (x - mean)/sqrt(mean(x^2) + eps); DeepNorm's alpha, beta (Wang et al. 2022);
* FFNs: 2 d d_ff (+ d_ff + d) parameters, 8 d^2 at d_ff = 4d; SwiGLU's width r = 2 d_ff / 3 for equal
  parameters; GELU x Phi(x) and its tanh and sigmoid approximations, Swish x sigmoid(beta x), the GLU family.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
from scipy import integrate, optimize, special, stats

from analysis.theory.validate import FloatArray, checked_array, checked_range


def _positive_int(value: int, name: str, maximum: int = 2**40) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= maximum:
        raise ValueError(f"{name} must be an integer in [1, {maximum}]; got {value!r}")
    return int(value)


def _logits(values: npt.ArrayLike) -> FloatArray:
    x = checked_array(values, "logits", np.isfinite, "finite")
    if x.ndim == 0:
        raise ValueError("logits must have at least one axis (the softmax runs over the last)")
    return x


# --- scaled dot product ---------------------------------------------------------------------------


def qk_moments(d: int, var_q: float = 1.0, var_k: float = 1.0) -> tuple[float, float]:
    """(Var[q.k], excess kurtosis of q.k) = (d var_q var_k, 6/d) for independent centred Gaussian q, k in R^d."""
    d = _positive_int(d, "d")
    vq, vk = (float(checked_array(v, name, lambda a: np.isfinite(a) & (a > 0), "a positive number"))
              for v, name in ((var_q, "var_q"), (var_k, "var_k")))
    return d * vq * vk, 6.0 / d


def softmax_stats(logits: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """(H(p), ||diag(p) - p p^T||_F) of p = softmax(logits) over the last axis, accurate even for one-hot p.

    With m the row's argmax, r = sum_{j != m} e^(l_j - l_m): H = log1p(r) - sum_{i != m} p_i (l_i - l_m) and
    ||J||_F^2 = sum_i p_i^2 (1 - p_i)^2 + 2 p_m^2 sum_{i != m} p_i^2 + sum_{i != j; i, j != m} p_i^2 p_j^2,
    where 1 - p_m = r / (1 + r): no term subtracts two numbers close to 1.
    """
    x = _logits(logits)
    m = np.argmax(x, axis=-1)[..., None]
    with np.errstate(over="ignore", under="ignore"):
        z = x - np.take_along_axis(x, m, axis=-1)  # <= 0 (possibly -inf), 0 at m
        e = np.exp(z)
    np.put_along_axis(e, m, 0.0, axis=-1)
    r = e.sum(-1, keepdims=True)
    big_z = 1.0 + r
    q = e / big_z  # p_i for i != m, 0 at m
    pm = 1.0 / big_z
    entropy = np.log1p(r[..., 0]) - (q * np.where(q > 0, z, 0.0)).sum(-1)
    with np.errstate(under="ignore"):
        q2 = q * q
        s2 = q2.sum(-1, keepdims=True)
        rest_pairs = np.maximum(s2 * s2 - (q2 * q2).sum(-1, keepdims=True), 0.0)
    one_minus_pm = r / big_z
    with np.errstate(under="ignore"):
        fro2 = (q2 * (1.0 - q) ** 2).sum(-1, keepdims=True) + pm**2 * one_minus_pm**2 + 2 * pm**2 * s2 + rest_pairs
    return entropy, np.sqrt(fro2[..., 0])


def mean_field_entropy(n: int, sigma: npt.ArrayLike) -> FloatArray:
    """ln n - sigma^2 / 2: the large-n entropy of softmax over n i.i.d. N(0, sigma^2) logits (valid for sigma^2 << 2 ln n)."""
    n = _positive_int(n, "n")
    s = checked_range(sigma, "sigma", 0.0, 1e150)
    return math.log(n) - s**2 / 2


def top_gap_sf(g: float, n: int) -> float:
    """P(G > g), G the gap between the two largest of n i.i.d. N(0, 1): n int phi(x) Phi(x - g)^(n-1) dx."""
    n = _positive_int(n, "n", 2**31)
    if n < 2:
        raise ValueError("n must be at least 2 for a gap between the two largest")
    g = float(checked_range(g, "g", 0.0, 1e6))
    if g == 0.0:
        return 1.0
    lo, hi = -10.0, 10.0 + math.sqrt(2 * math.log(n))
    mode = math.sqrt(2 * math.log(n))

    def f(x: float) -> float:
        return n * math.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi) + (n - 1) * special.log_ndtr(x - g))

    val, _ = integrate.quad(f, lo, hi, points=[mode - 1, mode, mode + 1], limit=200, epsabs=1e-13, epsrel=1e-11)
    return min(max(val, 0.0), 1.0)


@functools.lru_cache(maxsize=256)  # a pure function of two integers, costly (nested quadrature): the chapter and its
# figure ask for the same widths
def saturated_jacobian_median(n: int, d: int) -> float:
    """Median of ||J||_F for unscaled logits q.k_j (q, k_j ~ N(0, I_d)) in the saturated limit: 2 exp(-t),
    P(|q| G > t) = 1/2 with |q| ~ chi_d independent of the top-two gap G of n standard normals."""
    n = _positive_int(n, "n", 2**31)
    d = _positive_int(d, "d", 2**20)
    chi = stats.chi(d)
    r_lo, r_hi = chi.ppf(1e-12), chi.ppf(1 - 1e-12)

    def sf(t: float) -> float:
        val, _ = integrate.quad(lambda r: chi.pdf(r) * top_gap_sf(t / r, n), r_lo, r_hi, limit=100, epsrel=1e-9)
        return val

    hi = 1.0
    while sf(hi) > 0.5:
        hi *= 2
    t = optimize.brentq(lambda t: sf(t) - 0.5, 0.0, hi, xtol=1e-12)
    return 2.0 * math.exp(-t)


# --- multi-head attention -------------------------------------------------------------------------


def mha_parameters(d: int, heads: int, head_dim: int | None = None, bias: bool = True) -> int:
    """3 d h d_k + h d_k d (+ 3 h d_k + d with biases); d_k = d / h by default, giving 4 d^2 + 4 d for every h."""
    d = _positive_int(d, "d")
    heads = _positive_int(heads, "heads")
    if head_dim is None:
        if d % heads:
            raise ValueError(f"d ({d}) must be divisible by heads ({heads}) when head_dim is not given")
        head_dim = d // heads
    dk = _positive_int(head_dim, "head_dim")
    inner = heads * dk
    return 4 * d * inner + ((3 * inner + d) if bias else 0)


# --- sinusoidal positions -------------------------------------------------------------------------


def pe_frequencies(d: int, base: float = 10000.0) -> FloatArray:
    """w_i = base^(-2i/d), i = 0 .. d/2 - 1 (d even)."""
    d = _positive_int(d, "d")
    if d % 2:
        raise ValueError(f"d must be even (sin/cos pairs); got {d}")
    b = float(checked_range(base, "base", 1.0 + 1e-12, 1e300))
    return np.exp(-np.arange(0, d, 2, dtype=np.float64) / d * math.log(b))


def sinusoidal_pe(positions: npt.ArrayLike, d: int, base: float = 10000.0) -> FloatArray:
    """PE(p, 2i) = sin(p w_i), PE(p, 2i+1) = cos(p w_i) (Vaswani et al. 2017, sec. 3.5); shape (..., d)."""
    p = checked_array(positions, "positions", np.isfinite, "finite")
    w = pe_frequencies(d, base)
    angle = p[..., None] * w
    out = np.empty(p.shape + (d,), dtype=np.float64)
    out[..., 0::2] = np.sin(angle)
    out[..., 1::2] = np.cos(angle)
    return out


def pe_shift_matrix(k: float, d: int, base: float = 10000.0) -> FloatArray:
    """M_k with PE(p + k) = M_k PE(p): blocks [[cos k w_i, sin k w_i], [-sin k w_i, cos k w_i]] on each (sin, cos) pair."""
    kk = float(checked_array(k, "k", np.isfinite, "finite"))
    w = pe_frequencies(d, base)
    c, s = np.cos(kk * w), np.sin(kk * w)
    m = np.zeros((d, d))
    idx = np.arange(0, d, 2)
    m[idx, idx], m[idx, idx + 1] = c, s
    m[idx + 1, idx], m[idx + 1, idx + 1] = -s, c
    return m


def pe_dot(k: npt.ArrayLike, d: int, base: float = 10000.0) -> FloatArray:
    """PE(p) . PE(p + k) = sum_i cos(k w_i), the same for every p and for +k and -k."""
    kk = checked_array(k, "k", np.isfinite, "finite")
    return np.cos(kk[..., None] * pe_frequencies(d, base)).sum(-1)


# --- norms -----------------------------------------------------------------------------------------


def _rows(x: npt.ArrayLike) -> FloatArray:
    a = checked_array(x, "x", np.isfinite, "finite")
    if a.ndim == 0 or a.shape[-1] < 1:
        raise ValueError("x must have a last axis of at least one feature")
    return a


def layer_norm(x: npt.ArrayLike, eps: float = 1e-5) -> FloatArray:
    """(x - mean(x)) / sqrt(var(x) + eps) over the last axis (biased variance, as torch.nn.LayerNorm)."""
    a = _rows(x)
    e = float(checked_range(eps, "eps", 0.0, 1e300))
    mu = a.mean(-1, keepdims=True)
    return (a - mu) / np.sqrt(((a - mu) ** 2).mean(-1, keepdims=True) + e)


def rms_norm(x: npt.ArrayLike, eps: float = 1e-6) -> FloatArray:
    """x / sqrt(mean(x^2) + eps) over the last axis (Zhang and Sennrich 2019; no mean is subtracted)."""
    a = _rows(x)
    e = float(checked_range(eps, "eps", 0.0, 1e300))
    return a / np.sqrt((a * a).mean(-1, keepdims=True) + e)


def notes_rms_norm(x: npt.ArrayLike, eps: float = 1e-6) -> FloatArray:
    """(x - mean(x)) / sqrt(mean(x^2) + eps): the notes' formula, with the mean read as the row mean."""
    a = _rows(x)
    return rms_norm(a, eps) - a.mean(-1, keepdims=True) / np.sqrt((a * a).mean(-1, keepdims=True) + eps)


def deepnorm_constants(architecture: str, layers: int, decoder_layers: int | None = None) -> dict[str, float]:
    """DeepNet's (alpha, beta) (Wang et al. 2022, sec. 4): encoder- or decoder-only with N layers,
    alpha = (2N)^(1/4), beta = (8N)^(-1/4); encoder-decoder with N, M layers, encoder alpha = 0.81 (N^4 M)^(1/16),
    beta = 0.87 (N^4 M)^(-1/16), decoder alpha = (3M)^(1/4), beta = (12M)^(-1/4)."""
    n = _positive_int(layers, "layers")
    if architecture in ("encoder", "decoder"):
        if decoder_layers is not None:
            raise ValueError(f"decoder_layers applies to the encoder-decoder only, not to {architecture!r}")
        return {"alpha": (2 * n) ** 0.25, "beta": (8 * n) ** -0.25}
    if architecture == "encoder-decoder":
        if decoder_layers is None:
            raise ValueError("the encoder-decoder needs decoder_layers")
        m = _positive_int(decoder_layers, "decoder_layers")
        c = (n**4 * m) ** (1 / 16)
        return {"encoder_alpha": 0.81 * c, "encoder_beta": 0.87 / c, "decoder_alpha": (3 * m) ** 0.25,
                "decoder_beta": (12 * m) ** -0.25}
    raise ValueError(f"architecture must be encoder, decoder or encoder-decoder; got {architecture!r}")


# --- feed-forward layers and activations -----------------------------------------------------------


def ffn_parameters(d: int, d_ff: int | None = None, bias: bool = True) -> int:
    """2 d d_ff (+ d_ff + d with biases); d_ff = 4 d gives 8 d^2 (+ 5 d)."""
    d = _positive_int(d, "d")
    dff = 4 * d if d_ff is None else _positive_int(d_ff, "d_ff")
    return 2 * d * dff + ((dff + d) if bias else 0)


def glu_ffn_parameters(d: int, hidden: int) -> int:
    """3 d r: W (d x r), V (d x r) and W_2 (r x d) of a GLU-family FFN without biases."""
    return 3 * _positive_int(d, "d") * _positive_int(hidden, "hidden")


def swiglu_hidden(d_ff: float) -> float:
    """r = 2 d_ff / 3: the GLU width with the parameters of a two-matrix FFN of width d_ff (3 d r = 2 d d_ff)."""
    return 2.0 * float(checked_range(d_ff, "d_ff", 0.0, 1e300)) / 3.0


def _values(x: npt.ArrayLike) -> FloatArray:
    return checked_array(x, "x", lambda a: ~np.isnan(a), "a number (not NaN)")


def gelu(x: npt.ArrayLike) -> FloatArray:
    """x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, computed as x ndtr(x) (accurate in both tails)."""
    a = _values(x)
    with np.errstate(invalid="ignore", under="ignore"):
        return np.where(np.isneginf(a), 0.0, a * special.ndtr(a))


def gelu_tanh(x: npt.ArrayLike) -> FloatArray:
    """x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, Hendrycks and Gimpel's tanh approximation."""
    a = _values(x)
    with np.errstate(over="ignore", invalid="ignore"):
        inner = math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)
        out = a * (0.5 + 0.5 * np.tanh(inner))
    return np.where(np.isneginf(a), 0.0, np.where(np.isposinf(a), np.inf, out))


def gelu_sigmoid(x: npt.ArrayLike) -> FloatArray:
    """x sigmoid(1.702 x), the sigmoid approximation of GELU."""
    return swish(x, 1.702)


def notes_gelu(x: npt.ArrayLike) -> FloatArray:
    """x (1 + erf_1(x / sqrt 2)) / 2 with the notes' erf_1(z) = (2/sqrt pi) int_1^z e^(-t^2) dt = erf(z) - erf(1)."""
    a = _values(x)
    return 0.5 * a * (1.0 + special.erf(a / math.sqrt(2)) - special.erf(1.0))


def swish(x: npt.ArrayLike, beta: float = 1.0) -> FloatArray:
    """x sigmoid(beta x) (Swish_beta; beta = 1 is SiLU)."""
    a = _values(x)
    b = float(checked_array(beta, "beta", np.isfinite, "finite"))
    with np.errstate(invalid="ignore"):
        out = a * special.expit(b * a)
    return np.where(np.isinf(a) & (np.sign(a) * b < 0), 0.0, out)


GLU_GATES = ("glu", "bilinear", "reglu", "geglu", "swiglu")


def glu_ffn(x: npt.ArrayLike, w: npt.ArrayLike, v: npt.ArrayLike, w2: npt.ArrayLike, kind: str = "swiglu") -> FloatArray:
    """(gate(x W) * x V) W_2 with gate sigmoid (GLU), identity (bilinear), ReLU, GELU or Swish_1 (Shazeer 2020)."""
    if kind not in GLU_GATES:
        raise ValueError(f"kind must be one of {', '.join(GLU_GATES)}; got {kind!r}")
    a = _rows(x)
    mats = [checked_array(m, name, np.isfinite, "finite") for m, name in ((w, "w"), (v, "v"), (w2, "w2"))]
    wm, vm, w2m = mats
    if wm.ndim != 2 or vm.shape != wm.shape or w2m.ndim != 2 or w2m.shape[0] != wm.shape[1] or wm.shape[0] != a.shape[-1]:
        raise ValueError(f"shapes must be x (..., d), w and v (d, r), w2 (r, d'); got {a.shape}, {wm.shape}, {vm.shape}, {w2m.shape}")
    h = a @ wm
    gate = {"glu": lambda t: special.expit(t), "bilinear": lambda t: t, "reglu": lambda t: np.maximum(t, 0.0),
            "geglu": gelu, "swiglu": swish}[kind](h)
    return np.asarray((gate * (a @ vm)) @ w2m, dtype=np.float64)


# --- symbolic checks -------------------------------------------------------------------------------


def symbolic_checks() -> dict[str, str]:
    """sympy: GELU = x Phi(x); SwiGLU widths; 8 d^2; DeepNorm's alpha, beta from its two conditions; the PE dot product.

    Returns each derived expression as a string (an identity that fails to simplify raises AssertionError).
    """
    import sympy as sp

    x, t, d, dff, r, k, big_k = sp.symbols("x t d d_ff r k K", positive=True)
    a, b = sp.symbols("alpha beta", positive=True)
    phi_cdf = sp.Rational(1, 2) * (1 + sp.erf(x / sp.sqrt(2)))
    normal_cdf = sp.integrate(sp.exp(-t**2 / 2) / sp.sqrt(2 * sp.pi), (t, -sp.oo, x))
    assert sp.simplify((phi_cdf - normal_cdf).rewrite(sp.erf)) == 0
    notes_erf = 2 / sp.sqrt(sp.pi) * sp.integrate(sp.exp(-t**2), (t, 1, x))
    notes_gap = sp.simplify(notes_erf - sp.erf(x))
    r_match = sp.solve(sp.Eq(3 * d * r, 2 * d * dff), r)[0]
    r_notes = r_match.subs(dff, d)
    r_standard = r_match.subs(dff, 4 * d)
    ffn = sp.expand(2 * d * 4 * d + 4 * d + d)
    sol = sp.solve([sp.Eq(2 * big_k * b**2 / a**2, 1), sp.Eq(a**2 * b**2, sp.Rational(1, 2))], [a, b], dict=True)[0]
    n_layers, m_layers = sp.symbols("N M", positive=True)
    assert sp.simplify(sol[a].subs(big_k, 2 * n_layers) - (2 * n_layers) ** sp.Rational(1, 4)) == 0
    assert sp.simplify(sol[b].subs(big_k, 2 * n_layers) - (8 * n_layers) ** sp.Rational(-1, 4)) == 0
    assert sp.simplify(sol[a].subs(big_k, 3 * m_layers) - (3 * m_layers) ** sp.Rational(1, 4)) == 0
    assert sp.simplify(sol[b].subs(big_k, 3 * m_layers) - (12 * m_layers) ** sp.Rational(-1, 4)) == 0
    p, w = sp.symbols("p w", real=True)
    pair = sp.sin(p * w) * sp.sin((p + k) * w) + sp.cos(p * w) * sp.cos((p + k) * w)
    assert sp.simplify(sp.expand_trig(pair - sp.cos(k * w))) == 0
    return {"gelu_cdf": "1/2 (1 + erf(x/sqrt 2)) = Phi(x)", "notes_erf_minus_erf": str(notes_gap),
            "swiglu_width": str(r_match), "swiglu_width_notes": str(r_notes), "swiglu_width_standard": str(r_standard),
            "ffn_parameters": str(ffn), "deepnorm_alpha": str(sol[a]), "deepnorm_beta": str(sol[b]),
            "pe_pair_product": "sin(pw) sin((p+k)w) + cos(pw) cos((p+k)w) = cos(kw)"}
