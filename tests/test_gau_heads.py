"""Multi-head GAU at equal parameters: one head is GAU itself, h heads equal a dense per-head computation."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from analysis.models.gau import GAU, GAUConfig, rope
from analysis.models.gau_heads import MultiHeadGAU, with_heads
from analysis.models.lm import LanguageModel, ModelConfig


def _dense_heads(layer: MultiHeadGAU, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The layer's output computed head by head with explicit n x n matrices."""
    cfg, h = layer.cfg, layer.heads
    b, n, _ = x.shape
    u, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    z = F.silu(layer.to_z(x))
    v = v * mask[..., None]
    q, k = layer.qk(z)
    pos = torch.arange(n)
    q, k = rope(q, pos), rope(k, pos)
    s, e = cfg.s, cfg.e
    heads = []
    for j in range(h):
        idx = torch.tensor([2 * (m * h + j) + r for m in range(s // (2 * h)) for r in (0, 1)])
        allowed = mask[:, None, :].expand(b, n, n)
        if cfg.causal:
            allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
        keys = allowed.sum(-1, keepdim=True).clamp(min=1).to(x.dtype)
        a = F.relu(q[..., idx] @ k[..., idx].transpose(-1, -2)) ** 2 / (keys * (s // h)) * allowed
        heads.append(a @ v[..., j * e // h:(j + 1) * e // h])
    return layer.to_out(u * torch.cat(heads, dim=-1))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads", [2, 4])
def test_heads_equal_a_dense_per_head_computation(causal, heads):
    torch.manual_seed(0)
    cfg = GAUConfig(d=12, e=16, s=8, causal=causal, rope=True, query_block=3)
    layer = MultiHeadGAU(cfg, heads).double()
    with torch.no_grad():
        layer.qk.beta.normal_()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False
    torch.testing.assert_close(layer(x, mask), _dense_heads(layer, x, mask), rtol=1e-12, atol=1e-12)


def test_one_head_is_gau_and_parameters_do_not_change_with_heads():
    torch.manual_seed(1)
    cfg = GAUConfig(d=12, e=16, s=8, causal=True, rope=True)
    gau, one = GAU(cfg), MultiHeadGAU(cfg, 1)
    one.load_state_dict(gau.state_dict())
    x = torch.randn(2, 5, 12)
    assert torch.equal(gau(x), one(x))
    assert {MultiHeadGAU(cfg, h).num_parameters() for h in (1, 2, 4)} == {gau.num_parameters()}


def test_several_heads_differ_from_one():
    torch.manual_seed(2)
    cfg = GAUConfig(d=12, e=16, s=8, causal=True, rope=True)
    one, four = MultiHeadGAU(cfg, 1), MultiHeadGAU(cfg, 4)
    four.load_state_dict(one.state_dict())
    x = torch.randn(2, 5, 12)
    assert not torch.allclose(one(x), four(x))


def test_with_heads_replaces_every_gau_of_a_model():
    torch.manual_seed(3)
    model = LanguageModel(ModelConfig(vocab=32, d=16, e=32, s=16, layers=2, block="gau", residual="post", ctx=8))
    before = model.num_parameters()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    with_heads(model, 4)
    assert sum(isinstance(m, MultiHeadGAU) for m in model.modules()) == 2 and model.num_parameters() == before
    after = model.state_dict()
    assert after.keys() == weights.keys() and all(torch.equal(after[k], weights[k]) for k in weights)
    assert model(torch.randint(0, 32, (2, 8))).shape == (2, 8, 32)
    assert with_heads(model, 1) is model
    with pytest.raises(ValueError, match="no GAU sublayer"):
        with_heads(torch.nn.Linear(2, 2), 2)


def test_invalid_heads_are_refused():
    cfg = GAUConfig(d=12, e=16, s=8)
    for heads in (0, 3, True):
        with pytest.raises(ValueError, match="heads must"):
            MultiHeadGAU(cfg, heads)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lean path"):
        MultiHeadGAU(GAUConfig(d=12, e=16, s=8, chunk=4), 2)


def test_every_claim_of_a_smoke_run_names_its_effect_one_validation_interval_of_training():
    from analysis.core.runner import run_experiment
    from analysis.studies.gau_trained.experiments import gau_heads as gh

    data = run_experiment("gau-heads", gh.CONFIGS["smoke"])
    claims = gh.claims(data, "smoke")
    assert claims and all(c.has_rival for c in claims)
    ones = [r["curve"] for r in data["runs"] if r["variant"] == "heads1"]
    gain = sum(c[-2][1] - c[-1][1] for c in ones) / len(ones)  # what the last validation interval buys one head
    assert all(c.effect == pytest.approx(gain) for c in claims)
