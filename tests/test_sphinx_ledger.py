import csv
import io
import json

from sphinx.cmd.build import build_main

from analysis.sphinx_ledger import Entry, strongest
from analysis.verify import ChapterClaims, Claim, ClaimId


def build(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['analysis.sphinx_ledger']\n")
    (src / "index.rst").write_text("Book\n====\n\n.. findings::\n\n.. toctree::\n\n   chap\n   ledger\n")
    (src / "chap.rst").write_text("Chapter\n=======\n\nText.\n")
    (src / "ledger.rst").write_text("Ledger\n======\n\n.. claims-ledger::\n")
    out = tmp_path / "build" / "html"
    claims_dir = tmp_path / "build" / "claims"
    claims_dir.mkdir(parents=True)
    ch = ChapterClaims("chap", "The chapter")
    ch.claims.append(Claim("c1", "first statement on $x^2 < y$", "src", 1.0, 1.0, 0.0, 0.0, "exact")
                     .identified("exp", "smoke", recorded=False))
    ch.claims.append(Claim("c2", "second statement", "src", 1.0, 3.0, 0.0, 0.1, "3 sigma")
                     .identified("exp", "smoke", recorded=False))
    ch.claims.append(Claim("c2", "second statement", "src", 1.0, 5.0, 0.0, 0.1, "3 sigma",
                           corrected=5.0, corrected_note="the fix").identified("exp", "cpu", recorded=True))
    ch.save(claims_dir)
    # a claims file of a chapter that is not in the book is ignored
    (claims_dir / "gone.json").write_text(json.dumps({"chapter": "gone", "title": "Gone", "claims": []}))
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    return out


def test_ledger_page_is_generated_from_chapter_claims(tmp_path):
    out = build(tmp_path)
    html = (out / "ledger.html").read_text()
    assert "3 claims from 1 chapter(s)" in html and "1 holds" in html and "2 fail" in html
    assert "first statement" in html and "second statement" in html
    assert 'href="chap.html"' in html and "Gone" not in html
    # stable anchors, numbers, a section per chapter (so a contents entry), filters and downloads
    for anchor in ('id="chap-c1-smoke"', 'id="chap-c2-smoke"', 'id="chap-c2-recorded-cpu"', 'id="ledger-chap"'):
        assert anchor in html
    assert ">chap.3</a>" in html and 'id="ledger-filters"' in html and 'href="claims.csv"' in html
    assert "no corrected prediction yet" in html  # c2-smoke fails without a correction
    assert 'data-strongest="0" id="chap-c2-smoke"' in html and 'data-strongest="1" id="chap-c2-recorded-cpu"' in html
    rows = list(csv.DictReader(io.StringIO((out / "claims.csv").read_text())))
    assert [r["id"] for r in rows] == ["chap-c1-smoke", "chap-c2-smoke", "chap-c2-recorded-cpu"]
    assert [r["verdict"] for r in rows] == ["holds", "fails", "fails"]
    assert rows[2]["scale"] == "cpu (recorded)" and rows[2]["corrected_verdict"] == "holds"
    assert json.loads((out / "claims.json").read_text())[1]["measured"] == 3.0
    # maths: MathJax's inline form on the page (and MathJax loaded), the LaTeX as written in the downloads
    assert '<span class="math notranslate nohighlight">\\(x^2 &lt; y\\)</span>' in html and "$x^2" not in html
    assert "mathjax" in html.split("<body", 1)[0].lower()
    assert rows[0]["statement"] == "first statement on $x^2 < y$"


def test_findings_show_each_chapter_at_its_strongest_evidence(tmp_path):
    out = build(tmp_path)
    html = (out / "index.html").read_text()
    # c1 was run at smoke scale only: not a measurement, so the chapter's finding rests on its cpu record
    assert "1 claims from 1 chapter(s), each at its strongest evidence" in html
    assert "1 of 1 fail" in html and 'href="ledger.html#chap-c2-recorded-cpu"' in html
    assert "predicted 1, measured 5 (400% off); corrected 5 holds" in html
    assert "evidence: cpu (recorded)<" in html


def test_claim_identity_is_typed_and_strongest_compares_it():
    base = Claim("a-b", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact")
    cpu, smoke = base.identified("e", "cpu", recorded=True), base.identified("e", "smoke", recorded=False)
    assert cpu.id == ClaimId("e", "a-b", "cpu", True) and cpu.slug == "a-b-recorded-cpu" and cpu.evidence == "cpu (recorded)"
    assert smoke.slug == "a-b-smoke" and smoke.evidence == "smoke (live)"
    computed = Claim("plain", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact", computed=True).identified("e", "cpu", True)
    assert computed.id == ClaimId("e", "plain") and computed.slug == "plain" and computed.evidence == "computed"
    assert Claim.from_dict(cpu.to_dict()) == cpu  # the identity survives the chapter's claims file
    other = Claim("a-b", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact").identified("f", "smoke", recorded=False)
    entries = [Entry("d", "c", "t", i, c) for i, c in enumerate((smoke, cpu, other), 1)]
    assert [e.claim for e in strongest(entries)] == [cpu, other]  # per (chapter, experiment, key)
    assert strongest([]) == []


def test_reproduce_table_lists_every_experiment_with_its_live_time(tmp_path):
    from analysis.experiments import EXPERIMENTS
    from analysis.sphinx_ledger import reproduce_html

    html = reproduce_html({"flash-counts": ("flash", "smoke", 1.25)})
    assert html.count("<tr>") == len(EXPERIMENTS) + 1
    assert "1.2 s at smoke scale" in html and "not run by this build" in html
    assert "python -m analysis campaign --scale cpu --only flash-bench" in html
    assert "gpu campaign: 0 of 1 trials" in html and "H100 minutes" in html


def test_headline_gives_what_holds_instead_when_no_number_does():
    from analysis.sphinx_ledger import Entry, headline

    claim = Claim("lambda7", "output scales like $\\lambda^7$", "s", 7.0, 9.6, 0.0, 0.1, "basis",
                  approx_rel=0.0).identified("gau-init", "cpu", recorded=True)
    text = headline([Entry("gau_init", "gau_init", "GAU", 1, claim)], "ledger.html")
    assert "1 of 1 fail" in text and "instead: the chapter&#x27;s corrected prediction is a curve" in text
