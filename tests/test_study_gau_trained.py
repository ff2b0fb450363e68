"""The decisions of the chapter on GAU and FLASH trained, on small summaries whose answers are known."""

from __future__ import annotations

from typing import Any

import pytest

from analysis.chapter import RunSet
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
    arch = {"parameters": 248224, "val_loss": (1.657, 0.012), "seconds_per_step": 0.01234,
            "val_loss_lr_check": 1.7, "recall": {"mean": [1.0, 0.99]}}
    q = {"top_pairs": 64, "archs": {a: arch for a in ARCHS}}
    lines = gt.quality_table(q, 0.01).splitlines()
    assert len(lines) == 1 + len(ARCHS)
    assert lines[0].split()[-2:] == ["1e-02", "recall@64"]
    width = max(len(label) for label in ARCH_LABELS.values())
    assert lines[1] == f"{'Transformer++':{width}s}    248,224 1.657 ± 0.012 0.0123    1.700      0.99"
    assert all(len(line) <= 74 for line in lines)


def _run(scale: str, recorded: bool) -> RunSet:
    return RunSet(f"{scale} {recorded}", {}, "", scale, recorded)


def test_cpu_run_is_shown_apart_only_when_it_is_not_the_best():
    live, cpu, gpu = _run("smoke", False), _run("cpu", True), _run("gpu", True)
    assert gt.cpu_run([live, cpu, gpu]) is cpu
    assert gt.cpu_run([live, cpu]) is None  # the cpu record is the best run, shown above
    assert gt.cpu_run([live, gpu]) is None
    assert gt.cpu_run([live]) is None
    live_cpu = _run("cpu", False)
    assert gt.cpu_run([live_cpu, gpu]) is live_cpu


def test_chunk_sentence_counts_what_the_linear_term_covers():
    text = gt.chunk_sentence(64, 16)
    assert "a window holds 4 chunks" in text and "at most 48 tokens back" in text
    assert "the first 16 positions do not use it" in text and "74% of the keys" in text  # 1536 / 2080


def _quality_data() -> dict[str, Any]:
    """Two architectures' text runs at two learning rates and recall runs of the four, three seeds."""
    runs: list[dict[str, Any]] = []
    for arch, losses, check in (("transformer", [1.68, 1.65, 1.64], 1.69), ("flash-quad-post", [1.75, 1.72, 1.77], 1.70),
                                ("flash-quad-pre", [1.75, 1.74, 1.71], 1.73), ("flash", [1.82, 1.80, 1.81], 1.83)):
        text = {"task": "text", "arch": arch, "parameters": 1000, "seconds_per_step": 0.1,
                "curve": [[0, 0.0, 5.0], [10, 1.0, 2.0]]}
        runs += [{**text, "seed": s, "lr": 3e-3, "val_loss": v} for s, v in enumerate(losses)]
        runs.append({**text, "seed": 0, "lr": 1e-2, "val_loss": check})
        for p in (4, 64):
            acc, loss = {"flash-quad-pre": (0.4, 1.9), "flash-quad-post": (0.95, 0.2)}.get(arch, (1.0, 0.0))
            runs += [{"task": "recall", "arch": arch, "seed": s, "pairs": p, "accuracy": acc, "loss": loss + 0.1 * s,
                      "diverged_at": None} for s in range(3)]
    return {"lr": 3e-3, "lr_check": 1e-2, "pairs": [4, 64], "chance": 1 / 16, "runs": runs}


def test_lr_sentence_gives_the_gap_at_both_learning_rates_and_a_flip_of_order():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    assert gq.lr_check_gap(data, "flash-quad-post", "transformer") == {"seed": 0.0, "main": pytest.approx(0.07),
                                                                      "check": pytest.approx(0.01)}
    text = gt.lr_sentence(data)
    assert "+0.070 at 0.003 and +0.010 at 0.01" in text and "the order of the architectures changes" in text


def test_pre_norm_recall_sentence_sets_its_loss_between_guessing_and_post_norm():
    text = gt.pre_norm_recall_sentence(_quality_data())
    assert text.startswith("Pre-norm FLASH-Quad recalls 0.40, 0.40 at 4, 64 pairs")
    assert "1.90 to 2.10 nats, lies below the 2.77 nats" in text and "post-norm's 0.20 to 0.40" in text


def test_interval_words_name_the_t_quantiles_or_the_missing_error():
    from analysis.stats import paired_estimate

    assert gt.interval_words(paired_estimate([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])) == (
        "a 95% Student-t interval over 3 paired seeds (2 df: ±4.3 SE two-sided, 2.92 SE one-sided)")
    assert gt.interval_words(paired_estimate([1.0], [0.0])) == "no error estimate (1 paired seeds)"


def test_quality_gaps_pair_by_seed_and_the_claims_read_their_intervals():
    from analysis.studies.gau_trained.experiments import gau_quality as gq

    data = _quality_data()
    gap = gq.loss_gap(data, "flash-quad-post", "transformer")
    assert gap.n == 3 and gap.value == pytest.approx(0.09) and gap.units == "paired seeds"
    assert gq.recall_gap(data, "transformer", "flash-quad-pre", 64).value == pytest.approx(0.6)
    claims = {c.key: c for c in gq.claims(data, "test")}
    assert claims["flashquad-beats-transformer"].kind == "below"
    assert claims["flashquad-beats-transformer"].verdict == "fails"  # +0.09 ± 2.92 x 0.0153: wholly above 0
    assert claims["flash-matches-flashquad"].approx_rel == 0.0
    assert "one peak learning rate, 0.003" in claims["flashquad-beats-transformer"].statement


def test_length_differences_pair_by_seed():
    from analysis.studies.gau_trained.experiments import gau_length as gl

    est = gl.paired_over_seeds({0: 0.5, 1: 0.7, 2: 0.9}, {0: 0.1, 1: 0.4, 3: 5.0})
    assert est.n == 2 and est.value == pytest.approx(0.35) and est.nu == 1
    assert gl.over_seeds({1: 0.2, 0: 0.4}).value == pytest.approx(0.3)


def paired_data(losses: dict[str, list[float]], previous: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """Runs of analysis.paired's layout: per variant one final loss per seed, curves of two points."""
    previous = previous or losses
    runs = [{"variant": v, "seed": i, "parameters": 100, "val_loss": x, "diverged_at": None,
             "curve": [[5, previous[v][i]], [10, x]]} for v, xs in losses.items() for i, x in enumerate(xs)]
    return {"runs": runs, "steps": 10, "s": 8, "ctx": 32, "chunk": 4}


def test_paired_summary_pairs_by_seed_and_reports_how_each_gap_moved():
    from analysis.paired import paired_summary
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


def test_ablation_table_takes_any_paired_variant_set_and_gap_text_reads_the_interval():
    from analysis.paired import paired_summary
    data = paired_data({"mixed": [1.0, 2.0, 3.0], "local": [1.2, 2.1, 3.2], "global": [1.5, 2.6, 3.4]})
    s = paired_summary(data, ("mixed", "local", "global"), {"mixed": "M", "local": "L", "global": "G"},
                       pairs=(("local", "global"),))
    table = gt.ablation_table(s, ("mixed", "local", "global")).splitlines()
    assert len(table) == 5 and table[2].startswith("| M (base) | 2.0000")
    assert table[3].startswith("| L | 2.1667 | -0.1667 ± ") and "(3 seeds, 2 df)" in table[3]
    with pytest.raises(ValueError, match="variants must be a base"):
        gt.ablation_table(s, ("mixed", "heads4"))
    text = gt.gap_text(s["pair_gaps"]["local:global"])
    assert text.startswith("-0.3333 ± ") and "3 seeds, 2 df" in text and "detects ≥" in text
