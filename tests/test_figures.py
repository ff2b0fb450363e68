import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from analysis.core.runner import run_experiment
from analysis.studies.entropy.experiments import entropy_bound, entropy_lm
from analysis.studies.entropy.figures import (architecture_clouds, bound_sampling, entropy_curves, lm_clouds,
                                              markov_curve)


@pytest.fixture(scope="module")
def lm_data():
    return run_experiment("entropy-lm", entropy_lm.CONFIGS["smoke"])


def assert_labelled(fig: Figure) -> None:
    colourbars = [ax for ax in fig.axes if hasattr(ax, "_colorbar")]
    panels = [ax for ax in fig.axes if ax not in colourbars and ax.has_data()]
    assert panels
    for ax in panels:
        assert ax.get_xlabel(), "every panel needs an x label with units"
        assert ax.get_title(), "every panel needs a title"
    assert any(ax.get_ylabel() for ax in panels)
    for ax in colourbars:
        assert ax.get_ylabel() or ax.get_xlabel(), "a colour bar needs a label"


def test_every_figure_is_labelled(lm_data):
    bound = entropy_bound.run(entropy_bound.CONFIGS["smoke"])
    figs = [
        entropy_curves(entropy_bound.NOTES_CLASSES, entropy_bound.NOTES_P_RANGE),
        bound_sampling(bound["sampled"]),
        lm_clouds([("live", lm_data), ("again", lm_data)]),
        markov_curve(lm_data["markov"], "title"),
        architecture_clouds(lm_data),
    ]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert_labelled(fig)
    assert len(figs[2].axes) == 2 * len(entropy_lm.CONFIGS["smoke"].snapshots) + 1  # panels and a colour bar


def test_readable_reflows_wide_grids_and_raises_small_text():
    """A row of three panels becomes two columns; every text, tick labels included, reaches 12 px at the page's
    column width; a crowded legend moves into the free slot."""
    import matplotlib.pyplot as plt

    from analysis.studies.plotting import COLUMN_PX, MIN_TEXT_PX, readable

    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    for i in range(8):
        axes[0].plot([0, 1], [i, i], label=f"line {i}")
    axes[0].legend(fontsize=6)
    axes[1].set_title("tiny", fontsize=5)
    readable(fig)
    assert fig.get_figwidth() == 12.0
    positions = sorted((round(ax.get_position().x0, 1), -round(ax.get_position().y0, 1)) for ax in axes)
    assert len({x for x, _ in positions}) == 2 and len({y for _, y in positions}) == 2
    assert axes[0].get_legend() is None  # moved to the free slot
    min_pt = MIN_TEXT_PX * 12.0 * 72 / COLUMN_PX
    fig.canvas.draw()
    assert axes[1].title.get_fontsize() >= min_pt - 1e-9
    assert all(t.get_fontsize() >= min_pt - 1e-9 for ax in axes for t in ax.get_xticklabels())
    plt.close(fig)


def test_the_book_style_is_one_file():
    from analysis.studies.plotting import STYLE, STYLE_FILE

    assert STYLE_FILE.name == "book.mplstyle" and STYLE_FILE.exists()
    assert STYLE["axes.grid"] is True and STYLE["font.size"] == 12.0 and STYLE["grid.alpha"] == 0.3


def test_typeset_gives_mathjax_markdown():
    from analysis.studies.chapter import typeset

    md = typeset("sqrt(2)/(2*K**(1/4))").data
    assert md.startswith('<span class="math') and "\\\\(" in md and "\\\\frac" in md


def test_a_figure_on_a_phone_keeps_its_text_at_nine_pixels():
    """Every figure's text is at least MIN_TEXT_PX at the 690-pixel column; on a phone the stylesheet keeps a figure
    PHONE_FIGURE_PX wide (scrolling in its box), so its smallest text is at least 9 px there, and the rule that
    does it is in the stylesheet the book ships."""
    import re
    from pathlib import Path

    from analysis.studies.plotting import COLUMN_PX, MIN_TEXT_PX, PHONE_FIGURE_PX, PHONE_MIN_TEXT_PX

    assert MIN_TEXT_PX * PHONE_FIGURE_PX / COLUMN_PX >= PHONE_MIN_TEXT_PX == 9
    css = (Path(__file__).resolve().parent.parent / "_static" / "book.css").read_text()
    phone = css[css.index("@media (max-width: 640px)"):]
    assert re.search(rf"min-width:\s*{PHONE_FIGURE_PX}px", phone) and "overflow-x: auto" in phone
