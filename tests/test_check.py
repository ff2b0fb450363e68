"""`analysis check`: planted leaks are caught and named, correct modules pass, checks that cannot run and bad input
exit 2 with one line, and the report is valid JSON whatever the module does."""

import json
import math
import re
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import analysis.models.check as check_lib
from analysis.models.check import (
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


class Attention(nn.Module):
    """Single-head softmax attention, causal or not, with a key-padding mask True at real tokens."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def attend(self, x: torch.Tensor, mask: torch.Tensor | None = None, causal: bool = True) -> torch.Tensor:
        n = x.shape[1]
        allowed = torch.ones(n, n, dtype=torch.bool)
        allowed = allowed.tril() if causal else allowed
        if mask is not None:
            allowed = allowed & mask[:, None, :]
        s = self.q(x) @ self.k(x).transpose(-1, -2) / math.sqrt(x.shape[-1])
        return self.o(s.masked_fill(~allowed, float("-inf")).softmax(-1) @ self.v(x))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.attend(x, mask)


class TimeBatchNorm(Attention):
    """Causal attention, then a batch norm over batch and time: it mixes positions and samples in training only."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(16)

    def forward(self, x, mask=None):
        return self.norm(self.attend(x, mask).transpose(1, 2)).transpose(1, 2)


class HalfOnlyLeak(Attention):
    """Causal in float64 and float32; in half precision or under autocast it takes a path that drops the mask."""

    def forward(self, x, mask=None):
        half = x.dtype in (torch.bfloat16, torch.float16) or torch.is_autocast_enabled(x.device.type)
        return self.attend(x, mask, causal=not half)


class TwoLayerNaN(nn.Module):
    """Two masked attention layers: a left-padded row that may attend no key becomes nan in the first, and the second
    multiplies that nan by a zero weight into every real token."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = Attention(), Attention()

    def forward(self, x, mask=None):
        return self.b.attend(self.a.attend(x, mask), mask)


class Stateful(Attention):
    """Scales its output by how often it was called."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x, mask=None):
        self.calls += 1
        return self.attend(x, mask) * self.calls


class AlwaysDropout(Attention):
    """Dropout that ignores the mode: random in eval too."""

    def forward(self, x, mask=None):
        return F.dropout(self.attend(x, mask), 0.1, training=True)


class WithDropout(Attention):
    """Causal attention with a dropout layer: random in training unless the check turns it off."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.attn_dropout = 0.5  # a rate a forward passes to a kernel, as Hugging Face's layers keep it

    def forward(self, x, mask=None):
        y = self.drop(self.attend(x, mask))
        return F.dropout(y, self.attn_dropout, training=self.training)


class Locked(Attention):
    """Holds a lock, so that it cannot be deep-copied."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.norm = nn.BatchNorm1d(16)

    def forward(self, x, mask=None):
        return self.norm(self.attend(x, mask).transpose(1, 2)).transpose(1, 2)


class HiddenAndLogits(Attention):
    """Returns (its input, its output), as a model returning (hidden, logits) does."""

    def forward(self, x, mask=None):
        return x, self.attend(x, mask)


class SequenceFirstByHand(Attention):
    """Takes (n, batch, d) without saying so (no batch_first attribute): the batch check catches it."""

    def forward(self, x, mask=None):
        return self.attend(x.transpose(0, 1)).transpose(0, 1)


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


def _eval(report, check, dtype="float64"):
    return next(r for r in report.results if r.check == check and r.dtype == dtype and r.mode == "eval")


@pytest.mark.parametrize("leak, law", [
    ("total_length", "1/n (the total length)"),
    ("padded_length", "1/n_pad (the length padded to a multiple of 16)"),
    ("log_length", "a log n factor (of the total length)"),
    ("mask_after_softmax", "1/n (the total length)"),  # the softmax's denominator sums over all n keys
])
def test_every_planted_leak_is_caught_in_both_dtypes_and_its_law_named(leak, law):
    report = check_module(Planted(leak), mask="key-padding")
    causal = [r for r in report.results if r.check == "causal"]
    assert [(r.dtype, r.mode) for r in causal] == [("float64", "eval"), ("float64", "train"), ("float32", "eval")]
    assert not report.passed and all(not r.passed and r.worst > 100 * r.threshold for r in causal)
    assert all(r.first_position is not None and r.first_position <= 1 for r in causal)
    (fitted,) = [w for w in report.laws if w.check == "causal"]
    assert (fitted.dtype, fitted.mode) == ("float64", "eval")
    assert fitted.law == law or (leak == "mask_after_softmax" and fitted.law is None), fitted.residuals
    assert any("leaks by" in line and "compared)" in line for line in report.lines())
    assert report.lines()[-1] == "  verdict: FAILS: causal, padding"  # the padding counts in the total length too
    assert _eval(report, "batch").passed  # each sample's normaliser is its own


def test_a_leak_line_says_which_positions_leak_and_how_many():
    report = check_module(Planted("padded_length", pad_to=8), lengths=[32, 37, 45, 64], modes=["eval"])
    line = _eval(report, "causal").line()
    assert "at positions 1-31 (31 of the 32 compared)" in line, line  # relu² is 0 at position 0 here
    one = check_lib.CheckResult("causal", "float64", 1e-13, 1.0, [0.0, 1.0, 0.0], [37], [1.0])
    assert one.line().endswith("at position 1 only") and one.leaking_positions == [1]
    assert "positions 0, 2-3 (3 of the 5 compared)" in check_lib.CheckResult(
        "causal", "float64", 0.5, 1.0, [1.0, 0, 1.0, 1.0, 0], [37], [1.0]).line()


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
    assert {(r.check, r.dtype, r.mode) for r in report.results} == {
        (c, t, m) for c in ("causal", "padding", "batch") for t, m in (("float64", "eval"), ("float64", "train"),
                                                                       ("float32", "eval"))}
    assert all(r.computes_in is None for r in report.results)  # no step rounds float64 data to float32


def test_left_padding_passes_a_relative_position_layer_and_fails_a_chunked_one():
    rope = GAU(GAUConfig(d=16, e=32, s=8, causal=True, rope=True))
    report = check_module(rope, mask="key-padding", mask_arg="key_mask", checks=["left-padding"])
    assert report.passed, report.lines()
    # its rotary angles are float32, computed anew at the shifted positions: float32's threshold, stated
    assert _eval(report, "left-padding").computes_in == "float32"
    assert "float64 (steps in float32)" in report.lines()[1]
    chunked = GAU(GAUConfig(d=16, e=32, s=8, causal=True, rope=True, chunk=8))  # its chunks start at the padding
    assert not check_module(chunked, mask="key-padding", mask_arg="key_mask", checks=["left-padding"]).passed


def test_a_bidirectional_layer_passes_the_padding_check_alone():
    layer = GAU(GAUConfig(d=16, e=32, s=8))
    assert check_module(layer, mask="key-padding", mask_arg="key_mask", checks=["padding", "batch"]).passed
    assert not check_module(layer, checks=["causal"]).passed  # it attends to later tokens, as it should


def test_the_books_decoders_pass():
    for block in ("gau", "flash", "transformer"):
        model = LanguageModel(ModelConfig(vocab=50, d=32, layers=2, s=16, ctx=128, block=block, chunk=8, heads=2))
        report = check_module(model, "lm")
        assert report.passed, report.lines()
        assert {r.check for r in report.results} == {"causal", "batch"}
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


class TakesAttentionMask(nn.Module):
    """Attention taking an (n, n) mask, True where query t may attend key j; it adds no causal mask of its own."""

    seen: list[torch.Tensor] = []  # on the class: the check runs copies of the module

    def __init__(self) -> None:
        super().__init__()
        self.inner = Attention()

    def forward(self, x, attn_mask=None):
        n = x.shape[1]
        assert attn_mask is None or attn_mask.shape == (n, n)
        self.seen.append(attn_mask)
        s = self.inner.q(x) @ self.inner.k(x).transpose(-1, -2) / 4
        return self.inner.o(s.masked_fill(~attn_mask, float("-inf")).softmax(-1) @ self.inner.v(x))


def test_an_attention_mask_holds_the_causal_mask_and_the_padding_together():
    TakesAttentionMask.seen.clear()
    report = check_module(TakesAttentionMask(), mask="attention", lengths=[8, 12], modes=["eval"])
    assert report.passed, report.lines()
    masks = [m for m in TakesAttentionMask.seen if m is not None]
    # the padding check's mask at n = 12 with 8 real tokens: causal and padding at once
    want = torch.ones(12, 12, dtype=torch.bool).tril() & (torch.arange(12) < 8)[None, :]
    assert any(m.shape == (12, 12) and torch.equal(m.cpu(), want) for m in masks)
    TakesAttentionMask.seen.clear()
    check_module(TakesAttentionMask(), mask="attention", lengths=[8, 12], modes=["eval"], checks=["padding"])
    padding_only = (torch.arange(12) < 8)[None, :].expand(12, 12)  # without causal among the checks
    assert any(m.shape == (12, 12) and torch.equal(m.cpu(), padding_only) for m in TakesAttentionMask.seen)


def test_a_leak_in_train_mode_only_is_caught_and_the_mode_named():
    report = check_module(TimeBatchNorm(), mask="key-padding")
    assert not report.passed
    assert all(r.passed for r in report.results if r.mode == "eval")
    assert {r.check for r in report.results if not r.passed} == {"causal", "padding", "batch"}
    assert all(r.mode == "train" for r in report.results if not r.passed)
    assert report.lines()[-1] == ("  verdict: FAILS: causal (train mode only), padding (train mode only), "
                                  "batch (train mode only)")
    assert any("fails in train mode only" in n for n in report.notes)


def test_dropout_is_turned_off_in_train_mode_and_the_users_module_is_left_as_it_was():
    layer = WithDropout()
    report = check_module(layer, mask="key-padding")
    assert report.passed, report.lines()
    assert layer.drop.p == 0.5 and layer.attn_dropout == 0.5 and layer.training  # a copy was checked
    with pytest.raises(CheckInputError, match="not deterministic in eval mode"):
        check_module(AlwaysDropout(), mask="key-padding")


def test_a_stateful_module_is_reported_as_such_not_as_a_leak():
    with pytest.raises(CheckInputError, match=r"not deterministic in eval mode \(float64\).*stateful"):
        check_module(Stateful(), mask="key-padding")


def test_a_half_precision_leak_fails_and_correct_half_precision_modules_pass():
    report = check_module(HalfOnlyLeak(), mask="key-padding", autocast="bf16")
    bad = [r for r in report.results if not r.passed]
    assert [(r.check, r.precision) for r in bad] == [("causal", "float32 under autocast bfloat16")]
    assert bad[0].threshold == pytest.approx(rounding_threshold(torch.bfloat16, 128)) and bad[0].threshold < 0.1
    assert report.lines()[-1] == "  verdict: FAILS: causal (float32 under autocast bfloat16 only)"
    assert any("fails in float32 under autocast bfloat16 only (float64 passes)" in n for n in report.notes)
    assert [w.dtype for w in report.laws] == ["float32 under autocast bfloat16"]  # a law is fitted there too
    half = check_module(HalfOnlyLeak().to(torch.float16), mask="key-padding", modes=["eval"])
    assert [(r.check, r.dtype) for r in half.results if not r.passed] == [("causal", "float16")]
    for dtype in (torch.bfloat16, torch.float16):
        layer = GAU(GAUConfig(d=16, e=32, s=8, causal=True, rope=True)).to(dtype)
        assert check_module(layer, mask="key-padding", mask_arg="key_mask", modes=["eval"]).passed
    assert check_module(CausalMHA(), mask="key-padding", autocast="fp16", modes=["eval"]).passed


def test_a_float64_model_that_rounds_to_float32_gets_float32s_threshold():
    class NormsInFloat32(Attention):
        def forward(self, x, mask=None):
            y = self.attend(x, mask)
            return (y.float() / y.float().norm(dim=-1, keepdim=True)).to(x.dtype)

    report = check_module(NormsInFloat32(), mask="key-padding", modes=["eval"])
    f64 = _eval(report, "causal")
    assert f64.computes_in == "float32" and f64.threshold == rounding_threshold(torch.float32, 128)
    assert "float64 (steps in float32)" in f64.line()


def test_sequence_first_modules_are_refused_or_caught_by_the_batch_check():
    torch.manual_seed(0)
    with pytest.raises(CheckInputError, match="sequence-first"):
        check_module(nn.TransformerEncoderLayer(16, 2, dim_feedforward=32))
    with pytest.raises(CheckInputError, match="sequence-first"):
        check_module(nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, dim_feedforward=32), 2,
                                          enable_nested_tensor=False))
    encoder = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)
    assert check_module(encoder, checks=["batch"]).passed
    report = check_module(SequenceFirstByHand())
    assert _eval(report, "causal").passed and not _eval(report, "batch").passed  # causal alone would pass it
    assert any("sequence-first" in n for n in report.notes)


def test_nan_outputs_read_as_a_leak_at_the_positions_and_json_stays_valid():
    report = check_module(TwoLayerNaN(), mask="key-padding", checks=["causal", "left-padding"], modes=["eval"])
    bad = _eval(report, "left-padding")
    assert not bad.passed and bad.nonfinite and bad.first_position == 0 and math.isinf(bad.worst)
    assert "become nan or inf, at positions 0-31 (32 of the 32 compared)" in bad.line()
    assert "None" not in "\n".join(report.lines())
    text = json.dumps(report.to_json(), allow_nan=False)  # raises on a bare NaN or Infinity
    doc = json.loads(text)
    assert doc["passed"] is False and doc["failing"] == ["left-padding"]
    assert not report.laws  # no law is fitted to nan

    class NanAtLength(Attention):
        def forward(self, x, mask=None):
            return self.attend(x, mask) * torch.tensor(64.0 - x.shape[1]).sqrt()

    with pytest.raises(CheckInputError, match="nan or inf on its own input of 128 tokens"):
        check_module(NanAtLength())


def test_a_module_that_cannot_be_deep_copied_is_checked_in_place_and_restored():
    layer = Locked()
    before = {k: v.clone() for k, v in layer.state_dict().items()}
    report = check_module(layer, mask="key-padding")
    assert not report.passed  # its batch norm mixes positions in training
    assert any("cannot be deep-copied" in n for n in report.notes)
    assert layer.training and all(p.dtype == torch.float32 for p in layer.parameters())
    assert all(torch.equal(before[k], v) for k, v in layer.state_dict().items())  # running statistics too


def test_tuple_outputs_are_refused_unless_the_element_is_named():
    with pytest.raises(CheckInputError, match=r"returns a tuple of 2 \(\(2, 128, 16\), \(2, 128, 16\)\): pass --output"):
        check_module(HiddenAndLogits())
    assert check_module(HiddenAndLogits(), output=1, mask="key-padding").passed
    with pytest.raises(CheckInputError, match="has no element 2"):
        check_module(HiddenAndLogits(), output=2)


def test_rounding_threshold_and_law_fit_validate_their_input():
    assert rounding_threshold(torch.float64, 128) == pytest.approx(128 * 2.0**-52 * math.sqrt(128))
    assert rounding_threshold(torch.bfloat16, 128) == pytest.approx(
        128 * 2.0**-23 * math.sqrt(128) + check_lib.HALF_ULPS * 2.0**-7)
    with pytest.raises(ValueError, match="dtype must be a floating-point"):
        rounding_threshold(torch.int64, 8)
    with pytest.raises(ValueError, match="length must be a positive integer"):
        rounding_threshold(torch.float32, 0)
    with pytest.raises(ValueError, match="equally long"):
        fit_length_law("causal", 8, [16], [])


def test_the_docstring_states_the_thresholds_the_tool_prints():
    doc = " ".join(check_lib.__doc__.split())
    stated = dict(re.findall(r"(float64|float32|bfloat16|float16)(?: at 128 tokens gives)? (\d\.\de[-+]\d\d)", doc))
    assert set(stated) == {"float64", "float32", "bfloat16", "float16"}, stated
    for name, text in stated.items():
        assert text == f"{rounding_threshold(getattr(torch, name), 128):.1e}", name


@pytest.mark.parametrize("kw, message", [
    (dict(kind="encoder"), "kind must be one of layer, lm, hf"),
    (dict(mask="causal"), "mask must be one of none, key-padding, attention"),
    (dict(checks=["speed"]), "checks must be among causal, padding, left-padding, batch, decoding"),
    (dict(lengths=[32]), "lengths must be at least two increasing"),
    (dict(lengths=[64, 32]), "lengths must be at least two increasing"),
    (dict(lengths=[32, 10**6]), "lengths must be at most 16384"),
    (dict(d=0), r"d must be an integer in \[1, 65536\]"),
    (dict(d=10**9), r"d must be an integer in \[1, 65536\]"),
    (dict(vocab=10**20), r"vocab must be an integer in \[1, 2147483647\]"),
    (dict(modes=["train"]), "modes must be eval, or eval and train"),
    (dict(autocast="fp8"), "autocast must be one of none, bf16, fp16"),
    (dict(device="tpu"), "device must be one of cpu, cuda"),
])
def test_bad_arguments_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        check_module(Planted(), **kw)


def test_cuda_is_refused_in_one_line_where_it_is_absent(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device cuda: CUDA is not available"):
        check_module(Planted(), device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_layer_checks_on_the_gpu_and_under_autocast():
    layer = GAU(GAUConfig(d=16, e=32, s=8, causal=True, rope=True))
    assert check_module(layer, mask="key-padding", mask_arg="key_mask", device="cuda", autocast="bf16").passed
    assert not check_module(Planted("total_length").cuda(), device="cuda", autocast="bf16").passed


def test_checks_that_cannot_run_are_refused_not_passed():
    with pytest.raises(CheckInputError, match="padding check needs the module's mask"):
        check_module(Planted(), checks=["padding"])
    with pytest.raises(CheckInputError, match="left-padding check needs the module's mask"):
        check_module(Planted(), checks=["left-padding"])
    with pytest.raises(CheckInputError, match="decoding check needs a causal Hugging Face model"):
        check_module(Planted(), checks=["decoding"])


def test_bad_targets_and_modules_give_one_line(tmp_path, monkeypatch):
    with pytest.raises(CheckInputError, match="must be package.module:factory"):
        load_target("torch.nn")
    with pytest.raises(CheckInputError, match="does not import"):
        load_target("no_such_package_here:make")
    with pytest.raises(CheckInputError, match="has no attribute"):
        load_target("torch.nn:NoSuchLayer")
    (tmp_path / "exits_at_import.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "exiting_factory.py").write_text("import sys\ndef make():\n    sys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CheckInputError, match="does not import: SystemExit: 0"):
        load_target("exits_at_import:make")
    with pytest.raises(CheckInputError, match="the factory raised SystemExit: 3"):
        load_target("exiting_factory:make")

    class Raises(nn.Module):
        def forward(self, x):
            raise RuntimeError("shapes do not match")

    with pytest.raises(CheckInputError, match="the module raised RuntimeError"):
        check_module(Raises(), d=8)
    with pytest.raises(CheckInputError, match="cannot tell the module's width"):
        check_module(nn.Identity())
    with pytest.raises(CheckInputError, match="takes none of mask"):
        check_module(nn.Linear(8, 8), mask="key-padding")


TARGETS = """
import sys
from torch import nn
sys.path.insert(0, {tests!r})
from test_check import HiddenAndLogits, Locked, Stateful, TwoLayerNaN  # noqa: F401 (targets by name)
from analysis.models.gau import GAU, GAUConfig
def good():
    return GAU(GAUConfig(d=16, e=32, s=8, causal=True))
def leaky():
    from flash_pytorch import GAU as P
    return P(dim=16, query_key_dim=8, causal=True)
def number():
    return 3
class Narrow(nn.Module):
    def forward(self, x):
        return x[..., :2]
narrow = Narrow()
def seq_first():
    return nn.TransformerEncoderLayer(16, 2, dim_feedforward=32)
"""


def _cli(tmp_path, monkeypatch, capsys, *args):
    """The command in this process (as `python -m analysis check ...`): exit status, stdout, stderr."""
    from analysis.cli.main import main

    (tmp_path / "check_targets.py").write_text(TARGETS.format(tests=str(Path(__file__).parent)))
    (tmp_path / "exits_at_import.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    status = main(["check", *args])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == before  # nothing written
    out = capsys.readouterr()
    return status, out.out, out.err


def _strict_json(text):
    def refuse(constant):
        raise AssertionError(f"not valid JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_the_command_exits_0_when_every_check_passes_and_1_when_one_fails(tmp_path, monkeypatch, capsys):
    status, out, err = _cli(tmp_path, monkeypatch, capsys, "check_targets:good", "--mask", "key-padding",
                            "--mask-arg", "key_mask")
    assert status == 0, err
    assert "verdict: passes every check" in out and "threshold" in out and "train mode (dropout off)" in out
    pytest.importorskip("flash_pytorch")
    status, out, err = _cli(tmp_path, monkeypatch, capsys, "check_targets:leaky", "--mask", "key-padding", "--json")
    assert status == 1, err
    doc = _strict_json(out)
    assert doc["passed"] is False and doc["laws"][0]["law"] == "1/n^2 (the total length, squared)"


@pytest.mark.parametrize("args, status, found", [
    (["check_targets:TwoLayerNaN", "--mask", "key-padding", "--checks", "left-padding", "--modes", "eval"], 1,
     "left-padding"),
    (["check_targets:Locked", "--mask", "key-padding", "--lengths", "16", "24"], 1, "batch (train mode only)"),
    (["check_targets:HiddenAndLogits", "--output", "1", "--lengths", "16", "24"], 0, None),
])
def test_the_command_reports_in_valid_json_whatever_the_module_does(tmp_path, monkeypatch, capsys, args, status,
                                                                   found):
    got, out, err = _cli(tmp_path, monkeypatch, capsys, *args, "--json")
    assert got == status, err
    doc = _strict_json(out)
    assert doc["passed"] is (status == 0) and (found is None or found in doc["failing"])


@pytest.mark.parametrize("args, message", [
    (["no_such_module_x:make"], "does not import"),
    (["exits_at_import:make"], "does not import: SystemExit: 0"),
    (["check_targets:number"], "returned int, not an nn.Module"),
    (["check_targets:narrow", "--d", "8"], "not (batch, n, 8)"),
    (["check_targets:good", "--lengths", "64", "32"], "lengths must be at least two increasing"),
    (["check_targets:good", "--checks", "padding"], "padding check needs the module's mask"),
    (["check_targets:good", "--d", "1000000000"], "--d must be an integer in [1, 65536]"),
    (["check_targets:good", "--d", "500000"], "--d must be an integer in [1, 65536]"),
    (["check_targets:good", "--kind", "lm", "--vocab", "100000000000000000000"],
     "--vocab must be an integer in [1, 2147483647]"),
    (["check_targets:good", "--kind", "lm", "--vocab", "1e20"], "--vocab must be an integer"),
    (["check_targets:good", "--lengths", "32", "1000000"], "--lengths must be an integer in [1, 16384]"),
    (["check_targets:seq_first"], "sequence-first"),
    (["check_targets:Stateful", "--mask", "key-padding"], "not deterministic"),
    (["check_targets:HiddenAndLogits"], "pass --output INDEX"),
    (["check_targets:good", "--kind", "hf"], "--kind hf takes a Hugging Face model"),
    (["check_targets:good", "--kind", "hf", "--mask", "key-padding"], "mask does not apply to kind hf"),
])
def test_the_command_exits_2_with_one_line_on_bad_input(tmp_path, monkeypatch, capsys, args, message):
    status, out, err = _cli(tmp_path, monkeypatch, capsys, *args)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_the_command_refuses_cuda_in_one_line_where_it_is_absent(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    status, out, err = _cli(tmp_path, monkeypatch, capsys, "check_targets:good", "--device", "cuda")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and "CUDA is not available" in err
