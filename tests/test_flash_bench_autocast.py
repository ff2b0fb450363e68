"""flash-bench's gpu path on the CPU: every implementation trains one step under bf16 autocast (what each point runs
under on CUDA), and GAU's three attention backends (the fused kernel under Triton's interpreter) agree with float32.

CPU autocast casts the same matrix products to bfloat16 as CUDA's; a custom autograd function whose backward mixes
a bfloat16 activation with a float32 weight would raise here as it would on the GPU. The bound: 10 roundings of
bfloat16 (u = 2^-8) relative to the output's largest entry, a first-order allowance for the chain of casts in one
layer; the largest measured is about half of it."""

from __future__ import annotations

import pytest
import torch

from analysis.models import triton_relu2 as tr
from analysis.models.gau import GAU, GAUConfig
from analysis.studies.flash.experiments import flash_bench as fb

BF16_U = 2.0**-8
BOUND = 10 * BF16_U


def _relative_gap(module: torch.nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        ref = module(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = module(x)
    return float((low.float() - ref).abs().max() / ref.abs().max())


@pytest.mark.parametrize("name", [n for n in fb.IMPLEMENTATIONS + fb.LAYERS if "compiled" not in n])
def test_every_implementation_steps_under_bf16_autocast(name: str) -> None:
    cfg = fb.CONFIGS["smoke"]
    torch.manual_seed(0)
    module = fb.build(name, cfg)
    x = torch.randn(2, 64, cfg.d)
    assert _relative_gap(module, x) <= BOUND
    opt = torch.optim.AdamW(module.parameters(), lr=1e-4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = module(x).float().pow(2).mean()
    loss.backward()
    grads = [p.grad for p in module.parameters() if p.requires_grad]
    assert grads and all(g is not None and g.dtype == torch.float32 and bool(torch.isfinite(g).all()) for g in grads)
    opt.step()


@pytest.mark.parametrize("backend", ["kernel", "lean", "dense"])
def test_gau_backends_under_bf16_autocast(backend: str) -> None:
    if backend == "kernel" and not (tr.available() and tr.interpreting()):
        pytest.skip("the kernel needs Triton's interpreter on a CPU")
    torch.manual_seed(0)
    layer = GAU(GAUConfig(d=32, e=48, s=16, causal=True, norm="relu2_ns", backend=backend))
    x = torch.randn(2, 40, 32)
    assert _relative_gap(layer, x) <= BOUND
    with torch.autocast("cpu", dtype=torch.bfloat16):
        layer(x).float().pow(2).mean().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in layer.parameters())


def test_a_point_that_finds_device_memory_held_refuses_to_run(monkeypatch) -> None:
    """Memory still allocated as a point starts was leaked by an earlier one: the point raises rather than record an
    out-of-memory that is not its own."""
    import dataclasses

    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 2 * fb.HELD_LIMIT_BYTES)
    cfg = dataclasses.replace(fb.CONFIGS["smoke"], device="cuda")
    with pytest.raises(RuntimeError, match="GiB of device memory still allocated .* an earlier point leaked it"):
        fb.measure_point(cfg, "transformer", 32)
