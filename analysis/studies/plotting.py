"""What every study's figures share: the book's style (``book.mplstyle``) and the rule that every text stays
readable at the width of the book's column."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

STYLE_FILE = Path(__file__).with_name("book.mplstyle")
STYLE: dict[str, Any] = dict(matplotlib.rc_params_from_file(str(STYLE_FILE), use_default_template=False))
COLUMN_PX = 690  # the book's content column at a 1280-pixel window (measured): a figure is scaled to this width
MIN_TEXT_PX = 12  # the smallest text a figure may show at that width (the page's small text is about 13 px)


def reflow(fig: Figure, max_cols: int = 2, panel: tuple[float, float] = (6.0, 4.4)) -> Figure:
    """Lay a grid of more than ``max_cols`` panel columns out again: one row of panels in ``max_cols`` columns in
    reading order (a legend of more than 6 entries moves into a slot left empty); a grid of several rows (one per
    run) transposed, so that each run becomes a column. Each panel ``panel`` inches; colorbars stay attached."""
    specs = {ax: ax.get_subplotspec() for ax in fig.axes if ax.get_label() != "<colorbar>"}
    axes = [ax for ax, spec in specs.items() if spec is not None]
    if not axes:
        return fig
    spec0 = specs[axes[0]]
    assert spec0 is not None
    nrows, ncols = spec0.get_gridspec().get_geometry()
    if ncols <= max_cols:
        return fig
    if nrows > 1:
        if nrows > max_cols:
            return fig
        grid = fig.add_gridspec(ncols, nrows)
        for ax in axes:
            spec = specs[ax]
            assert spec is not None
            ax.set_subplotspec(grid[spec.colspan.start, spec.rowspan.start])
            ax.tick_params(labelleft=True, labelbottom=True)  # shared axes hid labels by the old positions
        fig.set_size_inches(panel[0] * nrows, panel[1] * ncols)
        fig.set_layout_engine("constrained")
        return fig
    order = sorted(axes, key=lambda a: getattr(specs[a], "colspan", range(0)).start)
    rows = -(-len(order) // max_cols)
    grid = fig.add_gridspec(rows, max_cols)
    for i, ax in enumerate(order):
        ax.set_subplotspec(grid[i // max_cols, i % max_cols])
        ax.tick_params(labelleft=True, labelbottom=True)
    fig.set_size_inches(panel[0] * max_cols, panel[1] * rows)
    fig.set_layout_engine("constrained")
    if len(order) % max_cols:
        legends = [(ax, ax.get_legend()) for ax in order]
        crowded = [(ax, leg) for ax, leg in legends if leg is not None and len(leg.get_texts()) > 6]
        if crowded:
            handles, labels = crowded[0][0].get_legend_handles_labels()
            crowded[0][1].remove()
            slot = fig.add_subplot(grid[rows - 1, len(order) % max_cols:])
            slot.axis("off")
            slot.legend(handles, labels, loc="center", ncol=2 if len(labels) > 8 else 1, frameon=False)
    return fig


def readable(fig: Figure, column_px: float = COLUMN_PX, min_px: float = MIN_TEXT_PX) -> Figure:
    """Reflow a grid wider than two panels (:func:`reflow`), then raise every text of ``fig`` (ticks, labels,
    titles, legends) to at least ``min_px`` pixels once the figure is scaled to ``column_px`` wide:
    min_pt = min_px * width_in * 72 / column_px. Then lay it out again."""
    from matplotlib.text import Text

    reflow(fig)
    min_pt = min_px * fig.get_figwidth() * 72 / column_px
    for text in fig.findobj(Text):
        if text.get_text() and float(text.get_fontsize()) < min_pt:
            text.set_fontsize(min_pt)
    for ax in fig.axes:  # tick labels are made again at draw time: set their size on the axes, not on the texts
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            size = float(labels[0].get_fontsize()) if labels else min_pt
            if size < min_pt:
                axis.set_tick_params(which="both", labelsize=min_pt)
    if type(fig.get_layout_engine()).__name__ != "ConstrainedLayoutEngine":
        fig.tight_layout()
    return fig


def readable_figure(make: Callable[..., Figure]) -> Callable[..., Figure]:
    """A figure function whose figure passes through :func:`readable`."""

    @functools.wraps(make)
    def wrapped(*args: Any, **kwargs: Any) -> Figure:
        return readable(make(*args, **kwargs))

    return wrapped


