import dataclasses

import pytest
import torch

from analysis.core.trial import Trial
from analysis.tasks.data import stdlib_corpus
from analysis.training.train import TrainConfig, train_lm
from analysis.studies.gau_trained.experiments import gau_ablations as ab


def test_each_variant_changes_one_thing():
    cfg = ab.CONFIGS["cpu"]
    base = dataclasses.asdict(ab.model_config(cfg, "base"))
    for variant, field, value in (("n2", "gau_norm", "relu2_n2"), ("softmax", "gau_norm", "softmax"),
                                  ("nopos", "positions", "learned")):
        other = dataclasses.asdict(ab.model_config(cfg, variant))
        assert {k for k in base if base[k] != other[k]} == {field} and other[field] == value
    assert (cfg.s, cfg.ctx) == (128, 512)  # the source's comparison: s = 128 at length 512
    with pytest.raises(ValueError, match="variant must be one of"):
        ab.model_config(cfg, "mqa")


def test_no_positions_means_a_zero_frozen_table_that_stays_zero():
    cfg = ab.CONFIGS["smoke"]
    model = ab.build(cfg, "nopos")
    assert model.pos is not None and not model.pos.weight.requires_grad
    train_lm(model, stdlib_corpus().train, TrainConfig(steps=3, batch=2, lr=1e-2, warmup=1, seed=0), cfg.ctx,
             torch.device("cpu"), progress=False)
    assert torch.count_nonzero(model.pos.weight) == 0
    out = ab.run_trial(cfg, Trial("nopos.seed0", 0, {"variant": "nopos", "seed": 0}), torch.device("cpu"))
    assert out.frozen == cfg.ctx * cfg.d
    assert ab.build(cfg, "base").pos is None  # RoPE: no table


def _data(losses):
    runs = [{"variant": v, "seed": s, "val_loss": loss, "curve": [[5, loss + 0.1], [10, loss]], "diverged_at": None,
             "parameters": 10, "frozen": 0} for (v, s), loss in losses.items()]
    return {"ctx": 512, "s": 128, "steps": 10, "runs": runs}


def test_gaps_are_paired_by_seed_and_the_claims_decide_by_t():
    # base beats n2 by 0.10 +- a little on every seed: shown; softmax equal; nopos worse by a varying amount
    losses = {}
    for s, noise in enumerate((0.0, 0.01, -0.01, 0.005)):
        losses[("base", s)] = 2.0 + noise
        losses[("n2", s)] = 2.1 + noise + 0.002 * s
        losses[("softmax", s)] = 2.0 + noise + (0.001 if s % 2 else -0.001)
        losses[("nopos", s)] = 2.0 + noise + (0.3, -0.2, 0.25, -0.25)[s]
    data = _data(losses)
    g = ab.summary(data)["gaps"]
    assert g["n2"]["end"].value == pytest.approx(-0.103) and g["n2"]["end"].n == 4  # base - n2, paired
    assert g["n2"]["drift"] == pytest.approx(0.0)
    verdicts = {c.key: c.verdict for c in ab.claims(data, "test")}
    assert verdicts == {"ns-beats-n2": "holds", "relu2-not-worse-than-softmax": "holds",
                        "rope-helps-gau": "inconclusive"}
    # 'not worse' must exclude a loss as large as the 1/n^2 scaling costs; the directional claims need no more
    claims = {c.key: c for c in ab.claims(data, "test")}
    assert claims["relu2-not-worse-than-softmax"].effect == pytest.approx(0.103)
    assert all(c.has_rival for c in claims.values())
    for c in ab.claims(data, "test"):
        assert c.detectable is not None and "3 paired seeds" not in c.tolerance_basis
        assert "4 paired seeds (3 df)" in c.tolerance_basis


def test_a_diverged_run_drops_its_seed_from_the_pair():
    losses = {(v, s): 2.0 + 0.01 * s for v in ab.VARIANTS for s in range(3)}
    data = _data(losses)
    data["runs"][0]["diverged_at"] = 7  # base, seed 0
    assert ab.gap(data, "base", "n2").n == 2


def test_every_claim_of_a_smoke_run_names_its_rival():
    from analysis.core.runner import run_experiment

    data = run_experiment("gau-ablations", ab.CONFIGS["smoke"])
    claims = {c.key: c for c in ab.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values())
    assert claims["relu2-not-worse-than-softmax"].effect == pytest.approx(abs(ab.summary(data)["gaps"]["n2"]["end"].value))
