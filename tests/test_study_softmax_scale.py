"""The softmax-scale chapter's decisions and sentences, on small hand-made data whose answers are known."""

import math
from types import SimpleNamespace

import pytest

from analysis.studies.softmax_scale import prose as pr


def _mc_row(kind, n, **values):
    row = {"kind": kind, "n": n, "alpha_mean_field": 1.0, "alpha_finite_sample": 3.0, "alpha_finite_sample_se": 0.5,
           "objective_at_mean_field": 1.0, "plateau_predicted": 2.0, "plateau_measured": 1.9,
           "plateau_measured_se": 0.1}
    return {**row, **values}


def _recall_summary(growth=None, **rows):
    """A summary of softmax-scale-recall at 4 and 64 pairs; ``rows`` replaces fields of the row of 64 pairs."""
    base = {"row_length": 6.5, "best": 5.0, "lo": 4.0, "hi": 6.0, "accuracy_lo": 2.83, "accuracy_hi": 8.0,
            "accuracy_centre": 4.76,
            "accuracy_points": 4, "accuracy_error": 0.0, "accuracy_tied": True, "accuracy_half_points": 1,
            "accuracy_half_tied": False, "drift": 0.014, "mean_field": 7.69, "finite_sample": 23.0, "log_n": 6.55,
            "qk_norm": 8.0}
    top = {**base, "row_length": 66.5, "best": 8.0, "lo": 7.0, "hi": 10.0, "accuracy_lo": 4.0, "accuracy_hi": 22.6,
           "accuracy_centre": 9.51,
           "accuracy_points": 6, "accuracy_half_points": 2, "accuracy_half_tied": True, "drift": -0.02,
           "mean_field": 8.0, "finite_sample": 41.6, "log_n": 14.7, **rows}
    g = {"measured": 1.6, "log_se": 0.05, "mean_field": 1.76, "finite_sample": 1.81, "log_n": 2.24, "qk_norm": 1.0,
         "from": 4, "to": 64, **(growth or {})}
    return {"pairs": [4, 64], "rows": {4: base, 64: top}, "growth": g}


def _train_data():
    """Two lengths (listed out of order). At L = 16 alpha = 1 is best (1.9), 0.5 is within two standard errors
    (2.2, se 0.2), 2 is not (3.0); at L = 64 only alpha = 4 was run."""
    def run(ctx, kind, value, loss, learned=False, final_scale=None, seed=0):
        return {"ctx": ctx, "kind": kind, "value": value, "val_loss": loss, "learned": learned, "seed": seed,
                "final_scale": value if final_scale is None else final_scale}

    runs = [run(64, "dot", 4.0, 2.5), run(64, "cosine", 8.0, 2.6, learned=True, final_scale=7.77)]
    runs += [run(16, "dot", v, loss, seed=seed) for v, losses in ((0.5, (2.0, 2.4)), (1.0, (1.9, 1.9)),
                                                                   (2.0, (3.0, 3.0))) for seed, loss in enumerate(losses)]
    runs += [run(16, "cosine", 4.0, 1.0), run(16, "cosine", 8.0, 2.0, learned=True, final_scale=8.04),
             run(16, "cosine", 8.0, 2.0, learned=True, final_scale=8.31)]
    return {"runs": runs, "predictions": {"16": {"dot_alpha_mean_field": 1.19}, "64": {"dot_alpha_mean_field": 1.55}}}


def test_text_block_fences_plain_text():
    from analysis.studies.text import text_block

    assert text_block("a\nb") == "```text\na\nb\n```"


def test_jacobian_checks_states_both_checks():
    text = pr.jacobian_checks(0, {"trials": 200, "max_rel_diff": 1.6e-8})
    assert text == "sympy, n = 3: 0\nautograd, 200 random (n, alpha, s): largest relative gap 1.6e-08"


def test_range_against_source_is_signed_per_end():
    # 25 / 20 - 1 = +25%, 35 / 40 - 1 = -12.5% (rounded half to even)
    assert pr.range_against_source(20.0, 40.0) == "+25% and -12%"
    assert pr.range_against_source(25.0, 35.0) == "+0% and +0%"
    assert pr.range_against_source(10.0, 70.0, source=(20.0, 35.0)) == "+100% and -50%"


def test_shown_lengths_are_the_extreme_n_over_both_kinds():
    rows = [_mc_row("normal", 256), _mc_row("cosine", 16), _mc_row("normal", 64), _mc_row("cosine", 4096)]
    assert pr.shown_lengths(rows) == (16, 4096)
    assert pr.shown_lengths([_mc_row("normal", 64)]) == (64, 64)
    with pytest.raises(ValueError, match="rows must not be empty"):
        pr.shown_lengths([])


def test_largest_normal_row_ignores_cosine_rows_and_keeps_the_first_on_a_tie():
    first, second = _mc_row("normal", 1024, alpha_mean_field=2.1), _mc_row("normal", 1024, alpha_mean_field=9.9)
    rows = [_mc_row("normal", 16), first, _mc_row("cosine", 16384), second]
    assert pr.largest_normal_row(rows) is first
    with pytest.raises(ValueError, match="at least one row of normal scores"):
        pr.largest_normal_row([_mc_row("cosine", 16)])


def test_plateau_share():
    assert pr.plateau_share(_mc_row("normal", 16, objective_at_mean_field=2.6, plateau_predicted=4.0)) == 0.65


def test_mc_table_has_a_header_per_run_and_a_line_per_row():
    rows = [_mc_row("normal", 16), _mc_row("cosine", 16384, alpha_mean_field=33.19)]
    text = pr.mc_table([("live", {"rows": rows}), ("recorded", {"rows": rows[:1]})])
    lines = text.split("\n")
    assert lines[0] == "live" and lines[4] == "recorded" and len(lines) == 7
    assert lines[1] == lines[5] == "  scores       n  mean-field     typical row   h(b_n): pred., measured"
    assert lines[2] == "  normal      16        1.00     3.00 ± 0.50     2.00,  1.90 ± 0.10"
    assert lines[3].startswith("  cosine   16384       33.19")
    assert pr.mc_table([]) == ""


def test_worst_rule_gap_takes_the_larger_gap():
    assert pr.worst_rule_gap({"fit_gap_100_1e4": 0.4, "ssmax_gap_100_1e4": 0.1}) == 0.4
    assert pr.worst_rule_gap({"fit_gap_100_1e4": 0.1, "ssmax_gap_100_1e4": 0.3}) == 0.3


def test_train_table_per_length_best_dot_alpha_and_learned_scales():
    data = _train_data()
    assert pr.train_lengths(data) == [16, 64]
    assert pr.train_table(data).split("\n") == [
        "L = 16: best dot alpha 1 (loss 1.900 ± 0.000); mean-field alpha*(L/2) = 1.19; learned cosine scale(s) 8.0, 8.3",
        "L = 64: best dot alpha 4 (loss 2.500 ± 0.000); mean-field alpha*(L/2) = 1.55; learned cosine scale(s) 7.8",
    ]


def test_train_summary_names_the_close_grid_values_and_marks_the_grids_ends():
    # L = 16: alpha = 0.5's paired difference (0.1, 0.5) is within its t(1) interval (0.3 <= 12.7 * 0.2), alpha = 2's
    # (1.1, 1.1) is not; L = 64 has one setting
    text = pr.train_summary(_train_data(), "recorded, cpu scale")
    assert text == ("The lowest loss is at α = 1 at L = 16 and α = 4 at L = 64. At L = 16, α from 0.5 to 1, 2 of the 3 "
                    "values tested, is within seed noise of the best: the optimum lies below 1.4 at the grid's "
                    "resolution of √2, perhaps below the smallest value tested. At L = 64, α = 4 is the only value "
                    "tested. Data: recorded, cpu scale.")
    # lengths that share a band are named once, in one sentence
    data = _train_data()
    data["runs"] = [r for r in data["runs"] if r["ctx"] == 16]
    data["runs"] += [{**r, "ctx": 64} for r in data["runs"]]
    assert pr.train_summary(data, "x").count("within seed noise") == 1
    assert "At both lengths, α from 0.5 to 1" in pr.train_summary(data, "x")


def test_the_noise_band_is_one_fact_for_the_prose_and_the_claim():
    """The band of alpha within seed noise is written once: the chapter's sentence and the claim's statement carry
    the same numbers (they had been 0.25 to 8 in the prose and 0.18 to 11 in the claim)."""
    from analysis.studies.softmax_scale.experiments import softmax_scale_train as train

    data = _train_data()
    data["predictions"] = {"16": {"dot_alpha_mean_field": 1.19}}
    band = train.noise_band(data, 16, "dot")
    assert band.close == (0.5, 1.0) and band.grid == (0.5, 1.0, 2.0)
    assert band.lo == pytest.approx(0.5 / math.sqrt(2)) and band.hi == pytest.approx(math.sqrt(2))
    (claim,) = train.claims(data, "t")
    assert band.words("$\\alpha$", "$\\sqrt{2}$") in claim.statement
    assert band.words() in pr.train_summary(data, "t")
    assert claim.tolerance == pytest.approx(band.hi - 1.0)  # the prediction 1.19 > best 1: the band's upper end
    one = train.NoiseBand((2.0,), (1.0, 2.0, 4.0), 2 / math.sqrt(2), 2 * math.sqrt(2))
    assert one.words() == ("only α = 2 of the 3 values tested is within seed noise of the best: the optimum lies in "
                           "1.4 to 2.8 at the grid's resolution of √2")
    both = train.NoiseBand((1.0, 2.0, 4.0), (1.0, 2.0, 4.0), 1 / math.sqrt(2), 4 * math.sqrt(2))
    assert both.words() == ("α from 1 to 4, all 3 values tested, is within seed noise of the best: the grid bounds "
                            "the optimum at neither end")
    top = train.NoiseBand((2.0, 4.0), (1.0, 2.0, 4.0), 2 / math.sqrt(2), 4 * math.sqrt(2))
    assert top.words().endswith("the optimum lies above 1.4 at the grid's resolution of √2, perhaps above the largest "
                                "value tested")


def test_standard_in_band_names_the_lengths_whose_band_holds_alpha_star_and_one():
    # L = 16: the band 0.5 to 1 (optimum below 1.4) holds alpha = 1 and alpha* = 1.19; L = 64 tested alpha = 4 alone
    data = _train_data()
    assert pr.standard_in_band(data) == (
        "At L = 16 the band within seed noise contains the mean-field $\\alpha^*(L/2)$ and also the standard "
        "$\\alpha = 1$, so the sweep cannot tell the mean-field rule from no rule at all.")
    data["runs"] += [{**r, "ctx": 64} for r in data["runs"] if r["ctx"] == 16 and r["kind"] == "dot"]
    data["runs"] = [r for r in data["runs"] if not (r["ctx"] == 64 and r["value"] == 4.0)]
    data["predictions"]["64"] = {"dot_alpha_mean_field": 1.19}
    assert pr.standard_in_band(data).startswith("At both lengths the band")
    data["predictions"] = {"16": {"dot_alpha_mean_field": 5.0}, "64": {"dot_alpha_mean_field": 5.0}}
    assert pr.standard_in_band(data) == ("At no length does the band within seed noise contain both the mean-field "
                                         "$\\alpha^*(L/2)$ and the standard $\\alpha = 1$.")


def test_which_lengths_says_both_or_all_only_for_every_length():
    assert pr.which_lengths([32, 128], [32, 128]) == "both lengths"
    assert pr.which_lengths([1, 2, 3], [1, 2, 3]) == "all 3 lengths"
    assert pr.which_lengths([32], [32]) == "L = 32"
    assert pr.which_lengths([32, 1024], [32, 128, 1024]) == "L = 32 and 1,024"


def test_grid_text():
    assert pr.grid_text((2.0, 2.828, 4.0, 64.0)) == "4 values from 2 to 64 in steps of √2"


def test_recall_table_two_lines_per_number_of_pairs():
    lines = pr.recall_table(_recall_summary()).split("\n")
    assert len(lines) == 4
    assert lines[0] == ("  4 pairs, mean row length m = 6.5: best s = 5 (95%: 4 to 6); accuracy tied at 100% from "
                        "2.83 to 8 (4 grid scales),")
    assert lines[1] == ("    moved +1.4% over the second half of training; predicted: mean-field 7.69, "
                        "finite-sample 23, 3.5 ln m 6.55, sqrt(k) 8")
    assert lines[2].startswith(" 64 pairs, mean row length m = 66.5: best s = 8 (95%: 7 to 10)")
    assert "moved -2.0%" in lines[3]


def test_value_range_and_the_ratios_it_reports():
    s = _recall_summary()
    assert pr.interval_widths(s) == [1.5, 10 / 7]
    assert pr.value_range(pr.interval_widths(s), ".3g") == "1.43 to 1.5"
    assert pr.best_over_mean_field(s) == pytest.approx([5 / 7.69, 1.0])
    assert pr.value_range(pr.best_over_mean_field(s), ".2f") == "0.65 to 1.00"
    assert pr.value_range([3.0], ".1f") == "3.0 to 3.0"


def test_rival_growths_fix_qk_norm_at_one():
    rivals = pr.rival_growths(_recall_summary(growth={"qk_norm": 1.3})["growth"])
    assert rivals == {"the mean-field alpha*": 1.76, "the finite-sample maximiser": 1.81, "the log-n rule": 2.24,
                      "QK-norm practice (no growth)": 1.0}


def test_distances_are_in_standard_errors_of_the_log_with_floors():
    d = pr.distances(2.0, 0.1, {"same": 2.0, "double": 4.0, "half": 1.0})
    assert d["same"] == 0.0 and d["double"] == pytest.approx(math.log(2) / 0.1) and d["half"] == d["double"]
    floored = pr.distances(0.0, 0.0, {"one": 1.0})  # measured floored at 1e-9, se at 1e-12
    assert floored["one"] == pytest.approx(math.log(1e9) / 1e-12)


def test_nearest_rival_picks_the_smallest_distance_and_the_first_on_a_tie():
    rivals = {"a": 1.0, "b": 1.5, "c": 3.0}
    assert pr.nearest_rival(1.6, 0.05, rivals) == ("b", pytest.approx(math.log(1.6 / 1.5) / 0.05))
    # 2 is as far from 1 as from 4 in log: the first named wins
    assert pr.nearest_rival(2.0, 0.1, {"low": 1.0, "high": 4.0})[0] == "low"
    assert pr.nearest_rival(2.0, 0.1, {"high": 4.0, "low": 1.0})[0] == "high"
    with pytest.raises(ValueError, match="rivals must not be empty"):
        pr.nearest_rival(1.0, 0.1, {})


def test_recall_conclusion_names_the_nearest_rival():
    text = pr.recall_conclusion(_recall_summary(), "recorded, cpu scale")
    # ln(1.76 / 1.6) / 0.05 = 1.9 standard errors, nearer than 1.81 (2.5) or 1.0 (9.4)
    assert text == ("The best scale grows by 1.60x from 4 to 64 pairs (recorded, cpu scale). Of the rival growths, "
                    "the nearest is the mean-field $\\alpha^*$'s, 1.9 standard errors away.")
    flat = pr.recall_conclusion(_recall_summary(growth={"measured": 1.02}), "x")
    assert "the nearest is QK-norm practice (no growth)'s, 0.4 standard errors away" in flat


def test_run_plan_states_the_t_multiple_of_the_seeds():
    plan = SimpleNamespace(steps=2500, pairs=(16, 64, 256), seeds=(0, 1, 2))
    assert pr.run_plan(plan) == ("2,500 steps at 16, 64 and 256 pairs with 3 seeds (2 degrees of freedom: its "
                                 "intervals are ± 4.30 standard errors)")
    assert pr.run_plan(SimpleNamespace(steps=6, pairs=(2,), seeds=(0,))).endswith("(0 degrees of freedom: no error estimate)")


def test_train_claims_state_what_the_sweep_detects():
    from analysis.studies.softmax_scale.experiments import softmax_scale_train as train

    data = _train_data()
    diffs = train.paired_differences(data, 16, "dot")
    assert diffs[0.5].value == pytest.approx(0.3) and diffs[0.5].se == pytest.approx(0.2) and diffs[0.5].nu == 1
    small, large, gap = train.detectable_loss(data, 16, "dot")
    # alpha = 2 differs by exactly 1.1 in both seeds (SE 0: detects any difference); alpha = 0.5 only >= lambda SE
    assert small == 0.0 and large == pytest.approx(diffs[0.5].detectable()) and gap == pytest.approx(1.1)
    data["predictions"] = {"16": {"dot_alpha_mean_field": 1.19}}
    (claim,) = train.claims(data, "t")
    assert claim.verdict == "inconclusive" and claim.effect == pytest.approx(0.19)
    assert "paired over 2 seeds" in claim.tolerance_basis and "1 df" in claim.tolerance_basis


def test_the_budget_sentence_follows_the_loss_optimum():
    from analysis.studies.softmax_scale import prose

    def rows(moving):
        return {"pairs": [4, 16], "rows": {p: {"moving": m} for p, m in zip([4, 16], moving)}}

    assert prose.recall_budget(rows([False, False])) == (
        "Over the second half of training the optimum moved by less than its interval at every number of pairs, so "
        "the loss verdicts stand at this budget.")
    assert prose.recall_budget(rows([True, True])).startswith(
        "Over the second half of training the optimum moved by more than its interval at 4 and 16 pairs: there it "
        "still moves")


def test_the_accuracy_is_reported_as_a_tie_not_an_argmax():
    """Where every seed scores 100% at several scales, the chapter states the tie and its extent (it had reported
    the first scale of the tie as the scale where 'the accuracy peaks')."""
    s = _recall_summary()
    assert pr.accuracy_tie(s["rows"][4]) == "tied at 100% from 2.83 to 8 (4 grid scales)"
    text = pr.accuracy_plateau_sentence(s)
    assert text.startswith("The accuracy has no peak. Every seed answers 100% of the held-out queries at every grid "
                           "scale from 2.83 to 8 and 4 to 22.6, for 4 and 64 pairs: a factor of 2.8 to 5.7 in $s$.")
    # at half the budget no scale tied for every seed at 4 pairs (0 scales), 2 scales did at 64
    assert text.endswith("At half the budget it covered no grid scale at 4 pairs and 2 grid scales at 64 pairs: it "
                         "widened with training.")
    same = _recall_summary(accuracy_half_points=6)
    assert pr.accuracy_plateau_sentence(same).endswith("and 6 grid scales at 64 pairs.")
    assert [pr.grid_scales(n) for n in (0, 1, 3)] == ["no grid scale", "1 grid scale", "3 grid scales"]
    lone = _recall_summary(accuracy_tied=False, accuracy_points=1, accuracy_error=0.001, accuracy_hi=4.0)
    assert pr.accuracy_tie(lone["rows"][64]) == "best on average at 4, 99.9%, no scale tied for every seed"
    assert pr.accuracy_plateau_sentence(lone).startswith("The held-out accuracy per number of pairs: 4 pairs: tied")


def test_growth_drift_sentence_agrees_with_the_growth_claim():
    """The prose on whether the growth still moves says what the claim's verdict rule decided (it had been fixed text
    that contradicted it)."""
    from pathlib import Path

    from analysis.core.results import load_record
    from analysis.studies.softmax_scale.experiments import softmax_scale_recall as sr

    data = load_record(Path(__file__).resolve().parents[1] / "results" / "softmax-scale-recall.cpu.json").data
    claim = next(c for c in sr.claims(data, "x") if c.key == "recall-scale-growth")
    text = sr.growth_drift_sentence(data)
    assert ("no verdict yet" in text) == bool(claim.undecided) and "% over the second half of training" in text


def _bib_entries():
    """references.bib as {key: entry text}."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "references.bib").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"@\w+\{([^,]+),(.*?)\n\}", text, re.S)}


def _chapter_sentences():
    """The softmax-scale chapter's markdown, cut into sentences (a sentence may span lines)."""
    import json
    import re
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "book" / "softmax_scale.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return re.split(r"(?<=[.:])\s+(?=[A-Z{])", re.sub(r"\s+", " ", text))


def test_the_log512_factor_cites_the_entropy_invariance_post():
    """log_512 n comes from kexue.fm/archives/8823, not from the FLASH post (8934) the chapter had cited for it."""
    import re

    bib = _bib_entries()
    cited = [s for s in _chapter_sentences() if "log_{512}" in s and "{cite}" in s]
    assert cited, "no sentence cites a source for log_512 n"
    for sentence in cited:
        keys = [k for group in re.findall(r"\{cite\}`([^`]+)`", sentence) for k in group.split(",")]
        assert any("archives/8823" in bib[k] for k in keys), sentence
        assert not any("archives/8934" in bib[k] for k in keys), sentence
    # every key the chapter cites is in references.bib
    for group in re.findall(r"\{cite\}`([^`]+)`", " ".join(_chapter_sentences())):
        assert all(k.strip() in bib for k in group.split(",")), group


def _exact_data(rises=True):
    """Two laws, two n each: alpha* = 1, the objective on a grid of alpha / alpha* = 1/2, 1, 2, 4."""
    def row(n, at_star, h):
        curve = [0.2, at_star, 0.9, 0.99] if rises else [0.2, at_star, 0.9, 0.8]
        return {"n": n, "alpha_star": 1.0, "alpha_over_star": [0.5, 1.0, 2.0, 4.0], "objective": curve,
                "at_star": at_star, "limit": 1.0, "curvature": -0.1, "plateau_h": h,
                "share_alpha": {"0.9": 2.0, "0.99": 4.0 if n == 2 else 3.0}}

    return {"laws": [{"law": "normal", "d": None, "rows": [row(2, 0.4, 1.4), row(64, 0.6, 1.1)]},
                     {"law": "cosine-64", "d": 64, "rows": [row(2, 0.41, 1.41), row(64, 0.62, 1.05)]}],
            "reference_max_rel_diff": 1e-15, "reference_points": 4}


def test_exact_table_and_ranges():
    lines = pr.exact_table(_exact_data()).split("\n")
    assert len(lines) == 5 and lines[0].split() == ["scores", "n", "alpha*", "F(alpha*)/L_n", "a90/alpha*",
                                                    "a99/alpha*", "L_n", "h(b_n)"]
    assert lines[1].split() == ["normal", "2", "1", "0.400", "2.00", "4.00", "1", "1.4"]
    assert pr.exact_ranges(_exact_data()) == {"share": "40 to 62", "at90": "2 to 2", "at99": "3 to 4"}
    assert pr.h_over_limit(_exact_data()).endswith("by a factor of 1.05 to 1.41 over the table, nearest at $n$ = 64.")


def test_exact_finding_follows_the_rise_test_and_the_verdict_follows_the_claims():
    from analysis.studies.softmax_scale.experiments import softmax_scale_checks as checks

    data = _exact_data()
    rises = [checks.exact_rises(law) for law in data["laws"]]
    text = pr.exact_finding(data, rises)
    assert rises == [True, True] and "It has no finite maximiser" in text and "up to $4\\,\\alpha^*$" in text
    assert "reaches 40 to 62% of $L_n$" in text
    peaked = _exact_data(rises=False)
    bad = pr.exact_finding(peaked, [checks.exact_rises(law) for law in peaked["laws"]])
    assert bad.startswith("For normal scores and cosines in $d = 64$ the exact objective does not rise")
    fails = [SimpleNamespace(key="exact-maximiser-normal", verdict="fails"),
             SimpleNamespace(key="exact-maximiser-cosine-64", verdict="fails")]
    text = pr.exact_verdict(fails, ["normal", "cosine-64"])
    assert text.startswith("The source's premise, that the expected objective peaks at $\\alpha^*$, fails for normal "
                           "scores and cosines in $d = 64$.") and "property of its mean-field approximation" in text
    mixed = pr.exact_verdict([fails[0], SimpleNamespace(key="x", verdict="inconclusive")], ["normal", "cosine-64"])
    assert mixed.endswith("fails for normal scores; it is inconclusive for cosines in $d = 64$.")


def test_published_scale_choices_at_the_recall_sizes():
    s = _recall_summary()
    choices = pr.published_scale_choices(s, 64, [8, 68])
    by = {c.name.split(",")[0]: c for c in choices}
    assert by["standard $1/\\sqrt{d}$"].values == (8.0, 8.0)
    assert by["QK-norm's initial scale"].values == pytest.approx((math.log2(56), math.log2(68 * 67)))
    # GAU-alpha floors n at 16; the entropy-invariant rule does not
    assert by["GAU-α's softmax_plus"].values[0] == pytest.approx(8 * math.log(16) / math.log(512))
    assert by["entropy-invariant"].values[0] == pytest.approx(8 * math.log(6.5) / math.log(512))
    assert by["log-length scaling"].values[1] == pytest.approx(8 * math.log(66.5))
    assert pr.choice(choices, "trained-loss").cells() == ["5, 4 to 6", "8, 7 to 10"]
    assert pr.choice(choices, "trained-accuracy").cells() == ["2.83 to 8", "4 to 22.6"]
    assert pr.exact_over_trained(choices) == pytest.approx([a / b for a, b in zip(
        pr.choice(choices, "exact").values, (5.0, 8.0))])
    with pytest.raises(ValueError, match="key must name a row"):
        pr.choice(choices, "none")
    table = pr.published_scales_table(s, choices).split("\n")
    assert len(table) == 2 + len(choices) and table[0].startswith("| choice | $s$ | 4 pairs, $m = 6.5$ |")
    # sqrt(k) = 8 lies outside [4, 6] and inside [7, 10]; inside both accuracy ties
    assert table[2].endswith("| 8 | 8 | 1 of 2 | 2 of 2 |") and table[-1].endswith("|  |  |")
    text = pr.published_scales_summary(s, choices)
    assert "; standard $1/\\sqrt{d}$, Vaswani et al. 2017" in text and " inside it at some but not all." in text
    assert text.endswith("asks for sharper attention than training picks.")


def test_verdict_tally_groups_the_matching_claims_most_common_first():
    claims = [SimpleNamespace(key=k, verdict=v) for k, v in
              (("recall-best-scale-4", "fails"), ("recall-best-scale-16", "fails"), ("recall-best-scale-64", "holds"),
               ("recall-best-scale-accuracy-4", "inconclusive"))]
    assert pr.verdict_tally(claims, r"recall-best-scale-\d+", "numbers of pairs") == (
        "fails at 2 and holds at 1 of the 3 numbers of pairs")
    assert pr.verdict_tally(claims, r"recall-best-scale-accuracy-\d+", "numbers of pairs") == (
        "is inconclusive at 1 of the 1 numbers of pairs")
    with pytest.raises(ValueError):
        pr.verdict_tally(claims, r"train-best-dot-\d+", "lengths")


def test_the_alpha_band_sentence_says_how_much_of_the_sources_range_is_in_two_to_three():
    from analysis.studies.softmax_scale.prose import alpha_band_sentence

    assert alpha_band_sentence(491.2, 153_959.4, (40, 20_000), [1.434, 2.68]) == (
        "$\\alpha^*$ lies in $[2, 3]$ for $n$ from 491 to 153,959. Over the source's plotted range, $n$ = 40 to "
        "20,000, $\\alpha^*$ runs from 1.43 to 2.68: it is in $[2, 3]$ only for $n$ from 491 to 20,000.")
    assert alpha_band_sentence(30, 30_000, (40, 20_000), [2.1, 2.9]).endswith(
        "which contains the source's whole plotted range, $n$ = 40 to 20,000, as the source says.")
    assert alpha_band_sentence(25_000, 90_000, (40, 20_000), [1.4, 1.9]).endswith("it is in $[2, 3]$ nowhere.")


def test_by_kind_says_where_cosine_and_normal_scores_differ_and_the_corrected_verdict():
    def claim(verdict: str, corrected: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(verdict_text=lambda: verdict, corrected_verdict=corrected)

    fix = "the exact objective"
    assert pr.by_kind("The prediction", claim("holds", "holds"), claim("fails", "holds"), fix) == (
        "The prediction holds for normal scores but fails for cosines. For cosines its corrected prediction, the "
        "exact objective, holds.")
    assert pr.by_kind("The claim", claim("fails"), claim("fails")) == "The claim fails for both kinds of score."
    assert pr.by_kind("The claim", claim("inconclusive", "fails"), claim("holds within 3%", "holds"), fix) == (
        "The claim is inconclusive for normal scores but holds within 3% for cosines. For normal scores its "
        "corrected prediction, the exact objective, fails.")


def test_the_plateau_sentence_says_on_which_side_the_measured_mean_lies():
    below = _mc_row("normal", 16, plateau_predicted=4.08, plateau_measured=3.83, plateau_measured_se=0.2)
    assert pr.plateau_measured_sentence(below) == ("At $\\alpha = 4h$ the measured mean is 3.83 ± 0.20, 1.2 standard "
                                                   "errors below it.")
    above = _mc_row("normal", 16, plateau_predicted=3.74, plateau_measured=3.79, plateau_measured_se=0.18)
    assert pr.plateau_measured_sentence(above).endswith("3.79 ± 0.18, 0.3 standard errors above it.")
    equal = _mc_row("normal", 16, plateau_predicted=2.0, plateau_measured=2.001)
    assert pr.plateau_measured_sentence(equal).endswith("2.00 ± 0.10, equal to it.")


def test_the_exact_against_mc_sentence_follows_the_claim_and_the_bound():
    mc = {"max_z": 2.68, "critical": 3.77, "points": 264, "rival_min_z": 22.4}
    text = pr.exact_mc_sentence(SimpleNamespace(verdict_text=lambda: "holds"), mc, "recorded, cpu scale")
    assert text == ("Against the Monte Carlo (recorded, cpu scale), the claim that the exact objective is the mean "
                    "over sampled rows holds. Its largest distance over 264 points is 2.68 standard errors, under the "
                    "Bonferroni bound 3.77. The mean-field objective lies at least 22 standard errors from the same "
                    "means at $\\alpha^*$.")
    far = pr.exact_mc_sentence(SimpleNamespace(verdict_text=lambda: "fails"), {**mc, "max_z": 5.0}, "x")
    assert "objective is the mean over sampled rows fails. Its largest distance over 264 points is 5.00 standard " \
           "errors, over the Bonferroni bound" in far


def test_group_verdicts_and_the_checks_summary_follow_the_claims():
    from types import SimpleNamespace

    from analysis.studies.softmax_scale.prose import checks_summary, group_verdict

    def claims(*verdicts: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(verdict=v) for v in verdicts]

    assert group_verdict(claims("holds", "holds")) == "hold"
    assert group_verdict(claims("fails", "holds", "fails")) == "fail in 2 of the 3 cases, hold in 1"
    assert group_verdict(claims("inconclusive", "holds")) == "are inconclusive in 1 of the 2 cases, hold in 1"
    text = checks_summary(claims("holds"), claims("fails", "fails"), claims("fails"))
    assert text == ("The identity and the closed-form maximisers hold. The source's fits fail as exact forms. The "
                    "step everything rests on, the "
                    "mean-field replacement, is tested by the exact objective's maximiser, and the claims that it "
                    "peaks at the mean-field $\\alpha^*$ fail.")


def test_the_sweep_resolution_reads_the_detectable_and_measured_differences():
    from analysis.core.results import find_record
    from analysis.studies.softmax_scale.experiments.softmax_scale_train import detectable_loss
    from analysis.studies.softmax_scale.prose import sweep_resolution, train_lengths

    from pathlib import Path

    data = find_record("softmax-scale-train", "cpu", str(Path(__file__).resolve().parents[1] / "results")).data
    found = [detectable_loss(data, ctx, "dot") for ctx in train_lengths(data)]
    assert sweep_resolution(data) == (f"detects loss differences of {min(f[0] for f in found):.2g} to "
                                      f"{max(f[1] for f in found):.2g} nats with 80% power, and the largest it "
                                      f"measured from the best is {max(f[2] for f in found):.2g}")


def test_tallies_say_both_and_all_where_every_claim_agrees():
    def claims(*verdicts: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(key=f"train-best-dot-{i}", verdict=v) for i, v in enumerate(verdicts)]

    assert pr.verdict_tally(claims("inconclusive", "inconclusive"), r"train-best-dot-\d+", "lengths") == (
        "is inconclusive at both lengths")
    assert pr.verdict_tally(claims("fails", "fails", "fails"), r"train-best-dot-\d+", "numbers of pairs") == (
        "fails at all 3 numbers of pairs")
