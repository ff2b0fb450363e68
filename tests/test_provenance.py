"""Every recorded claim's provenance is the one its source deserves: the five sources' claims are counted apart
from the book's own targets, the checks of other software and other papers."""

import re
from collections import Counter

import pytest

from analysis.core.results import REPO_ROOT
from analysis.site.verdict_table import recorded_claims

RESULTS = REPO_ROOT / "results"  # the checked-in records (the tests' default folder is empty)

# a paper is named by its authors and year; a source string that names none of the five texts, the book or a piece
# of software and is no citation is a new kind of source, which the provenance rule must learn first
CITATION = re.compile(r"^[A-Z][\w-]+( et al\.| and [A-Z][\w-]+)? \d{4}\b")


@pytest.fixture(scope="module")
def claims():
    return {(name, c.key): c for name, cs in recorded_claims(RESULTS) for c in cs}


def test_every_claim_counted_as_another_paper_cites_one(claims):
    papers = {c.source for c in claims.values() if c.origin == "paper"}
    assert papers and all(CITATION.match(s) for s in papers), sorted(s for s in papers if not CITATION.match(s))


def test_a_check_of_pytorch_is_not_a_failure_of_the_sources(claims):
    """ffn_basics says dropout-sites fails on PyTorch's module, not on the notes: it is counted as a check of other
    software."""
    dropout = claims[("ffn-basics.cpu", "dropout-sites")]
    assert dropout.verdict == "fails" and dropout.origin == "software"


def test_each_tally_holds_claims(claims):
    counts = Counter(c.origin for c in claims.values())
    assert set(counts) == {"source", "book", "software", "paper"}
    assert counts["source"] > sum(n for k, n in counts.items() if k != "source")
