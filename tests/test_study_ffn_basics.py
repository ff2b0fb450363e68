"""The feed-forward chapter's findings at smoke scale: the properties its prose states as facts."""

import pytest

from analysis.studies.ffn_basics.experiments import ffn_basics as fb


@pytest.fixture(scope="module")
def data():
    return fb.run(fb.CONFIGS["smoke"])


def test_the_ffn_counts_8h2_in_weights_and_more_with_biases(data):
    p = data["params"]
    assert p["torch_ffn_weights"] == 8 * p["d"] ** 2
    assert p["torch_ffn_with_bias"] == 8 * p["d"] ** 2 + 5 * p["d"]  # b1 (4H) and b2 (H)


def test_swiglu_matches_the_ffn_at_8d_over_3_not_2d_over_3(data):
    p = data["params"]
    assert p["matching_hidden"] == pytest.approx(8 * p["d"] / 3)
    assert p["notes_swiglu_weights"] / p["torch_ffn_weights"] == pytest.approx(0.25, rel=0.01)  # r = 2d/3


def test_the_notes_gelu_is_off_and_torch_computes_x_phi(data):
    act = data["activations"]
    assert act["notes"]["max_abs"] > 0.1  # erf from 1: off by a visible amount
    assert act["notes_slope_at_8"] != pytest.approx(1.0, abs=0.05)
    assert act["torch_gelu_gap"] < 1e-12 and act["torch_silu_gap"] < 1e-12
    assert act["tanh"]["max_abs"] < act["sigmoid"]["max_abs"] < 0.05  # the tanh form is the closer one


def test_the_merge_is_exact_forward_and_not_under_training(data):
    m = data["merge"]
    assert m["forward_gap"] < 1e-12
    assert m["step_gap"] > 0.01
    assert m["params_merged"] < m["params_factored"]


def test_torch_drops_in_more_places_than_the_paper(data):
    dr = data["dropout"]
    assert dr["paper_residual"] == 6 * 2 + 6 * 3 and dr["paper_total"] == dr["paper_residual"] + 2
    assert dr["torch_total"] == dr["torch_modules"] + dr["torch_attention"] > dr["paper_total"]


def test_the_dropout_verdict_says_what_was_counted_against_what_was_predicted():
    from analysis.core.verify import Claim
    from analysis.studies.ffn_basics import verdict_reason

    def sites(measured):
        return Claim("dropout-sites", "30 sites", "paper", 30.0, measured, 0.0, 0.0, "counted exactly",
                     unit="sites")

    assert verdict_reason(sites(30.0)) == "holds"
    assert verdict_reason(sites(62.0)) == "fails, with 62 sites where it predicts 30"


def test_every_claim_names_its_rival_and_the_rivals_are_the_slips_the_notes_invite(data):
    import math

    claims = {c.key: c for c in fb.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values())
    d = data["params"]["d"]
    # erf from 1 is erf(x) - erf(1): GELU is off by x erf(1)/2, 4 erf(1) at |x| = 8
    assert claims["gelu-notes"].alternative == pytest.approx(8 * math.erf(1) / 2)
    assert claims["ffn-8h2"].alternative == 8 * d * d + 5 * d  # the count with both biases
    assert claims["swiglu-width"].alternative == pytest.approx(8 * d / 3)
    assert claims["swiglu-merge"].alternative > 1e-3  # the merge with W1's ReLU kept is no identity


def test_the_summary_sentences_follow_the_claims_verdicts():
    from analysis.studies import ffn_basics as fbs

    assert fbs.count_sentence("fails", "holds") == (
        "The FFN's 8H² counts its weights only: with its biases it has 8H² + 5H parameters.")
    assert fbs.count_sentence("holds", "") == "The FFN has 8H² parameters, biases included."
    assert fbs.count_sentence("fails", "fails") == (
        "The notes' count of 8H² parameters fails, and the count with biases, 8H² + 5H, fails.")
    assert fbs.gelu_sentence("fails") == "The notes' GELU has a wrong integration limit."
    assert fbs.gelu_sentence("holds") == "The notes' GELU is GELU."
    assert fbs.gelu_sentence("inconclusive") == "The check of the notes' GELU is inconclusive."
    assert fbs.width_sentence("fails", "holds") == (
        "Their SwiGLU width assumes a d×d FFN that the Transformer does not have: r = 8d/3 is the matching width.")
    assert fbs.width_sentence("holds", "") == "Their SwiGLU width r = 2d/3 matches the FFN's parameters."
    assert fbs.width_sentence("fails", "fails") == "Their SwiGLU width r = 2d/3 fails, and r = 8d/3 fails."


def test_the_merge_and_dropout_clauses_follow_the_claims_verdicts():
    from analysis.studies import ffn_basics as fbs

    assert fbs.merge_predicate("holds", "fails") == "holds for the function but not for training"
    assert fbs.merge_predicate("holds", "holds") == "holds for the function and for training"
    assert fbs.merge_predicate("fails", "inconclusive") == "fails for the function and is inconclusive for training"
    assert fbs.sites_clause("fails", 60, 30) == "PyTorch's module drops in more places"
    assert fbs.sites_clause("fails", 20, 30) == "PyTorch's module drops in fewer places"
    assert fbs.sites_clause("holds", 30, 30) == "PyTorch's module drops in the same places"
    assert fbs.sites_clause("inconclusive", 30, 30) == (
        "the claim that PyTorch's module drops in the same places is inconclusive")


def test_the_weights_relation_says_exactly_only_when_the_count_is_8h2():
    from analysis.studies.ffn_basics import weights_relation

    assert weights_relation(8 * 64 * 64, 64) == "exactly"
    assert weights_relation(8 * 64 * 64 + 64, 64) == "1.0020 times"
    with pytest.raises(ValueError, match="d must be >= 1"):
        weights_relation(1, 0)
