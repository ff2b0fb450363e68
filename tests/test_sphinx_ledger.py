import json

from sphinx.cmd.build import build_main

from analysis.verify import ChapterClaims, Claim


def test_ledger_page_is_generated_from_chapter_claims(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['analysis.sphinx_ledger']\n")
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n\n   chap\n   ledger\n")
    (src / "chap.rst").write_text("Chapter\n=======\n\nText.\n")
    (src / "ledger.rst").write_text("Ledger\n======\n\n.. claims-ledger::\n")
    out = tmp_path / "build" / "html"
    claims_dir = tmp_path / "build" / "claims"
    claims_dir.mkdir(parents=True)
    ch = ChapterClaims("chap", "The chapter")
    ch.claims.append(Claim("c1", "first statement", "src", 1.0, 1.0, 0.0, 0.0, "exact"))
    ch.claims.append(Claim("c2", "second statement", "src", 1.0, 3.0, 0.0, 0.1, "3 sigma"))
    ch.save(claims_dir)
    # a claims file of a chapter that is not in the book is ignored
    (claims_dir / "gone.json").write_text(json.dumps({"chapter": "gone", "title": "Gone", "claims": []}))
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    html = (out / "ledger.html").read_text()
    assert "2 claims from 1 chapter(s)" in html
    assert "first statement" in html and "second statement" in html
    assert 'href="chap.html"' in html and "Gone" not in html
