"""Helpers of the Transformer-notes experiments: head symmetry, decoding, grouped sublayers, counts, claims."""

from __future__ import annotations

import pytest
import torch

from analysis.studies.attention_basics.experiments import attention_basics as ab
from analysis.studies.ffn_basics.experiments import ffn_basics as fb
from analysis.studies.norms_depth.experiments import norms_depth as nd
from analysis.models.lm import LanguageModel, ModelConfig


def _model(**kw: object) -> LanguageModel:
    cfg = dict(d=32, layers=2, block="transformer", residual="pre", heads=4, ctx=16)
    cfg.update(kw)
    torch.manual_seed(0)
    return LanguageModel(ModelConfig(**cfg))  # type: ignore[arg-type]


def test_identical_heads_have_zero_spread_and_random_heads_do_not() -> None:
    model = _model()
    assert ab.head_spread(model) > 0.5
    ab.make_heads_identical(model)
    assert ab.head_spread(model) == 0.0
    ab.make_heads_identical(model, perturbation=1e-6)
    assert 0 < ab.head_spread(model) < 1e-5


def test_identical_heads_give_identical_head_outputs() -> None:
    model = _model()
    ab.make_heads_identical(model)
    att = model.attention_layers()[0]
    x = torch.randn(2, 8, 32)
    q, k, v = att.qkv(x).split(32, dim=-1)
    for t in (q, k, v):
        heads = t.view(2, 8, 4, 8)
        assert torch.equal(heads[:, :, 0], heads[:, :, 3])


def test_attention_dropout_only_in_training() -> None:
    model = _model(attn_dropout=0.5)
    idx = torch.randint(0, 256, (2, 16))
    model.eval()
    assert torch.equal(model(idx), model(idx))
    model.train()
    assert not torch.equal(model(idx), model(idx))
    with pytest.raises(ValueError, match="attn_dropout"):
        ModelConfig(attn_dropout=1.0)


@pytest.mark.parametrize("residual", ["post", "pre", "sandwich", "deepnorm"])
def test_grouped_forward(residual: str) -> None:
    model = _model(residual=residual, layers=3).eval()
    idx = torch.randint(0, 256, (2, 16))
    with torch.no_grad():
        assert torch.allclose(model(idx, group=1), model(idx), atol=1e-6)  # type: ignore[arg-type]
        wide = model(idx, group=2)
        assert not torch.allclose(wide, model(idx), atol=1e-3)  # type: ignore[arg-type]
        # one group of all sublayers: every branch reads the embedding
        x = model.embed(idx)
        out = x
        for layer in model.sublayers:
            out = layer(out, branch_input=x)
        assert torch.allclose(model(idx, group=len(model.sublayers)), torch.nn.functional.linear(  # type: ignore[arg-type]
            model.final_norm(out), model.embed.weight), atol=1e-6)
    with pytest.raises(ValueError, match="group"):
        model(idx, group=0)


def test_decoding_gap_per_token_and_mixing() -> None:
    idx = torch.randint(0, 256, (2, 10))
    model = _model(residual="post").double().eval()
    assert nd.decoding_gap(model, idx) < 1e-13
    for layer in model.sublayers:
        layer.norm = nd.SequenceNorm()  # type: ignore[union-attr]
    assert nd.decoding_gap(model, idx) > 1e-3


def test_llama_rms_norm_matches_torch() -> None:
    x = torch.randn(3, 16) * 5
    w = torch.rand(16)
    ref = torch.nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ref.weight.copy_(w)
    assert torch.allclose(nd.llama_rms_norm(x, w), ref(x), atol=1e-6)


def test_slope_recovers_a_power_law() -> None:
    rows = [{"depth": d, "residual": "post", "model_update": 0.1 * d**0.5 * (1 + 0.01 * s)} for d in (2, 4, 8, 16)
            for s in (-1, 1)]
    s, se = nd.slope(rows, "post")
    assert s == pytest.approx(0.5, abs=0.01) and se < 0.01


def test_dropout_sites_counts() -> None:
    out = fb.dropout_sites(layers=2)
    assert out["paper_residual"] == 10 and out["paper_total"] == 12
    # PyTorch: 3 nn.Dropout per encoder layer, 4 per decoder layer; attention-weight dropout in 3 MHA per pair
    assert out["torch_modules"] == 2 * 3 + 2 * 4
    assert out["torch_attention"] == 2 * 1 + 2 * 2


def test_ffn_smoke_claims() -> None:
    data = fb.run(fb.CONFIGS["smoke"])
    claims = {c.key: c for c in fb.claims(data, "test")}
    assert claims["gelu-notes"].verdict == "fails"
    assert claims["gelu-torch"].verdict == "holds"
    assert claims["swiglu-width"].verdict == "fails"
    assert claims["swiglu-width"].corrected_verdict == "holds"
    assert claims["swiglu-merge"].verdict == "holds"
    assert claims["swiglu-merge-training"].verdict == "fails"
    assert claims["ffn-8h2"].corrected_verdict == "holds"


def _recorded_attention() -> dict:
    from pathlib import Path

    from analysis.core.results import load_record

    return load_record(Path(__file__).resolve().parents[1] / "results" / "attention-basics.cpu.json").data


def test_attention_claims_use_t_over_their_units_and_a_family_interval_for_the_worst_width() -> None:
    import copy
    import math

    from analysis.core.stats import t_quantile

    data = _recorded_attention()
    claims = {c.key: c for c in ab.claims(data, "test")}
    var = claims["qk-variance"]
    # the worst of the widths, tested at 1 - 0.05 / widths over the 20 batches of pairs (19 df)
    family = 1 - 0.05 / len(data["qk"])
    assert var.tolerance == pytest.approx(t_quantile(19, family) * var.uncertainty)
    assert "Bonferroni" in var.tolerance_basis and "(19 df)" in var.tolerance_basis
    normal = claims["qk-normal"]
    assert normal.effect == pytest.approx(6 / data["qk"][0]["d"]) and normal.detectable < normal.effect
    sat = claims["unscaled-saturates"]
    assert sat.kind == "below" and sat.measured < -sat.tolerance and sat.verdict == "holds"
    for key in ("qk-variance", "qk-normal", "unscaled-saturates", "saturation-law", "scaled-entropy-flat"):
        assert claims[key].detectable is not None and math.isfinite(claims[key].detectable), key
    # a scaled median no larger than the unscaled one cannot show saturation
    flat = copy.deepcopy(data)
    top = flat["saturation"][-1]
    top["scaled"]["jac_median"] = top["unscaled"]["jac_median"]
    assert {c.key: c for c in ab.claims(flat, "test")}["unscaled-saturates"].verdict == "inconclusive"
