import json
import math

import numpy as np
import pytest
import torch

from analysis.core.results import (
    Record,
    ResultsFileError,
    find_record,
    load_record,
    provenance,
    record_path,
    save_record,
    to_jsonable,
)


def make_record(**kw):
    base = dict(experiment="demo", scale="smoke", seed=3, config={"n": 2},
                data={"x": np.arange(3), "t": torch.ones(2), "nan": float("nan")}, provenance=provenance(1.5))
    base.update(kw)
    return Record(**base)


def test_save_and_load_round_trip(tmp_path):
    path = save_record(make_record(), tmp_path)
    assert path == tmp_path / "demo.smoke.json"
    assert [p.name for p in tmp_path.iterdir()] == ["demo.smoke.json"]  # no temporary file left
    assert path.stat().st_mode & 0o777 == 0o644
    rec = load_record(path)
    assert rec.data["x"] == [0, 1, 2] and rec.data["t"] == [1.0, 1.0] and rec.data["nan"] == "nan"
    assert rec.seed == 3 and rec.provenance["wall_time_s"] == 1.5
    for key in ("device", "torch", "git_commit", "date", "python"):
        assert key in rec.provenance
    assert "demo at smoke scale" in rec.describe()


def test_default_directory_comes_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ANALYSIS_RESULTS_DIR", str(tmp_path / "r"))
    assert find_record("demo", "cpu") is None
    save_record(make_record(scale="cpu"))
    assert find_record("demo", "cpu").scale == "cpu"


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "the file is empty"),
        ('{"schema": "analysis.results/1", "experiment": "demo"', "not valid JSON"),
        ('{"hello": 1}', "not a results record"),
        ('[1, 2]', "not a results record"),
    ],
)
def test_corrupted_files_are_reported_with_their_name(tmp_path, content, message):
    path = tmp_path / "demo.smoke.json"
    path.write_text(content)
    with pytest.raises(ResultsFileError, match=message) as err:
        load_record(path)
    assert str(path) in str(err.value)


def test_truncated_real_record_and_missing_fields(tmp_path):
    path = save_record(make_record(), tmp_path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ResultsFileError, match="truncated or corrupted"):
        load_record(path)
    doc = json.loads(text)
    del doc["provenance"]["device"]
    doc["seed"] = "three"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match="'seed' missing or not a int"):
        load_record(path)
    doc["seed"] = 3
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match="provenance lacks device"):
        load_record(path)
    with pytest.raises(ResultsFileError, match="no such results file"):
        load_record(tmp_path / "absent.json")


def test_record_under_the_wrong_name_is_foreign(tmp_path):
    path = save_record(make_record(), tmp_path)
    path.rename(tmp_path / "other.smoke.json")
    with pytest.raises(ResultsFileError, match="holds 'demo'"):
        find_record("other", "smoke", tmp_path)


def test_names_and_values_are_validated(tmp_path):
    with pytest.raises(ValueError, match="size must be one of"):
        record_path("demo", "huge", tmp_path)
    with pytest.raises(ValueError, match="experiment must be a plain name"):
        record_path("../x", "smoke", tmp_path)
    with pytest.raises(TypeError, match="cannot store a object"):
        to_jsonable(object())
    assert to_jsonable({"a": (np.float32(1.5), math.inf)}) == {"a": [1.5, "inf"]}


def test_provenance_names_the_cpu_kernels_and_the_record_says_which():
    p = provenance(1.5)
    assert p["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and p["wall_time_s"] == 1.5
    rec = Record("x", "cpu", 0, {}, {}, {**p, "cuda": None})
    assert f"with {p['cpu_capability']} kernels" in rec.describe()
