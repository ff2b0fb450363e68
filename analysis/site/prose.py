"""What a reader meets in a chapter's prose, measured on the built page: its length, its sentences and paragraphs,
runs of bold lines and brackets inside brackets.

Prose is the text of the paragraphs and list items of a chapter's article, outside folded sections
(``<details>``), margin notes and sidebars, tables, figures, code and maths. A chapter is held to
:data:`LIMITS`: about 4,000 words, a mean sentence of at most 22 words, no paragraph over 150 words, no run of
more than two bold lines, and no nested parentheses. :data:`PENDING` names the chapters not yet within them, each
with the figures it may not exceed meanwhile, so that none gets worse while it waits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

LIMITS = {"words": 4000, "mean_sentence": 22.0, "paragraph": 150, "bold_run": 2, "nested": 0}
# chapters whose prose is not yet within LIMITS, with the figures each may not exceed meanwhile (measured on the
# built book): a chapter leaves this table when it is brought within the limits
PENDING: dict[str, dict[str, float]] = {}

SKIPPED_TAGS = {"details", "aside", "table", "figure", "pre", "script", "style", "nav", "footer", "header", "code",
                "mjx-container"}
SKIPPED_CLASSES = ("math", "cell_input", "margin", "sidebar", "verdict-box", "provenance", "published-work",
                   "chapter-claims")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[\"'“‘0-9])")


@dataclass
class ProseStats:
    """A page's prose: words, sentences, the mean sentence and longest paragraph in words, the longest run of
    paragraphs or items with bold in them, and each nested parenthesis (its surrounding text)."""

    words: int = 0
    sentences: int = 0
    mean_sentence: float = 0.0
    paragraph: int = 0
    bold_run: int = 0
    nested: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        """The figures :data:`LIMITS` holds: words, mean sentence, longest paragraph, bold run, nested count."""
        return {"words": self.words, "mean_sentence": round(self.mean_sentence, 1), "paragraph": self.paragraph,
                "bold_run": self.bold_run, "nested": len(self.nested)}


class _Paragraphs(HTMLParser):
    """The paragraphs and list items of a page's article, as (text, has bold), skipping what is not prose."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[tuple[str, bool]] = []
        self._stack: list[tuple[str, bool]] = []
        self._skip = 0
        self._article = 0
        self._current: list[str] | None = None
        self._bold = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if tag == "article":
            self._article += 1
        skip = tag in SKIPPED_TAGS or any(c in classes.split() for c in SKIPPED_CLASSES)
        self._stack.append((tag, skip))
        self._skip += skip
        if not self._article or self._skip:
            return
        if tag in ("p", "li"):
            self._flush()
            self._current, self._bold = [], False
        elif tag in ("strong", "b") and self._current is not None:
            self._bold = True

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            name, skip = self._stack.pop()
            self._skip -= skip
            if name == tag:
                break
        if tag in ("p", "li"):
            self._flush()
        if tag == "article":
            self._article -= 1

    def handle_data(self, data: str) -> None:
        if self._current is not None and not self._skip and self._article:
            self._current.append(data)

    def _flush(self) -> None:
        if self._current is not None:
            text = re.sub(r"\s+", " ", "".join(self._current)).strip()
            if text:
                self.out.append((text, self._bold))
        self._current = None


def nested_parentheses(text: str) -> list[str]:
    """Each parenthesis opened inside another in ``text`` (maths already removed), with 30 characters around it."""
    out, depth = [], 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
            if depth == 2:
                out.append(text[max(0, i - 30): i + 30])
        elif ch == ")":
            depth = max(0, depth - 1)
    return out


def prose_stats(page: str) -> ProseStats:
    """The :class:`ProseStats` of a built page's HTML."""
    parser = _Paragraphs()
    parser.feed(page)
    parser._flush()
    stats = ProseStats()
    run = 0
    lengths = []
    for text, bold in parser.out:
        words = len(text.split())
        stats.words += words
        stats.paragraph = max(stats.paragraph, words)
        run = run + 1 if bold else 0
        stats.bold_run = max(stats.bold_run, run)
        lengths += [len(s.split()) for s in SENTENCE_END.split(text) if len(s.split()) > 2]
        stats.nested += nested_parentheses(text)
    stats.sentences = len(lengths)
    stats.mean_sentence = sum(lengths) / len(lengths) if lengths else 0.0
    return stats


def allowed(chapter: str) -> dict[str, float]:
    """The figures ``chapter`` may reach: :data:`LIMITS`, or its :data:`PENDING` figures where it is still there."""
    return {k: max(v, PENDING.get(chapter, {}).get(k, v)) for k, v in LIMITS.items()}


def prose_problems(chapter: str, stats: ProseStats) -> list[str]:
    """One line per figure of ``chapter``'s prose over what it is allowed (:func:`allowed`)."""
    limit, got = allowed(chapter), stats.figures()
    words = {"words": "words of prose", "mean_sentence": "words in the mean sentence",
             "paragraph": "words in its longest paragraph", "bold_run": "bold lines in a row",
             "nested": "parentheses inside parentheses"}
    out = [f"{chapter}: {got[k]:g} {words[k]}, over {limit[k]:g}" for k in LIMITS if got[k] > limit[k]]
    if got["nested"] > limit["nested"] and stats.nested:
        out[-1] += f" (first: ...{stats.nested[0]}...)"
    return out
