"""deep-gau-init: stacks at initialisation, at smoke sizes."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from analysis.core.trial import Trial
from analysis.studies.deep_gau.experiments import deep_gau_init as dgi


@pytest.fixture(scope="module")
def data() -> dict:
    cfg = dgi.CONFIGS["smoke"]
    return dgi.assemble(cfg, [dgi.run_trial(cfg, t, torch.device("cpu")) for t in dgi.trials(cfg)], "cpu")


def test_one_layer_stack_changes_its_input_by_eps(data):
    for r in data["runs"]:
        if r["depth"] == 1:
            assert r["dev"] == r["eps"] > 0


def test_halving_the_weights_shrinks_a_layer_by_about_two_to_the_seventh(data):
    """log2 of the eps ratio near -7 (the source's lambda^7; smoke sizes, so within a factor 4)."""
    s = dgi.summary(data)
    assert abs(math.log2(s["0.5"]["eps"] / s["1"]["eps"]) + 7) < 2


def test_a_trial_reproduces_and_scales_weights_by_lambda():
    cfg = dgi.CONFIGS["smoke"]
    t = Trial("x", 3, {"lambda": 0.5, "depth": 2, "seed": 0})
    a, b = dgi.run_trial(cfg, t, torch.device("cpu")), dgi.run_trial(cfg, t, torch.device("cpu"))
    assert a == b
    full = dgi.run_trial(cfg, dataclasses.replace(t, params={"lambda": 1.0, "depth": 2, "seed": 0}),
                         torch.device("cpu"))
    assert full.eps > 10 * a.eps and a.lam == 0.5


def test_claims_and_config_checks(data):
    keys = {c.key for c in dgi.claims(data, "smoke")}
    assert keys == {"eps-lambda7", "random-walk", "ten-thousand-near-identity", "ten-thousand-gradient"}
    assert all(c.detectable is not None for c in dgi.claims(data, "smoke"))
    with pytest.raises(ValueError, match="depths must include 1"):
        dataclasses.replace(dgi.CONFIGS["smoke"], depths=(10,))
    with pytest.raises(ValueError, match="lambdas must be in"):
        dataclasses.replace(dgi.CONFIGS["smoke"], lambdas=(2.0,))
