"""What every study's figures share: the book's style (``book.mplstyle``) and the rule that every text stays
readable at the width of the book's column."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from analysis.studies.figure_check import data_points, legend_cover

STYLE_FILE = Path(__file__).with_name("book.mplstyle")
STYLE: dict[str, Any] = dict(matplotlib.rc_params_from_file(str(STYLE_FILE), use_default_template=False))
COLUMN_PX = 690  # the book's content column at a 1280-pixel window (measured): a figure is scaled to this width
MIN_TEXT_PX = 12  # the smallest text a figure may show at that width (the page's small text is about 13 px)
# on a phone the book's stylesheet keeps a figure this wide, scrolling inside its box: its smallest text is then
# MIN_TEXT_PX x PHONE_FIGURE_PX / COLUMN_PX = 9.4 px, not the 6.8 px of a figure shrunk to a 420-pixel page
PHONE_FIGURE_PX = 540
PHONE_MIN_TEXT_PX = 9


def reflow(fig: Figure, max_cols: int = 2, panel: tuple[float, float] = (6.0, 4.4)) -> Figure:
    """Lay a grid of more than ``max_cols`` panel columns out again: one row of panels in ``max_cols`` columns in
    reading order (a legend of more than 6 entries moves into a slot left empty, or else the last panel spans the
    rest of its row, so that no slot stays empty); a grid of several rows (one per
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
            ax, legend = crowded[0]
            handles, labels = _handles(ax, legend), [t.get_text() for t in legend.get_texts()]
            legend.remove()
            slot = fig.add_subplot(grid[rows - 1, len(order) % max_cols:])
            slot.axis("off")
            slot.legend(handles, labels, loc="center", ncol=2 if len(labels) > 8 else 1, frameon=False)
        else:  # no empty slot: the last panel spans the rest of its row
            order[-1].set_subplotspec(grid[rows - 1, (len(order) - 1) % max_cols:])
    return fig


INSIDE = ("upper right", "upper left", "lower left", "lower right", "center right", "center left", "upper center",
          "lower center", "center")  # where a legend may sit inside its axes, in the order tried
LEGEND_GAP_PX = 6.0  # between a legend moved below its axes and the axes' x tick labels and label


def _constrained(fig: Figure) -> bool:
    return type(fig.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"


def _settle(fig: Figure) -> None:
    """Lay ``fig`` out as a draw would (a constrained layout is made only at draw time) and apply the axes' pending
    autoscaling, so that positions and data transforms are final, without drawing."""
    if _constrained(fig):
        fig.get_layout_engine().execute(fig)
    for ax in fig.axes:
        ax.apply_aspect()
        ax.viewLim  # noqa: B018  (reading it applies a pending autoscale)


def _relayout(fig: Figure) -> None:
    if not _constrained(fig):
        fig.tight_layout()
    _settle(fig)


def _clear_of_texts(ax: Any, box: Any) -> bool:
    """Whether ``box`` (display pixels) keeps clear of the texts placed in ``ax``."""
    return not any(t.get_text().strip() and box.overlaps(t.get_window_extent()) for t in ax.texts)


def _move_inside(ax: Any, legend: Any) -> bool:
    """Put ``legend`` at the first place inside ``ax`` (:data:`INSIDE`) where it covers no data and no text;
    False (and the legend where it was) when there is none."""

    before = legend._loc  # noqa: SLF001  (matplotlib keeps the legend's location code here)
    points = data_points(ax)
    for loc in INSIDE:
        legend.set_loc(loc)
        box = legend.get_window_extent()
        inside = ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
        if inside and not legend_cover(ax, legend, points) and _clear_of_texts(ax, box):
            return True
    legend._loc = before  # noqa: SLF001
    return False


def _handles(ax: Any, legend: Any) -> list[Any]:
    """The artists ``legend`` stands for: the axes' own handles by label, else the legend's drawn stand-ins."""
    own = dict(zip(*ax.get_legend_handles_labels()[::-1]))
    return [own.get(t.get_text(), proxy) for t, proxy in zip(legend.get_texts(), legend.legend_handles)]


def _move_below(ax: Any, legend: Any) -> Any:
    """Draw ``legend`` again under ``ax``, below its x tick labels and label, without a frame, in as many columns as
    fit the axes' width; the new legend."""
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    xaxis = ax.xaxis.get_tightbbox() if ax.axison else None
    drop = (ax.bbox.y0 - xaxis.y0 if xaxis is not None else 0.0) + LEGEND_GAP_PX
    anchor = ax.transAxes + ScaledTranslation(0, -drop / fig.dpi, fig.dpi_scale_trans)
    labels = [t.get_text() for t in legend.get_texts()]
    handles = _handles(ax, legend)
    title = legend.get_title()
    style = {"fontsize": legend.get_texts()[0].get_fontsize(), "title": title.get_text() or None,
             "title_fontsize": title.get_fontsize(), "loc": "upper center", "bbox_to_anchor": (0.5, 0.0),
             "bbox_transform": anchor, "frameon": False}
    for ncols in range(len(labels), 0, -1):
        new = ax.legend(handles, labels, ncols=ncols, **style)
        if new.get_window_extent().width <= ax.bbox.width or ncols == 1:
            return new
    return ax.get_legend()


def place_legends(fig: Figure, rounds: int = 3) -> Figure:
    """Move every legend of ``fig`` that covers data of its axes (:func:`analysis.studies.figure_check.legend_cover`): to
    free space inside its axes, else below the axes, the figure growing by the height it takes; then lay the
    figure out again, up to ``rounds`` times."""

    if not any(ax.get_legend() is not None for ax in fig.axes):
        return fig
    _settle(fig)
    for _ in range(rounds):
        grow: dict[Any, float] = {}  # per row of panels (the bottom of its grid slot): the height moved legends take
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None or not legend.get_visible() or not legend_cover(ax, legend) or _move_inside(ax, legend):
                continue
            new = _move_below(ax, legend)
            spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
            row = (id(spec.get_gridspec()), spec.rowspan.stop) if spec is not None else id(ax)
            grow[row] = max(grow.get(row, 0.0), (ax.bbox.y0 - new.get_window_extent().y0) / fig.dpi)
        if not grow:  # nothing moved below: the layout stands (a legend moved inside does not change it)
            break
        fig.set_figheight(fig.get_figheight() + sum(grow.values()))
        _relayout(fig)
    return fig


def readable(fig: Figure, column_px: float = COLUMN_PX, min_px: float = MIN_TEXT_PX) -> Figure:
    """Reflow a grid wider than two panels (:func:`reflow`), then raise every text of ``fig`` (ticks, labels,
    titles, legends) to at least ``min_px`` pixels once the figure is scaled to ``column_px`` wide:
    min_pt = min_px * width_in * 72 / column_px. Then lay it out (tight, unless it is constrained: the figure
    functions leave their layout to this one call), and move each legend that covers data to free space
    (:func:`place_legends`)."""
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
    if not _constrained(fig):
        fig.tight_layout()
    return place_legends(fig)


def readable_figure(make: Callable[..., Figure]) -> Callable[..., Figure]:
    """A figure function whose figure passes through :func:`readable`."""

    @functools.wraps(make)
    def wrapped(*args: Any, **kwargs: Any) -> Figure:
        return readable(make(*args, **kwargs))

    return wrapped


def _tick_text(value: float, _pos: Any = None) -> str:
    """A log axis's tick label: plain ('0.5', '2', '5000') between 0.001 and 10^5, else '2×10^7' in mathtext."""
    import math

    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = math.floor(math.log10(value) + 1e-9)
    mantissa = value / 10**exponent
    return rf"$10^{{{exponent}}}$" if abs(mantissa - 1) < 1e-6 else rf"${mantissa:g}\times10^{{{exponent}}}$"


def log_ticks(axis: Any) -> None:
    """Label a base-10 log ``axis`` (an Axis) with enough major ticks for its current range: decades over 3 decades
    or more, 1 and 3 per decade over 1.5 or more, 1, 2 and 5 over 0.7 or more, else 1 to 9 by steps; minor ticks
    without labels. Call it once the limits are set."""
    import math

    from matplotlib.ticker import LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    if lo <= 0 or axis.get_scale() != "log":
        raise ValueError(f"log_ticks needs a log axis with positive limits; got {axis.get_scale()} ({lo}, {hi})")
    decades = math.log10(hi / lo)
    subs = ((1.0,) if decades >= 3 else (1.0, 3.0) if decades >= 1.5 else (1.0, 2.0, 5.0) if decades >= 0.7
            else (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0))
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(_tick_text)
    axis.set_minor_formatter(NullFormatter())
