"""Sphinx extension: the ``claims-ledger`` directive, filled in from the chapters' claims.

During a build every chapter writes its claims to $ANALYSIS_CLAIMS_DIR (set here
to ``<outdir>/../claims`` before any notebook runs). After all documents are
read, each ``claims-ledger`` directive is replaced by one table per chapter,
with a summary of the verdicts; nothing in it is written by hand.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from analysis.verify import CLAIMS_DIR_ENV, VERDICT_COLOURS, ChapterClaims, claims_html, load_chapter_claims


class claims_ledger_node(nodes.General, nodes.Element):
    """Placeholder replaced by the ledger at doctree-resolved time."""


class ClaimsLedgerDirective(SphinxDirective):
    """``{claims-ledger}``: the table of every chapter's claims."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [claims_ledger_node()]


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


def ledger_html(app: Sphinx, fromdoc: str) -> str:
    """Summary line and one table per chapter, linked to the chapters."""
    chapters = _chapters(app)
    if not chapters:
        return "<p><strong>No chapter recorded any claim in this build.</strong></p>"
    counts = Counter(c.verdict for _, ch in chapters for c in ch.claims)
    summary = ", ".join(
        f'<span style="color:{VERDICT_COLOURS[v]};font-weight:bold">{counts[v]} {v}</span>' for v in VERDICT_COLOURS
    )
    parts = [f"<p>{sum(counts.values())} claims from {len(chapters)} chapter(s): {summary}.</p>"]
    for docname, chapter in chapters:
        link = app.builder.get_relative_uri(fromdoc, docname)
        parts.append(f'<h2><a href="{html.escape(link)}">{html.escape(chapter.title)}</a></h2>')
        parts.append(claims_html(chapter.claims))
    return "\n".join(parts)


def _on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(claims_ledger_node)):
        if app.builder.format == "html":
            node.replace_self(nodes.raw("", ledger_html(app, docname), format="html"))
        else:
            node.replace_self(nodes.paragraph(text="The claims ledger is part of the HTML book."))


def _on_env_get_outdated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """The ledger is rebuilt whenever a build runs: the chapters' claims may have changed while its source did not."""
    return [d for d in env.found_docs if Path(d).name == "ledger"]


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive, its node and the build events."""
    app.add_node(claims_ledger_node)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("doctree-resolved", _on_doctree_resolved)
    app.connect("env-get-outdated", _on_env_get_outdated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
