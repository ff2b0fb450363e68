import math

import numpy as np
import pytest

from analysis.core.stats import (
    Estimate,
    coverage_of,
    detectable_multiple,
    from_se,
    mean_estimate,
    paired_estimate,
    planned_detectable_multiple,
    t_quantile,
)


def test_t_quantiles_match_the_tables():
    assert t_quantile(1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(2) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(2, sided="one") == pytest.approx(2.9200, abs=1e-4)
    assert t_quantile(math.inf) == pytest.approx(1.95996, abs=1e-5)


def test_three_standard_errors_cover_little_with_few_seeds():
    # the issue this module exists for: '3 SE' is 80% with 2 seeds, 90% with 3
    assert coverage_of(3, 1) == pytest.approx(0.795, abs=1e-3)
    assert coverage_of(3, 2) == pytest.approx(0.905, abs=1e-3)
    assert coverage_of(3, math.inf) == pytest.approx(0.9973, abs=1e-4)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_t_interval_covers_95_percent_by_simulation(n):
    rng = np.random.default_rng(0)
    draws = rng.normal(1.0, 2.0, size=(40_000, n))
    mean, se = draws.mean(1), draws.std(1, ddof=1) / math.sqrt(n)
    for row, m, s in zip(draws[:5], mean, se):  # the same numbers as Estimate's
        est = mean_estimate(row, "seeds")
        assert (est.value, est.se) == (pytest.approx(m), pytest.approx(s))
        assert est.half_width() == pytest.approx(t_quantile(n - 1) * s)
    hits = np.abs(mean - 1.0) <= t_quantile(n - 1) * se
    # binomial SE of the coverage: sqrt(.95 * .05 / 40000) = 0.0011; 4 SE
    assert hits.mean() == pytest.approx(0.95, abs=0.0045)


@pytest.mark.parametrize("n, sided", [(2, "two"), (3, "two"), (3, "one"), (6, "two")])
def test_detectable_difference_is_found_with_80_percent_power(n, sided):
    # a true effect of lambda * sigma / sqrt(n) is rejected with probability 0.8 (noncentral t, exact)
    rng = np.random.default_rng(1)
    lam = detectable_multiple(n - 1, sided=sided)
    draws = rng.normal(lam / math.sqrt(n), 1.0, size=(40_000, n))
    mean, sd = draws.mean(1), draws.std(1, ddof=1)
    t = mean / (sd / math.sqrt(n))
    crit = t_quantile(n - 1, sided=sided)
    power = np.mean(t > crit) + (np.mean(t < -crit) if sided == "two" else 0.0)
    assert power == pytest.approx(0.80, abs=0.01)  # binomial SE 0.002


def test_detectable_multiple_limits():
    assert detectable_multiple(math.inf) == pytest.approx(1.95996 + 0.84162, abs=1e-4)
    assert detectable_multiple(2) > t_quantile(2) + t_quantile(2, confidence=0.8, sided="one")  # shortcut too small
    assert detectable_multiple(1) == pytest.approx(16.33, abs=0.01)


def test_estimates_and_their_words():
    est = mean_estimate([1.0, 2.0, 3.0], "seeds")
    assert (est.value, est.n, est.nu) == (2.0, 3, 2.0)
    assert est.se == pytest.approx(1 / math.sqrt(3))
    assert est.half_width() == pytest.approx(4.3027 / math.sqrt(3), rel=1e-4)
    assert est.upper() == pytest.approx(2 + 2.92 / math.sqrt(3), rel=1e-3)
    assert "95% two-sided Student-t interval over 3 seeds (2 df): 4.3 SE of x" == est.basis("x")
    pair = paired_estimate([3.0, 5.0], [1.0, 2.0])
    assert (pair.value, pair.n, pair.units) == (2.5, 2, "paired seeds")
    one = mean_estimate([4.0], "seeds")
    assert not one.resolved and math.isinf(one.half_width()) and math.isinf(one.detectable())
    assert "no error estimate" in one.basis("x")
    slope = from_se(0.5, 0.1, 8, "layers", dof=6)
    assert slope.nu == 6 and slope.half_width() == pytest.approx(0.1 * t_quantile(6))
    assert "normal limit" in from_se(0.0, 1.0, 10_000, "tokens", dof=math.inf).basis("x")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: t_quantile(0), "dof must be >= 1"),
        (lambda: t_quantile(2, confidence=1.0), r"confidence must be in \[0.5, 1\)"),
        (lambda: t_quantile(2, sided="both"), "sided must be"),
        (lambda: detectable_multiple(2, power=0.3), "power must be"),
        (lambda: mean_estimate([], "seeds"), "at least one value"),
        (lambda: mean_estimate([1.0, math.nan], "seeds"), "values must be finite"),
        (lambda: paired_estimate([1.0, 2.0], [1.0]), "must pair up"),
        (lambda: Estimate(1.0, -1.0, 3, "seeds"), "se must be finite and >= 0"),
        (lambda: Estimate(1.0, 1.0, 0, "seeds"), "n must be a whole number >= 1"),
        (lambda: Estimate(1.0, 1.0, 3, " "), "units must name"),
        (lambda: coverage_of(-1, 2), "multiple must be"),
    ],
)
def test_invalid_inputs_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_stable_far_outside_the_book_range():
    assert math.isfinite(detectable_multiple(1, confidence=0.999, power=0.99))
    assert detectable_multiple(1e6) == pytest.approx(detectable_multiple(math.inf), rel=1e-4)
    huge = mean_estimate([1e300, -1e300, 0.0], "seeds")
    assert math.isfinite(huge.se) and math.isfinite(huge.half_width())


def test_welch_difference_and_compare():
    from analysis.core.stats import compare, difference

    a, b = from_se(1.0, 0.1, 3, "seeds"), from_se(0.5, 0.1, 3, "seeds")
    d = difference(a, b)
    assert d.value == pytest.approx(0.5) and d.se == pytest.approx(math.hypot(0.1, 0.1))
    assert d.nu == pytest.approx(4.0)  # equal SEs and nu: Welch gives nu_a + nu_b
    assert compare(a, b) == "larger than" and compare(b, a) == "smaller than"
    assert compare(a, from_se(0.9, 0.1, 3, "seeds")) == "indistinguishable from"
    # 3 SE of the difference (0.42) would call this one; the t interval on Welch's 2 df (4.3 SE = 0.61) does not
    assert compare(from_se(0.0, 0.1, 2, "seeds"), from_se(0.45, 0.1, 2, "seeds")) == "indistinguishable from"
    assert compare(from_se(0.0, 0.0, 1, "seeds"), b) == "undecided (no error estimate)"
    lopsided = difference(from_se(0.0, 1.0, 2, "seeds"), from_se(0.0, 0.01, 50, "seeds"))
    assert lopsided.nu == pytest.approx(1.0, rel=1e-3)  # the noisy side's 1 df dominates


def test_direction_reads_a_difference_by_its_interval():
    from analysis.core.stats import direction

    assert direction(from_se(-1.0, 0.1, 3, "paired seeds")) == "smaller than"
    assert direction(from_se(1.0, 0.1, 3, "paired seeds")) == "larger than"
    assert direction(from_se(0.4, 0.1, 3, "paired seeds")) == "indistinguishable from"  # 4.30 SE = 0.43
    assert direction(from_se(1.0, 0.0, 1, "seeds")) is None


def test_planned_detectable_multiple_is_the_se_multiple_over_root_n():
    # one-sided, 95% and 80% power: 1 df needs 8.19 SE, i.e. 5.79 SD over 2 seeds; 2 df 3.98 SE, 2.30 SD over 3
    assert planned_detectable_multiple(2, sided="one") == pytest.approx(5.7928, abs=1e-3)
    assert planned_detectable_multiple(3, sided="one") == pytest.approx(2.2973, abs=1e-3)
    for n in (2, 3, 5, 30):
        assert planned_detectable_multiple(n) == pytest.approx(detectable_multiple(n - 1) / math.sqrt(n), rel=1e-12)
    big = 10**6  # the normal limit: (z_0.975 + z_0.8) / sqrt(n)
    assert planned_detectable_multiple(big) * math.sqrt(big) == pytest.approx(1.95996 + 0.84162, abs=1e-3)
    for bad in (1, 0, 2.5):
        with pytest.raises(ValueError, match="n must be a whole number >= 2"):
            planned_detectable_multiple(bad)
