"""The ledger's editorial notes on claims, collected from every chapter's ``analysis/studies/<chapter>/notes.py``.

Three tables, each keyed by claim key (the same on every run; a key ending in '-' covers every claim that starts with
it), and each optional in a chapter's module:

* ``NO_CORRECTED_NUMBER``: why a failed claim carries no corrected number. A claim that fails gets a ``corrected``
  prediction when one number replaces the source's; when the claim is qualitative, or the replacement is a
  construction, a formula over a range or another claim of the chapter, this sentence says what holds instead;
* ``REPLACES``: what weaker claim a claim replaces, and why that one could not decide;
* ``FORMAL``: why a claim is formal (:data:`SEVERITY_RULE`); every other claim is substantive.

``tests/test_ledger_notes.py`` checks that every recorded failure without a corrected number has a sentence, and that
every note belongs to recorded claims of its own chapter.
"""

from __future__ import annotations

import functools

from analysis.studies.parts import study_parts

TABLES = ("NO_CORRECTED_NUMBER", "REPLACES", "FORMAL")

SEVERITY_RULE = ("A claim is formal when the source's conclusion survives its failure: the miss lies in a printed "
                 "digit, a rounding, an epsilon, a bias term or a dated fact. Every other claim is substantive: its "
                 "failure changes what the source concludes. The largest miss of a chapter is its largest "
                 "substantive one.")


def chapter_notes() -> dict[str, dict[str, dict[str, str]]]:
    """Chapter -> table name -> {note key: sentence}, from every study package that has a ``notes`` module."""
    return {chapter: {name: dict(getattr(module, name, {})) for name in TABLES}
            for chapter, module in study_parts("notes")}


@functools.cache
def table(name: str) -> dict[str, str]:
    """One table merged over the chapters; a note key that two chapters both define raises ValueError."""
    if name not in TABLES:
        raise ValueError(f"name must be one of {', '.join(TABLES)}; got {name!r}")
    merged: dict[str, str] = {}
    owner: dict[str, str] = {}
    for chapter, tables in chapter_notes().items():
        for key, sentence in tables[name].items():
            if key in merged:
                raise ValueError(f"{name}[{key!r}] is defined by both {owner[key]} and {chapter}")
            merged[key], owner[key] = sentence, chapter
    return merged


def covers(note_key: str, key: str) -> bool:
    """Whether a note keyed ``note_key`` applies to claim ``key``: the same claim, or any claim starting with a
    ``note_key`` that ends in '-'."""
    return key.startswith(note_key) if note_key.endswith("-") else key == note_key


def _lookup(name: str, key: str) -> str | None:
    return next((v for k, v in table(name).items() if covers(k, key)), None)


def reason(key: str) -> str | None:
    """Why failed claim ``key`` carries no corrected number, or None."""
    return _lookup("NO_CORRECTED_NUMBER", key)


def replaces(key: str) -> str | None:
    """What claim ``key`` replaces and why, or None."""
    return _lookup("REPLACES", key)


def severity(key: str) -> str:
    """'formal' for a claim with a ``FORMAL`` note, else 'substantive' (the rule is :data:`SEVERITY_RULE`)."""
    return "formal" if _lookup("FORMAL", key) is not None else "substantive"


def formal_reason(key: str) -> str | None:
    """Why claim ``key`` is formal, or None when it is substantive."""
    return _lookup("FORMAL", key)
