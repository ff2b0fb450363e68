"""The GAU-at-initialisation study's decisions: the grid's fit, the exponent near lambda = 1, and its printed
tables."""

from __future__ import annotations

import itertools
import math

import pytest

from analysis.core.stats import Estimate
from analysis.studies.gau_init import (
    estimate_text,
    exponent_near_one,
    grid_fit,
    moments_table,
    position_rms,
    position_table,
    reference_table,
    verdict_phrase,
    verdict_words,
)
from analysis.studies.gau_init.experiments.gau_init import entry_ratio
from analysis.studies.gau_init.figures import interval_multiple
from analysis.core.verify import Claim


def _point(rms: float, pred: float, n: int = 64, s: int = 32, d: int = 256, init: str = "lecun") -> dict:
    return {"rms": rms, "pred_rms_corrected": pred, "n": n, "s": s, "d": d, "init": init}


def test_grid_fit_median_share_and_worst():
    grid = [_point(1.0, 1.0, n=1), _point(1.5, 1.0, n=2), _point(0.9, 1.0, n=3), _point(3.0, 1.0, n=4),
            _point(1.1, 1.0, n=5)]
    fit = grid_fit(grid)
    assert fit["median"] == pytest.approx(1.1)  # ratios 0.9, 1.0, 1.1, 1.5, 3.0
    assert fit["share_20"] == pytest.approx(3 / 5)
    assert fit["worst_ratio"] == pytest.approx(3.0) and fit["worst"]["n"] == 4


def test_grid_fit_takes_the_upper_median_of_an_even_count():
    fit = grid_fit([_point(q, 1.0) for q in (0.5, 1.0, 2.0, 4.0)])
    assert fit["median"] == 2.0


def test_grid_fit_counts_a_ratio_below_one_as_far_as_its_inverse():
    fit = grid_fit([_point(0.2, 1.0, n=1), _point(3.0, 1.0, n=2)])  # |ln 0.2| > |ln 3|
    assert fit["worst"]["n"] == 1 and fit["worst_ratio"] == pytest.approx(0.2)


def test_grid_fit_on_a_tie_takes_the_smaller_ratio_and_keeps_the_20_percent_edges():
    fit = grid_fit([_point(2.0, 1.0, n=2), _point(0.5, 1.0, n=1), _point(1.2, 1.0, n=3), _point(0.8, 1.0, n=4)])
    assert fit["worst"]["n"] == 1  # 0.5 and 2 are equally far in log; equal ratios do not compare the rows
    assert fit["share_20"] == pytest.approx(0.5)  # 0.8 and 1.2 are within 20%
    assert grid_fit([_point(2.0, 1.0, n=1), _point(2.0, 1.0, n=2)])["worst"]["n"] == 1


def test_grid_fit_refuses_an_empty_grid():
    with pytest.raises(ValueError, match="no point"):
        grid_fit([])


def _sweep(lams: list[float], powers: list[float]) -> dict:
    """A sweep whose RMS grows like lambda^p between neighbours, p from ``powers``."""
    rms = [1.0]
    for (a, b), p in zip(itertools.pairwise(lams), powers):
        rms.append(rms[-1] * (b / a) ** p)
    return {"rows": [{"lambda": lam, "rms": r} for lam, r in zip(lams, rms)]}


def test_exponent_near_one_picks_the_midpoint_nearest_one():
    at_1, lo, hi = exponent_near_one(_sweep([0.25, 0.5, 1.0, 2.0, 4.0], [5.0, 9.0, 8.0, 7.0]))
    # midpoints sqrt(0.125)=0.35, sqrt(0.5)=0.71, sqrt(2)=1.41, sqrt(8)=2.83: 0.71 is nearest 1
    assert at_1 == pytest.approx(9.0) and lo == pytest.approx(5.0) and hi == pytest.approx(9.0)


def test_exponent_near_one_takes_the_first_on_a_tie_and_needs_two_lambdas():
    at_1, _, _ = exponent_near_one(_sweep([0.5, 1.0, 1.5], [6.0, 8.0]))
    assert at_1 == pytest.approx(8.0)  # midpoints 0.707 and 1.225: the second is nearer 1
    at_1, _, _ = exponent_near_one(_sweep([0.25, 1.0, 2.25], [6.0, 8.0]))
    assert at_1 == pytest.approx(6.0)  # midpoints 0.5 and 1.5, equally near 1: the first
    with pytest.raises(ValueError, match="two lambdas"):
        exponent_near_one(_sweep([1.0], []))


def test_moments_table_prints_each_activation():
    text = moments_table({"swish": {"mean": 0.2066, "second_moment": 0.3558},
                          "relu": {"mean": 0.4, "second_moment": 0.5}})
    lines = text.splitlines()
    assert lines[0].split() == ["activation", "mean", "mu", "second", "moment", "nu^2"]
    assert lines[1].split() == ["swish", "0.206600000000000", "0.355800000000000"] and lines[2].startswith("relu ")


def test_reference_table_states_the_point_and_both_terms():
    ref = {"d": 768, "e": 1536, "s": 128, "n": 512, "a_diag": 0.03353, "pred_a_diag_source": 0.03164,
           "pred_a_diag": 0.03319, "a_offdiag": 0.000731, "pred_a_offdiag_source": 0.000456, "pred_a_offdiag": 0.00071,
           "row_offdiag_mass": 0.373, "pred_row_offdiag_mass": 0.363, "av_diag_rms": 0.022, "av_offdiag_rms": 0.0845}
    lines = reference_table("run", ref).splitlines()
    assert lines[0] == "run: d = 768, e = 1536, s = 128, n = 512, LeCun"
    assert lines[1] == "  A_ii : measured 0.03353   source s nu^4/n 0.03164   corrected 0.03319"
    assert lines[2] == "  A_ij : measured 0.000731   source s mu^4/n 0.000456   corrected 0.00071"
    assert lines[3] == "  A_ii / A_ij : measured 46   source nu^4/mu^4 69"
    assert lines[4] == "  row mass c = sum_(j != i) A_ij : measured 0.373   corrected 0.363"
    assert lines[5] == "  RMS of A_ii V_i 0.0220   vs   RMS of sum_(j != i) A_ij V_j 0.0845"


def test_entry_ratio_is_the_ratio_of_the_entries_the_table_shows():
    ref = {"a_diag": 0.03353, "a_offdiag": 0.000731, "pred_a_diag_source": 0.03164, "pred_a_offdiag_source": 0.000456}
    measured, source = entry_ratio(ref)
    assert measured == pytest.approx(0.03353 / 0.000731) and round(measured) == 46
    assert source == pytest.approx(0.03164 / 0.000456) and round(source) == 69
    with pytest.raises(ValueError, match="a_offdiag"):
        entry_ratio({**ref, "a_offdiag": 0.0})


def test_the_prose_states_no_entry_ratio_of_its_own():
    """The ratio of A's entries reaches the prose only as a glued fact: a written 'N times smaller' is how the
    chapter once said 69 beside a table whose entries give 46."""
    import json
    import re
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "book" / "gau_init.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert not re.search(r"\d\s+times\s+smaller", prose)
    assert re.search(r"\{glue:text\}`ref_entry_ratio`\s+times\s+smaller", prose)


def test_position_table_names_the_positions():
    text = position_table({"bidirectional": [0.1104, 0.06], "causal": [7.0172, 0.5]}, (1, 8))
    assert text.splitlines() == ["bidirectional RMS at positions 1, 8: 0.110, 0.060",
                                 "causal        RMS at positions 1, 8: 7.017, 0.500"]


def test_position_rms_is_seeded_and_causal_first_rows_are_large():
    import torch

    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    rms = position_rms(positions=(1, 16), d=32, e=64, s=16, n=16, batch=2)
    assert torch.rand(1) == before  # the caller's generator is left as it was
    assert rms == position_rms(positions=(1, 16), d=32, e=64, s=16, n=16, batch=2)
    assert list(rms) == ["bidirectional", "causal"] and all(len(v) == 2 for v in rms.values())
    assert all(math.isfinite(v) and v > 0 for v in rms["bidirectional"] + rms["causal"])
    assert rms["causal"][0] > rms["bidirectional"][0]  # row 1 of a causal layer is normalised by one key


def _claim(key: str, measured: float, corrected: float | None) -> Claim:
    return Claim(key, "s", "src", 1.0, measured, 0.1, 0.2, "basis", corrected=corrected, detectable=0.3)


def test_verdict_words_name_the_verdict_and_the_corrected_one_as_predicates():
    claims = {"a-diag": _claim("a-diag", 2.0, 2.05), "a-offdiag": _claim("a-offdiag", 1.1, None)}
    words = verdict_words(claims.__getitem__)
    assert words == {"v-a-diag": "fails", "v-a-diag-corrected": "holds", "v-a-offdiag": "holds",
                     "v-a-offdiag-corrected": ""}
    assert verdict_phrase("inconclusive") == "is inconclusive" and verdict_phrase("fails") == "fails"


def test_estimate_text_and_the_interval_multiple_of_a_seed_sd():
    assert estimate_text(Estimate(1.279, 0.0935, 3, "GAU stacks")) == "1.28 ± 0.09 (mean ± SE over 3 GAU stacks)"
    assert interval_multiple(3) == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert interval_multiple(1) == 0.0


def test_the_gau_init_sentences_follow_their_numbers():
    from analysis.studies.gau_init import branch_sentence, half_sentence, identity_verdict, premise_sentence

    assert premise_sentence(18.2, 7.0) == ("The near-identity premise holds for bidirectional GAU, whose output is 18 "
                                          "times smaller than its input, but not for the first row of a decoder, "
                                          "whose output is 7.0 times its input.")
    assert premise_sentence(18.2, 0.05).endswith("and for the first row of a decoder, whose output is 0.05 of its "
                                                 "input.")
    assert premise_sentence(0.5, 7.0).startswith("The near-identity premise fails for bidirectional GAU, whose "
                                                 "output is 2 times its input, and for")
    assert identity_verdict(3.8) == "fails: the off-diagonal terms of *AV* are 3.8 times the diagonal one"
    assert identity_verdict(0.25).startswith("holds: the off-diagonal terms of *AV* are 0.25 of")
    assert half_sentence(9.24).startswith("That is 4.7 times more than 2⁻⁷, so the paper's initialisation starts GAU "
                                          "even closer")
    assert half_sentence(6.0).startswith("That is 2.0 times less than 2⁻⁷, so the paper's initialisation starts GAU "
                                         "less close")
    assert branch_sentence(1.18).startswith("That is 118 times the source's 1%, and not because")
    assert branch_sentence(0.008) == "That is within the source's 1%, at 0.8%."
