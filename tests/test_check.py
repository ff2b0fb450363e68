"""`analysis check`: planted leaks are caught and named, correct modules pass, bad input exits 2 with one line."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from analysis.check import (
    CheckInputError,
    check_module,
    fit_length_law,
    load_target,
    rounding_threshold,
)
from analysis.models.gau import GAU, GAUConfig
from analysis.models.lm import LanguageModel, ModelConfig

class Planted(nn.Module):
    """Causal single-head attention, correct or with one planted leak."""

    def __init__(self, leak: str = "none", d: int = 16, pad_to: int = 16) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.leak, self.pad_to = leak, pad_to

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        if mask is not None:
            allowed = allowed & mask[:, None, :]
        s = q @ k.transpose(-1, -2)
        if self.leak in ("none", "log_length"):
            scale = 1 / math.sqrt(d) * (math.log(n) / math.log(512) if self.leak == "log_length" else 1.0)
            a = (s * scale).masked_fill(~allowed, float("-inf")).softmax(-1)
        elif self.leak == "mask_after_softmax":
            a = (s / math.sqrt(d)).softmax(-1) * allowed
        elif self.leak == "total_length":
            a = F.relu(s) ** 2 / (n * d) * allowed
        elif self.leak == "padded_length":
            a = F.relu(s) ** 2 / (-(-n // self.pad_to) * self.pad_to * d) * allowed
        return self.o(a @ v)


class CausalMHA(nn.Module):
    """torch.nn.MultiheadAttention as a causal self-attention layer taking a key-padding mask True at real tokens."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        n = x.shape[1]
        future = torch.ones(n, n, dtype=torch.bool).triu(1)  # True: may not attend
        return self.mha(x, x, x, attn_mask=future, key_padding_mask=None if mask is None else ~mask,
                        need_weights=False)[0]


@pytest.mark.parametrize("leak, law", [
    ("total_length", "1/n (the total length)"),
    ("padded_length", "1/n_pad (the length padded to a multiple of 16)"),
    ("log_length", "a log n factor (of the total length)"),
    ("mask_after_softmax", "1/n (the total length)"),  # the softmax's denominator sums over all n keys
])
def test_every_planted_leak_is_caught_in_both_dtypes_and_its_law_named(leak, law):
    report = check_module(Planted(leak), mask="key-padding")
    causal = [r for r in report.results if r.check == "causal"]
    assert [r.dtype for r in causal] == ["float64", "float32"]
    assert not report.passed and all(not r.passed and r.worst > 100 * r.threshold for r in causal)
    assert all(r.first_position is not None and r.first_position <= 1 for r in causal)
    (fitted,) = [w for w in report.laws if w.check == "causal"]
    assert fitted.law == law or (leak == "mask_after_softmax" and fitted.law is None), fitted.residuals
    assert any("leaks by" in line and "from position" in line for line in report.lines())
    assert report.lines()[-1] == "  verdict: FAILS: causal, padding"  # the padding counts in the total length too


def test_a_total_length_normaliser_is_not_taken_for_a_padded_one_nor_the_reverse():
    total = check_module(Planted("total_length")).laws[0]
    padded = check_module(Planted("padded_length", pad_to=8), lengths=[32, 37, 45, 64, 77, 100, 128]).laws[0]
    assert total.law == "1/n (the total length)" and padded.law.startswith("1/n_pad") and "multiple of 8" in padded.law
    assert total.residuals[total.law] < 1e-9 and min(v for k, v in total.residuals.items() if k != total.law) > 0.01


@pytest.mark.parametrize("cfg", [
    dict(), dict(backend="dense"), dict(norm="relu2_n2"), dict(norm="softmax"), dict(norm="softmax_log512"),
    dict(chunk=8), dict(chunk=5),
], ids=str)
def test_the_books_causal_layers_pass_with_their_padding_mask(cfg):
    layer = GAU(GAUConfig(d=16, e=32, s=8, causal=True, rope=True, **cfg))
    report = check_module(layer, mask="key-padding", mask_arg="key_mask")
    assert report.passed, report.lines()
    assert {(r.check, r.dtype) for r in report.results} == {(c, t) for c in ("causal", "padding")
                                                            for t in ("float64", "float32")}


def test_a_bidirectional_layer_passes_the_padding_check_alone():
    layer = GAU(GAUConfig(d=16, e=32, s=8))
    assert check_module(layer, mask="key-padding", mask_arg="key_mask", checks=["padding"]).passed
    assert not check_module(layer, checks=["causal"]).passed  # it attends to later tokens, as it should


def test_the_books_decoders_pass():
    for block in ("gau", "flash", "transformer"):
        model = LanguageModel(ModelConfig(vocab=50, d=32, layers=2, s=16, ctx=128, block=block, chunk=8, heads=2))
        report = check_module(model, "lm")
        assert report.passed, report.lines()
        assert report.skipped and "takes no mask" in report.skipped[0]


def test_multihead_attention_with_a_causal_mask_passes_and_without_one_leaks():
    torch.manual_seed(0)
    assert check_module(CausalMHA(), mask="key-padding").passed

    class NoMask(CausalMHA):
        def forward(self, x, mask=None):
            return self.mha(x, x, x, need_weights=False)[0]

    assert not check_module(NoMask(), checks=["causal"]).passed


def test_flash_pytorch_gau_leaks_as_the_square_of_the_total_length():
    peer = pytest.importorskip("flash_pytorch")
    gau = peer.GAU(dim=16, query_key_dim=8, causal=True)
    report = check_module(gau, mask="key-padding")
    assert not report.passed and {w.law for w in report.laws} == {"1/n^2 (the total length, squared)"}
    assert check_module(peer.FLASH(dim=16, group_size=8, query_key_dim=8, causal=True), mask="key-padding").passed


def test_an_attention_mask_convention_is_passed_as_an_n_by_n_mask():
    class TakesAttentionMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Planted("none")

        def forward(self, x, attn_mask=None):
            n = x.shape[1]
            keys = attn_mask[-1] if attn_mask is not None else torch.ones(n, dtype=torch.bool)
            assert attn_mask is None or attn_mask.shape == (n, n)
            return self.inner(x, keys.expand(x.shape[0], n))

    report = check_module(TakesAttentionMask(), mask="attention")
    assert report.passed, report.lines()


def test_rounding_threshold_and_law_fit_validate_their_input():
    assert rounding_threshold(torch.float64, 128) == pytest.approx(128 * 2.0**-52 * math.sqrt(128))
    with pytest.raises(ValueError, match="dtype must be a floating-point"):
        rounding_threshold(torch.int64, 8)
    with pytest.raises(ValueError, match="length must be a positive integer"):
        rounding_threshold(torch.float32, 0)
    with pytest.raises(ValueError, match="equally long"):
        fit_length_law("causal", 8, [16], [])


@pytest.mark.parametrize("kw, message", [
    (dict(kind="encoder"), "kind must be one of layer, lm"),
    (dict(mask="causal"), "mask must be one of none, key-padding, attention"),
    (dict(checks=["speed"]), "checks must be among causal, padding"),
    (dict(lengths=[32]), "lengths must be at least two increasing"),
    (dict(lengths=[64, 32]), "lengths must be at least two increasing"),
    (dict(d=0), "d must be a positive integer"),
])
def test_bad_arguments_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        check_module(Planted(), **kw)


def test_bad_targets_and_modules_give_one_line():
    with pytest.raises(CheckInputError, match="must be package.module:factory"):
        load_target("torch.nn")
    with pytest.raises(CheckInputError, match="does not import"):
        load_target("no_such_package_here:make")
    with pytest.raises(CheckInputError, match="has no attribute"):
        load_target("torch.nn:NoSuchLayer")

    class Raises(nn.Module):
        def forward(self, x):
            raise RuntimeError("shapes do not match")

    with pytest.raises(CheckInputError, match="the module raised RuntimeError"):
        check_module(Raises(), d=8)
    with pytest.raises(CheckInputError, match="cannot tell the module's width"):
        check_module(nn.Identity())
    with pytest.raises(CheckInputError, match="takes none of mask"):
        check_module(nn.Linear(8, 8), mask="key-padding")


def _cli(tmp_path, monkeypatch, capsys, *args):
    """The command in this process (as `python -m analysis check ...`): exit status, stdout, stderr."""
    from analysis.__main__ import main

    (tmp_path / "check_targets.py").write_text(
        "import torch\nfrom torch import nn\n"
        "from analysis.models.gau import GAU, GAUConfig\n"
        "def good():\n    return GAU(GAUConfig(d=16, e=32, s=8, causal=True))\n"
        "def leaky():\n"
        "    from flash_pytorch import GAU as P\n    return P(dim=16, query_key_dim=8, causal=True)\n"
        "def number():\n    return 3\n"
        "class Narrow(nn.Module):\n    def forward(self, x):\n        return x[..., :2]\n"
        "narrow = Narrow()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    status = main(["check", *args])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == before  # nothing written
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_command_exits_0_when_every_check_passes_and_1_when_one_fails(tmp_path, monkeypatch, capsys):
    status, out, err = _cli(tmp_path, monkeypatch, capsys, "check_targets:good", "--mask", "key-padding",
                            "--mask-arg", "key_mask")
    assert status == 0, err
    assert "verdict: passes every check" in out and "threshold" in out
    pytest.importorskip("flash_pytorch")
    status, out, err = _cli(tmp_path, monkeypatch, capsys, "check_targets:leaky", "--mask", "key-padding", "--json")
    assert status == 1, err
    doc = json.loads(out)
    assert doc["passed"] is False and doc["laws"][0]["law"] == "1/n^2 (the total length, squared)"


@pytest.mark.parametrize("args, message", [
    (["no_such_module_x:make"], "does not import"),
    (["check_targets:number"], "returned int, not an nn.Module"),
    (["check_targets:narrow", "--d", "8"], "not (batch, n, 8)"),
    (["check_targets:good", "--lengths", "64", "32"], "lengths must be at least two increasing"),
])
def test_the_command_exits_2_with_one_line_on_bad_input(tmp_path, monkeypatch, capsys, args, message):
    status, out, err = _cli(tmp_path, monkeypatch, capsys, *args)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
