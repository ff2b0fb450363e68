"""One package per chapter: what the chapter runs, states and draws.

A study ``analysis/studies/<chapter>/`` (found by discovery; the chapter is ``book/<chapter>.ipynb``) holds

* ``__init__.py``: ``TITLE``, ``EXPERIMENTS`` (the experiments whose runs the chapter shows, in order),
  ``facts(ch) -> dict`` (every number and decision the chapter's prose states, computed from its runs, as the text
  or Markdown it glues) and ``figures(ch) -> dict`` (its figures, by the names its prose cites);
* ``figures.py``: the functions that draw its figures;
* optionally ``published.py`` (what published work reports, :mod:`analysis.studies.published`) and ``notes.py``
  (the ledger's notes on its claims, :mod:`analysis.studies.notes`), both found by :mod:`analysis.studies.parts`;
* ``experiments/<name>.py``: the experiments it owns, each following :mod:`analysis.core.experiment` and found
  by the experiments' discovery (:mod:`analysis.core.registry`).

A chapter's notebook is then: ``ch = show("<chapter>")`` (open the chapter, glue its facts and figures), its
prose, and ``ch.claims``. ``tests/test_studies.py`` checks that every glue name a chapter's prose uses is a fact or
figure of its study, and the reverse.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import TYPE_CHECKING, Any

from analysis.studies.chapter import open_chapter
from analysis.studies.published import published_table, rows_for

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

STUDIES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_")))
PROTOCOL = ("TITLE", "EXPERIMENTS", "facts", "figures")


def get_study(chapter: str) -> ModuleType:
    """The study package of ``chapter``; ValueError naming the known studies otherwise."""
    if chapter not in STUDIES:
        raise ValueError(f"chapter must be one of the studies {', '.join(STUDIES)}; got {chapter!r}")
    module = importlib.import_module(f"{__name__}.{chapter}")
    missing = [a for a in PROTOCOL if not hasattr(module, a)]
    if missing:
        raise TypeError(f"study {chapter!r} lacks {', '.join(missing)}")
    return module


def show(chapter: str, directory: str | None = None) -> Chapter:
    """Open ``chapter`` (its experiments live at the build's scale, their records beside), glue every fact and
    figure of its study for the prose, and return the chapter."""
    import matplotlib.pyplot as plt
    from IPython import get_ipython
    from myst_nb import glue

    study = get_study(chapter)
    ch = open_chapter(chapter, study.TITLE, *study.EXPERIMENTS, directory=directory)
    shell = get_ipython()
    if shell is not None:
        keep_figure_images(shell)
    for name, value in gather(study, ch).items():
        glue(name, value, display=False)
        if hasattr(value, "savefig"):
            plt.close(value)
    return ch


# the MIME types IPython can render a Matplotlib figure as
FIGURE_FORMATS = ("image/png", "image/svg+xml", "image/jpeg", "application/pdf")


def keep_figure_images(shell: Any) -> bool:
    """Give ``shell`` a PNG formatter for Matplotlib figures when it has none, so that a kernel under a
    non-interactive backend such as Agg glues each figure as an image, not as its text; True when one was added.
    A formatter the inline backend set up is left as it is."""
    from functools import partial

    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    for mime in FIGURE_FORMATS:
        try:
            formatters[mime].lookup_by_type(Figure)
            return False
        except KeyError:
            continue
    formatters["image/png"].for_type(Figure, partial(print_figure, fmt="png", base64=True, bbox_inches="tight"))
    return True


def gather(study: ModuleType, ch: Chapter) -> dict[str, Any]:
    """The study's facts and figures for ``ch``, one dict; ValueError when a name is both."""
    from IPython.display import Markdown

    facts, figures = dict(study.facts(ch)), dict(study.figures(ch))
    if rows_for(ch.doc):  # what published work reports on the chapter's questions, beside its claims
        facts.setdefault("published_table", Markdown(published_table(ch.doc, ch)))
    both = sorted(set(facts) & set(figures))
    if both:
        raise ValueError(f"{study.__name__}: {', '.join(both)} named as both a fact and a figure")
    return {**facts, **figures}
