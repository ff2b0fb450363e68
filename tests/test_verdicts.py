"""Every committed record's claims give the verdicts and measured values of the checked-in table."""

import copy
from pathlib import Path

import pytest

from analysis.core.results import REPO_ROOT
from analysis.site.verdict_table import compare, load_table, recorded_verdicts

TABLE = Path(__file__).with_name("verdicts.json")


@pytest.fixture(scope="module")
def current():
    return recorded_verdicts(REPO_ROOT / "results")


def test_recorded_verdicts_match_the_table(current):
    problems = compare(load_table(TABLE), current)
    assert not problems, "verdicts changed (rewrite tests/verdicts.json on purpose: python scripts/verdicts.py --write):\n" + "\n".join(problems)


def test_every_record_is_in_the_table(current):
    records = {p.name.removesuffix(".json") for p in (REPO_ROOT / "results").glob("*.json")}
    assert records == set(load_table(TABLE)["records"])
    assert all(current["records"][name] for name in records), "a record produced no claims"


def test_a_flipped_verdict_or_moved_value_is_reported(current):
    table = load_table(TABLE)
    name = next(iter(table["records"]))
    key = next(iter(table["records"][name]))
    flipped = copy.deepcopy(table)
    entry = flipped["records"][name][key]
    entry["verdict"] = "fails" if entry["verdict"] != "fails" else "holds"
    assert any("verdict was" in p for p in compare(flipped, current))
    moved = copy.deepcopy(table)
    moved["records"][name][key]["measured"] = moved["records"][name][key]["measured"] * (1 + 1e-6) + 1e-6
    assert any("measured was" in p for p in compare(moved, current))
    removed = copy.deepcopy(table)
    del removed["records"][name][key]
    assert any("claim added" in p for p in compare(removed, current))
