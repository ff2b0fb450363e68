"""The verdict changelog: every change of a recorded verdict, read from the git history of the verdict table.

The verdict table (``tests/verdicts.json``, :mod:`analysis.verdict_table`) is rewritten only on purpose, and the
commit that rewrites it says why. Each commit that touched it is compared with the table before it: a claim whose
verdict or corrected verdict changed, and the claims added or removed, are listed with the commit's date, its
short hash and its message (the reason). Measured values that moved without a verdict changing are counted.
Keys written in an older form (``<key>-recorded-<scale>``) are read as the claim's key.
"""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE_PATH = "tests/verdicts.json"
OLD_KEY = re.compile(r"-recorded-(cpu|gpu)$")


@dataclass(frozen=True)
class Change:
    """One claim's change in one commit: ``old`` None when the claim was added, ``new`` None when removed."""

    record: str  # "experiment.scale"
    key: str
    old: str | None
    new: str | None
    old_corrected: str | None = None
    new_corrected: str | None = None


@dataclass(frozen=True)
class Revision:
    """One commit of the verdict table: its date, hash and message, and what changed in it."""

    commit: str
    date: str
    message: str
    changes: tuple[Change, ...] = ()
    moved: int = 0  # measured values that moved without a verdict changing

    @property
    def flips(self) -> tuple[Change, ...]:
        """The changes of a verdict or corrected verdict of a claim that was there before and is still there."""
        return tuple(c for c in self.changes if c.old is not None and c.new is not None)

    @property
    def added(self) -> tuple[Change, ...]:
        """The claims this commit added."""
        return tuple(c for c in self.changes if c.old is None)

    @property
    def removed(self) -> tuple[Change, ...]:
        """The claims this commit removed."""
        return tuple(c for c in self.changes if c.new is None)


def _claims(table: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(record, key) -> entry of a verdict table, keys in their current form."""
    return {(record, OLD_KEY.sub("", key)): entry
            for record, claims in table.get("records", {}).items() for key, entry in claims.items()}


def diff_tables(old: dict[str, Any] | None, new: dict[str, Any]) -> tuple[tuple[Change, ...], int]:
    """The claim changes between two verdict tables (``old`` None: everything in ``new`` is added), and the number
    of claims whose measured value moved (beyond the table's own tolerance) while their verdicts stayed."""
    before, after = _claims(old or {}), _claims(new)
    rtol = float(new.get("measured_rtol", 1e-9))
    atol = float(new.get("measured_atol", 1e-12))
    changes, moved = [], 0
    for ref in sorted(set(before) | set(after)):
        b, a = before.get(ref), after.get(ref)
        if b is None or a is None:
            changes.append(Change(ref[0], ref[1], None if b is None else b["verdict"],
                                  None if a is None else a["verdict"],
                                  None if b is None else b.get("corrected_verdict"),
                                  None if a is None else a.get("corrected_verdict")))
        elif (b["verdict"], b.get("corrected_verdict")) != (a["verdict"], a.get("corrected_verdict")):
            changes.append(Change(ref[0], ref[1], b["verdict"], a["verdict"], b.get("corrected_verdict"),
                                  a.get("corrected_verdict")))
        elif not math.isclose(float(b["measured"]), float(a["measured"]), rel_tol=rtol, abs_tol=atol):
            moved += 1
    return tuple(changes), moved


def git_output(root: str | Path, *args: str) -> str | None:
    """The output of ``git -C root args``, or None when git is missing or the command fails (no repository, no such
    object)."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def history(root: str | Path, path: str = TABLE_PATH) -> list[Revision] | None:
    """Every commit that changed the verdict table at ``path`` in the git repository ``root``, oldest first, each
    with its changes against the commit before it; None when ``root`` has no git history to read."""
    log = git_output(root, "log", "--reverse", "--format=%H%x1f%cs%x1f%B%x1e", "--", path)
    if log is None:
        return None
    revisions, previous = [], None
    for entry in filter(None, (e.strip("\n") for e in log.split("\x1e"))):
        commit, date, message = entry.split("\x1f", 2)
        shown = git_output(root, "show", f"{commit}:{path}")
        table = {"records": {}} if shown is None else json.loads(shown)  # None: the commit deleted the table
        changes, moved = diff_tables(previous, table)
        revisions.append(Revision(commit, date, message.strip(), changes, moved))
        previous = table
    return revisions


def _verdict(v: str | None, corrected: str | None) -> str:
    text = html.escape(v or "—")
    return text + (f"<br><small>corrected: {html.escape(corrected)}</small>" if corrected else "")


def _rows(changes: tuple[Change, ...]) -> str:
    return "".join(f"<tr><td><code>{html.escape(c.record)}</code></td><td><code>{html.escape(c.key)}</code></td>"
                   f"<td>{_verdict(c.old, c.old_corrected)}</td><td>{_verdict(c.new, c.new_corrected)}</td></tr>"
                   for c in changes)


def _table(changes: tuple[Change, ...]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("record", "claim", "before", "after"))
    return f'<table class="claims-table"><thead><tr>{head}</tr></thead><tbody>{_rows(changes)}</tbody></table>'


def _counts(changes: tuple[Change, ...], new: bool) -> str:
    from analysis.verify import VERDICT_COLOURS, verdict_count

    counts = Counter((c.new if new else c.old) for c in changes)
    order = [v for v in VERDICT_COLOURS if counts.get(v)] + sorted(str(v) for v in counts if v not in VERDICT_COLOURS)
    return ", ".join(verdict_count(v, counts[v]) if v in VERDICT_COLOURS else f"{counts[v]} {v}" for v in order)


def changelog_html(revisions: list[Revision] | None) -> str:
    """The changelog page's body: newest commit first, each with its date, hash, reason and a table of the verdicts
    that changed (added and removed claims collapsed under a count)."""
    from analysis.verify import claims_table_css, plural

    if revisions is None:
        return ("<p>No git history is available in this copy of the book's sources, so the verdict changelog "
                "cannot be read from it. Build the book from a clone of the repository to see it.</p>")
    if not revisions:
        return "<p>The verdict table has no committed history yet.</p>"
    flips = sum(len(r.flips) for r in revisions)
    parts = [claims_table_css(),
             f"<p>{len(revisions)} commits changed the verdict table; "
             f"{plural(flips, 'verdict')} of existing claims changed in them.</p>"]
    for r in reversed(revisions):
        subject, _, body = r.message.partition("\n")
        what = []
        if r.flips:
            what.append(f"{plural(len(r.flips), 'verdict')} changed")
        if r.added:
            what.append(f"{plural(len(r.added), 'claim')} added ({_counts(r.added, True)})")
        if r.removed:
            what.append(f"{plural(len(r.removed), 'claim')} removed")
        if r.moved:
            what.append(f"{plural(r.moved, 'measured value')} moved, verdicts unchanged")
        if not what:
            what.append("no claim changed (the table's format or tolerances)")
        parts.append(f'<section class="changelog-entry" id="change-{r.commit[:10]}"><h2>{html.escape(r.date)} · '
                     f"<code>{r.commit[:8]}</code></h2><p><strong>{html.escape('; '.join(what))}.</strong></p>"
                     f"<p><em>Reason (the commit's message):</em> {html.escape(subject)}</p>"
                     + (f"<details><summary>the rest of the message</summary><p>{html.escape(body.strip())}</p>"
                        "</details>" if body.strip() else ""))
        if r.flips:
            parts.append(_table(r.flips))
        for label, group in (("added", r.added), ("removed", r.removed)):
            if group:
                parts.append(f"<details><summary>the {plural(len(group), 'claim')} {label}"
                             f"</summary>{_table(group)}</details>")
        parts.append("</section>")
    return "".join(parts)
