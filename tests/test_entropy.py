import math
import warnings

import numpy as np
import pytest

from analysis.theory import entropy as ent

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize("k", [2, 3, 10, 1_000, 10_000, 100_000, 150_000])
@pytest.mark.parametrize("p", [1e-9, 0.001, 0.01, 0.3, 0.5, 0.8, 0.99, 1 - 1e-6, 1.0])
def test_closed_form_matches_direct_summation(p, k):
    direct = ent.spread_prediction_entropy_direct(p, k)
    closed = float(ent.spread_prediction_entropy(p, k))
    # Direct summation carries rounding of order eps (2H + 1); both sides together eps (4H + 2).
    assert abs(closed - direct) <= float(ent.direct_sum_error_bound(closed))


@pytest.mark.parametrize("k", [2, 1_000, 10**6, 10**9, 10**12])
@pytest.mark.parametrize("p", [1e-300, 1e-100, 1e-12, 1e-3, 0.5, 0.999, 1 - 1e-12, 1.0])
def test_closed_form_within_few_ulps_of_mpmath(p, k):
    ref = ent.spread_prediction_entropy_reference(p, k)
    got = float(ent.spread_prediction_entropy(p, k))
    assert got == ref or abs(got - ref) <= 4 * EPS * ref


def test_edge_cases_are_defined():
    assert float(ent.spread_prediction_entropy(1.0, 1)) == 0.0
    assert float(ent.spread_prediction_entropy(1.0, 10**12)) == 0.0
    # K = 2 is the binary entropy; its maximum is ln 2 at p = 1/2.
    assert float(ent.spread_prediction_entropy(0.5, 2)) == pytest.approx(math.log(2), rel=1e-15)
    assert float(ent.spread_prediction_entropy(1 / 1000, 1000)) == pytest.approx(math.log(1000), rel=1e-15)


def test_vectorised_and_broadcast_without_warnings():
    p = np.logspace(-300, 0, 301)[:, None]
    k = np.array([1, 2, 256, 10**12], dtype=float)[None, :]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = ent.spread_prediction_entropy(p[-1:], k)  # p = 1 is allowed with K = 1
        h2 = ent.spread_prediction_entropy(p, k[:, 1:])
    assert h.shape == (1, 4) and h2.shape == (301, 3)
    assert np.all(np.isfinite(h2)) and np.all(h2 >= 0)
    assert np.all(h2 <= np.log(k[:, 1:]) * (1 + 4 * EPS))


@pytest.mark.parametrize(
    "p, k, message",
    [
        (0.0, 10, "p must be a probability in \\(0, 1\\]"),
        (1.5, 10, "p must be a probability"),
        (float("nan"), 10, "p must be a probability"),
        (0.5, 0, "classes must be an integer in \\[1, 2\\*\\*53\\]"),
        (0.5, 2.5, "classes must be an integer"),
        (0.5, 2.0**60, "classes must be an integer"),
        (0.5, 1, "p must be 1 when classes == 1"),
        ([], 10, "p must not be empty"),
    ],
)
def test_invalid_input_names_the_argument(p, k, message):
    with pytest.raises(ValueError, match=message):
        ent.spread_prediction_entropy(p, k)


def test_upper_bound_in_loss_equals_closed_form_in_p():
    p = np.logspace(-200, 0, 500)
    for k in (2, 256, 150_000, 10**12):
        a = ent.entropy_upper_bound(-np.log(p), k)
        b = ent.spread_prediction_entropy(p, k)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


def test_upper_bound_accurate_near_zero_loss_and_finite_for_huge_loss():
    # L -> 0: H ~ L (1 - ln L + ln(K-1)); the p-form would lose all digits at L = 1e-15.
    loss = 1e-15
    expected = loss * (1 - math.log(loss) + math.log(255))
    assert float(ent.entropy_upper_bound(loss, 256)) == pytest.approx(expected, rel=1e-6)
    assert float(ent.entropy_upper_bound(1e6, 256)) == pytest.approx(math.log(255), rel=1e-12)
    with pytest.raises(ValueError, match="loss must be a finite loss"):
        ent.entropy_upper_bound(-1.0, 256)
    with pytest.raises(ValueError, match="loss must be 0 when classes == 1"):
        ent.entropy_upper_bound(0.5, 1)


def test_random_distributions_never_exceed_the_bound_and_uniform_rest_attains_it():
    rng = np.random.default_rng(1)
    k = 50
    for _ in range(200):
        q = rng.dirichlet(np.full(k, rng.uniform(0.05, 5)))
        y = rng.integers(k)
        bound = float(ent.entropy_upper_bound(-math.log(q[y]), k))
        assert float(ent.distribution_entropy(q)) <= bound + 1e-12
    q = np.full(k, 0.6 / (k - 1))
    q[0] = 0.4
    assert float(ent.distribution_entropy(q)) == pytest.approx(float(ent.entropy_upper_bound(-math.log(0.4), k)), rel=1e-13)


def test_distribution_entropy_validates_rows():
    with pytest.raises(ValueError, match="sum to 1"):
        ent.distribution_entropy([0.5, 0.2])
    with pytest.raises(ValueError, match="non-negative"):
        ent.distribution_entropy([1.5, -0.5])


def test_peak_probability_and_bits():
    assert float(ent.peak_probability(256)) == 1 / 256
    assert float(ent.entropy_bits(math.log(2))) == pytest.approx(1.0, rel=1e-15)
    assert float(ent.cross_entropy_loss(0.5)) == pytest.approx(math.log(2), rel=1e-15)


def test_symbolic_derivations_reduce_to_zero():
    assert ent.symbolic_spread_entropy()["difference"] == 0
    ident = ent.symbolic_grouping_identity(3)
    assert ident["difference"] == 0 and ident["entropy_deficit_minus_kl"] == 0
    with pytest.raises(ValueError, match="others must be an integer"):
        ent.symbolic_grouping_identity(0)


def test_direct_summation_refuses_huge_k():
    with pytest.raises(ValueError, match="at most 1e8"):
        ent.spread_prediction_entropy_direct(0.5, 10**9)


def test_calibration_estimate_takes_every_token_and_the_windows_as_units():
    """Tokens of a window share an offset: the per-token SE is far too small, and the SE over windows sees the
    windows' spread. The mean is that of every token, not of the plotted subsample (which once set the SE: 4,000 of
    10,240 tokens, unscaled)."""
    from analysis.studies.entropy.experiments.entropy_lm import calibration_estimate, window_means

    rng = np.random.default_rng(0)
    windows, ctx = 160, 25
    offsets = np.repeat(rng.normal(0.0, 0.5, windows), ctx)  # one offset per window
    calib = offsets + rng.normal(0.0, 0.1, windows * ctx)
    position = np.tile(np.arange(ctx), windows)
    means = window_means(calib, position)
    assert means.shape == (windows,) and means == pytest.approx(calib.reshape(windows, ctx).mean(1))
    snap = {"window_loss_minus_entropy": means.tolist(), "loss": [9.0], "entropy": [0.0]}  # a subsample far off
    est = calibration_estimate(snap)
    per_token = calib.std(ddof=1) / np.sqrt(calib.size)
    assert est.value == pytest.approx(calib.mean()) and est.n == windows and est.nu == windows - 1
    assert est.units == "evaluation windows" and est.se == pytest.approx(means.std(ddof=1) / np.sqrt(windows))
    assert est.se > 3 * per_token  # correlated tokens: the per-token SE understates the error
    with pytest.raises(ValueError, match="position starting at 0"):
        window_means(calib, position + 1)


def test_calibration_gaps_are_paired_by_window():
    """The architectures are evaluated on the same windows: a window hard for one is hard for all, and pairing
    removes that shared part from the difference's error."""
    from analysis.studies.entropy.experiments.entropy_lm import calibration_gaps

    rng = np.random.default_rng(1)
    shared = rng.normal(0.0, 0.5, 100)
    runs = {name: {"snapshots": [{"window_loss_minus_entropy": (shared + shift + rng.normal(0, 0.01, 100)).tolist()}]}
            for name, shift in (("A", 0.0), ("B", 0.05), ("C", 0.0))}
    gaps = calibration_gaps(runs)
    assert list(gaps) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert gaps[("A", "B")].value == pytest.approx(-0.05, abs=0.005) and gaps[("A", "B")].se < 0.002
    with pytest.raises(ValueError, match="same windows"):
        calibration_gaps({"A": runs["A"], "D": {"snapshots": [{"window_loss_minus_entropy": [0.1, 0.2]}]}})
