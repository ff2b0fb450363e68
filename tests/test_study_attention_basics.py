"""The attention study's decisions and formatting, on small hand-made inputs whose answer is known."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from analysis.studies import attention_basics as st
from analysis.studies.attention_basics.figures import head_symmetry, positions_figure, qk_saturation
from analysis.theory import transformer_basics as tb


def test_the_saturation_law_is_drawn_from_the_saturated_widths_only(monkeypatch):
    monkeypatch.setattr(tb, "saturated_jacobian_median", lambda n, d: 1000 * n + d)  # which (n, d) it is asked for
    assert st.saturation_law(16, [1, 32, 64, 128], from_d=64) == {64: 16_064, 128: 16_128}
    assert st.saturation_law(16, [1, 32, 64]) == {64: 16_064}  # from d = 64 by default
    assert st.saturation_law(16, [1, 2, 4]) == {}  # no width at or above 64: nothing to draw


def test_extreme_widths_pick_the_smallest_and_largest_d_whatever_the_order():
    rows = [{"d": 64, "x": "b"}, {"d": 1, "x": "a"}, {"d": 2048, "x": "c"}]
    lo, hi = st.extreme_widths(rows)
    assert (lo["x"], hi["x"]) == ("a", "c")
    one = [{"d": 8}]
    assert st.extreme_widths(one) == (one[0], one[0])
    with pytest.raises(ValueError):
        st.extreme_widths([])


def test_ratio_with_se_divides_both_by_d():
    assert st.ratio_with_se({"d": 64, "var": 63.75, "var_se": 0.1344}) == "0.9961 ± 0.0021"


def test_heads_text_lists_the_head_counts_in_order():
    assert st.heads_text([{"heads": 1}, {"heads": 2}, {"heads": 64}]) == "1, 2, 64"
    assert st.heads_text([{"heads": 8}]) == "8"


def test_growth_is_last_over_first_and_needs_a_nonzero_start():
    assert st.growth([1.2e-6, 1e-3, 0.07]) == pytest.approx(0.07 / 1.2e-6)
    assert st.growth([0.5, 0.25]) == 0.5  # a shrinking spread reads below 1
    with pytest.raises(ValueError):
        st.growth([0.0, 0.1])
    with pytest.raises(ValueError):
        st.growth([])


def test_the_figures_draw_hand_made_data_with_labels():
    qk = [{"d": d, "var": d * 1.01, "var_se": 0.01 * d, "kurtosis": 6 / d, "kurtosis_se": 0.1} for d in (1, 4, 64)]
    side = {"entropy_mean": 2.0, "entropy_se": 0.01, "jac_median": 0.1, "jac_median_se": 0.01, "jac_q10": 0.05,
            "jac_q90": 0.2}
    data = {"qk": qk, "saturation": [{"d": d, "scaled": side, "unscaled": side} for d in (1, 64, 128)], "keys": 16}
    runs = {"identical": {"steps": [0, 10, 100], "spread": [0.0, 0.0, 0.0]},
            "independent init": {"steps": [0, 10, 100], "spread": [1.4, 1.4, 1.5]}}
    pos = {"dot_curve_k": [-2, -1, 0, 1, 2], "dot_curve": [1.0, 2.0, 3.0, 2.0, 1.0], "d": 8, "pe32_pos": [0, 10, 100],
           "pe32_err_by_pos": [0.0, 1e-6, 1e-5], "m_err64": [1e-13, 2e-13], "rope_spread": 1e-12,
           "projected": [{"k": k, "std": 0.5, "mean": 1.0 + k} for k in (0, 1, 2)]}
    figs = [qk_saturation(data, {64: 1e-2, 128: 1e-3}), head_symmetry(runs), positions_figure(pos)]
    for fig in figs:
        assert isinstance(fig, Figure)
        panels = [ax for ax in fig.axes if ax.has_data()]
        assert panels and all(ax.get_xlabel() and ax.get_title() and ax.get_ylabel() for ax in panels)
        plt.close(fig)
    assert len(figs[0].axes) == 4 and len(figs[2].axes) == 3
    labels = figs[1].axes[0].get_legend_handles_labels()[1]
    assert labels == ["identical (exactly 0 throughout)", "independent init"]


def test_every_claim_of_a_smoke_run_names_its_rival():
    import math

    from analysis.core.runner import run_experiment
    from analysis.studies.attention_basics.experiments import attention_basics as ab

    data = run_experiment("attention-basics", ab.CONFIGS["smoke"])
    claims = {c.key: c for c in ab.claims(data, "smoke")}
    assert [key for key, c in claims.items() if not c.has_rival] == []
    # h heads of full width d = 512: 3h(d^2 + d) + d^2 + d parameters, spread over h = 1 .. 64
    heads = [r["heads"] for r in data["mha"]]
    assert claims["mha-params"].alternative == 3 * (512**2 + 512) * (max(heads) - min(heads))
    # M_1 = I: sin(p + 1) against sin(p) at the fastest frequency, 1, differs by up to 2 sin(1/2)
    assert data["positions"]["shifts"][0] == 1
    assert claims["pe-shift"].alternative == pytest.approx(2 * math.sin(0.5), abs=1e-12)
    assert claims["bag-of-words"].alternative == data["permutation"]["with_pe"]
    assert claims["wo-merge"].alternative > 0.1  # the wrong order changes the output by its own size


def test_spread_text_says_exactly_0_only_for_an_exact_0():
    assert st.spread_text(0.0) == "exactly 0"
    assert st.spread_text(0.3657) == "0.37"
    assert st.spread_text(1.2e-9) == "1.2e-09"  # rounding noise is not called 0


def test_stability_reading_follows_the_verdict():
    head = "Identical heads are a fixed point of training that training"
    assert st.stability_reading("fails") == f"{head} moves away from."
    assert st.stability_reading("holds") == f"{head} does not leave."
    assert st.stability_reading("holds within 3.7%") == st.stability_reading("holds")
    assert st.stability_reading("inconclusive") == ("This run does not tell whether training moves away from "
                                                    "identical heads.")


def test_unit_widths_text_names_the_widths_whose_interval_misses_1():
    def width(d, ms, se):
        return {"d": d, "token_ms": ms, "token_ms_se": se, "rows": 8192}

    inside = [width(64, 0.9981, 0.0019), width(256, 1.0014, 0.0010), width(1024, 1.0004, 0.0005)]
    assert st.unit_widths_text(inside) == "at every width"
    one_off = [width(64, 0.99, 0.001), width(256, 1.0014, 0.0010), width(1024, 1.0004, 0.0005)]
    assert st.unit_widths_text(one_off) == "at every width but d = 64"
    two_off = [width(64, 0.99, 0.001), width(256, 1.01, 0.001), width(1024, 1.0004, 0.0005)]
    assert st.unit_widths_text(two_off) == "at every width but d = 64 and 256"
    assert st.unit_widths_text([width(1024, 1.5, 0.001)]) == "at no width"


def test_the_mask_paths_clause_follows_what_torch_did_with_minus_1e9():
    from analysis.studies.attention_basics.experiments.notes_checks import masked_rows

    rows = masked_rows()
    assert st.mask_paths_clause(rows["float16"]) == (
        "`masked_fill` refuses −1e9 and an additive mask turns it into −∞")
    assert st.mask_paths_clause(rows["float32"]) == (
        "`masked_fill` accepts −1e9 and an additive mask turns it into −10⁹")


def test_the_mha_sentence_says_one_shared_count_or_where_they_differ():
    def row(h, torch_n, ours):
        return {"heads": h, "torch": torch_n, "ours": ours, "formula": 4 * 512**2 + 4 * 512}

    n = 4 * 512**2 + 4 * 512
    same = [row(1, n, n), row(8, n, n)]
    assert st.mha_sentence(same) == ("`torch.nn.MultiheadAttention` and the book's attention both count 1,050,624 "
                                     "parameters at $d = 512$ for $h = 1, 8$")
    ours_off = [row(1, n, n), row(8, n, n + 8)]
    assert st.mha_sentence(ours_off) == ("`torch.nn.MultiheadAttention` counts 1,050,624 parameters at $d = 512$ for "
                                         "$h = 1, 8$, the book's attention 1,050,624 and 1,050,632")
    torch_off = [row(1, n, n), row(8, n + 8, n)]
    assert st.mha_sentence(torch_off) == ("`torch.nn.MultiheadAttention` counts from 1,050,624 to 1,050,632 "
                                          "parameters at $d = 512$ for $h = 1, 8$")


def test_verdicts_by_says_each_verdict_once():
    from analysis.studies.text import verdicts_by

    assert verdicts_by([("float32", "holds"), ("bfloat16", "holds")], "in") == "holds in float32 and bfloat16"
    assert verdicts_by([("float32", "holds"), ("bfloat16", "fails")], "in") == "holds in float32 and fails in bfloat16"
    assert verdicts_by([("a", "is inconclusive")], "for") == "is inconclusive for a"


def test_sci_writes_a_true_minus_and_powers_of_ten():
    from analysis.studies.text import sci

    assert sci(-998244352.0, 4) == "−9.982 × 10⁸"
    assert sci(-1e9, 4) == "−10⁹" and sci(1e-6, 4) == "10⁻⁶"
    assert sci(float("-inf"), 4) == "−∞" and sci(float("inf"), 4) == "∞"
    assert sci(-0.5, 4) == "−0.5" and sci(0.0, 4) == "0" and sci(2.5e-5, 4) == "2.5 × 10⁻⁵"


def test_the_cross_rows_sentence_names_whose_length_the_output_has():
    tail = "so the claim that the queries come from the encoder fails."
    assert st.cross_rows_sentence(5, 5, 11, "fails") == (
        f"Its output has 5 rows, the decoder's length, not the encoder's 11, {tail}")
    assert st.cross_rows_sentence(11, 5, 11, "holds") == (
        "Its output has 11 rows, the encoder's length, not the decoder's 5, so the claim that the queries come from "
        "the encoder holds.")
    assert st.cross_rows_sentence(5, 5, 5, "is inconclusive") == (
        "Its output has 5 rows, with 5 in the decoder and 5 in the encoder, so the claim that the queries come from "
        "the encoder is inconclusive.")


def test_the_rmsnorm_sentence_follows_the_installed_torch():
    assert st.rmsnorm_presence(True, "2.13.0", "fails") == (
        "The claim fails for torch 2.13.0, which has `torch.nn.RMSNorm`; torch 2.4 added it in July 2024.")
    assert st.rmsnorm_presence(False, "2.3.1", "holds") == (
        "The claim holds for torch 2.3.1, which has no `torch.nn.RMSNorm`; torch 2.4 added it in July 2024.")
