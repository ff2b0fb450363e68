"""Published results beside the book's claims: every row names real chapters and recorded claims, and renders."""

import pytest

from analysis.studies.published import SCALE_FIELDS, published_rows, published_table, rows_for
from analysis.studies import STUDIES, get_study


def test_every_row_names_a_chapter_that_shows_its_experiments_and_recorded_claims():
    from analysis.site.verdict_table import load_table

    recorded = load_table("tests/verdicts.json")["records"]
    keys = {(name.rsplit(".", 1)[0], key) for name, claims in recorded.items() for key in claims}
    for row in published_rows():
        assert row.chapters and set(row.chapters) <= set(STUDIES), row.source
        shown = {e for c in row.chapters for e in get_study(c).EXPERIMENTS}
        for experiment, key in row.claims:
            assert (experiment, key) in keys, (experiment, key)
            assert experiment in SCALE_FIELDS
        assert any(e in shown for e, _ in row.claims), row.source
        assert row.address.startswith("https://") and row.reports and row.scale and row.why
        for text in (row.source, row.reports, row.scale, row.why):
            assert "|" not in text, text  # a pipe would split the Markdown table's cell


def test_the_table_renders_claims_with_their_verdict_and_scale():
    from analysis.studies.chapter import open_chapter

    study = get_study("widening")
    ch = open_chapter("widening", study.TITLE, *study.EXPERIMENTS)
    table = published_table("widening", ch)
    lines = table.splitlines()
    assert len(lines) == 2 + len(rows_for("widening"))
    assert "bert2BERT" in table and "`saving`: **" in table and "wide_steps = " in table
    with pytest.raises(ValueError, match="shows no published results"):
        published_table("no-such-chapter", ch)


def test_every_chapter_shows_published_work_beside_its_claims():
    """Each chapter has rows, and each row shown in a chapter has claims of that chapter's experiments; the
    chapter's notebook places the table."""
    from pathlib import Path

    for chapter in STUDIES:
        rows = rows_for(chapter)
        assert rows, chapter
        experiments = set(get_study(chapter).EXPERIMENTS)
        for row in rows:
            assert any(e in experiments for e, _ in row.claims), (chapter, row.source)
        notebook = Path(__file__).resolve().parents[1] / "book" / f"{chapter}.ipynb"
        assert "{glue:md} published_table" in notebook.read_text(), chapter


def test_scale_fields_name_fields_of_every_scale_config():
    """A misspelt or moved field fails here rather than vanishing from the table (dotted names read nested
    fields)."""
    from analysis.core.registry import EXPERIMENTS, config_for
    from analysis.studies.published import config_field

    for experiment, names in SCALE_FIELDS.items():
        for size in ("smoke", "cpu", "gpu"):
            cfg = config_for(EXPERIMENTS[experiment], size)
            for name in names:
                try:
                    config_field(cfg, name)
                except (AttributeError, KeyError):
                    pytest.fail(f"{experiment} at {size} has no field {name}")
    assert config_field({"model": {"d": 96}}, "model.d") == 96  # a record's stored config reads the same way


def test_distinct_digits_prints_different_numbers_differently():
    from analysis.studies.published import distinct_digits

    assert distinct_digits(2_099_712, 2_097_152) == ("2.100e+06", "2.097e+06")
    assert distinct_digits(0.0568, 0.0113) == ("0.0568", "0.0113")
    assert distinct_digits(7.0, 7.0) == ("7", "7")
    assert distinct_digits(1.0, 1.0 + 1e-15) == ("1", "1")  # beyond the most digits: printed alike
    assert distinct_digits(float("nan"), 1.0) == ("nan", "1")
    with pytest.raises(ValueError, match="least must be"):
        distinct_digits(1.0, 2.0, least=0)


def test_a_stale_record_shows_its_own_stored_sizes_and_is_marked_stale():
    from analysis.studies.chapter import RunSet
    from analysis.studies.published import _scale_text

    stored = {"d": 256, "layers": 2, "ctx": 128, "text_steps": 1200, "seeds": [0, 1]}
    run = RunSet("recorded, gpu scale (stale)", {}, "note", "gpu", recorded=True, stale=("config differs",),
                 config=stored)

    class Stub:
        def best(self, name):
            return run

    text = _scale_text(Stub(), "gau-length")
    assert text == "recorded-gpu, stale: d = 256; layers = 2; ctx = 128; text_steps = 1200; seeds = 0 and 1"
    nested = RunSet("recorded, cpu scale", {}, "note", "cpu", recorded=True,
                    config={"model": {"d": 96, "layers": 2, "ctx": 64}, "train": {"steps": 600}})
    run = nested
    assert _scale_text(Stub(), "entropy-lm") == "recorded-cpu: d = 96; layers = 2; ctx = 64; steps = 600"
    run = RunSet("recorded, cpu scale", {}, "note", "cpu", recorded=True,
                 config={"d": 32, "depths": [2, 24], "steps": 240, "seeds": [0, 1, 2]})
    assert _scale_text(Stub(), "deep-gau") == "recorded-cpu: d = 32; depths = 2 and 24; steps = 240; seeds = 0, 1 and 2"


def test_a_row_gives_each_claim_its_number_link_and_relation():
    from analysis.studies.chapter import open_chapter
    from analysis.core.verify import SIGNS

    from pathlib import Path

    from analysis.core.verify import claim_numbers, claim_ref

    study = get_study("attention_basics")
    results = str(Path(__file__).resolve().parents[1] / "results")  # the committed records: measured claims
    ch = open_chapter("attention_basics", study.TITLE, *study.EXPERIMENTS, directory=results)
    table = published_table("attention_basics", ch)
    c = ch.claim("attention-basics", "unscaled-saturates")
    assert c.kind == "below" and c.id.recorded and f"({c.measured:.3g} measured, {SIGNS['below']} 0 predicted)" in table
    number = claim_numbers(ch.claims.claims)[claim_ref(c)]
    assert (f'<a href="ledger.html#attention_basics-unscaled-saturates" title="this claim in the ledger">'
            f"attention_basics.{number}</a>: **{c.verdict}**") in table and "`unscaled-saturates`" not in table
