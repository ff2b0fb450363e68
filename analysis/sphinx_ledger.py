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
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from analysis.ledger_notes import reason, replaces
from analysis.mathtext import math_html, math_plain
from analysis.verify import (
    CLAIMS_DIR_ENV,
    VERDICT_COLOURS,
    ChapterClaims,
    Claim,
    claims_table_css,
    detects_html,
    fmt,
    load_chapter_claims,
)

LEDGER_DOC_DIRECTIVE = "claims-ledger"
# evidence, weakest first: a live smoke run exercises the code; records and live cpu / gpu runs measure
SCALE_RANK = {"smoke (live)": 0, "cpu (live)": 1, "cpu (recorded)": 2, "gpu (live)": 3, "gpu (recorded)": 4,
              "computed": 5}
SIGNS = {"equal": "=", "upper_bound": "≤", "lower_bound": "≥", "below": "<", "above": ">"}
CSV_FIELDS = ("id", "chapter", "number", "experiment", "key", "scale", "statement", "source", "kind", "predicted", "measured",
              "uncertainty", "tolerance", "tolerance_basis", "detectable", "effect", "undecided", "approx_words", "unit", "verdict", "verdict_text", "corrected",
              "corrected_verdict", "corrected_note", "no_corrected_reason", "replaces", "alternative", "alternative_note")


@dataclass(frozen=True)
class Entry:
    """One claim as the ledger shows it: its chapter, number, anchor and scale."""

    doc: str
    chapter: str
    title: str
    number: int
    claim: Claim

    @property
    def anchor(self) -> str:
        """The stable id of the claim on the ledger page: '<chapter>-<key>-<run>' ('<chapter>-<key>' when computed)."""
        return f"{self.chapter}-{self.claim.slug}"

    @property
    def scale(self) -> str:
        """'cpu (recorded)', 'smoke (live)', ...: where the measurement comes from."""
        return self.claim.evidence

    def row(self) -> dict[str, Any]:
        """The CSV / JSON row."""
        c = self.claim
        return {"id": self.anchor, "chapter": self.chapter, "number": self.number,
                "experiment": c.id.experiment if c.id is not None else "", "key": c.key,
                "scale": self.scale, "statement": c.statement, "source": c.source, "kind": c.kind,
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
    """Every claim of every chapter, numbered within its chapter in the order the chapter states them."""
    return [Entry(doc, ch.chapter, ch.title, i, c) for doc, ch in chapters for i, c in enumerate(ch.claims, 1)]


def strongest(items: list[Entry]) -> list[Entry]:
    """Per claim (chapter, experiment and key, whatever the run), the entry with the strongest evidence."""

    def which(e: Entry) -> tuple[str, str, str]:
        return e.chapter, e.claim.id.experiment if e.claim.id is not None else "", e.claim.key

    best: dict[tuple[str, str, str], Entry] = {}
    for e in items:
        if which(e) not in best or SCALE_RANK.get(e.scale, -1) > SCALE_RANK.get(best[which(e)].scale, -1):
            best[which(e)] = e
    return [e for e in items if best[which(e)] is e]


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
    within = "only approximately (within a % stated per claim)"
    words = {"holds": ("holds", "hold"), "holds approximately": (f"holds {within}", f"hold {within}"),
             "inconclusive": ("is inconclusive", "are inconclusive"), "fails": ("fails", "fail")}[verdict]
    return f"{count} {words[0] if count == 1 else words[1]}"


def _row_html(e: Entry, strongest_evidence: bool) -> str:
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
    search = html.escape(f"{math_plain(c.statement)} {math_plain(c.source)} {c.key}".lower(), quote=True)
    return (f'<tr data-strongest="{int(strongest_evidence)}" id="{e.anchor}" data-chapter="{e.chapter}" data-verdict="{c.verdict}" '
            f'data-scale="{html.escape(e.scale)}" data-text="{search}">'
            f'<td><a href="#{e.anchor}">{e.chapter}.{e.number}</a><br><small>{html.escape(e.scale)}</small></td>'
            f"<td>{math_html(c.statement)}<br><small>{math_html(c.source)}</small></td>"
            f"<td>{SIGNS[c.kind]} {fmt(c.predicted)} {math_html(c.unit)}<br>{fmt(c.measured)} ± "
            f"{fmt(c.uncertainty, 2)}{detects_html(c)}</td>"
            f"<td>{fmt(c.tolerance, 2)}<br><small>{math_html(c.tolerance_basis)}</small>{alternative}</td>"
            f'<td><span style="color:{colour};font-weight:bold">{html.escape(c.verdict_text())}</span>'
            f"{corrected}</td></tr>")


LEDGER_CSS = (
    "div.ledger-scroll{overflow-x:auto}table.ledger-table{table-layout:fixed;width:100%;min-width:46em}"
    "table.ledger-table col.c-num{width:6.5em}table.ledger-table col.c-values{width:8.5em}"
    "table.ledger-table col.c-tol{width:22%}table.ledger-table col.c-verdict{width:20%}"
    "table.ledger-table td{overflow-wrap:break-word}"
    ".ledger-filters{display:flex;flex-wrap:wrap;gap:0.6em;align-items:center;margin:0.5em 0 1em}"
    ".ledger-filters select,.ledger-filters input{font-size:0.9em;padding:0.15em 0.3em}"
)

FILTER_JS = """
(function () {
  function apply() {
    var f = document.getElementById('ledger-filters');
    var chapter = f.querySelector('[name=chapter]').value, verdict = f.querySelector('[name=verdict]').value;
    var scale = f.querySelector('[name=scale]').value, text = f.querySelector('[name=text]').value.toLowerCase();
    var strongest = f.querySelector('[name=strongest]').checked, shown = 0, total = 0;
    document.querySelectorAll('table.ledger-table tbody tr').forEach(function (tr) {
      total += 1;
      var ok = (!chapter || tr.dataset.chapter === chapter) && (!verdict || tr.dataset.verdict === verdict) &&
        (!scale || tr.dataset.scale === scale) && (!text || tr.dataset.text.indexOf(text) >= 0) &&
        (!strongest || tr.dataset.strongest === '1');
      tr.style.display = ok ? '' : 'none';
      if (ok) { shown += 1; }
    });
    document.querySelectorAll('section.ledger-chapter').forEach(function (s) {
      s.style.display = s.querySelector('tbody tr:not([style*="none"])') ? '' : 'none';
    });
    document.getElementById('ledger-count').textContent = 'showing ' + shown + ' of ' + total + ' claims';
  }
  document.addEventListener('DOMContentLoaded', function () {
    var f = document.getElementById('ledger-filters');
    if (!f) { return; }
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
    scales = sorted({e.scale for e in items}, key=lambda s: SCALE_RANK.get(s, -1))
    return (f"<style>{LEDGER_CSS}</style>"
            '<form id="ledger-filters" class="ledger-filters" onsubmit="return false">'
            f'<label>chapter <select name="chapter">{options(chapters)}</select></label>'
            f'<label>verdict <select name="verdict">{options([(v, v) for v in VERDICT_COLOURS])}</select></label>'
            f'<label>scale <select name="scale">{options([(s, s) for s in scales])}</select></label>'
            '<label>text <input name="text" type="search" placeholder="words in a claim"></label>'
            '<label><input name="strongest" type="checkbox" checked> strongest evidence only</label>'
            '<span id="ledger-count"></span>'
            '<span>download: <a href="claims.csv" download>claims.csv</a> · '
            '<a href="claims.json" download>claims.json</a></span></form>'
            f"<script>{FILTER_JS}</script>")


def table_html(items: list[Entry], strong: set[str]) -> str:
    """One chapter's claims as a table; rows with the strongest evidence are marked for the default filter."""
    head = ["# / scale", "claim", "predicted<br>measured ± error", "tolerance (basis)", "verdict / corrected"]
    cols = ["c-num", "c-claim", "c-values", "c-tol", "c-verdict"]
    rows = "".join(_row_html(e, e.anchor in strong) for e in items)
    return (claims_table_css() + '<div class="ledger-scroll"><table class="claims-table ledger-table"><colgroup>'
            + "".join(f'<col class="{c}">' for c in cols) + "</colgroup><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{rows}</tbody></table></div>")


def summary_html(items: list[Entry], what: str) -> str:
    """'N claims from M chapters (what): 40 hold, ...' with the verdicts in their colours."""
    counts = Counter(e.claim.verdict for e in items)
    parts = ", ".join(f'<span style="color:{VERDICT_COLOURS[v]};font-weight:bold">{verdict_label(v, counts[v])}</span>'
                      for v in VERDICT_COLOURS if counts[v])
    chapters = len({e.chapter for e in items})
    return f"<p>{len(items)} claims from {chapters} chapter(s), {what}: {parts}.</p>"


def bar_html(items: list[Entry]) -> str:
    """A stacked bar of verdict counts (the findings' figure), each segment titled with its count."""
    counts = Counter(e.claim.verdict for e in items)
    total = max(1, sum(counts.values()))
    segments = "".join(
        f'<span title="{verdict_label(v, counts[v])}" style="display:inline-block;height:0.9em;'
        f'width:{100 * counts[v] / total:.2f}%;background:{VERDICT_COLOURS[v]}"></span>'
        for v in VERDICT_COLOURS if counts[v])
    return f'<span class="verdict-bar" style="display:inline-block;width:12em;line-height:0">{segments}</span>'


def headline(items: list[Entry], ledger_uri: str) -> str:
    """A chapter's finding in one line: its largest miss (and the correction that holds), else that all hold."""
    misses = [e for e in items if e.claim.verdict == "fails"]
    if not misses:
        approx = [e for e in items if e.claim.verdict != "holds"]
        return ("every claim holds" if not approx else
                f"no claim fails; {len(approx)} hold only within a stated % or are inconclusive")
    e = max(misses, key=lambda m: m.claim.deviation_pct)
    c = e.claim
    link = f'<a href="{html.escape(ledger_uri)}#{e.anchor}">{e.chapter}.{e.number}</a>'
    off = f"{c.deviation_pct:.0f}% off" if c.deviation_pct < 1e4 else "off by orders of magnitude"
    text = (f"{len(misses)} of {len(items)} fail; the largest miss ({link}): {math_html(c.statement)}: predicted "
            f"{fmt(c.predicted)}, measured {fmt(c.measured)} ({off})")
    if c.corrected is not None:
        text += f"; corrected {fmt(c.corrected)} {html.escape(str(c.corrected_verdict))}"
    elif reason(c.key):
        text += f"; instead: {math_html(str(reason(c.key)))}"
    return text


def measured(items: list[Entry]) -> list[Entry]:
    """The entries that are measurements: a chapter's smoke-scale claims are dropped when it has any other."""
    chapters_measured = {e.chapter for e in items if e.scale != "smoke (live)"}
    return [e for e in items if e.scale != "smoke (live)" or e.chapter not in chapters_measured]


def findings_html(items: list[Entry], uri: dict[str, str], ledger_uri: str) -> str:
    """Per chapter (strongest evidence only, smoke runs left out where a chapter has measurements): link, verdict
    bar, evidence scales, and headline."""
    strong = measured(strongest(items))
    rows = []
    for chapter in dict.fromkeys(e.chapter for e in strong):
        mine = [e for e in strong if e.chapter == chapter]
        scales = ", ".join(sorted({e.scale for e in mine}, key=lambda s: -SCALE_RANK.get(s, -1)))
        rows.append(f'<tr><td><a href="{html.escape(uri[chapter])}">{html.escape(mine[0].title)}</a><br>'
                    f"{bar_html(mine)}<br><small>{len(mine)} claims; evidence: {html.escape(scales)}</small></td>"
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


def _chapters(app: Sphinx) -> list[tuple[str, ChapterClaims]]:
    """(docname, claims) for every claims file whose chapter is a document of this book, in TOC order."""
    docs = {Path(d).name: d for d in app.env.found_docs}
    order = {d: i for i, d in enumerate(app.env.toctree_includes.get(app.config.root_doc, []))}
    found = []
    for file in sorted(claims_dir(app).glob("*.json")):
        chapter = load_chapter_claims(file)
        if chapter.chapter in docs:
            found.append((docs[chapter.chapter], chapter))
    return sorted(found, key=lambda dc: (order.get(dc[0], len(order)), dc[0]))


_DIRECTIVE = re.compile(r"(\{(claims-ledger|findings|reproduce)\})|(\.\. (claims-ledger|findings|reproduce)::)")


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
    """``{claims-ledger}``: filters, then one section per chapter with its claims."""

    def render(self, app: Sphinx, chapters: list[tuple[str, ChapterClaims]]) -> list[nodes.Node]:
        items = entries(chapters)
        strong = {e.anchor for e in strongest(items)}
        out: list[nodes.Node] = [nodes.raw("", summary_html(items, "at every scale") + filters_html(items),
                                           format="html")]
        for doc, chapter in chapters:
            mine = [e for e in items if e.chapter == chapter.chapter]
            section = nodes.section(ids=[f"ledger-{chapter.chapter}"], classes=["ledger-chapter"])
            section += nodes.title(text=chapter.title)
            link = _relative(app, self.env.docname, doc)
            section += nodes.raw("", f'<p><a href="{html.escape(link)}">read the chapter</a> · '
                                 f"{len(mine)} claims</p>" + table_html(mine, strong), format="html")
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


def reproduce_html(timings: dict[str, tuple[str, str, float]]) -> str:
    """Per experiment: its chapter, this build's live time, its cpu record (wall time, date, commit, current or
    stale), the gpu estimate, and the commands that regenerate it."""
    from analysis.core.trials import Experiment, trial_status
    from analysis.experiments import EXPERIMENTS, config_for, current_record
    from analysis.plan import plan_experiment

    head = ["experiment / chapter", "this build (live)", "cpu record", "gpu record, else estimate (not run)",
            "regenerate"]
    rows = []
    for name in EXPERIMENTS:
        chapter, scale, seconds = timings.get(name, ("-", "-", float("nan")))
        live = f"{seconds:.1f} s at {scale} scale" if chapter != "-" else "not run by this build"
        records = []
        for rec_scale in ("cpu", "gpu"):
            record, stale = current_record(name, rec_scale)
            if record is None:
                records.append(f"no {rec_scale} record" if rec_scale == "cpu" else "")
                continue
            prov = record.provenance
            state = "stale: " + "; ".join(stale) if stale else "current"
            records.append(f"{float(prov.get('wall_time_s', float('nan'))):.0f} s, {str(prov.get('date', '?'))[:10]}, "
                           f"commit {str(prov.get('git_commit', '?'))[:8]}"
                           f"{' (uncommitted changes)' if prov.get('git_dirty') else ''} ({state})")
        est = plan_experiment(name, "gpu", execute=False)
        exp = Experiment(EXPERIMENTS[name])
        trials = trial_status(exp, "gpu", config_for(exp.module, "gpu")).describe()
        gpu = (f"{records[1]}" if records[1] else
               f"{est.h100_minutes:.2g} H100 minutes (from measured step times), {est.peak_memory_gb:.2g} GB"
               ) + f"; gpu campaign: {trials}"
        rows.append(f"<tr><td><code>{name}</code><br><small>{html.escape(chapter)}</small></td>"
                    f"<td>{html.escape(live)}</td><td>{html.escape(records[0])}</td><td>{html.escape(gpu)}</td>"
                    f"<td><code>python -m analysis campaign --scale cpu --only {name}</code></td></tr>")
    return (claims_table_css() + '<div class="ledger-scroll"><table class="claims-table"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


class ReproduceDirective(SphinxDirective):
    """``{reproduce}``: how long each experiment took in this build and in its records, and how to rerun it."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [nodes.raw("", reproduce_html(chapter_timings(self.env.app)), format="html")]


def _on_env_before_read_docs(app: Sphinx, env: Any, docnames: list[str]) -> None:
    """Read the ledger and findings pages after every chapter (the chapters write the claims they show)."""
    last = _ledger_docs(app)
    docnames.sort(key=lambda d: d in last)


def _on_env_get_outdated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """The ledger and findings are rebuilt whenever a build runs: the claims may have changed, their source not."""
    return sorted(_ledger_docs(app))


def _on_build_finished(app: Sphinx, exception: Exception | None) -> None:
    """Write claims.csv and claims.json beside the ledger page."""
    if exception is not None or app.builder.format != "html":
        return
    items = entries(_chapters(app))
    for doc in _ledger_docs(app):
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
    app.connect("builder-inited", _on_builder_inited)
    app.connect("env-before-read-docs", _on_env_before_read_docs)
    app.connect("env-get-outdated", _on_env_get_outdated)
    app.connect("build-finished", _on_build_finished)
    return {"version": "2", "parallel_read_safe": False, "parallel_write_safe": True}
