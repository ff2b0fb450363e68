"""The book's statistics, checked on every recorded claim: no normal-quantile multiples of a standard error with few
seeds, no approximation band the source does not state, and a detectable difference on every claim measured by
training or sampling (the intervals themselves are tested in tests/test_stats.py)."""

import re
from pathlib import Path

import pytest

from analysis.site.verdict_table import recorded_claims

RESULTS = Path(__file__).resolve().parents[1] / "results"
# a bound from arithmetic, not from noise: rounding, quadrature, an exact count, a printed digit, a grid's step
DETERMINISTIC = re.compile(r"ulp|rounding|quadrature|float(16|32|64)|exact|computed to|resolves|search|truncat|"
                           r"decimal|digit|count|grid|significant figure|critical value", re.I)
NORMAL_MULTIPLE = re.compile(r"\b\d+(\.\d+)? (combined )?(bootstrap |batch |seed )?standard (error|deviation)s?\b"
                             r"|\b\d+ (SE|SD)\b", re.I)


@pytest.fixture(scope="module")
def claims():
    out = [(name, c) for name, cs in recorded_claims(RESULTS) for c in cs]
    assert len(out) > 100
    return out


def test_no_normal_multiples_of_a_standard_error(claims):
    bad = [f"{n} {c.key}: {c.tolerance_basis}" for n, c in claims
           if NORMAL_MULTIPLE.search(c.tolerance_basis) and "Student-t" not in c.tolerance_basis]
    assert bad == []


def test_an_approximation_band_only_where_the_source_states_one(claims):
    banded = [(n, c) for n, c in claims if c.approx_rel > 0]
    assert all(c.approx_words.strip() for _, c in banded)
    assert len(banded) <= 5, [f"{n} {c.key}" for n, c in banded]  # the exception, not the rule


def test_every_measured_claim_states_what_it_detects(claims):
    missing = [f"{n} {c.key}: {c.tolerance_basis}" for n, c in claims
               if c.detectable is None and (c.uncertainty > 0 or re.search(r"seed|sample|bootstrap", c.tolerance_basis,
                                                                           re.I))
               and not DETERMINISTIC.search(c.tolerance_basis)]
    assert missing == []
