import pytest

from analysis.core.mathtext import ascii_math, math_html, math_markdown, math_plain
from analysis.site.verdict_table import recorded_claims
from analysis.studies.notes import table

TEXT_FIELDS = ("statement", "source", "tolerance_basis", "unit", "corrected_note", "alternative_note")


def test_math_html_renders_maths_and_escapes_prose():
    out = math_html("If $a < b$ then <x> & $\\sqrt{d}$")
    assert out == ('If <span class="math notranslate nohighlight">\\(a &lt; b\\)</span> then &lt;x&gt; &amp; '
                   '<span class="math notranslate nohighlight">\\(\\sqrt{d}\\)</span>')
    assert math_html("no maths") == "no maths"
    assert math_html("") == ""


def test_math_markdown_survives_commonmark():
    from markdown_it import MarkdownIt

    md = math_markdown("row $\\alpha^* W_q [k]$ and *prose*")
    rendered = MarkdownIt("commonmark").render(md)
    assert "\\(\\alpha^* W_q [k]\\)" in rendered  # Markdown gives back the LaTeX unchanged
    assert "<em>prose</em>" in rendered  # the prose is still Markdown


def test_math_plain_and_unpaired_dollar():
    assert math_plain("at $n = 2$ and $d$") == "at n = 2 and d"
    with pytest.raises(ValueError, match="unpaired"):
        math_html("costs $5")


@pytest.mark.parametrize("text, found", [
    ("1/sqrt(d)", ["sqrt"]), ("s nu^4 / n", ["nu", "^"]), ("||J||_F", ["||", "||"]), ("n >= 2048", [">="]),
    ("W_q W_k", ["W_q", "W_k"]), ("alpha* = 2", ["alpha*"]),
    ("$1/\\sqrt{d}$, relu²/(ns), log₅₁₂ n, d = 512, analysis.theory.flash_counts, float64 ulps", []),
])
def test_ascii_math_is_found_outside_dollars(text, found):
    assert ascii_math(text) == found


def test_recorded_claims_write_maths_as_latex():
    """Every text of every recorded claim, and every ledger note, writes its maths between $ signs."""
    problems = [f"{name} {c.key} {field}: {ascii_math(getattr(c, field))}"
                for name, claims in recorded_claims() for c in claims for field in TEXT_FIELDS if ascii_math(getattr(c, field))]
    notes = {**table("NO_CORRECTED_NUMBER"), **table("REPLACES")}
    problems += [f"ledger note {key}: {ascii_math(text)}" for key, text in notes.items() if ascii_math(text)]
    assert problems == []


def test_verdict_line_renders_the_claims_maths():
    from markdown_it import MarkdownIt

    from analysis.studies.chapter import verdict_line
    from analysis.core.verify import Claim

    claim = Claim("k", "$\\alpha^*$ maximises it", "s", 1.0, 2.0, 0.0, 0.1, "basis", approx_rel=0.0,
                  corrected=2.0, corrected_note="$2\\alpha^*$ instead")
    rendered = MarkdownIt("commonmark", {"html": True}).render(verdict_line(claim, "doc", 1))
    assert "\\(\\alpha^*\\)</span> maximises it" in rendered and "\\(2\\alpha^*\\)</span> instead" in rendered
    assert "$" not in rendered


def test_chapter_claims_table_renders_maths():
    from analysis.studies.chapter import RenderedClaims
    from analysis.core.verify import Claim

    claims = RenderedClaims("doc", "Title")
    claims.record(Claim("k", "with $1/\\sqrt{d}$ and a < b", "src $x$", 1.0, 1.0, 0.0, 0.1, "basis $n^2$"))
    page = claims._repr_html_()
    assert '<span class="math notranslate nohighlight">\\(1/\\sqrt{d}\\)</span> and a &lt; b' in page
    assert "$" not in page
