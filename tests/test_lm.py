import math

import pytest
import torch

from analysis.models.gau import NORMS as GAU_NORMS
from analysis.models.lm import (
    BLOCKS,
    RESIDUALS,
    LanguageModel,
    ModelConfig,
    RMSNorm,
    ScaleNorm,
    update_sizes,
)
from analysis.models.widening import default_dtype


def small(**kw):
    base = dict(vocab=64, d=32, layers=2, ctx=32, heads=4, s=16, chunk=8)
    base.update(kw)
    torch.manual_seed(0)
    return LanguageModel(ModelConfig(**base))


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("residual", RESIDUALS)
def test_causal_language_model_for_every_block_and_residual(block, residual):
    model = small(block=block, residual=residual).eval()
    a = torch.randint(0, 64, (2, 24))
    b = a.clone()
    b[:, 13:] = torch.randint(0, 64, (2, 11))
    with torch.no_grad():
        la, lb = model(a), model(b)
    assert la.shape == (2, 24, 64) and torch.isfinite(la).all()
    torch.testing.assert_close(la[:, :13], lb[:, :13])


_DECODERS = ([dict(block="gau", gau_norm=n) for n in GAU_NORMS] + [dict(block="flash", chunk=c) for c in (4, 8)]
             + [dict(block="gau", gau_norm=n, gau_query_block=5) for n in ("relu2_ns", "relu2_n2")]
             + [dict(block="gau", gau_norm=n, gau_backend="dense") for n in ("relu2_ns", "relu2_n2")]
             + [dict(block="transformer", attn=a, positions=p) for a in ("dot", "cosine") for p in ("rope", "learned")])


@pytest.mark.parametrize("kw", _DECODERS, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_appending_tokens_never_changes_earlier_logits(kw):
    """Causal means causal for every normalisation and block: a position's logits are those of the prefix alone,
    whatever follows, so a length-dependent factor must use what the row sees, not the sequence's length."""
    with default_dtype(torch.float64):
        model = small(**kw).eval()
        idx = torch.randint(0, 64, (2, 29))
        with torch.no_grad():
            full = model(idx)
            for cut in (1, 7, 16, 17):
                torch.testing.assert_close(model(idx[:, :cut]), full[:, :cut], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm", "scalenorm"])
@pytest.mark.parametrize("ffn", ["relu", "gelu", "swiglu"])
def test_norms_and_ffns_train_one_step(norm, ffn):
    model = small(block="transformer", norm=norm, ffn=ffn)
    idx = torch.randint(0, 64, (2, 16))
    loss = torch.nn.functional.cross_entropy(model(idx).reshape(-1, 64), idx.reshape(-1))
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_norm_definitions():
    x = torch.randn(5, 8) * 3 + 1
    rms = RMSNorm(8)(x)
    torch.testing.assert_close(rms.pow(2).mean(-1), torch.ones(5), rtol=1e-4, atol=1e-4)
    sn = ScaleNorm(8)(x)
    torch.testing.assert_close(sn.norm(dim=-1), torch.full((5,), 8**0.5), rtol=1e-4, atol=1e-4)


def test_two_gau_layers_match_one_transformer_layer_in_parameters():
    d = 256
    gau = LanguageModel(ModelConfig(d=d, layers=2, block="gau", s=64))
    tfm = LanguageModel(ModelConfig(d=d, layers=1, block="transformer"))
    body = lambda m: m.num_parameters() - m.embed.weight.numel()
    assert abs(body(gau) / body(tfm) - 1) < 0.1  # 2 x 3 d e (e = 2d) = 12 d^2 vs 12 d^2


def test_swiglu_hidden_width_matches_ffn_parameters():
    a = small(block="transformer", ffn="gelu", d=96, heads=4).sublayers[1].f
    b = small(block="transformer", ffn="swiglu", d=96, heads=4).sublayers[1].f
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert abs(count(b) / count(a) - 1) < 0.01


def test_update_sizes_and_deepnorm_scaling():
    idx = torch.randint(0, 64, (2, 16))
    with torch.no_grad():
        _, hidden = small(block="gau", residual="post").eval()(idx, return_hidden=True)
    sizes = update_sizes(hidden)
    assert len(sizes) == 2 and all(s > 0 for s in sizes)
    deep = small(block="transformer", residual="deepnorm", layers=8)
    plain = small(block="transformer", residual="post", layers=8)
    assert deep.sublayers[1].f.w1.weight.std() < 0.7 * plain.sublayers[1].f.w1.weight.std()  # beta = 64^(-1/4)
    assert deep.sublayers[0].alpha == pytest.approx(16**0.25)


def test_bf16_autocast_on_cpu():
    model = small(block="flash")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(torch.randint(0, 64, (2, 16)))
    assert torch.isfinite(out.float()).all()


def test_torch_compile_matches_eager():
    model = small(block="gau", layers=1).eval()
    idx = torch.randint(0, 64, (1, 16))
    compiled = torch.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(compiled(idx), model(idx), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kw, message",
    [({"block": "rnn"}, "block must be one of"), ({"residual": "mid"}, "residual must be one of"),
     ({"norm": "batchnorm"}, "norm must be one of"), ({"d": 30, "block": "transformer"}, "divisible by heads"),
     ({"layers": 0}, "layers must be a positive integer")],
)
def test_bad_config(kw, message):
    base = dict(vocab=64, d=32, layers=2, ctx=32, heads=4, s=16, chunk=8)
    base.update(kw)
    with pytest.raises(ValueError, match=message):
        ModelConfig(**base)


def test_deep_gau_experiment_smoke():
    from analysis.core.runner import run_experiment
    from analysis.studies.deep_gau.experiments import deep_gau

    cfg = deep_gau.CONFIGS["smoke"]
    data = run_experiment("deep-gau", cfg)
    assert len(data["runs"]) == (len(cfg.depths) * len(deep_gau.ARCHS) * len(cfg.warmups) * len(cfg.lrs)
                                 * len(cfg.seeds))
    gau = [r for r in data["runs"] if r["block"] == "gau"]
    tfm = [r for r in data["runs"] if r["block"] == "transformer" and r["residual"] == "post"]
    assert abs(gau[0]["parameters"] / tfm[0]["parameters"] - 1) < 0.2  # equal size, up to embeddings and norms
    assert len(gau[0]["update_sizes"]) == 2 * cfg.depths[0] and len(tfm[0]["update_sizes"]) == 2 * cfg.depths[0]
    assert data["threshold"] == pytest.approx(data["unigram_entropy"] - cfg.margin)
    claims = deep_gau.claims(data, "smoke")
    assert {c.key for c in claims} <= {"gau-lr-depth", "gau-lr-no-warmup",
                                       "gau-vs-postnorm-transformer", "gau-vs-strongest-transformer"}
    assert len(claims) >= 2


def _boundary_data(outcomes):
    """deep-gau data with one run per (depth, warmup, lr) of post-norm GAU and Transformer; outcomes maps
    (block, depth, warmup, lr) -> validation loss (None: diverged)."""
    runs = []
    for (block, depth, warmup, lr), loss in outcomes.items():
        runs.append({"depth": depth, "block": block, "residual": "post", "warmup": warmup, "lr": lr, "seed": 0,
                     "diverged_at": None if loss is not None else 5, "val_loss": loss if loss is not None else math.nan,
                     "val_se": 0.01})
    return {"runs": runs, "threshold": 2.8, "unigram_entropy": 3.1}


def test_the_boundary_is_the_largest_learning_rate_at_which_every_seed_trains():
    from analysis.studies.deep_gau.experiments import deep_gau

    lrs = (1e-3, 1e-2, 1e-1)
    outcomes = {}
    for depth in (1, 4):
        for warmup in (0, 5):
            # GAU trains at every lr but the largest; the Transformer stalls (no divergence, no learning) when deep
            for lr, loss in zip(lrs, (2.5, 2.4, None)):
                outcomes[("gau", depth, warmup, lr)] = loss
            deep = (2.7, 3.1, 3.1) if warmup else (2.9, 3.1, 3.1)
            for lr, loss in zip(lrs, (2.5, 2.6, 2.7) if depth == 1 else deep):
                outcomes[("transformer", depth, warmup, lr)] = loss
    data = _boundary_data(outcomes)
    assert deep_gau.boundary(data, 1, "gau", "post", 0) == 1e-2
    assert deep_gau.boundary(data, 4, "transformer", "post", 5) == 1e-3  # 3.1 stays at the context-free loss
    assert deep_gau.boundary(data, 4, "transformer", "post", 0) == 0.0  # nothing trains: 2.9 is above 2.8
    assert deep_gau.grid_step(data) == pytest.approx(10.0)
    curve = deep_gau.lr_curve(data, 1, "gau", "post", 0)
    assert [row["diverged"] for row in curve] == [0.0, 0.0, 1.0] and [row["trained"] for row in curve] == [1, 1, 0]


def test_gpt_shape_is_the_nanogpt_layout():
    cfg = ModelConfig.gpt(d=32, layers=2, heads=4, ctx=16)
    model = LanguageModel(cfg)
    assert model.pos is not None and model.pos.weight.shape == (16, 32)
    assert len(model.attention_layers()) == 2 and not model.attention_layers()[0].rope
    assert isinstance(model.final_norm, torch.nn.LayerNorm)
    assert abs(float(model.embed.weight.detach().std()) - 0.02) < 0.003
    assert small(block="gau").attention_layers() == []


def test_copy_head_makes_heads_identical_and_touches_only_that_head():
    model = small(block="transformer")
    att = model.attention_layers()[0]
    before = [att.head_parameters(h).clone() for h in range(att.heads)]
    att.copy_head(0, 2)
    after = [att.head_parameters(h) for h in range(att.heads)]
    torch.testing.assert_close(after[2], before[0])
    for h in (0, 1, 3):
        torch.testing.assert_close(after[h], before[h])
    # a head's parameters are 3 k rows of W_qkv (with biases) and k columns of W_o
    k = 32 // 4
    assert before[0].numel() == 3 * k * 32 + 3 * k + 32 * k
    with pytest.raises(ValueError, match="head must be in"):
        att.head_rows(4)


def test_identical_heads_give_identical_head_outputs():
    model = small(block="transformer").double().eval()
    att = model.attention_layers()[0]
    for h in range(1, att.heads):
        att.copy_head(0, h)
    x = torch.randn(2, 8, 32, dtype=torch.float64)
    y = att.qkv(x)[..., :32].view(2, 8, 4, 8)
    for h in range(1, 4):
        torch.testing.assert_close(y[..., h, :], y[..., 0, :])


@pytest.mark.parametrize("residual", RESIDUALS)
def test_branch_is_the_update_the_residual_applies(residual):
    model = small(block="transformer", residual=residual).double().eval()
    x = torch.randn(2, 8, 32, dtype=torch.float64)
    layer = model.residuals()[0]
    update = layer(x)
    if residual in ("pre", "sandwich"):
        torch.testing.assert_close(update - x, layer.branch(x))
    elif residual == "post":
        torch.testing.assert_close(update, layer.norm(x + layer.branch(x)))
    else:
        torch.testing.assert_close(update, layer.norm(layer.alpha * x + layer.branch(x)))
    ratios = model.branch_ratios(torch.randint(0, 64, (2, 8)))
    assert len(ratios) == 4 and all(r > 0 for r in ratios)


def test_replace_norms_swaps_every_sublayer_norm_but_not_the_final_one():
    model = small(block="transformer", residual="pre")
    model.replace_norms(lambda: RMSNorm(32))
    assert all(isinstance(r.norm, RMSNorm) for r in model.residuals())
    assert isinstance(model.final_norm, torch.nn.LayerNorm)
