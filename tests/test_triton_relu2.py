"""The fused relu^2 attention kernel under Triton's interpreter (the package sets TRITON_INTERPRET=1 on a machine
without a GPU): outputs and gradients against float64, causal prefixes, padding, the GAU layer, and its errors."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from analysis.core.trial import Trial
from analysis.models import triton_relu2 as tr
from analysis.models.gau import GAU, GAUConfig, kernel_gau
from analysis.studies.flash.experiments import gau_kernel as gk

pytestmark = pytest.mark.skipif(not tr.available() or not (torch.cuda.is_available() or tr.interpreting()),
                                reason="needs Triton, and a GPU or its interpreter")
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture(scope="module")
def checked() -> dict:
    """The experiment's check at smoke sizes: every dtype, norm and causality, with a padded sequence."""
    cfg = gk.CONFIGS["smoke"]
    return gk.run_trial(cfg, Trial("check", cfg.seed), DEVICE)


def test_every_case_is_within_its_rounding_bound(checked: dict) -> None:
    assert len(checked.cases) == 2 * 2 * len(gk.DTYPES)
    for case in checked.cases:
        assert set(case["errors"]) == {"out", "dz", "dv", "dgamma_q", "dbeta_q", "dgamma_k", "dbeta_k"}
        worst = max(case["errors"].values())
        assert 0 < worst <= case["bound"], case


def test_the_bound_is_not_loose_enough_to_pass_a_wrong_kernel() -> None:
    """Dropping the causal mask or the square of relu moves outputs by far more than the bound."""
    gen = torch.Generator().manual_seed(1)
    z, v = torch.randn(1, 40, 16, generator=gen), torch.randn(1, 40, 24, generator=gen)
    ones = [torch.ones(16), torch.zeros(16), torch.ones(16), torch.zeros(16)]
    c = tr.row_scale_for(torch.ones(1, 40, dtype=torch.bool), 16, "relu2_ns", True)
    out = tr.relu2_attention_fused(z, z, v, c, True)
    mag = gk.reference(z.abs().double(), v.abs().double(), tuple(t.double() for t in ones), c.double(), True)
    wrong = gk.reference(z.double(), v.double(), tuple(t.double() for t in ones), c.double(), False)
    right = gk.reference(z.double(), v.double(), tuple(t.double() for t in ones), c.double(), True)
    assert gk._componentwise(out, right, mag) <= gk.bound("float32", 40, 24)
    assert gk._componentwise(out, wrong, mag) > 100 * gk.bound("float32", 40, 24)


def test_prefix_and_padding_are_exact(checked: dict) -> None:
    assert checked.prefix_gap == 0.0 and checked.padding_gap == 0.0
    assert checked.sizes["prefix"] % 64 != 0  # the prefix ends inside a tile


def test_many_tiles_in_every_direction() -> None:
    """n over three query and key tiles, e over two column tiles, s not a power of two: float32 against float64."""
    gen = torch.Generator().manual_seed(2)
    b, n, s, e = 1, 150, 24, 200
    z = torch.randn(b, n, s, generator=gen, dtype=torch.float64) / s**0.25
    v = torch.randn(b, n, e, generator=gen, dtype=torch.float64)
    ones = (torch.ones(s, dtype=torch.float64), torch.zeros(s, dtype=torch.float64)) * 2
    for causal in (False, True):
        c = tr.row_scale_for(torch.ones(b, n, dtype=torch.bool), s, "relu2_n2", causal).double()
        want = gk.reference(z, v, ones, c, causal)
        mag = gk.reference(z.abs(), v.abs(), ones, c, causal)
        got = tr.relu2_attention_fused(z.float(), z.float(), v.float(), c.float(), causal)
        assert gk._componentwise(got, want, mag) <= gk.bound("float32", n, e)


def test_kernel_gau_equals_the_lean_layer() -> None:
    """The GAU layer with the kernel: outputs and parameter gradients equal the lean layer's (float32)."""
    cfg = GAUConfig(d=32, e=48, s=16, causal=True, norm="relu2_ns")
    torch.manual_seed(0)
    lean = GAU(cfg)
    fused = kernel_gau(cfg)
    fused.load_state_dict(lean.state_dict())
    x = torch.randn(2, 70, 32)
    mask = torch.ones(2, 70, dtype=torch.bool)
    mask[1, 50:] = False
    a, b = lean(x, mask), fused(x, mask)
    assert torch.allclose(a, b, rtol=0, atol=1e-5 * float(a.detach().abs().max()))
    a.pow(2).sum().backward()
    b.pow(2).sum().backward()
    for (name, p), q in zip(lean.named_parameters(), fused.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=0, atol=1e-4 * float(p.grad.abs().max()) + 1e-12), name


def test_auto_backend_runs_the_kernel_on_cuda_and_the_lean_path_elsewhere(monkeypatch) -> None:
    """backend "auto" picks the kernel by device type (CUDA, where it applies); "lean" and "dense" never do."""
    quad, flash, soft = GAUConfig(causal=True), GAUConfig(chunk=16), GAUConfig(norm="softmax")
    assert quad.uses_kernel("cuda") and not quad.uses_kernel("cpu")
    assert not flash.uses_kernel("cuda") and not soft.uses_kernel("cuda")
    assert not GAUConfig(backend="lean").uses_kernel("cuda") and not GAUConfig(backend="dense").uses_kernel("cuda")
    assert GAUConfig(backend="kernel").uses_kernel("cpu")
    calls = []
    real = tr.relu2_attention_fused
    monkeypatch.setattr(tr, "relu2_attention_fused", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = torch.randn(1, 20, 32)
    GAU(GAUConfig(d=32, e=48, s=16, causal=True))(x)
    assert calls == []  # auto on the CPU: the lean path
    GAU(GAUConfig(d=32, e=48, s=16, causal=True, backend="kernel"))(x)
    assert calls == [1]


def test_inputs_are_validated() -> None:
    z, v, c = torch.randn(1, 8, 16), torch.randn(1, 8, 24), torch.ones(1, 8)
    with pytest.raises(ValueError, match="v must be"):
        tr.relu2_attention_fused(z, z, torch.randn(1, 7, 24), c, True)
    with pytest.raises(ValueError, match="row_scale must be"):
        tr.relu2_attention_fused(z, z, v, torch.ones(1, 7), True)
    with pytest.raises(ValueError, match="s must be in"):
        tr.relu2_attention_fused(torch.randn(1, 8, 300), torch.randn(1, 8, 300), v, c, True)
    with pytest.raises(ValueError, match="gamma_q"):
        tr.relu2_attention_fused(z, z, v, c, True, gamma_q=torch.ones(3))
    with pytest.raises(ValueError, match="must not require a gradient"):
        tr.relu2_attention_fused(z, z, v, c.requires_grad_(), True)
    with pytest.raises(ValueError, match="v must be float16"):
        tr.relu2_attention_fused(z.double(), z.double(), v.double(), torch.ones(1, 8), True)
    with pytest.raises(ValueError, match="backend 'kernel' applies to quadratic"):
        kernel_gau(GAUConfig(d=32, e=48, s=16, norm="softmax"))
    with pytest.raises(ValueError, match="replaces the lean path"):
        kernel_gau(GAUConfig(d=32, e=48, s=16, backend="dense"))
    with pytest.raises(ValueError, match="norm must be"):
        tr.row_scale_for(torch.ones(1, 8, dtype=torch.bool), 16, "softmax", True)
    with pytest.raises(ValueError, match="n must be"):
        tr.flops(1, 0, 16, 24, True)


def test_flops_count_the_useful_products() -> None:
    """2 n^2 (s + e) forward and twice that backward, halved when causal."""
    assert tr.flops(2, 10, 3, 5, causal=False, backward=False) == 2 * 2 * 100 * 8
    assert tr.flops(2, 10, 3, 5, causal=True) == pytest.approx(0.5 * 3 * 2 * 2 * 100 * 8)


def test_gpu_timing_trial_builds_and_steps_every_layer_on_the_cpu() -> None:
    """The gpu config's layers at tiny sizes: every one builds and steps (the timing itself needs CUDA)."""
    cfg = dataclasses.replace(gk.CONFIGS["smoke"], lengths=(32,), tokens=64)
    out = gk.time_layers(cfg, 32, torch.device("cpu"))
    assert [r["layer"] for r in out["layers"]] == list(gk.LAYERS)
    assert all(r["status"] == "ok" and r["seconds"] > 0 for r in out["layers"])
    gpu = gk.CONFIGS["gpu"]
    assert [t.key for t in gk.trials(gpu)][0] == "check" and len(gk.trials(gpu)) == 1 + len(gpu.lengths)
    if DEVICE.type != "cuda":
        with pytest.raises(ValueError, match="need a CUDA device"):
            gk.run_trial(cfg, Trial("n=32", 0, {"n": 32}), DEVICE)


def test_claims_read_the_record(checked: dict) -> None:
    data = gk.assemble(gk.CONFIGS["smoke"], [checked], "cpu")
    verdicts = {c.key: c.verdict for c in gk.claims(data, "smoke")}
    assert verdicts == {f"kernel-exact-{d}": "holds" for d in gk.DTYPES} | {"kernel-prefix-exact": "holds",
                                                                             "kernel-padding-exact": "holds"}


def test_a_compiled_gau_runs_the_kernel_as_one_opaque_operator() -> None:
    """torch.compile keeps the fused kernel as a custom operator (no trace into the Triton launch, whose helpers
    Inductor's code generation cannot see): the compiled layer's output and gradients are the eager layer's."""
    torch.manual_seed(0)
    layer = GAU(GAUConfig(d=32, e=48, s=16, causal=True, backend="kernel"))
    x = torch.randn(2, 20, 32)
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
    out = compiled(x)
    out.square().mean().backward()
    got = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    ref = layer(x)
    ref.square().mean().backward()
    assert torch.allclose(out, ref, rtol=0, atol=1e-6 * float(ref.abs().max()))
    for g, p in zip(got, layer.parameters()):
        assert torch.allclose(g, p.grad, rtol=0, atol=1e-5 * float(p.grad.abs().max()) + 1e-12)


def test_every_claim_names_the_nearest_lossier_computation(checked: dict) -> None:
    data = gk.assemble(gk.CONFIGS["smoke"], [checked], "cpu")
    claims = {c.key: c for c in gk.claims(data, "smoke")}
    assert all(c.has_rival for c in claims.values()), [k for k, c in claims.items() if not c.has_rival]
    worst = {d: max(max(c["errors"].values()) for c in checked.cases if c["dtype"] == d) for d in gk.DTYPES}
    # float32 against the error at TF32's (and float16's) roundoff; float16 against bfloat16's
    assert claims["kernel-exact-float32"].alternative == worst["float16"]
    assert claims["kernel-exact-float16"].alternative == worst["bfloat16"]
    n, e = checked.sizes["n"], checked.sizes["e"]
    assert claims["kernel-exact-bfloat16"].alternative == pytest.approx((7 + n + e) / 256)
    assert claims["kernel-prefix-exact"].effect == 2.0**-24


def test_the_gpu_targets_name_the_lean_path_and_the_quadratic_slope() -> None:
    import json
    from analysis.core.results import REPO_ROOT
    data = json.loads((REPO_ROOT / "results" / "gau-kernel.gpu.json").read_text())["data"]
    claims = {c.key: c for c in gk.claims(data, "gpu")}
    assert all(c.has_rival for c in claims.values()), [k for k, c in claims.items() if not c.has_rival]
    row = next(t for t in data["timings"] if t["n"] == 2048)
    speed = {gk.layer_id(r["layer"]): r["tokens_per_s"] for r in row["layers"]}
    assert set(speed) == set(gk.LAYERS)  # the record, of data version 1, names its layers by label
    assert [gk.layer_id(k) for k in gk.LAYERS] == list(gk.LAYERS)  # and a newer one by id
    assert claims["kernel-vs-transformer-n2048"].alternative == pytest.approx(speed[gk.LEAN] / speed[gk.TRANSFORMER])
    assert claims["kernel-memory-linear"].alternative == 2.0
