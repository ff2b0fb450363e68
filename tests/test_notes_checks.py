import math

import pytest
import torch

from analysis.studies.attention_basics.experiments import notes_checks as nc


def test_cross_attention_takes_queries_from_the_decoder():
    out = nc.cross_attention_inputs(nc.CONFIGS["smoke"], torch.Generator().manual_seed(0))
    assert out["from_encoder"] == {"query": False, "key": True, "value": True}
    assert out["out_len"] == out["tgt_len"] != out["src_len"]
    with pytest.raises(ValueError, match="tgt_len and src_len must differ"):
        nc.Config(d=8, heads=2, tgt_len=4, src_len=4, norm_rows=2, vocab=8, widths=(4,), hidden=2)
    with pytest.raises(ValueError, match="widths must be even"):
        nc.Config(d=8, heads=2, tgt_len=3, src_len=4, norm_rows=2, vocab=8, widths=(4, 5), hidden=2)


def test_minus_1e9_breaks_float16_and_finfo_min_does_not():
    m = nc.masked_rows()
    assert m["float16"]["masked_fill_error"] and math.isinf(m["float16"]["stored"])
    assert m["float16"]["nan_weights"] == m["float16"]["weights"] == 8  # 0 * -inf poisons the unmasked scores too
    for name in ("float32", "bfloat16"):
        assert not m[name]["masked_fill_error"] and m[name]["nan_weights"] == 0
        assert m[name]["partly_masked_leak"] == 0.0
    assert all(m[n]["finfo_min_nan_weights"] == 0 for n in nc.DTYPES)


def test_rmsnorm_exists_and_matches_the_formula():
    r = nc.rmsnorm(nc.CONFIGS["smoke"], torch.Generator().manual_seed(0))
    assert r["has_rmsnorm"] and r["relative_gap"] < 16 * nc.EPS64


def test_claims_and_their_verdicts():
    data = nc.run(nc.CONFIGS["smoke"])
    got = {c.key: (c.verdict, c.corrected_verdict) for c in nc.claims(data, "smoke")}
    assert got == {"cross-q-from-encoder": ("fails", "holds"), "cross-kv-from-encoder": ("holds", None),
                   "mask-1e9-float32": ("holds", None), "mask-1e9-bfloat16": ("holds", None),
                   "mask-1e9-float16": ("fails", None), "mask-1e9-partial": ("holds", None),
                   "mask-finfo-min": ("holds", None), "no-torch-rmsnorm": ("fails", "holds"),
                   "torch-rmsnorm-formula": ("holds", None), "tie-saves": ("holds", None),
                   "tie-sqrt-d": ("holds", None), "tie-logit-scale": ("holds", None)}


def test_claims_read_the_stored_record():
    # a record stores -inf and NaN as strings ("-inf", "nan"): the claims read them back as numbers
    from pathlib import Path

    from analysis.core.results import find_record

    record = find_record("notes-checks", "cpu", Path(__file__).resolve().parents[1] / "results")
    assert record is not None and record.data["masking"]["float16"]["stored"] == "-inf"
    got = {c.key: c.verdict for c in nc.claims(record.data, "recorded-cpu")}
    assert got["mask-1e9-float16"] == "fails" and got["mask-1e9-partial"] == "holds"


def test_tying_saves_vocab_times_width_as_torch_counts_it():
    assert nc.tied_parameters(100, 12) == {"untied": 2400, "tied": 1200}


def test_tied_scales_follow_the_derivation_and_fail_a_wrong_matrix():
    cfg = nc.Config(d=8, heads=2, tgt_len=3, src_len=4, norm_rows=2, vocab=4096, widths=(8, 64), hidden=64)
    scales = nc.tied_scales(cfg, torch.Generator().manual_seed(1))
    for w in scales:
        assert w["pe_ms"] == pytest.approx(0.5, abs=1e-12)  # sin^2 + cos^2 = 1 per pair, every position
        assert abs(w["token_ms"] - 1) < 4 * w["token_ms_se"] and w["token_ms_se"] < 0.05
        assert abs(w["logit_ms"] - 1) < 4 * w["logit_ms_se"]
    tied = {"parameters": nc.tied_parameters(4096, 64), "vocab": 4096, "d": 64, "scales": scales}
    assert {c.key: c.verdict for c in nc.tied_claims(tied, "test")} == {
        "tie-saves": "holds", "tie-sqrt-d": "holds", "tie-logit-scale": "holds"}
    # a matrix at unit scale (no 1/sqrt(d)): the embedding's mean square is d, and the claim fails
    wrong = dict(scales[-1], token_ms=scales[-1]["token_ms"] * 64, token_ms_se=scales[-1]["token_ms_se"] * 64)
    bad = nc.tied_claims(dict(tied, scales=[wrong]), "test")
    assert {c.key: c.verdict for c in bad}["tie-sqrt-d"] == "fails"


def test_tied_table_is_a_markdown_table_with_typeset_headers():
    from analysis.core.mathtext import ascii_math
    from analysis.studies.attention_basics import tied_facts

    cfg = nc.Config(d=8, heads=2, tgt_len=3, src_len=4, norm_rows=2, vocab=64, widths=(64, 1024), hidden=4)
    scales = nc.tied_scales(cfg, torch.Generator().manual_seed(0))
    facts = tied_facts({"parameters": nc.tied_parameters(64, 1024), "vocab": 64, "d": 1024, "scales": scales})
    lines = facts["tie_table"].data.splitlines()
    assert len(lines) == 4 and all(line.startswith("| ") and line.endswith(" |") for line in lines)
    assert ascii_math(lines[0]) == [] and "$\\sqrt{d}$" in lines[0]  # headers typeset, no 'sqrt(d)' or 'w/o'
    assert facts["tie_saved"] == "65,536" and facts["tie_pe"] == "0.500"
    assert float(facts["tie_fall"]) == pytest.approx(16 * scales[0]["token_ms"] / scales[1]["token_ms"], rel=1e-2)


def test_every_claim_of_a_smoke_run_names_its_rival():
    data = nc.run(nc.CONFIGS["smoke"])
    claims = {c.key: c for c in nc.claims(data, "smoke")}
    assert [key for key, c in claims.items() if not c.has_rival] == []
    # no mask: softmax of the partly masked row puts this weight on its masked keys
    p = torch.softmax(torch.tensor([0.5, -1.0, 2.0, 0.0], dtype=torch.float64), -1)
    assert claims["mask-1e9-partial"].alternative == pytest.approx(float(p[1] + p[3]), rel=1e-12)
    assert claims["mask-1e9-float32"].alternative == 8  # -inf: every weight of the two rows NaN
    d = nc.CONFIGS["smoke"].widths[-1]
    assert claims["tie-sqrt-d"].alternative == 1 / d and claims["tie-logit-scale"].alternative == d
    assert claims["tie-saves"].alternative == 0.0
