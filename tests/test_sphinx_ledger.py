import csv
import io
import json
import math

from sphinx.cmd.build import build_main

from analysis.site.sphinx_ledger import strongest
from analysis.core.verify import ChapterClaims, Claim, ClaimId


def build(tmp_path, smoke_only_first=True):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['analysis.site.sphinx_ledger']\n")
    (src / "index.rst").write_text("Book\n====\n\n.. findings::\n\n.. toctree::\n\n   chap\n   ledger\n")
    (src / "chap.rst").write_text("Chapter\n=======\n\nText.\n")
    (src / "ledger.rst").write_text("Ledger\n======\n\n.. claims-ledger::\n")
    out = tmp_path / "build" / "html"
    claims_dir = tmp_path / "build" / "claims"
    claims_dir.mkdir(parents=True)
    ch = ChapterClaims("chap", "The chapter")
    ch.claims.append(Claim("c1", "first statement on $x^2 < y$", "src", 1.0, 1.0, 0.0, 0.0, "exact")
                     .identified("exp", "smoke" if smoke_only_first else "cpu", recorded=not smoke_only_first))
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
    # the smoke runs are checks, not rows: c1 (smoke only) is left out and counted apart; c2 is shown at cpu
    assert "1 claim from 1 chapter, each at its strongest evidence" in html and "1 fails" in html
    assert "Of the 1 failure, 1 is substantive and 0 formal." in html
    assert "1 claim made only by this build&#x27;s smoke run" in html or "1 claim made only by this build's smoke run" in html
    assert "first statement" not in html and "second statement" in html
    assert 'href="chap.html"' in html and "Gone" not in html
    # a stable anchor (the same at every scale), the number, a link back to the chapter, severity, filters, downloads
    assert 'id="chap-c2"' in html and 'id="ledger-chap"' in html and "smoke" not in html.split('id="ledger-chap"')[1]
    assert ">chap.1</a>" in html and 'href="chap.html#claim-c2"' in html
    assert 'data-severity="substantive"' in html and 'name="severity"' in html and "Severity." in html
    assert 'id="ledger-filters"' in html and 'href="claims.csv"' in html and "sortBy" in html
    rows = list(csv.DictReader(io.StringIO((out / "claims.csv").read_text())))
    assert [r["id"] for r in rows] == ["chap-c2"]
    assert rows[0]["scale"] == "cpu (recorded)" and rows[0]["corrected_verdict"] == "holds"
    assert rows[0]["strongest"] == "True" and rows[0]["severity"] == "substantive" and rows[0]["number"] == "1"
    assert json.loads((out / "claims.json").read_text())[0]["measured"] == 5.0


def test_ledger_renders_maths_and_keeps_latex_in_the_downloads(tmp_path):
    out = build(tmp_path, smoke_only_first=False)
    html = (out / "ledger.html").read_text()
    # maths: MathJax's inline form on the page (and MathJax loaded), the LaTeX as written in the downloads
    assert '<span class="math notranslate nohighlight">\\(x^2 &lt; y\\)</span>' in html and "$x^2" not in html
    assert "mathjax" in html.split("<body", 1)[0].lower()
    rows = list(csv.DictReader(io.StringIO((out / "claims.csv").read_text())))
    assert rows[0]["statement"] == "first statement on $x^2 < y$"


def test_findings_show_each_chapter_at_its_strongest_evidence(tmp_path):
    out = build(tmp_path)
    html = (out / "index.html").read_text()
    # c1 was run at smoke scale only: not a measurement, so the chapter's finding rests on its cpu record
    assert "1 claim from 1 chapter, each at its strongest evidence" in html
    assert "1 of 1 fail" in html and 'href="ledger.html#chap-c2"' in html
    assert "predicted 1, measured 5 (off by a factor 5); corrected 5 holds" in html
    assert "evidence: cpu (recorded)<" in html


def test_claim_identity_is_typed_and_strongest_compares_it():
    from analysis.site.sphinx_ledger import entries

    base = Claim("a-b", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact")
    cpu, smoke = base.identified("e", "cpu", recorded=True), base.identified("e", "smoke", recorded=False)
    assert cpu.id == ClaimId("e", "a-b", "cpu", True) and cpu.slug == "a-b-recorded-cpu" and cpu.evidence == "cpu (recorded)"
    assert smoke.slug == "a-b-smoke" and smoke.evidence == "smoke (live)"
    computed = Claim("plain", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact", computed=True).identified("e", "cpu", True)
    assert computed.id == ClaimId("e", "plain") and computed.slug == "plain" and computed.evidence == "computed"
    assert Claim.from_dict(cpu.to_dict()) == cpu  # the identity survives the chapter's claims file
    other = Claim("a-b", "s", "src", 1.0, 1.0, 0.0, 0.0, "exact").identified("f", "cpu", recorded=False)
    gpu = base.identified("e", "gpu", recorded=True)
    items = entries([("d", ChapterClaims("c", "t", [smoke, cpu, other, gpu]))])
    # smoke is never an entry; per (experiment, key) the gpu record is the strongest; numbers hold across scales
    assert [(e.claim, e.number, e.is_strongest) for e in items] == [(cpu, 1, False), (other, 2, True), (gpu, 1, True)]
    assert [e.claim for e in strongest(items)] == [other, gpu]
    assert [e.anchor for e in items] == ["c-a-b-recorded-cpu", "c-a-b", "c-a-b"][:2] + ["c-a-b"]
    assert strongest([]) == []


def test_reproduce_table_lists_every_experiment_with_its_live_time(tmp_path):
    from analysis.core.registry import EXPERIMENTS
    from analysis.site.sphinx_ledger import reproduce_html

    import dataclasses
    import os

    from analysis.core.registry import config_for, fingerprint
    from analysis.core.runner import run_experiment
    from analysis.core.results import Record, provenance, save_record

    module = EXPERIMENTS["ffn-basics"]
    cpu = config_for(module, "cpu")
    save_record(Record("ffn-basics", "cpu", 0, dataclasses.asdict(cpu),
                       run_experiment("ffn-basics", module.CONFIGS["smoke"]), provenance(444.0),
                       fingerprint(module, cpu)), os.environ["ANALYSIS_RESULTS_DIR"])
    html = reproduce_html({"flash-counts": ("flash", "smoke", 1.25)}, {"flash": "flash.html"}, {"flash": "FLASH"})
    assert html.count("<tr>") == len(EXPERIMENTS) + 1
    assert "1.2 s at smoke scale" in html and "not run by this build" in html
    assert '<a href="flash.html">FLASH</a>' in html and 'href="records/ffn-basics.cpu.json"' in html
    assert "7 min 24 s, " in html and "(current)" in html
    assert "python -m analysis campaign --scale cpu --only flash-bench" in html
    assert "gpu campaign: 0 of 1 trials" in html and "on one H100" in html and "H100 minutes" not in html


def test_durations_read_as_a_person_says_them():
    from analysis.site.sphinx_ledger import human_duration

    assert [human_duration(s) for s in (1.1e-5, 1.25, 45.0, 444.0, 3600.0, 7500.0, float("nan"))] == [
        "under 1 s", "1.2 s", "45 s", "7 min 24 s", "1 h", "2 h 5 min", "not known"]


def test_headline_gives_what_holds_instead_when_no_number_does():
    from analysis.site.sphinx_ledger import Entry, headline

    claim = Claim("lambda7", "output scales like $\\lambda^7$", "s", 7.0, 9.6, 0.0, 0.1, "basis",
                  approx_rel=0.0).identified("gau-init", "cpu", recorded=True)
    text = headline([Entry("gau_init", "gau_init", "GAU", 1, claim)], "ledger.html")
    assert "1 of 1 fail" in text and "instead: the chapter&#x27;s corrected prediction is a curve" in text
    assert "(37% off)" in text and "largest substantive miss" in text


def test_the_largest_miss_is_substantive_and_ranked_by_its_relative_size():
    from analysis.site.sphinx_ledger import Entry, headline, largest_miss, miss_words

    def entry(key, predicted, measured, effect=None):
        c = Claim(key, f"claim {key}", "s", predicted, measured, 0.0, 1e-9, "basis", effect=effect)
        return Entry("d", "ch", "t", 1, c.identified("e", "cpu", recorded=True))

    eps = entry("ln-scale", 0.0, 4e-6)  # formal: an epsilon, however many orders of magnitude off 0
    big, small, zero = entry("a", 1.0, 5.0), entry("b", 2.0, 2.5), entry("c", 0.0, 0.9)
    assert largest_miss([eps, small, zero, big]) is big
    assert largest_miss([eps, zero]) is zero  # no relative scale: after every miss that has one, before none
    assert largest_miss([eps]) is None
    text = headline([eps, small], "ledger.html")
    assert "2 of 2 fail (1 formal)" in text and "claim b" in text and "(25% off)" in text
    assert headline([eps], "ledger.html") == "no substantive claim fails (1 formal failure)"
    assert miss_words(big.claim) == "off by a factor 5" and miss_words(zero.claim) == ""
    assert miss_words(entry("d", 1.0, -1.0).claim) == "of the opposite sign"
    assert miss_words(entry("d", 4.0, 1.0).claim) == "off by a factor 4"


def test_book_order_reads_the_table_of_contents(tmp_path):
    from types import SimpleNamespace

    from analysis.site.sphinx_ledger import book_order

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    chapters:\n"
                                       "      - file: book/zeta\n      - file: book/alpha.ipynb\n")
    app = SimpleNamespace(srcdir=str(tmp_path), env=None, config=None)
    assert book_order(app) == ["book/zeta", "book/alpha"]


def test_large_factors_are_written_out():
    from analysis.site.sphinx_ledger import miss_words

    def claim(p, m):
        return Claim("k", "s", "src", p, m, 0.0, 1e-9, "basis")

    assert miss_words(claim(1.157e-6, 0.07045)) == "off by a factor 61,000"
    assert miss_words(claim(0.01, 1.279)) == "off by a factor 130"
    assert miss_words(claim(1.0, 2.5)) == "off by a factor 2.5"


def test_about_a_duration_reads_as_english():
    from analysis.site.sphinx_ledger import about, human_duration

    assert about(human_duration(156)) == "about 2 min 36 s"
    assert about(human_duration(0.2)) == "under 1 s" and about(human_duration(math.inf)) == "not known"


def test_the_ledger_and_findings_count_the_sources_apart(tmp_path):
    out = build(tmp_path, smoke_only_first=False)
    html = (out / "ledger.html").read_text()
    # the claims' source 'src' names none of the five texts: every claim is another paper's, none the sources'
    assert "No claim from the five sources; 2 other claims (other papers: 2)" in html
    assert 'data-origin="paper"' in html and 'name="origin"' in html
    rows = list(csv.DictReader(io.StringIO((out / "claims.csv").read_text())))
    assert {r["origin"] for r in rows} == {"paper"}
    index = (out / "index.html").read_text()
    assert "No claim from the five sources; 2 other claims" in index
    assert "no claim from the five sources; 2 other claims" in index  # the chapter's own line
