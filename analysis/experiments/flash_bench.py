"""Speed and activation memory of FLASH-Quad, FLASH, a Transformer++ and FLASH-pytorch, side by side in one process.

One training step (forward, backward, AdamW) of equal-parameter stacks on random inputs (b, n, d), the loss the
mean square of the output: ``2 L`` GAU layers (FLASH-Quad), ``2 L`` FLASH layers (chunk c), ``L`` Transformer++
layers (pre-norm, RoPE, SwiGLU, scaled_dot_product_attention), and ``2 L`` layers each of lucidrains'
FLASH-pytorch GAU and FLASH as installed (its defaults: pre-LayerNorm, residual, T5 relative-position bias in GAU).
The tokens per step are fixed, so the batch is tokens / n. Per length: the median step time over repeats after
warm-up, with every implementation timed in the same process, threads and sizes; and the bytes of activations
saved for backward (``saved_tensors_hooks``, per sequence), the part of memory that grows with n, and the peak
resident memory of the point's own process (each point runs in a fresh interpreter whose address space is capped). A point over the memory budget or the time budget is
recorded as such and the sweep goes on. The machine's float32 matmul throughput is measured in the same run, so
each implementation's model-FLOP utilisation can be stated against it.
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

from analysis.experiments.base import Workload
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.theory import flash_counts as fc
from analysis.verify import Claim

NAME = "flash-bench"
DATA_VERSION = 1  # raised when the layout of run()'s data changes
SOURCE = "Su 2022, kexue.fm/archives/8934; Hua et al. 2022"
IMPLEMENTATIONS = ("FLASH-Quad (ours)", "FLASH (ours)", "Transformer++", "FLASH-pytorch GAU", "FLASH-pytorch FLASH")


@dataclass(frozen=True)
class Config:
    """Sizes, lengths, budgets and repeats of the benchmark."""

    d: int
    layers: int  # Transformer++ layers; GAU and FLASH stacks have twice as many
    s: int
    chunk: int
    tokens: int  # per step: batch = tokens / n
    lengths: tuple[int, ...]
    repeats: int
    warmup: int
    threads: int
    memory_budget_gb: float  # of saved activations per step, measured or extrapolated linearly in n from the last
    time_budget_s: float  # per step; a point measured over it, or extrapolated over twice it, ends the sweep
    process_cap_gb: float = 16.0  # address space of each point's process: over it, the point is out of memory
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, layers=1, s=16, chunk=16, tokens=256, lengths=(32, 64), repeats=1, warmup=1, threads=2,
                    memory_budget_gb=1.0, time_budget_s=5.0),
    "cpu": Config(d=256, layers=2, s=128, chunk=128, tokens=8192, lengths=(128, 256, 512, 1024, 2048, 4096, 8192),
                  repeats=3, warmup=2, threads=2, memory_budget_gb=3.0, time_budget_s=20.0),
    "gpu": Config(d=768, layers=6, s=128, chunk=256, tokens=16384, lengths=(512, 1024, 2048, 4096, 8192, 16384),
                  repeats=5, warmup=2, threads=16, memory_budget_gb=40.0, time_budget_s=30.0),
}


class _Stack(nn.Module):
    """Residual sublayers of a LanguageModel (its embedding and output layer left out), applied in order."""

    def __init__(self, model: LanguageModel) -> None:
        super().__init__()
        self.layers = model.sublayers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def build(name: str, cfg: Config) -> nn.Module:
    """One of :data:`IMPLEMENTATIONS` at the config's sizes (the peer raises ImportError when not installed)."""
    d, s, c = cfg.d, cfg.s, cfg.chunk
    if name == "FLASH-Quad (ours)":
        return _Stack(LanguageModel(ModelConfig(d=d, layers=2 * cfg.layers, block="gau", residual="pre", s=s)))
    if name == "FLASH (ours)":
        return _Stack(LanguageModel(ModelConfig(d=d, layers=2 * cfg.layers, block="flash", residual="pre", s=s, chunk=c)))
    if name == "Transformer++":
        return _Stack(LanguageModel(ModelConfig(d=d, layers=cfg.layers, block="transformer", residual="pre",
                                                ffn="swiglu", heads=max(1, d // 64))))
    if name == "FLASH-pytorch GAU":
        from flash_pytorch import GAU as PeerGAU

        return nn.Sequential(*[PeerGAU(dim=d, query_key_dim=s, expansion_factor=2.0, causal=True)
                               for _ in range(2 * cfg.layers)])
    if name == "FLASH-pytorch FLASH":
        from flash_pytorch import FLASH

        return nn.Sequential(*[FLASH(dim=d, group_size=c, query_key_dim=s, expansion_factor=2.0, causal=True)
                               for _ in range(2 * cfg.layers)])
    raise ValueError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; got {name!r}")


def saved_bytes(module: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves for backward in one forward of ``module`` on ``x``."""
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x).pow(2).mean()
    return total


def step_time(module: nn.Module, x: torch.Tensor, repeats: int, warmup: int) -> list[float]:
    """Seconds of each timed training step (forward, backward, AdamW) after ``warmup`` untimed ones."""
    opt = torch.optim.AdamW(module.parameters(), lr=1e-4)
    times = []
    for i in range(warmup + repeats):
        start = time.perf_counter()
        loss = module(x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def matmul_throughput(threads: int, size: int = 2048, repeats: int = 10, warmup: int = 3) -> float:
    """Float32 FLOP/s of a size x size matmul on this CPU: the best of ``repeats`` after ``warmup``, the ceiling for
    these layers (the best, not the median: a ceiling should not move with the machine's momentary load)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    for _ in range(warmup):
        a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / min(times)


def model_flops_per_token(name: str, cfg: Config, n: int) -> float:
    """Forward FLOPs per token the stack executes, from the closed forms (the peer counted as our layers of its
    kind): GAU and FLASH compute their full n x n (or c x c) matrices and mask them, as both implementations do;
    the Transformer++'s fused causal attention kernel skips the masked half, so its 4nd counts as 2nd."""
    d, e, s = cfg.d, 2 * cfg.d, cfg.s
    if "FLASH (" in name or name.endswith("FLASH"):
        c = min(cfg.chunk, n)
        n_c = -(-n // c) * c
        return 2 * cfg.layers * fc.flash_counts(d, e, s, n_c, c).flops
    if name == "Transformer++":
        t = fc.transformer_counts(d, n)
        return cfg.layers * (t.linear_flops + t.length_flops / 2)
    return 2 * cfg.layers * fc.gau_counts(d, e, s, n).flops


def measure_point(cfg: Config, name: str, n: int) -> dict[str, Any]:
    """One implementation at one length, in this process: saved activations, then timed training steps."""
    torch.set_num_threads(cfg.threads)
    batch = max(1, cfg.tokens // n)
    torch.manual_seed(cfg.seed)
    module = build(name, cfg)
    x = torch.randn(batch, n, cfg.d, generator=torch.Generator().manual_seed(cfg.seed))
    saved = saved_bytes(module, x)
    row: dict[str, Any] = {"batch": batch, "saved_bytes_per_sequence": saved / batch,
                           "parameters": sum(p.numel() for p in module.parameters())}
    if saved > cfg.memory_budget_gb * 1e9:
        return {**row, "status": "over the memory budget"}
    times = step_time(module, x, cfg.repeats, cfg.warmup)
    median = statistics.median(times)
    return {**row, "status": "ok", "seconds": median, "all_seconds": times, "tokens_per_s": batch * n / median,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _child(cfg: Config, name: str, n: int) -> dict[str, Any]:
    """measure_point in a fresh interpreter whose address space is capped at the memory cap: a point that would
    exhaust the machine fails alone (recorded as out of memory), and its peak resident memory is its own."""
    code = ("import dataclasses, json, sys; from analysis.experiments import flash_bench as b; "
            "cfg = b.Config(**json.loads(sys.argv[1])); "
            "print('RESULT ' + json.dumps(b.measure_point(cfg, sys.argv[2], int(sys.argv[3]))))")
    cap = int(cfg.process_cap_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(fields), name, str(n)], capture_output=True,
                          text=True, preexec_fn=limit, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    err = proc.stderr.lower()
    if proc.returncode < 0 or any(w in err for w in ("memoryerror", "alloc", "cannot allocate", "out of memory", "failed to map")):
        return {"status": f"out of memory (process capped at {cfg.process_cap_gb:g} GiB)"}
    if "no module named 'flash_pytorch'" in err:
        return {"status": "not installed"}
    raise RuntimeError(f"benchmark point {name} n = {n} failed:\n{proc.stderr[-2000:]}")


def run(cfg: Config, progress: bool = False, names: tuple[str, ...] = IMPLEMENTATIONS) -> dict[str, Any]:
    """Every implementation at every length, each point in a fresh process with the same threads; plain data."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        peak = matmul_throughput(cfg.threads)
    finally:
        torch.set_num_threads(previous_threads)
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    last: dict[str, tuple[int, float, float]] = {}  # per implementation: (n, saved bytes per step, seconds)
    # lengths outside, implementations inside: drift of the machine over the run hits all of them alike
    for n in cfg.lengths:
        for name in names:
            row: dict[str, Any] = {"implementation": name, "n": n}
            batch = max(1, cfg.tokens // n)
            if name in last and name not in skipped:
                # at fixed tokens per step, quadratic work and memory per step grow like n: extrapolate first
                n0, saved0, seconds0 = last[name]
                if saved0 * n / n0 > cfg.memory_budget_gb * 1e9:
                    skipped[name] = "over the memory budget (extrapolated)"
                elif seconds0 * n / n0 > 2 * cfg.time_budget_s:
                    skipped[name] = "over the time budget (extrapolated)"
            if name in skipped:
                rows.append({**row, "status": skipped[name]})
                continue
            point = _child(cfg, name, n)
            rows.append({**row, **point})
            if point["status"] != "ok":
                skipped[name] = point["status"]
                continue
            last[name] = (n, point["saved_bytes_per_sequence"] * batch, point["seconds"])
            if point["seconds"] > cfg.time_budget_s:
                skipped[name] = "over the time budget"
            if progress:
                print(f"{name:22s} n = {n:6d}: {point['seconds']:.3f} s/step, {point['tokens_per_s']:,.0f} tokens/s, "
                      f"peak {point['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        peak = max(peak, matmul_throughput(cfg.threads))  # measured before and after the sweep: the larger
    finally:
        torch.set_num_threads(previous_threads)
    for row in rows:
        if row["status"] == "ok":
            batch = row["batch"]
            flops = 3 * model_flops_per_token(row["implementation"], cfg, row["n"]) * batch * row["n"]
            row["utilisation"] = flops / row["seconds"] / peak  # forward + backward ~ 3 forwards
    rows.sort(key=lambda r: (names.index(r["implementation"]), r["n"]))
    return {"device_type": "cpu", "threads": cfg.threads, "matmul_flops_per_s": peak, "rows": rows}


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


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Throughput ratios against the Transformer++ per length, crossovers, and FLASH's exponents."""
    ratios: dict[str, dict[str, float]] = {}
    n_t, t_t = _series(data, "Transformer++", "tokens_per_s")
    for name in IMPLEMENTATIONS:
        n_x, t_x = _series(data, name, "tokens_per_s")
        ratios[name] = {str(int(n)): float(t_x[i] / t_t[list(n_t).index(n)]) for i, n in enumerate(n_x) if n in n_t}
    ours_over_peer: dict[str, dict[str, float]] = {}
    for ours, peer in (("FLASH-Quad (ours)", "FLASH-pytorch GAU"), ("FLASH (ours)", "FLASH-pytorch FLASH")):
        n_o, t_o = _series(data, ours, "tokens_per_s")
        n_p, t_p = _series(data, peer, "tokens_per_s")
        ours_over_peer[ours] = {str(int(n)): float(t_o[i] / t_p[list(n_p).index(n)])
                                for i, n in enumerate(n_o) if n in n_p}
    quad = crossover(data, "FLASH-Quad (ours)", "Transformer++")
    both = sorted(set(_series(data, "FLASH-Quad (ours)", "n")[0]) & set(_series(data, "Transformer++", "n")[0]))
    return {
        "ours_over_peer": ours_over_peer,
        "quad_vs_transformer_text": (f"overtakes the Transformer++ at n = {quad:.0f}" if math.isfinite(quad) else
                                     "does not overtake the Transformer++ at any length measured (up to n = "
                                     f"{int(both[-1]) if both else 0})"),
        "ratios_vs_transformer": ratios,
        "quad_overtakes_transformer": crossover(data, "FLASH-Quad (ours)", "Transformer++"),
        "flash_overtakes_quad": crossover(data, "FLASH (ours)", "FLASH-Quad (ours)"),
        "flash_time_exponent": exponent(data, "FLASH (ours)", "seconds"),
        "flash_memory_exponent": exponent(data, "FLASH (ours)", "saved_bytes_per_sequence"),
        "quad_memory_exponent": exponent(data, "FLASH-Quad (ours)", "saved_bytes_per_sequence"),
    }


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """FLASH-Quad overtakes the Transformer++ near n = 256; FLASH is linear in n (time and saved memory)."""
    s = summary(data)
    out = []
    cross = s["quad_overtakes_transformer"]
    lengths = sorted({r["n"] for r in data["rows"]})
    both = sorted(set(_series(data, "FLASH-Quad (ours)", "n")[0]) & set(_series(data, "Transformer++", "n")[0]))
    if both:
        never = not math.isfinite(cross)
        where = f"it does not overtake up to n = {int(both[-1])}, the value shown" if never else "log-interpolated"
        out.append(Claim(f"quad-overtakes-transformer-{label}", f"FLASH-Quad's training step overtakes the "
                         f"Transformer++'s in tokens/s at about n = 256 (equal parameters, CPU, {data['threads']} "
                         f"threads; {where}; {label})", SOURCE, 256.0, float(both[-1]) if never else cross, 0.0,
                         256.0 * (math.sqrt(2) - 1), "half a grid step: lengths are powers of 2", unit="n"))
    for key, what in (("flash_time_exponent", "time"), ("flash_memory_exponent", "activation memory")):
        value = s[key]
        if math.isfinite(value):
            out.append(Claim(f"flash-linear-{what.split()[0]}-{label}", f"FLASH's {what} per sequence is linear in n "
                             f"(log-log slope over the 3 largest of n = {lengths[0]} to {lengths[-1]}; {label})",
                             SOURCE, 1.0, value, 0.0, 0.1, "0.1 in the exponent: timing noise of a median of "
                             "repeats over a factor 4 in n", unit="exponent"))
    return out


def quadratic_saved_bytes(cfg: Config, n: int, kind: str) -> float:
    """Bytes of n x n attention matrices a stack saves per step without a fused kernel: 4 float32 per entry, per
    layer (2L GAU layers with one matrix each; L Transformer layers with one per head)."""
    matrices = 2 * cfg.layers if kind == "FLASH-Quad (ours)" else cfg.layers * max(1, cfg.d // 64)
    return matrices * max(1, cfg.tokens // n) * n * n * 4 * 4


def model_config(name: str, cfg: Config, n: int) -> ModelConfig:
    """The language model whose step plan costs ``name`` at length n (the peer costed as our layer of its kind)."""
    if name == "Transformer++":
        return ModelConfig(d=cfg.d, layers=cfg.layers, block="transformer", residual="pre", ffn="swiglu",
                           heads=max(1, cfg.d // 64), ctx=n)
    flash = "FLASH (" in name or name.endswith("FLASH")
    return ModelConfig(d=cfg.d, layers=2 * cfg.layers, block="flash" if flash else "gau", residual="pre", s=cfg.s,
                       chunk=cfg.chunk, ctx=n)


def plan(cfg: Config) -> list[Workload]:
    """Per length, warm-up plus repeats of one training step of each kind of stack (ours and the peer's counted as
    two of our layers' kind); FLASH-Quad lengths whose n x n matrices exceed the memory budget are skipped, as the
    benchmark skips them."""
    out = []
    steps = cfg.warmup + cfg.repeats
    for n in cfg.lengths:
        batch = max(1, cfg.tokens // n)
        for kind, count in (("Transformer++", 1), ("FLASH (ours)", 2), ("FLASH-Quad (ours)", 2)):
            # costed on the meta device, attention saves its n x n matrices (no fused kernel): over budget, skipped
            if kind != "FLASH (ours)" and quadratic_saved_bytes(cfg, n, kind) > cfg.memory_budget_gb * 1e9:
                continue
            out.append(Workload(f"{kind} and peer, n = {n}" if count == 2 else f"{kind}, n = {n}",
                                model_config(kind, cfg, n), batch, n, steps, 0, count))
    return out
