"""The deep-GAU chapter's decisions, on small hand-made inputs."""

import math

import pytest

from analysis.studies.chapter import RunSet
from analysis.core.stats import paired_estimate
from analysis.studies import deep_gau as st
from analysis.studies.deep_gau.experiments import deep_gau as dg


def _summary(gau_deep_warm: float = 3e-3) -> dict:
    """A summary as analysis.studies.deep_gau.experiments.deep_gau.summary returns it, for depths 2 and 24 and warmup 0 and 50."""
    bounds = {"post-norm GAU": {0: [3e-2, 3e-3], 50: [3e-2, gau_deep_warm]},
              "post-norm Transformer": {0: [1e-2, 0.0], 50: [3e-2, 0.0]},
              "pre-norm Transformer": {0: [3e-2, 3.2e-3], 50: [3e-2, 3e-2]},
              "DeepNorm Transformer": {0: [3e-2, 3e-3], 50: [1e-2, 1e-2]}}
    return {"depths": [2, 24], "depth": 24, "warmup": 50, "boundaries": bounds, "grid_step": 3.1623,
            "threshold": 3.044, "unigram": 3.1159, "gau": {"val_loss": 2.9384, "se": 0.01},
            "post": {"val_loss": 3.147, "se": 0.01}, "pre": {"val_loss": 2.948, "se": 0.01},
            "deepnorm": {"val_loss": 2.6909, "se": 0.01}, "gau_vs_post": "smaller than",
            "gau_vs_pre": "indistinguishable from", "gau_vs_deepnorm": "larger than",
            "gaps": {"post": paired_estimate([2.9, 2.8], [3.15, 3.14]), "pre": None, "deepnorm": None},
            "failures": {"runs": 192, "failed": 90, "diverged": 0, "context_free": 77, "above": 13, "peak": 1.0512,
                         "steps": 120}}


def test_warmup_label():
    assert st.warmup_label(0) == "no warmup"
    assert st.warmup_label(50) == "warmup 50 steps"


def test_boundary_table_has_a_line_per_architecture_and_warmup_with_zeros_shown():
    lines = st.boundary_table(_summary()).splitlines()
    assert lines[0] == "largest learning rate that trains every seed (0: none) at depths 2, 24 (layers)"
    assert len(lines) == 1 + 4 * 2
    assert lines[3] == f"  {'post-norm Transformer':22s} {'no warmup':16s}: 0.01, 0"
    assert lines[4].startswith("  post-norm Transformer  warmup 50 steps ")


def test_threshold_facts_give_the_margin_below_the_unigram_entropy():
    f = st.threshold_facts(_summary())
    assert f == {"deep_margin": "0.072", "deep_unigram": "3.116 nats/byte", "deep_step": "3.16"}


def test_loss_facts_compare_gau_with_each_transformer():
    f = st.loss_facts(_summary())
    assert f == {"deep_g0": "2.938", "deep_t0": "3.147", "deep_vs_t0": "smaller than", "deep_p0": "2.948",
                 "deep_vs_p0": "indistinguishable from", "deep_n0": "2.691", "deep_vs_n0": "larger than",
                 "deep_interval": "a 95% Student-t interval over 2 paired seeds (1 df, ±12.7 SE)"}


def test_failure_sentence_counts_how_the_untrained_runs_failed():
    # a record without half-budget losses: only where the runs ended
    assert st.failure_sentence(_summary()) == (
        "In 120 steps, 90 of the 192 runs did not train: none diverged, 77 ended at the context-free loss and 13 "
        "above it. No training loss rose above 1.05 times the first.")
    s = _summary()
    s["failures"] |= {"slow": 12, "stalled": 78, "stalled_flat": 70}
    words = st.failure_sentence(s)
    assert "none diverged, 12 were slow and 78 stalled, 70 of them at the context-free loss." in words
    s["failures"] |= {"diverged": 2, "slow": 1, "stalled": 41, "stalled_flat": 41}
    assert "2 diverged, 1 was slow and 41 stalled, all of them at the context-free loss." in st.failure_sentence(s)
    s["failures"] |= {"slow": 0, "stalled": 0, "stalled_flat": 0}
    assert "2 diverged, none was slow and none stalled." in st.failure_sentence(s)


def test_stalled_words_cover_all_some_none_and_one():
    assert st.stalled_words(0, 0) == "none stalled"
    assert st.stalled_words(41, 41) == "41 stalled, all of them at the context-free loss"
    assert st.stalled_words(78, 70) == "78 stalled, 70 of them at the context-free loss"
    assert st.stalled_words(5, 0) == "5 stalled, none of them at the context-free loss"
    assert st.stalled_words(1, 1) == "1 stalled, at the context-free loss"
    assert st.stalled_words(1, 0) == "1 stalled, above the context-free loss"
    assert st.count_word(0) == "none" and st.count_word(3) == "3"


def _grads(first: float, peak: float, trained_n: int = 2) -> dict:
    return {"first": first, "peak": peak, "peak_step": 3.0, "late_peak": 0.5, "final": 0.25,
            "trained_n": float(trained_n), "trained_final": 7.5 if trained_n else float("nan"),
            "trained_clipped": 1.0 if trained_n else float("nan")}


def test_gradient_sentence_names_each_first_norm_and_what_the_clip_does_to_the_runs_that_trained():
    s = _summary()
    s["grads"] = {"post-norm GAU": _grads(619.0, 11.7), "post-norm Transformer": _grads(4.43, 1.3),
                  "pre-norm Transformer": _grads(3.1, 1.0), "DeepNorm Transformer": _grads(2.0, 1.0)}
    words = st.gradient_sentence(s)
    assert "the first step's gradient norm is 619 for post-norm GAU, against 4.43 for the post-norm Transformer, " \
           "3.1 for the pre-norm Transformer and 2 for the DeepNorm Transformer" in words
    assert "GAU's rises to 11.7 times its first by step 3;" in words
    assert "the median norm is 0.25. That median mixes the runs that stalled, whose gradients vanish, with the 2 " \
           "that trained: these end at a median of 7.5 and are clipped at 100% of their steps." in words
    assert "No run diverged" not in words  # the failure sentence already counts the diverged runs
    assert words.endswith("The clip is not what bounds an update: AdamW divides each gradient by "
                          "its running RMS, so a weight moves by about the learning rate per step, clipped or not; "
                          "clipping changes how much one step's gradient weighs in the running moments.")
    s["grads"]["post-norm GAU"] = _grads(5.0, 1.0, trained_n=0)
    words = st.gradient_sentence(s)
    assert "GAU's never exceeds its first;" in words and "No GAU run at that depth trained." in words
    s["failures"] = {**s["failures"], "diverged": 1}
    assert "The clip is not what bounds" not in st.gradient_sentence(s)
    s["grads"]["post-norm GAU"] = _grads(float("nan"), float("nan"))
    assert st.gradient_sentence(s) == ""


def test_grad_facts_separate_the_runs_that_trained():
    from analysis.studies.deep_gau.experiments.deep_gau import grad_facts

    stalled = {"grad_norm": [8.0] + [0.01] * 19}
    good = {"grad_norm": [8.0] + [4.0] * 9 + [0.5] * 10}
    f = grad_facts([stalled, good], [good])
    assert f["first"] == 8.0 and f["trained_n"] == 1 and f["trained_final"] == 0.5
    assert f["trained_clipped"] == 0.5 and f["final"] == (0.01 + 0.5) / 2
    assert math.isnan(grad_facts([stalled])["trained_final"]) and grad_facts([stalled])["trained_n"] == 0


def test_drift_sentence_lists_the_boundaries_that_moved():
    s = _summary()
    s["half_step"] = 120
    s["failures"]["steps"] = 240
    s["half_boundaries"] = {name: {w: list(b) for w, b in by.items()} for name, by in s["boundaries"].items()}
    assert st.drift_sentence(s) == ("Between step 120 and step 240, the boundaries at depth 24 did not move, for every "
                                    "architecture with and without warmup.")
    s["half_boundaries"]["post-norm GAU"][0][-1] = 1e-3
    assert st.drift_sentence(s) == ("Between step 120 and step 240, the boundaries at depth 24 moved for "
                                    "post-norm GAU, no warmup (0.001 to 0.003), and stayed for the other 7.")
    s["half_boundaries"]["DeepNorm Transformer"][50][-1] = 0.0
    assert st.drift_sentence(s).endswith("and DeepNorm Transformer, warmup 50 steps (0 to 0.01) (0: no learning rate "
                                         "trains every seed), and stayed for the other 6.")
    s["half_boundaries"] = None
    assert st.drift_sentence(s) == ""


def test_previous_facts_come_from_the_two_runs_and_name_them():
    init = RunSet("recorded, cpu scale", {"grid": [
        {"init": "lecun", "s": 128, "n": 512, "d": 768, "e": 1536, "rms": 1 / 18.2, "pred_rms_source": 1 / 89.4},
        {"init": "lecun", "s": 64, "n": 128, "d": 768, "e": 1536, "rms": 0.5, "pred_rms_source": 0.5}]},
        "recorded", "cpu", recorded=True)
    coord = RunSet("this build (smoke scale)", {"rows": [
        {"block": "gau", "step": 0, "width": 64, "depth": 2, "median": 0.9},
        {"block": "gau", "step": 0, "width": 512, "depth": 8, "median": 1.184},
        {"block": "gau", "step": 10, "width": 512, "depth": 8, "median": 5.0},
        {"block": "transformer", "step": 0, "width": 1024, "depth": 8, "median": 0.1}]}, "live", "smoke")
    f = st.previous_facts(init, coord)
    assert f["prev_coord"] == "1.18" and f["prev_coord_where"] == "width 512, 16 GAU layers"
    assert f["prev_provenance"] == "gau-init (recorded at cpu scale) and coord-check (run by this build at smoke scale)"
    assert f["prev_where"] == "s = 128, n = 512, d = 768" and f["prev_bidir"] == "18" and f["prev_source"] == "89"


def _data() -> dict:
    """Two depths, post-norm GAU and the post-norm Transformer, two seeds, one warmup, three learning rates: GAU
    trains at all at depth 2 and at depth 24 stalls at the context-free loss from 0.01 on; the Transformer diverges
    at depth 24 from 0.01 on."""
    runs = []
    for depth, block, lr, seed, val, div in [
            (2, "gau", 1e-3, 0, 2.7, None), (2, "gau", 1e-3, 1, 2.72, None),
            (2, "gau", 1e-2, 0, 2.5, None), (2, "gau", 1e-2, 1, 2.55, None),
            (24, "gau", 1e-3, 0, 2.9, None), (24, "gau", 1e-3, 1, 2.85, None),
            (24, "gau", 1e-2, 0, 3.15, None), (24, "gau", 1e-2, 1, 3.14, None),
            (2, "transformer", 1e-3, 0, 2.8, None), (2, "transformer", 1e-3, 1, 2.75, None),
            (2, "transformer", 1e-2, 0, 2.6, None), (2, "transformer", 1e-2, 1, 2.6, None),
            (24, "transformer", 1e-3, 0, 3.1, None), (24, "transformer", 1e-3, 1, 3.05, None),
            (24, "transformer", 1e-2, 0, float("nan"), 7), (24, "transformer", 1e-2, 1, 3.2, None),
            (2, "gau", 1e-1, 0, 2.6, None), (2, "gau", 1e-1, 1, 2.6, None),
            (24, "gau", 1e-1, 0, 3.13, None), (24, "gau", 1e-1, 1, 3.12, None),
            (2, "transformer", 1e-1, 0, 2.7, None), (2, "transformer", 1e-1, 1, 2.7, None),
            (24, "transformer", 1e-1, 0, float("nan"), 5), (24, "transformer", 1e-1, 1, float("nan"), 5)]:
        runs.append({"depth": depth, "block": block, "residual": "post", "warmup": 0, "lr": lr, "seed": seed,
                     "val_loss": val, "diverged_at": div, "train_loss": [5.0, 4.0, 5.5 if div else 3.0],
                     "train_steps": [1, 11, 21]})
    return {"unigram_entropy": 3.12, "threshold": 3.05, "runs": runs}


def test_stable_boundary_counts_only_divergence_as_failure():
    data = _data()
    assert dg.boundary(data, 24, "gau", "post", 0) == 1e-3
    assert dg.stable_boundary(data, 24, "gau", "post", 0) == 1e-1
    assert dg.stable_boundary(data, 24, "transformer", "post", 0) == 1e-3


def test_depth_range_spans_both_readings_of_a_stalled_run():
    data = _data()
    lo, hi = dg.depth_range(data, "gau", "post")
    assert (lo, hi) == (pytest.approx(0.01), pytest.approx(1.0))
    lo, hi = dg.depth_range(data, "transformer", "post")
    assert lo == 0.0 and hi == pytest.approx(0.01)  # nothing trains at depth 24; it diverges from 0.01 on


def test_failure_modes_tell_diverged_from_context_free_from_still_descending():
    f = dg.failure_modes(_data())
    assert (f["failed"], f["diverged"], f["context_free"], f["above"]) == (9, 3, 5, 1)
    assert f["peak"] == pytest.approx(1.1) and f["steps"] == 21


def test_gap_words_read_the_paired_t_interval():
    assert dg.gap_words(paired_estimate([2.9, 2.8], [3.15, 3.06])) == "smaller than"
    # the same mean gap with a spread of 0.09 between two seeds: ±12.7 SE reaches past 0
    assert dg.gap_words(paired_estimate([2.9, 2.8], [3.15, 3.14])) == "indistinguishable from"
    assert dg.gap_words(paired_estimate([2.9], [2.7])) == "undecided against (one seed)"
    assert dg.gap_words(None).startswith("not comparable")


def test_a_stalled_deep_boundary_makes_the_depth_claim_inconclusive_not_failed():
    claims = {c.key: c for c in dg.claims(_data(), "test")}
    c = claims["gau-lr-depth"]
    assert c.kind == "above" and c.verdict == "inconclusive"
    assert c.measured - c.tolerance == pytest.approx(0.01) and c.measured + c.tolerance == pytest.approx(1.0)
    # had the stalled runs diverged, the fall of two grid steps would be shown: the claim fails
    data = _data()
    for r in data["runs"]:
        if r["depth"] == 24 and r["block"] == "gau" and r["lr"] > 1e-3:
            r["diverged_at"], r["val_loss"] = 9, float("nan")
    assert {c.key: c for c in dg.claims(data, "test")}["gau-lr-depth"].verdict == "fails"


def test_runs_phrase_names_a_shared_origin_once():
    cpu = RunSet("recorded, cpu scale", {}, "recorded", "cpu", recorded=True)
    stale = RunSet("recorded, cpu scale (stale)", {}, "recorded", "cpu", recorded=True, stale=("code changed",))
    assert st.runs_phrase({"a": cpu, "b": cpu}) == "a and b, both recorded at cpu scale"
    assert st.runs_phrase({"a": cpu}) == "a, recorded at cpu scale"
    assert st.runs_phrase({"a": cpu, "b": cpu, "c": cpu}) == "a, b and c, all recorded at cpu scale"
    assert st.runs_phrase({"a": cpu, "b": stale}) == "a (recorded at cpu scale) and b (recorded at cpu scale, stale)"


def _with_half(data: dict, half: dict) -> dict:
    """``data`` with every run's validation windows at the end and at half the budget (step 6): two windows, about
    the run's loss +- 0.01, and at half the budget the loss plus ``half[(depth, block, lr)]`` (0 by default); a run
    that diverged after step 6 stood at 3.2 there."""
    for r in data["runs"]:
        rise = half.get((r["depth"], r["block"], r["lr"]), 0.0)
        gone = r["diverged_at"] is not None
        r["half_step"] = 6
        r["val_windows"] = [] if gone else [r["val_loss"] - 0.01, r["val_loss"] + 0.01]
        r["val_half_windows"] = [] if gone and r["diverged_at"] < 6 else (
            [3.2, 3.2] if gone else [r["val_loss"] + rise - 0.01, r["val_loss"] + rise + 0.012])
        r["val_half"] = sum(r["val_half_windows"]) / 2 if r["val_half_windows"] else float("nan")
        r["grad_norm"] = [2.0, 8.0, 1.0, 0.5] if r["block"] == "gau" else [1.0, 1.5, 0.8, 0.6]
    return data


def test_failure_kinds_tell_slow_from_stalled_by_the_late_fall():
    # GAU at depth 24 and 1e-3 trained; at 1e-2 (3.15, 3.14) it fell by 0.2 over the second half: slow, since 3.15
    # is 0.1 above the threshold; at 1e-1 it stood still: stalled at the context-free loss
    data = _with_half(_data(), {(24, "gau", 1e-2): 0.2})
    run = {(r["depth"], r["block"], r["lr"], r["seed"]): r for r in data["runs"]}
    assert dg.failure_kind(data, run[(24, "gau", 1e-3, 0)]) == "trained"
    assert dg.failure_kind(data, run[(24, "gau", 1e-2, 0)]) == "slow"
    assert dg.failure_kind(data, run[(24, "gau", 1e-1, 0)]) == "stalled"
    assert dg.failure_kind(data, run[(24, "transformer", 1e-1, 0)]) == "diverged"
    drop = dg.late_drop(run[(24, "gau", 1e-2, 0)])
    assert drop.value == pytest.approx(0.201) and drop.n == 2 and drop.units == "validation windows"
    f = dg.failure_modes(data)
    assert (f["failed"], f["diverged"], f["slow"], f["stalled"]) == (9, 3, 2, 4)
    assert f["stalled_flat"] == 3  # GAU at 1e-1 and the Transformer at 1e-3 (seed 0), at the unigram entropy
    assert math.isnan(dg.failure_modes(_data())["slow"])  # a record without half-budget losses


def test_at_half_reads_each_run_where_it_stood_half_way():
    data = _with_half(_data(), {(24, "gau", 1e-2): 0.2})
    half = dg.at_half(data)
    run = {(r["depth"], r["block"], r["lr"], r["seed"]): r for r in half["runs"]}
    assert run[(24, "gau", 1e-2, 0)]["val_loss"] == pytest.approx(3.351)
    assert run[(24, "transformer", 1e-1, 0)]["diverged_at"] == 5  # diverged before half the budget
    assert math.isnan(run[(24, "transformer", 1e-1, 0)]["val_loss"])
    tfm = run[(24, "transformer", 1e-2, 0)]  # diverged at step 7, after half the budget: not yet there
    assert tfm["diverged_at"] is None and tfm["val_loss"] == pytest.approx(3.2)
    assert dg.boundary(half, 24, "gau", "post", 0) == 1e-3 and dg.boundary(half, 2, "gau", "post", 0) == 1e-1
    with pytest.raises(ValueError, match="half-budget"):
        dg.at_half(_data())


def test_grad_facts_summarise_the_norms_before_clipping():
    g = dg.grad_facts([{"grad_norm": [2.0, 8.0, 1.0, 0.5] * 5}, {"grad_norm": [4.0, 4.0, 2.0, 1.0] * 5}])
    assert g["first"] == pytest.approx(3.0) and g["peak"] == pytest.approx(4.0) and g["peak_step"] == 2
    assert g["late_peak"] == pytest.approx(4.0)  # after the first tenth (2 steps of 20): 8 / 2 again at step 6
    assert g["final"] == pytest.approx(1.125)  # the median of the runs' last-tenth medians, 0.75 and 1.5
    assert math.isnan(dg.grad_facts([])["first"])


def test_moving_average_is_the_trailing_mean_and_checks_its_window():
    assert dg.moving_average([1.0, 2.0, 3.0, 4.0], 2).tolist() == [1.5, 2.5, 3.5]
    assert dg.moving_average([1.0, 2.0], 1).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="window must be in"):
        dg.moving_average([1.0, 2.0], 3)


def test_a_boundary_that_moved_with_the_budget_is_not_a_verdict():
    assert dg.drift_words((0.1, 0.1), (0.1, 0.1), 120, 240) == ""
    assert dg.drift_words((0.1, 1.0), (0.1, 0.9), 120, 240) == ""  # within the final range's half width
    words = dg.drift_words((0.1, 0.1), (1.0, 1.0), 120, 240)
    assert words.startswith("still moving with the budget") and "0.1 to 0.1 at step 120" in words


def test_a_comparison_that_changed_over_the_second_half_is_not_a_verdict():
    def gau_vs_post(data: dict):
        return {c.key: c for c in dg.claims(data, "test")}["gau-vs-postnorm-transformer"]

    steady = gau_vs_post(_with_half(_data(), {}))
    assert not steady.undecided and "at step 6 the gap was -0.200" in steady.tolerance_basis
    # half way, the Transformer at 1e-3 stood 0.3 lower: GAU's loss was then larger than its, not smaller
    moved = gau_vs_post(_with_half(_data(), {(24, "transformer", 1e-3): -0.3}))
    assert moved.verdict == "inconclusive"
    assert moved.undecided.startswith("the comparison changed over the second half of the budget: larger than 0")


def test_stalled_runs_count_as_failures_and_slow_ones_as_trainable():
    # without half-budget losses a run that did not diverge might still train: GAU's range is 0.01 to 1
    assert dg.depth_range(_data(), "gau", "post") == (pytest.approx(0.01), pytest.approx(1.0))
    # with them, GAU at depth 24 stalls at 1e-2 and 1e-1: both readings give 1e-3 / 1e-1
    stalled = _with_half(_data(), {})
    assert dg.stable_boundary(stalled, 24, "gau", "post", 0) == 1e-3
    assert dg.depth_range(stalled, "gau", "post") == (pytest.approx(0.01), pytest.approx(0.01))
    claim = {c.key: c for c in dg.claims(stalled, "test")}["gau-lr-depth"]
    assert claim.verdict == "fails" and not claim.undecided
    # a slow run at 1e-2 might still train: the upper reading rises to 1e-2 / 1e-1
    slow = _with_half(_data(), {(24, "gau", 1e-2): 0.2})
    assert dg.depth_range(slow, "gau", "post") == (pytest.approx(0.01), pytest.approx(0.1))


def test_previous_facts_give_the_branch_exponent_of_a_recorded_sweep():
    init = RunSet("recorded, cpu scale", {"grid": [
        {"init": "lecun", "s": 128, "n": 512, "d": 768, "e": 1536, "rms": 1 / 18.2, "pred_rms_source": 1 / 89.4}],
        "sweep": {"rows": [{"lambda": lam, "rms": lam ** 9, "rms_std": 0.0} for lam in (0.25, 0.4, 0.7, 1.2, 1.5)]},
        "seeds": 2}, "recorded", "cpu", recorded=True)
    coord = RunSet("x", {"rows": [{"block": "gau", "step": 0, "width": 64, "depth": 2, "median": 0.9}]}, "live",
                   "smoke")
    assert st.previous_facts(init, coord)["prev_half_p"] == "9.00"


def test_the_gpu_reach_says_what_one_seed_and_a_short_run_leave_open():
    import dataclasses

    from analysis.studies.deep_gau import gpu_reach
    from analysis.studies.deep_gau.experiments import deep_gau as dg

    gpu = dg.CONFIGS["gpu"]
    one = dataclasses.replace(gpu, seeds=(0,), steps=300)
    text = gpu_reach(240, one)
    assert text.startswith(f"The gpu configuration trains d = {gpu.d} at depths 12 and 48")
    assert "with 1 seed per setting" in text and "fixed margin" in text
    assert "Its 300 steps are less than twice this run's 240" in text
    three_long = dataclasses.replace(gpu, seeds=(0, 1, 2), steps=1000)
    text = gpu_reach(240, three_long)
    assert "with 3 seeds per setting" in text and "fixed margin" not in text and "less than twice" not in text


def test_the_lambda7_claim_is_told_apart_from_the_exponent_gau_init_measures():
    """The claim names gau-init's exponent as its rival, a pass must tell the two apart, and the prose says whether
    the run can."""
    import dataclasses
    from pathlib import Path

    from analysis.core.results import find_record
    from analysis.studies.deep_gau.experiments import deep_gau_init as dgi
    from analysis.studies.deep_gau.init_depth import half_judgement
    from analysis.studies.gau_init.experiments import gau_init as gi

    results = Path(__file__).resolve().parents[1] / "results"
    init, deep = find_record("gau-init", "cpu", results), find_record("deep-gau-init", "cpu", results)
    p = gi.exponent_at_half(init.data["sweep"], init.data["seeds"])[0]
    claim = next(c for c in dgi.claims(deep.data, "recorded-cpu") if c.key == "eps-lambda7")
    assert claim.alternative == pytest.approx(-p) and claim.rival_gap == pytest.approx(p - 7)
    assert claim.verdict == ("inconclusive" if claim.detectable > claim.rival_gap else claim.verdict)
    assert claim.verdict != "holds" or claim.detectable < claim.rival_gap  # a pass must tell 7 from gau-init's p
    text = half_judgement(claim)
    if claim.detectable > claim.rival_gap:
        assert text == (f"Against the source's 7, the claim is inconclusive. The run detects differences in p only of "
                        f"{claim.detectable:.3g} or more, and the source's 7 and the previous chapter's {p:.3g} differ "
                        f"by {p - 7:.3g}: it cannot tell the two apart.")
    else:  # the 8 seeds of the cpu record detect 0.54 against a gap of 2.24
        assert text == (f"Against the source's 7, the claim {claim.verdict}. The run detects differences in p of "
                        f"{claim.detectable:.3g}, less than the {p - 7:.3g} between the source's 7 and the previous "
                        f"chapter's {p:.3g}, so it tells the two apart.")
    coarse = dataclasses.replace(claim, detectable=p - 7 + 0.1, measured=-7.0)
    assert half_judgement(coarse).startswith("Against the source's 7, the claim is inconclusive. The run detects "
                                             "differences in p only of ")
    fine = dataclasses.replace(claim, detectable=1.0, measured=-7.0)
    assert half_judgement(fine).startswith("Against the source's 7, the claim holds. The run detects differences in p "
                                           "of 1, less than")
    assert half_judgement(dataclasses.replace(fine, alternative=None, alternative_note="")) == (
        "Against the source's 7, the claim holds.")


def test_the_sizes_sentences_say_whether_the_two_exponents_differ():
    from analysis.core.verify import Claim
    from analysis.studies.deep_gau.init_depth import sizes_sentences

    claim = Claim("eps-lambda7", "s", "src", -7.0, -7.57, 0.17, 0.39, "t interval", alternative=-9.24,
                  alternative_note="gau-init's exponent")
    text = sizes_sentences(claim)
    assert text.startswith("The two exponents differ by more than this run's 95% interval of ± 0.39, so neither is a "
                           "constant of GAU.") and text.endswith("the layer there is BERT-base's.")
    near = Claim("eps-lambda7", "s", "src", -7.0, -9.0, 0.17, 0.39, "t interval", alternative=-9.24,
                 alternative_note="gau-init's exponent")
    assert sizes_sentences(near) == ("The two exponents lie within this run's 95% interval of ± 0.39 of each other, "
                                     "so this run does not show that p depends on the layer's sizes. As that chapter "
                                     "shows, Swish is not homogeneous.")
    alone = Claim("eps-lambda7", "s", "src", -7.0, -7.57, 0.17, 0.39, "t interval")
    assert sizes_sentences(alone).startswith("Without the previous chapter's exponent")


def test_the_gradient_sentence_says_what_the_ten_thousand_layer_claim_measured():
    import dataclasses

    from analysis.core.verify import Claim
    from analysis.studies.deep_gau.init_depth import deep_gradient_sentence

    claim = Claim("ten-thousand-gradient", "s", "src", 0.0, 0.026, 0.005, 0.012, "t interval")
    assert claim.verdict == "fails"
    text = deep_gradient_sentence(claim, 1e-3, 10_000)
    assert text.startswith("is 1.03 times that through one layer. The log of the ratio, 0.026 with a 95% interval of "
                           "± 0.012, excludes the predicted 0")
    assert "Over the 9,999 further layers that is 2.6e-06 a layer, of the order of ε² = 1e-06" in text
    held = dataclasses.replace(claim, measured=0.004)
    assert held.verdict == "holds"
    assert deep_gradient_sentence(held, 1e-3, 10_000) == ("is as large as through one layer: the log of their ratio is "
                                                     "0.004 ± 0.012")


def test_the_walk_facts_come_from_the_summary_and_the_claims():
    from types import SimpleNamespace

    from analysis.studies.deep_gau.init_depth import walk_facts

    rows = [{"depth": 1, "dev": 0.001, "walk": 0.001, "grad_ratio": 0.97},
            {"depth": 100, "dev": 0.0137, "walk": 0.01, "grad_ratio": 0.97}]
    s = {"1": {"eps": 0.2, "rows": [dict(rows[0], grad_ratio=1.0013)]}, "0.5": {"eps": 0.001, "rows": rows}}
    verdicts = {"random-walk": "holds", "ten-thousand-near-identity": "fails"}
    ch = SimpleNamespace(claim=lambda exp, key: SimpleNamespace(verdict_text=lambda: verdicts[key]))
    facts = walk_facts(ch, s)
    assert facts == {"init_walk_range": "1.00 to 1.37", "init_walk_verdict": "holds", "init_near_verdict": "fails"}
    assert walk_facts(ch, {"1": s["1"]})["init_walk_verdict"] == "is not measured"


def test_the_deepest_distance_is_set_beside_the_square_root_of_two():
    from analysis.studies.deep_gau.init_depth import far_distance

    assert far_distance(1.41) == "near √2 ≈ 1.414"
    assert far_distance(1.2) == "short of √2 ≈ 1.414"
    assert far_distance(1.6) == "beyond √2 ≈ 1.414"


def test_the_lecun_sentences_stay_whole_when_nothing_happens():
    from analysis.studies.deep_gau.init_depth import lecun_sentences

    rows = [{"depth": 1, "dev": 0.18, "grad_ratio": 1.0}, {"depth": 100, "dev": 1.05, "grad_ratio": 4.5e7},
            {"depth": 1000, "dev": 1.39, "grad_ratio": float("inf")}, {"depth": 10_000, "dev": 1.41,
                                                                       "grad_ratio": float("nan")}]
    assert lecun_sentences(rows) == (
        "At LeCun's scale the same width forgets its input by 100 layers: the distance passes 1, and at 10,000 layers "
        "it is near √2 ≈ 1.414, the distance of an independent vector of the same norm. Its input gradient is no "
        "longer finite in float32 by 1,000 layers.")
    calm = [dict(r, dev=0.5, grad_ratio=1.0) for r in rows]
    assert lecun_sentences(calm) == (
        "At LeCun's scale the distance stays below 1 at every depth measured, and at 10,000 layers it is short of "
        "√2 ≈ 1.414, the distance of an independent vector of the same norm. Its input gradient stays finite in "
        "float32 at every depth measured.")
    assert lecun_sentences([]) == "The run has no stacks at LeCun's scale."
