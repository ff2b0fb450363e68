import pytest
import torch
import torch.nn.functional as F

from analysis.models.gau import GAU, GAUConfig, rope


@pytest.fixture(autouse=True)
def _float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def make(**kw):
    torch.manual_seed(0)
    base = dict(d=16, e=32, s=8)
    base.update(kw)
    return GAU(GAUConfig(**base))


@pytest.mark.parametrize("norm", ["relu2_ns", "relu2_n2", "softmax", "softmax_log512"])
@pytest.mark.parametrize("causal", [False, True])
def test_shapes_and_padding_invariance(norm, causal):
    layer = make(norm=norm, causal=causal, rope=True)
    x = torch.randn(2, 10, 16)
    out = layer(x)
    assert out.shape == (2, 10, 16)
    # appending padding never changes the real positions' outputs
    padded = torch.cat([x, torch.randn(2, 5, 16)], dim=1)
    mask = torch.zeros(2, 15, dtype=torch.bool)
    mask[:, :10] = True
    torch.testing.assert_close(layer(padded, mask)[:, :10], out)


@pytest.mark.parametrize("kw", [{"norm": "relu2_ns"}, {"norm": "relu2_n2"}, {"norm": "softmax"},
                                {"norm": "softmax_log512"}, {"norm": "relu2_ns", "query_block": 5},
                                {"norm": "relu2_n2", "query_block": 4}, {"norm": "relu2_ns", "backend": "dense"},
                                {"norm": "relu2_n2", "backend": "dense"}, {"chunk": 4}, {"chunk": 3}])
def test_causality(kw):
    """Every normalisation and block type: a row's output does not depend on the tokens after it."""
    layer = make(causal=True, rope=True, **kw)
    x = torch.randn(2, 12, 16)
    y = x.clone()
    y[:, 7:] = torch.randn(2, 5, 16)
    torch.testing.assert_close(layer(x)[:, :7], layer(y)[:, :7])
    assert not torch.allclose(layer(x)[:, 7:], layer(y)[:, 7:])
    # appending tokens (a longer sequence, not only other tokens) leaves the earlier rows as they were
    torch.testing.assert_close(layer(x[:, :7]), layer(x)[:, :7], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_padding_invariance_and_non_dividing_lengths(causal):
    layer = make(chunk=4, causal=causal, rope=True)
    x = torch.randn(2, 10, 16)  # 10 is not a multiple of 4: padded inside, masked
    out = layer(x)
    padded = torch.cat([x, torch.randn(2, 3, 16)], dim=1)
    mask = torch.zeros(2, 13, dtype=torch.bool)
    mask[:, :10] = True
    torch.testing.assert_close(layer(padded, mask)[:, :10], out)


def test_causal_rows_are_normalised_by_t_not_n():
    layer = make(causal=True)
    q = torch.ones(1, 6, 8)
    a = layer.attention(q, q, torch.ones(1, 6, dtype=torch.bool))
    # q.k = 8 for every pair: relu^2 / (t s) = 64 / (8 t), so every row sums to 8 exactly
    torch.testing.assert_close(a.sum(-1), torch.full((1, 6), 8.0))


def test_glu_when_attention_is_identity():
    layer = make(backend="dense")  # the path that forms A, so that A can be replaced
    x = torch.randn(2, 7, 16)
    u, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    glu = layer.to_out(u * v)
    mixed_with_identity = layer.to_out(u * (torch.eye(7) @ v))
    torch.testing.assert_close(mixed_with_identity, glu)
    layer.attention = lambda q, k, mask: torch.eye(q.shape[1]).expand(q.shape[0], -1, -1)  # A = I
    torch.testing.assert_close(layer(x), glu)


def test_flash_linear_part_equals_full_linear_attention_noncausal():
    layer = make(chunk=4)
    x = torch.randn(2, 12, 16)
    mask = torch.ones(2, 12, dtype=torch.bool)
    z = F.silu(layer.to_z(x))
    _, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    with torch.no_grad():
        layer.qk.gamma[:2].zero_()  # switch off the quadratic part: relu^2(0) = 0
        layer.qk.beta[:2].zero_()
    torch.testing.assert_close(layer._mixed_chunk(z, v, mask), layer.linear_part(z, v, mask))


def test_flash_causal_linear_term_uses_exclusive_sum_over_previous_chunks():
    layer = make(chunk=3, causal=True)
    with torch.no_grad():
        layer.qk.gamma[:2].zero_()
        layer.qk.beta[:2].zero_()
    x = torch.randn(1, 9, 16)
    z = F.silu(layer.to_z(x))
    _, v = F.silu(layer.to_uv(x)).chunk(2, dim=-1)
    out = layer._mixed_chunk(z, v, torch.ones(1, 9, dtype=torch.bool))
    _, _, ql, kl = layer.qk(z)
    assert torch.all(out[:, :3] == 0)  # the first chunk sees no earlier chunk
    expected = ql[:, 6:] @ (kl[:, :6].transpose(-1, -2) @ v[:, :6]) / 6  # chunk 3 sees 2 chunks of 3 keys
    torch.testing.assert_close(out[:, 6:], expected)


def test_rope_is_relative():
    q, k = torch.randn(1, 8), torch.randn(1, 8)
    a = (rope(q, torch.tensor([5])) * rope(k, torch.tensor([2]))).sum()
    b = (rope(q, torch.tensor([13])) * rope(k, torch.tensor([10]))).sum()
    torch.testing.assert_close(a, b)


def test_parameter_count_is_about_3de():
    layer = GAU(GAUConfig(d=256, e=512, s=64))
    three_de = 3 * 256 * 512
    assert three_de < layer.num_parameters() < three_de * 1.1


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"s": 64, "e": 32}, "s \\(key size 64\\) must not exceed e"),
        ({"norm": "relu3"}, "norm must be one of"),
        ({"init": "he"}, "init must be one of"),
        ({"chunk": 0}, "chunk must be a positive integer"),
        ({"chunk": 4, "norm": "softmax"}, "FLASH mixed chunk attention uses relu2_ns"),
        ({"d": 0}, "d must be a positive integer"),
        ({"s": 7, "e": 32, "rope": True}, "rope needs an even key size"),
    ],
)
def test_bad_sizes(kw, message):
    base = dict(d=16, e=32, s=8)
    base.update(kw)
    with pytest.raises(ValueError, match=message):
        GAUConfig(**base)
    layer = make()
    with pytest.raises(ValueError, match="x must have shape"):
        layer(torch.randn(2, 5, 15))
