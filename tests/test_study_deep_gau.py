"""The deep-GAU chapter's decisions, on small hand-made inputs."""

from analysis.chapter import RunSet
from analysis.studies import deep_gau as st


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
            "gau_vs_pre": "indistinguishable from", "gau_vs_deepnorm": "larger than"}


def test_bound_text_words_an_empty_boundary():
    assert st.bound_text(0.0) == "none of the grid"
    assert st.bound_text(0.0031623) == "0.0032"
    assert st.bound_text(1e-2) == "0.01"


def test_warmup_label():
    assert st.warmup_label(0) == "no warmup"
    assert st.warmup_label(50) == "warmup 50"


def test_boundary_facts_pick_depth_and_warmup_and_only_the_cited_ones():
    f = st.boundary_facts(_summary())
    assert f == {"deep_bg0": "0.003", "deep_bgw": "0.003", "deep_bgs": "0.03", "deep_bt0": "none of the grid",
                 "deep_btw": "none of the grid", "deep_bts": "0.01", "deep_bp0": "0.0032", "deep_bn0": "0.003"}
    assert st.boundary_facts(_summary(gau_deep_warm=0.0))["deep_bgw"] == "none of the grid"


def test_boundary_table_has_a_line_per_architecture_and_warmup_with_zeros_shown():
    lines = st.boundary_table(_summary()).splitlines()
    assert lines[0] == "largest learning rate at which every seed trains (0: none), by depth [2, 24]"
    assert len(lines) == 1 + 4 * 2
    assert lines[3] == f"  {'post-norm Transformer':22s} {'no warmup':10s}: 0.01, 0"
    assert lines[4].startswith("  post-norm Transformer  warmup 50 ")


def test_threshold_facts_give_the_margin_below_the_unigram_entropy():
    f = st.threshold_facts(_summary())
    assert f == {"deep_margin": "0.072", "deep_unigram": "3.116 nats/byte", "deep_step": "3.16"}


def test_loss_facts_compare_gau_with_each_transformer():
    f = st.loss_facts(_summary())
    assert f == {"deep_g0": "2.938", "deep_t0": "3.147", "deep_vs_t0": "smaller than", "deep_p0": "2.948",
                 "deep_vs_p0": "indistinguishable from", "deep_n0": "2.691", "deep_vs_n0": "larger than"}


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
    assert f["prev_provenance"] == "gau-init and coord-check, recorded, cpu scale and this build (smoke scale)"
    assert f["prev_where"] == "s = 128, n = 512, d = 768" and f["prev_bidir"] == "18" and f["prev_source"] == "89"
