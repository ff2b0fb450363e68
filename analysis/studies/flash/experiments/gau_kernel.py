"""The fused relu^2 attention kernel (:mod:`analysis.models.triton_relu2`): exact against float64, and its speed and
memory on a GPU beside the GAU layer's other paths, FLASH-pytorch's GAU and a Transformer++ layer with SDPA.

* ``check``: outputs and all six gradients (Z, V and the scale-offsets of Q and K) of the kernel in float32,
  bfloat16 and float16 against a float64 dense reference, for relu2_ns and relu2_n2, causal and bidirectional,
  with a padded sequence in the batch and sizes that leave every tile ragged. Also, exactly: a causal prefix gives
  the rows of the longer run, and a padded sequence gives the unpadded one's rows. On the CPU the kernels run
  under Triton's interpreter (``TRITON_INTERPRET=1``), on a GPU compiled.
* ``n=...`` (GPU only): one training step (forward, backward, AdamW; loss the mean square of the output) of single
  layers at d = 768, e = 1,536, s = 128, bf16 autocast, a fixed number of tokens per step: this book's GAU layer
  with the kernel, lean (query blocks), dense eager and dense compiled; FLASH-pytorch's GAU matched to it; and a
  Transformer++ layer (pre-norm attention and SwiGLU, SDPA's flash kernel) with about the GAU layer's parameters.
  Per layer: the median step time over repeats (CUDA events), tokens/s, peak allocated memory. And the attention
  alone, forward and backward, through the kernel: achieved TFLOP/s against the GPU's dense bf16 peak.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from analysis.core.experiment import Workload
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim
from analysis.models import triton_relu2 as tr
from analysis.models.gau import GAU, GAUConfig, kernel_gau
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.studies.flash.experiments.flash_bench import _peer_gau, _Stack

NAME = "gau-kernel"
PRIORITY = 15  # the gpu campaign's order: after the speed, length and headline claims (their CLAIM_PRIORITY 10 to 14)
DATA_VERSION = 2  # 2: timing rows name their layer by id, not by its label
SOURCE = "this book's fused relu^2 attention kernel (Triton)"
TARGET = "this book's target for its kernel"
# why only a gpu run decides the kernel's claims: what a CPU runs is an emulation of the GPU code
GPU_ARITHMETIC = ("the kernel is GPU code: Triton's interpreter on the CPU emulates it in NumPy, with other roundings "
                  "and sum orders than the GPU's")
GPU_SPEED = "a target for the kernel's speed or memory on a GPU"
DTYPES = ("float32", "bfloat16", "float16")
# each timed layer by its id, which records and findings use; LABELS names each for a reader
LAYERS = ("gau-kernel", "gau-lean", "gau-dense", "gau-dense-compiled", "flash-pytorch-gau-matched", "transformer")
KERNEL, LEAN, MATCHED_PEER, TRANSFORMER = LAYERS[0], LAYERS[1], LAYERS[4], LAYERS[-1]
LABELS = {"gau-kernel": "GAU layer, kernel (ours)", "gau-lean": "GAU layer, lean (ours)",
          "gau-dense": "GAU layer, dense (ours)", "gau-dense-compiled": "GAU layer, dense, compiled (ours)",
          "flash-pytorch-gau-matched": "FLASH-pytorch GAU layer, matched", "transformer": "Transformer++ layer (SDPA)"}
_BY_LABEL = {label: layer for layer, label in LABELS.items()}  # records of data version 1 name layers by label
U = {"float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}  # unit roundoff of each dtype


@dataclass(frozen=True)
class Config:
    """Sizes of the exactness check and of the GPU timing (lengths empty: no timing trials)."""

    d: int
    e: int
    s: int
    lengths: tuple[int, ...]  # timing trials (GPU); none on the CPU, where only the interpreter runs the kernel
    tokens: int  # per timed step: batch = tokens / n
    repeats: int
    warmup: int
    check_batch: int
    check_n: int
    check_s: int
    check_e: int
    compile_backend: str = "inductor"
    peak_tflops: float = 989.0  # dense bf16 of an H100 SXM (NVIDIA's datasheet, without sparsity)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.check_batch < 2:
            raise ValueError(f"check_batch must be at least 2 (one padded sequence); got {self.check_batch}")
        if any(n < 1 for n in self.lengths) or self.tokens < 1:
            raise ValueError("lengths and tokens must be positive")


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, e=64, s=16, lengths=(), tokens=128, repeats=1, warmup=1, check_batch=2, check_n=40,
                    check_s=16, check_e=24, compile_backend="aot_eager"),
    "cpu": Config(d=768, e=1536, s=128, lengths=(), tokens=16384, repeats=10, warmup=3, check_batch=2, check_n=150,
                  check_s=24, check_e=200),
    "gpu": Config(d=768, e=1536, s=128, lengths=(512, 1024, 2048, 4096, 8192, 16384), tokens=16384, repeats=10,
                  warmup=3, check_batch=2, check_n=1000, check_s=128, check_e=320),
}


def trials(cfg: Config) -> list[Trial]:
    """The exactness check, then one timing trial per length."""
    return [Trial("check", cfg.seed)] + [Trial(f"n={n}", cfg.seed, {"n": n}) for n in cfg.lengths]


def reference(z: torch.Tensor, v: torch.Tensor, gammas: tuple[torch.Tensor, ...], row_scale: torch.Tensor,
              causal: bool) -> torch.Tensor:
    """O = c (relu(Q K^T)^2 * M) V with Q = Z g_q + b_q, K = Z g_k + b_k: the dense formula, in the inputs' dtype."""
    gq, bq, gk, bk = gammas
    q, k = z * gq + bq, z * gk + bk
    p = torch.relu(q @ k.transpose(-1, -2)) ** 2
    if causal:
        n = z.shape[1]
        p = p * torch.ones(n, n, dtype=torch.bool, device=z.device).tril()
    return (p @ v) * row_scale[..., None]


def bound(dtype: str, n: int, e: int) -> float:
    """First-order worst case of each entry's error, in units of that entry's magnitude (the same computation on
    absolute values, which no cancellation shrinks): the longest chain rounds 7 times to the dtype (forward: Z in Q
    and K, 2u in S and 4u in relu(S)^2, then P, V and O; backward dZ: Z, dO, V, dS, K and dZ), plus float32 sums
    of n and e terms."""
    return 7 * U[dtype] + (n + e) * U["float32"]


def check(cfg: Config, device: torch.device) -> dict[str, Any]:
    """Largest componentwise errors of the kernel against float64 (each entry's error over its magnitude, the same
    computation on absolute values), per dtype, norm and causality; prefix and padding gaps."""
    gen = torch.Generator().manual_seed(cfg.seed)
    b, n, s, e = cfg.check_batch, cfg.check_n, cfg.check_s, cfg.check_e
    mask = torch.ones(b, n, dtype=torch.bool)
    mask[-1, n - n // 4:] = False  # the last sequence padded by a quarter
    z = torch.randn(b, n, s, generator=gen, dtype=torch.float64) / s**0.25
    v = torch.randn(b, n, e, generator=gen, dtype=torch.float64) * mask[..., None]
    gammas = tuple(torch.randn(s, generator=gen, dtype=torch.float64) * 0.2 + (1.0 if i % 2 == 0 else 0.0)
                   for i in range(4))  # scales near 1, offsets near 0
    grad_out = torch.randn(b, n, e, generator=gen, dtype=torch.float64)
    cases = []
    if device.type != "cuda" and not tr.interpreting():
        raise ValueError("on the CPU the kernel runs only in Triton's interpreter: set TRITON_INTERPRET=1 before "
                         "Triton is imported (importing analysis first does it on a machine without a GPU)")
    for norm in ("relu2_ns", "relu2_n2"):
        for causal in (False, True):
            c = tr.row_scale_for(mask, s, norm, causal).double()
            inputs = [t.clone().requires_grad_() for t in (z, v, *gammas)]
            ref = reference(inputs[0], inputs[1], tuple(inputs[2:]), c, causal)
            want = torch.autograd.grad((ref * grad_out).sum(), inputs)
            absolute = [t.abs().requires_grad_() for t in (z, v, *gammas)]
            mag = reference(absolute[0], absolute[1], tuple(absolute[2:]), c, causal)
            mags = torch.autograd.grad((mag * grad_out.abs()).sum(), absolute)
            for dtype in DTYPES:
                dt = getattr(torch, dtype)
                low = [z.to(dt).to(device).requires_grad_(), v.to(dt).to(device).requires_grad_(),
                       *(g.float().to(device).requires_grad_() for g in gammas)]
                out = tr.relu2_attention_fused(low[0], low[0], low[1], c.float().to(device), causal, *low[2:])
                got = torch.autograd.grad((out * grad_out.to(dt).to(device)).sum(), low)
                errors = {"out": _componentwise(out, ref, mag)}
                errors.update({f"d{name}": _componentwise(g, w, m) for name, g, w, m in
                               zip(("z", "v", "gamma_q", "beta_q", "gamma_k", "beta_k"), got, want, mags)})
                cases.append({"norm": norm, "causal": causal, "dtype": dtype, "errors": errors,
                              "bound": bound(dtype, n, e)})
    zf, vf = z.float().to(device), v.float().to(device)
    full = tr.relu2_attention_fused(zf, zf, vf, tr.row_scale_for(mask, s, "relu2_ns", True).to(device), True)
    m = n // 2 + 3  # a prefix that ends inside a tile
    head = tr.relu2_attention_fused(zf[:, :m], zf[:, :m], vf[:, :m],
                                    tr.row_scale_for(mask[:, :m], s, "relu2_ns", True).to(device), True)
    real = int(mask[-1].sum())
    padding_gaps = []
    for causal in (False, True):
        one = tr.relu2_attention_fused(zf[-1:], zf[-1:], vf[-1:],
                                       tr.row_scale_for(mask[-1:], s, "relu2_ns", causal).to(device), causal)
        cut = tr.relu2_attention_fused(zf[-1:, :real], zf[-1:, :real], vf[-1:, :real],
                                       tr.row_scale_for(mask[-1:, :real], s, "relu2_ns", causal).to(device),
                                       causal)
        padding_gaps.append(float((one[:, :real] - cut).abs().max()))
    return {"cases": cases, "prefix_gap": float((full[:, :m] - head).abs().max()), "padding_gap": max(padding_gaps),
            "sizes": {"batch": b, "n": n, "s": s, "e": e, "prefix": m, "real": real},
            "interpreted": device.type != "cuda"}


def _componentwise(got: torch.Tensor, want: torch.Tensor, magnitude: torch.Tensor) -> float:
    """max over entries of |got - want| / magnitude (inf where the magnitude is 0 and the entries differ)."""
    gap = (got.detach().double().cpu() - want.detach()).abs()
    mag = magnitude.detach()
    ratio = torch.where(mag > 0, gap / mag.clamp(min=torch.finfo(torch.float64).tiny),
                        torch.where(gap > 0, torch.inf, 0.0))
    return float(ratio.max())


def build(name: str, cfg: Config, n: int) -> nn.Module:
    """One of :data:`LAYERS` at the config's sizes, causal (the compiled one wrapped in ``torch.compile``)."""
    if name not in LAYERS:
        raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {name!r}")
    if name == TRANSFORMER:  # one Transformer++ block (pre-norm, RoPE, SDPA attention, SwiGLU) as a layer on x
        return _Stack(LanguageModel(ModelConfig(d=cfg.d, layers=1, block="transformer", residual="pre", ffn="swiglu",
                                                heads=max(1, cfg.d // 64), ctx=n)))
    if name == MATCHED_PEER:
        return _peer_gau(cfg.d, cfg.s, matched=True)
    gcfg = GAUConfig(d=cfg.d, e=cfg.e, s=cfg.s, causal=True,
                     backend="dense" if name in ("gau-dense", "gau-dense-compiled") else "lean")
    if name == KERNEL:
        return kernel_gau(gcfg)
    layer = GAU(gcfg)
    if name == "gau-dense-compiled":
        compiled: nn.Module = torch.compile(layer, backend=cfg.compile_backend)  # type: ignore[assignment]
        return compiled
    return layer


def _timed(step: Any, device: torch.device, repeats: int, warmup: int) -> list[float]:
    """Seconds of ``repeats`` calls of ``step`` after ``warmup``: CUDA events on a GPU, the host clock elsewhere."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            start_s = time.perf_counter()
            step()
            times.append(time.perf_counter() - start_s)
    return times


def time_layers(cfg: Config, n: int, device: torch.device) -> dict[str, Any]:
    """Per layer: median training-step seconds, tokens/s, peak allocated bytes; the kernel's attention TFLOP/s (on
    the CPU, under the interpreter, this only checks that every layer builds and steps: no record holds it)."""
    batch = max(1, cfg.tokens // n)
    gen = torch.Generator().manual_seed(cfg.seed)
    x = torch.randn(batch, n, cfg.d, generator=gen).to(device)
    rows = []
    for name in LAYERS:
        torch.manual_seed(cfg.seed)
        try:
            layer = build(name, cfg, n).to(device)
        except ImportError as err:
            rows.append({"layer": name, "status": f"not installed ({err})"})
            continue
        opt = torch.optim.AdamW(layer.parameters(), lr=1e-4, fused=device.type == "cuda")

        def step() -> None:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = layer(x).float().pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        try:
            times = _timed(step, device, cfg.repeats, cfg.warmup)
        except torch.OutOfMemoryError:
            rows.append({"layer": name, "status": "out of memory"})
            continue
        median = statistics.median(times)
        peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
        rows.append({"layer": name, "status": "ok", "seconds": median, "all_seconds": times,
                     "tokens_per_s": batch * n / median, "peak_bytes": peak,
                     "parameters": sum(p.numel() for p in layer.parameters())})
        del layer, opt
    qz = torch.randn(batch, n, cfg.s, generator=gen).to(device, torch.bfloat16).requires_grad_()
    v = torch.randn(batch, n, cfg.e, generator=gen).to(device, torch.bfloat16).requires_grad_()
    c = tr.row_scale_for(torch.ones(batch, n, dtype=torch.bool, device=device), cfg.s, "relu2_ns", True)

    def attention() -> None:
        tr.relu2_attention_fused(qz, qz, v, c, True).float().pow(2).mean().backward()

    times = _timed(attention, device, cfg.repeats, cfg.warmup)
    seconds = statistics.median(times)
    flops = tr.flops(batch, n, cfg.s, cfg.e, causal=True)
    return {"n": n, "batch": batch, "layers": rows, "attention_seconds": seconds, "attention_flops": flops,
            "attention_tflops": flops / seconds / 1e12}


@dataclass(frozen=True)
class Check:
    """The kernel against float64 per case (norm, causality, dtype), the causal prefix and padding gaps, the sizes,
    and whether Triton's interpreter ran it."""

    key: str
    cases: list[dict[str, Any]]
    prefix_gap: float
    padding_gap: float
    sizes: dict[str, int]
    interpreted: bool


@dataclass(frozen=True)
class Timing:
    """One length's training-step timings per layer, and the attention alone (seconds, FLOPs, TFLOP/s)."""

    key: str
    n: int
    batch: int
    layers: list[dict[str, Any]]
    attention_seconds: float
    attention_flops: float
    attention_tflops: float


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Check | Timing:
    """The check (on any device: the interpreter on the CPU), or one length's timings (CUDA only)."""
    if trial.key == "check":
        return Check("check", **check(cfg, device))
    if device.type != "cuda":
        raise ValueError(f"{trial.key}: the timing trials need a CUDA device; got {device}")
    return Timing(trial.key, **time_layers(cfg, int(trial.params["n"]), device))


def assemble(cfg: Config, results: list[Check | Timing], device_type: str) -> dict[str, Any]:
    """The check and the timings in trial order, with the sizes and the peak the claims read."""
    return {"device_type": device_type, "check": fields_of(results[0]), "timings": [fields_of(r) for r in results[1:]],
            "peak_tflops": cfg.peak_tflops, "sizes": {"d": cfg.d, "e": cfg.e, "s": cfg.s, "tokens": cfg.tokens}}


# Compile seconds no FLOP count captures, until the first GPU trials calibrate the estimate. Timing: inductor's compile of
# the dense GAU layer, 10 to 15 s (first forward plus first step) in flash-bench's cpu record, and the kernel's 3 Triton
# compiles: 20 s. Check: 3 kernels for each of 6 dtype x causality pairs at about 1.5 s each (assumed): 30 s.
COMPILE_S = {"check": 30.0, "timing": 20.0}


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """Counted work: the check's 12 reference and kernel passes; a timing trial's six layers and the attention. Each
    with its compile time as an overhead (:data:`COMPILE_S`), which no FLOP count captures."""
    if trial.key == "check":
        n, s, e = cfg.check_n, cfg.check_s, cfg.check_e
        work = 12 * tr.flops(cfg.check_batch, n, s, e, causal=False) * 2
        return [Workload("kernel check against float64", flops=work, memory_bytes=8.0 * cfg.check_batch * n * n,
                         overhead_s=COMPILE_S["check"])]
    n = int(trial.params["n"])
    batch = max(1, cfg.tokens // n)
    per_step = 6.0 * batch * n * 3 * cfg.d * cfg.e + tr.flops(batch, n, cfg.s, cfg.e, causal=False)
    return [Workload(f"six layers and the attention at n = {n}",
                     flops=(len(LAYERS) + 1) * (cfg.repeats + cfg.warmup) * per_step,
                     memory_bytes=4.0 * batch * n * (cfg.d + 4 * cfg.e), overhead_s=COMPILE_S["timing"])]


def layer_id(name: str) -> str:
    """The id of a timing row's layer, from a record of any data version (version 1 named it by its label)."""
    return _BY_LABEL.get(name, name)


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The check's worst error per dtype (over cases and tensors) against its bound; per length the layers'
    tokens/s relative to the Transformer++ layer and the kernel's attention TFLOP/s as a fraction of peak."""
    worst: dict[str, dict[str, float]] = {}
    for case in data["check"]["cases"]:
        w = worst.setdefault(case["dtype"], {"error": 0.0, "bound": case["bound"]})
        w["error"] = max(w["error"], max(case["errors"].values()))
    lengths = []
    for t in data["timings"]:
        ok = {layer_id(r["layer"]): r for r in t["layers"] if r["status"] == "ok"}
        base = ok.get(TRANSFORMER)
        lengths.append({"n": t["n"], "peak_fraction": t["attention_tflops"] / data["peak_tflops"],
                        "vs_transformer": {k: r["tokens_per_s"] / base["tokens_per_s"] for k, r in ok.items()}
                        if base else {},
                        "peak_bytes": {k: r["peak_bytes"] for k, r in ok.items()}})
    return {"worst": worst, "lengths": lengths}


def memory_exponent(data: dict[str, Any], layer: str = KERNEL, tail: int = 3) -> float:
    """Log-log slope of peak memory per sequence against n over the ``tail`` largest lengths (nan if too few)."""
    points = [(t["n"], r["peak_bytes"] / t["batch"]) for t in data["timings"] for r in t["layers"]
              if layer_id(r["layer"]) == layer and r["status"] == "ok"]
    points = points[-tail:]
    if len(points) < 2:
        return float("nan")
    (n0, m0), (n1, m1) = points[0], points[-1]
    return math.log(m1 / m0) / math.log(n1 / n0)


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The kernel equals float64 within its rounding bound per dtype; prefix and padding exact; on a GPU the
    targets: 50% of peak for the attention at n >= 4096, 0.9x the Transformer++ layer at n >= 2048, memory linear."""
    s = summary(data)
    chk = data["check"]
    where = "Triton's interpreter on the CPU" if chk["interpreted"] else "compiled on the GPU"
    size = chk["sizes"]
    out = []
    rivals = exact_rivals(s["worst"], size)
    for dtype, w in s["worst"].items():
        out.append(Claim(
            f"kernel-exact-{dtype}", f"The fused kernel's output and six gradients in {dtype} equal the float64 "
            f"dense formula to rounding (largest error of an entry over its magnitude, over relu2_ns and relu2_n2, "
            f"causal and not, a padded sequence; n = {size['n']}, s = {size['s']}, e = {size['e']}; {where}; "
            f"{label})", SOURCE, 0.0, w["error"], 0.0, w["bound"],
            f"first-order worst case per entry: 7 roundings to {dtype} (u = {U[dtype]:.3g}) and float32 sums of "
            f"n + e terms, over the entry's magnitude (the computation on absolute values)",
            kind="upper_bound", unit="relative", gpu_only=GPU_ARITHMETIC, **rivals.get(dtype, {})))
    out.append(Claim("kernel-prefix-exact", f"A causal prefix of {size['prefix']} positions gives exactly the rows of "
                     f"the {size['n']}-position run (largest gap, float32; {where}; {label})", SOURCE, 0.0,
                     chk["prefix_gap"], 0.0, 0.0, "exact: the same tiles, zeros where the shorter run masks its loads",
                     kind="upper_bound", gpu_only=GPU_ARITHMETIC,
                     effect=U["float32"]))  # equal only to rounding: one float32 roundoff on entries of order 1
    out.append(Claim("kernel-padding-exact", f"A sequence padded from {size['real']} to {size['n']} positions gives "
                     f"exactly the unpadded rows, causal and not (largest gap, float32; {where}; {label})", SOURCE,
                     0.0, chk["padding_gap"], 0.0, 0.0, "exact: padded keys add relu(S)^2 x 0 = 0 to each sum",
                     kind="upper_bound", gpu_only=GPU_ARITHMETIC,
                     effect=U["float32"]))  # equal only to rounding: one float32 roundoff on entries of order 1
    shortest = s["lengths"][0] if s["lengths"] else None
    for row in s["lengths"]:
        n = row["n"]
        if n >= 4096:
            out.append(Claim(f"kernel-peak-n{n}", f"The kernel's attention, forward and backward in bf16, reaches 50% "
                             f"of the dense bf16 peak ({data['peak_tflops']:.0f} TFLOP/s) at n = {n} ({label})", TARGET,
                             0.5, row["peak_fraction"], 0.0, 0.0, "a target, not an estimate: the median of repeats",
                             kind="lower_bound", unit="of peak", gpu_only=GPU_SPEED,
                             alternative=shortest["peak_fraction"] if shortest else 0.0,
                             alternative_note=f"no gain from longer rows: the fraction at n = {shortest['n']}"
                             if shortest else "no throughput"))
        ratio = row["vs_transformer"].get(KERNEL)
        if n >= 2048 and ratio is not None:
            out.append(Claim(f"kernel-vs-transformer-n{n}", f"The GAU layer with the kernel trains at 0.9x or more "
                             f"of the Transformer++ layer's tokens/s (SDPA flash kernel) at n = {n} ({label})", TARGET,
                             0.9, ratio, 0.0, 0.0, "a target, not an estimate: medians of repeats",
                             kind="lower_bound", unit="x", gpu_only=GPU_SPEED,
                             alternative=row["vs_transformer"].get(LEAN, 0.0),
                             alternative_note="the same layer's lean path without the kernel, also linear in memory"))
    slope = memory_exponent(data)
    if math.isfinite(slope):
        out.append(Claim("kernel-memory-linear", f"The GAU layer's peak memory with the kernel is linear in n (log-log "
                         f"slope over the 3 largest lengths, per sequence; {label})", TARGET, 1.0, slope, 0.0, 0.1,
                         "0.1 in the exponent: allocator rounding over a factor 4 in n", kind="upper_bound",
                         unit="exponent", gpu_only=GPU_SPEED, alternative=2.0,
                         alternative_note="quadratic in n, as a layer that keeps its n x n matrix"))
    return out


def exact_rivals(worst: dict[str, dict[str, float]], size: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per dtype the error of the nearest lossier computation: float32 against float16's measured error (TF32, Triton's
    default for float32 dot products, has float16's unit roundoff 2^-11), float16 against bfloat16's measured error,
    bfloat16 against the first-order worst case with its float32 sums accumulated in bfloat16."""
    out: dict[str, dict[str, Any]] = {}
    if "float16" in worst:
        out["float32"] = {"alternative": worst["float16"]["error"],
                          "alternative_note": "the error at float16's unit roundoff 2^-11, TF32's, which Triton's "
                                              "float32 dot products use by default (the float16 run's)"}
    if "bfloat16" in worst:
        out["float16"] = {"alternative": worst["bfloat16"]["error"],
                          "alternative_note": "the error of bfloat16 in place of float16 (the bfloat16 run's)"}
    out["bfloat16"] = {"alternative": (7 + size["n"] + size["e"]) * U["bfloat16"],
                       "alternative_note": "the worst case with the n + e term sums accumulated in bfloat16, not "
                                           "float32: (7 + n + e) u"}
    return out
