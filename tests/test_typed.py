"""Typed trial results: stored as plain JSON data, rebuilt as the dataclass run_trial returns, refused when they
do not fit."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from analysis.core.typed import OMIT_NONE, fields_of, from_data, result_type, stored_as
from analysis.core.results import from_jsonable, to_jsonable


@dataclass(frozen=True)
class Row:
    step: int
    loss: float


@dataclass(frozen=True)
class Result:
    rows: list[Row]
    ratios: tuple[float, ...]
    pair: tuple[int, str]
    by_name: dict[str, float]
    diverged_at: int | None
    extra: Any
    note: str = "none"


def _stored(value: Any) -> Any:
    return from_jsonable(json.loads(json.dumps(to_jsonable(value))))


def test_a_result_round_trips_through_its_trial_file():
    r = Result([Row(1, 2.5), Row(2, math.inf)], (0.5, math.nan), (3, "a"), {"x": -math.inf}, None, {"k": [1, 2]})
    data = _stored(r)
    assert list(data) == ["rows", "ratios", "pair", "by_name", "diverged_at", "extra", "note"]  # field order
    back = from_data(Result, data)
    assert back.rows == r.rows and back.pair == r.pair and back.extra == r.extra and back.diverged_at is None
    assert back.ratios[0] == 0.5 and math.isnan(back.ratios[1]) and back.by_name == {"x": -math.inf}
    assert to_jsonable(back) == to_jsonable(r)  # the record assembled from it stores the same data


def test_an_int_stored_for_a_float_stays_an_int():
    """int is a float to a type checker; converting it would change the data a record stores (1 -> 1.0)."""
    back = from_data(Row, {"step": 1, "loss": 3})
    assert back.loss == 3 and isinstance(back.loss, int)


@pytest.mark.parametrize("data, message", [
    ({"step": "1", "loss": 2.0}, r"result.step: stored str '1' does not fit <class 'int'>"),
    ({"step": True, "loss": 2.0}, r"result.step: stored bool"),
    ({"step": 1, "loss": 2.0, "lr": 0.1}, "fields lr are not in Row"),
    ([1, 2.0], "result: stored list"),
    ({"step": 1}, "Row needs fields loss"),
])
def test_data_that_does_not_fit_is_refused_with_its_path(data, message):
    with pytest.raises(ValueError, match=message):
        from_data(Row, data)
    with pytest.raises(ValueError, match=r"result.rows\[0\].loss"):
        from_data(Result, {**to_jsonable(Result([Row(1, 1.0)], (), (1, "a"), {}, None, None)),
                           "rows": [{"step": 1, "loss": "x"}]})


def test_the_result_type_is_read_from_run_trials_annotation():
    def typed(cfg: Any, trial: Any, device: Any) -> Result: ...
    def plain(cfg: Any, trial: Any, device: Any) -> dict[str, Any]: ...
    def either(cfg: Any, trial: Any, device: Any) -> Result | Row: ...
    assert result_type(typed) is Result and result_type(plain) is None
    assert from_data(result_type(either), {"step": 2, "loss": 0.5}) == Row(2, 0.5)  # the member the data fits


@dataclass(frozen=True)
class Seed:
    small: dict[str, float]
    variants: dict[str, float] | None = field(default=None, metadata=OMIT_NONE)


def test_a_field_some_trials_lack_is_left_out_when_none():
    """A key only some trials store (OMIT_NONE): absent from the data when None, read back as None."""
    assert to_jsonable(Seed({"a": 1.0})) == {"small": {"a": 1.0}} == fields_of(Seed({"a": 1.0}))
    assert to_jsonable(Seed({}, {"b": 2.0})) == {"small": {}, "variants": {"b": 2.0}}
    assert from_data(Seed, {"small": {"a": 1.0}}) == Seed({"a": 1.0})


@dataclass(frozen=True)
class Stack:
    lam: float = field(metadata=stored_as("lambda"))
    depth: int = 1


def test_a_field_is_stored_under_its_key():
    """A key Python does not allow as a name ('lambda') is stored and read back under that key."""
    assert to_jsonable(Stack(0.5, 3)) == {"lambda": 0.5, "depth": 3} == fields_of(Stack(0.5, 3))
    assert from_data(Stack, {"lambda": 0.5}) == Stack(0.5)
    with pytest.raises(ValueError, match="fields lam are not in Stack"):
        from_data(Stack, {"lam": 0.5})


def test_fields_of_is_shallow_and_refuses_non_dataclasses():
    rows = [Row(1, 1.0)]
    r = Result(rows, (), (1, "a"), {}, None, None)
    assert fields_of(r)["rows"] is rows and list(fields_of(r)) == list(to_jsonable(r))
    with pytest.raises(ValueError, match="must be a dataclass instance"):
        fields_of({"a": 1})
