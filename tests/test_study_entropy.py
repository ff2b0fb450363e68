"""The entropy study's decisions and formatting, on small hand-made inputs whose answer is known."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import sympy as sp
from matplotlib.figure import Figure

from analysis.studies import entropy as st
from analysis.studies.entropy.figures import (architecture_clouds, bound_sampling, entropy_curves, lm_clouds,
                                              markov_curve)


def test_text_block_fences_the_lines_as_printed():
    assert st.text_block(["a: 1", "b:  2"]).data == "```text\na: 1\nb:  2\n```"


def test_plus_minus_rounds_both_to_the_same_decimals():
    assert st.plus_minus(1.14375, 0.03876, 4) == "1.1438 ± 0.0388"
    assert st.plus_minus(-1.0434, 0.0401, 3) == "-1.043 ± 0.040"


def test_symbolic_lines_print_label_and_value_when_the_identity_is_zero():
    x = sp.Symbol("x")
    assert st.symbolic_lines((("sum :", x + 1), ("difference:", sp.Integer(0))), (sp.Integer(0),)) == [
        "sum : x + 1", "difference: 0"]


def test_symbolic_lines_refuse_an_identity_that_is_not_zero():
    x = sp.Symbol("x")
    with pytest.raises(ValueError, match="did not reduce"):
        st.symbolic_lines((("difference:", x),), (x, sp.Integer(0)))


def test_spread_identity_lines_name_the_three_results():
    p, k = sp.symbols("p K")
    lines = st.spread_identity_lines({"direct": p, "closed_form": k, "difference": sp.Integer(0)})
    assert lines == ["direct sum : p", "closed form: K", "difference simplifies to: 0"]
    with pytest.raises(ValueError):
        st.spread_identity_lines({"direct": p, "closed_form": k, "difference": p - k})


def test_grouping_identity_lines_need_both_differences_zero():
    zero = sp.Integer(0)
    assert st.grouping_identity_lines({"difference": zero, "entropy_deficit_minus_kl": zero}) == [
        "H(q) - [h(p) + (1-p) H(r)]      = 0", "ln(m) - H(r) - KL(r || uniform) = 0"]
    with pytest.raises(ValueError):
        st.grouping_identity_lines({"difference": zero, "entropy_deficit_minus_kl": sp.log(2)})


def test_monotone_lines_keep_the_keys_as_the_record_holds_them():
    mono = {"1000": {"increases_on_notes_range": 0, "increases_on_full_range": 7}}
    peaks = {"1000": {"grid_max_minus_peak": -1.1e-13}}
    lines = st.monotone_lines(mono, peaks)
    assert len(lines) == 3 and lines[2] == f"{'1,000':>8s}  {0:>16d}  {7:>12d}  {'-1.1e-13':>21s}"
    assert all(len(line) <= 74 for line in lines)  # fits the column
    live = st.monotone_lines({10: {"increases_on_notes_range": 2, "increases_on_full_range": 3}},
                             {10: {"grid_max_minus_peak": 0.0}})
    assert live[2] == f"{'10':>8s}  {2:>16d}  {3:>12d}  {'0':>21s}"


def test_grid_gap_prints_an_exact_hit_of_the_peak_as_zero():
    assert st.grid_gap(0.0) == "0"
    assert st.grid_gap(-1.1e-13) == "-1.1e-13"
    assert st.grid_gap(2.5e-3) == "2.5e-03"


def test_monotone_text_says_never_only_when_no_step_increases():
    none = {"1000": {"increases_on_notes_range": 0}, "10000": {"increases_on_notes_range": 0}}
    assert st.monotone_text(none).startswith("In the notes' range it never increases, for any of the 2 values of ")
    some = {"1000": {"increases_on_notes_range": 2}, "10000": {"increases_on_notes_range": 3}}
    text = st.monotone_text(some)
    assert text.startswith("In the notes' range it increases at 5 steps, summed over the 2 values of ")
    assert "$" not in text and "math" in text  # K typeset for Markdown without maths


def test_increases_are_summed_over_the_classes():
    assert st.increases_on_notes_range({"10": {"increases_on_notes_range": 0},
                                        "20": {"increases_on_notes_range": 0}}) == 0
    assert st.increases_on_notes_range({1: {"increases_on_notes_range": 2}, 2: {"increases_on_notes_range": 3}}) == 5
    assert st.increases_on_notes_range({}) == 0


def test_closest_gap_is_the_smallest_over_all_cells():
    rows = [{"min_gap": 0.3}, {"min_gap": 4.27e-8}, {"min_gap": 0.01}]
    assert st.closest_gap(rows) == 4.27e-8
    assert st.closest_gap([{"min_gap": 0.5}, {"min_gap": -1e-3}]) == -1e-3  # a crossing of the bound shows
    with pytest.raises(ValueError):
        st.closest_gap([])


def test_sampled_text_says_where_the_closest_sample_lies_and_the_verdict():
    assert st.sampled_text(19_200, 4.27e-8, "holds") == (
        "Of 19,200 sampled distributions, the one closest to the bound lies 4.27e-08 nats below it: the claim that "
        "none exceeds the bound holds")
    assert st.sampled_text(100, -2e-3, "fails") == (
        "Of 100 sampled distributions, the one farthest over the bound lies 2.00e-03 nats above it: the claim that "
        "none exceeds the bound fails")
    assert st.sampled_text(100, 0.0, "inconclusive").endswith(
        "the one closest to the bound lies on it: the claim that none exceeds the bound is inconclusive")


def test_markov_text_gives_the_side_of_the_true_loss_and_the_verdict():
    assert st.markov_text(0.02703, 0.00171, "holds") == (
        "On the Markov source the model's validation loss is 0.0270 ± 0.0017 nats above the true model's loss on "
        "the same tokens: the claim that it stays above holds")
    assert st.markov_text(-0.01, 0.002, "fails") == (
        "On the Markov source the model's validation loss is 0.0100 ± 0.0020 nats below the true model's loss on "
        "the same tokens: the claim that it stays above fails")
    assert st.markov_text(0.0, 0.002, "inconclusive") == (
        "On the Markov source the model's validation loss equals the true model's loss on the same tokens: the "
        "claim that it stays above is inconclusive")


def test_provenance_names_the_corpus_on_the_live_run_only():
    sha = "f89ea14e58df0123456789"
    assert st.provenance_notes(["this build", "recorded: cpu"], sha) == [
        "this build, corpus sha256 f89ea14e58df", "recorded: cpu"]
    assert st.provenance_notes(["this build"], sha) == ["this build, corpus sha256 f89ea14e58df"]
    with pytest.raises(ValueError):
        st.provenance_notes([], sha)


def test_run_words_name_records_and_this_builds_run():
    assert st.run_words("cpu", True) == "the cpu-scale record"
    assert st.run_words("gpu", True, True) == "the gpu-scale record (stale)"
    assert st.run_words("smoke", False) == "this build's smoke-scale run"


def test_shown_runs_text_names_every_run_shown():
    assert st.shown_runs_text([("cpu", True, False)]) == "The token clouds below show the cpu-scale record"
    assert st.shown_runs_text([("smoke", False, False)]) == "The token clouds below show this build's smoke-scale run"
    assert st.shown_runs_text([("cpu", True, False), ("gpu", True, True)]) == (
        "The token clouds below show the cpu-scale record and the gpu-scale record (stale)")
    with pytest.raises(ValueError):
        st.shown_runs_text([])


@pytest.mark.parametrize("best, scales, text", [
    (("cpu", True, False), ["cpu"], "These verdicts rest on the cpu-scale record; no gpu-scale run has been recorded"),
    (("gpu", True, False), ["cpu", "gpu"], "These verdicts rest on the gpu-scale record"),
    (("gpu", False, False), ["cpu"], "These verdicts rest on this build's gpu-scale run"),
    (("cpu", True, True), ["cpu"], "These verdicts rest on the cpu-scale record (stale); no gpu-scale run has been "
                                   "recorded"),
    (("smoke", False, False), [], "These verdicts rest on this build's smoke-scale run, a model trained for seconds, "
                                  "so they say little about calibration"),
])
def test_calibration_evidence_names_the_best_run_and_a_missing_gpu_run(best, scales, text):
    assert st.calibration_evidence(*best, scales) == text


def test_architectures_put_the_transformer_first():
    data = {"real": {"parameters": 1}, "others": {"GAU": {"parameters": 2}, "FLASH": {"parameters": 3}}}
    assert list(st.architectures(data)) == ["Transformer", "GAU", "FLASH"]
    assert list(st.architectures({"real": {"parameters": 1}})) == ["Transformer"]


def test_parameters_text_lists_every_architecture():
    arch = {"Transformer": {"parameters": 254_592}, "GAU": {"parameters": 261_376}}
    assert st.parameters_text(arch) == "Transformer 254,592, GAU 261,376 parameters"


def _snap(step, loss, entropy, excess, gap=0.07, se=0.015):
    return {"step": step, "val_loss": loss, "mean_entropy": entropy, "loss_minus_entropy": gap,
            "loss_minus_entropy_se": se, "max_excess_over_bound": excess, "loss": [loss, loss + 0.5],
            "entropy": [entropy, entropy - 0.1], "window_loss_minus_entropy": [gap - 0.3, gap + 0.3]}


def test_calibration_lines_state_the_last_snapshot_and_the_largest_excess_of_any():
    arch = {"Transformer": {"snapshots": [_snap(0, 5.5, 5.5, -0.2), _snap(10, 1.8834, 1.8131, -0.013)]},
            "GAU": {"snapshots": [_snap(0, 5.5, 5.5, -0.0021), _snap(10, 1.725, 1.643, -0.5, 0.082, 0.014)]}}
    # two windows, whose L - H differ by 0.6 nats (SE 0.3), about the recorded mean
    assert st.calibration_lines(arch).split("\n") == [
        ("- Transformer: loss 1.883, entropy 1.813, loss - entropy 0.070 ± 0.300 nats (SE over 2 evaluation "
         "windows), closest token at any snapshot 0.013 below the bound"),
        ("- GAU: loss 1.725, entropy 1.643, loss - entropy 0.082 ± 0.300 nats (SE over 2 evaluation "
         "windows), closest token at any snapshot 0.0021 below the bound")]


def test_bound_distance_text_words_the_side_of_the_bound():
    assert st.bound_distance_text(-0.013) == "closest token at any snapshot 0.013 below the bound"
    assert st.bound_distance_text(0.5) == "a token 0.5 above the bound"
    assert st.bound_distance_text(0.0) == "a token on the bound"


def test_calibration_key_names_the_claim_of_each_architecture():
    assert [st.calibration_key(n) for n in ("Transformer", "GAU", "FLASH")] == [
        "lm-calibration", "lm-calibration-gau", "lm-calibration-flash"]


def test_calibration_summary_groups_the_architectures_by_what_their_verdicts_say():
    same = [("Transformer", "fails", 0.07), ("GAU", "fails", 0.08), ("FLASH", "fails", 0.06)]
    assert st.calibration_summary(same) == "at this budget the Transformer, GAU and FLASH are all over-confident"
    mixed = [("Transformer", "holds", 0.001), ("GAU", "fails", -0.08), ("FLASH", "inconclusive", 0.06),
             ("Other", "holds within 3.7%", 0.0)]
    assert st.calibration_summary(mixed) == (
        "at this budget the Transformer and Other are calibrated within the noise; GAU is under-confident; FLASH is "
        "undecided")
    assert st.calibration_summary([("Transformer", "fails", 0.07)]) == (
        "at this budget the Transformer is over-confident")


def test_calibration_verdicts_name_each_architecture_in_order():
    verdicts = {"lm-calibration": "holds", "lm-calibration-gau": "fails", "lm-calibration-flash": "inconclusive"}
    assert st.calibration_verdicts(verdicts.__getitem__, ["Transformer", "GAU", "FLASH"]) == (
        "holds for the Transformer, fails for GAU and is inconclusive for FLASH")
    assert st.calibration_verdicts(verdicts.__getitem__, ["Transformer"]) == "holds for the Transformer"
    same = {"lm-calibration": "fails", "lm-calibration-gau": "fails", "lm-calibration-flash": "fails"}
    assert st.calibration_verdicts(same.__getitem__, ["Transformer", "GAU", "FLASH"]) == (
        "fails for each of the Transformer, GAU and FLASH")


def test_the_comparison_of_calibration_gaps_singles_out_only_what_its_family_of_intervals_resolves():
    """The chapter once called GAU alone over-confident while the three gaps, 0.070, 0.082 and 0.059, were not told
    apart: the wording now comes from the paired differences, judged as one family (Bonferroni)."""
    from analysis.core.stats import Estimate, t_quantile

    def gap(t_value):
        return Estimate(t_value * 0.01, 0.01, 160, "evaluation windows")

    assert st.calibration_comparison({}) == "Only one architecture was run, so none is compared with another."
    none = st.calibration_comparison({("Transformer", "GAU"): gap(-1.2), ("GAU", "FLASH"): gap(1.0)})
    assert none.endswith("none excludes 0: no architecture is more or less over-confident than another.")
    assert "the Transformer minus GAU -0.012 ± 0.010" in none and "97.5% (Bonferroni for 2 differences)" in none
    # t = 2.2 clears a single 95% interval (1.97) but not three at 98.3% (2.42): not resolved in the family
    assert t_quantile(159) < 2.2 < t_quantile(159, 1 - 0.05 / 3)
    three = {("Transformer", "GAU"): gap(2.2), ("Transformer", "FLASH"): gap(0.5), ("GAU", "FLASH"): gap(2.7)}
    text = st.calibration_comparison(three)
    assert text.endswith("GAU's gap is larger than FLASH's; no other difference is resolved from 0.")


def test_the_figures_draw_hand_made_data_with_labels():
    snaps = [_snap(0, 5.5, 5.5, -0.2), _snap(10, 2.0, 1.9, -0.01)]
    lm = {"real": {"snapshots": snaps}, "others": {"GAU": {"snapshots": snaps}}}
    rows = [{"p": p, "concentration": c, "loss": 0.7, "median_gap": 0.1 / c, "entropy_sample": [3.0, 3.1]}
            for p in (0.5, 0.9) for c in (1.0, 100.0)]
    markov = {"train_steps": [1, 2, 3], "train_loss": [3.2, 2.9, 2.6], "entropy_rate": 2.36, "uniform_loss": 3.26,
              "model_loss": 2.5, "excess_loss_se": 0.04, "tokens": 1000}
    figs = [entropy_curves((10, 1000), (0.01, 0.99)), bound_sampling({"rows": rows, "classes": 100}),
            lm_clouds([("live", lm), ("again", lm)]), markov_curve(markov, "title"), architecture_clouds(lm)]
    for fig in figs:
        assert isinstance(fig, Figure)
        panels = [ax for ax in fig.axes if ax.has_data() and not hasattr(ax, "_colorbar")]
        assert panels and all(ax.get_xlabel() and ax.get_title() for ax in panels)
        plt.close(fig)
    assert len(figs[2].axes) == 2 * 2 + 1  # two runs by two snapshots, and one colour bar
    assert len(figs[4].axes) == 4  # two architectures' clouds, the calibration panel and the shared colour bar


def test_the_recorded_calibration_is_the_mean_of_every_token_with_its_windows_as_units():
    from pathlib import Path

    from analysis.core.results import find_record
    from analysis.studies.entropy.experiments.entropy_lm import calibration_estimate

    record = find_record("entropy-lm", "cpu", Path(__file__).resolve().parents[1] / "results")
    ctx = record.config["model"]["ctx"]
    for run in st.architectures(record.data).values():
        late = run["snapshots"][-1]
        est = calibration_estimate(late)
        assert est.n * ctx == late["tokens"] and len(late["loss"]) < late["tokens"]  # all tokens, not the plotted ones
        assert est.value == pytest.approx(late["loss_minus_entropy"], rel=1e-9)


def test_range_reading_says_right_only_when_the_entropy_never_rises():
    assert st.range_reading(0) == "their figures are right about their range"
    assert st.range_reading(0, "The notes' figures") == "The notes' figures are right about their range"
    assert st.range_reading(3) == "their figures miss 3 rises of the entropy on their range"


def test_predicted_gap_is_the_margins_large_c_law():
    assert st.predicted_gap(0.5, 10.0, 1_000) == pytest.approx(0.5 * 998 / (2 * (9_990 + 1)))
    assert st.predicted_gap(1.0, 10.0, 1_000) == 0.0


def _cells(factor: float, cs=(1.0, 10.0, 100.0, 1_000.0), ps=(0.1, 0.9)) -> list[dict]:
    """Sampled cells whose median gap is ``factor`` times the large-c law (and 10 times it at c = 1)."""
    return [{"p": p, "concentration": c, "median_gap": (10 if c < 10 else factor) * st.predicted_gap(p, c, 1_000)}
            for p in ps for c in cs]


def test_gap_slope_text_fits_the_large_c_cells_only():
    text = st.gap_slope_text(_cells(1.02), 1_000)
    assert text == ("For c ≥ 10 the median gap has a log–log slope against c of -1.000 over the 2 values of p, "
                    "against -1.000 for the margin's large-c law, and differs from that law by at most 2.0%")


def test_gap_slope_text_reports_a_slope_range_and_a_gap_off_the_law():
    rows = _cells(1.0)
    for r in rows:  # the gap of p = 0.9 shrinks like 1/sqrt(c), not 1/c
        if r["p"] == 0.9 and r["concentration"] >= 10:
            r["median_gap"] = st.predicted_gap(0.9, 10.0, 1_000) * (r["concentration"] / 10) ** -0.5
    text = st.gap_slope_text(rows, 1_000)
    assert text.startswith("For c ≥ 10 the median gap has a log–log slope against c of -1.000 to -0.500 over the ")
    assert text.endswith("and differs from that law by at most 899.9%")
    with pytest.raises(ValueError, match="two concentrations"):
        st.gap_slope_text(_cells(1.0, cs=(1.0, 10.0)), 1_000)


def _cloud(step: int, fraction: float, gap: float, loss: float, entropies: list[float]) -> dict:
    return {"step": step, "val_loss": loss, "median_fraction_of_bound": fraction, "median_gap_to_bound": gap,
            "loss": [loss] * len(entropies), "entropy": entropies}


def test_lm_bound_text_says_training_pulls_below_only_when_the_median_share_falls():
    from analysis.theory import entropy as ent

    top = float(ent.entropy_upper_bound(5.47, 256))
    start = _cloud(0, 0.997, 0.019, 5.47, [top - 0.001, top - 0.027])
    text = st.lm_bound_text([start, _cloud(600, 0.559, 2.016, 1.88, [1.0])], 256)
    assert text == ("At initialisation every plotted point lies within 0.027 nats of the bound, at a mean loss of 5.47 "
                    "against ln 256 = 5.55 for a uniform prediction. The median token's entropy is 99.7% of the "
                    "bound. Training pulls the cloud below it: after 600 steps the median token's entropy is 55.9% "
                    "of the bound, 2.02 nats below it. A trained model does not spread its doubt evenly, so the "
                    "notes' curve is the worst case, not the typical one.")
    flat = st.lm_bound_text([start, _cloud(1_000, 0.998, 0.01, 5.4, [1.0])], 256)
    assert flat.endswith("Training does not pull the cloud below it: after 1,000 steps the median token's entropy is "
                         "99.8% of the bound, 0.01 nats below it.")


def test_trained_bound_text_gives_each_models_share_of_the_bound_first_and_last():
    def run(start, fraction, step=0):
        return {"snapshots": [{"step": step, "median_fraction_of_bound": start},
                              {"step": 600, "median_fraction_of_bound": fraction}]}

    arch = {"Transformer": run(0.997, 0.5591), "GAU": run(0.368, 0.5626), "FLASH": run(0.688, 0.5597)}
    assert st.trained_bound_text(arch) == (
        "After training, the median token's entropy is 56%, 56% and 56% of the bound for the Transformer, GAU and "
        "FLASH, against 100%, 37% and 69% at initialisation")
    assert st.trained_bound_text({"GAU": run(0.368, 0.5626, step=40)}) == (
        "After training, the median token's entropy is 56% of the bound for GAU, against 37% at the first snapshot, "
        "step 40")
