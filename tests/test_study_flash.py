"""The FLASH chapter's live run of `analysis check`: every decision its prose states about the table."""

import pytest

from analysis.studies.flash.checks import (CELLS, CHUNK, check_facts, check_table, peer_deviations, peer_facts,
                                          run_checks, unit_gate_is_attention)


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
    facts = check_facts(rows)
    assert facts["check_peer_law"] == "1/n² (the total length, squared)"
    hf = sum(1 for r in rows if r.label.startswith("Hugging Face"))
    assert facts["check_leaking"] == f"4 of the {11 + hf} modules"


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
    assert unit_gate_is_attention() < 1e-13
    assert "not installed" in peer_facts({}, 0.0)["peer_list"].data


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
