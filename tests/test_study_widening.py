"""The widening chapter's solved factors, its table of the source's factors and its formatting, on small inputs whose
answers are known."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import sympy as sp

from analysis.studies import widening

wf = importlib.import_module("analysis.studies.widening.figures")
wx = importlib.import_module("analysis.studies.widening.experiments.widening")


def test_solved_factors_are_the_exact_widenings():
    k, eps = sp.symbols("k epsilon", positive=True)
    solved = widening.solved_factors()
    expected = {"ffn2_w": k ** sp.Rational(-3, 2), "ffn2_b": 1 / sp.sqrt(k), "eps": eps / k,
                "gau": k ** sp.Rational(-1, 4)}
    assert set(solved) == set(expected)
    for name, value in expected.items():
        assert sp.simplify(solved[name] - value) == 0, (name, solved[name])
    assert solved["ffn2_w"].subs(k, 2) == sp.sqrt(2) / 4  # w / (2 sqrt 2), the source's summary table


def test_pm_formats_mean_and_standard_error():
    assert wf._pm((1.23456, 0.0004)) == "1.235 ± 0.000"
    assert wf._pm((-0.5, 0.25), 1) == "-0.5 ± 0.2"


def test_printed_is_exact_within_the_tolerance_only():
    assert wf.printed_is_exact({"printed": 0.5, "derived": 0.5})
    assert wf.printed_is_exact({"printed": 0.5, "derived": 0.5 + 1e-13})
    assert not wf.printed_is_exact({"printed": 0.5, "derived": 1 / math.sqrt(2)})
    assert not wf.printed_is_exact({"printed": 0.5, "derived": 0.5 + 1e-13}, tol=1e-14)


def test_table_names_a_row_once_and_colours_the_exact_factor():
    data = {"table": {"rows": {
        "ffn2": {"tensors": [{"tensor": "w", "printed": 0.353553, "derived": 0.353553},
                             {"tensor": "b", "printed": 0.5, "derived": 1 / math.sqrt(2)}], "logit_rel": 0.0123},
        "odd <row>": {"tensors": [{"tensor": "x<y", "printed": 1.0, "derived": 1.0}], "logit_rel": 0.0}}}}
    html = wf.table_html(data)
    rows = html.split("<tbody>")[1].split("</tr>")[:-1]
    assert len(rows) == 3
    assert "FeedForward W<sub>2</sub>" in rows[0] and "relative" in rows[0]
    assert "<td></td><td><code>b</code>" in rows[1] and rows[1].endswith("<td></td>")  # named and measured once
    assert 'color:#1b7f3b">0.353553' in rows[0] and 'color:#b3261e">0.707107' in rows[1]
    assert "odd &lt;row&gt;" in rows[2] and "<code>x&lt;y</code>" in rows[2]
    assert html.startswith("<style>") and "\n" not in html  # one HTML block when glued as Markdown


def test_mean_curve_averages_the_seeds_ignoring_nan():
    x, y = wf._mean_curve([([0, 10, 20], [3.0, 2.0, np.nan]), ([0, 10, 20], [1.0, np.nan, 1.5])])
    assert x.tolist() == [0, 10, 20]
    assert y.tolist() == [2.0, 2.0, 1.5]


def test_the_stationary_sentences_follow_the_gap_against_the_floor_the_float32_check_predicts():
    from analysis.studies.widening.figures import stationary_sentences

    floor = 4.06e-4 * 2.0**-29  # 7.56e-13
    assert wx.rounding_floor(4.06e-4) == pytest.approx(floor, rel=1e-12)
    within = stationary_sentences(6.3e-13, 4.06e-4)
    assert "The float64 gap is 0.8 times that floor, within the allowance of 10" in within["stationary_detail"]
    assert within["stationary_summary"] == "They also keep a stationary point stationary."
    edge = stationary_sentences(10 * floor, 4.06e-4)  # the allowance is inclusive
    assert edge["stationary_summary"] == within["stationary_summary"]
    beyond = stationary_sentences(1.6e-11, 4.06e-4)
    assert "21.2 times that floor, beyond the allowance of 10" in beyond["stationary_detail"]
    assert beyond["stationary_summary"].startswith("They do not keep a stationary point exactly stationary")
    with pytest.raises(ValueError, match="gap must be a finite"):
        stationary_sentences(float("nan"), 4.06e-4)
    with pytest.raises(ValueError, match="gap32 must be a finite"):
        stationary_sentences(6.3e-13, -1.0)


def test_the_stationary_claim_bounds_the_float64_gap_by_the_floor_the_float32_gap_predicts():
    def claim(gap64: float, gap32: float):
        return wx.stationary_claim({"gradient_identity_rel": gap64, "gradient_identity_rel32": gap32}, "cpu")

    avx2, avx512 = claim(1.6216e-12, 4.922e-4), claim(6.349e-13, 4.056e-4)  # both kernels, measured
    assert avx2.tolerance == pytest.approx(10 * 4.922e-4 * 2.0**-29)
    assert avx2.verdict == avx512.verdict == "holds"
    assert "(0.00049 × 2⁻²⁹ = 9.2e-13)" in avx2.tolerance_basis
    assert claim(1.6216e-12, 1e-5).verdict == "fails"  # a gap that did not shrink with precision
    assert claim(1e-4, 1e-4).verdict == "fails"


def test_seeds_needed_is_the_first_n_whose_detectable_difference_is_below_the_effect():
    from analysis.core.stats import detectable_multiple
    n = wx.seeds_needed(0.2233, 0.45)
    assert n == 5
    assert detectable_multiple(n - 1) * 0.2233 / math.sqrt(n) < 0.45 <= detectable_multiple(n - 2) * 0.2233 / math.sqrt(n - 1)
    assert wx.seeds_needed(10.0, 0.01, most=50) is None


def test_saving_sentences_say_which_of_zero_and_the_published_saving_the_interval_contains():
    from analysis.core.stats import mean_estimate
    wide = wf.saving_sentences(mean_estimate([0.0213, -0.416, -0.2757], "seeds"))
    assert "-78% to 33%, contains 0% and excludes 45%" in wide["saving_interval"]
    assert "needs 5 seeds" in wide["saving_interval"] and "(2 df, ±4.3 SE)" in wide["seeds_basis"]
    both = wf.saving_sentences(mean_estimate([0.3, -0.2, 0.25], "seeds"))
    assert "contains 0% and 45%;" in both["saving_interval"]
    assert "no error estimate" in wf.saving_sentences(mean_estimate([0.1], "seeds"))["seeds_basis"]


def test_the_saving_claim_is_inconclusive_when_its_interval_holds_both_zero_and_the_published_saving():
    def data(savings: list[float]) -> dict:
        return {"training": {"seeds": savings}}

    # saving() is read through saving_estimate: patch it to hand back the per-seed values
    orig = wx.saving
    try:
        wx.saving = lambda tr, s, arm="placed": s
        est = wx.saving_estimate(data([0.3, -0.2, 0.25]))
    finally:
        wx.saving = orig
    from analysis.core.verify import Claim, estimate_fields
    f = estimate_fields(est, "saving")
    both = all(abs(est.value - v) <= f["tolerance"] for v in (0.0, wx.BERT2BERT_SAVING))
    c = Claim("saving", "s", "src", wx.BERT2BERT_SAVING, corrected=0.0, effect=wx.BERT2BERT_SAVING,
              alternative=0.0 if both else None, alternative_note="no saving" if both else "", **f)
    assert both and c.verdict == "inconclusive" and c.corrected_verdict == "inconclusive"


def test_arm_differences_pair_by_seed():
    seeds = [{"arms": {"pairs": {"val_loss": [2.3, 1.71]}, "placed": {"val_loss": [2.27, 1.70]}}},
             {"arms": {"pairs": {"val_loss": [2.31, 1.72]}, "placed": {"val_loss": [2.28, 1.70]}}}]
    est = wx.paired_over_seeds(seeds, "pairs", "placed", -1)
    assert est.n == 2 and est.value == pytest.approx(0.015) and est.units == "paired seeds"


def test_dropout_summary_sorts_the_sites_by_the_threshold_set_in_advance():
    above, below = 10 * wx.BROKEN_SYMMETRY, wx.BROKEN_SYMMETRY
    both = wf.dropout_summary({"attention dropout": 1e-16, "unit dropout": below, "residual dropout": above,
                               "split": above})
    assert both == ("Dropout on the attention weights or on the FFN's hidden units leaves the stream copied; dropout "
                    "on the sublayers' outputs (BERT's residual dropout) breaks it.")
    assert wf.dropout_summary({"residual dropout": above}) == (
        "Dropout on the sublayers' outputs (BERT's residual dropout) breaks the copies.")
    assert wf.dropout_summary({"attention dropout": 1e-16, "residual dropout": float("nan")}) == (
        "Dropout on the attention weights leaves the stream copied.")
    assert wf.dropout_summary({"split": above}) == "No dropout variant was trained."
    with pytest.raises(ValueError, match="threshold must be in"):
        wf.dropout_summary({}, threshold=0.0)


def test_residual_dropout_drops_each_branch_output_in_training_only():
    import torch
    from analysis.models.lm import LanguageModel

    torch.manual_seed(0)
    model = LanguageModel(wx.decoder_config(16, 2, 1, 8))
    idx = torch.randint(0, 256, (2, 8))
    clean_eval, clean_train = model.eval()(idx), model.train()(idx)
    assert torch.equal(clean_eval, clean_train)  # the model itself has no dropout
    wx._residual_dropout(model, 0.5)
    assert torch.equal(model.eval()(idx), clean_eval)
    _, hidden = model.train()(idx, return_hidden=True)
    # each branch output is zero where dropped: the stream after the first sublayer differs from the clean one
    _, clean_hidden = model.eval()(idx, return_hidden=True)
    assert not torch.allclose(hidden[1], clean_hidden[1])


def test_every_claim_of_a_smoke_run_names_its_rival():
    from analysis.core.runner import run_experiment

    data = run_experiment("widening", wx.CONFIGS["smoke"])
    claims = {c.key: c for c in wx.claims(data, "smoke")}
    assert [key for key, c in claims.items() if not c.has_rival] == []
    gap = {r["case"]: r["f64_rel"] for r in data["exactness"]}
    # a lossless BERT against the nearest of the five lossy BERT widenings; a broken one against the exact one
    broken = [case for case in gap if case.startswith("BERT, ") and case.endswith(", x2") and
              any(w in case for w in ("global", "without", "linear layer", "kept"))]
    assert len(broken) == 5 and claims["bert-lossless"].alternative == min(gap[c] for c in broken)
    assert claims["global-breaks"].alternative == gap["BERT, GELU, 1/sqrt(d'), tied, x2"]
    # the embedding's 1/sqrt(2) without its division is plain repetition; eps/k at k = 2
    assert claims["table-embedding"].alternative == pytest.approx(1.0, abs=1e-15)
    assert claims["table-attention-qk"].alternative == pytest.approx(
        {2**0.25 / 2: 0.5, 2**0.25 / math.sqrt(2): 1 / math.sqrt(2)}[claims["table-attention-qk"].predicted])
    assert claims["layernorm-eps"].alternative == 0.5


# --- the verdict sentences (analysis.studies.widening.verdicts) ------------------------------------------------------

wv = importlib.import_module("analysis.studies.widening.verdicts")

def _table(**wrong: list[str]) -> dict:
    """The experiment's table rows, every factor exact except the named tensors of the named rows."""
    rows = {}
    for row in wv.TABLE_ROWS:
        names = {"ffn2": ["layers.0.w2.weight", "layers.0.w2.bias"], "attention-qk": ["layers.0.q.bias",
                 "layers.0.k.bias"]}.get(row, ["x.weight"])
        rows[row] = {"tensors": [{"tensor": n, "printed": 0.5, "derived": 0.7 if n in wrong.get(row.replace("-", "_"),
                                  []) else 0.5} for n in names]}
    return rows


def test_tally_groups_names_by_verdict():
    assert wv.tally({"a": "holds", "b": "fails", "c": "holds"}) == "holds for a and c and fails for b"
    assert wv.tally({"a": "inconclusive"}) == "is inconclusive for a"


def test_the_exact_and_broken_leads_follow_the_claims():
    assert wv.exact_sentence({"BERT": "holds", "GAU": "holds within 0.1%"}) == (
        "The exact constructions agree to rounding: each claim of a lossless widening holds.")
    assert wv.exact_sentence({"BERT": "holds", "the decoders": "fails"}) == (
        "The claim of a lossless widening holds for BERT and fails for the decoders.")
    assert wv.broken_sentence({"global repetition": "holds"}) == (
        "The broken constructions miss by far more: each claim that one changes the function holds.")
    assert wv.broken_sentence({"global repetition": "holds", "pairwise RoPE": "fails"}) == (
        "The claim that a broken construction changes the function holds for global repetition and fails for "
        "pairwise RoPE.")


def test_the_rows_sentence_names_the_wrong_tensors_of_the_failing_rows():
    right = {row: "holds" for row in wv.TABLE_ROWS}
    assert wv.rows_sentence(right, wv.wrong_entries(right, _table())) == "Every row is right."
    ffn2 = right | {"ffn2": "fails"}
    assert wv.rows_sentence(ffn2, wv.wrong_entries(ffn2, _table(ffn2=["layers.0.w2.bias"]))) == (
        "Every row is right except the second FeedForward layer's bias.")
    both = ffn2 | {"attention-qk": "fails", "embedding": "inconclusive"}
    table = _table(ffn2=["layers.0.w2.weight", "layers.0.w2.bias"], attention_qk=["layers.0.k.bias"])
    assert wv.wrong_entries(both, table) == ["attention's k bias", "the second FeedForward layer's weight and bias"]
    assert wv.rows_sentence(both, wv.wrong_entries(both, table)) == (
        "Every row is right except attention's k bias, the second FeedForward layer's weight and bias, and the "
        "embedding, whose check is inconclusive.")
    failing = {row: "fails" for row in wv.TABLE_ROWS}
    assert wv.rows_sentence(failing, wv.wrong_entries(failing, _table())) == "No row of the table is right."


def test_the_fraction_clause_says_whether_the_commenter_is_right():
    claim = "LayerNorm cannot be widened exactly by a non-integer factor, for widenings built from copies"
    assert wv.fraction_clause("holds") == f"The commenter is right that {claim}"
    assert wv.fraction_clause("fails") == f"The commenter is wrong that {claim}"
    assert wv.fraction_clause("inconclusive") == f"The claim that {claim} is inconclusive"


def test_the_source_summary_follows_the_method_table_text_and_rope_verdicts():
    now = {"bert-lossless": "holds", "decoder-lossless": "holds", "layernorm-eps": "fails",
           "table-head-layernorm-text": "fails", "rope-lossy": "fails"}
    assert wv.source_summary(now, ["the second FeedForward layer's bias"]) == (
        "The source's method is right. Its table is wrong on the second FeedForward layer's bias and misses "
        "LayerNorm's ε/k, its text is wrong about the MLM head's LayerNorm, and it is too pessimistic about RoPE: "
        "placed pairs are exact.")
    other = {"bert-lossless": "holds", "decoder-lossless": "fails", "layernorm-eps": "holds",
             "table-head-layernorm-text": "holds", "rope-lossy": "holds"}
    assert wv.source_summary(other, []) == (
        "The claim that the source's method is lossless holds for BERT and fails for the decoders. Its table is "
        "right, its text is right about the MLM head's LayerNorm, and it is right that RoPE widens only "
        "approximately.")
    assert "its claim that RoPE widens only approximately is inconclusive." in wv.source_summary(
        other | {"rope-lossy": "inconclusive"}, [])


def test_the_rules_and_copies_summaries_follow_the_claims():
    assert wv.rules_summary({"GAU and FLASH": "holds", "RMSNorm models by fractions": "holds"}) == (
        "The same rules widen GAU and FLASH, and RMSNorm models by fractions.")
    assert wv.rules_summary({"GAU and FLASH": "holds", "RMSNorm models by fractions": "fails"}) == (
        "The claim that the same rules widen a model exactly holds for GAU and FLASH and fails for RMSNorm models "
        "by fractions.")
    assert wv.copies_summary("holds") == "Exact copies stay copies."
    assert wv.copies_summary("fails").startswith("Exact copies do not stay copies")
    assert wv.copies_summary("inconclusive") == "Whether exact copies stay copies is inconclusive."
    assert wv.copies_lead("holds") == (
        "The commenter's claim holds: identical copies receive identical gradients, so the model keeps the small "
        "model's width in its stream, its FFN and its values.")
    assert wv.copies_lead("fails") == ("The commenter's claim that identical copies receive identical gradients "
                                       "fails: training moves the stream out of the copied subspace.")
    assert wv.copies_lead("inconclusive").endswith("identical gradients is inconclusive.")


def test_the_freed_summary_sorts_split_and_noise_by_the_threshold_set_in_advance():
    above, below = 10 * wx.BROKEN_SYMMETRY, wx.BROKEN_SYMMETRY
    assert wv.freed_summary({"split": above, "noise": above, "unit dropout": 1e-16}) == (
        "A random split or noise frees them.")
    assert wv.freed_summary({"split": above, "noise": below}) == "A random split frees them; noise does not."
    assert wv.freed_summary({"split": below, "noise": below}) == "Neither a random split nor noise frees them."
    assert wv.freed_summary({"noise": 1e-16, "split": float("nan")}) == "Noise does not free them."
    assert wv.freed_summary({"attention dropout": above}) == "No split or noise variant was trained."
    with pytest.raises(ValueError, match="threshold must be in"):
        wv.freed_summary({}, threshold=1.0)


def test_the_split_gradient_sentence_says_which_way_the_split_moves_the_model():
    from analysis.studies.widening.figures import split_gradient_sentence

    assert split_gradient_sentence(8.7937e-4, 8.7782e-4) == (
        "On the linear weights its gradient norm is 1.0018 times the exact widening's: the split moves the model "
        "0.18% farther from stationary.")
    assert split_gradient_sentence(0.9, 1.0).endswith("moves the model 10.00% closer to stationary.")
    assert split_gradient_sentence(1.0, 1.0).endswith("as far from stationary as exact copies do.")
    with pytest.raises(ValueError, match="copy"):
        split_gradient_sentence(1.0, 0.0)
    with pytest.raises(ValueError, match="split"):
        split_gradient_sentence(float("nan"), 1.0)
