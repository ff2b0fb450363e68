"""The FLASH chapter's live run of `analysis check`: every decision its prose states about the table."""

import dataclasses
from types import SimpleNamespace

import pytest

from analysis.studies.flash.checks import (CELLS, CHUNK, UNIT_GATE_TOLERANCE, check_facts, check_sentence, check_table,
                                          law_text, number_words, peer_deviations, peer_facts, peer_leak_sentence,
                                          run_checks, unit_gate_is_attention, unit_gate_sentence)


@pytest.fixture(scope="module")
def rows():
    return run_checks()


def test_the_books_layers_multihead_attention_and_flash_pytorch_flash_pass_in_both_dtypes(rows):
    passing = [r for r in rows if r.label.startswith("this book's") or "MultiheadAttention" in r.label
               or r.label == "FLASH-pytorch FLASH (causal)"]
    assert len(passing) == 7
    for row in passing:
        assert row.report.passed, row.report.lines()
        assert {r.dtype for r in row.report.results} == {"float64", "float32"}


def test_the_printed_forms_leak_by_the_law_their_formula_says(rows):
    by = {r.label: r.report for r in rows}
    assert [w.law for w in by["source as printed: relu²(qk)/(ns)"].laws] == ["1/n (the total length)"]
    assert [w.law for w in by["paper appendix: relu²(qk/n)"].laws] == ["1/n^2 (the total length, squared)"]
    flash = by["source as printed: FLASH 1/((g−1)n/c)"]
    causal = [r for r in flash.results if r.check == "causal"]
    assert not flash.passed and len(causal) == 3 and all(r.first_position == CHUNK for r in causal)  # 2nd chunk on
    assert all(r.passed for r in flash.results if r.check == "batch")


def test_flash_pytorch_gau_leaks_as_one_over_n_squared_in_both_checks(rows):
    by = {r.label: r.report for r in rows}
    if "FLASH-pytorch GAU (causal)" not in by:
        pytest.skip("FLASH-pytorch is not installed")
    peer = by["FLASH-pytorch GAU (causal)"]
    assert {w.check for w in peer.laws} == {"causal", "padding"}
    assert {w.law for w in peer.laws} == {"1/n^2 (the total length, squared)"}
    hf = sum(1 for r in rows if r.label.startswith("Hugging Face"))
    assert check_sentence(rows) == (
        f"Four of the {11 + hf} modules leak, and the other {number_words(7 + hf)} pass. In the causal check, the "
        "printed $1/(ns)$ leaks as $1/n$, the appendix's $\\mathrm{relu}^2(qk/n)$ as $1/n^2$ and the printed FLASH "
        "normaliser as $1/n$ from its second chunk on. In both the causal and the padding check, FLASH-pytorch's GAU "
        "leaks as $1/n^2$.")
    glued = check_facts(rows)["check_verdicts"].data  # the same sentence, its maths as MathJax spans
    assert glued.startswith(f"Four of the {11 + hf} modules leak") and "$" not in glued
    assert glued.count('<span class="math') == 6


def test_the_check_sentence_follows_the_laws_and_positions_the_checks_report(rows):
    """A law or a first position changed in a report changes the sentence: nothing in it is fixed text."""
    by = {r.label: r for r in rows}
    if "FLASH-pytorch GAU (causal)" not in by:
        pytest.skip("FLASH-pytorch is not installed")
    peer = by["FLASH-pytorch GAU (causal)"]
    padded = "1/n_pad (the length padded to a multiple of 16)"
    laws = [w if w.check == "causal" else dataclasses.replace(w, law=padded) for w in peer.report.laws]
    changed = dataclasses.replace(peer, report=dataclasses.replace(peer.report, laws=laws))
    printed = by["source as printed: relu²(qk)/(ns)"]
    late = [dataclasses.replace(r, per_position=[0.0] * 5 + r.per_position[5:]) for r in printed.report.results]
    moved = dataclasses.replace(printed, report=dataclasses.replace(printed.report, results=late))
    text = check_sentence([moved, by["this book's FLASH"], changed])
    assert text == (
        "Two of the three modules leak, and the other one passes. In the causal check, the printed $1/(ns)$ leaks as "
        "$1/n$ from position 5 on. In both the causal and the padding check, FLASH-pytorch's GAU leaks in the causal "
        "check as $1/n^2$ and in the padding check as $1/n_{\\mathrm{pad}}$, with $n_{\\mathrm{pad}}$ the length "
        "padded to a multiple of 16.")
    both = [by["this book's FLASH"], by["this book's GAU, dense path"]]
    assert check_sentence(both) == "Both modules pass every check."
    assert check_sentence([moved]) == (
        "The module leaks. In the causal check, the printed $1/(ns)$ leaks as $1/n$ from position 5 on.")


def test_law_text_typesets_every_law_the_check_names():
    assert law_text("1/n (the total length)") == "$1/n$"
    assert law_text("1/n^2 (the total length, squared)") == "$1/n^2$"
    assert law_text("1/n_pad^2 (the length padded to a multiple of 8, squared)") == (
        "$1/n_{\\mathrm{pad}}^2$, with $n_{\\mathrm{pad}}$ the length padded to a multiple of 8")
    assert law_text("a log n factor (of the total length)") == "a $\\log n$ factor"
    assert law_text(None) == "no known law"


def test_the_table_has_a_row_per_module_and_marks_leaks(rows):
    text = check_table(rows).data
    assert text.count("\n") == len(rows) + 1
    assert text.count("**leaks**") == sum(1 for r in rows for x in r.report.results if not x.passed
                                          and (x.check, x.dtype) in CELLS and x.mode == "eval")
    assert text.count("no cache") == sum(1 for r in rows if not r.label.startswith("Hugging Face"))


def test_tiny_hugging_face_decoders_pass_every_check_and_decode_through_their_cache(rows):
    pytest.importorskip("transformers")
    hf = [r for r in rows if r.label.startswith("Hugging Face")]
    assert [r.label.split(",")[0] for r in hf] == ["Hugging Face GPT-2", "Hugging Face Llama"]
    for row in hf:
        assert row.report.passed, row.report.lines()
        assert {r.check for r in row.report.results} == {"causal", "padding", "left-padding", "batch", "decoding"}
    text = check_table(rows).data
    llama = next(line for line in text.splitlines() if "Llama" in line)
    assert "held to float32's threshold" in llama  # its norms round float64 to float32: the cell says so


def test_flash_pytorch_departures_are_computed():
    dev = peer_deviations()
    if not dev:
        pytest.skip("FLASH-pytorch is not installed")
    assert dev["rel_pos_bias_change"] > 1e-3  # rel_pos_bias=False still adds the bias
    assert dev["linear_growth"] == pytest.approx(2.0, rel=1e-8)  # divided by the group size: grows with the groups
    assert dev["padding_change"] == pytest.approx(0.75, rel=1e-12)  # 1 - (128/256)^2
    text = peer_facts(dev, 1e-16)["peer_list"].data
    assert text.count("\n- ") == 2 and "2.000 times" in text and "0.75 of its largest" in text


def test_a_unit_gate_makes_gau_single_head_attention():
    gap = unit_gate_is_attention()
    assert gap < 1e-13
    assert "not installed" in peer_facts({}, 0.0)["peer_list"].data
    assert unit_gate_sentence(gap) == ("With the gate forced to $U = 1$ and softmax scores, the layer is single-head "
                                       f"attention to rounding, with a relative gap of {gap:.1e} in float64.")
    assert unit_gate_sentence(0.3) == ("With the gate forced to $U = 1$ and softmax scores, the layer is not "
                                       "single-head attention: their relative gap of 3.0e-01 in float64 exceeds the "
                                       f"{UNIT_GATE_TOLERANCE:.1e} of rounding.")
    assert "$" not in peer_facts({}, gap)["unit_gate"].data  # glued with its maths as MathJax spans


def test_peer_leak_sentence_reads_the_share_and_the_corrected_verdict():
    leak = {"relative_change": {"peer-gau": [0.0, 0.3, 0.6]}, "lengths": [16, 32, 64], "prefix": 16}
    share = 0.3 / (1 - (16 / 32) ** 2)
    claim = SimpleNamespace(measured=0.6, corrected=share * (1 - (16 / 64) ** 2), corrected_verdict="fails")
    gap = abs(0.6 - claim.corrected) / 0.6
    assert peer_leak_sentence(claim, leak) == (
        f"Without the residual connection, $D = {share:.4g}$ read off the extension to $n = 32$ predicts the change "
        f"at $n = 64$ to a relative {gap:.1e}. The corrected prediction of the claim on the peer's causal leak fails.")
    exact = SimpleNamespace(measured=0.6, corrected=0.6, corrected_verdict="holds")
    assert "predicts the change at $n = 64$ exactly. The corrected prediction" in peer_leak_sentence(exact, leak)
    assert peer_leak_sentence(None, {"relative_change": {}, "lengths": [16, 32], "prefix": 16}) == (
        "The run records no leak of FLASH-pytorch's GAU, so no $D$ is read off it.")


def test_the_layer_table_and_targets_read_the_benchmark_record():
    from pathlib import Path

    from analysis.studies.chapter import _recorded_run
    from analysis.studies.flash.experiments import flash_bench as fb
    from analysis.studies.flash.figures import layer_table, prose

    run = _recorded_run("flash-bench", "cpu", str(Path(__file__).resolve().parent.parent / "results"))
    assert run is not None
    s = fb.summary(run.data)
    table = layer_table(run.data).splitlines()
    lean = s["layers"][fb.LAYERS[2]]["over_matched_peer"]
    gains = s["compile_gain"]["dense"]
    assert len(table) == 2 + len({*lean, *gains, *s["layers"][fb.LAYERS[2]]["over_default_peer"]})
    for n, ratio in lean.items():  # one row per length, the lean layer's ratio in its first column
        row = next(line for line in table if line.startswith(f"| {n} |"))
        assert row.split(" | ")[1] == f"{ratio:.2f}x"
    claims = [c for c in fb.claims(run.data, "t") if c.key.startswith("lean-gau-over-peer")]
    text = prose(run.data)["targets"]
    assert text.count("Against the ") == len(claims) == 2
    assert all(f"{c.measured:.2f}x its tokens/s at worst: the {c.predicted:.1f}x target is" in text for c in claims)
