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
