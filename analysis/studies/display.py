"""The Markdown display object the chapters glue: IPython's, or, on a machine without IPython (one that runs
experiments and builds no book, such as a GPU node with only torch and the scientific stack), a stand-in with the
same text and Markdown representation, so that importing an experiment never needs IPython."""

from __future__ import annotations

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

__all__ = ["Markdown"]
