"""The deep-GAU chapter's decisions, on small hand-made inputs."""

import pytest

from analysis.chapter import RunSet
from analysis.stats import paired_estimate
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


def test_bound_text_words_an_empty_boundary():
    assert st.bound_text(0.0) == st.NO_BOUNDARY
    assert st.bound_text(0.0031623) == "0.0032"
    assert st.bound_text(1e-2) == "0.01"


def test_warmup_label():
    assert st.warmup_label(0) == "no warmup"
    assert st.warmup_label(50) == "warmup 50"


def test_boundary_facts_pick_depth_and_warmup_and_only_the_cited_ones():
    f = st.boundary_facts(_summary())
    assert f == {"deep_bg0": "0.003", "deep_bgw": "0.003", "deep_bgs": "0.03", "deep_bt0": st.NO_BOUNDARY,
                 "deep_btw": st.NO_BOUNDARY, "deep_bts": "0.01", "deep_bp0": "0.0032", "deep_bn0": "0.003"}
    assert st.boundary_facts(_summary(gau_deep_warm=0.0))["deep_bgw"] == st.NO_BOUNDARY


def test_boundary_table_has_a_line_per_architecture_and_warmup_with_zeros_shown():
    lines = st.boundary_table(_summary()).splitlines()
    assert lines[0] == "largest learning rate that trains every seed (0: none); depths [2, 24]"
    assert len(lines) == 1 + 4 * 2
    assert lines[3] == f"  {'post-norm Transformer':22s} {'no warmup':10s}: 0.01, 0"
    assert lines[4].startswith("  post-norm Transformer  warmup 50 ")


def test_threshold_facts_give_the_margin_below_the_unigram_entropy():
    f = st.threshold_facts(_summary())
    assert f == {"deep_margin": "0.072", "deep_unigram": "3.116 nats/byte", "deep_step": "3.16"}


def test_loss_facts_compare_gau_with_each_transformer():
    f = st.loss_facts(_summary())
    assert f == {"deep_g0": "2.938", "deep_t0": "3.147", "deep_vs_t0": "smaller than", "deep_p0": "2.948",
                 "deep_vs_p0": "indistinguishable from", "deep_n0": "2.691", "deep_vs_n0": "larger than",
                 "deep_interval": "a 95% Student-t interval over 2 paired seeds (1 df, ±12.7 SE)"}


def test_failure_facts_count_how_the_untrained_runs_failed():
    f = st.failure_facts(_summary())
    assert f == {"deep_steps": "120", "deep_runs": "192", "deep_failed": "90", "deep_diverged": "0",
                 "deep_flat": "77", "deep_above": "13", "deep_peak": "1.05"}


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
