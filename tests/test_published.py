"""Published results beside the book's claims: every row names real chapters and recorded claims, and renders."""

import pytest

from analysis.published import PUBLISHED, SCALE_FIELDS, published_table, rows_for
from analysis.studies import STUDIES, get_study


def test_every_row_names_a_chapter_that_shows_its_experiments_and_recorded_claims():
    from analysis.verdict_table import load_table

    recorded = load_table("tests/verdicts.json")["records"]
    keys = {(name.rsplit(".", 1)[0], key) for name, claims in recorded.items() for key in claims}
    for row in PUBLISHED:
        assert row.chapters and set(row.chapters) <= set(STUDIES), row.source
        shown = {e for c in row.chapters for e in get_study(c).EXPERIMENTS}
        for experiment, key in row.claims:
            assert (experiment, key) in keys, (experiment, key)
            assert experiment in SCALE_FIELDS
        assert any(e in shown for e, _ in row.claims), row.source  # each chapter it is shown in has a claim of it
        assert row.address.startswith("https://") and row.reports and row.scale and row.why


def test_the_table_renders_claims_with_their_verdict_and_scale():
    from analysis.chapter import open_chapter

    study = get_study("widening")
    ch = open_chapter("widening", study.TITLE, *study.EXPERIMENTS)
    table = published_table("widening", ch)
    lines = table.splitlines()
    assert len(lines) == 2 + len(rows_for("widening"))
    assert "bert2BERT" in table and "`saving`: **" in table and "wide_steps = " in table
    with pytest.raises(ValueError, match="shows no published results"):
        published_table("entropy", ch)
