"""Coordinate checks (as microsoft/mup draws them): how big each sublayer's output is against its input.

For post-norm GAU and post-norm / pre-norm Transformer stacks at several widths and depths, the ratio
RMS(f(x_l)) / RMS(x_l) of every residual branch f is measured at initialisation and after a few AdamW
steps on the real corpus. The source's premise is that at initialisation a GAU branch is about 1% of
its input; the Transformer's is of order one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from analysis.core.experiment import Workload
from analysis.core.stats import Estimate, mean_estimate
from analysis.core.trial import Trial
from analysis.core.verify import Claim, estimate_fields
from analysis.models.lm import LanguageModel, ModelConfig
from analysis.tasks.data import fixed_windows, random_windows, stdlib_corpus

NAME = "coord-check"
DATA_VERSION = 1  # raised when the layout of the record's data changes
ARCHS = (("gau", "post"), ("transformer", "post"), ("transformer", "pre"))


@dataclass(frozen=True)
class Config:
    """Widths, depths (Transformer layers; GAU has twice as many), steps at which to measure."""

    widths: tuple[int, ...]
    depths: tuple[int, ...]
    ctx: int
    batch: int
    steps: tuple[int, ...]
    lr: float = 1e-3
    seed: int = 0


CONFIGS: dict[str, Config] = {
    "smoke": Config(widths=(32, 64), depths=(1, 2), ctx=32, batch=4, steps=(0, 1, 3)),
    "cpu": Config(widths=(64, 128, 256, 512), depths=(2, 4, 8), ctx=128, batch=8, steps=(0, 1, 3, 10)),
    "gpu": Config(widths=(128, 256, 512, 1024, 2048), depths=(2, 8, 24), ctx=512, batch=8, steps=(0, 1, 3, 10, 30)),
}



def summary(data: dict[str, Any]) -> dict[str, Any]:
    """The GAU branch at initialisation in the widest, deepest stack: its median ratio, width and GAU layers."""
    top = max((r for r in data["rows"] if r["block"] == "gau" and r["step"] == 0),
              key=lambda r: (r["width"], r["depth"]))
    return {"gau_median": top["median"], "width": top["width"], "gau_layers": 2 * top["depth"],
            "where": f"width {top['width']}, {2 * top['depth']} GAU layers"}


def _model_config(cfg: Config, block: str, residual: str, depth: int, width: int) -> ModelConfig:
    return ModelConfig(d=width, layers=2 * depth if block == "gau" else depth, block=block, residual=residual,
                       ctx=cfg.ctx, heads=4, s=min(128, width), init="xavier")


def trials(cfg: Config) -> list[Trial]:
    """Every (architecture, depth, width); each starts from cfg.seed (its initial draw and its batches)."""
    return [Trial(f"{block}-{residual}.depth{depth}.width{width}", cfg.seed,
                  {"block": block, "residual": residual, "depth": depth, "width": width})
            for block, residual in ARCHS for depth in cfg.depths for width in cfg.widths]


@dataclass(frozen=True)
class Rows:
    """One stack's branch ratios: a row per measured step."""

    rows: list[dict[str, Any]]


def run_trial(cfg: Config, trial: Trial, device: torch.device) -> Rows:
    """Branch ratios of one stack at each of cfg.steps: a row per step."""
    block, residual, depth, width = (trial.params[k] for k in ("block", "residual", "depth", "width"))
    corpus = stdlib_corpus()
    probe = fixed_windows(corpus.val, cfg.ctx, cfg.batch)[0].to(device)
    data = torch.from_numpy(corpus.train)
    model = LanguageModel(_model_config(cfg, block, residual, depth, width)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(trial.seed)
    rows, done = [], 0
    for step in sorted(cfg.steps):
        while done < step:
            x, y = random_windows(data, cfg.ctx, cfg.batch, gen)
            loss = F.cross_entropy(model(x.to(device)).reshape(-1, 256), y.to(device).reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += 1
        ratios = model.eval().branch_ratios(probe)
        model.train()
        rows.append({"block": block, "residual": residual, "depth": depth, "width": width, "step": step,
                     "ratios": ratios, "median": float(np.median(ratios))})
    return Rows(rows)


def assemble(cfg: Config, results: list[Rows], device_type: str) -> dict[str, Any]:
    """Branch ratios per (arch, width, depth, step), in trial order."""
    return {"device_type": device_type, "rows": [row for r in results for row in r.rows]}


def widest_gau_stacks(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The GAU stacks of the largest width at initialisation, one per depth (shallowest first)."""
    gau = [r for r in data["rows"] if r["block"] == "gau" and r["step"] == 0]
    width = max(r["width"] for r in gau)
    return sorted((r for r in gau if r["width"] == width), key=lambda r: r["depth"])


def branch_estimate(data: dict[str, Any]) -> Estimate:
    """The median branch ratio RMS(f(x))/RMS(x) of a GAU stack at initialisation, averaged over the stacks of the
    largest width (one per depth, each its own initial draw): the stacks are the independent units, not the layers
    of one stack, which share its input stream."""
    return mean_estimate([r["median"] for r in widest_gau_stacks(data)], "GAU stacks")


def claims(data: dict[str, Any], label: str) -> list[Claim]:
    """The near-identity premise: a GAU branch is about 1% of its input at initialisation (largest width, every
    depth)."""
    stacks = widest_gau_stacks(data)
    layers = ", ".join(str(len(r["ratios"])) for r in stacks)
    return [Claim(
        "gau-branch-size",
        f"At initialisation a GAU branch is about 1% of its input, in a causal LM (rows normalised by t): median "
        f"RMS(f(x))/RMS(x) over a stack's layers, mean over the {len(stacks)} stacks of width {stacks[0]['width']} "
        f"({layers} layers; one seed each; {label})",
        "Su 2022, kexue.fm/archives/8990 (GAU(x) ~ 0.01 x)", 0.01,
        **estimate_fields(branch_estimate(data), "the mean of the stacks' medians"),
        alternative=1.0, alternative_note="a branch as large as its input, a variance-preserving sublayer's size",
    )]


def trial_plan(cfg: Config, trial: Trial) -> list[Workload]:
    """One stack trained for the largest step count, measured at every listed step."""
    block, residual, depth, width = (trial.params[k] for k in ("block", "residual", "depth", "width"))
    return [Workload(f"{block}/{residual} depth {depth} width {width}", _model_config(cfg, block, residual, depth, width),
                     cfg.batch, cfg.ctx, max(cfg.steps), len(cfg.steps))]
