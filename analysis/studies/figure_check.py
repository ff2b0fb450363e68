"""What a reader of a figure would notice, checked on the rendered matplotlib figure (Agg), and whether its caption's
panel words fit its layout.

:func:`check_figure` draws a :class:`~matplotlib.figure.Figure` and returns its problems, one string each (an empty
list: none found):

* ``text``: a text (title, axis label, tick label, legend entry, annotation) that overlaps another text, or that
  leaves the figure's canvas;
* ``legend``: a legend whose box covers plotted data of its axes: line vertices (and the straight segments between
  the vertices of lines drawn in data coordinates), markers, error bars, bars and the non-empty cells of a density
  mesh, all in display coordinates and inside the axes (a legend of the figure is checked against every axes);
* ``empty``: a visible panel with no data, an axes turned off that holds nothing (an axes turned off that holds
  only a legend or a text is allowed: it is then no panel), or a slot of a grid of panels that no axes fills;
* ``log-ticks``: a log (or symlog) axis with fewer than two labelled major ticks in view;
* ``colour``: an image, mesh or scatter that maps values to colours with no colour bar for its mapping.

:func:`check_caption` compares the panel words of a caption (Left, Middle, Right, Top, Bottom, "last panel",
"panels") with the panels of the figure (:func:`panel_layout`). Every problem starts with its kind and a colon, so
that :func:`kinds` can count them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection, LineCollection, PathCollection, PolyCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from analysis.studies import STUDIES, get_study
from analysis.studies.chapter import open_chapter

KINDS = ("text", "legend", "empty", "log-ticks", "colour", "caption")
OVERLAP_PX = 1.0  # two texts overlap when their boxes share more than this many pixels in both directions
CANVAS_PX = 1.0  # a text leaves the canvas when it reaches further than this many pixels outside it
STEP_PX = 3.0  # a line drawn in data coordinates is sampled this often (pixels) between its vertices


# --- drawing and collecting -------------------------------------------------------------------------------------


def _draw(fig: Figure, render: bool = True) -> None:
    """Lay ``fig`` out and draw it: on an Agg canvas (attached when its canvas cannot render), or with
    ``render=False`` with the same renderer's text metrics but no pixels drawn (the same positions, faster)."""
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    if render:
        fig.canvas.draw()
    else:
        fig.draw_without_rendering()


def is_colourbar(ax: Axes) -> bool:
    """Whether ``ax`` is the axes of a colour bar."""
    return getattr(ax, "_colorbar", None) is not None


def _name(ax: Axes | None) -> str:
    """A short name of an axes for a problem's text: its title, else its y label, else its position."""
    if ax is None:
        return "the figure"
    title = ax.get_title() or ax.get_title("left") or ax.get_title("right")
    if title:
        return f"panel '{_short(title)}'"
    if is_colourbar(ax):
        return f"colour bar '{_short(ax.get_ylabel() or ax.get_xlabel())}'"
    if ax.get_ylabel():
        return f"panel with y label '{_short(ax.get_ylabel())}'"
    x0, y0, _, _ = ax.get_position().bounds
    return f"axes at ({x0:.2f}, {y0:.2f})"


def _short(text: str, limit: int = 48) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _drawn_ticks(axis: Axis) -> list:  # type: ignore[type-arg]
    """The ticks of ``axis`` that the last draw drew (those in view)."""
    try:
        return list(axis._update_ticks())  # noqa: SLF001  (matplotlib's own choice of the ticks to draw)
    except AttributeError:  # pragma: no cover - older or newer matplotlib without the helper
        return list(axis.get_major_ticks()) + list(axis.get_minor_ticks())


def _axes_texts(ax: Axes) -> list[Text]:
    """Every text an axes draws: titles, axis labels and offsets, the drawn tick labels, its texts, its legend."""
    out: list[Text] = [ax.title, ax._left_title, ax._right_title]  # noqa: SLF001
    for axis in (ax.xaxis, ax.yaxis) if ax.axison else ():  # an axes turned off draws no axis
        if not axis.get_visible():
            continue
        out += [axis.label, axis.get_offset_text()]
        for tick in _drawn_ticks(axis):
            out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    out += list(ax.texts)
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        out += _legend_texts(legend)
    return out


def _legend_texts(legend: Legend) -> list[Text]:
    title = legend.get_title()
    return list(legend.get_texts()) + ([title] if title.get_text() else [])


@dataclass(frozen=True)
class PlacedText:
    """A drawn, non-empty text: its string, its box in display pixels and the axes that holds it (None: the
    figure)."""

    text: str
    box: Bbox
    ax: Axes | None


def drawn_texts(fig: Figure) -> list[PlacedText]:
    """Every visible, non-empty text of ``fig`` as drawn (call after a draw), with its box in display pixels."""
    found: list[tuple[Text, Axes | None]] = []
    for ax in fig.axes:
        if ax.get_visible():
            found += [(t, ax) for t in _axes_texts(ax)]
    found += [(t, None) for t in fig.texts]
    for attr in ("_suptitle", "_supxlabel", "_supylabel"):
        t = getattr(fig, attr, None)
        if t is not None:
            found.append((t, None))
    for legend in fig.legends:
        if legend.get_visible():
            found += [(t, None) for t in _legend_texts(legend)]
    placed, seen = [], set()
    for t, ax in found:
        if id(t) in seen or not t.get_visible() or not t.get_text().strip():
            continue
        seen.add(id(t))
        box = t.get_window_extent()
        if box.width > 0 and box.height > 0:
            placed.append(PlacedText(t.get_text(), box, ax))
    return placed


def _densify(points: np.ndarray, step: float = STEP_PX) -> np.ndarray:
    """``points`` and points every ``step`` pixels along the straight segments between consecutive finite ones."""
    if len(points) < 2:
        return points
    a, b = points[:-1], points[1:]
    ok = np.all(np.isfinite(a), axis=1) & np.all(np.isfinite(b), axis=1)
    a, b = a[ok], b[ok]
    n = (np.hypot(*(b - a).T) // step).astype(int)  # how many steps each segment takes
    if not len(n) or n.max() < 2:
        return points
    seg = np.repeat(np.arange(len(n)), n)  # one entry per sampled point: its segment ...
    t = (np.arange(len(seg)) - np.repeat(np.cumsum(n) - n, n)) / np.repeat(n, n)  # ... and its place along it
    return np.concatenate([points, a[seg] + t[:, None] * (b[seg] - a[seg])])


def data_points(ax: Axes) -> np.ndarray:
    """The plotted data of ``ax`` as points in display pixels, inside the axes: line vertices (and points along the
    segments of lines drawn in data coordinates), scatter and marker offsets, error-bar segments, the corners and
    centre of bars, and the centres of the non-empty cells of a density mesh. Reference lines across the axes
    (axhline, axvline), spans and bands are not data points."""
    chunks: list[np.ndarray] = [np.empty((0, 2))]
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
        if not len(xy):
            continue
        pts = line.get_transform().transform(xy)
        drawn = line.get_linestyle() not in ("None", "", " ", "none")
        if drawn and line.get_transform() is ax.transData:
            pts = _densify(pts)
        chunks.append(pts)
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        chunks.append(_collection_points(ax, coll))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_transform() is ax.transData:
            box = patch.get_window_extent()
            xs, ys = (box.x0, box.x1, (box.x0 + box.x1) / 2), (box.y0, box.y1, (box.y0 + box.y1) / 2)
            chunks.append(np.array([(x, y) for x in xs for y in ys]))
    for image in ax.images:
        if isinstance(image, AxesImage) and image.get_visible():
            chunks.append(_image_points(ax, image))
    pts = np.concatenate(chunks)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    box = ax.bbox
    inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    return pts[inside]


def _collection_points(ax: Axes, coll: Collection) -> np.ndarray:
    """Display points of one collection (see :func:`data_points`); none for bands and spans."""
    if isinstance(coll, QuadMesh):
        coords = np.asarray(coll.get_coordinates(), dtype=float)  # (rows + 1, cols + 1, 2) cell corners
        values = np.ma.masked_invalid(np.ma.asarray(coll.get_array())).reshape(coords.shape[0] - 1, -1)
        centres = (coords[:-1, :-1] + coords[1:, 1:]) / 2
        drawn = np.ma.masked_invalid(np.ma.asarray(coll.norm(values))) if coll.norm is not None else values
        # a cell is data when it holds a non-zero value that its norm draws (a log norm leaves 0 undrawn)
        keep = ~np.ma.getmaskarray(values) & ~np.ma.getmaskarray(drawn) & (np.ma.filled(values, 0) != 0)
        return coll.get_transform().transform(centres[keep].reshape(-1, 2))
    if isinstance(coll, LineCollection):
        segments = [np.asarray(s, dtype=float) for s in coll.get_segments() if len(s)]
        if not segments:
            return np.empty((0, 2))
        transform = coll.get_transform()
        data = transform is ax.transData
        return np.concatenate([_densify(transform.transform(s)) if data else transform.transform(s)
                               for s in segments])
    if isinstance(coll, PolyCollection):  # fill_between bands, hatched spans: areas, not points
        return np.empty((0, 2))
    offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
    if isinstance(coll, PathCollection) and len(offsets):
        return coll.get_offset_transform().transform(offsets)
    return np.empty((0, 2))


def _image_points(ax: Axes, image: AxesImage) -> np.ndarray:
    """The centres of an image's unmasked pixels, in display pixels."""
    array = np.ma.masked_invalid(np.ma.asarray(image.get_array()))
    if array.ndim != 2:
        array = np.ma.asarray(array[..., 0])
    rows, cols = array.shape
    x0, x1, y0, y1 = image.get_extent()
    xs = x0 + (np.arange(cols) + 0.5) * (x1 - x0) / cols
    ys = y0 + (np.arange(rows) + 0.5) * (y1 - y0) / rows
    gx, gy = np.meshgrid(xs, ys)
    keep = ~np.ma.getmaskarray(array)
    return ax.transData.transform(np.column_stack([gx[keep], gy[keep]]))


# --- the checks -------------------------------------------------------------------------------------------------


def text_problems(fig: Figure) -> list[str]:
    """Texts of ``fig`` (drawn) that overlap another text by more than :data:`OVERLAP_PX` pixels both ways, or that
    reach more than :data:`CANVAS_PX` pixels outside the canvas."""
    texts = drawn_texts(fig)
    problems = []
    canvas = fig.bbox
    for t in texts:
        b = t.box
        out = max(canvas.x0 - b.x0, b.x1 - canvas.x1, canvas.y0 - b.y0, b.y1 - canvas.y1)
        if out > CANVAS_PX:
            problems.append(f"text: '{_short(t.text)}' ({_name(t.ax)}) leaves the canvas by {out:.0f} px")
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            w = min(a.box.x1, b.box.x1) - max(a.box.x0, b.box.x0)
            h = min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)
            if w > OVERLAP_PX and h > OVERLAP_PX:
                problems.append(f"text: '{_short(a.text)}' ({_name(a.ax)}) overlaps '{_short(b.text)}' "
                                f"({_name(b.ax)}) by {w:.0f} x {h:.0f} px")
    return problems


def _legend_box(legend: Legend) -> Bbox:
    """The legend's box in display pixels, one pixel in from its frame."""
    box = legend.get_window_extent()
    return Bbox.from_extents(box.x0 + 1, box.y0 + 1, box.x1 - 1, box.y1 - 1)


def _covered(points: np.ndarray, box: Bbox) -> int:
    inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0)
              & (points[:, 1] < box.y1))
    return int(inside.sum())


def legend_cover(ax: Axes, legend: Legend, points: np.ndarray | None = None) -> int:
    """How many data points of ``ax`` (:func:`data_points`, or ``points`` when given) the box of ``legend``
    covers, as last laid out."""
    return _covered(data_points(ax) if points is None else points, _legend_box(legend))


def _hidden_texts(fig: Figure, legend: Legend) -> list[PlacedText]:
    """The drawn texts of ``fig`` outside ``legend`` that its box overlaps by more than :data:`OVERLAP_PX` both
    ways."""
    own = {t.get_text() for t in _legend_texts(legend)}
    box = _legend_box(legend)
    hidden = []
    for t in drawn_texts(fig):
        w = min(box.x1, t.box.x1) - max(box.x0, t.box.x0)
        h = min(box.y1, t.box.y1) - max(box.y0, t.box.y0)
        inside_legend = t.box.x0 >= box.x0 - 2 and t.box.x1 <= box.x1 + 2 and t.box.y0 >= box.y0 - 2 \
            and t.box.y1 <= box.y1 + 2 and t.text in own
        if w > OVERLAP_PX and h > OVERLAP_PX and not inside_legend:
            hidden.append(t)
    return hidden


def legend_problems(fig: Figure) -> list[str]:
    """Legends of ``fig`` (drawn) whose box covers data points of their axes (:func:`data_points`), a figure legend
    checked against every axes; and legends whose box lies over a text that is not theirs (a tick label, a
    title)."""
    problems = []
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_visible()] + [(None, leg) for leg in fig.legends]
    for ax, legend in legends:
        if legend is None or not legend.get_visible():
            continue
        for target in [ax] if ax is not None else [a for a in fig.axes if a.get_visible()]:
            n = legend_cover(target, legend)
            if n:
                problems.append(f"legend: the legend of {_name(ax)} covers {n} data points of {_name(target)}")
        for t in _hidden_texts(fig, legend):
            problems.append(f"legend: the legend of {_name(ax)} lies over the text '{_short(t.text)}' "
                            f"({_name(t.ax)})")
    return problems


def _holds_something(ax: Axes) -> bool:
    """Whether ``ax`` shows anything: data, a legend or a text."""
    return ax.has_data() or ax.get_legend() is not None or any(t.get_text().strip() for t in ax.texts)


def empty_problems(fig: Figure) -> list[str]:
    """Visible axes of ``fig`` with no data and no purpose: a panel (axis on) with no data, or an axes turned off
    with no data, no legend and no text; and the slots of a grid of panels that no axes fills (the empty fourth
    place of three panels laid out in two columns), unless an axes there holds a legend or a text (a grid nested in
    a slot, as a colour bar's, fills that slot)."""
    problems = []
    grids: dict[int, tuple[object, set[tuple[int, int]]]] = {}
    for ax in fig.axes:
        spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
        if spec is None or not ax.get_visible():
            continue
        spec = spec.get_topmost_subplotspec()  # a colour bar's nested grid fills its parent's slot
        grid = spec.get_gridspec()
        cells = grids.setdefault(id(grid), (grid, set()))[1]
        if ax.axison or _holds_something(ax) or is_colourbar(ax):
            cells.update((r, c) for r in spec.rowspan for c in spec.colspan)
    for grid, cells in grids.values():
        nrows, ncols = grid.get_geometry()  # type: ignore[attr-defined]
        free = [(r, c) for r in range(nrows) for c in range(ncols) if (r, c) not in cells]
        if cells and free:
            where = ", ".join(f"row {r + 1} column {c + 1}" for r, c in free)
            problems.append(f"empty: the {nrows} x {ncols} grid of panels leaves {len(free)} slot"
                            f"{'s' if len(free) != 1 else ''} empty ({where})")
    for ax in fig.axes:
        if not ax.get_visible() or is_colourbar(ax):
            continue
        if ax.axison and not ax.has_data():
            problems.append(f"empty: {_name(ax)} is a panel with no data")
        elif not ax.axison and not _holds_something(ax):
            problems.append(f"empty: {_name(ax)} is turned off and holds nothing")
    return problems


def _labelled_major_ticks(axis: Axis) -> tuple[int, bool]:
    """How many major ticks of ``axis`` in view carry a visible, non-empty label; and whether any label is shown."""
    majors = {id(t) for t in axis.get_major_ticks()}
    shown = [t for t in _drawn_ticks(axis) if id(t) in majors]
    visible = any(t.label1.get_visible() or t.label2.get_visible() for t in shown)
    labelled = sum(1 for t in shown if any(lab.get_visible() and lab.get_text().strip()
                                          for lab in (t.label1, t.label2)))
    return labelled, visible


def log_tick_problems(fig: Figure) -> list[str]:
    """Log and symlog axes of ``fig`` (drawn) with fewer than two labelled major ticks in view. An axis whose
    labels are all turned off because it shares its scale with a neighbour is left to that neighbour."""
    problems = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis, name, shared in ((ax.xaxis, "x", ax.get_shared_x_axes()), (ax.yaxis, "y", ax.get_shared_y_axes())):
            if axis.get_scale() not in ("log", "symlog") or not axis.get_visible():
                continue
            labelled, visible = _labelled_major_ticks(axis)
            if not visible and len(shared.get_siblings(ax)) > 1:
                continue
            if labelled < 2:
                problems.append(f"log-ticks: the {axis.get_scale()} {name} axis of {_name(ax)} has {labelled} "
                                "labelled major tick" + ("" if labelled == 1 else "s"))
    return problems


def _colour_mapped(ax: Axes) -> list:  # type: ignore[type-arg]
    """The artists of ``ax`` that map values to colours: images, meshes, and collections with an array."""
    out = [im for im in ax.images if im.get_visible() and im.get_array() is not None]
    for coll in ax.collections:
        if coll.get_visible() and coll.get_array() is not None and (
                isinstance(coll, (QuadMesh, PathCollection, LineCollection)) or type(coll) is PolyCollection):
            out.append(coll)
    return out


def colour_problems(fig: Figure) -> list[str]:
    """Images, meshes and scatters of ``fig`` that map values to colours with no colour bar showing that mapping
    (a colour bar of the same artist, or of one sharing its norm and colour map)."""
    bars = [ax._colorbar for ax in fig.axes if is_colourbar(ax)]  # noqa: SLF001
    problems = []
    for ax in fig.axes:
        if not ax.get_visible() or is_colourbar(ax):
            continue
        for artist in _colour_mapped(ax):
            shown = any(cb.mappable is artist or (cb.mappable.norm is artist.norm
                                                  and cb.mappable.get_cmap().name == artist.get_cmap().name)
                        for cb in bars)
            if not shown:
                problems.append(f"colour: a {type(artist).__name__} of {_name(ax)} maps values to colours with no "
                                "colour bar")
    return problems


def check_figure(fig: Figure, render: bool = True) -> list[str]:
    """Draw ``fig`` (Agg; ``render=False``: laid out with Agg's text metrics but not rasterised) and return every
    problem of :func:`text_problems`, :func:`legend_problems`, :func:`empty_problems`, :func:`log_tick_problems` and
    :func:`colour_problems`; ValueError when ``fig`` is no Figure."""
    _draw(fig, render)
    return (text_problems(fig) + legend_problems(fig) + empty_problems(fig) + log_tick_problems(fig)
            + colour_problems(fig))


# --- the caption ------------------------------------------------------------------------------------------------


SIDE = 0.4  # a panel is on the left (right) when its centre lies in the left (right) 40% of the panels' width


@dataclass(frozen=True)
class Layout:
    """The panels of a figure by rows, top to bottom; each row the horizontal centres of its panels, left to right,
    as fractions of the width that all panels span (0: its left edge, 1: its right edge)."""

    rows: tuple[tuple[float, ...], ...]

    @property
    def panels(self) -> int:
        """How many panels in all."""
        return sum(len(r) for r in self.rows)

    @property
    def columns(self) -> int:
        """The most panels side by side in one row."""
        return max((len(r) for r in self.rows), default=0)

    def has_side(self, side: str, row: tuple[float, ...] | None = None) -> bool:
        """Whether a panel (of ``row``, else of any row) sits on ``side`` ('left' or 'right', :data:`SIDE`)."""
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right'; got {side!r}")
        centres = row if row is not None else [c for r in self.rows for c in r]
        return any(c < SIDE if side == "left" else c > 1 - SIDE for c in centres)

    def describe(self) -> str:
        """'3 panels in rows of 2, 1' and the like."""
        return (f"{self.panels} panel{'s' if self.panels != 1 else ''} in rows of "
                f"{', '.join(str(len(r)) for r in self.rows)}")


def panels(fig: Figure) -> list[Axes]:
    """The panels of ``fig``: visible axes with their axis on that are not colour bars (an axes turned off to hold a
    legend or a note is not a panel)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison and not is_colourbar(ax)]


def panel_layout(fig: Figure) -> Layout:
    """The rows of panels of ``fig`` (as last laid out): panels whose heights overlap by more than half the smaller
    one share a row; with each panel's horizontal centre within the panels' width."""
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    found = panels(fig)
    if not found:
        return Layout(())
    boxes = [ax.get_position() for ax in found]
    left, right = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    rows: list[list[Bbox]] = []
    for p in sorted(boxes, key=lambda b: -b.y1):
        for row in rows:
            lo, hi = row[0].y0, row[0].y1
            if min(hi, p.y1) - max(lo, p.y0) > 0.5 * min(hi - lo, p.y1 - p.y0):
                row.append(p)
                break
        else:
            rows.append([p])
    width = max(right - left, 1e-12)
    return Layout(tuple(tuple(sorted(((b.x0 + b.x1) / 2 - left) / width for b in row)) for row in rows))


_MARKUP = (re.compile(r"\{[\w:.-]+\}`[^`]*`"),  # MyST roles: {eq}`...`, {glue:text}`...`
           re.compile(r"\$\$.*?\$\$", re.S), re.compile(r"\$[^$]*\$"),  # maths
           re.compile(r"^:\w+:.*$", re.M), re.compile(r"`[^`]*`"))  # directive options, code
_POSITION = re.compile(r"\b(top|bottom|middle|left|right)\b(?:\s+(row|column|left|right|middle)\b)?", re.I)


def caption_words(caption: str) -> list[str]:
    """The panel words of ``caption`` in order, lower case, with MyST roles, maths, code and directive options left
    out: 'top left', 'bottom', 'middle row', 'right', 'last panel', 'panels', ..."""
    if not isinstance(caption, str):
        raise ValueError(f"caption must be a string; got {type(caption).__name__}")
    text = caption
    for pattern in _MARKUP:
        text = pattern.sub(" ", text)
    found = [(m.start(), " ".join(w.lower() for w in m.groups() if w)) for m in _POSITION.finditer(text)]
    found += [(m.start(), "last panel") for m in re.finditer(r"\blast panel\b", text, re.I)]
    found += [(m.start(), "panels") for m in re.finditer(r"\bpanels\b", text, re.I)]
    return [w for _, w in sorted(found)]


def word_problem(word: str, layout: Layout) -> str | None:
    """Why panel word ``word`` (from :func:`caption_words`) does not fit ``layout``; None when it does."""
    rows = layout.rows
    first, _, second = word.partition(" ")
    need: list[tuple[bool, str]] = []
    if word in ("last panel", "panels"):
        need.append((layout.panels >= 2, "at least 2 panels"))
    elif first in ("top", "bottom") or word == "middle row":
        need.append((len(rows) >= (3 if first == "middle" else 2),
                     "at least 3 rows of panels" if first == "middle" else "at least 2 rows of panels"))
        row = (rows[0] if first == "top" else rows[-1]) if rows and first != "middle" else ()
        if second == "middle":
            need.append((len(row) >= 3, f"3 panels side by side in the {first} row"))
        elif second in ("left", "right"):
            need.append((layout.has_side(second, row), f"a panel on the {second} of the {first} row"))
    elif first == "middle":
        need.append((layout.columns >= 3, "3 panels side by side"))
    elif first in ("left", "right"):
        need.append((layout.columns >= 2 and layout.has_side(first), f"panels side by side, one on the {first}"))
    for ok, what in need:
        if not ok:
            return f"caption: '{word}' needs {what}; the figure has {layout.describe() if rows else 'no panels'}"
    return None


def check_caption(caption: str, fig: Figure, draw: bool = True) -> list[str]:
    """The panel words of ``caption`` (:func:`caption_words`) that the layout of ``fig`` (drawn here) does not have:
    'middle' needs a row of 3 panels; 'left' and 'right' a row of 2 and a panel on that side; 'top' and 'bottom' 2
    rows ('middle row' 3); 'top left' a panel on the left of the top row (a lone panel spanning the row is on neither
    side); 'last panel' and 'panels' at least 2 panels. ``draw=False`` when ``fig``
    was drawn as it is. ValueError when ``caption`` is no string or ``fig`` no Figure."""
    words = caption_words(caption)
    if draw or not isinstance(fig, Figure):
        _draw(fig, render=False)
    layout = panel_layout(fig)
    problems = []
    for word in dict.fromkeys(words):
        problem = word_problem(word, layout)
        if problem:
            problems.append(problem)
    return problems


_FIGURE_DIRECTIVE = re.compile(r"```\{glue:figure\}[ \t]+(\S+)[ \t]*\n(.*?)```", re.S)


def figure_captions(markdown: str) -> dict[str, str]:
    """The captions of the ``{glue:figure}`` directives in ``markdown``, by glued name (directive options left
    out); ValueError when a name is glued as a figure twice."""
    out: dict[str, str] = {}
    for name, body in _FIGURE_DIRECTIVE.findall(markdown):
        if name in out:
            raise ValueError(f"figure {name!r} is glued twice")
        out[name] = "\n".join(line for line in body.splitlines() if not re.match(r"^:\w[\w-]*:", line)).strip()
    return out


def kinds(problems: Iterable[str]) -> Counter[str]:
    """How many problems of each kind (the word before the first colon)."""
    counts: Counter[str] = Counter()
    for p in problems:
        kind = p.split(":", 1)[0]
        if kind not in KINDS:
            raise ValueError(f"a problem must start with one of {', '.join(KINDS)} and a colon; got {p!r}")
        counts[kind] += 1
    return counts


def check(fig: Figure, caption: str | None = None, render: bool = True) -> list[str]:
    """:func:`check_figure`, then :func:`check_caption` when a caption is given."""
    return check_figure(fig, render) + ([] if caption is None else check_caption(caption, fig, draw=False))


# --- the book ---------------------------------------------------------------------------------------------------

BOOK = Path(__file__).resolve().parents[2] / "book"


def notebook_captions(chapter: str, book: Path = BOOK) -> dict[str, str]:
    """The figure captions of ``book/<chapter>.ipynb`` (:func:`figure_captions` over its Markdown cells), by name;
    ValueError when there is no such notebook."""
    path = Path(book) / f"{chapter}.ipynb"
    if not path.exists():
        raise ValueError(f"no notebook {path}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return figure_captions("\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"))


def check_figures(chapter: str, figures: dict[str, Figure], render: bool = False) -> dict[str, list[str]]:
    """The figures ``chapter``'s study drew (its ``figures(ch)``), each checked (:func:`check`) with its caption
    from the notebook: the problems by figure name, in the notebook's order (the figures are closed); ValueError
    when the study's figures and the notebook's figure directives differ."""
    import matplotlib.pyplot as plt

    captions = notebook_captions(chapter)
    try:
        if sorted(figures) != sorted(captions):
            raise ValueError(f"{chapter}: the study draws {sorted(figures)} but the notebook glues {sorted(captions)}")
        return {name: check(figures[name], caption, render) for name, caption in captions.items()}
    finally:
        for fig in figures.values():
            plt.close(fig)


def check_chapter(chapter: str, directory: str | None = None, render: bool = False) -> dict[str, list[str]]:
    """Every figure of ``chapter`` as the book shows it, checked with its caption: the chapter opened as its
    notebook opens it (:func:`analysis.studies.chapter.open_chapter`, live runs at the scale of $ANALYSIS_SCALE, from the
    live-trial cache in $ANALYSIS_LIVE_CACHE when set; records from ``directory``), then :func:`check_figures`."""
    import contextlib
    import io


    study = get_study(chapter)
    with contextlib.redirect_stdout(io.StringIO()):  # the chapter prints its provenance
        ch = open_chapter(chapter, study.TITLE, *study.EXPERIMENTS, directory=directory)
        figures = dict(study.figures(ch))
    return check_figures(chapter, figures, render)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m analysis.studies.figure_check [chapter ...]``: check every figure of the chapters (default: all, in the
    book's order) at smoke scale against the repository's records; print each problem, then the counts by chapter
    and kind; exit status 1 when there is a problem."""
    import argparse
    import os


    parser = argparse.ArgumentParser(prog="python -m analysis.studies.figure_check", description=main.__doc__)
    parser.add_argument("chapters", nargs="*", help="chapters to check (default: every chapter of _toc.yml)")
    parser.add_argument("--render", action="store_true", help="rasterise each figure (Agg) instead of a layout pass")
    args = parser.parse_args(argv)
    toc = (BOOK.parent / "_toc.yml").read_text(encoding="utf-8")
    order = re.findall(r"file: book/(\w+)", toc)
    chapters = args.chapters or [c for c in order if c in STUDIES]
    os.environ.setdefault("ANALYSIS_SCALE", "smoke")
    total: Counter[str] = Counter()
    number = 0
    for chapter in chapters:
        counts: Counter[str] = Counter()
        for name, problems in check_chapter(chapter, str(BOOK.parent / "results"), args.render).items():
            number += 1
            for p in problems:
                print(f"{chapter} {name} (fig. {number}): {p}")
            counts += kinds(problems)
        total += counts
        print(f"== {chapter}: {sum(counts.values())} {dict(sorted(counts.items()))}")
    print(f"== total: {sum(total.values())} {dict(sorted(total.items()))}")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())

