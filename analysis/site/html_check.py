"""Checks of the built HTML book, as a reader would notice its defects: ``python -m analysis.site.html_check _build/html``.

Per chapter page: every figure has a caption and an image; no list rendered as a paragraph of literal "- " items; no
unrendered MyST syntax (glue, roles, directives) or maths (``$...$`` text, or maths without MathJax); the page says whether a GPU-scale run exists and
carries the live build's provenance, collapsed; it opens with a verdict box; no table shows a smoke run as a
measurement; its prose is within :data:`analysis.site.prose.LIMITS` (words, sentences, paragraphs, bold,
brackets). On every page: no printed line wider than the column. On the ledger
page: every claim row has an id, and ``claims.csv`` / ``claims.json`` beside it list the same ids. The landing
page shows the findings, and the verdict changelog exists. Exit status 1 with one line per problem.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

from analysis.site.prose import prose_problems, prose_stats
from analysis.studies import STUDIES
from analysis.studies.text import COLUMN_CHARS

UNRENDERED = re.compile(r"\{(glue|glue:text|glue:md|glue:figure|cite|eq|numref|ref|doc|math)\}`|```\{|\{claims-ledger\}")
UNRENDERED_MATH = re.compile(r"\$[^\s$][^$\n]{0,300}?\$")
RUN_ON_LIST = re.compile(r"<p>\s*-\s")
# a Markdown table's separator row left as text in a paragraph: the table was glued where only inline Markdown parses
RAW_TABLE = re.compile(r"<p\b[^>]*>(?:(?!</p>).)*?^\|(?:\s*:?(?:-{3,}|[—–]+):?\s*\|)+", re.DOTALL | re.MULTILINE)
FIGURE = re.compile(r"<figure\b.*?</figure>", re.DOTALL)
LEDGER_ROW = re.compile(r"<tr\b[^>]*\bdata-chapter=[^>]*>")
ROW_ID = re.compile(r'\bid="([^"]+)"')
TAGS = re.compile(r"<script\b.*?</script>|<style\b.*?</style>|<[^>]+>", re.DOTALL)


def text_of(page: str) -> str:
    """The page's visible text (scripts, styles and tags removed)."""
    main = page.split('<main', 1)[-1]
    return TAGS.sub(" ", main)


def chapter_problems(name: str, page: str) -> list[str]:
    """Defects of one chapter page."""
    out = []
    for i, fig in enumerate(FIGURE.findall(page), 1):
        if "<figcaption" not in fig:
            out.append(f"{name}: figure {i} has no caption")
        if "<img" not in fig and "<svg" not in fig:  # a kernel without an image backend prints '<Figure size ...>'
            out.append(f"{name}: figure {i} shows no image")
    if RUN_ON_LIST.search(page):
        out.append(f"{name}: a list is rendered as a paragraph of literal '- ' items")
    if RAW_TABLE.search(page):
        out.append(f"{name}: a table is rendered as a paragraph of literal '|' rows")
    text = text_of(page)
    match = UNRENDERED.search(text)
    if match:
        out.append(f"{name}: unrendered MyST syntax {match.group(0)!r}")
    out += math_problems(name, page)
    if "GPU-scale run" not in text:
        out.append(f"{name}: does not say whether a GPU-scale run exists")
    if '<details class="provenance">' not in page or "this build:" not in page:
        out.append(f"{name}: no collapsed provenance of the live build")
    if 'class="verdict-box"' not in page:
        out.append(f"{name}: no verdict box")
    out += smoke_problems(name, page)
    out += prose_problems(name, prose_stats(page))
    return out


PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.DOTALL)


def width_problems(name: str, page: str) -> list[str]:
    """Printed lines (``<pre>`` blocks: outputs, text tables, code) longer than the column holds: they would be cut
    off at the side (:data:`analysis.studies.text.COLUMN_CHARS` characters at a 1280-pixel window)."""
    import html


    out = []
    for block in PRE.findall(page):
        for line in html.unescape(TAGS.sub("", block)).splitlines():
            if len(line.rstrip()) > COLUMN_CHARS:
                out.append(f"{name}: a printed line of {len(line.rstrip())} characters is cut off at "
                           f"{COLUMN_CHARS}: {line.strip()[:60]!r}")
    return out


def smoke_problems(name: str, page: str) -> list[str]:
    """A smoke run shown as a measurement: a claim row whose evidence is the live smoke run."""
    text = text_of(page)
    shown = "smoke (live)" in text or "smoke, this build" in text  # the evidence, in full or in a narrow cell
    return [f"{name}: a table shows a smoke run as a measurement"] if shown else []


def math_problems(name: str, page: str) -> list[str]:
    """Inline maths left as ``$...$`` text, or a page with maths spans that does not load MathJax."""
    out = []
    match = UNRENDERED_MATH.search(text_of(page))
    if match:
        out.append(f"{name}: unrendered maths {match.group(0)!r}")
    if 'class="math' in page and "mathjax" not in page.split("<body", 1)[0].lower():
        out.append(f"{name}: has maths but does not load MathJax")
    return out


def ledger_problems(folder: Path, page: str) -> list[str]:
    """Defects of the ledger page and its downloads."""
    out = math_problems("ledger", page)
    rows = LEDGER_ROW.findall(page)
    ids = [m.group(1) for m in (ROW_ID.search(row) for row in rows) if m]
    if not rows:
        out.append("ledger: no claim rows")
    if len(ids) != len(rows):
        out.append(f"ledger: {len(rows) - len(ids)} of {len(rows)} claim rows have no id")
    if len(set(ids)) != len(ids):
        out.append("ledger: claim ids are not unique")
    for name in ("claims.csv", "claims.json"):
        if not (folder / name).is_file():
            out.append(f"ledger: {name} is missing")
    if not out:
        with open(folder / "claims.csv", newline="", encoding="utf-8") as f:
            csv_ids = [r["id"] for r in csv.DictReader(f)]
        json_ids = [r["id"] for r in json.loads((folder / "claims.json").read_text(encoding="utf-8"))]
        if csv_ids != ids or json_ids != ids:
            out.append("ledger: claims.csv / claims.json do not list the page's claims")
    return out


def problems(site: Path) -> list[str]:
    """Every defect found in the built book at ``site`` (the HTML output folder)."""
    book = site / "book"
    ledger = book / "ledger.html"
    out = []
    if not ledger.is_file():
        return [f"{ledger} does not exist: build the book first"]
    out += ledger_problems(book, ledger.read_text(encoding="utf-8"))
    out += smoke_problems("ledger", ledger.read_text(encoding="utf-8"))
    changelog = book / "changelog.html"
    if not changelog.is_file():
        out.append("changelog: the verdict changelog page is missing")
    elif not re.search(r'class="changelog-entry"|No git history|no committed history',
                       changelog.read_text(encoding="utf-8")):
        out.append("changelog: the page lists no commit and does not say why")
    reproduce = book / "reproduce.html"
    if reproduce.is_file() and "regenerate" not in reproduce.read_text(encoding="utf-8"):
        out.append("reproduce: the table of experiments is missing")
    intro = book / "intro.html"
    if intro.is_file():
        intro_page = intro.read_text(encoding="utf-8")
        if "each at its strongest evidence" not in intro_page:
            out.append("intro: the findings at a glance are missing")
        out += math_problems("intro", intro_page)

    for page in sorted(book.glob("*.html")):
        out += width_problems(page.stem, page.read_text(encoding="utf-8"))
        if page.stem in STUDIES:  # the chapters; the landing, ledger, changelog, notation and reproduce pages are not
            out += chapter_problems(page.stem, page.read_text(encoding="utf-8"))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print each problem on a line; status 1 when there is any."""
    args = sys.argv[1:] if argv is None else argv
    site = Path(args[0] if args else "_build/html")
    found = problems(site)
    for p in found:
        print(p)
    print(f"html check: {len(found)} problem(s) in {site}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
