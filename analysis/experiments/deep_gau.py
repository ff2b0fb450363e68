"""Deep GAU without warmup (kexue.fm/archives/8990): post-norm GAU against Transformers of equal parameters.

At each depth D (in Transformer layers) the stack is either 2D post-norm GAU layers (e = 2d), or D
Transformer layers with post-norm, pre-norm or DeepNorm residuals. Each is trained with and without
learning-rate warmup over several seeds on the real corpus. Recorded: the training and validation
loss, divergence (non-finite loss or a loss above 3x the first), and the per-sublayer update size
||x_{l+1} - x_l|| / ||x_l|| at initialisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.experiments.base import Workload, compare, corpus_of, mean_se, run_seed
from analysis.models.lm import LanguageModel, ModelConfig, update_sizes
from analysis.train import TrainConfig, fixed_windows, pick_device, token_stats, train_lm
from analysis.verify import Claim

NAME = "deep-gau"
DATA_VERSION = 1  # raised when the layout of run()\'s data changes
ARCHS = (("gau", "post"), ("transformer", "post"), ("transformer", "pre"), ("transformer", "deepnorm"))


@dataclass(frozen=True)
class Config:
    """Sizes, depths, budget and seeds."""

    d: int
    s: int
    depths: tuple[int, ...]  # in Transformer layers; GAU stacks have twice as many
    ctx: int
    batch: int
    steps: int
    lr: float
    warmups: tuple[int, ...]
    seeds: tuple[int, ...]
    eval_windows: int
    corpus_file: str | None = None
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(d=32, s=16, depths=(2,), ctx=32, batch=4, steps=8, lr=3e-3, warmups=(0, 4), seeds=(0,), eval_windows=4),
    "cpu": Config(d=64, s=32, depths=(4, 12), ctx=64, batch=16, steps=120, lr=3e-3, warmups=(0, 24), seeds=(0, 1),
                  eval_windows=32),
    "gpu": Config(d=384, s=128, depths=(6, 12, 24), ctx=256, batch=32, steps=1500, lr=1e-3, warmups=(0, 150),
                  seeds=(0, 1, 2), eval_windows=128),
}




def model_config(cfg: Config, block: str, residual: str, depth: int) -> ModelConfig:
    """The stack for one architecture at one depth (2 GAU layers per Transformer layer, e = 2 d)."""
    layers = 2 * depth if block == "gau" else depth
    return ModelConfig(d=cfg.d, layers=layers, block=block, residual=residual, ctx=cfg.ctx, heads=4, s=cfg.s,
                       init="xavier")


def run(cfg: Config, progress: bool = False) -> dict[str, Any]:
    """Every (depth, architecture, warmup, seed); plain data."""
    device = pick_device()
    corpus = corpus_of(cfg)
    probe = fixed_windows(corpus.val, cfg.ctx, 4)[0].to(device)
    runs = []
    for depth in cfg.depths:
        for block, residual in ARCHS:
            for warmup in cfg.warmups:
                for seed in cfg.seeds:
                    torch.manual_seed(run_seed(cfg, seed))
                    model = LanguageModel(model_config(cfg, block, residual, depth)).to(device)
                    with torch.no_grad():
                        _, hidden = model.eval()(probe, return_hidden=True)
                    sizes = update_sizes(hidden)
                    log = train_lm(model, corpus.train, TrainConfig(steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
                                                                    warmup=warmup, seed=run_seed(cfg, seed)),
                                   cfg.ctx, device, progress=progress)
                    val = float("nan") if log.diverged_at is not None else float(
                        token_stats(model, corpus.val, cfg.ctx, cfg.eval_windows, device).loss.mean())
                    runs.append({"depth": depth, "block": block, "residual": residual, "warmup": warmup, "seed": seed,
                                 "parameters": model.num_parameters(), "update_sizes": sizes,
                                 "train_steps": log.steps, "train_loss": log.train_loss,
                                 "diverged_at": log.diverged_at, "val_loss": val})
    return {"device_type": device.type, "corpus": corpus.summary(), "runs": runs}


def arch_label(block: str, residual: str) -> str:
    """'post-norm GAU', 'pre-norm Transformer', ..."""
    name = "GAU" if block == "gau" else "Transformer"
    return f"{'DeepNorm' if residual == 'deepnorm' else residual + '-norm'} {name}"


def stats(data: dict[str, Any], depth: int, block: str, residual: str, warmup: int) -> dict[str, float]:
    """Mean validation loss over seeds that did not diverge, its standard error, and the divergence rate."""
    rows = [r for r in data["runs"] if (r["depth"], r["block"], r["residual"], r["warmup"]) == (depth, block, residual, warmup)]
    val_loss, se = mean_se(r["val_loss"] for r in rows if r["diverged_at"] is None)
    return {"val_loss": val_loss, "se": se if se == se else 0.0,
            "diverged": sum(r["diverged_at"] is not None for r in rows) / len(rows), "runs": len(rows)}


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """At the largest depth, without warmup: each architecture's loss and how GAU's compares with it (3 SE)."""
    depth = max(r["depth"] for r in data["runs"])
    warm = max(r["warmup"] for r in data["runs"])
    gau = stats(data, depth, "gau", "post", 0)
    out: dict[str, Any] = {"depth": depth, "warmup": warm, "gau": gau, "gau_warm": stats(data, depth, "gau", "post", warm)}
    for block, residual in ARCHS[1:]:
        other = stats(data, depth, block, residual, 0)
        out[residual] = other
        finite = all(np.isfinite(v) for v in (gau["val_loss"], other["val_loss"]))
        out[f"gau_vs_{residual}"] = (compare(gau["val_loss"], gau["se"], other["val_loss"], other["se"])
                                     if finite else "not comparable with (a run diverged)")
    return out


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """At the largest depth: GAU without warmup matches GAU with warmup, and beats a post-norm Transformer."""
    depth = max(r["depth"] for r in data["runs"])
    warm = max(r["warmup"] for r in data["runs"])
    no_warm = stats(data, depth, "gau", "post", 0)
    with_warm = stats(data, depth, "gau", "post", warm)
    tfm = stats(data, depth, "transformer", "post", 0)
    tfm_warm = stats(data, depth, "transformer", "post", warm)
    # the rival explanation: warmup matters here as much as for the post-norm Transformer
    tfm_gap = tfm["val_loss"] - tfm_warm["val_loss"]
    gap_alternative = with_warm["val_loss"] + tfm_gap if np.isfinite(tfm_gap) and tfm["diverged"] == 0 else None
    # with a single seed there is no error estimate, and the tolerance is 0
    diff_se = float(np.hypot(no_warm["se"], with_warm["se"]))
    gap_se = float(np.hypot(no_warm["se"], tfm["se"]))
    where = f"depth {depth} ({2 * depth} GAU layers), {label}"
    return [
        Claim(f"gau-no-warmup-{label}", f"Post-norm GAU trains as well without warmup as with it ({where})",
              "Su 2022, kexue.fm/archives/8990", with_warm["val_loss"], no_warm["val_loss"], diff_se, 3 * diff_se,
              "3 standard errors over seeds of the difference of validation losses (0 with one seed)", unit="nats/byte",
              alternative=gap_alternative,
              alternative_note="GAU hurt by dropping warmup as much as the post-norm Transformer is "
                               f"({tfm_gap:+.3g} nats/byte)" if gap_alternative is not None else ""),
        Claim(f"gau-no-divergence-{label}", f"Post-norm GAU without warmup diverges in no seed ({where})",
              "Su 2022, kexue.fm/archives/8990", 0.0, no_warm["diverged"], 0.0, 0.0,
              "a count: any divergence fails", unit="share of seeds", approx_rel=0.0,
              alternative=tfm["diverged"],
              alternative_note="GAU diverges as often as the post-norm Transformer without warmup; when that is "
                               "never, the run does not put warmup at risk"),
        Claim(f"gau-vs-postnorm-transformer-{label}",
              f"Without warmup, post-norm GAU reaches a lower loss than a post-norm Transformer of equal parameters ({where})",
              "Su 2022, kexue.fm/archives/8990 (standard Transformer tricks not needed for GAU)", tfm["val_loss"],
              no_warm["val_loss"], gap_se, 3 * gap_se, "3 standard errors over seeds of the difference (0 with one seed)",
              kind="upper_bound", unit="nats/byte"),
    ]


def plan(cfg: Config) -> list[Workload]:
    """Every stack trained: per depth and architecture, one run per warmup and seed."""
    evals = -(-cfg.eval_windows // cfg.batch)
    return [Workload(f"{arch_label(b, r)}, depth {depth}", model_config(cfg, b, r, depth), cfg.batch, cfg.ctx, cfg.steps,
                     evals, len(cfg.warmups) * len(cfg.seeds)) for depth in cfg.depths for b, r in ARCHS]
