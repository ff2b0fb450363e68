"""Training throughput of the GAU language model: tokens/s and model-FLOPs utilisation (MFU).

Run on a GPU: .venv/bin/python benchmarks/gau_throughput.py [--peak-tflops 989] [--out results/benchmarks/gau-throughput.json]
(the default peak is the H100/H200 dense bf16 figure). ``--smoke`` runs a tiny model on the CPU to check the script.

Model: d = 768, e = 1536, s = 128, 12 GAU layers (post-norm), bf16 autocast, AdamW; n = 512 to 4096 at a fixed
number of tokens per step. A step is forward, backward and optimiser update; the time is the median of repeats
after warm-up. Model FLOPs per token: 6 x (non-embedding parameters) for the dense matmuls, plus per layer
6 x (2 n s + 2 n e) / 2 for the causal relu^2 attention (scores and A V, half the matrix), forward and backward.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from analysis.models.lm import LanguageModel, ModelConfig
from analysis.results import device_name


def flops_per_token(cfg: ModelConfig, n: int, params: int) -> float:
    """Dense 6 P plus causal attention 6 (n s + n e) per layer (half of the n x n matrix on average)."""
    e = cfg.expanded
    return 6.0 * params + cfg.layers * 6.0 * (n * cfg.s + n * e) / 2.0


def step_time(model: LanguageModel, n: int, batch: int, device: torch.device, repeats: int, compile_model: bool) -> float:
    """Median seconds per training step."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    fn = torch.compile(model) if compile_model else model
    idx = torch.randint(0, model.cfg.vocab, (batch, n), device=device)

    def one() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = fn(idx)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), idx.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        one()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        one()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="the device's dense bf16 peak")
    parser.add_argument("--tokens-per-step", type=int, default=32768)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--smoke", action="store_true", help="tiny model on whatever device, to check the script")
    parser.add_argument("--out", default="results/benchmarks/gau-throughput.json")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.smoke:
        cfg_base, lengths, tokens = ModelConfig(d=64, e=128, s=32, layers=2, ctx=256), (64, 128), 512
    else:
        cfg_base, lengths, tokens = ModelConfig(d=768, e=1536, s=128, layers=12, ctx=4096), (512, 1024, 2048, 4096), args.tokens_per_step
    rows = []
    for n in lengths:
        torch.manual_seed(0)
        model = LanguageModel(ModelConfig(**{**cfg_base.__dict__, "ctx": max(n, cfg_base.ctx)})).to(device)
        params = model.num_parameters() - model.embed.weight.numel()
        batch = max(1, tokens // n)
        seconds = step_time(model, n, batch, device, args.repeats, args.compile)
        tok_s = batch * n / seconds
        achieved = tok_s * flops_per_token(model.cfg, n, params)
        rows.append({"n": n, "batch": batch, "seconds_per_step": seconds, "tokens_per_s": tok_s,
                     "model_tflops": achieved / 1e12, "mfu": achieved / (args.peak_tflops * 1e12)})
        print(f"n = {n:5d}  batch {batch:3d}  {seconds * 1000:8.1f} ms/step  {tok_s:12,.0f} tokens/s  "
              f"{achieved / 1e12:7.1f} TFLOP/s  MFU {100 * achieved / (args.peak_tflops * 1e12):5.1f}%")
    report = {"device": device_name(), "torch": torch.__version__, "smoke": args.smoke, "compile": args.compile,
              "peak_tflops": args.peak_tflops, "model": cfg_base.__dict__, "rows": rows,
              "date": time.strftime("%Y-%m-%d")}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
