import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from analysis import figures
from analysis.experiments import entropy_bound, entropy_lm


@pytest.fixture(scope="module")
def lm_data():
    return entropy_lm.run(entropy_lm.CONFIGS["smoke"], progress=False)


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
        figures.entropy_curves(entropy_bound.NOTES_CLASSES, entropy_bound.NOTES_P_RANGE),
        figures.bound_sampling(bound["sampled"]),
        figures.lm_clouds([("live", lm_data), ("again", lm_data)]),
        figures.markov_curve(lm_data["markov"], "title"),
    ]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert_labelled(fig)
    assert len(figs[2].axes) == 2 * len(entropy_lm.CONFIGS["smoke"].snapshots) + 1  # panels and a colour bar
