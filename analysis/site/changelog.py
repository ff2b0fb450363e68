"""The verdict changelog: every change of a recorded verdict, read from the git history of the verdict table.

The verdict table (``tests/verdicts.json``, :mod:`analysis.site.verdict_table`) is rewritten only on purpose, and the
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

from analysis.core.verify import claims_table_css, plural, VERDICT_COLOURS, verdict_count

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
    return text + (f" <small>(corrected: {html.escape(corrected)})</small>" if corrected else "")


REASON_WORDS = 40  # a reason longer than this is cut at a word, with its whole message folded beside


def reason(message: str, key: str) -> str:
    """The reason a commit gives for one claim's change, in one sentence: the shortest sentence (or clause between
    semicolons) of its message that names the claim, else the message's first sentence; cut at
    :data:`REASON_WORDS` words with '…'."""
    text = " ".join(message.split())
    sentences = [p.strip() for p in re.split(r"(?<=[.!?])\s+(?=[A-Z(])|;\s+", text) if p.strip()]
    if not sentences:
        return ""
    named = re.compile(rf"(?<![\w-]){re.escape(key)}(?![\w-])")  # a key, not a longer key it begins
    naming = [x for x in sentences if key and named.search(x)]
    chosen = min(naming, key=len) if naming else sentences[0]
    words = chosen.split()
    return " ".join(words[:REASON_WORDS]) + ("…" if len(words) > REASON_WORDS else "")


ClaimLinks = dict[tuple[str, str], tuple[str, str]]  # (experiment, key) -> (the claim's id, its ledger address)


def _claim_cell(c: Change, links: ClaimLinks) -> str:
    experiment = c.record.rsplit(".", 1)[0]
    found = links.get((experiment, c.key))
    if found is None:  # a claim the book no longer makes
        return f"<code>{html.escape(c.key)}</code> <small>({html.escape(experiment)}, no longer in the book)</small>"
    label, href = found
    return f'<a href="{html.escape(href)}">{html.escape(label)}</a> <small>{html.escape(c.key)}</small>'


def _flip_rows(revisions: list[Revision], links: ClaimLinks) -> list[str]:
    rows = []
    for r in reversed(revisions):
        for c in r.flips:
            rows.append(f"<tr><td>{html.escape(r.date)}</td><td>{_claim_cell(c, links)}</td>"
                        f"<td>{_verdict(c.old, c.old_corrected)} → {_verdict(c.new, c.new_corrected)}</td>"
                        f"<td>{html.escape(reason(r.message, c.key))}</td>"
                        f'<td><a href="#change-{r.commit[:10]}"><code>{r.commit[:8]}</code></a></td></tr>')
    return rows


def _counts(changes: tuple[Change, ...], new: bool) -> str:

    counts = Counter((c.new if new else c.old) for c in changes)
    order = [v for v in VERDICT_COLOURS if counts.get(v)] + sorted(str(v) for v in counts if v not in VERDICT_COLOURS)
    return ", ".join(verdict_count(v, counts[v]) if v in VERDICT_COLOURS else f"{counts[v]} {v}" for v in order)


def changelog_html(revisions: list[Revision] | None, links: ClaimLinks | None = None) -> str:
    """The changelog page's body: one line per verdict change, newest first (the claim's id linked to the ledger
    through ``links``, before → after, the reason in one sentence, the commit); then each commit, newest first, with
    what it changed and its whole message folded."""

    if revisions is None:
        return ("<p>No git history is available in this copy of the book's sources, so the verdict changelog "
                "cannot be read from it. Build the book from a clone of the repository to see it.</p>")
    if not revisions:
        return "<p>The verdict table has no committed history yet.</p>"
    links = links or {}
    flips = sum(len(r.flips) for r in revisions)
    head = "".join(f"<th>{h}</th>" for h in ("date", "claim", "verdict", "reason", "commit"))
    parts = [claims_table_css(),
             f"<p>{len(revisions)} commits changed the verdict table; "
             f"{plural(flips, 'verdict')} of existing claims changed in them.</p>"]
    if flips:
        parts.append(f'<table class="claims-table changelog-flips"><thead><tr>{head}</tr></thead>'
                     f'<tbody>{"".join(_flip_rows(revisions, links))}</tbody></table>')
    parts.append("<h2>Every commit of the verdict table</h2>")
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
        added = "".join(f"<li>{_claim_cell(c, links)}: {_verdict(c.new, c.new_corrected)}</li>" for c in r.added)
        removed = "".join(f"<li>{_claim_cell(c, links)}</li>" for c in r.removed)
        parts.append(f'<section class="changelog-entry" id="change-{r.commit[:10]}"><p><strong>{html.escape(r.date)} · '
                     f"<code>{r.commit[:8]}</code></strong>: {html.escape('; '.join(what))}.</p>"
                     f"<details><summary>{html.escape(reason(subject, ''))}</summary>"
                     f"<p>{html.escape(r.message.strip())}</p>"
                     + (f"<p>Added:</p><ul>{added}</ul>" if added else "")
                     + (f"<p>Removed:</p><ul>{removed}</ul>" if removed else "")
                     + "</details></section>")
    return "".join(parts)
