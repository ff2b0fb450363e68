import json
import math

import pytest

from analysis.verify import ChapterClaims, Claim, claims_html, judge, load_chapter_claims


def make(**kw):
    base = dict(key="k", statement="s", source="src", predicted=1.0, measured=1.0, uncertainty=0.01,
                tolerance=0.03, tolerance_basis="3 sigma")
    base.update(kw)
    return Claim(**base)


@pytest.mark.parametrize(
    "kind, predicted, measured, tol, expected",
    [
        ("equal", 1.0, 1.02, 0.03, "holds"),
        ("equal", 1.0, 1.08, 0.03, "holds approximately"),
        ("equal", 1.0, 0.80, 0.03, "fails"),
        ("upper_bound", 0.0, -5.0, 0.0, "holds"),
        ("upper_bound", 0.0, 1e-3, 0.0, "fails"),
        ("upper_bound", 1.0, 1.05, 0.0, "holds approximately"),
        ("lower_bound", 2.0, 2.5, 0.01, "holds"),
        ("lower_bound", 2.0, 1.9, 0.01, "holds approximately"),
        ("lower_bound", 2.0, 1.0, 0.01, "fails"),
    ],
)
def test_judge(kind, predicted, measured, tol, expected):
    assert judge(kind, predicted, measured, tol, 0.10) == expected


@pytest.mark.parametrize(
    "predicted, measured, alternative, expected",
    [
        (2.0, 2.0, 1.0, "inconclusive"),  # tolerance 1.5 covers both the prediction and the alternative
        (2.0, 2.0, 8.0, "holds"),  # the alternative is ruled out
        (2.0, 8.0, 8.0, "fails"),  # a failed prediction stays failed, whatever the alternative
        (2.0, 3.6, 3.0, "inconclusive"),  # holding approximately, with an alternative that holds outright
        (2.0, 3.6, 1.0, "holds approximately"),  # the alternative is further off than the band
    ],
)
def test_inconclusive_when_the_alternative_passes_too(predicted, measured, alternative, expected):
    assert judge("equal", predicted, measured, 1.5, 0.1, alternative) == expected
    claim = make(predicted=predicted, measured=measured, tolerance=1.5, alternative=alternative,
                 alternative_note="the default")
    assert claim.verdict == expected


def test_alternative_needs_a_note_and_shows_in_the_table():
    with pytest.raises(ValueError, match="alternative_note"):
        make(alternative=1.0)
    with pytest.raises(ValueError, match="alternative must be finite"):
        make(alternative=float("nan"), alternative_note="x")
    c = make(alternative=1.01, alternative_note="the default scale")
    assert c.verdict == "inconclusive"
    assert "alternative 1.01: the default scale" in claims_html([c])
    assert Claim.from_dict(json.loads(json.dumps(c.to_dict()))).verdict == "inconclusive"


def test_exact_claims_with_no_approximate_band_hold_or_fail():
    assert make(predicted=2_097_152, measured=2_099_712, tolerance=0.0).verdict == "holds approximately"
    assert make(predicted=2_097_152, measured=2_099_712, tolerance=0.0, approx_rel=0.0).verdict == "fails"


def test_verdict_text_reports_percent_and_corrected_prediction_is_judged():
    c = make(predicted=0.01, measured=0.0105, tolerance=0.0001, corrected=0.01045)
    assert c.verdict == "holds approximately"
    assert c.verdict_text() == "holds within 5%"
    assert c.corrected_verdict == "holds"
    failing = make(predicted=0.01, measured=0.05, tolerance=0.001, corrected=0.0495)
    assert failing.verdict == "fails" and failing.corrected_verdict == "holds"
    assert make().corrected_verdict is None
    assert make(predicted=0.0, measured=0.0).deviation_pct == 0.0
    assert math.isinf(make(predicted=0.0, measured=1.0).deviation_pct)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"key": ""}, "key must be"),
        ({"kind": "roughly"}, "kind must be one of"),
        ({"measured": float("nan")}, "measured must be finite"),
        ({"tolerance": -1.0}, "tolerance must be >= 0"),
        ({"uncertainty": float("inf")}, "uncertainty must be finite"),
        ({"tolerance_basis": "  "}, "tolerance_basis must say"),
    ],
)
def test_invalid_claims_are_rejected(kw, message):
    with pytest.raises(ValueError, match=message):
        make(**kw)


def test_round_trip_recomputes_verdicts(tmp_path):
    ch = ChapterClaims("chapter", "A chapter")
    ch.record(make(key="a"))
    ch.record(make(key="b", measured=2.0))
    ch.record(make(key="a", measured=1.5))  # replaces by key
    assert [c.key for c in ch.claims] == ["b", "a"]
    path = ch.save(tmp_path)
    doc = json.loads(path.read_text())
    doc["claims"][0]["verdict"] = "holds"  # a stored verdict is not trusted
    path.write_text(json.dumps(doc))
    back = load_chapter_claims(path)
    assert [c.verdict for c in back.claims] == ["fails", "fails"]


def test_save_only_when_claims_dir_is_set(tmp_path, monkeypatch):
    ch = ChapterClaims("chapter", "A chapter")
    assert ch.save() is None
    monkeypatch.setenv("ANALYSIS_CLAIMS_DIR", str(tmp_path / "claims"))
    ch.record(make())
    assert (tmp_path / "claims" / "chapter.json").exists()


def test_malformed_claims_file_names_the_file(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="x.json: not a valid claims file"):
        load_chapter_claims(bad)
    with pytest.raises(ValueError, match="chapter must be a plain document name"):
        ChapterClaims("../up", "t")


def test_html_table_shows_numbers_and_verdicts():
    html = claims_html([make(statement="a <b>", measured=1.5, corrected=1.49)])
    assert "a &lt;b&gt;" in html and "fails" in html and "1.49" in html and "<table" in html
