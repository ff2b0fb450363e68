"""One rule for every claim: it names a rival, and a pass says something only when the run tells the prediction from
the rival (its detectable difference below the gap between them)."""

import pytest

from analysis.core.results import REPO_ROOT
from analysis.site.verdict_table import recorded_claims
from analysis.core.verify import DIRECTIONAL

RESULTS = REPO_ROOT / "results"  # the checked-in records (the tests' default folder is empty)


@pytest.fixture(scope="module")
def claims():
    return [(name, c) for name, cs in recorded_claims(RESULTS) for c in cs]


def test_every_recorded_claim_names_a_rival_and_what_its_run_detects(claims):
    missing = [(name, c.key) for name, c in claims if not c.has_rival]
    assert missing == []
    assert len({name.split(".")[0] for name, _ in claims}) >= 20  # the rule reads every experiment's records


def test_no_claim_passes_without_telling_its_rival_apart(claims):
    """deep_gau's lambda^7 once held while its run detected 2.25 and the rival lay 2.24 away."""
    passing = [(name, c) for name, c in claims if c.verdict in ("holds", "holds approximately")]
    told = [(name, c.key, c.detects, c.rival_gap) for name, c in passing
            if c.kind not in DIRECTIONAL and c.rival_gap is not None and c.detects > c.rival_gap]
    assert told == []
    assert any(c.rival_gap is not None for _, c in passing)  # the rule has claims to apply to


def test_a_power_law_names_the_other_law():
    """7 against the exponent measured or derived elsewhere; linear against quadratic."""
    rivals = {(name.split(".")[0], c.key): c.alternative for name, c in claims_of(("gau-init", "deep-gau-init",
                                                                                     "flash-bench"))}
    assert rivals[("gau-init", "lambda7")] > 7 and rivals[("gau-init", "lambda7-half")] > 7
    assert rivals[("deep-gau-init", "eps-lambda7")] < -7  # log2 of the ratio: -p
    assert rivals[("flash-bench", "flash-linear-time")] == 2.0


def claims_of(names):
    return [(name, c) for name, cs in recorded_claims(RESULTS) for c in cs if name.split(".")[0] in names]
