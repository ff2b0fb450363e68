import csv
import json

from analysis.site import html_check as hc


def test_chapter_defects_are_found():
    good = ('<main><figure><img src="a.png"><figcaption>Fig. 1</figcaption></figure>'
            "<ul><li>a: <strong>holds</strong></li></ul><p>No GPU-scale run of x has been recorded yet.</p>"
            '<details class="provenance"><summary>Provenance</summary><li>x: this build: smoke</li></details>'
            '<div class="verdict-box"><table><tr><td>cpu (recorded)</td></tr></table></div></main>')
    assert hc.chapter_problems("c", good) == []
    smoke_row = good.replace("cpu (recorded)", "smoke (live)")
    assert hc.chapter_problems("c", smoke_row) == ["c: a table shows a smoke run as a measurement"]
    narrow = good.replace("cpu (recorded)", "smoke, this build")  # the same evidence in a narrow cell's words
    assert hc.chapter_problems("c", narrow) == ["c: a table shows a smoke run as a measurement"]
    bad = ('<main><figure><img src="a.png"></figure><p>- a: <strong>holds</strong> - b</p>'
           "<p>see {glue:text}`x`</p></main>")
    found = hc.chapter_problems("c", bad)
    assert any("figure 1 has no caption" in p for p in found)
    assert any("literal '- '" in p for p in found)
    assert any("unrendered MyST" in p for p in found)
    assert any("GPU-scale run" in p for p in found)
    assert any("collapsed provenance" in p for p in found)
    assert any("no verdict box" in p for p in found)
    # a kernel without an image backend prints the figure's repr where its image belongs
    textual = good.replace('<img src="a.png">', "<pre>&lt;Figure size 1400x620 with 2 Axes&gt;</pre>")
    assert hc.chapter_problems("c", textual) == ["c: figure 1 shows no image"]
    # a table glued through an inline role stays text, its separator row typeset as dashes
    for rule in ("|---|---|", "|—|—|", "| --- | :---: |"):
        raw = good.replace("</main>", f"<p>stale.\n\n| a | b |\n{rule}\n| 1 | 2 |</p></main>")
        assert hc.chapter_problems("c", raw) == ["c: a table is rendered as a paragraph of literal '|' rows"], rule
    # a rendered table, and a pipe inside a sentence, are not
    fine = good.replace("</main>", "<table><tr><td>|---|</td></tr></table><p>a | b and c</p></main>")
    assert hc.chapter_problems("c", fine) == []


def write(folder, ids):
    with open(folder / "claims.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["id"])
        w.writeheader()
        w.writerows({"id": i} for i in ids)
    (folder / "claims.json").write_text(json.dumps([{"id": i} for i in ids]))


def test_ledger_defects_are_found(tmp_path):
    page = '<tr data-strongest="1" id="c-a" data-chapter="c"><td></td></tr><tr id="c-b" data-chapter="c"></tr>'
    write(tmp_path, ["c-a", "c-b"])
    assert hc.ledger_problems(tmp_path, page) == []
    write(tmp_path, ["c-a"])
    assert hc.ledger_problems(tmp_path, page) == ["ledger: claims.csv / claims.json do not list the page's claims"]
    no_id = '<tr data-chapter="c"><td></td></tr><tr id="c-b" data-chapter="c"></tr>'
    assert "ledger: 1 of 2 claim rows have no id" in hc.ledger_problems(tmp_path, no_id)
    (tmp_path / "claims.json").unlink()
    assert "ledger: claims.json is missing" in hc.ledger_problems(tmp_path, page)


def test_missing_book_is_one_problem(tmp_path):
    assert hc.main([str(tmp_path)]) == 1


def test_unrendered_maths_is_found():
    head = '<head><script src="_static/mathjax/tex-chtml.js"></script></head><body><main>'
    rendered = head + '<p>With <span class="math notranslate nohighlight">\\(\\sqrt{d}\\)</span>; a <code>$</code> sign</p>'
    assert hc.math_problems("c", rendered) == []
    assert hc.math_problems("c", head + "<p>With $\\sqrt{d}$ the entropy</p>") == [
        "c: unrendered maths '$\\\\sqrt{d}$'"]
    no_mathjax = '<head></head><body><main><span class="math">\\(d\\)</span>'
    assert hc.math_problems("c", no_mathjax) == ["c: has maths but does not load MathJax"]


def test_printed_lines_wider_than_the_column_are_found():
    from analysis.studies.text import COLUMN_CHARS

    fits = "<pre><span>" + "x" * COLUMN_CHARS + "</span>\nshort</pre>"
    assert hc.width_problems("c", fits) == []
    wide = "<pre>ok\n" + "a &amp; " * 20 + "</pre>"
    found = hc.width_problems("c", wide)
    assert len(found) == 1 and "a printed line of 79 characters is cut off at 74" in found[0]
