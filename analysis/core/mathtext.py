"""Inline maths in the text of claims: LaTeX between ``$`` signs, rendered by MathJax on the book's pages.

A claim's statement, source, notes and tolerance basis are plain text in which maths is written as inline LaTeX,
``"With $1/\\sqrt{d}$ the row entropy does not depend on $d$"``. The downloads (CSV, JSON) keep that text as it is;
the pages turn each ``$...$`` into MathJax's inline form inside a ``<span class="math">`` (the class MathJax
processes on a Sphinx page), with :func:`math_html` for HTML and :func:`math_markdown` for Markdown outputs.
:func:`ascii_math` finds maths written the old way, outside ``$`` (``sqrt(d)``, ``nu^4``, ``||J||_F``,
``n >= 2048``), for the tests that keep it out.
"""

from __future__ import annotations

import html
import re

MATH = re.compile(r"\$([^$]+)\$")
SPAN_OPEN = '<span class="math notranslate nohighlight">'
# maths written as ASCII: powers, roots, norms, comparison operators, arrows, subscripts of a letter,
# sums and integrals, and Greek letters spelt out
ASCII_MATH = re.compile(
    r"\^|\bsqrt\b|\|\||>=|<=|!=|->|=>|(?<![\w.])[A-Za-z]_[A-Za-z0-9(]|\b(?:int|sum|prod)_"
    r"|\b(?:alpha|beta|gamma|Gamma|delta|eps|epsilon|lambda|mu|nu|pi|sigma|tau|theta|phi)\b\*?"
)


def _pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` split into (is_maths, piece) in order; a ValueError when a ``$`` is left unpaired."""
    if text.count("$") % 2:
        raise ValueError(f"unpaired $ in {text!r}: inline maths is written between two $ signs")
    out: list[tuple[bool, str]] = []
    at = 0
    for m in MATH.finditer(text):
        if m.start() > at:
            out.append((False, text[at:m.start()]))
        out.append((True, m.group(1)))
        at = m.end()
    if at < len(text) or not out:
        out.append((False, text[at:]))
    return out


def math_spans(escaped: str) -> str:
    """HTML already escaped (``$`` signs left as they are, as :func:`html.escape` leaves them) with each ``$tex$``
    turned into ``<span class="math">\\(tex\\)</span>`` for MathJax; for tables whose cells were escaped elsewhere."""
    return "".join(f"{SPAN_OPEN}\\({piece}\\)</span>" if is_math else piece for is_math, piece in _pieces(escaped))


def math_html(text: str) -> str:
    """HTML of ``text``: the prose escaped, each ``$tex$`` as ``<span class="math">\\(tex\\)</span>`` for MathJax."""
    return math_spans(html.escape(text))


def _markdown_tex(tex: str) -> str:
    """LaTeX escaped for Markdown: backslashes doubled, emphasis, code and link characters escaped."""
    tex = html.escape(tex).replace("\\", "\\\\")
    for ch in "*_`[]":
        tex = tex.replace(ch, "\\" + ch)
    return tex


def math_markdown(text: str) -> str:
    """Markdown of ``text`` for an output cell (parsed as CommonMark, without maths): each ``$tex$`` as the span of
    :func:`math_html`, escaped so that Markdown gives back the LaTeX (backslashes doubled, ``*_`[]`` escaped)."""
    return "".join(f"{SPAN_OPEN}\\\\({_markdown_tex(piece)}\\\\)</span>" if is_math else piece
                   for is_math, piece in _pieces(text))


def math_plain(text: str) -> str:
    """``text`` with its maths as bare LaTeX (``$`` signs dropped), for search and terminals."""
    return "".join(piece for _, piece in _pieces(text))


def ascii_math(text: str) -> list[str]:
    """The pieces of maths written as ASCII outside ``$...$`` in ``text`` (empty when there is none)."""
    return [m.group(0) for is_math, piece in _pieces(text) if not is_math for m in ASCII_MATH.finditer(piece)]
