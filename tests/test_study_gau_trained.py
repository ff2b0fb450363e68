"""The decisions of the chapter on GAU and FLASH trained, on small summaries whose answers are known."""

from __future__ import annotations

from typing import Any

import pytest

from analysis.chapter import RunSet
from analysis.studies.gau_trained.experiments.gau_length import LEARNED, NORM_LABELS
from analysis.studies.gau_trained.experiments.gau_quality import ARCHS
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
    assert lines[1] == "  recall accuracy at lengths 32, 128, 1024; text cost beyond 128"
    assert lines[2] == f"  {'softmax':20s} spread 0.50 1.00 0.25  text cost +0.52"
    assert lines[3] == "this build, trained at 128" and len(lines) == 6


def test_quality_table_has_a_header_and_one_line_per_architecture():
    arch = {"parameters": 248224, "val_loss": (1.657, 0.012), "seconds_per_step": 0.01234,
            "val_loss_lr_check": 1.7, "recall": {"mean": [1.0, 0.99]}}
    q = {"top_pairs": 64, "archs": {a: arch for a in ARCHS}}
    lines = gt.quality_table(q, 0.01).splitlines()
    assert len(lines) == 1 + len(ARCHS)
    assert lines[0].split()[-2:] == ["1e-02", "recall@64"]
    assert lines[1] == f"{'Transformer++':23s}    248,224     1.657 ± 0.012  0.0123    1.700      0.99"


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
