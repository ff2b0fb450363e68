"""analysis.models.widening: every case to its tolerance in float64, the broken ones broken, the caveats' identities, the
checkpoint command and its bad inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from analysis.models import widening as W
from analysis.cli.main import main
from analysis.studies.widening.experiments.widening import CONFIGS, exactness_cases, spread
from analysis.models.bert import Bert, BertConfig
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.models.widening import default_dtype

TOL = 1e-12  # relative, float64


def _cases() -> list[tuple[str, bool, object, object]]:
    return [(label, expected, make, widen) for label, _, _, make, widen, expected in exactness_cases(CONFIGS["smoke"])]


@pytest.mark.parametrize("label,expected,make,widen", _cases(), ids=[c[0] for c in _cases()])
def test_every_case_exact_or_broken(label: str, expected: bool, make: object, widen: object) -> None:
    with default_dtype(torch.float64):
        small = spread(make().double(), 3)  # type: ignore[operator]
        widening = widen(small)  # type: ignore[operator]
        _, rel = W.max_logit_difference(small, widening.model, W.probe_batch(small.cfg.vocab, 16))
    assert widening.exact == expected
    if expected:
        assert rel < TOL, f"{label}: {rel:.2e}"
    else:
        # BERT's eps = 1e-12 kept moves the logits by about eps / var: small, but 100x above rounding
        floor = 2e-13 if "1e-12 kept" in label else 1e-9
        assert rel > floor, f"{label} should not be exact: {rel:.2e}"


def test_lift_repeat_and_left_inverse() -> None:
    lift = W.Lift.repeat(3, 7, 1.0)
    assert lift.index.tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert torch.allclose(lift.gain(), torch.ones(3, dtype=torch.float64))
    x = torch.randn(5, 3, dtype=torch.float64)
    back = torch.zeros(5, 3, dtype=torch.float64).index_add_(1, lift.index, lift.apply(x) * lift.left_inverse())
    assert torch.allclose(back, x)
    assert W.Lift.repeat(2, 4, None, "global").index.tolist() == [0, 1, 0, 1]
    assert W.Lift.pairs(4, 2, None).index.tolist() == [0, 1, 0, 1, 2, 3, 2, 3]
    placed = W.Lift.pairs(4, 2, 2.0, place=True)
    assert (placed.scale != 0).tolist() == [True, True, False, False, True, True, False, False]


def test_linear_with_split_keeps_function_and_breaks_copies() -> None:
    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    out, inp = W.Lift.repeat(4, 8, 1.0), W.Lift.repeat(3, 6, 1.0)
    x = torch.randn(10, 3, dtype=torch.float64)
    for split in (0.0, 0.3):
        ww, bb = W.widen_linear(w, b, out, inp, split, gen)
        assert torch.allclose(inp.apply(x) @ ww.T + bb, out.apply(x @ w.T + b), atol=1e-13)
    assert not torch.allclose(ww[:, 0], ww[:, 1])  # the two copies of input 0 now carry different weights


def test_bad_lifts_and_norms() -> None:
    with pytest.raises(W.WideningError, match="injective"):
        W.Lift(torch.tensor([0, 0]), torch.ones(2, dtype=torch.float64), 2)
    with pytest.raises(W.WideningError, match="cannot widen"):
        W.Lift.repeat(4, 3)
    with pytest.raises(W.WideningError, match="whole number"):
        W.Lift.repeat(4, 6, 1.0, "global")
    with pytest.raises(W.WideningError, match="norm kind"):
        W.widen_norm(None, None, W.Lift.repeat(2, 4), 1e-5, "batchnorm")
    _, _, eps, exact = W.widen_norm(torch.ones(2), torch.zeros(2), W.Lift.repeat(2, 3), 1e-5, "layernorm")
    assert not exact  # uneven copies: LayerNorm's mean counts them
    _, _, eps, exact = W.widen_norm(torch.ones(2), None, W.Lift.repeat(2, 3), 1e-5, "rmsnorm")
    assert exact and math.isclose(eps, 1e-5 * 2 / 3)


def test_bad_widths() -> None:
    model = LanguageModel(ModelConfig(block="transformer", d=16, heads=2, layers=1, ctx=8, ffn="swiglu"))
    with pytest.raises(W.WideningError, match="integer factor"):
        W.widen_lm(model, 24)  # RoPE and 3/2
    with pytest.raises(W.WideningError, match="nothing to widen"):
        W.widen_lm(model, 16)
    with pytest.raises(W.WideningError, match="heads"):
        W.widen_lm(LanguageModel(ModelConfig(block="transformer", d=16, heads=4, layers=1, ctx=8,
                                             positions="learned")), 18)
    with pytest.raises(W.WideningError, match="integer factor >= 2"):
        W.widen_bert(Bert(BertConfig(d=16, heads=2, layers=1, ctx=8)), 1)


def test_symmetry_and_gradient_identity() -> None:
    """Exact copies: the stream stays in the copied subspace, the gradient is the lifted small gradient; a random
    split keeps the function but not the symmetry."""
    with default_dtype(torch.float64):
        torch.manual_seed(0)
        small = spread(LanguageModel(ModelConfig(block="transformer", d=16, heads=2, layers=1, ctx=16,
                                                 residual="pre", norm="rmsnorm", ffn="swiglu",
                                                 positions="learned")).double(), 1)
        idx = W.probe_batch(256, 16)
        copy = W.widen_lm(small, 32)
        split = W.widen_lm(small, 32, split=0.2, seed=1)
        assert W.max_logit_difference(small, split.model, idx)[1] < TOL
        for model in (small, copy.model, split.model):
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(idx[:, :-1]).reshape(-1, 256), idx[:, 1:].reshape(-1)).backward()
        grads = {n: p.grad for n, p in small.named_parameters()}
        wide = dict(copy.model.named_parameters())
        for name, (out, inp) in copy.lifts.items():
            lifted = W.lift_gradient(grads[name], out, inp)
            assert torch.allclose(wide[name].grad, lifted, rtol=1e-10, atol=1e-14), name
        assert W.weight_residual(copy.model, copy.lifts) < 1e-14
        assert W.weight_residual(split.model, split.lifts) > 1e-2
        opt = torch.optim.SGD(copy.model.parameters(), lr=0.5)
        opt.step()
        hidden = copy.model(idx, return_hidden=True)[1][-1]
        assert W.subspace_residual(hidden, copy.stream) < 1e-13


def _save(tmp_path: Path, model: torch.nn.Module, name: str = "small.pt") -> Path:
    path = tmp_path / name
    W.save_checkpoint(model, path)
    return path


@pytest.mark.parametrize("kind", ["bert", "gau", "transformer"])
def test_widen_command(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    torch.manual_seed(0)
    if kind == "bert":
        model: torch.nn.Module = Bert(BertConfig(d=16, heads=2, layers=1, ctx=32))
    else:
        model = LanguageModel(ModelConfig(block=kind, d=16, heads=2, layers=1, ctx=32, s=8))
    path = _save(tmp_path, model.double())
    before = path.read_bytes()
    out = tmp_path / "wide.pt"
    assert main(["widen", str(path), "--factor", "3", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["wide_d"] == 48 and result["exact"]
    assert result["relative_logit_difference"] < TOL
    assert path.read_bytes() == before
    wide = W.load_checkpoint(out)
    assert wide.cfg.d == 48  # type: ignore[union-attr]
    assert main(["widen", str(path), "--factor", "2", "--out", str(tmp_path / "w2.pt")]) == 0
    assert "largest logit difference" in capsys.readouterr().out


@pytest.mark.parametrize("args,message", [
    (["--factor", "1"], "integer >= 2"),
    (["--factor", "1.5"], "integer >= 2"),
    (["--factor", "two"], "integer >= 2"),
])
def test_widen_command_bad_factor(tmp_path: Path, args: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(tmp_path, Bert(BertConfig(d=16, heads=2, layers=1, ctx=8)))
    before = path.read_bytes()
    assert main(["widen", str(path), *args, "--out", str(tmp_path / "w.pt")]) == 2
    assert message in capsys.readouterr().err
    assert path.read_bytes() == before and not (tmp_path / "w.pt").exists()


def test_widen_command_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _save(tmp_path, Bert(BertConfig(d=16, heads=2, layers=1, ctx=8)))
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(good.read_bytes()[:100])
    foreign = tmp_path / "foreign.pt"
    torch.save({"model": {}}, foreign)
    wrong = tmp_path / "wrong.pt"
    state = torch.load(good, weights_only=True)
    state["config"]["d"] = 32  # weights of d = 16 under a d = 32 config
    torch.save(state, wrong)
    exists = tmp_path / "exists.pt"
    exists.write_bytes(b"keep")
    cases = [(corrupt, tmp_path / "a.pt", "not a readable checkpoint"),
             (foreign, tmp_path / "b.pt", "not a checkpoint of format"),
             (wrong, tmp_path / "c.pt", "do not fit"),
             (tmp_path / "missing.pt", tmp_path / "d.pt", "no checkpoint file"),
             (good, exists, "exists"),
             (good, tmp_path / "no" / "dir.pt", "does not exist")]
    for src, dest, message in cases:
        before = src.read_bytes() if src.exists() else None
        assert main(["widen", str(src), "--factor", "2", "--out", str(dest)]) == 2, message
        assert message in capsys.readouterr().err
        if before is not None:
            assert src.read_bytes() == before
    assert exists.read_bytes() == b"keep"


def test_the_gpu_config_has_the_seeds_its_claim_needs_at_the_cpu_records_spread() -> None:
    """The gpu campaign's widening run must be able to tell no saving from bert2BERT's 45%: at the seed spread the
    cpu record measured (its SD of the FLOPs saving), seeds_needed seeds detect 45% with 80% power; the gpu config
    has at least that many (a run that cannot decide its claim would spend GPU time for an inconclusive)."""
    from analysis.core.registry import current_record
    from analysis.studies.widening.experiments.widening import BERT2BERT_SAVING, saving_estimate, seeds_needed

    record, _ = current_record("widening", "cpu", str(Path(__file__).resolve().parent.parent / "results"))
    assert record is not None
    est = saving_estimate(record.data)
    needed = seeds_needed(est.se * math.sqrt(est.n), BERT2BERT_SAVING)
    assert needed is not None and CONFIGS["gpu"].seeds >= needed
