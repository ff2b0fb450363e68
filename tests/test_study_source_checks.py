"""The sources' smaller statements: the gradient checks of kexue.fm/archives/9812 and the side checks of the other
sources, each function against a closed form or an independent computation."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.studies.source_checks import bounded_mean_sentence, sci, spread_words, tally_words, verdicts_for
from analysis.studies.source_checks.experiments import scale_gradient_notes as sg
from analysis.studies.source_checks.experiments import source_side_checks as ss
from analysis.theory import softmax_scale as sc


def test_the_jacobian_norm_is_the_sources_objective_and_vanishes_linearly_at_scale_0():
    row = torch.randn(40, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for alpha in (0.3, 1.0, 4.0):
        assert sg.half_l1_jacobian(row, alpha) == pytest.approx(float(sc.gradient_objective(row.numpy(), alpha)),
                                                                rel=1e-12)
    small = sg.half_l1_jacobian(row, 1e-7)
    assert small == pytest.approx(1e-7 * (1 - 1 / 40), rel=1e-5)  # alpha (1 - sum p^2), p uniform


def test_a_tied_top_pair_makes_the_gradient_grow_as_half_the_scale():
    tied = torch.tensor([2.0, 2.0, 0.0, -1.0], dtype=torch.float64)
    for alpha in (100.0, 1000.0):
        assert sg.half_l1_jacobian(tied, alpha) == pytest.approx(alpha / 2, rel=1e-9)
    single = torch.tensor([2.5, 2.0, 0.0, -1.0], dtype=torch.float64)
    assert sg.half_l1_jacobian(single, 1000.0) < 1e-100  # a unique maximum: the gradient vanishes


def test_softmax_entropy_is_exact_and_stable_at_any_scale():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((3, 50))
    p = np.exp(2.0 * s) / np.exp(2.0 * s).sum(-1, keepdims=True)
    assert np.allclose(sg.softmax_entropy(s, 2.0), -(p * np.log(p)).sum(-1), rtol=1e-12)
    assert np.allclose(sg.softmax_entropy(s, 0.0), math.log(50), rtol=1e-14)
    far = sg.softmax_entropy(s, 1e8)
    assert np.all(np.isfinite(far)) and np.all(far < 1e-6)


def test_sampled_cosines_have_the_variance_of_random_directions():
    rng = np.random.default_rng(0)
    s = sg.sample_scores("cosine", 500, 128, 200, rng)
    assert s.var() == pytest.approx(1 / 128, rel=0.02)  # Var cos = 1/d, SE of a variance of 1e5 draws ~0.5%
    with pytest.raises(ValueError, match="kind"):
        sg.sample_scores("uniform", 2, 4, 2, rng)


def test_a_fixed_scale_has_slope_ratio_1_and_the_record_reads_the_entropy_grid():
    cfg = dataclasses.replace(sg.CONFIGS["smoke"], ns=(16, 64, 256))
    e = sg.entropy_slopes("normal", cfg, np.random.default_rng(0))
    assert len(e["ratio"]) == cfg.groups and e["alpha_star"] == sorted(e["alpha_star"])
    assert all(0 < r < 1 for r in e["ratio"])  # alpha* grows with n, so entropy grows more slowly than at a fixed alpha
    assert e["alpha_fixed"] == pytest.approx(float(sc.alpha_star("normal", 64)))


def test_cosine_methods_evaluate_alpha_star_at_their_own_width():
    rows = {m["key"]: m for m in sg.cosine_methods()}
    am = rows["am-softmax"]
    assert am["alpha_star"] == pytest.approx(float(sc.alpha_star("cosine", 10_575, 512)))
    assert am["alpha_star_source_d"] == pytest.approx(float(sc.alpha_star("cosine", 10_575, 128)))
    assert am["alpha_star"] > 1.5 * am["used"]  # the method's width roughly doubles the scale


@pytest.mark.parametrize("field, value", [("n", 1), ("small_alpha", 0.1), ("large_alpha", 5.0), ("ns", (4, 2, 8)),
                                          ("rows", 7), ("cosine_d", 3), ("curve_points", 2)])
def test_the_gradient_config_names_a_bad_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(sg.CONFIGS["smoke"], **{field: value})


def test_relu2_sparsity_ignores_a_scale_but_not_an_offset():
    z = torch.randn(64, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    base = ss.sparsity(ss.relu2_weights(z))
    for c in (0.01, 7.0, 300.0):
        zero, eff = ss.sparsity(ss.relu2_weights(z, c))
        assert zero == base[0] and eff == pytest.approx(base[1], rel=1e-13)
    shifted = ss.sparsity(ss.relu2_weights(z, offset=0.5))
    assert shifted[0] < base[0] - 0.1 and shifted[1] > base[1]
    uniform = ss.sparsity(torch.ones(5, 5, dtype=torch.float64))
    assert uniform == (0.0, pytest.approx(5.0))


def test_truncated_svd_beats_the_non_negative_fit_and_nmf_recovers_a_non_negative_low_rank_matrix():
    gen = torch.Generator().manual_seed(0)
    w, h = torch.rand(20, 2, generator=gen, dtype=torch.float64), torch.rand(2, 20, generator=gen, dtype=torch.float64)
    assert ss.nmf_residual(w @ h, 2, 2000, 2, gen) < 1e-3
    assert ss.svd_residual(w @ h, 2) < 1e-12
    a = torch.softmax(torch.randn(24, 24, generator=gen, dtype=torch.float64), -1)
    assert ss.svd_residual(a, 4) <= ss.nmf_residual(a, 4, 300, 2, gen)


def test_leaky_relu_is_positively_homogeneous_and_gelu_is_not():
    assert ss.homogeneity_gap("leaky_relu") < 4 * ss.EPS64 and ss.homogeneity_gap("relu") < 4 * ss.EPS64
    assert ss.homogeneity_gap("gelu") > 1e-3


def test_k_fold_repetition_is_lossless_for_relu_without_an_attention_scale():
    cfg = ss.CONFIGS["smoke"]
    out = ss.repeat_checks(cfg, torch.Generator().manual_seed(0), k=3)
    assert out["relu"] < 256 * ss.EPS64 and out["gelu"] > 1e-3
    p = {"w": torch.arange(4.0).reshape(2, 2), "b": torch.tensor([1.0, 2.0])}
    wide = ss.repeat_widen(p, 2)
    assert wide["w"].shape == (4, 4) and torch.equal(wide["w"][:2, :2], torch.zeros(2, 2))
    assert wide["b"].tolist() == pytest.approx([1 / math.sqrt(2)] * 2 + [2 / math.sqrt(2)] * 2)


def test_padding_schemes_lossless_and_their_gradients():
    cfg = dataclasses.replace(ss.CONFIGS["smoke"], d=6, hidden=5, new=3, batch=8)
    out = ss.padding_checks(cfg, torch.Generator().manual_seed(0))
    zr, zz, rand = out["zero-rows"], out["zeros"], out["random"]
    assert zr["gap"] < 64 * ss.EPS64 and zz["gap"] < 64 * ss.EPS64 and rand["gap"] > 1e-2
    assert zr["zero_share"] == pytest.approx(0.5) and zr["zero_share_step2"] < 0.5  # d in = d out: half are columns
    assert zz["zero_share"] == 1.0 and zz["spread"] == 0.0 and zz["dropout_spread"] == 0.0 and zz["norm"] == 0.0
    assert rand["spread"] > 0 and rand["dropout_spread"] > 0
    with pytest.raises(ValueError, match="scheme"):
        ss.padded_mlp(cfg, torch.Generator(), "ones")


def test_the_notes_one_hot_entropy_is_the_clips_own():
    for k in (1000, 100_000):
        assert ss.notes_onehot_entropy(k) == pytest.approx((k - 1) * 1e-10 * math.log(1e10), rel=1e-9)


@pytest.mark.parametrize("field, value", [("n", 1), ("scales", (0.5, 2.0)), ("fit_rank", 0), ("nmf_steps", 0),
                                          ("new", 1), ("dropout", 1.0), ("classes", 1)])
def test_the_side_config_names_a_bad_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(ss.CONFIGS["smoke"], **{field: value})


@pytest.fixture(scope="module")
def smoke_claims():
    return ({c.key: c for c in sg.claims(sg.run(sg.CONFIGS["smoke"]), "smoke")},
            {c.key: c for c in ss.claims(ss.run(ss.CONFIGS["smoke"]), "smoke")})


def test_the_claims_decide_from_the_data(smoke_claims):
    grad, side = smoke_claims
    assert len(grad) + len(side) == 17
    assert grad["grad-zero-at-scale-0"].verdict == "holds" and grad["grad-bounded"].verdict == "fails"
    am = grad["cosine-scale-am-softmax"]
    assert am.verdict == "fails" and am.corrected_verdict == "holds"  # 30 against 59.7; at d = 128, 32.1
    assert side["notes-onehot-entropy"].verdict == "fails" and side["notes-onehot-entropy"].corrected_verdict == "holds"
    assert side["zero-rows-gradients"].verdict == "fails" and side["zeros-dropout-breaks"].verdict == "fails"
    assert side["relu2-scale-keeps-sparsity"].verdict == "holds"
    assert side["relu2-only-power-changes-sparsity"].verdict == "fails"
    assert all(c.has_rival for c in [*grad.values(), *side.values()])


def test_prose_helpers_read_the_claims(smoke_claims):
    grad, side = smoke_claims
    named = [("AM-Softmax", grad["cosine-scale-am-softmax"].verdict_text()),
             ("SimCSE", grad["cosine-scale-simcse"].verdict_text())]
    assert verdicts_for(named) == "fails for both"
    words = tally_words([*grad.values(), *side.values()])
    fails = sum(c.verdict == "fails" for c in [*grad.values(), *side.values()])
    assert f"{fails} fail" in words and words.count(" and ") == 1  # holds first, in the box's order


def test_small_and_large_numbers_read_as_powers_of_ten():
    assert sci(1e-6) == "10⁻⁶" and sci(9.98046875e-07) == "9.98 × 10⁻⁷" and sci(2.302585e-4, 5) == "2.3026 × 10⁻⁴"
    assert sci(0.0) == "0" and sci(0.5) == "0.5" and sci(1234.4) == "1,234" and sci(1.5e5) == "1.5 × 10⁵"


def test_verdicts_for_says_each_verdict_once():
    assert verdicts_for([("A", "fails"), ("B", "fails")]) == "fails for both"
    assert verdicts_for([("A", "holds"), ("B", "holds"), ("C", "holds")]) == "holds for all"
    assert verdicts_for([("A", "holds"), ("B", "fails")]) == "holds for A and fails for B"
    assert verdicts_for([("A", "is inconclusive")]) == "is inconclusive for A"


def test_the_bounded_mean_sentence_states_the_limit_with_its_n():
    assert bounded_mean_sentence(3.0441, 512) == (
        "What stays bounded is the mean over continuous scores: as $\\alpha \\to \\infty$ it tends to the "
        "closed-form limit $L_n = 3.044$ at $n = 512$")


def test_spread_words_say_exactly_0_only_for_an_exact_0():
    assert spread_words(0.0) == "exactly 0" and spread_words(0.0123) == "0.012" and spread_words(1e-12) == "1e-12"


def test_the_width_growth_sentence_gives_each_methods_exponent():
    from analysis.studies.source_checks import width_growth_sentence

    methods = [{"name": "A", "d": 512, "alpha_star": 64.0, "alpha_star_source_d": 32.0},
               {"name": "B", "d": 2048, "alpha_star": 40.0, "alpha_star_source_d": 10.0}]
    assert width_growth_sentence(methods, 128) == (
        "From $d = 128$ to each method's width, $\\alpha^*$ grows as $d^p$ with $p$ = $0.50$ for A's $n$ and "
        "$0.50$ for B's $n$, against $1/2$ for $\\sqrt d$")
    with pytest.raises(ValueError, match="d > source_d"):
        width_growth_sentence([dict(methods[0], d=64)], 128)
