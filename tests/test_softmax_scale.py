import math
import warnings

import numpy as np
import pytest
import torch

from analysis.studies.softmax_scale.experiments import softmax_scale_checks as checks
from analysis.studies.softmax_scale.experiments import softmax_scale_mc as mc
from analysis.core.runner import run_experiment
from analysis.studies.softmax_scale.experiments import softmax_scale_train as train
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
    verdicts = {c.key: c for c in checks.claims(data, "t")}
    for key in ("jacobian-identity", "normal-closed-form", "cosine-root", "cosine-density", "cosine-mgf"):
        assert verdicts[key].verdict == "holds", key
    # the questioner's scale per unit logit, alpha*/d, falls like 1/sqrt(d - 3); alpha* -> sqrt(d) alpha*_normal
    assert verdicts["large-d-direction"].verdict == "holds" and verdicts["large-d-law"].verdict == "holds"
    assert data["fits"]["normal_own"]["rel_error"] == pytest.approx(0.1249, abs=1e-3)
    # the exact objective rises on the whole grid: its maximiser is the grid's end, not the mean-field alpha*
    assert verdicts["exact-lattice"].verdict == "holds"
    for law in ("normal", "cosine-128", "cosine-64"):
        claim = verdicts[f"exact-maximiser-{law}"]
        assert claim.verdict == "fails" and claim.measured_bound == "≥" and claim.measured == claim.alternative
    # every claim names its rival: the root without its -1/2 and a fixed scale on the cosine among them
    assert all(c.has_rival for c in verdicts.values())
    from scipy.special import lambertw
    w = np.real(lambertw(np.sqrt(np.e) * np.array(checks.MAXIMISER_NS) / 2))
    assert verdicts["normal-closed-form"].alternative == pytest.approx(np.max(np.sqrt(w / (w - 0.5)) - 1), rel=1e-6)
    assert verdicts["large-d-direction"].alternative == -1.0


def _exact_law(curves, limit=1.0, curvature=-0.1):
    return {"law": "normal", "rows": [{"n": 2 + i, "alpha_over_star": [0.5, 1.0, 2.0, 4.0][: len(c)], "objective": c,
                                       "limit": limit, "curvature": curvature} for i, c in enumerate(curves)]}


def test_exact_grid_maximisers_and_the_rise_test():
    rising = _exact_law([[0.2, 0.5, 0.8, 0.9], [0.1, 0.6, 0.7, 0.95]])
    assert checks.exact_grid_maximisers(rising) == [4.0, 4.0] and checks.exact_rises(rising)
    peaked = _exact_law([[0.2, 0.9, 0.8, 0.7]])
    assert checks.exact_grid_maximisers(peaked) == [1.0] and not checks.exact_rises(peaked)
    # a rise below the lattice's error is no rise; a value at or above the limit, or D_n >= 0, is no approach from
    # below
    assert not checks.exact_rises(_exact_law([[0.5, 0.5 + 1e-12, 0.6, 0.7]]))
    assert not checks.exact_rises(_exact_law([[0.2, 0.5, 0.8, 1.0]]))
    assert not checks.exact_rises(_exact_law([[0.2, 0.5, 0.8, 0.9]], curvature=0.1))


def test_finite_sample_experiment_smoke():
    data = run_experiment("softmax-scale-mc", mc.CONFIGS["smoke"])
    for row in data["rows"]:
        # the objective at the mean-field alpha* lies below the finite-sample plateau it is compared with
        assert row["objective_at_mean_field"] < row["plateau_predicted"]
        assert row["alpha_finite_sample"] > row["alpha_mean_field"]
        assert len(row["alpha"]) == len(row["mean"]) == len(row["median"])
    claims = {c.key: c for c in mc.claims(data, "smoke")}
    assert set(claims) >= {"finite-argmax-normal", "finite-plateau-cosine", "exact-vs-monte-carlo"}
    # the exact objective is the Monte Carlo mean; the plateau's corrected prediction is the exact objective there
    assert claims["exact-vs-monte-carlo"].verdict == "holds"
    assert claims["finite-plateau-normal"].corrected < claims["finite-plateau-normal"].predicted
    # every claim names its rival: no finite maximiser (the grid's end), no rise past the mean-field optimum
    assert all(c.has_rival for c in claims.values())
    top = max((r for r in data["rows"] if r["kind"] == "normal"), key=lambda r: r["n"])
    assert claims["finite-argmax-normal"].alternative == max(top["alpha"])
    assert claims["finite-plateau-normal"].alternative == top["objective_at_mean_field"]
    with pytest.raises(ValueError, match="n must be an integer in \\[2, 2\\*\\*20\\]"):
        mc.finite_sample_alpha("normal", 2**21)


def test_training_sweep_smoke():
    data = run_experiment("softmax-scale-train", train.CONFIGS["smoke"])
    cfg = train.CONFIGS["smoke"]
    assert len(data["runs"]) == len(cfg.lengths) * len(train.variants(cfg)) * len(cfg.seeds)
    for r in data["runs"]:
        assert math.isfinite(r["val_loss"]) and [s for s, _ in r["softmax_gradient"]] == [0, cfg.steps // 2, cfg.steps]
    best, loss, _ = train.best_setting(data, cfg.lengths[0], "dot")
    assert best in cfg.dot_alphas and math.isfinite(loss)
    assert len(train.claims(data, "smoke")) == len(cfg.lengths)


def _recall_data(best_by_pairs, seeds=4, noise=0.0):
    """softmax-scale-recall data whose mean loss is a parabola in ln s with its minimum at best_by_pairs[p]."""
    from analysis.studies.softmax_scale.experiments.softmax_scale_recall import _grid

    rng = np.random.default_rng(0)
    runs = []
    for p, best in best_by_pairs.items():
        for s in _grid(12):
            for seed in range(seeds):
                loss = 1.0 + 0.3 * np.log(s / best) ** 2 + noise * rng.standard_normal()
                runs.append({"pairs": p, "scale": s, "seed": seed, "loss": float(loss), "accuracy": 0.5,
                             "diverged_at": None, "curve": [(0, 7.0, 0.0), (50, 2 * float(loss), 0.25),
                                                            (100, float(loss), float(np.exp(-loss)))]})
    predictions = {str(p): {"row_length": p + 2.5, "mean_field": 10.0, "finite_sample": 30.0, "finite_sample_se": 1.0,
                            "log_n": 3.5 * np.log(p + 2.5), "qk_norm": 8.0} for p in best_by_pairs}
    return {"runs": runs, "predictions": predictions, "head_dim": 64, "chance_loss": float(np.log(16))}


def test_recall_best_scale_finds_the_minimum_between_grid_points_and_its_interval_covers_it():
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as rec

    exact = _recall_data({4: 7.0, 64: 20.0})
    noisy = _recall_data({4: 7.0, 64: 20.0}, noise=0.02)
    for p, truth in ((4, 7.0), (64, 20.0)):
        b = rec.best_scale(exact, p)
        # 7 and 20 are not grid points: the parabola through the three points around the minimum finds them
        assert b["best"] == pytest.approx(truth, rel=1e-9) and b["lo"] == pytest.approx(b["hi"]) and not b["at_edge"]
        n = rec.best_scale(noisy, p)
        assert n["best"] == pytest.approx(truth, rel=0.15) and n["hi"] / n["lo"] > 1.01 and n["log_se"] > 0
        # the interval is Student-t over the 4 seeds: 3.18 standard errors of ln s
        assert math.log(n["hi"] / n["best"]) == pytest.approx(3.182 * n["log_se"], rel=1e-3)
    data = noisy
    s = rec.summary(data)
    assert s["growth"]["measured"] == pytest.approx(20 / 7, rel=0.25) and s["growth"]["dof"] == 3
    # the accuracy here is exp(-loss), different at every scale: no tie, its best is the grid point nearest 7
    assert s["rows"][4]["accuracy_lo"] == s["rows"][4]["accuracy_hi"] == pytest.approx(2**2.75, rel=0.2)
    # halfway the loss is the same parabola doubled: the best scale does not move with the budget
    assert [b["step"] for b in rec.by_budget(data, 4)] == [50, 100]
    assert s["rows"][4]["drift"] == pytest.approx(0.0, abs=1e-9) and (s["drift_from"], s["drift_to"]) == (50, 100)
    claims = {c.key: c for c in rec.claims(data, "t")}
    assert set(claims) == {"recall-best-scale-4", "recall-best-scale-64", "recall-best-scale-accuracy-4",
                           "recall-best-scale-accuracy-64", "recall-scale-growth"}
    # the mean-field value 10 lies outside both tight intervals: both fail, and the growth (1x predicted) fails
    assert claims["recall-best-scale-4"].verdict == "fails" and claims["recall-scale-growth"].verdict == "fails"
    assert "over steps 50 to 100 it moved +0.0%" in claims["recall-best-scale-4"].tolerance_basis


def test_recall_accuracy_tie_is_an_interval_and_its_claim_names_the_rival_inside_it():
    """Every seed answers every query at s = 4 to 16: the accuracy claim takes that tie, not its first scale, and
    is inconclusive when a rival rule lies inside it too."""
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as rec

    data = _recall_data({64: 8.0})
    for r in data["runs"]:
        right = 1.0 if 4.0 <= r["scale"] <= 16.0 else 0.99
        r["curve"] = [r["curve"][0], (50, r["curve"][1][1], 0.9), (100, r["curve"][2][1], right)]
    plateau = rec.accuracy_plateau(data, 64)
    assert (plateau["lo"], plateau["hi"], plateau["points"]) == (4.0, 16.0, 5) and plateau["tied_everywhere"]
    assert plateau["centre"] == pytest.approx(8.0) and plateau["error"] == 0.0 and not plateau["at_edge"]
    claim = {c.key: c for c in rec.claims(data, "t")}["recall-best-scale-accuracy-64"]
    # alpha* = 10 lies inside [4, 16]; so does the nearer rival, sqrt(k) = 8
    assert claim.measured == pytest.approx(8.0) and claim.tolerance == pytest.approx(8.0)
    assert claim.alternative == 8.0 and claim.verdict == "inconclusive"
    assert "at each of the 5 grid scales from 4 to 16" in claim.tolerance_basis
    # with the tie narrowed to [4, 5.66] alpha* lies outside it: the claim fails
    for r in data["runs"]:
        if r["scale"] > 6.0:
            r["curve"][-1] = (100, r["curve"][-1][1], 0.99)
    narrow = {c.key: c for c in rec.claims(data, "t")}["recall-best-scale-accuracy-64"]
    assert narrow.verdict == "fails"


def test_recall_best_scale_still_moving_with_the_budget_is_no_verdict():
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as rec

    data = _recall_data({4: 7.0}, noise=0.02)
    # halfway the optimum sat at 3.5, half the final 7: it moved far more than its interval
    for r in data["runs"]:
        step, loss, acc = r["curve"][1]
        r["curve"][1] = (step, 1.0 + 0.3 * np.log(r["scale"] / 3.5) ** 2, acc)
    drift = rec.budget_drift(data, 4)
    assert drift.value == pytest.approx(np.log(2), abs=0.15) and drift.value > drift.half_width()
    claim = {c.key: c for c in rec.claims(data, "t")}["recall-best-scale-4"]
    assert claim.verdict == "inconclusive" and "still moves" in claim.undecided and math.isfinite(claim.detectable)
    assert "still moving with the budget, no verdict" in claim.tolerance_basis


def test_log_claim_fields_take_the_interval_on_the_predictions_side():
    from analysis.core.stats import Estimate
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as rec

    est = Estimate(math.log(4.0), 0.1, 4, "seeds")  # t(3) = 3.182: ln s within ± 0.3182
    up, down = rec.log_claim_fields(est, 10.0, "x"), rec.log_claim_fields(est, 1.0, "x")
    assert up["measured"] == down["measured"] == pytest.approx(4.0)
    assert up["tolerance"] == pytest.approx(4.0 * (math.exp(0.31824) - 1), rel=1e-4)
    assert down["tolerance"] == pytest.approx(4.0 * (1 - math.exp(-0.31824)), rel=1e-4)
    assert up["detectable"] > up["tolerance"] and "3 df" in up["tolerance_basis"]


def test_recall_best_scale_counts_a_diverged_run_as_chance_and_rejects_bad_grids():
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as rec

    data = _recall_data({16: 8.0})
    for r in data["runs"]:
        if r["scale"] == 8.0:
            r["diverged_at"], r["loss"] = 3, float("nan")
    scales, table = rec.loss_table(data, 16)
    assert np.all(table[:, list(scales).index(8.0)] == data["chance_loss"])
    assert rec.best_scale(data, 16)["best"] != pytest.approx(8.0, rel=0.02)
    with pytest.raises(ValueError, match="geometric"):
        rec.Config(**{**rec.CONFIGS["smoke"].__dict__, "scales": (1.0, 2.0, 5.0)})


def test_large_d_limits_extrapolate_in_one_over_d():
    # f(d) = 1 + 3/d + 5/d^2 is extrapolated exactly; a ratio sqrt(d/(d-3)) times that has slope -1/2 of alpha*/d
    # in d - 3 in the limit
    dims = [1024.0, 2048.0, 4096.0, 8192.0]
    f = [1 + 3 / d + 5 / d**2 for d in dims]
    assert checks.richardson(f[-3:], dims[-3:]) == pytest.approx(1.0, abs=1e-12)
    law, direction = checks.large_d_limits(dims, f)
    assert law["limit"] == pytest.approx(1.0, abs=1e-12) and law["tolerance"] == pytest.approx(5e-10)
    assert direction["limit"] == pytest.approx(-0.5, abs=1e-6)
    # a ratio that grows like d^0.1 does not fall like 1/sqrt(d - 3) per unit logit
    assert checks.large_d_limits(dims, [d**0.1 for d in dims])[1]["limit"] == pytest.approx(-0.4, abs=1e-3)
    with pytest.raises(ValueError, match="three values"):
        checks.richardson([1.0, 2.0], [1.0, 2.0])


# --- the exact expected objective ------------------------------------------------------------------------------

EXACT_LAWS = [("normal", None), ("cosine", 128), ("cosine", 64)]


@pytest.mark.parametrize("alpha", [1e-4, 0.3, 1.0, 4.0, 30.0, 400.0, 5e4])
def test_exact_objective_at_n2_matches_the_one_dimensional_mpmath_integral(alpha):
    # n = 2: 1 - sum p^2 = 1 / (2 cosh^2(alpha Delta / 2)) with Delta = s1 - s2 ~ N(0, 2); every regime is crossed
    ref = sc.exact_objective_pair_reference("normal", alpha, digits=25)
    assert float(sc.exact_objective("normal", alpha, 2)) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("d, alpha", [(64, 30.0), (16, 3.0)])
def test_exact_objective_at_n2_for_cosines_matches_mpmath(d, alpha):
    # the slowest reference of the file (a nested mpmath quadrature, a few seconds); d = 16 is the roughest density
    ref = sc.exact_objective_pair_reference("cosine", alpha, d, digits=15)
    assert float(sc.exact_objective("cosine", alpha, 2, d)) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("scores, d", EXACT_LAWS)
@pytest.mark.parametrize("n", [2, 5.5, 64, 16384, 1e6])
def test_exact_limit_matches_mpmath(scores, d, n):
    ref = sc.exact_objective_limit_reference(scores, n, d, digits=20)
    assert float(sc.exact_objective_limit(scores, n, d)) == pytest.approx(ref, rel=1e-11)


def test_exact_limit_and_curvature_at_n2_in_closed_form():
    # normal: L_2 = 2 int phi^2 = 1/sqrt(pi), D_2 = -2 int phi'^2 = -1/(2 sqrt(pi))
    assert float(sc.exact_objective_limit("normal", 2)) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-13)
    assert float(sc.exact_objective_curvature("normal", 2)) == pytest.approx(-0.5 / math.sqrt(math.pi), rel=1e-12)
    # cosine, f = c (1 - s^2)^m: L_2 = 2 c^2 B(1/2, 2m + 1), D_2 = -8 c^2 m^2 B(3/2, 2m - 1)
    from scipy.special import beta

    for d in (16, 64, 128):
        m, c = (d - 3) / 2, 1 / beta(0.5, (d - 1) / 2)
        assert float(sc.exact_objective_limit("cosine", 2, d)) == pytest.approx(2 * c * c * beta(0.5, 2 * m + 1),
                                                                                rel=1e-12)
        assert float(sc.exact_objective_curvature("cosine", 2, d)) == pytest.approx(
            -8 * c * c * m * m * beta(1.5, 2 * m - 1), rel=1e-10)


@pytest.mark.parametrize("scores, d", EXACT_LAWS)
def test_exact_objective_regimes_join_and_approach_the_limit_like_one_over_alpha_squared(scores, d):
    sigma = 1.0 if d is None else 1 / math.sqrt(d)
    for n in (2, 64, 1e6):
        # the small-alpha series and the large-alpha asymptote against the lattice at their switch points
        a0 = 1e-3 / sigma
        assert float(sc._gumbel_lattice(scores, a0, np.array([float(n)]), d)[0]) == pytest.approx(
            float(sc.exact_objective(scores, a0 * (1 - 1e-12), n, d)), rel=1e-10)
        a1 = 2e3 / sc._exact_width(scores, n, d)
        assert float(sc._gumbel_lattice(scores, a1, np.array([float(n)]), d)[0]) == pytest.approx(
            float(sc.exact_objective(scores, a1 * (1 + 1e-12), n, d)), rel=1e-10)
        # (F - L) alpha^2 -> (pi^2/6) D: the next term is O(1/alpha), here about 1/200 of it
        a = 200 / sc._exact_width(scores, n, d)
        gap = (float(sc.exact_objective(scores, a, n, d)) - float(sc.exact_objective_limit(scores, n, d))) * a * a
        assert gap == pytest.approx(math.pi**2 / 6 * float(sc.exact_objective_curvature(scores, n, d)), rel=0.03)
        # alpha -> 0: every p_i -> 1/n
        tiny = 1e-5 / sigma
        assert float(sc.exact_objective(scores, tiny, n, d)) == pytest.approx(tiny * (1 - 1 / n), rel=1e-9)


@pytest.mark.parametrize("scores, d, n", [("normal", None, 16), ("normal", None, 256), ("cosine", 64, 16),
                                          ("cosine", 128, 64)])
def test_exact_objective_agrees_with_monte_carlo(scores, d, n):
    # plain Monte Carlo of alpha (1 - sum p^2) over 20,000 rows; 4.5 standard errors leave a 1e-5 false-alarm rate
    # per point
    rng = np.random.default_rng(1)
    rows = 20_000
    s = rng.standard_normal((rows, n)) if scores == "normal" else 2 * rng.beta((d - 1) / 2, (d - 1) / 2, (rows, n)) - 1
    star = float(sc.alpha_star(scores, n, d))
    for a in (0.5 * star, star, 3 * star, 10 * star):
        values = sc.gradient_objective(s, a)
        mean, se = values.mean(), values.std(ddof=1) / math.sqrt(rows)
        assert abs(float(sc.exact_objective(scores, a, n, d)) - mean) < 4.5 * se


def test_exact_objective_rises_to_its_limit_without_a_maximum():
    for scores, d in EXACT_LAWS:
        n = np.array([2, 16, 256, 4096])
        star = sc.alpha_star(scores, n, d)
        grid = np.geomspace(0.1, 1000, 60)[:, None] * star[None, :]
        f = sc.exact_objective(scores, grid, n[None, :], d)
        assert np.all(np.diff(f, axis=0) > 0)
        assert np.all(f < sc.exact_objective_limit(scores, n, d)[None, :])


def test_exact_objective_is_vectorised_and_warning_free():
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        f = sc.exact_objective("cosine", np.array([[1e-6], [3.0], [300.0], [1e7]]), np.array([[2.0, 7.5, 1e6]]), 64)
    assert f.shape == (4, 3) and np.all(np.isfinite(f)) and np.all(f > 0)
    assert sc.exact_objective("normal", 2.0, 16).shape == ()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sc.exact_objective("normal", 0.0, 16), "alpha must be a finite number > 0"),
        (lambda: sc.exact_objective("normal", float("inf"), 16), "alpha must be a finite number > 0"),
        (lambda: sc.exact_objective("normal", 1.0, 1.5), "n must be a number in \\[2, 1e\\+06\\]"),
        (lambda: sc.exact_objective("normal", 1.0, 2e6), "n must be a number in \\[2, 1e\\+06\\]"),
        (lambda: sc.exact_objective("cosine", 1.0, 16, 8), "d must be an integer in \\[16"),
        (lambda: sc.exact_objective("cosine", 1.0, 16), "d is required"),
        (lambda: sc.exact_objective_limit("laplace", 16), "scores must be 'normal' or 'cosine'"),
        (lambda: sc.exact_objective_pair_reference("normal", -1.0), "alpha must be a finite number > 0"),
    ],
)
def test_exact_objective_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_exact_alpha_at_share_solves_for_the_share_of_the_limit():
    for scores, d in EXACT_LAWS:
        for n in (2, 100.5, 16384):
            lim = float(sc.exact_objective_limit(scores, n, d))
            for q in (0.5, 0.9, 0.99):
                a = sc.exact_alpha_at_share(scores, q, n, d)
                assert float(sc.exact_objective(scores, a, n, d)) == pytest.approx(q * lim, rel=1e-10)
    with pytest.raises(ValueError, match="share must be a number in \\(0, 1\\)"):
        sc.exact_alpha_at_share("normal", 1.0, 16)


def test_exact_against_mc_measures_distances_in_standard_errors():
    n, star = 16, float(sc.alpha_star_normal(16))
    alpha = star * np.array([0.5, 1.0, 2.0, 4.0])
    exact = sc.exact_objective("normal", alpha, n)
    h = float(sc.finite_sample_plateau("normal", n))
    at = [float(sc.exact_objective("normal", a, n)) for a in (star, 4 * h)]
    row = {"kind": "normal", "n": n, "alpha": alpha.tolist(), "mean": exact.tolist(), "mean_se": [0.01] * 4,
           "alpha_mean_field": star, "plateau_predicted": h, "objective_at_mean_field": at[0],
           "objective_at_mean_field_se": 0.01, "plateau_measured": at[1] + 0.03, "plateau_measured_se": 0.01}
    got = mc.exact_against_mc({"reps": 400, "d": 128, "rows": [row]})
    # every 4th grid point (one here), alpha* and 4h: the last lies 3 standard errors off
    assert got["points"] == 3 and got["max_z"] == pytest.approx(3.0)
    assert got["worst"] == {"kind": "normal", "n": 16, "alpha_over_star": pytest.approx(4 * h / star)}
    mf = float(sc.mean_field_objective_normal(star, n))
    assert got["rival_min_z"] == pytest.approx(abs(mf - at[0]) / 0.01)
    # two-sided 95% shared by 3 points: the t(399) quantile at 1 - 0.025/3
    from scipy import stats

    assert got["critical"] == pytest.approx(stats.t.ppf(1 - 0.025 / 3, 399), rel=1e-9)
    assert got["detectable"] == pytest.approx(got["critical"] + stats.t.ppf(0.8, 399), rel=1e-9)


def test_published_scale_factors():
    # QK-norm: log2 of the L^2 - L off-diagonal entries; L = 8 gives log2(56)
    assert float(sc.qknorm_initial_scale(8)) == pytest.approx(math.log2(56), rel=1e-15)
    assert float(sc.qknorm_initial_scale(1e15)) == pytest.approx(2 * math.log2(1e15), rel=1e-15)
    # GAU-alpha: log n / log 512 with n floored at 16; 1 at n = 512, as the entropy-invariant factor
    assert float(sc.gau_alpha_factor(6.5)) == float(sc.gau_alpha_factor(16)) == pytest.approx(4 / 9, rel=1e-15)
    assert float(sc.gau_alpha_factor(512)) == pytest.approx(1.0) == float(sc.entropy_invariant_scale(512))
    assert float(sc.log_length_factor(math.e**3)) == pytest.approx(3.0)
    for g in (1.0, 10.0, 30.0):
        assert float(sc.qknorm_initial_scale(sc.qknorm_length_for_scale(g))) == pytest.approx(g, rel=1e-13)
    with pytest.raises(ValueError, match="length must be a number in \\[2"):
        sc.qknorm_initial_scale(1)
