"""FLASH with one part of its attention removed: the arms of the local-against-global ablation."""

import pytest
import torch

from analysis.models.flash_parts import FlashParts, with_parts
from analysis.models.gau import GAU, GAUConfig
from analysis.models.lm import LanguageModel, ModelConfig


def _pair(causal: bool, n: int, chunk: int = 4) -> tuple[GAUConfig, torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    cfg = GAUConfig(d=12, e=16, s=8, causal=causal, rope=True, chunk=chunk)
    z, v = torch.randn(2, n, 8, dtype=torch.float64), torch.randn(2, n, 16, dtype=torch.float64)
    mask = torch.ones(2, n, dtype=torch.bool)
    mask[1, n - 3:] = False  # padding in the second sequence
    return cfg, z, v * mask[..., None], mask


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n", [12, 10])  # 10: a length the chunk does not divide (padded)
def test_local_part_is_flash_minus_its_global_term(causal, n):
    cfg, z, v, mask = _pair(causal, n)
    flash = GAU(cfg).double()
    local = FlashParts(cfg, "local").double()
    local.load_state_dict(flash.state_dict())
    # FLASH's global term vanishes when its linear keys are zero: gamma and beta of K^lin set to 0
    no_global = GAU(cfg).double()
    no_global.load_state_dict(flash.state_dict())
    with torch.no_grad():
        no_global.qk.gamma[3].zero_()
        no_global.qk.beta[3].zero_()
    assert torch.allclose(local._mixed_chunk(z, v, mask), no_global._mixed_chunk(z, v, mask), atol=1e-12)
    assert not torch.allclose(local._mixed_chunk(z, v, mask), flash._mixed_chunk(z, v, mask))


@pytest.mark.parametrize("causal", [True, False])
def test_global_part_is_dense_linear_attention_over_the_keys_each_row_sees(causal):
    cfg, z, v, mask = _pair(causal, 9)
    layer = FlashParts(cfg, "global").double()
    out = layer._mixed_chunk(z, v, mask)
    _, _, q, k = layer.qk(z)
    from analysis.models.gau import rope
    pos = torch.arange(9)
    q, k = rope(q, pos), rope(k, pos)
    for b in range(2):
        for t in range(9):
            keys = [j for j in range(9) if mask[b, j] and (j <= t or not causal)]
            want = sum((q[b, t] @ k[b, j]) * v[b, j] for j in keys) / max(len(keys), 1)
            assert torch.allclose(out[b, t], want, atol=1e-12)
    # the global term alone is causal: a later token changes no earlier output
    if causal:
        z2 = z.clone()
        z2[:, 6:] += 1.0
        assert torch.allclose(layer._mixed_chunk(z2, v, mask)[:, :6], out[:, :6], atol=1e-12)


def test_mixed_is_flash_and_with_parts_keeps_the_weights():
    cfg, z, v, mask = _pair(True, 12)
    flash = GAU(cfg).double()
    mixed = FlashParts(cfg, "mixed").double()
    mixed.load_state_dict(flash.state_dict())
    assert torch.equal(mixed._mixed_chunk(z, v, mask), flash._mixed_chunk(z, v, mask))
    torch.manual_seed(1)
    model = LanguageModel(ModelConfig(vocab=32, d=16, e=32, s=16, layers=2, block="flash", chunk=4,
                                      residual="post", ctx=16))
    weights = {k: t.clone() for k, t in model.state_dict().items()}
    assert with_parts(model, "mixed") is model
    with_parts(model, "global")
    assert sum(isinstance(m, FlashParts) and m.parts == "global" for m in model.modules()) == 2
    after = model.state_dict()
    assert after.keys() == weights.keys() and all(torch.equal(after[k], weights[k]) for k in weights)
    assert model(torch.randint(0, 32, (2, 16))).shape == (2, 16, 32)


def test_invalid_parts_are_refused():
    cfg = GAUConfig(d=12, e=16, s=8, chunk=4)
    with pytest.raises(ValueError, match="parts must be one of"):
        FlashParts(cfg, "both")
    with pytest.raises(ValueError, match="chunk must be set"):
        FlashParts(GAUConfig(d=12, e=16, s=8), "local")
    with pytest.raises(ValueError, match="parts must be one of"):
        with_parts(torch.nn.Linear(2, 2), "neither")
    with pytest.raises(ValueError, match="no FLASH sublayer"):
        with_parts(LanguageModel(ModelConfig(vocab=32, d=16, s=16, layers=1, block="gau", ctx=8)), "local")


def test_the_experiments_arms_start_from_flashs_weights():
    from analysis.studies.gau_trained.experiments import flash_parts as fp
    cfg = fp.CONFIGS["smoke"]
    arms = {}
    for v in fp.VARIANTS:
        torch.manual_seed(0)
        arms[v] = fp.build(cfg, v).state_dict()
    flash = arms["mixed"]
    for v, weights in arms.items():
        shared = [k for k in weights if not k.endswith(("qk.gamma", "qk.beta"))]
        assert shared and all(torch.equal(weights[k], flash[k]) for k in shared), v
        for k in weights:
            if k.endswith(("qk.gamma", "qk.beta")):  # FLASH-Quad's two scale-offsets are FLASH's first two
                assert torch.equal(weights[k], flash[k][: weights[k].shape[0]]), (v, k)
    assert fp.chunk_of(cfg) == cfg.ctx // fp.CHUNKS
    with pytest.raises(ValueError, match="variant must be one of"):
        fp.build(cfg, "both")


def test_every_claim_of_a_smoke_run_names_its_rival():
    """The three orderings are directional; 'about as good' is told from the smallest gap the source calls better."""
    from analysis.studies.gau_trained.experiments import flash_parts as fp
    cfg = fp.CONFIGS["smoke"]
    runs = [fp.run_trial(cfg, t, torch.device("cpu")) for t in fp.trials(cfg)]
    claims = {c.key: c for c in fp.claims(fp.assemble(cfg, runs, "cpu"), "smoke")}
    assert all(c.has_rival for c in claims.values()), [k for k, c in claims.items() if not c.has_rival]
    assert {c.kind for k, c in claims.items() if k != "flash-matches-flashquad-chunks"} == {"below"}
    # the effect is the mix's gain over its local part, the same paired difference the first claim measures
    gain = abs(claims["flash-mix-beats-local"].measured)
    assert claims["flash-matches-flashquad-chunks"].effect == pytest.approx(gain)
