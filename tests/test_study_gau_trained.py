"""The decisions of the chapter on GAU and FLASH trained, on small summaries whose answers are known."""

from __future__ import annotations

from typing import Any

import pytest

from analysis.studies.chapter import RunSet
from analysis.studies.gau_trained.experiments.gau_length import LEARNED, NORM_LABELS
from analysis.studies.gau_trained.experiments.gau_quality import ARCH_LABELS, ARCHS
from analysis.studies import gau_trained as gt


def length_summary(rows: dict[str, tuple[bool, list[float], list[float], tuple[float, float]]],
                   spans: tuple[int, ...] = (32, 128, 1024), train_span: int = 128) -> dict[str, Any]:
    """A gau_length.summary-shaped dict: per norm (learned, near means, spread means, text cost)."""
    s: dict[str, Any] = {"norms": list(rows), "spans": list(spans), "train_span": train_span}
    for norm, (learned, near, spread, cost) in rows.items():
        s[norm] = {"learned": learned, "near": {"mean": near}, "spread": {"mean": spread}, "text_cost": cost}
    return s


def test_pm_formats_mean_and_standard_error():
    assert gt.pm((1.23456, 0.0123)) == "1.235 ± 0.012"
    assert gt.pm((1.5, 0.25), 2) == "1.50 ± 0.25"


def test_best_norm_is_the_highest_near_recall_among_those_that_learnt():
    s = length_summary({"relu2_ns": (False, [1, 1, 0.99], [1, 1, 0.9], (0, 0)),
                        "softmax": (True, [1, 1, 0.6], [1, 1, 0.3], (0, 0)),
                        "softmax_log512": (True, [1, 1, 0.8], [1, 1, 0.2], (0, 0))})
    assert gt.best_norm(s) == "softmax_log512"  # relu2_ns recalls more but did not learn the task


def test_best_norm_tie_goes_to_the_first_and_none_learnt_falls_back_to_recall():
    tie = length_summary({"softmax": (True, [1, 1, 0.7], [1, 1, 0.3], (0, 0)),
                          "softmax_log512": (True, [1, 1, 0.7], [1, 1, 0.5], (0, 0))})
    assert gt.best_norm(tie) == "softmax"
    none = length_summary({"softmax": (False, [0, 0, 0.1], [0, 0, 0], (0, 0)),
                           "relu2_n2": (False, [0, 0, 0.3], [0, 0, 0], (0, 0))})
    assert gt.best_norm(none) == "relu2_n2"


def test_unlearned_sentence_for_none_one_several_and_all():
    learnt = (True, [1, 1, 1], [1, 1, 1], (0, 0))
    failed = (False, [0, 0, 0], [0, 0, 0], (0, 0))
    assert gt.unlearned_sentence(length_summary({"softmax": learnt})) == (
        "Every normalisation learnt the task at its training length.")
    one = gt.unlearned_sentence(length_summary({"relu2_ns": failed, "softmax": learnt}))
    assert one == (f"Only {NORM_LABELS['relu2_ns']} did not learn the task at its training length (accuracy below "
                   f"{LEARNED}), so no recall claim is made for it.")
    several = gt.unlearned_sentence(length_summary({"relu2_ns": failed, "relu2_n2": failed, "softmax": learnt}))
    assert several.startswith(f"Only {NORM_LABELS['relu2_ns']}, {NORM_LABELS['relu2_n2']} did not")
    assert several.endswith("for them.")
    assert gt.unlearned_sentence(length_summary({"relu2_ns": failed})).startswith("No normalisation learnt")


def test_short_gap_is_the_largest_change_at_the_shortest_length_among_those_that_learnt():
    s = length_summary({"relu2_ns": (False, [0, 0, 0], [0.2, 0.95, 0.1], (0, 0)),  # ignored: did not learn
                        "softmax": (True, [0, 0, 0], [0.97, 0.99, 0.4], (0, 0)),
                        "softmax_log512": (True, [0, 0, 0], [1.0, 0.95, 0.4], (0, 0))})
    assert gt.short_gap(s) == pytest.approx(0.05)
    assert gt.short_gap(length_summary({"softmax": (False, [0] * 3, [0.1, 0.5, 0], (0, 0))})) is None


def test_short_gap_reads_the_training_length_wherever_it_lies():
    s = length_summary({"softmax": (True, [0] * 4, [0.5, 0.9, 1.0, 0.2], (0, 0))}, spans=(16, 32, 64, 512),
                       train_span=64)
    assert gt.short_gap(s) == pytest.approx(0.5)


def test_costs_text_lists_every_norm_signed():
    s = length_summary({"relu2_ns": (False, [0] * 3, [0] * 3, (1.644, 0.02)),
                        "softmax": (True, [0] * 3, [0] * 3, (-0.051, 0.004))})
    assert gt.costs_text(s) == f"{NORM_LABELS['relu2_ns']} +1.64 ± 0.02; softmax -0.05 ± 0.00"


def test_length_lines_give_one_block_per_run():
    s = length_summary({"softmax": (True, [0] * 3, [0.5, 1.0, 0.25], (0.52, 0.05))})
    text = gt.length_lines([("recorded, cpu scale", s), ("this build", s)])
    lines = text.splitlines()
    assert lines[0] == "recorded, cpu scale, trained at 128"
    assert lines[1] == "  recall accuracy by length (filler spread); text cost beyond 128"
    assert lines[2] == f"  {'length':20s}   32  128 1024   cost"
    assert lines[3] == f"  {'softmax':20s} 0.50 1.00 0.25  +0.52"
    assert lines[4] == "this build, trained at 128" and len(lines) == 8
    assert all(len(line) <= 74 for line in lines)


def test_quality_table_has_a_header_and_one_line_per_architecture():
    arch = {"parameters": 248224, "lr": 0.01, "val_loss": (1.657, 0.012), "seconds_per_step": 0.01234,
            "recall": {"mean": [1.0, 0.99]}, "recall_lr": 0.003}
    q = {"top_pairs": 64, "archs": {a: arch for a in ARCHS}}
    lines = gt.quality_table(q).splitlines()
    assert len(lines) == 1 + len(ARCHS)
    assert lines[0].split()[-4:] == ["s/step", "rec@64", "rec", "lr"]
    width = max(len(label) for label in ARCH_LABELS.values())
    assert lines[1] == f"{'Transformer++':{width}s}  0.248M   0.01 1.657 ± 0.012 0.0123   0.99  0.003"
    assert all(len(line) <= 74 for line in lines)


def test_chunk_sentence_counts_what_the_linear_term_covers():
    text = gt.chunk_sentence(64, 16)
    assert "A text window of 64 tokens in chunks of 16 holds 4 chunks" in text and "at most 48 tokens back" in text
    assert "the first 16 positions do not use it" in text and "74% of the keys" in text  # 1536 / 2080


def _quality_data() -> dict[str, Any]:
    """Text runs of the four architectures at two learning rates and recall runs at two, three seeds. On text the
    Transformer is best at 0.003, the GAU stacks at 0.01 (the end of the grid); half way (step 5) every one stood
    0.5 higher. On recall pre-norm FLASH-Quad recalls 0.4 at 0.01 and 0.9 at 0.003 (0.6 half way)."""
    text_loss = {"transformer": ([1.68, 1.65, 1.64], [1.70, 1.69, 1.66]),
                 "flash-quad-post": ([1.75, 1.72, 1.77], [1.70, 1.69, 1.71]),
                 "flash-quad-pre": ([1.75, 1.74, 1.71], [1.73, 1.72, 1.70]),
                 "flash": ([1.82, 1.80, 1.81], [1.80, 1.79, 1.79])}
    recall = {"flash-quad-pre": {3e-3: 0.9, 1e-2: 0.4}, "flash-quad-post": {3e-3: 0.9, 1e-2: 0.95}}
    runs: list[dict[str, Any]] = []
    for arch, by_lr in text_loss.items():
        for lr, losses in zip((3e-3, 1e-2), by_lr):
            runs += [{"task": "text", "arch": arch, "parameters": 1000, "seconds_per_step": 0.1, "seed": seed,
                      "lr": lr, "val_loss": v, "diverged_at": None,
                      "curve": [[0, 0.0, 5.0], [5, 0.5, v + 0.5], [10, 1.0, v]]} for seed, v in enumerate(losses)]
        for p in (4, 64):
            for lr in (3e-3, 1e-2):
                acc = recall.get(arch, {}).get(lr, 1.0)
                runs += [{"task": "recall", "arch": arch, "seed": seed, "pairs": p, "lr": lr, "accuracy": acc,
                          "accuracy_half": 0.6 if acc == 0.9 else acc, "loss": 0.1 * seed, "half_step": 4,
                          "diverged_at": None} for seed in range(3)]
    return {"lrs": [3e-3, 1e-2], "recall_lrs": [3e-3, 1e-2], "steps": 10, "recall_steps": 8, "pairs": [4, 64],
            "chance": 1 / 16, "runs": runs}


def test_best_learning_rates_and_their_ends_of_the_grid():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    assert gq.best_lr(data, "text", "transformer") == 3e-3 and gq.best_lr(data, "text", "flash-quad-post") == 1e-2
    assert gq.best_lr(data, "recall", "flash-quad-pre", 64) == 3e-3
    assert gq.at_edge(data, "text", 1e-2) == "the largest" and gq.at_edge(data, "text", 3e-3) == "the smallest"
    for r in data["runs"]:
        if r["arch"] == "flash" and r["lr"] == 1e-2 and r["task"] == "text" and r["seed"] == 1:
            r["diverged_at"], r["val_loss"] = 3, float("nan")
    assert gq.best_lr(data, "text", "flash") == 3e-3  # a learning rate at which a seed diverged is not chosen
    text = gt.lr_sentence(gq.summary(data), 10)
    assert text.startswith("The best peak learning rate is 0.003 for Transformer++, 0.01 for FLASH-Quad (post-norm)")
    assert "At step 5, half the budget, the best would have been the same for every architecture." in text


def test_pre_norm_recall_sentence_reads_the_learning_rate_grid():
    text = gt.pre_norm_recall_sentence(_quality_data())
    assert text.startswith("With 64 pairs, pre-norm FLASH-Quad recalls 0.90 at a peak learning rate of 0.003 and "
                           "0.40 at a peak learning rate of 0.01, post-norm 0.90 at 0.003 and 0.95 at 0.01.")
    assert "went from 0.60 at step 4 to 0.90 at the end" in text
    assert "pre-norm's accuracy minus post-norm's is -0.05 ± 0.00, smaller than 0" in text


def test_interval_words_name_the_t_quantiles_or_the_missing_error():
    from analysis.core.stats import paired_estimate

    assert gt.interval_words(paired_estimate([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])) == (
        "a 95% Student-t interval over 3 paired seeds (2 df: ±4.3 SE two-sided, 2.92 SE one-sided)")
    assert gt.interval_words(paired_estimate([1.0], [0.0])) == "no error estimate (1 paired seeds)"
    assert gt.interval_words(None).startswith("no interval")


def test_quality_gaps_pair_by_seed_at_each_best_learning_rate_and_the_claims_read_them():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    gap = gq.best_gap(data, "text", "flash-quad-post", "transformer")  # 1.70, 1.69, 1.71 against 1.68, 1.65, 1.64
    assert gap.n == 3 and gap.value == pytest.approx(0.13 / 3) and gap.units == "paired seeds"
    assert gq.best_gap(data, "recall", "transformer", "flash-quad-pre", 64).value == pytest.approx(0.1)
    claims = {c.key: c for c in gq.claims(data, "test")}
    quad = claims["flashquad-beats-transformer"]
    assert quad.kind == "below" and "(FLASH-Quad (post-norm) 0.01, Transformer++ 0.003)" in quad.statement
    # FLASH-Quad does worse and its best learning rate is the grid's largest: not a verdict
    assert quad.verdict == "inconclusive" and quad.undecided.startswith("FLASH-Quad (post-norm), which does worse")
    assert "at step 5 it was +0.043" in quad.tolerance_basis
    assert claims["flash-matches-flashquad"].approx_rel == 0.0


def test_the_planned_design_reads_the_finished_runs_sd_and_the_planned_seeds():
    import dataclasses
    import math

    from analysis.core.stats import planned_detectable_multiple
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    gap = gq.best_gap(data, "text", "flash-quad-post", "transformer")
    planned = dataclasses.replace(gq.CONFIGS["gpu"], seeds=(0, 1))
    d = gq.planned_design(data, planned)
    assert d.seeds == 2 and d.multiple == pytest.approx(planned_detectable_multiple(2, sided="one"))
    assert d.sd == pytest.approx(gap.se * math.sqrt(3)) and d.gap == pytest.approx(gap.value)
    assert d.detects == pytest.approx(d.multiple * d.sd) and d.max_sd == pytest.approx(abs(gap.value) / d.multiple)
    three = gq.planned_design(data, dataclasses.replace(planned, seeds=(0, 1, 2)))
    assert three.detects < d.detects / 2.5  # a third seed: 2.5x the resolution
    one = {**data, "runs": [r for r in data["runs"] if r["seed"] == data["runs"][0]["seed"]]}
    assert gq.planned_design(one, planned) is None  # one seed: no SD to size from
    sentence = gt.design_sentence(RunSet("recorded cpu run", data, "note", "cpu", True))
    cfg = gq.CONFIGS["gpu"]
    d = gq.planned_design(data, cfg)
    assert f"trains {len(cfg.seeds)} seeds" in sentence and f"{d.detects:.3g} nats/byte" in sentence
    assert f"at most {d.max_sd:.3g}" in sentence
    assert f"each for {cfg.steps:,} steps, {cfg.steps * cfg.batch * cfg.ctx / 1e6:.0f} M tokens" in sentence
    assert "own degrees of freedom" in gt.design_sentence(RunSet("recorded gpu run", data, "note", "gpu", True))


def test_a_comparison_that_changed_over_the_second_half_is_not_a_verdict():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    for r in data["runs"]:  # half way, FLASH-Quad stood 0.2 below the Transformer
        if r["task"] == "text" and r["arch"] == "flash-quad-post":
            r["curve"][1][2] -= 0.9
    words = gq.undecided_words(data, "text", "flash-quad-post", "transformer")
    assert words == ("the comparison changed over the second half of the budget: smaller than 0 at step 5, "
                     "indistinguishable from 0 at step 10")


def test_length_differences_pair_by_seed():
    from analysis.studies.gau_trained.experiments import gau_length as gl

    est = gl.paired_over_seeds({0: 0.5, 1: 0.7, 2: 0.9}, {0: 0.1, 1: 0.4, 3: 5.0})
    assert est.n == 2 and est.value == pytest.approx(0.35) and est.nu == 1
    assert gl.over_seeds({1: 0.2, 0: 0.4}).value == pytest.approx(0.3)


def paired_data(losses: dict[str, list[float]], previous: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """Runs of analysis.core.paired's layout: per variant one final loss per seed, curves of two points."""
    previous = previous or losses
    runs = [{"variant": v, "seed": i, "parameters": 100, "val_loss": x, "diverged_at": None,
             "curve": [[5, previous[v][i]], [10, x]]} for v, xs in losses.items() for i, x in enumerate(xs)]
    return {"runs": runs, "steps": 10, "s": 8, "ctx": 32, "chunk": 4}


def test_paired_summary_pairs_by_seed_and_reports_how_each_gap_moved():
    from analysis.core.paired import paired_summary
    data = paired_data({"a": [1.0, 2.0, 3.0], "b": [1.1, 2.1, 3.3], "c": [0.9, 2.0, 2.9]},
                       previous={"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0], "c": [1.0, 2.0, 3.0]})
    s = paired_summary(data, ("a", "b", "c"), {"a": "A", "b": "B", "c": "C"}, pairs=(("b", "c"),))
    assert s["gaps"]["b"]["end"].value == pytest.approx(-0.5 / 3)  # loss(a) - loss(b), seed by seed
    assert s["gaps"]["b"]["end"].n == 3 and s["gaps"]["b"]["previous"].value == pytest.approx(0.0)
    assert s["gaps"]["b"]["drift"] == pytest.approx(-0.5 / 3) and s["gaps"]["b"]["previous_step"] == 5
    assert s["pair_gaps"]["b:c"]["end"].value == pytest.approx(0.7 / 3)
    assert s["variants"]["c"] == {"label": "C", "val_loss": pytest.approx(5.8 / 3), "parameters": 100}
    with pytest.raises(ValueError, match="at least two distinct"):
        paired_summary(data, ("a",), {"a": "A"})
    with pytest.raises(ValueError, match="no finished run"):
        paired_summary(data, ("a", "z"), {"a": "A", "z": "Z"})


def test_ablation_table_takes_any_paired_variant_set_with_the_claims_its_gaps_decide():
    from analysis.core.paired import paired_summary
    from analysis.core.verify import Claim, estimate_fields

    data = paired_data({"mixed": [1.0, 2.0, 3.0], "local": [1.2, 2.1, 3.2], "global": [1.5, 2.6, 3.4]})
    s = paired_summary(data, ("mixed", "local", "global"), {"mixed": "M", "local": "L", "global": "G"},
                       pairs=(("local", "global"),))
    claims = {v: Claim(v, "s", "src", 0.0, kind="below", **estimate_fields(s["gaps"][v]["end"], "gap", sided="one"))
              for v in ("local", "global")}
    table = gt.ablation_table(s, ("mixed", "local", "global"), claims).splitlines()
    assert len(table) == 5 and table[2].startswith("| M (base) | 2.0000")
    assert table[3].startswith("| L | 2.1667 | -0.1667, at most ") and "(95% one-sided t, 3 seeds, 2 df)" in table[3]
    assert f"| {claims['local'].verdict_text()} |" in table[3]
    with pytest.raises(ValueError, match="variants must be a base"):
        gt.ablation_table(s, ("mixed", "heads4"), claims)
    with pytest.raises(ValueError, match="claims must hold a claim for every variant"):
        gt.ablation_table(s, ("mixed", "local", "global"), {"local": claims["local"]})


def test_a_row_prints_the_interval_its_claim_is_decided_by():
    """gau_trained once printed -0.0155 ± 0.0191 (two-sided, reaching 0) beside a claim '< 0' that holds by its
    one-sided bound: a row now prints the claim's own bound, so the two cannot disagree."""
    from analysis.core.stats import Estimate
    from analysis.core.verify import Claim, estimate_fields

    gap = Estimate(-0.0155, 0.0060, 4, "seeds")  # the recorded gap: 3 df
    assert gap.value + gap.half_width() > 0 > gap.value + gap.half_width(sided="one")  # two-sided reaches 0
    below = Claim("ns-beats-n2", "s", "src", 0.0, kind="below", **estimate_fields(gap, "gap", sided="one"))
    assert below.verdict == "holds"
    text = gt.claim_interval(below, gap)
    bound = float(text.split("at most ")[1].split(" ")[0])
    assert bound < 0 and bound == pytest.approx(gap.value + gap.half_width(sided="one"), abs=1e-4)
    assert "95% one-sided t, 4 seeds, 3 df" in text
    equal = Claim("eq", "s", "src", 0.0, **estimate_fields(gap, "gap"))
    assert gt.claim_interval(equal, gap) == "-0.0155 ± 0.0191 (95% two-sided t, 4 seeds, 3 df)"
    assert equal.verdict == "holds"  # the two-sided interval reaches 0: '= 0' is not refuted
    bound_claim = Claim("le", "s", "src", 0.0, kind="upper_bound", **estimate_fields(gap, "gap", sided="one"))
    assert gt.claim_interval(bound_claim, gap).startswith("-0.0155, at least ")
    with pytest.raises(ValueError, match="must be decided by the gap it is shown with"):
        gt.claim_interval(below, Estimate(-0.02, 0.0060, 4, "seeds"))
    with pytest.raises(ValueError, match="must be decided by the gap it is shown with"):
        gt.claim_interval(equal, Estimate(-0.0155, 0.0070, 4, "seeds"))


def test_an_end_of_the_grid_leaves_a_comparison_undecided_only_if_its_last_step_gained_the_gap():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    # FLASH-Quad gained 0.047 over the last step to 0.01, as much as its gap of 0.043: undecided
    assert gq.undecided_words(data, "text", "flash-quad-post", "transformer").startswith("FLASH-Quad (post-norm)")
    for r in data["runs"]:  # the Transformer 0.1 lower: a gap of 0.143 that one more such step would not close
        if r["task"] == "text" and r["arch"] == "transformer" and r["lr"] == 3e-3:
            r["val_loss"] -= 0.1
            r["curve"][1][2] -= 0.1
    assert gq.undecided_words(data, "text", "flash-quad-post", "transformer") == ""


def test_flash_quad_sentence_says_where_each_run_puts_flash_and_whether_they_agree():
    from analysis.core.stats import Estimate

    quality = {"ctx": 64, "chunk": 16, "d": 96, "steps": 600}
    parts = {"ctx": 512, "d": 64, "steps": 300, "lr": 0.002}
    above = Estimate(0.074, 0.010, 3, "seeds")  # 95% two-sided t over 3 seeds: 0.074 ± 0.043, wholly above 0
    below = Estimate(-0.129, 0.027, 4, "seeds")
    unresolved = Estimate(0.074, 0.040, 3, "seeds")  # ± 0.17 reaches 0
    words = gt.flash_quad_sentence(quality, above, parts, 64, below)
    assert words.startswith("The two comparisons of FLASH with FLASH-Quad disagree. In the quality section (windows "
                            "of 64 bytes in 4 chunks, width 96, 600 steps, each at its best learning rate), FLASH "
                            "ends above FLASH-Quad, by 0.074 ± 0.010 (mean ± SE). Here (windows of 512 bytes in 8 "
                            "chunks, width 64, 300 steps, every arm at learning rate 0.002), FLASH ends below "
                            "FLASH-Quad, by 0.129 ± 0.027 (mean ± SE).")
    assert "Which of these turns the sign is not measured" in words
    assert gt.flash_quad_sentence(quality, below, parts, 64, below).startswith(
        "The two comparisons of FLASH with FLASH-Quad agree. In the quality section")
    words = gt.flash_quad_sentence(quality, unresolved, parts, 64, below)
    assert words.startswith("Of the two comparisons of FLASH with FLASH-Quad, one resolves a side. In the quality "
                            "section")
    assert "FLASH's gap to FLASH-Quad, 0.074 ± 0.040 (mean ± SE), is not resolved from 0" in words
    assert "Which of these moves the gap is not measured" in words
    assert gt.flash_quad_sentence(quality, unresolved, parts, 64, unresolved).startswith(
        "Of the two comparisons of FLASH with FLASH-Quad, neither resolves a side.")
    assert gt.flash_quad_sentence(quality, None, parts, 64, below) == ""


def test_every_quality_claim_names_its_rival_and_each_recall_claim_takes_the_other_recall_gap():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    claims = {c.key: c for c in gq.claims(data, "test")}
    assert all(c.has_rival for c in claims.values())
    gaps = gq.summary(data)["recall_gaps"]
    # best recall: Transformer++ 1.0, FLASH-Quad (post) 0.95, FLASH 1.0
    assert gaps["transformer-flash-quad-post"].value == pytest.approx(0.05)
    assert claims["flashquad-beats-transformer-recall"].effect == pytest.approx(abs(gaps["flash-quad-post-flash"].value))
    assert claims["flash-matches-flashquad-recall"].effect == pytest.approx(0.05)
    assert claims["gau-converges-slower"].alternative == 1.0  # no slower: the same number of steps


def test_the_learning_rate_sentence_names_the_half_budget_choices_that_differ():
    first = ARCHS[0]
    q = {"archs": {a: {"lr": 3e-3, "lr_edge": "", "lr_half": 1e-2 if a == first else 3e-3} for a in ARCHS}}
    text = gt.lr_sentence(q, 10)
    assert text == ("The best peak learning rate is 0.003 for every architecture. At step 5, half the budget, it was "
                    f"0.01 for {ARCH_LABELS[first]}.")
