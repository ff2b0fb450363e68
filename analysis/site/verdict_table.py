"""The verdict table: every recorded claim's verdict and measured value, checked in as ``tests/verdicts.json``.

For each committed record ``results/<experiment>.<scale>.json`` the experiment's
``claims(data, label)`` is run on the recorded data with the label a chapter
uses (``recorded-<scale>``, which its statements name). The table maps
``experiment.scale`` to the claims' keys and their verdicts, corrected verdicts
and measured values. A change that flips a verdict
or moves a measured value makes :func:`compare` report it, so the test fails
until the table is rewritten on purpose (``python scripts/verdicts.py --write``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from analysis.core.registry import EXPERIMENTS
from analysis.core.results import load_record, results_dir
from analysis.core.verify import Claim, run_name

SCHEMA = "analysis.verdicts/1"
# Claims are deterministic functions of the recorded data: the only freedom left is
# floating-point summation order across numpy/torch builds, a few ulps of the sums
# involved. 1e-9 relative (or 1e-12 absolute near zero) is far above that and far
# below any change of a number a chapter prints (4 significant figures).
MEASURED_RTOL = 1e-9
MEASURED_ATOL = 1e-12


def recorded_claims(directory: str | os.PathLike[str] | None = None) -> Iterator[tuple[str, list[Claim]]]:
    """Per committed record, in file order: ("experiment.scale", the experiment's claims on its recorded data, with
    the label ``recorded-<scale>`` a chapter uses, identified as made by that record)."""

    folder = Path(directory) if directory is not None else results_dir()
    for path in sorted(folder.glob("*.json")):
        record = load_record(path)
        if record.experiment not in EXPERIMENTS:
            raise ValueError(f"{path}: experiment {record.experiment!r} is not registered")
        # identified by the record's scale (a gpu-only claim is decided by a gpu run only), as if current: whether a
        # record is stale depends on today's code, which the table does not pin
        yield (f"{record.experiment}.{record.scale}",
               [c.identified(record.experiment, record.scale, recorded=True)
                for c in EXPERIMENTS[record.experiment].claims(record.data, run_name(record.scale, recorded=True))])


def recorded_verdicts(directory: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The table of every record's claims: {"experiment.scale": {claim key: {verdict, corrected_verdict, measured}}}."""
    table = {name: {c.key: {"verdict": c.verdict, "corrected_verdict": c.corrected_verdict, "measured": c.measured}
                    for c in claims}
             for name, claims in recorded_claims(directory)}
    return {"schema": SCHEMA, "measured_rtol": MEASURED_RTOL, "measured_atol": MEASURED_ATOL, "records": table}


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Every difference between two verdict tables, one line each (empty when they agree)."""
    if expected.get("schema") != SCHEMA:
        return [f"expected table has schema {expected.get('schema')!r}, not {SCHEMA!r}"]
    rtol, atol = float(expected["measured_rtol"]), float(expected["measured_atol"])
    problems: list[str] = []
    want, have = expected["records"], actual["records"]
    for name in sorted(set(want) | set(have)):
        if name not in have:
            problems.append(f"{name}: in the table but no longer recorded")
            continue
        if name not in want:
            problems.append(f"{name}: recorded but not in the table")
            continue
        for key in sorted(set(want[name]) | set(have[name])):
            w, h = want[name].get(key), have[name].get(key)
            if w is None or h is None:
                problems.append(f"{name} {key}: claim {'added' if w is None else 'removed'}")
                continue
            for field in ("verdict", "corrected_verdict"):
                if w[field] != h[field]:
                    problems.append(f"{name} {key}: {field} was {w[field]!r}, now {h[field]!r}")
            if not math.isclose(w["measured"], h["measured"], rel_tol=rtol, abs_tol=atol):
                problems.append(f"{name} {key}: measured was {w['measured']!r}, now {h['measured']!r}")
    return problems


def load_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a verdict table written by :func:`write_table`."""
    return dict(json.loads(Path(path).read_text()))


def write_table(table: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``table`` as sorted, indented JSON (one line per field, so diffs show each change)."""
    Path(path).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
