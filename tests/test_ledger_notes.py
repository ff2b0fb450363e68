"""Every recorded failure either carries a corrected number or says why it has none (the introduction's promise),
and no reason is kept for a claim that does not need one."""

from pathlib import Path

import pytest

from analysis.studies.notes import covers, reason, table
from analysis.site.verdict_table import recorded_verdicts

NO_CORRECTED_NUMBER = table("NO_CORRECTED_NUMBER")
RESULTS = Path(__file__).resolve().parents[1] / "results"  # the checked-in records (the fixture isolates the default)


def _failures_without_number():
    out, corrected = set(), set()
    records = recorded_verdicts(RESULTS)["records"]
    assert records, "no recorded runs found"
    for claims in records.values():
        for key, v in claims.items():
            if v["verdict"] == "fails" and v["corrected_verdict"] is None:
                out.add(key)
            else:
                corrected.add(key)
    return out, corrected


def test_every_recorded_failure_has_a_corrected_number_or_a_reason():
    missing, _ = _failures_without_number()
    assert sorted(k for k in missing if not any(covers(note, k) for note in NO_CORRECTED_NUMBER)) == []
    assert all(reason(k) is not None for k in missing)


def test_no_reason_without_a_failure_that_needs_it():
    missing, corrected = _failures_without_number()
    # every sentence covers at least one such failure, and no claim that holds or has a corrected number
    assert sorted(note for note in NO_CORRECTED_NUMBER if not any(covers(note, k) for k in missing)) == []
    assert sorted(k for k in corrected - missing if reason(k) is not None) == []


def test_a_key_ending_in_a_dash_covers_the_claims_it_starts():
    assert covers("recall-best-scale-", "recall-best-scale-16")
    assert not covers("recall-best-scale", "recall-best-scale-16")  # no dash: that claim only
    assert covers("log-softmax-length-", "log-softmax-length-text")
    assert reason("log-softmax-length-recall") == NO_CORRECTED_NUMBER["log-softmax-length-"]
    assert reason("recall-best-scale-64") == NO_CORRECTED_NUMBER["recall-best-scale-64"]
    assert reason("recall-best-scale-accuracy-64") is None  # no dash: that claim only
    assert reason("lambda7") == NO_CORRECTED_NUMBER["lambda7"]
    assert reason("no-such-claim") is None


def _each_note_names_recorded_claims(table, name):
    """Per note of ``table``: the recorded claim keys it covers, asserting that there is at least one."""
    records = recorded_verdicts(RESULTS)["records"]
    keys = {key for claims in records.values() for key in claims}
    out = {}
    for note in table:
        out[note] = [k for k in keys if covers(note, k)]
        assert out[note], f"{name}[{note!r}] names no recorded claim"
    return out


def test_every_replacement_note_belongs_to_a_recorded_claim():
    from analysis.studies.notes import replaces

    REPLACES = table("REPLACES")

    for note, matched in _each_note_names_recorded_claims(REPLACES, "REPLACES").items():
        assert all(replaces(k) == REPLACES[note] for k in matched)
    assert replaces("lambda7") is None


def test_the_typical_row_ratio_the_note_states_is_the_recorded_one():
    # the note on finite-argmax-normal says the typical row peaks at "a multiple of alpha*" and leaves the number to
    # the claim: the recorded peak must lie above alpha*
    from analysis.core.registry import EXPERIMENTS
    from analysis.core.results import find_record

    record = find_record("softmax-scale-mc", "cpu", RESULTS)
    assert record is not None
    claims = {c.key: c for c in EXPERIMENTS["softmax-scale-mc"].claims(record.data, "recorded-cpu")}
    c = claims["finite-argmax-normal"]
    assert "a multiple of" in NO_CORRECTED_NUMBER["finite-argmax-normal"]
    assert c.measured / c.predicted > 1.0


def test_every_formal_claim_is_recorded_and_the_rest_are_substantive():
    from analysis.studies.notes import SEVERITY_RULE, formal_reason, severity

    FORMAL = table("FORMAL")

    for note, matched in _each_note_names_recorded_claims(FORMAL, "FORMAL").items():
        assert all(severity(k) == "formal" and formal_reason(k) == FORMAL[note] for k in matched)
    assert severity("qk-normal") == "substantive" and formal_reason("qk-normal") is None
    assert severity("no-such-claim") == "substantive"
    assert "formal" in SEVERITY_RULE and "substantive" in SEVERITY_RULE


def test_each_chapter_notes_its_own_claims_only():
    """A chapter's notes (analysis/studies/<chapter>/notes.py) cover recorded claims of that chapter's experiments."""
    from analysis.core.registry import EXPERIMENTS
    from analysis.studies.notes import chapter_notes

    records = recorded_verdicts(RESULTS)["records"]
    own: dict[str, set[str]] = {}
    for record, claims in records.items():
        chapter = EXPERIMENTS[record.rsplit(".", 1)[0]].__name__.split(".")[2]
        own.setdefault(chapter, set()).update(claims)
    notes = chapter_notes()
    assert len(notes) >= 10
    for chapter, tables in notes.items():
        for name, entries in tables.items():
            for note in entries:
                assert any(covers(note, k) for k in own.get(chapter, ())), f"{chapter} {name}[{note!r}]"


def test_a_note_two_chapters_define_is_refused(monkeypatch):
    from analysis.studies import notes

    both = {"NO_CORRECTED_NUMBER": {"k": "one"}, "REPLACES": {}, "FORMAL": {}}
    monkeypatch.setattr(notes, "chapter_notes", lambda: {"a": both, "b": both})
    notes.table.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"NO_CORRECTED_NUMBER\['k'\] is defined by both a and b"):
            notes.table("NO_CORRECTED_NUMBER")
        with pytest.raises(ValueError, match="name must be one of"):
            notes.table("NOTES")
    finally:
        notes.table.cache_clear()
