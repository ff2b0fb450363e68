"""Speed and activation memory of FLASH-Quad, FLASH, a Transformer++ and FLASH-pytorch, side by side in one process.

One training step (forward, backward, AdamW) of equal-parameter stacks on random inputs (b, n, d), the loss the
mean square of the output: ``2 L`` GAU layers (FLASH-Quad), ``2 L`` FLASH layers (chunk c), ``L`` Transformer++
layers (pre-norm, RoPE, SwiGLU, scaled_dot_product_attention), and ``2 L`` layers each of lucidrains'
FLASH-pytorch GAU and FLASH as installed (its defaults: pre-LayerNorm, residual, T5 relative-position bias in GAU).
The tokens per step are fixed, so the batch is tokens / n. Per length: the median step time over repeats after
warm-up, with every implementation timed in the same process, threads and sizes; and the bytes of activations
saved for backward (``saved_tensors_hooks``), the part of memory that grows with n: per step, and a sequence's own
(what one more sequence adds, counted at batches 1 and 2) apart from what the batch shares (weights saved for their
gradients, position tables of n rows), which divided by a batch of tokens / n would grow like n² per sequence; and the peak
resident memory of the point's own process (each point runs in a fresh interpreter whose address space is capped). A point over the memory budget or the time budget is
recorded as such and the sweep goes on. The machine's float32 matmul throughput is measured in the same run, so
each implementation's model-FLOP utilisation can be stated against it. At gpu scale every point runs on the GPU in
this process, under bf16 autocast (the Transformer++'s attention then takes scaled_dot_product_attention's flash
kernel), timed to its last kernel; its bf16 matmul throughput is the ceiling, a point out of device memory is recorded
as such, and its peak device memory is recorded beside the process's.
"""

from __future__ import annotations

import dataclasses
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from analysis.core.experiment import Workload
from analysis.core.runner import device_memory_released
from analysis.core.trial import Trial
from analysis.core.verify import Claim
from analysis.models.gau import GAU, GAUConfig
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.models.saved import saved_tensors
from analysis.theory import flash_counts as fc

NAME = "flash-bench"
PRIORITY = 10  # the gpu campaign's order (lower first; 50 by default): the order of the claims' stakes at gpu scale
DATA_VERSION = 6  # raised when the layout or meaning of run()'s data changes (2: the lean stack and the single-layer
# sweep; 3: peak memory is the point's own high-water mark, not one inherited from the parent; 4: one trial per
# implementation, and at gpu scale every point on the GPU under bf16 autocast; 5: saved bytes per sequence are a
# sequence's own, counted at batches 1 and 2, not a step's over its batch; the shared and per-step bytes beside them;
# 6: rows name their implementation by id, not by its label)
SOURCE = "Su 2022, kexue.fm/archives/8934; Hua et al. 2022"
TARGET = "this book's target for its GAU layer"
# each implementation by its id, which is also its trial's key; records and findings are keyed by these ids, and
# LABELS names each for a reader
IMPLEMENTATIONS = ("flash-quad", "flash-quad-lean", "flash", "transformer", "flash-pytorch-gau", "flash-pytorch-flash")
LAYERS = ("gau-layer", "gau-layer-compiled", "gau-layer-lean", "gau-layer-lean-compiled",
          "flash-pytorch-gau-layer-matched", "flash-pytorch-gau-layer-defaults")
MATCHED_PEER, DEFAULT_PEER = LAYERS[4], LAYERS[5]
LABELS = {"flash-quad": "FLASH-Quad (ours)", "flash-quad-lean": "FLASH-Quad lean (ours)", "flash": "FLASH (ours)",
          "transformer": "Transformer++", "flash-pytorch-gau": "FLASH-pytorch GAU",
          "flash-pytorch-flash": "FLASH-pytorch FLASH", "gau-layer": "GAU layer (ours)",
          "gau-layer-compiled": "GAU layer, compiled (ours)", "gau-layer-lean": "GAU layer, lean (ours)",
          "gau-layer-lean-compiled": "GAU layer, lean, compiled (ours)",
          "flash-pytorch-gau-layer-matched": "FLASH-pytorch GAU layer, matched",
          "flash-pytorch-gau-layer-defaults": "FLASH-pytorch GAU layer, defaults"}
PEER_PREFIX = "flash-pytorch"  # the ids of FLASH-pytorch's modules


@dataclass(frozen=True)
class Config:
    """Sizes, lengths, budgets and repeats of the benchmark."""

    d: int
    layers: int  # Transformer++ layers; GAU and FLASH stacks have twice as many
    s: int
    chunk: int
    tokens: int  # per step: batch = tokens / n
    lengths: tuple[int, ...]  # of the equal-parameter stacks
    layer_lengths: tuple[int, ...]  # of the single GAU layers (ours eager, compiled and lean, and the peer's)
    repeats: int
    warmup: int
    threads: int
    memory_budget_gb: float  # of saved activations per step, measured or extrapolated linearly in n from the last
    time_budget_s: float  # per step; a point measured over it, or extrapolated over twice it, ends the sweep
    query_block: int = 256  # rows per block of the lean GAU
    compile_backend: str = "inductor"  # torch.compile's; smoke uses aot_eager (the same tracing, no C++ build)
    isolate: bool = True  # each point in its own capped process (smoke runs them in this one, to save start-ups)
    process_cap_gb: float = 16.0  # address space each point's process may add once started: over it, out of memory
    seed: int = 0
    device: str = "cpu"  # "cuda" at gpu scale: every point on the GPU under bf16 autocast, in this process


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, layers=1, s=16, chunk=16, tokens=256, lengths=(32, 64), layer_lengths=(32, 64), repeats=1,
                    warmup=1, threads=2, memory_budget_gb=1.0, time_budget_s=5.0, query_block=16,
                    compile_backend="aot_eager", isolate=False),
    "cpu": Config(d=256, layers=2, s=128, chunk=128, tokens=8192, lengths=(128, 256, 512, 1024, 2048, 4096, 8192),
                  layer_lengths=(512, 1024, 2048, 4096, 8192), repeats=5, warmup=2, threads=2, memory_budget_gb=3.0,
                  time_budget_s=20.0),
    # lengths from 128: the source places the crossover near 256, so the sweep must reach both sides of it
    "gpu": Config(d=768, layers=6, s=128, chunk=256, tokens=16384,
                  lengths=(128, 256, 512, 1024, 2048, 4096, 8192, 16384),
                  layer_lengths=(2048, 4096, 8192, 16384), repeats=5, warmup=3, threads=16, memory_budget_gb=40.0,
                  time_budget_s=30.0, query_block=1024, isolate=False, device="cuda"),
}


def kind(name: str) -> str:
    """'flash', 'gau' or 'transformer': the layer an implementation (by id) computes (the peer's counted as ours)."""
    if name not in IMPLEMENTATIONS + LAYERS:
        raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS + LAYERS)}; got {name!r}")
    return "transformer" if name == "transformer" else "flash" if name.endswith("flash") else "gau"


def lean(name: str) -> bool:
    """Whether the implementation computes only the causal half of the attention matrix, by query blocks."""
    return "lean" in name


def gau_backend(name: str) -> str:
    """The GAU attention path an implementation names: lean or dense for GAU layers, auto (unused) for the others."""
    return "lean" if lean(name) else "dense" if kind(name) == "gau" else "auto"


class _Stack(nn.Module):
    """Residual sublayers of a LanguageModel (its embedding and output layer left out), applied in order."""

    def __init__(self, model: LanguageModel) -> None:
        super().__init__()
        self.layers = model.sublayers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _peer_gau(d: int, s: int, matched: bool) -> nn.Module:
    """FLASH-pytorch's GAU; matched: its input norm, residual and T5 relative-position bias taken out, so that it
    computes what this book's bare GAU layer computes (the peer divides by n where ours divides by t s)."""
    from flash_pytorch import GAU as PeerGAU

    if not matched:
        return PeerGAU(dim=d, query_key_dim=s, expansion_factor=2.0, causal=True)
    layer = PeerGAU(dim=d, query_key_dim=s, expansion_factor=2.0, causal=True, norm_klass=nn.Identity,
                    add_residual=False)
    layer.rel_pos_bias = None  # the peer builds it whatever its flag says, and skips it when None
    return layer


def _transformer_config(cfg: Config, n: int = 512) -> ModelConfig:
    """The Transformer++ stack's model: pre-norm, RoPE, SwiGLU, heads of 64."""
    return ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer", residual="pre", ffn="swiglu",
                       heads=max(1, cfg.d // 64), ctx=n)


def build(name: str, cfg: Config) -> nn.Module:
    """One of :data:`IMPLEMENTATIONS` (stacks) or :data:`LAYERS` (one GAU layer) at the config's sizes (the peer
    raises ImportError when not installed); compiled ones are wrapped in ``torch.compile``."""
    d, s, c = cfg.d, cfg.s, cfg.chunk
    module: nn.Module
    if name in LAYERS:
        if name.startswith(PEER_PREFIX):
            module = _peer_gau(cfg.d, cfg.s, matched=name == MATCHED_PEER)
        else:
            module = GAU(GAUConfig(d=d, e=2 * d, s=s, causal=True, backend=gau_backend(name),
                                   query_block=cfg.query_block))
        if "compiled" in name:
            compiled: nn.Module = torch.compile(module, backend=cfg.compile_backend)  # type: ignore[assignment]
            return compiled
        return module
    k = kind(name)
    if name.startswith(PEER_PREFIX):
        from flash_pytorch import FLASH
        from flash_pytorch import GAU as PeerGAU

        return nn.Sequential(*[PeerGAU(dim=d, query_key_dim=s, expansion_factor=2.0, causal=True) if k == "gau" else
                               FLASH(dim=d, group_size=c, query_key_dim=s, expansion_factor=2.0, causal=True)
                               for _ in range(2 * cfg.layers)])
    if k == "transformer":
        return _Stack(LanguageModel(_transformer_config(cfg)))
    return _Stack(LanguageModel(ModelConfig(d=d, layers=2 * cfg.layers, block=k, residual="pre", s=s, chunk=c,
                                            gau_backend=gau_backend(name), gau_query_block=cfg.query_block)))


def saved_bytes(module: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves for backward in one forward of ``module`` on ``x``."""
    return sum(size for _, size in saved_tensors(lambda: module(x).pow(2).mean()))


def sequence_bytes(module: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """(a sequence's own saved bytes, the bytes the batch shares): B(2) - B(1) and 2 B(1) - B(2), B(b) the bytes
    saved for backward by a forward of the eager module (a compiled one's original) on b copies of ``x``'s first
    sequence; saved bytes are affine in the batch, B(b) = shared + b x own."""
    eager = getattr(module, "_orig_mod", module)
    one = x[:1]
    b1, b2 = saved_bytes(eager, one), saved_bytes(eager, torch.cat([one, one]))
    return b2 - b1, 2 * b1 - b2


def autocast(device: torch.device) -> Any:
    """bf16 autocast on CUDA (where the Transformer++'s scaled_dot_product_attention takes its flash kernel); float32,
    no autocast, on the CPU."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_time(module: nn.Module, x: torch.Tensor, repeats: int, warmup: int) -> list[float]:
    """Seconds of each training step (forward, backward, AdamW) on ``x``'s device: ``warmup`` untimed ones (their
    first, which compiles a compiled module, is reported apart), then ``repeats`` timed ones; all are returned,
    warm-up first. On CUDA each step runs under bf16 autocast and is timed to its last kernel."""
    opt = torch.optim.AdamW(module.parameters(), lr=1e-4)
    times = []
    for _ in range(warmup + repeats):
        _synchronize(x.device)
        start = time.perf_counter()
        with autocast(x.device):
            loss = module(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        _synchronize(x.device)
        times.append(time.perf_counter() - start)
    return times


def matmul_throughput(threads: int, size: int = 2048, repeats: int = 10, warmup: int = 3,
                      device: str = "cpu") -> float:
    """FLOP/s of a size x size matmul, 2 size^3 / the best of ``repeats`` seconds after ``warmup``: float32 on the CPU,
    bf16 on CUDA (then at least 8,192 wide); the ceiling for these layers (the best, not the median: a ceiling should
    not move with the machine's momentary load)."""
    dev = torch.device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    size = max(size, 8192) if dev.type == "cuda" else size
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size, dtype=dtype, device=dev), torch.randn(size, size, dtype=dtype, device=dev)
        for _ in range(warmup):
            a @ b
        times = []
        for _ in range(repeats):
            _synchronize(dev)
            start = time.perf_counter()
            a @ b
            _synchronize(dev)
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)
    return 2 * size**3 / min(times)


def model_flops_per_token(name: str, cfg: Config, n: int) -> float:
    """Forward FLOPs per token the implementation executes, from the closed forms (the peer counted as our layers
    of its kind): dense GAU and FLASH compute their full n x n (or c x c) matrices and mask them; the lean GAU and
    the Transformer++'s fused causal kernel skip the masked half, so their n-dependent part counts half."""
    d, e, s = cfg.d, 2 * cfg.d, cfg.s
    k = kind(name)
    layers = 1 if name in LAYERS else cfg.layers if k == "transformer" else 2 * cfg.layers
    if k == "flash":
        c = min(cfg.chunk, n)
        return layers * fc.flash_counts(d, e, s, -(-n // c) * c, c).flops
    counts = fc.transformer_counts(d, n) if k == "transformer" else fc.gau_counts(d, e, s, n)
    half = k == "transformer" or lean(name)
    return layers * (counts.linear_flops + counts.length_flops / (2 if half else 1))


HELD_LIMIT_BYTES = 1 << 30  # device memory a point may find allocated at its start: none of its own is yet


def measure_point(cfg: Config, name: str, n: int) -> dict[str, Any]:
    """One implementation at one length, in this process: saved activations, then timed training steps."""
    torch.set_num_threads(cfg.threads)
    device = torch.device(cfg.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        held = torch.cuda.memory_allocated(device)
        if held > HELD_LIMIT_BYTES:  # its out-of-memory would be an earlier point's, recorded as this one's
            raise RuntimeError(f"{held / 2**30:.1f} GiB of device memory still allocated as the point {name!r}, n={n} "
                               "starts: an earlier point leaked it")
    batch = max(1, cfg.tokens // n)
    torch.manual_seed(cfg.seed)
    module = build(name, cfg).to(device)
    x = torch.randn(batch, n, cfg.d, generator=torch.Generator().manual_seed(cfg.seed)).to(device)
    start = time.perf_counter()
    with autocast(device):
        saved = saved_bytes(module, x)  # a compiled module compiles its forward here
    _synchronize(device)
    first_forward = time.perf_counter() - start
    with autocast(device):
        own, shared = sequence_bytes(module, x)
    row: dict[str, Any] = {"batch": batch, "saved_bytes_per_sequence": own, "saved_bytes_shared": shared,
                           "saved_bytes_per_step": saved, "parameters": sum(p.numel() for p in module.parameters())}
    if saved > cfg.memory_budget_gb * 1e9:
        return {**row, "status": "over the memory budget"}
    times = step_time(module, x, cfg.repeats, cfg.warmup)
    timed = times[cfg.warmup:]
    median = statistics.median(timed)
    return {**row, "status": "ok", "seconds": median, "all_seconds": timed, "tokens_per_s": batch * n / median,
            "first_forward_seconds": first_forward, "first_step_seconds": times[0],
            "peak_rss_bytes": peak_resident_bytes(),
            **({"peak_device_bytes": torch.cuda.max_memory_allocated(device)} if device.type == "cuda" else {})}


def _in_process(cfg: Config, name: str, n: int) -> dict[str, Any]:
    """measure_point here; on CUDA, a point that runs out of device memory is recorded as such, and every point's
    memory is handed back for the next, as after a trial (:func:`analysis.core.runner.device_memory_released`: an
    out-of-memory's traceback holds the point's tensors in a cycle; the address-space cap of :func:`_child` bounds
    CPU memory only)."""
    with device_memory_released(torch.device(cfg.device)):
        try:
            return measure_point(cfg, name, n)
        except torch.cuda.OutOfMemoryError:
            return {"status": "out of memory (CUDA)"}


def _proc_status_bytes(field: str) -> int | None:
    """A memory field of /proc/self/status ("VmHWM", "VmSize"), in bytes; None where there is no /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_resident_bytes() -> int:
    """This process's peak resident memory: VmHWM of /proc/self/status, the high-water mark of its own address
    space (ru_maxrss instead keeps the parent's high-water mark across fork and exec); ru_maxrss where there is no
    /proc."""
    peak = _proc_status_bytes("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cap_address_space(extra_gb: float) -> int:
    """Cap this process's address space (RLIMIT_AS) at what it maps now plus ``extra_gb`` GiB; the cap in bytes.

    Relative, not absolute: a CUDA build of torch maps gigabytes of libraries on import, so an absolute cap would
    fail the interpreter before the point starts. Where /proc is missing, the cap is ``extra_gb`` GiB alone."""
    if not extra_gb > 0:
        raise ValueError(f"extra_gb must be > 0; got {extra_gb}")
    cap = (_proc_status_bytes("VmSize") or 0) + int(extra_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return cap


def _child(cfg: Config, name: str, n: int) -> dict[str, Any]:
    """measure_point in a fresh interpreter whose address space may grow by the memory cap once torch and this
    module are imported: a point that would exhaust the machine fails alone (recorded as out of memory), and its peak
    resident memory is its own. A child that fails before its point starts raises (that is no measurement)."""
    code = ("import importlib, json, sys; b = importlib.import_module(sys.argv[4]); "
            "b.cap_address_space(float(sys.argv[5])); print('STARTED', flush=True); "
            "cfg = b.Config(**json.loads(sys.argv[1])); "
            "print('RESULT ' + json.dumps(b.measure_point(cfg, sys.argv[2], int(sys.argv[3]))))")
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}
    argv = [sys.executable, "-c", code, json.dumps(fields), name, str(n), __name__, repr(cfg.process_cap_gb)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = proc.stdout.splitlines()
    for line in lines:
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    err = proc.stderr.lower()
    if "no module named 'flash_pytorch'" in err:
        return {"status": "not installed"}
    started = "STARTED" in lines
    if started and (proc.returncode < 0 or any(w in err for w in ("memoryerror", "alloc", "cannot allocate",
                                                                   "out of memory", "failed to map"))):
        return {"status": f"out of memory (process capped at {cfg.process_cap_gb:g} GiB over its start)"}
    raise RuntimeError(f"benchmark point {name} n = {n} failed{'' if started else ' before it started'}:\n"
                       f"{proc.stderr[-2000:]}")


@dataclass
class Sweep:
    """One implementation at each of its lengths: a trial's result."""

    implementation: str
    matmul_flops_per_s: float  # the machine's matmul ceiling, measured before and after the sweep: the larger
    rows: list[dict[str, Any]]  # per length: status, and for a measured point its sizes, times and memory
    unfused_saved_bytes_per_sequence: float | None  # the Transformer++'s trial only (unfused_transformer_saved_bytes)


def trials(cfg: Config) -> list[Trial]:
    """One trial per implementation, its lengths swept in it (a sweep stops where its extrapolated memory or time
    passes a budget, so it needs its own shorter lengths): stacks, then single layers."""
    return [Trial(name, cfg.seed, {"implementation": name}) for name in IMPLEMENTATIONS + LAYERS]


def claim_trials(cfg: Config) -> dict[str, list[str]]:
    """The implementations each claim reads (the FLASH-pytorch stacks and the compiled layers only inform the figures
    and the table): the crossovers and batch ratios the Transformer++ and a FLASH-Quad, FLASH's exponents FLASH, the
    lean layer's speed the lean layer and a FLASH-pytorch layer, its memory law the lean and the dense layer."""
    def keys(*names: str) -> list[str]:
        return list(names)

    quad, lean_quad, flash, transformer = IMPLEMENTATIONS[:4]
    dense_layer, lean_layer = LAYERS[0], LAYERS[2]
    return {"quad-overtakes-transformer": keys(transformer, quad),
            "quad-lean-overtakes-transformer": keys(transformer, lean_quad),
            "quad-batch": keys(transformer, quad), "quad-batch-unfused": keys(transformer, quad),
            "flash-linear-time": keys(flash), "flash-linear-activation": keys(flash),
            "lean-gau-over-peer-matched": keys(lean_layer, MATCHED_PEER),
            "lean-gau-over-peer-defaults": keys(lean_layer, DEFAULT_PEER),
            "lean-gau-memory-linear": keys(lean_layer, dense_layer)}


def sweep(cfg: Config, name: str, progress: bool = False) -> Sweep:
    """``name`` at each of its lengths (stacks: ``lengths``, single layers: ``layer_lengths``), shortest first, each
    point in a fresh capped process (on CUDA, in this one); a point over a budget, measured or extrapolated linearly
    in n from the last, ends the sweep."""
    kind(name)  # validates
    if torch.device(cfg.device).type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"flash-bench's config runs on {cfg.device}, which this machine does not have")
    peak = matmul_throughput(cfg.threads, device=cfg.device)
    rows: list[dict[str, Any]] = []
    skipped = ""
    last: tuple[int, float, float] | None = None  # (n, saved bytes per step, seconds) of the last point measured
    for n in sorted(cfg.layer_lengths if name in LAYERS else cfg.lengths):
        row: dict[str, Any] = {"implementation": name, "n": n}
        batch = max(1, cfg.tokens // n)
        if last is not None and not skipped:
            # at fixed tokens per step, quadratic work and memory per step grow like n: extrapolate first
            n0, saved0, seconds0 = last
            if saved0 * n / n0 > cfg.memory_budget_gb * 1e9:
                skipped = "over the memory budget (extrapolated)"
            elif seconds0 * n / n0 > 2 * cfg.time_budget_s:
                skipped = "over the time budget (extrapolated)"
        if skipped:
            rows.append({**row, "status": skipped})
            continue
        point = _child(cfg, name, n) if cfg.isolate else _in_process(cfg, name, n)
        rows.append({**row, **point})
        if point["status"] != "ok":
            skipped = point["status"]
            continue
        last = (n, point["saved_bytes_per_step"], point["seconds"])
        if point["seconds"] > cfg.time_budget_s:
            skipped = "over the time budget"
        if progress:
            print(f"{LABELS[name]:32s} n = {n:6d}: {point['seconds']:.3f} s/step, {point['tokens_per_s']:,.0f} tokens/s, "
                  f"peak {point['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
    peak = max(peak, matmul_throughput(cfg.threads, device=cfg.device))
    unfused = unfused_transformer_saved_bytes(cfg, memory_length(cfg)) if name == "transformer" else None
    return Sweep(name, peak, rows, unfused)


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Sweep:
    """One implementation's sweep, on the config's device (the CPU below gpu scale, whatever the machine has)."""
    return sweep(cfg, str(trial.params["implementation"]))


def assemble(cfg: Config, results: list[Sweep], device_type: str) -> dict[str, Any]:
    """The sweeps as one benchmark: every point's FLOP utilisation against the highest matmul ceiling any trial
    measured, the points in implementation and length order; plain data."""
    names = IMPLEMENTATIONS + LAYERS
    peak = max(r.matmul_flops_per_s for r in results)
    rows = [dict(row) for r in results for row in r.rows]
    for row in rows:
        if row["status"] == "ok":
            flops = 3 * model_flops_per_token(row["implementation"], cfg, row["n"]) * row["batch"] * row["n"]
            row["utilisation"] = flops / row["seconds"] / peak  # forward + backward ~ 3 forwards
    rows.sort(key=lambda r: (names.index(r["implementation"]), r["n"]))
    unfused = next((r.unfused_saved_bytes_per_sequence for r in results
                    if r.unfused_saved_bytes_per_sequence is not None), None)
    return {"device_type": torch.device(cfg.device).type, "threads": cfg.threads, "matmul_flops_per_s": peak,
            "query_block": cfg.query_block, "memory_length": memory_length(cfg),
            "unfused_transformer_saved_bytes_per_sequence": unfused, "rows": rows}


def run(cfg: Config, progress: bool = False, names: tuple[str, ...] = IMPLEMENTATIONS + LAYERS) -> dict[str, Any]:
    """The sweeps of ``names`` in this process, assembled (the trials a campaign runs, for a direct call)."""
    return assemble(cfg, [sweep(cfg, name, progress) for name in names], torch.device(cfg.device).type)


def where(data: dict[str, Any]) -> str:
    """Where a run measured, for its claims: "CPU, 16 threads" or "GPU, bf16 autocast"."""
    return f"CPU, {data['threads']} threads" if data["device_type"] == "cpu" else "GPU, bf16 autocast"


def precision(data: dict[str, Any]) -> str:
    """The arithmetic of a run's steps: float32 on the CPU, bf16 autocast on a GPU."""
    return "float32" if data["device_type"] == "cpu" else "bf16 autocast"


def memory_length(cfg: Config) -> int:
    """The length at which activation memory is compared: 1024, or the largest stack length below it."""
    return max([n for n in cfg.lengths if n <= 1024] or [min(cfg.lengths)])


def unfused_transformer_saved_bytes(cfg: Config, n: int) -> float:
    """Activations a sequence of its own saves (:func:`sequence_bytes`) in the Transformer++ stack with its attention
    computed explicitly (softmax of the n x n scores, stored for backward), as a Transformer without a fused attention
    kernel computes it."""
    torch.manual_seed(cfg.seed)
    model = LanguageModel(_transformer_config(cfg))
    for attention in model.attention_layers():
        attention.track_softmax_gradient = True
    device = torch.device(cfg.device)
    stack = _Stack(model).to(device)
    batch = max(1, cfg.tokens // n)
    x = torch.randn(batch, n, cfg.d, generator=torch.Generator().manual_seed(cfg.seed)).to(device)
    with autocast(device):  # the same arithmetic as the benchmarked stacks
        return float(sequence_bytes(stack, x)[0])


def _series(data: dict[str, Any], name: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    rows = [r for r in data["rows"] if r["implementation"] == name and r["status"] == "ok"]
    return np.array([r["n"] for r in rows], dtype=float), np.array([r[key] for r in rows], dtype=float)


def crossover(data: dict[str, Any], faster: str, slower: str) -> float:
    """The n (log-interpolated) above which ``faster`` has the higher throughput; nan if it never does in range."""
    n_a, t_a = _series(data, faster, "tokens_per_s")
    n_b, t_b = _series(data, slower, "tokens_per_s")
    common = sorted(set(n_a) & set(n_b))
    ratio = [float(t_a[list(n_a).index(n)] / t_b[list(n_b).index(n)]) for n in common]
    for i, (n, r) in enumerate(zip(common, ratio)):
        if r >= 1.0:
            if i == 0:
                return float(n)
            n0, r0 = common[i - 1], ratio[i - 1]
            f = math.log(r0) / (math.log(r0) - math.log(r))
            return float(math.exp(math.log(n0) + f * (math.log(n) - math.log(n0))))
    return float("nan")


def exponent(data: dict[str, Any], name: str, key: str, tail: int = 3) -> float:
    """Log-log slope in n of a per-sequence quantity over the ``tail`` largest lengths measured."""
    n, y = _series(data, name, key)
    if key == "seconds":
        batches = _series(data, name, "batch")[1]
        y = y / batches  # per sequence
    if len(n) < 2:
        return float("nan")
    n, y = n[-tail:], y[-tail:]
    return float(np.polyfit(np.log(n), np.log(y), 1)[0])


def _ratios(data: dict[str, Any], name: str, baseline: str) -> dict[str, float]:
    """tokens/s of ``name`` over ``baseline``'s at every length both ran ("n": ratio)."""
    n_x, t_x = _series(data, name, "tokens_per_s")
    n_b, t_b = _series(data, baseline, "tokens_per_s")
    return {str(int(n)): float(t_x[i] / t_b[list(n_b).index(n)]) for i, n in enumerate(n_x) if n in n_b}


def _spread(data: dict[str, Any], name: str, n: int) -> float:
    """Relative timing error of one point: half the range of its timed repeats over their median."""
    row = next(r for r in data["rows"] if r["implementation"] == name and r["n"] == n and r["status"] == "ok")
    times = row["all_seconds"]
    return float((max(times) - min(times)) / 2 / statistics.median(times))


def _common_lengths(data: dict[str, Any], *names: str) -> list[int]:
    sets = [set(_series(data, name, "n")[0]) for name in names]
    return sorted(int(n) for n in set.intersection(*sets)) if sets else []


def _saved(data: dict[str, Any], name: str, n: int) -> float | None:
    rows = [r for r in data["rows"] if r["implementation"] == name and r["n"] == n and "saved_bytes_per_sequence" in r]
    return float(rows[0]["saved_bytes_per_sequence"]) if rows else None


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Throughput ratios against the Transformer++ per length, crossovers, FLASH's exponents, activation memory per
    sequence at n = 1024 (or the nearest length below), and the single GAU layers against FLASH-pytorch's."""
    ratios = {name: _ratios(data, name, "transformer") for name in IMPLEMENTATIONS}
    ours_over_peer = {ours: _ratios(data, ours, peer) for ours, peer in
                      (("flash-quad", "flash-pytorch-gau"), ("flash", "flash-pytorch-flash"))}
    crossings = {}
    for quad in ("flash-quad", "flash-quad-lean"):
        cross = crossover(data, quad, "transformer")
        both = _common_lengths(data, quad, "transformer")
        crossings[quad] = (cross, (f"overtakes the Transformer++ at n = {cross:.0f}" if math.isfinite(cross) else
                                   "does not overtake the Transformer++ at any length measured (up to n = "
                                   f"{both[-1] if both else 0})"))
    at = data["memory_length"]
    saved_at = {name: _saved(data, name, at) for name in IMPLEMENTATIONS}
    tfm, unfused = saved_at["transformer"], data["unfused_transformer_saved_bytes_per_sequence"]
    batch_ratio = {name: tfm / v for name, v in saved_at.items() if tfm and v}
    unfused_ratio = {name: unfused / v for name, v in saved_at.items() if unfused and v}
    layer = {name: {"over_matched_peer": _ratios(data, name, MATCHED_PEER),
                    "over_default_peer": _ratios(data, name, DEFAULT_PEER)} for name in LAYERS}
    compile_gain = {"dense": _ratios(data, LAYERS[1], LAYERS[0]), "lean": _ratios(data, LAYERS[3], LAYERS[2])}
    return {
        "ours_over_peer": ours_over_peer,
        "quad_vs_transformer_text": crossings["flash-quad"][1],
        "quad_lean_vs_transformer_text": crossings["flash-quad-lean"][1],
        "ratios_vs_transformer": ratios,
        "quad_overtakes_transformer": crossings["flash-quad"][0],
        "quad_lean_overtakes_transformer": crossings["flash-quad-lean"][0],
        "flash_overtakes_quad": crossover(data, "flash", "flash-quad"),
        "flash_time_exponent": exponent(data, "flash", "seconds"),
        "flash_memory_exponent": exponent(data, "flash", "saved_bytes_per_sequence"),
        "quad_memory_exponent": exponent(data, "flash-quad", "saved_bytes_per_sequence"),
        "memory_length": at,
        "saved_bytes_per_sequence_at": saved_at,
        "batch_ratio_vs_transformer": batch_ratio,
        "unfused_transformer_saved_bytes_per_sequence": unfused,
        "batch_ratio_vs_unfused_transformer": unfused_ratio,
        "layers": layer,
        "compile_gain": compile_gain,
        "lean_layer_memory_exponent": exponent(data, LAYERS[2], "saved_bytes_per_sequence"),
        "dense_layer_memory_exponent": exponent(data, LAYERS[0], "saved_bytes_per_sequence"),
    }


GPU_ONLY_CROSSOVER = (
    "the source's crossover is an accelerator's: its author measured on GPUs and says the gap in speed at long n "
    "'shows in the degree of parallelism'; a 2-core CPU runs other kernels, its Transformer++ a fused causal kernel "
    "that skips the masked half, so a CPU run cannot decide it: flash-bench's gpu trials, n = 128 to 16,384 on a "
    "GPU, do")


def crossover_undecided(data: dict[str, Any], shortest: int, first: bool, lowest: float) -> str:
    """Why a crossover claim's gpu run cannot decide it ('' when it can): its faster stack already leads at its
    shortest length ``shortest`` while that length is not below ``lowest``, the least crossover the claim allows (the
    crossover may lie anywhere below it). A cpu run never decides it: the claim is gpu-only
    (:data:`GPU_ONLY_CROSSOVER` says why)."""
    if first and shortest >= lowest:
        return (f"FLASH-Quad leads already at n = {shortest}, the shortest length measured, so its crossover is "
                "somewhere at or below it: a sweep from shorter lengths places it")
    return ""


# A sequence's own saved bytes are exact counts (sequence_bytes); an exponent of exactly 1 is linear, and a term of
# the sequence's constant in n (none in these stacks) would pull the slope below 1
MEMORY_EXPONENT_BASIS = ("saved bytes are exact counts of a sequence's own; 0.02 in the exponent leaves room for a "
                         "term constant in n")


def crossover_claim(data: dict[str, Any], quad: str, key: str, what: str, label: str) -> Claim | None:
    """The source's crossover, n_x ~ 256 (the n above which ``quad`` trains more tokens/s than the Transformer++),
    log-interpolated between the two lengths around it; a bound (and inconclusive where it is no verdict) when the
    sweep never crosses or leads from its shortest length; None when the two share no length."""
    both = _common_lengths(data, quad, "transformer")
    if not both:
        return None
    cross = crossover(data, quad, "transformer")
    never = not math.isfinite(cross)
    first = not never and cross == both[0]  # faster already at the shortest length: the crossover is at or below
    tolerance = 256.0 * (math.sqrt(2) - 1)
    rival = 512.0 if (never or cross >= 256.0) else 128.0  # a crossover one grid step away, on the measured side
    span = (f"no crossover up to n = {both[-1]}, the longest length measured: the crossover is beyond it"
            if never else f"faster already at n = {both[0]}, the shortest length measured: the crossover is at "
            "or below it" if first else "log-interpolated")
    return Claim(key, f"{what} training step overtakes the Transformer++'s in tokens/s at about n = 256 (equal "
                 f"parameters, {where(data)}; {span}; {label})", SOURCE, 256.0, float(both[-1]) if never else cross,
                 0.0, tolerance, "half a grid step: lengths are powers of 2", unit="n",
                 measured_bound="≥" if never else "≤" if first else "",
                 undecided=crossover_undecided(data, both[0], first, 256.0 - tolerance),
                 gpu_only=GPU_ONLY_CROSSOVER, alternative=rival,
                 alternative_note=f"a crossover one grid step away, at n = {rival:.0f}")


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """FLASH-Quad overtakes the Transformer++ near n = 256 and fits about twice its batch; FLASH is linear in n
    (time and saved memory); this book's lean GAU layer trains 1.5x FLASH-pytorch's at n >= 2048, in memory
    linear in n."""
    s = summary(data)
    out = []
    stack_lengths = sorted({r["n"] for r in data["rows"] if r["implementation"] in IMPLEMENTATIONS})
    for quad, key, what in (("flash-quad", "quad-overtakes-transformer", "FLASH-Quad's"),
                            ("flash-quad-lean", "quad-lean-overtakes-transformer", "The lean FLASH-Quad's")):
        claim = crossover_claim(data, quad, key, what, label)
        if claim is not None:
            out.append(claim)
    versions = (("batch_ratio_vs_transformer",
                 "the Transformer++ as benchmarked, whose fused causal attention saves no n x n matrix"),
                ("batch_ratio_vs_unfused_transformer",
                 "the same Transformer++ with its attention computed explicitly, its n x n softmax saved for backward"))
    for key, versus in versions:
        ratio = s[key].get("flash-quad")
        if ratio is None:
            continue
        out.append(Claim(
            f"quad-batch{'-unfused' if 'unfused' in key else ''}", "FLASH-Quad fits about 2x the "
            f"Transformer's batch in the same activation memory, against {versus} (the activations a sequence of "
            f"its own saves for backward, at n = {s['memory_length']}; {label})", SOURCE, 2.0, ratio, 0.0, 0.5,
            "the source's 'about 2x' is one significant figure: 1.5 to 2.5 round to it; the byte counts are exact",
            unit="x", alternative=1.0, alternative_note="no advantage: the same batch"))
    for key, what, tolerance, basis in (
            ("flash_time_exponent", "time", 0.1,
             "0.1 in the exponent: timing noise of a median of repeats over a factor 4 in n"),
            ("flash_memory_exponent", "activation memory", 0.02, MEMORY_EXPONENT_BASIS)):
        value = s[key]
        if math.isfinite(value):
            out.append(Claim(f"flash-linear-{what.split()[0]}", f"FLASH's {what} per sequence is linear in n "
                             f"(log-log slope over the 3 largest of n = {stack_lengths[0]} to {stack_lengths[-1]}; "
                             f"{label})", SOURCE, 1.0, value, 0.0, tolerance, basis, unit="exponent",
                             alternative=2.0, alternative_note="quadratic in n, as attention over all keys"))
    ours = LAYERS[2]
    for peer, which in ((MATCHED_PEER, "matched to ours (no input norm, residual or relative-position bias)"),
                        (DEFAULT_PEER, "with its defaults")):
        common = _common_lengths(data, ours, peer)
        long = [n for n in common if n >= 2048] or common[-1:]
        if not long:
            continue
        ratios = {n: s["layers"][ours]["over_matched_peer" if peer == MATCHED_PEER else "over_default_peer"][str(n)]
                  for n in long}
        worst = min(ratios, key=lambda n: ratios[n])
        error = ratios[worst] * math.hypot(_spread(data, ours, worst), _spread(data, peer, worst))
        out.append(Claim(f"lean-gau-over-peer-{'matched' if peer == MATCHED_PEER else 'defaults'}",
                         f"This book's lean GAU layer trains at least 1.5× the tokens/s of FLASH-pytorch's GAU "
                         f"{which}, causal, {precision(data)}, at $n \\geq 2048$ (the smallest ratio over $n$ = "
                         f"{', '.join(str(n) for n in long)}, at $n = {worst}$; {label})", TARGET, 1.5, ratios[worst],
                         error, error, "the timing error of the two points: half the range of each one's repeats, "
                         "relative, added in quadrature", kind="lower_bound", unit="x",
                         detectable=error,  # a ratio nearer 1.5 than the timing error is not resolved
                         alternative=1.0, alternative_note="no speed-up: the peer's tokens/s"))
    exp = s["lean_layer_memory_exponent"]
    if math.isfinite(exp):
        layer_lengths = _series(data, ours, "n")[0]
        out.append(Claim("lean-gau-memory-linear", "The lean GAU layer's activations saved for backward grow "
                         f"at most linearly in n per sequence (log-log slope over n = {int(layer_lengths[-3:][0])} to "
                         f"{int(layer_lengths[-1])}; the dense layer's: {s['dense_layer_memory_exponent']:.2f}; "
                         f"{label})", TARGET, 1.0, exp, 0.0, 0.02, MEMORY_EXPONENT_BASIS, kind="upper_bound",
                         approx_rel=0.0, unit="exponent", alternative=2.0,
                         alternative_note="quadratic in n, as a layer that keeps its n x n matrix"))
    return out


def table(data: dict[str, Any]) -> str:
    """The benchmark as text: per point its step time, tokens/s, ratio to its baseline (the Transformer++ for the
    stacks, FLASH-pytorch's matched GAU for the single layers), saved activations and FLOP utilisation."""
    s = summary(data)
    width = max(len(LABELS[name]) for name in IMPLEMENTATIONS + LAYERS)
    matmul = "float32" if data["device_type"] == "cpu" else "bf16"
    lines = [f"{matmul} matmul: {data['matmul_flops_per_s'] / 1e9:.0f} GFLOP/s ({where(data)})",
             f"{'implementation':{width}s} {'n':>6s} {'batch':>5s} {'s/step':>8s} {'tokens/s':>10s} {'x base':>6s} "
             f"{'MiB/seq':>9s} {'MFU':>5s}   (base: Transformer++ for stacks, the matched peer for layers)"]
    for r in data["rows"]:
        name = r["implementation"]
        if r["status"] != "ok":
            lines.append(f"{LABELS[name]:{width}s} {r['n']:6d} {r['status']}")
            continue
        ratios = s["layers"][name]["over_matched_peer"] if name in LAYERS else s["ratios_vs_transformer"][name]
        lines.append(f"{LABELS[name]:{width}s} {r['n']:6d} {r['batch']:5d} {r['seconds']:8.3f} "
                     f"{r['tokens_per_s']:10,.0f} {ratios.get(str(r['n']), float('nan')):6.2f} "
                     f"{r['saved_bytes_per_sequence'] / 2**20:9.1f} {100 * r['utilisation']:4.0f}%")
    for key in ("quad_vs_transformer_text", "quad_lean_vs_transformer_text"):
        lines.append(f"{'lean ' if 'lean' in key else ''}FLASH-Quad {s[key]}")
    for key in ("flash_overtakes_quad", "flash_time_exponent", "flash_memory_exponent", "lean_layer_memory_exponent"):
        lines.append(f"{key.replace('_', ' ')}: {s[key]:.3g}")
    return "\n".join(lines)


def quadratic_saved_bytes(cfg: Config, n: int, name: str) -> float:
    """Bytes of n x n attention matrices a stack saves per step without a fused kernel: 4 float32 per entry, per
    layer (2L GAU layers with one matrix each; L Transformer layers with one per head); none for the lean GAU."""
    if lean(name):
        return 0.0
    matrices = 2 * cfg.layers if kind(name) == "gau" else cfg.layers * max(1, cfg.d // 64)
    return matrices * max(1, cfg.tokens // n) * n * n * 4 * 4


def model_config(name: str, cfg: Config, n: int) -> ModelConfig:
    """The language model whose step plan costs ``name`` at length n (the peer costed as our layer of its kind; a
    single layer as a one-layer model)."""
    k = kind(name)
    if k == "transformer":
        return _transformer_config(cfg, n)
    return ModelConfig(d=cfg.d, layers=1 if name in LAYERS else 2 * cfg.layers, block=k, residual="pre", s=cfg.s,
                       chunk=cfg.chunk, ctx=n, gau_backend=gau_backend(name), gau_query_block=cfg.query_block)


# Seconds no FLOP count captures, per point: building the stack and its saved-activation forward (2 s, assumed), and
# for a compiled layer inductor's compile, 2 to 4 s on the CPU in the cpu record (15 s assumed on a GPU's larger graphs)
POINT_OVERHEAD_S = 2.0
COMPILE_OVERHEAD_S = 15.0


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """Warm-up plus repeats of one training step of the trial's implementation at each of its lengths (the peer's
    counted as ours of its kind); stack lengths whose n x n matrices exceed the memory budget are skipped, as the
    sweep's extrapolation skips them; each point with its overhead (:data:`POINT_OVERHEAD_S`)."""
    name = str(trial.params["implementation"])
    steps = cfg.warmup + cfg.repeats
    overhead = POINT_OVERHEAD_S + (COMPILE_OVERHEAD_S if "compiled" in name else 0.0)
    out = []
    for n in (cfg.layer_lengths if name in LAYERS else cfg.lengths):
        # costed on the meta device, attention saves its n x n matrices (no fused kernel): over budget, skipped
        if (name not in LAYERS and kind(name) != "flash"
                and quadratic_saved_bytes(cfg, n, name) > cfg.memory_budget_gb * 1e9):
            continue
        out.append(Workload(f"{name}, n = {n}", model_config(name, cfg, n), max(1, cfg.tokens // n), n, steps, 0, 1,
                            overhead_s=overhead))
    return out


def plan(cfg: Config) -> list[Workload]:
    """Every trial's workloads (:func:`trial_plan`), in trial order."""
    return [w for t in trials(cfg) for w in trial_plan(cfg, t)]
