"""The closed forms behind the Transformer-notes chapters, against torch, mpmath and sampling."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from analysis.theory import transformer_basics as tb


def test_qk_moments_and_sampling() -> None:
    assert tb.qk_moments(64) == (64.0, 6 / 64)
    assert tb.qk_moments(8, 2.0, 0.5) == (8.0, 0.75)
    rng = np.random.default_rng(0)
    s = (rng.standard_normal((200_000, 2)) * rng.standard_normal((200_000, 2))).sum(-1)
    assert abs(s.var() - 2) < 0.05
    assert abs((s**4).mean() / (s**2).mean() ** 2 - 3 - 3.0) < 0.3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="d must be"):
            tb.qk_moments(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="var_q"):
        tb.qk_moments(4, var_q=0.0)


def _mp_stats(row: np.ndarray) -> tuple[float, float]:
    mpmath.mp.dps = 60
    x = [mpmath.mpf(float(v)) for v in row]
    m = max(x)
    e = [mpmath.exp(v - m) for v in x]
    z = mpmath.fsum(e)
    p = [v / z for v in e]
    h = -mpmath.fsum(pi * mpmath.log(pi) for pi in p if pi > 0)
    fro2 = mpmath.fsum(((1 if i == j else 0) * p[i] - p[i] * p[j]) ** 2 for i in range(len(p)) for j in range(len(p)))
    return float(h), float(mpmath.sqrt(fro2))


@pytest.mark.parametrize("scale", [1e-3, 0.5, 3.0, 30.0, 300.0])
def test_softmax_stats_against_mpmath(scale: float) -> None:
    row = np.random.default_rng(1).standard_normal(12) * scale
    h, j = tb.softmax_stats(row)
    h_ref, j_ref = _mp_stats(row)
    assert abs(float(h) - h_ref) <= 1e-13 * max(h_ref, 1e-300) + 1e-300
    assert abs(float(j) - j_ref) <= 1e-12 * j_ref


def test_softmax_stats_matches_autograd_and_shapes() -> None:
    x = torch.randn(3, 20, dtype=torch.float64)
    h, j = tb.softmax_stats(x.numpy())
    assert h.shape == j.shape == (3,)
    for i in range(3):
        jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), x[i])
        assert abs(float(torch.linalg.matrix_norm(jac)) - j[i]) < 1e-14
    uniform_h, uniform_j = tb.softmax_stats(np.zeros(8))
    assert float(uniform_h) == pytest.approx(math.log(8), abs=1e-15)
    # one logit: p = 1, H = 0, J = 0; logits far apart: finite, no warnings
    assert tb.softmax_stats([5.0])[0] == 0 and tb.softmax_stats([5.0])[1] == 0
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        h2, j2 = tb.softmax_stats([0.0, -1.7e308, 1.7e308])
    assert h2 == 0 and j2 == 0
    with pytest.raises(ValueError, match="logits"):
        tb.softmax_stats([0.0, float("nan")])
    with pytest.raises(ValueError, match="axis"):
        tb.softmax_stats(1.0)


def test_top_gap_against_sampling() -> None:
    assert tb.top_gap_sf(0.0, 10) == 1.0
    z = np.sort(np.random.default_rng(2).standard_normal((40_000, 64)), axis=1)
    gap = z[:, -1] - z[:, -2]
    for g in (0.1, 0.4, 1.0):
        p = float((gap > g).mean())
        assert abs(tb.top_gap_sf(g, 64) - p) < 4 * math.sqrt(p * (1 - p) / gap.size)
    assert tb.top_gap_sf(0.5, 64) > tb.top_gap_sf(0.6, 64)
    with pytest.raises(ValueError, match="at least 2"):
        tb.top_gap_sf(0.1, 1)


def test_saturated_jacobian_law_against_sampling() -> None:
    rng = np.random.default_rng(3)
    n, d = 64, 512
    r = np.sqrt(rng.chisquare(d, 20_000))[:, None]
    j = tb.softmax_stats(r * rng.standard_normal((20_000, n)))[1]
    med = float(np.median(j))
    boot = np.std([np.median(rng.choice(j, j.size)) for _ in range(50)])
    assert abs(tb.saturated_jacobian_median(n, d) - med) < 4 * boot


def test_mean_field_entropy() -> None:
    assert tb.mean_field_entropy(512, 1.0) == pytest.approx(math.log(512) - 0.5)
    with pytest.raises(ValueError):
        tb.mean_field_entropy(512, -1.0)


@pytest.mark.parametrize("heads", [1, 2, 8, 64])
def test_mha_parameters_match_torch(heads: int) -> None:
    mha = nn.MultiheadAttention(128, heads)
    assert tb.mha_parameters(128, heads) == sum(p.numel() for p in mha.parameters()) == 4 * 128**2 + 4 * 128


def test_mha_parameters_with_head_dim_and_errors() -> None:
    assert tb.mha_parameters(64, 4, head_dim=32, bias=False) == 4 * 64 * 128
    with pytest.raises(ValueError, match="divisible"):
        tb.mha_parameters(10, 3)


def test_sinusoidal_positions() -> None:
    pe = tb.sinusoidal_pe(np.arange(300), 16)
    assert pe.shape == (300, 16)
    assert np.allclose(pe[:, 0], np.sin(np.arange(300)))
    assert np.allclose(pe[:, 1], np.cos(np.arange(300)))
    m5, m7 = tb.pe_shift_matrix(5, 16), tb.pe_shift_matrix(7, 16)
    assert np.allclose(m5 @ m5.T, np.eye(16), atol=1e-15)
    assert np.allclose(m5 @ m7, tb.pe_shift_matrix(12, 16), atol=1e-14)
    assert np.abs(pe[:-5] @ m5.T - pe[5:]).max() < 1e-13
    dots = (pe[:-9] * pe[9:]).sum(-1)
    assert np.abs(dots - tb.pe_dot(9, 16)).max() < 1e-13
    assert tb.pe_dot(9, 16) == pytest.approx(float(tb.pe_dot(-9, 16)))
    with pytest.raises(ValueError, match="even"):
        tb.pe_frequencies(15)
    with pytest.raises(ValueError, match="base"):
        tb.pe_frequencies(16, base=1.0)


def test_norms_against_torch() -> None:
    x = torch.randn(5, 32, dtype=torch.float64) * 3 + 1
    ln = nn.LayerNorm(32, elementwise_affine=False, dtype=torch.float64)
    assert np.abs(tb.layer_norm(x.numpy()) - ln(x).numpy()).max() < 1e-14
    rms = nn.RMSNorm(32, eps=1e-6, dtype=torch.float64)
    assert np.abs(tb.rms_norm(x.numpy()) - rms(x).detach().numpy()).max() < 1e-14
    notes = tb.notes_rms_norm(x.numpy())
    expected = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert np.abs(notes - expected.numpy()).max() < 1e-14
    # LayerNorm is shift invariant exactly, scale invariant only up to eps
    v = np.array([1.0, 2, 3, 4])
    assert np.abs(tb.layer_norm(v) - tb.layer_norm(v + 1)).max() < 1e-15
    assert 1e-7 < np.abs(tb.layer_norm(v) - tb.layer_norm(2 * v)).max() < 1e-5
    assert np.abs(tb.layer_norm(v, 0.0) - tb.layer_norm(2 * v, 0.0)).max() < 1e-15
    with pytest.raises(ValueError, match="x must"):
        tb.layer_norm([1.0, float("inf")])


def test_deepnorm_constants() -> None:
    dec = tb.deepnorm_constants("decoder", 12)
    assert dec == {"alpha": 24**0.25, "beta": 96**-0.25}
    assert tb.deepnorm_constants("encoder", 12) == dec
    ed = tb.deepnorm_constants("encoder-decoder", 6, 18)
    assert ed["decoder_alpha"] == pytest.approx(54**0.25) and ed["decoder_beta"] == pytest.approx(216**-0.25)
    assert ed["encoder_alpha"] == pytest.approx(0.81 * (6**4 * 18) ** (1 / 16))
    # the two conditions 2 K beta^2 / alpha^2 = 1 and alpha^2 beta^2 = 1/2, K residual branches
    for k, a, b in ((24, dec["alpha"], dec["beta"]), (54, ed["decoder_alpha"], ed["decoder_beta"])):
        assert 2 * k * b**2 / a**2 == pytest.approx(1.0) and a**2 * b**2 == pytest.approx(0.5)
    with pytest.raises(ValueError, match="decoder_layers"):
        tb.deepnorm_constants("encoder-decoder", 6)
    with pytest.raises(ValueError, match="applies"):
        tb.deepnorm_constants("decoder", 6, 6)
    with pytest.raises(ValueError, match="architecture"):
        tb.deepnorm_constants("mixer", 6)


def test_ffn_counts() -> None:
    layer = nn.TransformerEncoderLayer(64, 4, 256)
    assert tb.ffn_parameters(64) == sum(p.numel() for p in (*layer.linear1.parameters(), *layer.linear2.parameters()))
    assert tb.ffn_parameters(64, bias=False) == 8 * 64**2
    assert tb.glu_ffn_parameters(64, round(tb.swiglu_hidden(256))) == pytest.approx(2 * 64 * 256, rel=2e-3)
    assert tb.swiglu_hidden(3.0) == 2.0
    with pytest.raises(ValueError):
        tb.ffn_parameters(0)


def test_activations_against_torch_and_tails() -> None:
    x = np.linspace(-10, 10, 2001)
    xt = torch.from_numpy(x)
    assert np.abs(tb.gelu(x) - F.gelu(xt).numpy()).max() < 1e-14
    assert np.abs(tb.gelu_tanh(x) - F.gelu(xt, approximate="tanh").numpy()).max() < 1e-14
    assert np.abs(tb.swish(x) - F.silu(xt).numpy()).max() < 1e-14
    assert np.abs(tb.gelu_sigmoid(x) - x / (1 + np.exp(-1.702 * x))).max() < 1e-14
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        tails = np.array([-np.inf, -1e300, -40.0, 40.0, 1e300, np.inf])
        assert tb.gelu(tails)[0] == 0 and tb.gelu(tails)[-1] == np.inf
        assert np.all(np.isfinite(tb.gelu(tails)[1:-1]))
    assert tb.gelu_tanh(np.array([-np.inf]))[0] == 0 and tb.swish(np.array([-np.inf]))[0] == 0
    # the notes' erf from 1: off by erf(1) x / 2
    assert tb.notes_gelu(np.array([2.0]))[0] == pytest.approx(tb.gelu(np.array([2.0]))[0] - math.erf(1.0))
    with pytest.raises(ValueError, match="NaN"):
        tb.gelu([float("nan")])


@pytest.mark.parametrize("kind", tb.GLU_GATES)
def test_glu_ffn_shapes_and_torch(kind: str) -> None:
    g = torch.Generator().manual_seed(0)
    x, w, v, w2 = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((5, 8), (8, 6), (8, 6), (6, 8)))
    gate = {"glu": torch.sigmoid, "bilinear": lambda t: t, "reglu": F.relu, "geglu": F.gelu, "swiglu": F.silu}[kind]
    ref = ((gate(x @ w) * (x @ v)) @ w2).numpy()
    assert np.abs(tb.glu_ffn(x.numpy(), w.numpy(), v.numpy(), w2.numpy(), kind) - ref).max() < 1e-13


def test_glu_ffn_errors() -> None:
    with pytest.raises(ValueError, match="kind"):
        tb.glu_ffn(np.ones((2, 3)), np.ones((3, 4)), np.ones((3, 4)), np.ones((4, 3)), "tanhglu")
    with pytest.raises(ValueError, match="shapes"):
        tb.glu_ffn(np.ones((2, 3)), np.ones((3, 4)), np.ones((3, 5)), np.ones((4, 3)))


def test_symbolic_checks() -> None:
    out = tb.symbolic_checks()
    assert out["swiglu_width_standard"] == "8*d/3"
    assert out["swiglu_width_notes"] == "2*d/3"
    assert out["ffn_parameters"] == "8*d**2 + 5*d"
    assert out["deepnorm_alpha"] == "K**(1/4)"
    assert out["notes_erf_minus_erf"] == "-erf(1)"
