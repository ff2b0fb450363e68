"""Each study's optional module of one kind, found by discovery: its published rows, its ledger notes."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType


def study_parts(part: str) -> list[tuple[str, ModuleType]]:
    """(chapter, module) for every study package that has a module ``part`` (``analysis/studies/<chapter>/<part>.py``),
    in the order of the chapters' names; an error inside such a module is raised, not taken for its absence."""
    if not part.isidentifier():
        raise ValueError(f"part must be a module name; got {part!r}")
    found = []
    for chapter in sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.ispkg):
        name = f"analysis.studies.{chapter}.{part}"
        try:
            found.append((chapter, importlib.import_module(name)))
        except ModuleNotFoundError as err:
            if err.name != name:
                raise
    return found
