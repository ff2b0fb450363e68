"""Does the predicted softmax scale train best? A sweep on the real corpus.

Byte-level LMs with dot-product attention at logit scale alpha/sqrt(k) for a sweep of alpha,
and with cosine attention at fixed scales and a learned one, at two context lengths, over
seeds. Per run: validation loss after a fixed budget, and the softmax gradient
scale (1 - sum p^2) averaged over attention rows (the quantity the theory maximises) at
initialisation, mid-training and the end. Predictions to compare with: the mean-field
alpha* at n = L/2 (the source's decoder rule) for normal scores (dot) and for cosine scores
in the head dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from analysis.core.experiment import Workload, corpus_of, mean_se, run_seed
from analysis.core.stats import Estimate, paired_estimate
from analysis.core.trial import Trial
from analysis.core.typed import fields_of
from analysis.core.verify import Claim
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.tasks.data import PINNED_CORPUS_PATH, fixed_windows
from analysis.theory import softmax_scale as sc
from analysis.training.train import TrainConfig, token_stats, train_lm

NAME = "softmax-scale-train"
DATA_VERSION = 1  # raised when the layout of the record's data changes


@dataclass(frozen=True)
class Config:
    """Model size, budget and the sweep."""

    d_model: int
    n_layers: int
    n_heads: int
    lengths: tuple[int, ...]
    tokens_per_step: int
    steps: int
    dot_alphas: tuple[float, ...]
    cosine_scales: tuple[float, ...]
    learned_init: float
    seeds: tuple[int, ...]
    eval_windows: int
    lr: float = 2e-3
    corpus_file: str | None = None
    seed: int = 0

    @property
    def head_dim(self) -> int:
        """k = d_model / n_heads."""
        return self.d_model // self.n_heads


CONFIGS: dict[str, Config] = {
    "smoke": Config(32, 1, 2, (16, 32), 256, 8, (0.5, 4.0), (4.0,), 8.0, (0,), 4),
    "cpu": Config(64, 2, 4, (32, 128), 2048, 150, (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), (1.0, 4.0, 16.0, 64.0), 8.0, (0, 1), 32),
    "gpu": Config(256, 4, 4, (128, 2048), 32768, 500, (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), (1.0, 4.0, 16.0, 64.0), 8.0,
                  (0, 1), 64,
                  corpus_file=PINNED_CORPUS_PATH),
}




def variants(cfg: Config) -> list[dict[str, Any]]:
    """The attention settings of the sweep."""
    out: list[dict[str, Any]] = [{"kind": "dot", "value": a, "learned": False} for a in cfg.dot_alphas]
    out += [{"kind": "cosine", "value": s, "learned": False} for s in cfg.cosine_scales]
    out.append({"kind": "cosine", "value": cfg.learned_init, "learned": True})
    return out


def softmax_gradient(model: LanguageModel, batch: torch.Tensor) -> float:
    """Mean over layers, heads and rows of scale (1 - sum p^2) on ``batch``."""
    values: list[float] = []
    layers = model.attention_layers()
    with torch.no_grad():
        for attn in layers:
            attn.track_softmax_gradient = True
        model(batch)
        for attn in layers:
            attn.track_softmax_gradient = False
            values.append(float(attn.softmax_gradient or 0.0))
    return float(np.mean(values))


@dataclass(frozen=True)
class Run:
    """One trained model: its attention setting, length and seed, validation loss, the softmax gradient at the
    checkpoints (step, norm), the final scale and where it diverged."""

    kind: str
    value: float
    learned: bool
    ctx: int
    seed: int
    val_loss: float
    softmax_gradient: list[tuple[int, float]]
    final_scale: float
    diverged_at: int | None


def run_one(cfg: Config, tokens: dict[str, np.ndarray], ctx: int, var: dict[str, Any], seed: int,
            device: torch.device) -> Run:
    """Train one model (torch seeded by the runner); its validation loss and the softmax gradient along training."""
    model_cfg = ModelConfig.gpt(
        d=cfg.d_model, layers=cfg.n_layers, heads=cfg.n_heads, ctx=ctx,
        attn=var["kind"], attn_alpha=var["value"] if var["kind"] == "dot" else 1.0,
        cosine_scale=var["value"] if var["kind"] == "cosine" else 10.0, learn_cosine_scale=var["learned"],
    )
    model = LanguageModel(model_cfg)
    probe = fixed_windows(tokens["val"], ctx, 4)[0].to(device)
    checkpoints = {0, cfg.steps // 2, cfg.steps}
    grads: list[tuple[int, float]] = []

    def on_step(step: int, m: torch.nn.Module) -> None:
        if step in checkpoints:
            grads.append((step, softmax_gradient(model, probe)))

    batch = max(1, cfg.tokens_per_step // ctx)
    log = train_lm(model, tokens["train"], TrainConfig(steps=cfg.steps, batch=batch, lr=cfg.lr, warmup=max(1, cfg.steps // 10),
                                                       seed=run_seed(cfg, seed)), ctx, device, on_step, progress=False)
    stats = token_stats(model, tokens["val"], ctx, cfg.eval_windows, device)
    scale = float(model.attention_layers()[0].logit_scale().detach()) if var["kind"] == "cosine" else var["value"]
    return Run(var["kind"], var["value"], var["learned"], ctx, seed, float(stats.loss.mean()), grads, scale,
               log.diverged_at)


def trials(cfg: Config) -> list[Trial]:
    """One model per length, attention setting and seed, seeded with run_seed(cfg, seed): every setting gets the
    same batches."""
    def tag(var: dict[str, Any]) -> str:
        return f"{var['kind']}{'-learned' if var['learned'] else ''}{var['value']:.4g}"

    return [Trial(f"L{ctx}.{tag(var)}.seed{seed}", run_seed(cfg, seed), {"ctx": ctx, "var": var, "seed": seed})
            for ctx in cfg.lengths for var in variants(cfg) for seed in cfg.seeds]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Run:
    """One model trained at one length and attention setting."""
    corpus = corpus_of(cfg)
    p = trial.params
    return run_one(cfg, {"train": corpus.train, "val": corpus.val}, p["ctx"], dict(p["var"]), p["seed"], device)


def assemble(cfg: Config, results: list[Run], device_type: str) -> dict[str, Any]:
    """The runs in trial order, with the mean-field predictions for each length (decoder rule n = L/2)."""
    predictions = {
        str(ctx): {
            "dot_alpha_mean_field": float(sc.alpha_star_normal(max(2.0, ctx / 2))),
            "cosine_alpha_mean_field": float(sc.alpha_star_cosine(max(2.0, ctx / 2), max(3, cfg.head_dim))),
        }
        for ctx in cfg.lengths
    }
    return {"device_type": device_type, "corpus": corpus_of(cfg).summary(), "head_dim": cfg.head_dim,
            "runs": [fields_of(r) for r in results], "predictions": predictions}


def loss_by_setting(data: dict[str, Any], ctx: int, kind: str) -> list[tuple[float, float, float]]:
    """(value, mean validation loss, standard error across seeds) for each fixed setting of ``kind`` at ``ctx``."""
    rows = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == kind and not r["learned"]]
    out = []
    for v in sorted({r["value"] for r in rows}):
        mean, se = mean_se(r["val_loss"] for r in rows if r["value"] == v)
        out.append((v, mean, se))
    return out


def best_setting(data: dict[str, Any], ctx: int, kind: str) -> tuple[float, float, float]:
    """(value with the lowest mean validation loss, that loss, its standard error across seeds)."""
    return min(loss_by_setting(data, ctx, kind), key=lambda row: row[1])


def paired_differences(data: dict[str, Any], ctx: int, kind: str) -> dict[float, Estimate]:
    """Per fixed setting of ``kind`` at ``ctx``: its validation loss minus the best setting's, paired over seeds (every
    setting of a seed trains on the same batches), with the SE and m - 1 degrees of freedom of the differences."""
    rows = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == kind and not r["learned"]]
    best, _, _ = best_setting(data, ctx, kind)

    def losses(v: float) -> list[float]:
        return [r["val_loss"] for r in sorted(rows, key=lambda r: r["seed"]) if r["value"] == v]

    return {v: paired_estimate(losses(v), losses(best)) for v in sorted({r["value"] for r in rows})}


def indistinguishable_values(data: dict[str, Any], ctx: int, kind: str) -> list[float]:
    """The grid values whose paired loss difference from the best lies within its 95% Student-t interval of 0 (or
    has no error estimate), ascending."""
    return sorted(v for v, d in paired_differences(data, ctx, kind).items()
                  if not d.resolved or d.value <= d.half_width())


def indistinguishable_range(data: dict[str, Any], ctx: int, kind: str) -> tuple[float, float]:
    """:func:`indistinguishable_values`' smallest and largest, widened by the grid's sqrt(2): where the optimum may
    lie between grid points."""
    close = indistinguishable_values(data, ctx, kind)
    return min(close) / np.sqrt(2), max(close) * np.sqrt(2)


@dataclass(frozen=True)
class NoiseBand:
    """The grid values of a setting whose loss is within seed noise of the best (:func:`indistinguishable_values`),
    the grid they were chosen from, and that band widened by the grid's step (:func:`indistinguishable_range`): one
    fact, which the claim's statement and the chapter's prose both write with :meth:`words`."""

    close: tuple[float, ...]
    grid: tuple[float, ...]
    lo: float
    hi: float

    def words(self, alpha: str = "α", root2: str = "√2") -> str:
        """'α from 0.25 to 8, all 6 values tested, is within seed noise of the best: the grid bounds the optimum at
        neither end'; where the band stops inside the grid, the range the optimum lies in at the grid's resolution
        of √2. No parentheses, so that it reads inside a claim's statement (which passes ``alpha`` and ``root2`` as
        maths)."""
        if len(self.grid) == 1:
            return f"{alpha} = {self.close[0]:.2g} is the only value tested"
        count = "all" if len(self.close) == len(self.grid) else f"{len(self.close)} of the"
        head = (f"only {alpha} = {self.close[0]:.2g} of the {len(self.grid)} values tested is" if len(self.close) == 1
                else f"{alpha} from {self.close[0]:.2g} to {self.close[-1]:.2g}, {count} {len(self.grid)} values "
                     "tested, is")
        low, high = self.close[0] == self.grid[0], self.close[-1] == self.grid[-1]
        resolution = f"at the grid's resolution of {root2}"
        # a band that reaches an end of the grid bounds the optimum on one side only, or on neither
        where = ("the grid bounds the optimum at neither end" if low and high else
                 f"the optimum lies below {self.hi:.2g} {resolution}, perhaps below the smallest value tested" if low
                 else f"the optimum lies above {self.lo:.2g} {resolution}, perhaps above the largest value tested"
                 if high else f"the optimum lies in {self.lo:.2g} to {self.hi:.2g} {resolution}")
        return f"{head} within seed noise of the best: {where}"


def noise_band(data: dict[str, Any], ctx: int, kind: str) -> NoiseBand:
    """The :class:`NoiseBand` of ``kind`` at ``ctx``."""
    grid = tuple(v for v, _, _ in loss_by_setting(data, ctx, kind))
    lo, hi = indistinguishable_range(data, ctx, kind)
    return NoiseBand(tuple(indistinguishable_values(data, ctx, kind)), grid, float(lo), float(hi))


def detectable_loss(data: dict[str, Any], ctx: int, kind: str) -> tuple[float, float, float]:
    """(smallest, largest) loss difference from the best that the run detects with 80% power across the other
    settings (paired over seeds), and the largest measured difference: what the sweep can resolve."""
    diffs = [d for v, d in paired_differences(data, ctx, kind).items() if d.se > 0 or d.value != 0]
    if not diffs:
        return math.inf, math.inf, 0.0
    found = [d.detectable() for d in diffs]
    return min(found), max(found), max(d.value for d in diffs)


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """Per length: the best fixed dot-product alpha against the mean-field alpha*(L/2); inconclusive when the sweep
    cannot tell the scales apart (the loss differences it detects exceed those it measured)."""
    out = []
    for ctx_key, pred in data["predictions"].items():
        ctx = int(ctx_key)
        best, _, _ = best_setting(data, ctx, "dot")
        band = noise_band(data, ctx, "dot")
        lo, hi = band.lo, band.hi
        band_words = band.words("$\\alpha$", "$\\sqrt{2}$")
        small, large, measured_gap = detectable_loss(data, ctx, "dot")
        seeds = len({r["seed"] for r in data["runs"] if r["ctx"] == ctx})
        predicted = pred["dot_alpha_mean_field"]
        # the measured optimum is known only to within [lo, hi]: the tolerance reaches the end on the prediction's side
        tolerance = (best - lo) if predicted < best else (hi - best)
        # no setting's loss differs detectably from the best: the run resolves no scale inside [lo, hi], so the
        # smallest deviation of alpha it could find reaches at least the end of that range
        resolved_alpha = math.inf if seeds < 2 else tolerance
        out.append(Claim(
            key=f"train-best-dot-{ctx}",
            statement=f"Dot-product attention trains best at $\\alpha = \\alpha^*(n = L/2)$ ($L = {ctx}$; "
                      f"{band_words}; the sweep detects loss differences of {small:.2g} to {large:.2g} nats with "
                      f"80% power and measured at most {measured_gap:.2g}; {label})",
            source="Su 2023 (kexue.fm/archives/9812): $2.5/\\sqrt{d}$, decoder rule $n = L/2$",
            predicted=predicted,
            measured=best,
            uncertainty=(hi - lo) / 2,
            tolerance=tolerance,
            tolerance_basis=f"scales $\\alpha$ whose loss difference from the best, paired over {seeds} seeds, lies "
                            f"within its 95% Student-t interval ({seeds - 1} df), widened by the grid's $\\sqrt{{2}}$",
            approx_rel=0.0,
            alternative=1.0,
            alternative_note="the standard scale $1/\\sqrt{k}$ ($\\alpha = 1$), which needs no theory",
            detectable=resolved_alpha,
            effect=abs(predicted - 1.0),
        ))
    return out


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """The model a trial trains (its FLOPs do not depend on the attention setting) and its validation windows."""
    ctx = trial.params["ctx"]
    model = ModelConfig.gpt(d=cfg.d_model, layers=cfg.n_layers, heads=cfg.n_heads, ctx=ctx)
    batch = max(1, cfg.tokens_per_step // ctx)
    return [Workload(f"L = {ctx}", model, batch, ctx, cfg.steps, -(-cfg.eval_windows // batch))]
