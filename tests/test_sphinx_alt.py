"""Figures' images carry their caption's first sentence as alt text, not a file path."""

import base64

import pytest
from sphinx.cmd.build import build_main

from analysis.site.sphinx_alt import alt_from_caption, needs_alt

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def test_alt_is_the_captions_first_sentence_cut_at_a_word():
    assert alt_from_caption("Left: entropy against p.  Right: the loss $-\\ln p$.") == "Left: entropy against p."
    assert alt_from_caption("No full stop here") == "No full stop here"
    assert alt_from_caption("e.g. 3.5 times. Then") == "e.g. 3.5 times."
    cut = alt_from_caption("word " * 100, limit=30)
    assert cut.endswith(" …") and len(cut) <= 32
    with pytest.raises(ValueError, match="limit must be >= 20"):
        alt_from_caption("x", limit=3)
    assert needs_alt(None) and needs_alt("") and needs_alt("../_images/abc123.png") and not needs_alt("A curve.")


def test_a_built_figure_gets_its_caption_as_alt(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['analysis.site.sphinx_alt']\n")
    (src / "plot.png").write_bytes(PNG)
    (src / "index.rst").write_text("Book\n====\n\n.. figure:: plot.png\n\n   The loss falls with depth. More words.\n\n"
                                   ".. figure:: plot.png\n   :alt: Given by the author.\n\n   Another caption.\n")
    out = tmp_path / "html"
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    page = (out / "index.html").read_text()
    assert 'alt="The loss falls with depth."' in page and 'alt="Given by the author."' in page
    assert 'alt="plot.png"' not in page
