import math
import warnings

import numpy as np
import pytest
import torch

from analysis.experiments import softmax_scale_checks as checks
from analysis.experiments import softmax_scale_mc as mc
from analysis.experiments import softmax_scale_train as train
from analysis.theory import softmax_scale as sc


def test_jacobian_identity_entrywise_and_symbolic():
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.standard_normal(int(rng.integers(2, 40)))
        a = float(rng.uniform(0.1, 8))
        p = torch.softmax(torch.tensor(a * s), 0).numpy()
        assert sc.softmax_jacobian_half_l1(s, a) == pytest.approx(a * (1 - (p * p).sum()), rel=1e-12)
        assert float(sc.gradient_objective(s, a)) == pytest.approx(a * (1 - (p * p).sum()), rel=1e-12)
    assert sc.symbolic_jacobian_identity(3) == 0


@pytest.mark.parametrize("n", [2, 3, 10, 491.3833502982981, 1e4, 153958.5946239323, 1e9, 1e12, 1e15])
def test_normal_alpha_star_matches_mpmath_and_solves_stationarity(n):
    a = float(sc.alpha_star_normal(n))
    assert a == pytest.approx(sc.alpha_star_normal_reference(n), rel=1e-13)
    assert (1 + 2 * a * a) * math.exp(a * a) == pytest.approx(n, rel=1e-12)


def test_alpha_in_2_3_range_of_n():
    assert float(sc.alpha_star_normal(sc.n_for_alpha_normal(2.0))) == pytest.approx(2.0, rel=1e-14)
    assert 491 < float(sc.n_for_alpha_normal(2.0)) < 492 and 153_958 < float(sc.n_for_alpha_normal(3.0)) < 153_959


@pytest.mark.parametrize("d", [3, 4, 5, 10, 79, 80, 81, 128, 4096, 65536])
@pytest.mark.parametrize("n", [2, 100, 1e6, 1e12])
def test_cosine_alpha_star_matches_mpmath(n, d):
    assert float(sc.alpha_star_cosine(n, d)) == pytest.approx(sc.alpha_star_cosine_reference(n, d), rel=1e-9)


def test_cosine_solver_is_warning_free_and_vectorised():
    n = np.logspace(np.log10(2), 12, 40)[:, None]
    d = np.array([3, 7, 80, 128, 2**16, 2**20])[None, :]
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        a = sc.alpha_star_cosine(n, d)
    assert a.shape == (40, 6) and np.all(np.isfinite(a)) and np.all(np.diff(a, axis=0) > 0)


def test_mgf_limits_and_density():
    # d = 3: s is uniform on [-1, 1] and E[e^{a s}] = sinh(a)/a
    for a in (1e-3, 0.5, 7.0, 300.0, 1e10):
        assert float(sc.log_mgf_cosine(a, 3)) == pytest.approx(math.log(math.sinh(a) / a) if a < 700 else a - math.log(2 * a), rel=1e-12)
    # large d: E[e^{a s}] -> e^{a^2/(2d)} (Var s = 1/d)
    assert float(sc.log_mgf_cosine(3.0, 65536)) == pytest.approx(9 / (2 * 65536), rel=1e-3)
    from scipy import integrate

    for d in (3, 10, 128):
        total = integrate.quad(lambda x: float(sc.cosine_density(x, d)), -1, 1, epsabs=1e-13, limit=200)[0]
        assert total == pytest.approx(1.0, abs=1e-10)
    assert float(sc.cosine_cdf(0.0, 50)) == pytest.approx(0.5)


def test_large_d_law_and_top_score_location():
    ratios = sc.alpha_star_cosine(1024, [1024, 16384, 262144]) / sc.alpha_star_large_d(1024, [1024, 16384, 262144])
    assert np.all(np.diff(np.abs(ratios - 1)) < 0) and abs(ratios[-1] - 1) < 1e-3
    b = float(sc.top_score_location("normal", 1024))
    assert 0.5 * math.erfc(b / math.sqrt(2)) == pytest.approx(1 / 1024, rel=1e-12)
    bc = float(sc.top_score_location("cosine", 1024, 128))
    assert 1 - float(sc.cosine_cdf(bc, 128)) == pytest.approx(1 / 1024, rel=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sc.alpha_star_normal(1.5), "n must be a number in \\[2"),
        (lambda: sc.alpha_star_normal([]), "n must not be empty"),
        (lambda: sc.alpha_star_cosine(10, 2), "d must be an integer in \\[3"),
        (lambda: sc.alpha_star_cosine(10, 3.5), "d must be an integer"),
        (lambda: sc.mean_field_objective_normal(-1.0, 10), "alpha must be a number in \\[0"),
        (lambda: sc.mean_field_objective_normal(float("nan"), 10), "alpha must be"),
        (lambda: sc.alpha_star("laplace", 10), "scores must be 'normal' or 'cosine'"),
        (lambda: sc.alpha_star("cosine", 10), "d is required"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_checks_smoke_claims():
    data = checks.run(checks.CONFIGS["smoke"])
    verdicts = {c.key.removesuffix("-t"): c for c in checks.claims(data, "t")}
    for key in ("jacobian-identity", "normal-closed-form", "cosine-root", "cosine-density", "cosine-mgf"):
        assert verdicts[key].verdict == "holds", key
    assert verdicts["large-d-direction"].verdict == "fails"
    assert verdicts["large-d-direction"].corrected_verdict in ("holds", "holds approximately")
    assert data["fits"]["normal_own"]["rel_error"] == pytest.approx(0.1249, abs=1e-3)


def test_finite_sample_experiment_smoke():
    data = mc.run(mc.CONFIGS["smoke"])
    for row in data["rows"]:
        # the objective at the mean-field alpha* lies below the finite-sample plateau it is compared with
        assert row["objective_at_mean_field"] < row["plateau_predicted"]
        assert row["alpha_finite_sample"] > row["alpha_mean_field"]
        assert len(row["alpha"]) == len(row["mean"]) == len(row["median"])
    assert {c.key for c in mc.claims(data, "smoke")} >= {"finite-argmax-normal-smoke", "finite-plateau-cosine-smoke"}
    with pytest.raises(ValueError, match="n must be an integer in \\[2, 2\\*\\*20\\]"):
        mc.finite_sample_alpha("normal", 2**21)


def test_training_sweep_smoke():
    data = train.run(train.CONFIGS["smoke"])
    cfg = train.CONFIGS["smoke"]
    assert len(data["runs"]) == len(cfg.lengths) * len(train.variants(cfg)) * len(cfg.seeds)
    for r in data["runs"]:
        assert math.isfinite(r["val_loss"]) and [s for s, _ in r["softmax_gradient"]] == [0, cfg.steps // 2, cfg.steps]
    best, loss, _ = train.best_setting(data, cfg.lengths[0], "dot")
    assert best in cfg.dot_alphas and math.isfinite(loss)
    assert len(train.claims(data, "smoke")) == len(cfg.lengths)
