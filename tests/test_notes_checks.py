import math

import pytest
import torch

from analysis.studies.attention_basics.experiments import notes_checks as nc


def test_cross_attention_takes_queries_from_the_decoder():
    out = nc.cross_attention_inputs(nc.CONFIGS["smoke"], torch.Generator().manual_seed(0))
    assert out["from_encoder"] == {"query": False, "key": True, "value": True}
    assert out["out_len"] == out["tgt_len"] != out["src_len"]
    with pytest.raises(ValueError, match="tgt_len and src_len must differ"):
        nc.Config(d=8, heads=2, tgt_len=4, src_len=4, norm_rows=2)


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
                   "torch-rmsnorm-formula": ("holds", None)}


def test_claims_read_the_stored_record():
    # a record stores -inf and NaN as strings ("-inf", "nan"): the claims read them back as numbers
    from pathlib import Path

    from analysis.results import find_record

    record = find_record("notes-checks", "cpu", Path(__file__).resolve().parents[1] / "results")
    assert record is not None and record.data["masking"]["float16"]["stored"] == "-inf"
    got = {c.key: c.verdict for c in nc.claims(record.data, "recorded-cpu")}
    assert got["mask-1e9-float16"] == "fails" and got["mask-1e9-partial"] == "holds"
