"""The figure check (analysis.studies.figure_check): each of its checks fails on a figure made to have that fault and passes
the same figure without it. Every figure of the book, as its chapter shows it, is checked with its caption in
tests/test_studies.py, which opens each chapter once for its facts and figures."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from analysis.studies import figure_check as fc
from analysis.studies.plotting import log_ticks, place_legends, readable


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def kinds_of(fig, caption=None):
    return fc.kinds(fc.check(fig, caption))


def line_figure(**kw):
    fig, ax = plt.subplots(figsize=(6, 4), **kw)
    x = np.linspace(1, 10, 50)
    ax.plot(x, x, label="rising")
    ax.set_title("a panel")
    return fig, ax


# --- text -------------------------------------------------------------------------------------------------------


def test_overlapping_texts_fail_and_apart_they_pass():
    fig, ax = line_figure()
    ax.text(2, 8, "first note")
    ax.text(2, 8, "second note")
    fig.draw_without_rendering()
    problems = fc.text_problems(fig)
    assert any("overlaps" in p and "first note" in p for p in problems)
    fig, ax = line_figure()
    ax.text(2, 8, "first note")
    ax.text(2, 2, "second note")
    assert kinds_of(fig)["text"] == 0


def test_a_text_off_the_canvas_fails():
    fig, ax = line_figure()
    fig.text(0.95, 0.5, "a label that runs far past the right edge")
    problems = fc.check(fig)
    assert any(p.startswith("text:") and "leaves the canvas" in p for p in problems)
    fig, ax = line_figure(layout="constrained")
    ax.set_ylabel("a y label of ordinary length")
    assert kinds_of(fig)["text"] == 0


def test_colliding_tick_labels_fail():
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.plot([0, 1], [0, 1])
    ax.set_xticks(np.linspace(0, 1, 11), [f"label {i}" for i in range(11)])
    assert kinds_of(fig)["text"] >= 1


# --- legends ----------------------------------------------------------------------------------------------------


def top_points_figure(label="points along the top"):
    """A row of points along the top of the axes, and a legend at the upper centre, over them."""
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0, 1, 40)
    ax.plot(x, np.ones_like(x), "o", label=label)
    ax.set_ylim(0, 1.1)
    ax.legend(loc="upper center")
    return fig, ax


def test_a_legend_over_the_data_fails_and_beside_it_passes():
    fig, ax = top_points_figure()
    problems = fc.check(fig)
    assert any(p.startswith("legend:") and "covers" in p for p in problems), problems
    ax.legend(loc="lower center")
    assert kinds_of(fig)["legend"] == 0


def test_a_legend_over_a_straight_segment_fails():
    """Two vertices far apart: the segment between them is data too (sampled in display space)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([0, 1], [0.5, 0.5], label="one segment")
    ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert kinds_of(fig)["legend"] == 1


def test_a_legend_over_a_density_mesh_fails():
    fig, ax = plt.subplots(figsize=(6, 4))
    rng = np.random.default_rng(0)
    image = ax.hist2d(rng.uniform(0, 1, 5000), rng.uniform(0, 1, 5000), bins=20)[3]
    ax.plot([], [], "k-", label="a line")
    fig.colorbar(image, ax=ax, label="count")
    ax.legend(loc="center")
    assert kinds_of(fig) == {"legend": 1}


def test_a_legend_over_tick_labels_fails():
    fig, ax = line_figure()
    ax.legend(loc="center right", bbox_to_anchor=(0.1, 0.5))
    problems = fc.check(fig)
    assert any(p.startswith("legend:") and "lies over the text" in p for p in problems), problems


def test_place_legends_moves_a_covering_legend_to_free_space_or_below():
    fig, ax = top_points_figure("top")
    place_legends(fig)
    assert kinds_of(fig)["legend"] == 0
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.linspace(0, 1, 40)
    for i in range(6):  # data everywhere: no free space inside
        ax.plot(x, np.full_like(x, i / 5), "o-", label=f"row {i}")
    ax.legend()
    place_legends(fig)
    assert kinds_of(fig)["legend"] == 0 and ax.get_legend().get_bbox_to_anchor().y0 < ax.bbox.y0


# --- empty panels -----------------------------------------------------------------------------------------------


def test_a_panel_without_data_fails():
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    axes[0].plot([0, 1], [0, 1])
    assert kinds_of(fig)["empty"] == 1
    axes[1].plot([0, 1], [1, 0])
    assert kinds_of(fig)["empty"] == 0


def test_an_axes_turned_off_passes_with_a_legend_and_fails_with_nothing():
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    axes[0].plot([0, 1], [0, 1], label="line")
    axes[1].axis("off")
    assert any("turned off and holds nothing" in p for p in fc.check(fig))
    axes[1].legend(*axes[0].get_legend_handles_labels(), loc="center")
    assert kinds_of(fig)["empty"] == 0


def test_an_empty_slot_of_a_grid_fails():
    fig = plt.figure(figsize=(8, 6))
    grid = fig.add_gridspec(2, 2)
    for i, j in ((0, 0), (0, 1), (1, 0)):
        fig.add_subplot(grid[i, j]).plot([0, 1], [0, 1])
    assert any("leaves 1 slot empty (row 2 column 2)" in p for p in fc.check(fig))
    fig.axes[-1].set_subplotspec(grid[1, :])  # the last panel spans the row
    assert kinds_of(fig)["empty"] == 0


def test_readable_fills_the_free_slot_of_three_panels():
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_title("panel")
    readable(fig)
    assert kinds_of(fig, "Top left, top right, bottom.") == {}
    assert fc.panel_layout(fig).describe() == "3 panels in rows of 2, 1"


# --- log axes ---------------------------------------------------------------------------------------------------


def test_a_log_axis_with_one_labelled_tick_fails_and_log_ticks_mends_it():
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogx([0.4, 5], [0, 1])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    assert any(p.startswith("log-ticks:") and "has 1 labelled major tick" in p for p in fc.check(fig))
    log_ticks(ax.xaxis)
    assert kinds_of(fig)["log-ticks"] == 0
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert {"0.5", "1", "2", "5"} <= set(labels)


def test_log_ticks_refuses_a_linear_axis():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    with pytest.raises(ValueError, match="log axis"):
        log_ticks(ax.xaxis)


def test_shared_log_axes_are_judged_where_their_labels_are():
    fig, axes = plt.subplots(1, 2, sharey=True, figsize=(8, 3))
    for ax in axes:
        ax.semilogy([0, 1], [1, 1e4])
    assert kinds_of(fig)["log-ticks"] == 0  # the right panel's hidden labels are the left one's


# --- colour -----------------------------------------------------------------------------------------------------


def test_a_colour_mapping_without_colour_bar_fails():
    fig, ax = plt.subplots()
    image = ax.imshow(np.arange(16.0).reshape(4, 4))
    ax.set_title("image")
    assert kinds_of(fig)["colour"] == 1
    fig.colorbar(image, ax=ax, label="value")
    assert kinds_of(fig)["colour"] == 0


def test_a_scatter_coloured_by_value_needs_a_colour_bar():
    fig, ax = plt.subplots()
    ax.scatter([0, 1, 2], [0, 1, 2], c=[0.1, 0.5, 0.9])
    assert kinds_of(fig)["colour"] == 1
    fig, ax = plt.subplots()
    ax.scatter([0, 1, 2], [0, 1, 2], color="C1")  # one colour, no mapping
    assert kinds_of(fig)["colour"] == 0


def test_one_colour_bar_serves_meshes_that_share_its_norm():
    from matplotlib.colors import LogNorm

    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    norm = LogNorm(1, 100)
    meshes = [ax.pcolormesh(np.arange(1.0, 26.0).reshape(5, 5), norm=norm, cmap="Blues") for ax in axes]
    fig.colorbar(meshes[0], ax=list(axes), label="count")
    assert kinds_of(fig)["colour"] == 0
    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    meshes = [ax.pcolormesh(np.arange(1.0, 26.0).reshape(5, 5), norm=LogNorm(1, 100)) for ax in axes]
    fig.colorbar(meshes[0], ax=list(axes), label="count")
    assert kinds_of(fig)["colour"] == 1  # the second panel's own norm has no bar


# --- captions ---------------------------------------------------------------------------------------------------


def test_caption_words_leave_out_maths_roles_and_options():
    caption = (":name: fig-x\n\nTop left: $\\mathrm{left}$ {eq}`eq-right`. Bottom: the rest (right, log scale); "
               "last panel as the panels above; middle row.")
    assert fc.caption_words(caption) == ["top left", "bottom", "right", "last panel", "panels", "middle row"]


def test_middle_needs_three_panels_side_by_side():
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    assert fc.check_caption("Left: a. Middle: b. Right: c.", fig) == [
        "caption: 'middle' needs 3 panels side by side; the figure has 2 panels in rows of 2"]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    assert fc.check_caption("Left: a. Middle: b. Right: c.", fig) == []


def test_left_right_top_bottom_need_their_layout():
    fig, ax = line_figure()
    assert len(fc.check_caption("Left: a. Top: b. The last panel.", fig)) == 3
    fig, axes = plt.subplots(2, 1, figsize=(5, 6))
    for a in axes:
        a.plot([0, 1], [0, 1])
    assert fc.check_caption("Top: a. Bottom: b; panels.", fig) == []
    assert fc.check_caption("Top left: a.", fig) == [
        "caption: 'top left' needs a panel on the left of the top row; the figure has 2 panels in rows of 1, 1"]


def test_a_legend_slot_is_no_panel():
    """Three panels and a legend in the fourth slot (as readable lays them out): 'Middle' and 'Right' of three
    columns are wrong, 'bottom left' is right; a lone bottom panel spanning the row is on neither side."""
    fig = plt.figure(figsize=(8, 6))
    grid = fig.add_gridspec(2, 2)
    for i, j in ((0, 0), (0, 1), (1, 0)):
        fig.add_subplot(grid[i, j]).plot([0, 1], [0, 1], label="line")
    slot = fig.add_subplot(grid[1, 1])
    slot.axis("off")
    slot.legend(*fig.axes[0].get_legend_handles_labels())
    assert fc.check_caption("Top left, top right, bottom left.", fig) == []
    assert [p.split("'")[1] for p in fc.check_caption("Middle: b. Bottom right: c.", fig)] == ["middle",
                                                                                               "bottom right"]
    slot.remove()
    fig.axes[-1].set_subplotspec(grid[1, :])
    assert [p.split("'")[1] for p in fc.check_caption("Bottom left: c. Bottom: d.", fig)] == ["bottom left"]


# --- the module's contract --------------------------------------------------------------------------------------


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="matplotlib Figure"):
        fc.check_figure("not a figure")
    fig, _ = line_figure()
    with pytest.raises(ValueError, match="caption must be a string"):
        fc.check_caption(None, fig)
    with pytest.raises(ValueError, match="must start with one of"):
        fc.kinds(["no kind here"])
    with pytest.raises(ValueError, match="no notebook"):
        fc.notebook_captions("no_such_chapter")
    with pytest.raises(ValueError, match="glued twice"):
        fc.figure_captions("```{glue:figure} a\nx\n```\n```{glue:figure} a\ny\n```")


def test_figure_captions_drop_directive_options():
    md = "text\n```{glue:figure} fig-a\n:name: fig-a\n\nLeft: one.\nRight: two.\n```\nmore"
    assert fc.figure_captions(md) == {"fig-a": "Left: one.\nRight: two."}
