"""Sphinx extension: the claims ledger and the findings at a glance, filled in from the chapters' claims.

During a build every chapter writes its claims to $ANALYSIS_CLAIMS_DIR (set here to ``<outdir>/../claims`` before
any notebook runs). The documents holding a ``claims-ledger`` or ``findings`` directive are read after every
chapter, so that the directives can build real sections (with ids, and so a contents sidebar) from those claims:

* ``claims-ledger``: filters (chapter, verdict, scale, text), then one section per chapter with a table of its
  claims; every claim has a stable anchor ``<chapter>-<key>`` and a number; ``claims.csv`` and ``claims.json``
  are written beside the page.
* ``findings``: per chapter, a bar of its verdicts, the scale of its evidence, and a headline built from its
  claims (the largest miss and what holds instead), linked to the claim in the ledger.
* ``reproduce``: per experiment, this build's live time, its records (wall time, date, commit, current or stale),
  the gpu estimate, and the command that regenerates it.

Nothing in either is written by hand.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from analysis.compute.plan import plan_experiment
from analysis.core.mathtext import math_html, math_plain
from analysis.core.registry import EXPERIMENTS, config_for, current_record
from analysis.core.results import results_dir
from analysis.core.trials import Experiment, trial_status
from analysis.core.verify import (
    CLAIMS_DIR_ENV,
    ChapterClaims,
    Claim,
    EVIDENCE_RANK,
    PROVENANCE_WORDS,
    SIGNS,
    VERDICT_COLOURS,
    address_breaks,
    beside_html,
    bounded,
    claim_numbers,
    claim_ref,
    claims_table_css,
    detects_html,
    fmt,
    ledger_id,
    load_chapter_claims,
    measurements,
    origin_note,
    plural,
    strongest_claims,
    tallies_html,
    unmeasured,
    unmeasured_sentence,
    verdict_count,
)
from analysis.studies.notes import SEVERITY_RULE, formal_reason, reason, replaces, severity

from analysis.site.changelog import changelog_html, git_output, history


LEDGER_DOC_DIRECTIVE = "claims-ledger"
CSV_FIELDS = ("id", "chapter", "number", "experiment", "key", "scale", "strongest", "severity", "formal_reason", "statement", "source", "origin", "kind", "predicted", "measured",
              "uncertainty", "tolerance", "tolerance_basis", "detectable", "effect", "undecided", "approx_words", "unit", "verdict", "verdict_text", "corrected",
              "corrected_verdict", "corrected_note", "no_corrected_reason", "replaces", "alternative", "alternative_note")


@dataclass(frozen=True)
class Entry:
    """One measurement of a claim as the ledger shows it: its chapter, the claim's number (the same at every scale),
    and whether it is the claim's strongest evidence."""

    doc: str
    chapter: str
    title: str
    number: int
    claim: Claim
    is_strongest: bool = True

    @property
    def anchor(self) -> str:
        """The stable id of the claim on the ledger page: '<chapter>-<key>' for its strongest evidence (the same at
        every scale), '<chapter>-<key>-<run>' for a weaker run of it."""
        return ledger_id(self.chapter, self.claim, self.is_strongest)

    @property
    def scale(self) -> str:
        """'cpu (recorded)', 'gpu (recorded)', ...: where the measurement comes from."""
        return self.claim.evidence

    def row(self) -> dict[str, Any]:
        """The CSV / JSON row."""
        c = self.claim
        return {"id": self.anchor, "chapter": self.chapter, "number": self.number,
                "experiment": c.id.experiment if c.id is not None else "", "key": c.key,
                "scale": self.scale, "strongest": self.is_strongest, "severity": severity(c.key),
                "formal_reason": formal_reason(c.key) or "", "statement": c.statement, "source": c.source, "origin": c.origin, "kind": c.kind,
                "predicted": c.predicted, "measured": c.measured, "uncertainty": c.uncertainty,
                "tolerance": c.tolerance, "tolerance_basis": c.tolerance_basis,
                "detectable": None if c.detectable is None else (
                    "inf" if math.isinf(c.detectable) else c.detectable),
                "effect": c.effect, "undecided": c.undecided, "approx_words": c.approx_words, "unit": c.unit,
                "verdict": c.verdict, "verdict_text": c.verdict_text(), "corrected": c.corrected,
                "corrected_verdict": c.corrected_verdict, "corrected_note": c.corrected_note,
                "no_corrected_reason": (reason(c.key) or "") if c.verdict == "fails" and c.corrected is None else "",
                "replaces": replaces(c.key) or "",
                "alternative": c.alternative, "alternative_note": c.alternative_note}


def entries(chapters: list[tuple[str, ChapterClaims]]) -> list[Entry]:
    """Every measurement of every chapter's claims (smoke runs, which only check that the code runs, are left out),
    numbered by claim within its chapter (:func:`analysis.core.verify.claim_numbers`), in the order the chapter states
    them; each claim's strongest evidence is marked."""
    out = []
    for doc, ch in chapters:
        numbers = claim_numbers(ch.claims)
        best = {id(c) for c in strongest_claims(ch.claims)}
        out += [Entry(doc, ch.chapter, ch.title, numbers[claim_ref(c)], c, id(c) in best)
                for c in measurements(ch.claims)]
    return out


def strongest(items: list[Entry]) -> list[Entry]:
    """The entries that are their claim's strongest evidence: one per claim, the set every count is made over."""
    return [e for e in items if e.is_strongest]


def to_csv(items: list[Entry]) -> str:
    """The ledger as CSV, one row per claim (columns: :data:`CSV_FIELDS`)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for e in items:
        writer.writerow({k: ("" if v is None else v) for k, v in e.row().items()})
    return out.getvalue()


def to_json(items: list[Entry]) -> str:
    """The ledger as JSON: a list of rows (keys: :data:`CSV_FIELDS`)."""
    return json.dumps([e.row() for e in items], indent=1)


def verdict_label(verdict: str, count: int) -> str:
    """'12 hold', '1 holds only approximately (...)', ...: a summary phrase that matches the rows' wording."""
    if verdict == "holds approximately":
        within = "only approximately (within a % stated per claim)"
        return f"{count} {'holds' if count == 1 else 'hold'} {within}"
    return verdict_count(verdict, count)


VERDICT_ORDER = {v: i for i, v in enumerate(("fails", "inconclusive", "holds approximately", "holds"))}


def _row_html(e: Entry, chapter_uri: str, beside: str = "") -> str:
    """One ledger row; ``beside``: the claim's other measurements shown beside it (:func:`analysis.core.verify.beside_html`)."""
    c = e.claim
    colour = VERDICT_COLOURS[c.verdict]
    if c.corrected is not None:
        corrected = (f"<br>corrected: {fmt(c.corrected)} ({html.escape(str(c.corrected_verdict))})"
                     + (f"<br><small>{math_html(c.corrected_note)}</small>" if c.corrected_note else ""))
    elif c.verdict == "fails":
        why = reason(c.key)
        corrected = (f"<br><small>no corrected number: {math_html(why)}</small>" if why
                     else "<br><small>no corrected prediction yet</small>")
    else:
        corrected = ""
    alternative = "" if c.alternative is None else (
        f"<br><small>alternative {fmt(c.alternative)}: {math_html(c.alternative_note)}</small>")
    earlier = replaces(c.key)
    if earlier:
        alternative += f"<br><small>replaces: {math_html(earlier)}</small>"
    level = severity(c.key)
    why_formal = formal_reason(c.key)
    search = html.escape(f"{math_plain(c.statement)} {math_plain(c.source)} {c.key}".lower(), quote=True)
    back = f'<br><small><a href="{html.escape(chapter_uri)}#claim-{html.escape(c.key)}">in the chapter</a></small>'
    return (f'<tr data-strongest="{int(e.is_strongest)}" id="{e.anchor}" data-chapter="{e.chapter}" data-verdict="{c.verdict}" '
            f'data-scale="{html.escape(e.scale)}" data-severity="{level}" data-origin="{c.origin}" data-text="{search}">'
            f'<td data-sort="{e.number:05d}{EVIDENCE_RANK.get(e.scale, 0)}"><a href="#{e.anchor}">{e.chapter}.{e.number}</a>'
            f"<br><small>{html.escape(e.claim.evidence_words)}</small>{back}</td>"
            f"<td>{math_html(c.statement)}<br><small>{address_breaks(math_html(c.source))}{origin_note(c)}</small></td>"
            f"<td>{SIGNS[c.kind]} {fmt(c.predicted)} {math_html(c.unit)}<br>{bounded(c, fmt(c.measured))} ± "
            f"{fmt(c.uncertainty, 2)}{detects_html(c)}{beside}</td>"
            f"<td>{fmt(c.tolerance, 2)}<br><small>{math_html(c.tolerance_basis)}</small>{alternative}</td>"
            f'<td data-sort="{VERDICT_ORDER[c.verdict]}"><span style="color:{colour};font-weight:bold">'
            f"{html.escape(c.verdict_text())}</span>{corrected}</td>"
            f'<td data-sort="{0 if level == "substantive" else 1}">{level}'
            + (f"<br><small>{math_html(why_formal)}</small>" if why_formal else "") + "</td></tr>")


# the ledger table's columns, in order, and those a narrow screen hides (their values are in the downloads)
COLUMNS = ("c-num", "c-claim", "c-values", "c-tol", "c-verdict", "c-sev")
NARROW_HIDDEN = ("c-values", "c-tol", "c-sev")

LEDGER_CSS = (
    "div.ledger-scroll{overflow-x:auto}table.ledger-table{table-layout:fixed;width:100%;min-width:46em}"
    "table.ledger-table col.c-num{width:6.5em}table.ledger-table col.c-values{width:8em}"
    "table.ledger-table col.c-tol{width:18%}table.ledger-table col.c-verdict{width:16%}"
    "table.ledger-table col.c-sev{width:6.5em}"
    "table.ledger-table td{overflow-wrap:normal;word-break:normal;hyphens:auto;overflow-x:auto}"
    "table.ledger-table th{cursor:pointer;user-select:none}table.ledger-table th[aria-sort]::after{content:' ↕';opacity:0.5}"
    ".ledger-filters{display:flex;flex-wrap:wrap;gap:0.6em;align-items:center;margin:0.5em 0 1em}"
    ".ledger-filters select,.ledger-filters input{font-size:0.9em;padding:0.15em 0.3em}"
    # a narrow screen keeps the number, the claim and the verdict; the values, tolerance and severity are in the
    # downloads and a wider window
    # the page has no secondary sidebar (_config.yml): the table takes the whole width of the article
    ".bd-main .bd-content .bd-article-container{max-width:100%}"
    "@media (max-width:700px){table.ledger-table{min-width:0}"
    + ",".join(f"table.ledger-table col.{c}" for c in NARROW_HIDDEN) + "{display:none}"
    # and so do their cells, so that their text sets no row's height (the remaining cells meet the remaining columns)
    + "".join(f"table.ledger-table th:nth-child({i}),table.ledger-table td:nth-child({i}){{display:none}}"
              for i in (COLUMNS.index(c) + 1 for c in NARROW_HIDDEN)) +
    "table.ledger-table col.c-num{width:5.5em}table.ledger-table col.c-verdict{width:32%}}"
)

FILTER_JS = """
(function () {
  function apply() {
    var f = document.getElementById('ledger-filters');
    var chapter = f.querySelector('[name=chapter]').value, verdict = f.querySelector('[name=verdict]').value;
    var scale = f.querySelector('[name=scale]').value, text = f.querySelector('[name=text]').value.toLowerCase();
    var severity = f.querySelector('[name=severity]').value, origin = f.querySelector('[name=origin]').value;
    var strongest = f.querySelector('[name=strongest]').checked, shown = 0, claims = 0, weaker = 0;
    document.querySelectorAll('table.ledger-table tbody tr').forEach(function (tr) {
      if (tr.dataset.strongest === '1') { claims += 1; }
      var ok = (!chapter || tr.dataset.chapter === chapter) && (!verdict || tr.dataset.verdict === verdict) &&
        (!scale || tr.dataset.scale === scale) && (!text || tr.dataset.text.indexOf(text) >= 0) &&
        (!severity || tr.dataset.severity === severity) && (!origin || tr.dataset.origin === origin) &&
        (!strongest || tr.dataset.strongest === '1');
      tr.style.display = ok ? '' : 'none';
      if (ok) { shown += 1; if (tr.dataset.strongest !== '1') { weaker += 1; } }
    });
    document.querySelectorAll('section.ledger-chapter').forEach(function (s) {
      s.style.display = s.querySelector('tbody tr:not([style*="none"])') ? '' : 'none';
    });
    document.getElementById('ledger-count').textContent = 'showing ' + (shown - weaker) + ' of ' + claims +
      ' claims' + (weaker ? ' and ' + weaker + ' measurements at weaker scales' : '');
  }
  function sortBy(th) {
    var table = th.closest('table'), i = Array.prototype.indexOf.call(th.parentNode.children, th);
    var up = th.getAttribute('aria-sort') !== 'ascending', body = table.tBodies[0];
    var key = function (tr) { var td = tr.children[i]; return td.dataset.sort || td.textContent.trim().toLowerCase(); };
    Array.prototype.slice.call(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
    }).forEach(function (tr) { body.appendChild(tr); });
    table.querySelectorAll('th').forEach(function (h) { h.setAttribute('aria-sort', 'none'); });
    th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
  }
  document.addEventListener('DOMContentLoaded', function () {
    var f = document.getElementById('ledger-filters');
    if (!f) { return; }
    document.querySelectorAll('table.ledger-table th').forEach(function (th) {
      th.setAttribute('aria-sort', 'none');
      th.title = 'sort by this column';
      th.addEventListener('click', function () { sortBy(th); });
    });
    f.addEventListener('input', apply);
    f.addEventListener('change', apply);
    var target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    if (target) { f.querySelector('[name=strongest]').checked = false; }
    apply();
    if (target) { target.scrollIntoView(); target.style.outline = '2px solid #1f6feb'; }
  });
})();
"""


def filters_html(items: list[Entry]) -> str:
    """The filter controls (chapter, verdict, scale, text, strongest evidence only) and the download links."""
    def options(values: list[tuple[str, str]]) -> str:
        return '<option value="">all</option>' + "".join(
            f'<option value="{html.escape(v, quote=True)}">{html.escape(t)}</option>' for v, t in values)

    chapters = list(dict.fromkeys((e.chapter, e.title) for e in items))
    scales = sorted({e.scale for e in items}, key=lambda s: EVIDENCE_RANK.get(s, -1))
    return (f"<style>{LEDGER_CSS}</style>"
            '<form id="ledger-filters" class="ledger-filters" onsubmit="return false">'
            f'<label>chapter <select name="chapter">{options(chapters)}</select></label>'
            f'<label>verdict <select name="verdict">{options([(v, v) for v in VERDICT_COLOURS])}</select></label>'
            f'<label>scale <select name="scale">{options([(s, s) for s in scales])}</select></label>'
            f'<label>severity <select name="severity">{options([(s, s) for s in ("substantive", "formal")])}</select></label>'
            f'<label>origin <select name="origin">{options(list(PROVENANCE_WORDS.items()))}</select></label>'
            '<label>text <input name="text" type="search" placeholder="words in a claim"></label>'
            '<label><input name="strongest" type="checkbox" checked> strongest evidence only</label>'
            '<span id="ledger-count"></span>'
            '<span>download: <a href="claims.csv" download>claims.csv</a> · '
            '<a href="claims.json" download>claims.json</a></span></form>'
            f"<script>{FILTER_JS}</script>")


def table_html(items: list[Entry], chapter_uri: str) -> str:
    """One chapter's claims as a sortable table (click a heading); rows with the strongest evidence are marked for
    the default filter, and each links back to its claim in the chapter at ``chapter_uri``."""
    head = ["# / scale", "claim", "predicted<br>measured ± error", "tolerance (basis)", "verdict / corrected",
            "severity"]
    claims = [e.claim for e in items]
    rows = "".join(_row_html(e, chapter_uri, beside_html(e.claim, claims) if e.is_strongest else "") for e in items)
    return (claims_table_css() + '<div class="ledger-scroll"><table class="claims-table ledger-table"><colgroup>'
            + "".join(f'<col class="{c}">' for c in COLUMNS) + "</colgroup><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{rows}</tbody></table></div>")


def summary_html(items: list[Entry], what: str) -> str:
    """'N claims from M chapters (what).' and the two tallies (:func:`analysis.core.verify.tallies_html`: the five sources'
    claims, then the others) over each claim's strongest evidence, with the verdicts in their colours and the formal
    failures counted apart."""
    strong = strongest(items)
    counts = Counter(e.claim.verdict for e in strong)
    parts = tallies_html([e.claim for e in strong], verdict_label)
    formal = sum(e.claim.verdict == "fails" and severity(e.claim.key) == "formal" for e in strong)
    split = ""
    if counts["fails"]:
        split = (f" Of the {plural(counts['fails'], 'failure')}, {counts['fails'] - formal} "
                 f"{'is' if counts['fails'] - formal == 1 else 'are'} substantive and {formal} formal.")
    return (f"<p>{plural(len(strong), 'claim')} from {plural(len({e.chapter for e in strong}), 'chapter')}, "
            f"{what}. {parts[0].upper()}{parts[1:]}.{split}</p>")


def bar_html(items: list[Entry]) -> str:
    """A stacked bar of verdict counts (the findings' figure), each segment titled with its count."""
    counts = Counter(e.claim.verdict for e in items)
    total = max(1, sum(counts.values()))
    segments = "".join(
        f'<span title="{verdict_label(v, counts[v])}" style="display:inline-block;height:0.9em;'
        f'width:{100 * counts[v] / total:.2f}%;background:{VERDICT_COLOURS[v]}"></span>'
        for v in VERDICT_COLOURS if counts[v])
    return f'<span class="verdict-bar" style="display:inline-block;width:12em;line-height:0">{segments}</span>'


def miss_size(c: Claim) -> float | None:
    """How far a failed prediction is off, for ranking misses: |measured - predicted| over |predicted|, or over the
    effect the claim is about when the prediction is 0; None when neither gives a scale."""
    diff = abs(c.measured - c.predicted)
    if c.predicted != 0:
        return diff / abs(c.predicted)
    if c.effect:
        return diff / abs(c.effect)
    return None


def about(duration: str) -> str:
    """'about 2 min 36 s', but 'under 1 s' and 'not known' as they are (not 'about under 1 s')."""
    return duration if duration.startswith("under") or duration == "not known" else f"about {duration}"


def miss_words(c: Claim) -> str:
    """'400% off', 'off by a factor 4.1', 'of the opposite sign', or '' (a prediction of 0 has no relative miss)."""
    p, m = c.predicted, c.measured
    if p == 0:
        return ""
    if m == 0 or (m > 0) != (p > 0):
        return "of the opposite sign" if m != 0 else "100% off"
    fold = max(m / p, p / m)
    if fold < 2:
        return f"{100 * abs(m - p) / abs(p):.0f}% off"
    rounded = float(f"{fold:.2g}")  # two significant figures, written out: 'a factor 61,000', not '6.1e+04'
    factor = f"a factor {rounded:,.0f}" if rounded >= 10 else f"a factor {rounded:g}"
    # a bound that points away from the prediction only says how far off it is at least
    away = (c.measured_bound == "≥" and m > p) or (c.measured_bound == "≤" and m < p)
    return f"off by at least {factor}" if away else f"off by {factor}"


def largest_miss(items: list[Entry]) -> Entry | None:
    """The largest substantive failure (:func:`miss_size`; failures with no relative scale come after the others,
    and formal ones never count), or None."""
    misses = [e for e in items if e.claim.verdict == "fails" and severity(e.claim.key) == "substantive"]
    if not misses:
        return None
    return max(misses, key=lambda e: (miss_size(e.claim) is not None, miss_size(e.claim) or 0.0))


def headline(items: list[Entry], ledger_uri: str) -> str:
    """A chapter's finding in one line: its largest substantive miss (and the correction that holds), else that all
    hold."""
    fails = [e for e in items if e.claim.verdict == "fails"]
    formal = [e for e in fails if severity(e.claim.key) == "formal"]
    e = largest_miss(items)
    if e is None:
        approx = [x for x in items if x.claim.verdict not in ("holds", "fails")]
        text = "every claim holds" if not approx and not fails else (
            "no substantive claim fails" + (f"; {len(approx)} hold only within a stated % or are inconclusive"
                                           if approx else ""))
        return text + (f" ({plural(len(formal), 'formal failure')})" if formal else "")
    c = e.claim
    link = f'<a href="{html.escape(ledger_uri)}#{e.anchor}">{e.chapter}.{e.number}</a>'
    off = miss_words(c)
    count = f"{len(fails)} of {len(items)} fail" + (f" ({len(formal)} formal)" if formal else "")
    text = (f"{count}; the largest substantive miss ({link}): {math_html(c.statement)}: predicted "
            f"{fmt(c.predicted)}, measured {bounded(c, fmt(c.measured))}" + (f" ({off})" if off else ""))
    if c.corrected is not None:
        text += f"; corrected {fmt(c.corrected)} {html.escape(str(c.corrected_verdict))}"
    elif reason(c.key):
        text += f"; instead: {math_html(str(reason(c.key)))}"
    return text


def findings_html(items: list[Entry], uri: dict[str, str], ledger_uri: str) -> str:
    """Per chapter, in book order, over each claim's strongest evidence: link, verdict bar, evidence scales, and
    headline."""
    strong = strongest(items)
    rows = []
    for chapter in dict.fromkeys(e.chapter for e in strong):
        mine = [e for e in strong if e.chapter == chapter]
        scales = ", ".join(sorted({e.scale for e in mine}, key=lambda s: -EVIDENCE_RANK.get(s, -1)))
        rows.append(f'<tr><td><a href="{html.escape(uri[chapter])}">{html.escape(mine[0].title)}</a><br>'
                    f"{bar_html(mine)}<br><small>{tallies_html([e.claim for e in mine])}; evidence: "
                    f"{html.escape(scales)}</small></td>"
                    f"<td>{headline(mine, ledger_uri)}</td></tr>")
    legend = " ".join(f'<span style="color:{c};font-weight:bold">■ {v}</span>' for v, c in VERDICT_COLOURS.items())
    return (claims_table_css() + summary_html(strong, "each at its strongest evidence") + f"<p>{legend}</p>"
            '<table class="claims-table"><colgroup><col style="width:16em"><col></colgroup><thead><tr>'
            f'<th>chapter</th><th>finding</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def claims_dir(app: Sphinx) -> Path:
    """Where the chapters of this build write their claims."""
    return Path(app.outdir).parent / "claims"


def _on_builder_inited(app: Sphinx) -> None:
    path = claims_dir(app)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[CLAIMS_DIR_ENV] = str(path)  # inherited by the kernels that execute the chapters


TOC_FILE = re.compile(r"^\s*-?\s*file:\s*(\S+)", re.MULTILINE)


def book_order(app: Sphinx) -> list[str]:
    """The documents in reading order: the ``file:`` entries of Jupyter Book's ``_toc.yml``, else the root document's
    toctree (not yet known while the root page, which shows the findings, is itself being read)."""
    toc = Path(app.srcdir) / "_toc.yml"
    if toc.is_file():
        return [re.sub(r"\.(md|ipynb|rst)$", "", f) for f in TOC_FILE.findall(toc.read_text(encoding="utf-8"))]
    return list(app.env.toctree_includes.get(app.config.root_doc, []))


def _chapters(app: Sphinx) -> list[tuple[str, ChapterClaims]]:
    """(docname, claims) for every claims file whose chapter is a document of this book, in TOC order."""
    docs = {Path(d).name: d for d in app.env.found_docs}
    order = {d: i for i, d in enumerate(book_order(app))}
    found = []
    for file in sorted(claims_dir(app).glob("*.json")):
        chapter = load_chapter_claims(file)
        if chapter.chapter in docs:
            found.append((docs[chapter.chapter], chapter))
    return sorted(found, key=lambda dc: (order.get(dc[0], len(order)), dc[0]))


_DIRECTIVE = re.compile(r"(\{(claims-ledger|findings|reproduce|verdict-changelog)\})|"
                        r"(\.\. (claims-ledger|findings|reproduce|verdict-changelog)::)")


def _uses(source: str) -> bool:
    """Whether a MyST or reST source holds a ledger or findings directive."""
    return bool(_DIRECTIVE.search(source))


def _ledger_docs(app: Sphinx) -> set[str]:
    """The documents with a ledger or findings directive: they are read last, after every chapter has run."""
    out = set()
    for doc in app.env.found_docs:
        path = Path(app.env.doc2path(doc))
        if path.suffix in (".md", ".rst") and path.is_file() and _uses(path.read_text(encoding="utf-8")):
            out.add(doc)
    return out


def _relative(app: Sphinx, fromdoc: str, todoc: str) -> str:
    return os.path.relpath(todoc, os.path.dirname(fromdoc) or ".") + app.builder.out_suffix if \
        hasattr(app.builder, "out_suffix") else todoc


class _ClaimsDirective(SphinxDirective):
    """A directive rendered from this build's chapters' claims (a plain line when no chapter recorded any)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        chapters = _chapters(self.env.app)
        if not chapters:
            return [nodes.paragraph(text="No chapter recorded any claim in this build.")]
        return self.render(self.env.app, chapters)

    def render(self, app: Sphinx, chapters: list[tuple[str, ChapterClaims]]) -> list[nodes.Node]:
        """The directive's nodes, given the chapters (docname, claims) in TOC order."""
        raise NotImplementedError


class ClaimsLedgerDirective(_ClaimsDirective):
    """``{claims-ledger}``: the counts, the severity rule, filters, then one section per chapter with its claims."""

    def render(self, app: Sphinx, chapters: list[tuple[str, ChapterClaims]]) -> list[nodes.Node]:
        items = entries(chapters)
        pending = sum(len(unmeasured(ch.claims)) for _, ch in chapters)
        extra = f"<p>{unmeasured_sentence(pending)}</p>" if pending else ""
        intro = (summary_html(items, "each at its strongest evidence") + f"<p><strong>Severity.</strong> "
                 f"{html.escape(SEVERITY_RULE)}</p>" + extra)
        out: list[nodes.Node] = [nodes.raw("", intro + filters_html(items), format="html")]
        for doc, chapter in chapters:
            mine = [e for e in items if e.chapter == chapter.chapter]
            section = nodes.section(ids=[f"ledger-{chapter.chapter}"], classes=["ledger-chapter"])
            section += nodes.title(text=chapter.title)
            link = _relative(app, self.env.docname, doc)
            section += nodes.raw("", f'<p><a href="{html.escape(link)}">read the chapter</a> · '
                                 f"{plural(len(strongest(mine)), 'claim')}</p>" + table_html(mine, link),
                                 format="html")
            out.append(section)
        return out


class FindingsDirective(_ClaimsDirective):
    """``{findings}``: the findings at a glance, per chapter."""

    def render(self, app: Sphinx, chapters: list[tuple[str, ChapterClaims]]) -> list[nodes.Node]:
        ledger = next((d for d in _ledger_docs(app) if d.endswith("ledger")), "ledger")
        uri = {ch.chapter: _relative(app, self.env.docname, doc) for doc, ch in chapters}
        return [nodes.raw("", findings_html(entries(chapters), uri, _relative(app, self.env.docname, ledger)),
                          format="html")]


def chapter_timings(app: Sphinx) -> dict[str, tuple[str, str, float]]:
    """experiment -> (chapter, scale, seconds) of this build's live runs, from the chapters' timing files."""
    out: dict[str, tuple[str, str, float]] = {}
    for file in sorted((claims_dir(app) / "runs").glob("*.json")):
        d = json.loads(file.read_text(encoding="utf-8"))
        for name, seconds in d["seconds"].items():
            out[name] = (d["chapter"], d["scale"], float(seconds))
    return out


def human_duration(seconds: float) -> str:
    """A duration as a reader says it: 'under 1 s', '45 s', '7 min 24 s', '2 h 5 min'; 'not known' when not finite."""
    if not math.isfinite(seconds) or seconds < 0:
        return "not known"
    if seconds < 1:
        return "under 1 s"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min" + (f" {secs} s" if secs else "")
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def repository_line(root: Path) -> str:
    """Which sources this build is made from: the repository (its remote when it has a web address) and commit."""

    remote = (git_output(root, "remote", "get-url", "origin") or "").strip()
    where = (f'<a href="{html.escape(remote)}">{html.escape(remote)}</a>' if remote.startswith(("https://", "http://"))
             else "the git repository of this book (the folder with <code>README.md</code>, <code>analysis/</code>, "
                  "<code>book/</code> and <code>results/</code>)")
    commit = (git_output(root, "rev-parse", "HEAD") or "").strip()
    return (f"<p>Sources: {where}" + (f", commit <code>{commit[:10]}</code>" if commit else "")
            + ". Each record below links to its JSON file, with its data, configuration and provenance.</p>")


RECORDS_FOLDER = "records"  # beside the reproduction page: the records' JSON files, copied when the book is built


def reproduce_html(timings: dict[str, tuple[str, str, float]], chapter_uri: dict[str, str] | None = None,
                   titles: dict[str, str] | None = None) -> str:
    """Per experiment: its chapter (linked), this build's live time, its cpu record (wall time, date, commit,
    current or stale, a link to its JSON), the gpu record or estimate, and the commands that regenerate each."""

    chapter_uri, titles = chapter_uri or {}, titles or {}
    head = ["experiment / chapter", "this build (live)", "cpu record", "gpu record, else estimate (not run)",
            "regenerate"]
    rows = []
    for name in EXPERIMENTS:
        chapter, size, seconds = timings.get(name, ("-", "-", float("nan")))
        live = f"{human_duration(seconds)} at {size} scale" if chapter != "-" else "not run by this build"
        records = []
        for rec_scale in ("cpu", "gpu"):
            record, stale = current_record(name, rec_scale)
            if record is None:
                records.append(f"no {rec_scale} record" if rec_scale == "cpu" else "")
                continue
            prov = record.provenance
            state = "stale: " + "; ".join(stale) if stale else "current"
            file = f"{RECORDS_FOLDER}/{name}.{rec_scale}.json"
            records.append(f"{html.escape(human_duration(float(prov.get('wall_time_s', float('nan')))))}, "
                           f"{html.escape(str(prov.get('date', '?'))[:10])}, "
                           f"commit {html.escape(str(prov.get('git_commit', '?'))[:8])}"
                           f"{' (uncommitted changes)' if prov.get('git_dirty') else ''} ({html.escape(state)})"
                           f'<br><a href="{file}">{name}.{rec_scale}.json</a>')
        est = plan_experiment(name, "gpu", execute=False)
        exp = Experiment(EXPERIMENTS[name])
        trials = trial_status(exp, "gpu", config_for(exp.module, "gpu")).describe()
        gpu = (records[1] if records[1] else
               html.escape(f"{about(human_duration(est.h100_minutes * 60))} on one H100 (estimated from measured "
                           f"step times), {est.peak_memory_gb:.2g} GB")) + f"; gpu campaign: {html.escape(trials)}"
        where = (f'<a href="{html.escape(chapter_uri[chapter])}">{html.escape(titles.get(chapter, chapter))}</a>'
                 if chapter in chapter_uri else html.escape(chapter))
        rows.append(f"<tr><td><code>{name}</code><br><small>{where}</small></td>"
                    f"<td>{html.escape(live)}</td><td>{records[0]}</td><td>{gpu}</td>"
                    f"<td><code>python -m analysis campaign --scale cpu --only {name}</code><br>on a GPU: "
                    f"<code>python -m analysis campaign --scale gpu --only {name}</code></td></tr>")
    return (claims_table_css() + '<div class="ledger-scroll"><table class="claims-table"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


class ReproduceDirective(SphinxDirective):
    """``{reproduce}``: how long each experiment took in this build and in its records, and how to rerun it."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        app = self.env.app
        chapters = _chapters(app)
        uri = {ch.chapter: _relative(app, self.env.docname, doc) for doc, ch in chapters}
        titles = {ch.chapter: ch.title for _, ch in chapters}
        return [nodes.raw("", repository_line(Path(app.srcdir))
                          + reproduce_html(chapter_timings(app), uri, titles), format="html")]


class ChangelogDirective(SphinxDirective):
    """``{verdict-changelog}``: every change of a recorded verdict, from the git history of the verdict table."""

    has_content = False

    def run(self) -> list[nodes.Node]:

        app = self.env.app
        ledger = next((d for d in sorted(_ledger_docs(app)) if d.endswith("ledger")), None)
        links = {}
        for e in strongest(entries(_chapters(app))):
            if e.claim.id is not None and ledger is not None:
                href = f"{_relative(app, self.env.docname, ledger)}#{e.anchor}"
                links[(e.claim.id.experiment, e.claim.key)] = (f"{e.chapter}.{e.number}", href)
        return [nodes.raw("", changelog_html(history(Path(app.srcdir)), links), format="html")]


def _on_env_before_read_docs(app: Sphinx, env: Any, docnames: list[str]) -> None:
    """Read the ledger and findings pages after every chapter (the chapters write the claims they show)."""
    last = _ledger_docs(app)
    docnames.sort(key=lambda d: d in last)


def _on_env_get_outdated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """The ledger and findings are rebuilt whenever a build runs: the claims may have changed, their source not."""
    return sorted(_ledger_docs(app))


def _on_build_finished(app: Sphinx, exception: Exception | None) -> None:
    """Write claims.csv and claims.json beside the ledger page, and copy the records beside the reproduction page."""
    if exception is not None or app.builder.format != "html":
        return
    items = entries(_chapters(app))

    for doc in _ledger_docs(app):
        if doc.endswith("reproduce"):  # the records the reproduction page links to
            folder = Path(app.outdir) / os.path.dirname(doc) / RECORDS_FOLDER
            folder.mkdir(parents=True, exist_ok=True)
            for record in sorted(results_dir().glob("*.json")):
                shutil.copyfile(record, folder / record.name)
        if doc.endswith("ledger"):
            folder = Path(app.outdir) / os.path.dirname(doc)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "claims.csv").write_text(to_csv(items), encoding="utf-8")
            (folder / "claims.json").write_text(to_json(items), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directives and the build events."""
    app.add_directive(LEDGER_DOC_DIRECTIVE, ClaimsLedgerDirective)
    # claims write their maths as inline LaTeX, rendered by MathJax on pages that need not hold a math node
    app.set_html_assets_policy("always")
    app.add_directive("findings", FindingsDirective)
    app.add_directive("reproduce", ReproduceDirective)
    app.add_directive("verdict-changelog", ChangelogDirective)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("env-before-read-docs", _on_env_before_read_docs)
    app.connect("env-get-outdated", _on_env_get_outdated)
    app.connect("build-finished", _on_build_finished)
    return {"version": "2", "parallel_read_safe": False, "parallel_write_safe": True}
