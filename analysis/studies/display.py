"""The Markdown display object the chapters glue: IPython's, or, on a machine without IPython (one that runs
experiments and builds no book, such as a GPU node with only torch and the scientific stack), a stand-in with the
same text and Markdown representation, so that importing an experiment never needs IPython."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

try:
    from IPython.display import Markdown
except ModuleNotFoundError:  # pragma: no cover - exercised by tests/test_cli.py in a subprocess that blocks IPython

    class Markdown:  # type: ignore[no-redef]
        """Markdown text for display: ``data`` and ``_repr_markdown_``, as IPython.display.Markdown gives them."""

        def __init__(self, data: str | None = None) -> None:
            self.data = "" if data is None else str(data)

        def _repr_markdown_(self) -> str:
            """The Markdown text itself."""
            return self.data

        def __repr__(self) -> str:
            return f"Markdown({self.data!r})"

__all__ = ["Markdown", "sentences"]


def sentences(facts: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``facts`` with the values of ``names``, whole sentences, as Markdown: glued as text they would be set in bold."""
    chosen = set(names)
    missing = sorted(chosen - set(facts))
    if missing:
        raise ValueError(f"names must be among the facts; not found: {', '.join(missing)}")
    return {k: Markdown(str(v)) if k in chosen and not isinstance(v, Markdown) else v for k, v in facts.items()}
