"""Printed text that fits the book's column: one fenced ``text`` block helper for every study; and English lists,
names grouped by verdict among them.

A ``text`` block is monospaced and does not wrap, so a line wider than the column is cut off at the side. At a
1280-pixel window the column holds :data:`COLUMN_CHARS` characters of the code font (measured in Chromium: 8.7 px
per character in a 642-pixel block). :func:`text_block` wraps longer lines at spaces, with a hanging indent, and
the HTML check (:mod:`analysis.site.html_check`) fails on any printed line that is still longer.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

COLUMN_CHARS = 74
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def fit_line(line: str, width: int = COLUMN_CHARS) -> list[str]:
    """``line`` wrapped at spaces to at most ``width`` characters; the continuation lines are indented 4 more than
    the line's own indent. A word longer than the width is broken (it could not be shown otherwise)."""
    if width < 20:
        raise ValueError(f"width must be >= 20 characters; got {width!r}")
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.wrap(line[len(indent):], width=width, initial_indent=indent, subsequent_indent=indent + "    ",
                         break_long_words=True, break_on_hyphens=False)


def fit_text(text: str | Sequence[str], width: int = COLUMN_CHARS) -> str:
    """Lines (or one string of them) with every line fitted to ``width`` characters (:func:`fit_line`)."""
    lines = text.split("\n") if isinstance(text, str) else list(text)
    return "\n".join(out for line in lines for out in fit_line(line, width))


def text_block(text: str | Sequence[str], width: int = COLUMN_CHARS) -> str:
    """Markdown source of a fenced plain-text block holding ``text``, each line fitted to the column."""
    return f"```text\n{fit_text(text, width)}\n```"


def and_list(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c' ('' for none); 'a, and b' when an item holds an 'and' of its own."""
    if len(items) < 2:
        return "".join(items)
    last = ", and " if any(" and " in item for item in items) else " and "
    return ", ".join(items[:-1]) + last + items[-1]


def by_verdict(named: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """The names of (name, verdict phrase) pairs grouped by phrase, each group where its phrase first appears."""
    groups: dict[str, list[str]] = {}
    for name, verdict in named:
        groups.setdefault(verdict, []).append(name)
    return list(groups.items())


def verdicts_by(named: Sequence[tuple[str, str]], preposition: str = "for") -> str:
    """Verdict phrases of (name, verdict phrase) pairs, each phrase said once (:func:`by_verdict`): 'holds in float32
    and bfloat16', 'holds for A and fails for B'."""
    return and_list([f"{phrase} {preposition} {and_list(names)}" for phrase, names in by_verdict(named)])


def sci(x: float, digits: int = 3) -> str:
    """x as a reader writes it, with a true minus: '−9.98 × 10⁻⁷', '10⁻⁶' for an exact power of ten, '−∞', plain
    between 0.001 and 10^4 ('1,234' from 100 on)."""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if 100 <= abs(x) < 1e4:
        text = f"{x:,.0f}"
    elif x == 0 or 1e-3 <= abs(x) < 100:
        text = f"{x:.{digits}g}"
    else:
        mantissa, exponent = f"{abs(x):.{digits - 1}e}".split("e")
        power = f"10{str(int(exponent)).translate(SUPERSCRIPT)}"
        text = ("-" if x < 0 else "") + (power if float(mantissa) == 1 else f"{float(mantissa):.{digits}g} × {power}")
    return text.replace("-", "−")
