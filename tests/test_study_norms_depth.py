"""The normalisation chapter's decisions, on small hand-made inputs."""

import math

import pytest

from analysis.core.stats import Estimate
from analysis.core.verify import Claim
from analysis.studies import norms_depth as st
from analysis.studies.norms_depth.experiments import norms_depth as nd

DECODING = [
    {"label": "post-norm Transformer, LayerNorm", "per_token": True, "gap": 3e-16},
    {"label": "pre-norm Transformer, RMSNorm", "per_token": True, "gap": 1.1e-15},
    {"label": "post-norm Transformer, norm over positions", "per_token": False, "gap": 0.912},
    {"label": "post-norm Transformer, BatchNorm (training mode)", "per_token": False, "gap": 0.5512},
]


def test_decoding_facts_take_the_worst_per_token_gap_and_find_the_mixing_norms_by_label():
    f = st.decoding_facts(DECODING)
    assert f == {"dec_worst": "1.1e-15", "dec_count": "2", "dec_seq": "0.91", "dec_bn": "0.55"}


def test_the_worst_gap_ignores_the_mixing_norms():
    rows = [dict(r, gap=r["gap"] * 10) if not r["per_token"] else r for r in DECODING]
    assert st.decoding_facts(rows)["dec_worst"] == "1.1e-15"


def test_gap_of_takes_the_first_matching_label_and_refuses_a_missing_one():
    rows = DECODING + [{"label": "another BatchNorm", "per_token": False, "gap": 9.0}]
    assert st.gap_of(rows, "BatchNorm") == 0.5512
    with pytest.raises(ValueError, match="GroupNorm"):
        st.gap_of(rows, "GroupNorm")


def test_decoding_table_is_one_padded_line_per_model_in_a_text_block():
    text = st.decoding_table(DECODING[:2]).data
    lines = text.splitlines()
    assert lines[0] == "```text" and lines[-1] == "```" and len(lines) == 5
    width = max(len(r["label"]) for r in DECODING[:2])
    assert lines[1] == f"{'model':{width}s}  max relative gap"
    assert lines[2] == f"{'post-norm Transformer, LayerNorm':{width}s}  3.00e-16"


def test_norm_facts_take_the_larger_implementation_gap():
    ex = {"printed_error": 4.8e-5, "gap_1234_2345": 0.0, "gap_1234_2468": 4.05e-6, "gap_1234_2468_predicted": 4.02e-6,
          "rms_versions": {"standard x / RMS(x)": [[0.36514, 1.0]], "notes (x - mean) / RMS(x)": [[-0.5, 0.5]],
                           "LayerNorm": [[-1.34164, 1.34164]]},
          "rms_gap_to_standard": {"quoted Llama code": 2e-8, "torch.nn.RMSNorm": 1.1e-7,
                                  "notes (x - mean) / RMS(x)": 0.951}}
    f = st.norm_facts(ex)
    assert f["rms_code_gap"] == "1.1e-07" and f["rms_notes_gap"] == "0.95" and f["ln_gap_shift"] == "0"
    assert f["rms_std"] == "0.3651, 1.0000" and f["rms_ln"] == "-1.3416, 1.3416"
    ex["rms_gap_to_standard"]["quoted Llama code"] = 3e-6
    assert st.norm_facts(ex)["rms_code_gap"] == "3.0e-06"


def test_table_cell_formats_floats_only():
    assert st.table_cell(6) == "<td>6</td>"
    assert st.table_cell(1.86121) == "<td>1.861</td>"


def test_deepnorm_rows_follow_the_closed_forms():
    n, alpha, beta, enc_a, enc_b, dec_a, dec_b = st.deepnorm_row(6)
    assert n == 6 and alpha == pytest.approx(12**0.25) and beta == pytest.approx(48**-0.25)
    assert enc_a * enc_b == pytest.approx(0.81 * 0.87) and dec_a == pytest.approx(18**0.25)
    assert dec_b == pytest.approx(72**-0.25)


def test_deepnorm_table_has_a_row_per_depth_and_the_books_table_style():
    html = st.deepnorm_table((6, 1000)).data
    assert html.count("<tr>") == 3 and html.startswith("<style>") and "<td>1000</td>" in html
    assert f"<td>{2000 ** 0.25:.3f}</td>" in html
    # seven columns of numbers: on a phone the table scrolls in its own box
    assert '<div style="overflow-x: auto"><table' in html and html.endswith("</table></div>")


def test_mean_text_with_and_without_sign():
    assert st.mean_text((0.514, 0.0612)) == "0.51 ± 0.06"
    assert st.mean_text((0.6334, 0.0791), signed=True, digits=3) == "+0.633 ± 0.079"
    assert st.mean_text((-0.01, 0.002), signed=True, digits=3) == "-0.010 ± 0.002"


def _depth_rows() -> list[dict]:
    """Updates growing like depth^slope: post 0.5, pre 0.25, DeepNorm 0.5 at a tenth of post-norm's size."""
    rows = []
    for depth in (2, 8, 32):
        for seed, wobble in ((0, 1.0), (1, 1.0)):
            for res, (c, k) in {"post": (1.0, 0.5), "pre": (0.5, 0.25), "deepnorm": (0.1, 0.5)}.items():
                rows.append({"depth": depth, "residual": res, "seed": seed, "model_update": c * wobble * depth**k})
    return rows


def test_depth_facts_use_the_smallest_and_largest_depth():
    f = st.depth_facts(_depth_rows())
    assert f["depth_range"] == "2 to 32" and f["dmin"] == "2" and f["dmax"] == "32"
    assert f["slope_post"] == "0.50, the same in every seed" and f["slope_pre"] == "0.25, the same in every seed"
    assert f["mu_post_max"] == f"{32**0.5:.2f}" and f["mu_dn_max"] == f"{0.1 * 32**0.5:.3f}"
    assert f["dn_ratio"] == "10.0" and f["dn_ratio_lo"] == "10.0"


def test_mean_at_averages_seeds():
    rows = [{"depth": 4, "residual": "post", "model_update": v} for v in (1.0, 3.0)]
    assert st.mean_at(rows, "post", 4) == 2.0


def test_stream_facts_format_both_arrangements_and_the_paired_differences():
    s = {"gmax": 8, "sublayers": 16, "pen2_diff": Estimate(0.05, 0.1, 2, "paired seeds"),
         "penmax_diff": Estimate(-0.539, 0.169, 2, "paired seeds"), "pen2_share_of_loss": 0.3397,
         "pre": {"loss1": 1.8634, "pen2": (0.6334, 0.0791), "penmax": (1.363, 0.057), "cosine": 0.978,
                 "norm_growth": 5.61},
         "post": {"loss1": 1.823, "pen2": (0.583, 0.021), "penmax": (1.902, 0.112), "cosine": 0.873,
                  "norm_growth": 1.2}}
    f = st.stream_facts(s)
    assert f["pen2_pre"] == "+0.633 ± 0.079" and f["cos_post"] == "0.873" and f["norm_growth_post"] == "1.2"
    assert f["pen_frac"] == "34%" and f["gmax"] == "8" and f["n_sub"] == "16"
    assert f["penmax_diff"] == "-0.54 ± 0.17 (SE over 2 paired seeds, 95% interval ± 2.15)"
    assert f["n_seeds"] == "2" and f["pair_df"] == "1 degree of freedom"
    assert len(f) == 16


def test_interval_text_uses_the_t_quantile_of_the_units_and_refuses_to_invent_an_error():
    assert st.interval_text(Estimate(0.1, 0.01, 3, "seeds")) == "+0.10 ± 0.01 (SE over 3 seeds, 95% interval ± 0.04)"
    assert st.interval_text(Estimate(0.1, 0.0, 1, "seeds")) == "+0.10 (one seed: no error estimate)"
    assert st.dof_text(Estimate(0.0, 1.0, 3, "seeds")) == "2 degrees of freedom"
    assert st.estimate_text(Estimate(0.514, 0.0612, 3, "seeds")) == "0.51 ± 0.06"


def test_estimate_text_shows_the_first_digit_of_a_small_error_and_says_when_there_is_none():
    # DeepNorm's recorded slope: an SE of 0.0021 at two decimals would print as 0.00
    assert st.estimate_text(Estimate(0.5254, 0.0021, 3, "seeds")) == "0.525 ± 0.002"
    assert st.estimate_text(Estimate(0.5, 0.0, 3, "seeds")) == "0.50, the same in every seed"
    assert st.estimate_text(Estimate(0.5, 0.0, 1, "seeds")) == "0.50 (one seed: no error estimate)"


def _claim(key: str, measured: float, tolerance: float, kind: str = "upper_bound", **kw) -> Claim:
    """A claim predicting 0 with no sampling error, as the decoding and LayerNorm claims are."""
    return Claim(key, "a statement", "DL——Transformer study notes", 0.0, measured, 0.0, tolerance, "rounding",
                 kind=kind, **kw)


def test_decoding_sentences_read_both_verdicts():
    leaks = Claim("mixing", "a statement", "the notes", 2.2e-13, 0.5512, 0.0, 0.0, "rounding", kind="lower_bound")
    ok = _claim("incremental", 1.1e-15, 2.2e-13)
    assert st.decoding_sentences(DECODING, ok, leaks) == (
        "Across the 2 per-token models, the largest gap between incremental and full decoding is 1.1e-15 of the "
        "largest logit, float64 rounding: the claim that they decode incrementally holds. A norm over positions "
        "changes earlier outputs by 0.91, and training-mode BatchNorm by 0.55: the claim that they leak holds.")
    bad = _claim("incremental", 1e-9, 2.2e-13)
    assert ("is 1.1e-15 of the largest logit, more than float64 rounding: the claim that they decode incrementally "
            "fails.") in st.decoding_sentences(DECODING, bad, leaks)
    unsure = _claim("incremental", 1e-15, 2.2e-13, alternative=1e-14, alternative_note="a rival within rounding")
    assert "of the largest logit: the claim that they decode incrementally is inconclusive." in (
        st.decoding_sentences(DECODING, unsure, leaks))
    no_leak = Claim("mixing", "a statement", "the notes", 2.2e-13, 1e-16, 0.0, 0.0, "rounding", kind="lower_bound")
    assert st.decoding_sentences(DECODING, ok, no_leak).endswith("the claim that they leak fails.")


def test_scale_words_follow_the_corrected_verdict_when_invariance_fails():
    claim = _claim("ln-scale", 4.05e-6, 1e-6, corrected=4.02e-6, corrected_note="epsilon")
    assert st.scale_words(claim) == (
        "changes the output by 4.05e-06, as the float64 closed form with ε predicts: 4.02e-06")
    off = _claim("ln-scale", 4.05e-6, 1e-6, corrected=1e-6, corrected_note="epsilon")
    assert st.scale_words(off) == ("changes the output by 4.05e-06, which the float64 closed form with ε, 1.00e-06, "
                                   "does not explain")
    # the corrected prediction passes, and so does an alternative as far from it as the tolerance allows
    unsure = _claim("ln-scale", 4.05e-6, 1e-6, corrected=4.02e-6, corrected_note="epsilon", alternative=4.5e-6,
                    alternative_note="a rival")
    assert unsure.corrected_verdict == "inconclusive"
    assert st.scale_words(unsure).endswith("the run cannot tell whether ε accounts for it")
    assert st.scale_words(_claim("ln-scale", 4.05e-6, 1e-6)) == "changes the output by 4.05e-06"
    same = _claim("ln-scale", 2e-7, 1e-6, corrected=4.02e-6, corrected_note="epsilon")
    assert st.scale_words(same) == (
        "changes the output by 2.00e-07, and the claim that it leaves the output unchanged holds")


def test_printed_sentence_reads_the_verdict_of_ln_printed():
    assert st.printed_sentence(_claim("ln-printed", 4.79e-5, 5e-5)) == (
        "The outputs the notes print match torch to 4.8e-05, within 5e-05, half a unit of their fourth decimal.")
    assert st.printed_sentence(_claim("ln-printed", 5.2e-5, 5e-5)) == (
        "The outputs the notes print differ from torch by 5.2e-05, more than 5e-05, half a unit of their fourth "
        "decimal.")
    unsure = _claim("ln-printed", 1e-5, 5e-5, alternative=2e-5, alternative_note="the unbiased variance")
    assert st.printed_sentence(unsure) == (
        "The outputs the notes print differ from torch by 1.0e-05, and the claim that they match is inconclusive: "
        "the alternative, the unbiased variance, fits as well.")


def _trained(pen: dict[str, list[float]], cos: dict[str, list[float]]) -> dict:
    """Trained rows whose loss rises by pen[residual][seed] at g = 8 (half of it at g = 2) and whose stream cosines
    are all cos[residual][seed]."""
    rows = []
    for res in ("pre", "post"):
        for seed, (p, c) in enumerate(zip(pen[res], cos[res])):
            rows.append({"residual": res, "seed": seed,
                         "trained": {"loss": {"1": 1.8, "2": 1.8 + p / 2, "8": 1.8 + p}, "cosines": [c] * 4,
                                     "norms": [1.0, 1.0, 2.0]}})
    return {"trained": rows, "layers": 2}


def test_penalty_difference_pairs_by_seed():
    data = _trained({"pre": [1.0, 2.0, 3.0], "post": [1.5, 2.5, 3.5]}, {"pre": [0.9] * 3, "post": [0.8] * 3})
    est = nd.penalty_difference(data, 8)
    # the seeds differ a lot, the pairs not at all: paired, the difference is exact
    assert est.value == pytest.approx(-0.5) and est.se == pytest.approx(0.0) and est.n == 3
    assert est.units == "paired seeds"
    summ = nd.summary(data)
    assert summ["penmax_diff"].value == pytest.approx(-0.5) and summ["pen2_diff"].value == pytest.approx(-0.25)


def test_grouping_claims_are_directional_and_need_the_whole_interval_below_zero():
    cos = {"pre": [0.95, 0.96, 0.97], "post": [0.85, 0.87, 0.86]}
    shown = {c.key: c for c in nd_claims(_trained({"pre": [1.0, 1.1, 1.2], "post": [2.0, 2.1, 2.2]}, cos))}
    assert shown["prenorm-groups-cheaper"].verdict == "holds" and shown["prenorm-groups-cheaper"].kind == "below"
    assert shown["prenorm-cosine"].verdict == "holds" and shown["prenorm-cosine"].kind == "above"
    noisy = {c.key: c for c in nd_claims(_trained({"pre": [1.0, 2.5, 1.2], "post": [2.0, 2.1, 2.2]}, cos))}
    assert noisy["prenorm-groups-cheaper"].verdict == "inconclusive"
    assert math.isfinite(noisy["prenorm-groups-cheaper"].detectable)
    worse = {c.key: c for c in nd_claims(_trained({"pre": [3.0, 3.1, 3.2], "post": [2.0, 2.1, 2.2]}, cos))}
    assert worse["prenorm-groups-cheaper"].verdict == "fails"
    assert "paired seeds (2 df)" in worse["prenorm-groups-cheaper"].tolerance_basis


def nd_claims(trained: dict) -> list:
    """The trained claims of norms-depth on ``trained`` rows, with decoding, norm and depth parts that pass."""
    data = dict(trained, decoding=DECODING,
                norms={"printed_error": 0.0, "gap_1234_2468": 0.0, "gap_1234_2468_predicted": 0.0,
                       "inputs": [[1.0, 2.0, 3.0, 4.0]], "layernorm_float64": [[-1.3416, -0.4472, 0.4472, 1.3416]],
                       "rms_gap_to_standard": {"notes (x - mean) / RMS(x)": 0.9, "quoted Llama code": 0.0,
                                               "torch.nn.RMSNorm": 0.0, "book's RMSNorm": 0.0}},
                depth=_depth_rows())
    return [c for c in nd.claims(data, "test") if c.key.startswith("prenorm")]


def test_seed_slopes_fit_each_seed_and_the_estimate_is_over_seeds():
    rows = [dict(r, model_update=r["model_update"] * (r["depth"] ** 0.1 if r["seed"] else 1.0))
            for r in _depth_rows()]
    assert nd.seed_slopes(rows, "post") == pytest.approx([0.5, 0.6])
    est = nd.slope_estimate(rows, "post")
    assert est.value == pytest.approx(0.55) and est.se == pytest.approx(0.05) and est.units == "seeds"
    claims = {c.key: c for c in nd.claims(dict(_trained({"pre": [1.0] * 2, "post": [2.0] * 2},
                                                         {"pre": [0.9] * 2, "post": [0.8] * 2}),
                                                decoding=DECODING, depth=rows,
                                                norms={"printed_error": 0.0, "gap_1234_2468": 0.0,
                                                       "inputs": [[1.0, 2.0, 3.0, 4.0]],
                                                       "layernorm_float64": [[-1.3416, -0.4472, 0.4472, 1.3416]],
                                                       "gap_1234_2468_predicted": 0.0,
                                                       "rms_gap_to_standard": {"notes (x - mean) / RMS(x)": 0.9,
                                                                               "quoted Llama code": 0.0,
                                                                               "torch.nn.RMSNorm": 0.0,
                                                                               "book's RMSNorm": 0.0}}), "test")}
    # DeepNorm grows like depth^0.5 in every seed: the bound of slope 0 fails; its update is below post-norm's
    assert claims["deepnorm-bounded"].verdict == "fails" and claims["deepnorm-bounded"].corrected is None
    # paired by seed over 2 seeds (1 df), post-norm's spread of 5.7 to 8.0 leaves the direction unresolved
    assert claims["deepnorm-below-post"].kind == "below" and claims["deepnorm-below-post"].measured < 0
    assert claims["deepnorm-below-post"].verdict == "inconclusive"


def test_two_verdicts_read_once_when_they_agree():
    from analysis.studies.norms_depth import two_verdicts

    assert two_verdicts("inconclusive", "inconclusive", 8) == "is inconclusive for pairs and for groups of 8"
    assert two_verdicts("holds", "inconclusive", 8) == "holds for pairs and is inconclusive for groups of 8"


def test_every_claim_of_a_smoke_run_names_its_rival():
    from analysis.core.runner import run_experiment

    data = run_experiment("norms-depth", nd.CONFIGS["smoke"])
    claims = {c.key: c for c in nd.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values())
    # the unbiased variance scales LayerNorm by sqrt(3/4); largest at 200 in [200, 3, 4, 5], 147 / sqrt(7203.5)
    assert claims["ln-printed"].alternative == pytest.approx(147 / math.sqrt(7203.5) * (1 - math.sqrt(0.75)), rel=1e-6)
    # (x - mean)/RMS(x) - x/RMS(x) = -mean/RMS(x), largest for [2, 3, 4, 5]: 3.5 / sqrt(13.5)
    assert claims["rmsnorm-notes"].alternative == pytest.approx(3.5 / math.sqrt(13.5))
    assert claims["rmsnorm-code"].alternative == claims["rmsnorm-notes"].measured


def test_bounded_growth_says_it_grows_only_when_the_bound_fails():
    from types import SimpleNamespace

    failed = SimpleNamespace(verdict="fails", measured=0.5254, alternative=0.5076)
    assert st.bounded_growth(failed) == "it still grows, at a slope of 0.53 against post-norm's 0.51"
    held = SimpleNamespace(verdict="holds", measured=0.004, alternative=0.5076)
    assert st.bounded_growth(held) == "it has a slope of 0.00 against post-norm's 0.51"
    unsure = SimpleNamespace(verdict="inconclusive", measured=0.03, alternative=0.5076)
    assert st.bounded_growth(unsure) == "it has a slope of 0.03 against post-norm's 0.51"


def _init_rows(values: dict[str, list[float]]) -> list[dict]:
    """Depth rows at depths 2, 8, 32 with ``update_init`` values[residual][i] at depth i (two equal seeds)."""
    return [{"depth": depth, "residual": res, "seed": seed, "update_init": v, "model_update": 1.0}
            for res, vals in values.items() for depth, v in zip((2, 8, 32), vals) for seed in (0, 1)]


def test_init_update_text_says_falls_only_where_every_step_falls():
    falling = {"post": [3.25, 1.1, 0.6], "pre": [1.9, 0.7, 0.21], "deepnorm": [2.97, 0.74, 0.097]}
    assert st.init_update_text(_init_rows(falling)) == (
        "falls with depth in every arrangement: from depth 2 to depth 32 it goes from 3.25 to 0.6 for post-norm, "
        "1.9 to 0.21 for pre-norm and 2.97 to 0.097 for DeepNorm")
    bumpy = dict(falling, deepnorm=[2.97, 3.1, 0.097])
    assert st.init_update_text(_init_rows(bumpy)).startswith(
        "falls with depth for post-norm and pre-norm, but not from each depth to the next for DeepNorm: from depth 2")
    rising = {res: [1.0, 2.0, 3.0] for res in falling}
    assert st.init_update_text(_init_rows(rising)).startswith(
        "does not fall from each depth to the next in any arrangement: from depth 2 to depth 32 it goes from 1 to 3")


def test_constancy_text_compares_post_norm_growth_with_pre_norm():
    quote = '"post-norm keeps the trunk\'s variance constant"'
    assert st.constancy_text(1.18, 5.55) == f"nearer the constant norm that {quote} describes than pre-norm's"
    assert st.constancy_text(0.9, 1.05) == f"no nearer the constant norm that {quote} describes than pre-norm's"


def test_pair_cost_sentence_reads_the_one_sided_lower_bounds():
    pre, post = Estimate(0.633, 0.079, 2, "seeds"), Estimate(0.583, 0.021, 2, "seeds")
    assert st.pair_cost_sentence({"pre": pre, "post": post}) == (
        "Yet running pairs side by side is not free: in both arrangements the loss rises, with a one-sided 95% lower "
        "bound over 2 seeds above 0.")
    noisy = Estimate(0.633, 0.2, 2, "seeds")  # 6.31 SE below the mean is below 0
    assert st.pair_cost_sentence({"pre": noisy, "post": post}) == (
        "Running pairs side by side raises the loss resolvably only for post-norm: only there is its one-sided 95% "
        "lower bound over 2 seeds above 0.")
    assert st.pair_cost_sentence({"pre": noisy, "post": Estimate(-0.1, 0.05, 2, "seeds")}) == (
        "Running pairs side by side raises the loss by no amount resolved from 0: in neither arrangement is its "
        "one-sided 95% lower bound over 2 seeds above 0.")
    one = Estimate(0.6, 0.0, 1, "seeds")
    assert st.pair_cost_sentence({"pre": one, "post": one}) == (
        "With one seed, no cost of running pairs side by side can be resolved from 0.")


def test_the_growth_sentence_says_which_way_the_pre_norm_stream_moves():
    assert st.growth_sentence(5.6) == "Its stream norm grows 5.6-fold from the first sublayer to the last."
    assert st.growth_sentence(0.8) == "Its stream norm falls to 0.80 of the first sublayer's by the last."
    assert st.growth_sentence(1.04) == "Its stream norm stays within 5% from the first sublayer to the last."
    with pytest.raises(ValueError, match="growth"):
        st.growth_sentence(0.0)
