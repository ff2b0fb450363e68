"""Sphinx extension: a figure's image says what it shows to a reader who cannot see it.

A figure glued from a notebook has no alt text of its own, so the HTML would carry the image's file path. Before
writing, every image inside a figure whose alt text is missing or is a file path gets its caption's first sentence
instead (maths as its LaTeX source, at most :data:`MAX_ALT` characters, cut at a word).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

MAX_ALT = 240
PATHLIKE = re.compile(r"^[\w./\\-]+\.(png|jpe?g|svg|gif|webp)$", re.IGNORECASE)
SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]])\.\s")
ABBREVIATIONS = ("e.g", "i.e", "cf", "vs", "al", "Fig", "Eq", "approx")  # a full stop after these ends no sentence


def alt_from_caption(caption: str, limit: int = MAX_ALT) -> str:
    """The caption's first sentence, whitespace collapsed, cut at a word with '…' beyond ``limit`` characters."""
    if limit < 20:
        raise ValueError(f"limit must be >= 20 characters; got {limit!r}")
    text = " ".join(caption.split())
    ends = (m.start() for m in SENTENCE_END.finditer(text) if not text[: m.start()].endswith(ABBREVIATIONS))
    end = next(ends, None)
    first = text if end is None else text[: end + 1]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def needs_alt(alt: str | None) -> bool:
    """Whether an image's alt text is missing or only its file path."""
    return not alt or not alt.strip() or bool(PATHLIKE.match(alt.strip()))


def _on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for figure in doctree.findall(nodes.figure):
        captions = list(figure.findall(nodes.caption))
        if not captions:
            continue
        text = alt_from_caption(captions[0].astext())
        for image in figure.findall(nodes.image):
            if needs_alt(image.get("alt")):
                image["alt"] = text


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the pass that gives every figure's image its caption's first sentence as alt text."""
    app.connect("doctree-resolved", _on_doctree_resolved)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
