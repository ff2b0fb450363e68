"""The lean GAU path (query blocks recomputed in backward) against the dense one, in float64."""

import pytest
import torch

from analysis.models.gau import GAU, GAUConfig
from analysis.models.lean import relu2_attention


def dense_relu2(q, k, v, causal):
    a = torch.relu(q @ k.transpose(-1, -2)) ** 2
    if causal:
        a = a * torch.ones(q.shape[1], q.shape[1], dtype=torch.bool).tril()
    return a @ v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n, block", [(37, 8), (16, 16), (5, 64), (33, 1)])
def test_relu2_attention_matches_dense_and_passes_gradcheck(causal, n, block):
    g = torch.Generator().manual_seed(n + block)
    q, k = (torch.randn(2, n, 6, dtype=torch.float64, generator=g, requires_grad=True) for _ in range(2))
    v = torch.randn(2, n, 5, dtype=torch.float64, generator=g, requires_grad=True)
    out = relu2_attention(q, k, v, causal, block)
    ref = dense_relu2(q, k, v, causal)
    torch.testing.assert_close(out, ref, rtol=1e-13, atol=1e-13)
    upstream = torch.randn_like(out)
    grads = torch.autograd.grad((out * upstream).sum(), (q, k, v))
    grads_ref = torch.autograd.grad((ref * upstream).sum(), (q, k, v))
    for a, b in zip(grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    if n <= 16:
        assert torch.autograd.gradcheck(lambda q, k, v: relu2_attention(q, k, v, causal, block), (q, k, v))


@pytest.mark.parametrize("norm", ["relu2_ns", "relu2_n2"])
@pytest.mark.parametrize("causal", [False, True])
def test_lean_gau_layer_matches_dense_with_padding_outputs_and_gradients(norm, causal):
    torch.manual_seed(0)
    dense = GAU(GAUConfig(d=16, e=32, s=8, norm=norm, causal=causal, rope=True, backend="dense")).double()
    lean = GAU(GAUConfig(d=16, e=32, s=8, norm=norm, causal=causal, rope=True, query_block=5)).double()
    assert lean.cfg.lean and not dense.cfg.lean  # the default (auto) is the lean path here
    lean.load_state_dict(dense.state_dict())
    x = torch.randn(3, 23, 16, dtype=torch.float64)
    mask = torch.ones(3, 23, dtype=torch.bool)
    mask[1, 17:] = False  # one padded sequence
    mask[2, :] = False  # and one of padding only
    mask[2, 0] = True
    out_d, out_l = dense(x, mask), lean(x, mask)
    torch.testing.assert_close(out_l, out_d, rtol=1e-12, atol=1e-13)
    out_d.pow(2).sum().backward()
    out_l.pow(2).sum().backward()
    for (name, a), b in zip(lean.named_parameters(), dense.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12, msg=name)


def saved_bytes(layer, n):
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(torch.randn(1, n, 16)).sum()
    return total


def test_lean_saved_memory_is_linear_in_length_and_dense_is_not():
    torch.manual_seed(0)
    dense = GAU(GAUConfig(d=16, e=32, s=8, causal=True, backend="dense"))
    lean = GAU(GAUConfig(d=16, e=32, s=8, causal=True, query_block=32))
    parameters = sum(p.numel() * p.element_size() for p in lean.parameters())
    for layer, low, high in ((lean, 1.9, 2.01), (dense, 3.0, 4.01)):
        growth = (saved_bytes(layer, 2048) - parameters) / (saved_bytes(layer, 1024) - parameters)
        assert low < growth < high


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"query_block": 0}, "query_block must be a positive integer"),
        ({"query_block": None}, "query_block must be a positive integer"),
        ({"backend": "fused"}, "backend must be one of auto, lean, dense"),
        ({"backend": "lean", "norm": "softmax"}, "backend 'lean' applies to quadratic relu"),
        ({"backend": "lean", "chunk": 4}, "backend 'lean' applies to quadratic relu"),
    ],
)
def test_bad_backend_or_query_block(kw, message):
    with pytest.raises(ValueError, match=message):
        GAUConfig(d=16, e=32, s=8, **kw)


@pytest.mark.parametrize(
    "kw, lean",
    [
        ({}, True),
        ({"norm": "relu2_n2"}, True),
        ({"backend": "dense"}, False),
        ({"norm": "softmax"}, False),
        ({"norm": "softmax_log512"}, False),
        ({"chunk": 4}, False),
        ({"backend": "lean", "norm": "relu2_n2"}, True),
    ],
)
def test_auto_backend_is_lean_exactly_where_it_applies(kw, lean):
    cfg = GAUConfig(d=16, e=32, s=8, **kw)
    assert cfg.lean is lean
    assert cfg.lean_applies is (cfg.chunk is None and cfg.norm.startswith("relu2"))


def test_language_model_defaults_to_the_lean_gau_and_keeps_the_switch():
    from analysis.models.gau import GAU as Layer
    from analysis.models.lm import LanguageModel, ModelConfig

    def layers(**kw):
        model = LanguageModel(ModelConfig(vocab=16, d=16, layers=2, s=8, ctx=32, **kw))
        return [m for m in model.modules() if isinstance(m, Layer)]

    assert all(m.cfg.lean and m.cfg.query_block == 256 for m in layers())
    assert not any(m.cfg.lean for m in layers(gau_backend="dense"))
    assert not any(m.cfg.lean for m in layers(gau_norm="softmax"))
    assert not any(m.cfg.lean for m in layers(block="flash", chunk=4))
    assert all(m.cfg.query_block == 7 for m in layers(gau_query_block=7))
    with pytest.raises(ValueError, match="gau_backend must be one of"):
        ModelConfig(gau_backend="fast")
    with pytest.raises(ValueError, match="gau_backend 'lean' applies to GAU blocks"):
        ModelConfig(gau_backend="lean", gau_norm="softmax")
    with pytest.raises(ValueError, match="gau_query_block must be a positive integer"):
        ModelConfig(gau_query_block=0)


@pytest.mark.parametrize("causal", [False, True])
def test_lean_under_bfloat16_autocast_matches_dense_to_bf16_rounding(causal):
    """Under CPU bf16 autocast the lean blocks run in bf16 (as autocast runs the dense matmuls) and sum their
    gradients in float32: outputs and gradients stay within bf16 rounding (2^-8 relative) of the dense path's."""
    torch.manual_seed(0)
    dense = GAU(GAUConfig(d=32, e=64, s=16, causal=causal, backend="dense"))
    lean = GAU(GAUConfig(d=32, e=64, s=16, causal=causal, query_block=8))
    lean.load_state_dict(dense.state_dict())
    x = torch.randn(2, 40, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_d, out_l = dense(x), lean(x)
    assert out_l.dtype == out_d.dtype == torch.bfloat16
    scale = out_d.float().abs().max()
    assert (out_l.float() - out_d.float()).abs().max() < 2**-6 * scale
    out_d.float().pow(2).sum().backward()
    out_l.float().pow(2).sum().backward()
    for (name, a), b in zip(lean.named_parameters(), dense.parameters()):
        assert a.grad is not None and a.grad.dtype == torch.float32, name
        assert (a.grad - b.grad).abs().max() < 2**-5 * b.grad.abs().max() + 1e-6, name


def test_relu2_attention_bad_inputs():
    q = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match="q and k must be"):
        relu2_attention(q, torch.randn(2, 5, 3), torch.randn(2, 4, 2), True)
    with pytest.raises(ValueError, match="block must be a positive integer"):
        relu2_attention(q, q, torch.randn(2, 4, 2), True, 0)
