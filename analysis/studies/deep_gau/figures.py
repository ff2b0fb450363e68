"""The deep-GAU chapter's figure: the stability boundary against depth, the loss against the learning rate at the
largest depth, and each sublayer's update size at initialisation."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.deep_gau.experiments.deep_gau import ARCHS, arch_label, boundary, lr_curve, moving_average
from analysis.studies.plotting import STYLE, readable_figure


def t_half_width(se: float, n: int) -> float:
    """The half width of a two-sided 95% Student-t interval of a mean over ``n`` seeds with standard error ``se``
    (0 with one seed, which has no error estimate)."""
    return t_quantile(n - 1) * se if n > 1 and se == se else 0.0


@readable_figure
def deep_gau(data: dict[str, Any]) -> Figure:
    """The learning-rate boundary against depth per architecture, with and without warmup; the validation loss
    against the learning rate at the largest depth; and the update size per sublayer at initialisation."""
    depths = sorted({r["depth"] for r in data["runs"]})
    warmups = sorted({r["warmup"] for r in data["runs"]})
    lrs = sorted({r["lr"] for r in data["runs"]})
    floor = lrs[0] / 2  # where "no learning rate trains" is drawn
    seeds = len({r["seed"] for r in data["runs"]})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(18, 5))
        for i, (block, residual) in enumerate(ARCHS):
            name = arch_label(block, residual)
            for j, (warmup, style) in enumerate(zip(warmups, ("-o", "--s"))):
                bounds = [boundary(data, d, block, residual, warmup) or floor for d in depths]
                shift = 1 + 0.03 * (i - 1.5) + 0.012 * j  # a small sideways offset keeps equal points apart
                axes[0].plot([d * shift for d in depths], bounds, style, color=f"C{i}",
                             label=f"{name}, {'no warmup' if warmup == 0 else f'warmup {warmup}'}")
                rows = lr_curve(data, depths[-1], block, residual, warmup)
                axes[1].errorbar([r["lr"] * shift for r in rows], [r["val_loss"] for r in rows],
                                 yerr=[t_half_width(r["se"], seeds) for r in rows], fmt=style, color=f"C{i}", capsize=3)
                gone = [r["lr"] * shift for r in rows if r["diverged"] > 0]
                axes[1].plot(gone, [data["unigram_entropy"] + 0.4] * len(gone), "x", color=f"C{i}", ms=10, mew=2)
            deepest = [r for r in data["runs"] if r["depth"] == depths[-1]
                       and (r["block"], r["residual"]) == (block, residual)
                       and r["warmup"] == 0 and r["lr"] == lrs[0]]
            sizes = np.mean([r["update_sizes"] for r in deepest], axis=0)
            axes[2].semilogy(np.arange(1, len(sizes) + 1) / len(sizes), sizes, "-", color=f"C{i}", label=name)
        ax = axes[0]
        ax.axhline(floor, color="0.5", lw=0.8, ls=":")
        ax.text(depths[0], floor * 1.08, "no learning rate trains", fontsize=9, color="0.4")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(depths, [f"{d} ({2 * d})" for d in depths])
        ax.minorticks_off()
        ax.set_xlabel("depth: Transformer layers (GAU layers), log scale")
        ax.set_ylabel("largest trainable learning rate")
        ax.set_title("the stability boundary")
        ax.legend(fontsize=8)
        ax = axes[1]
        ax.axhline(data["unigram_entropy"], color="k", lw=1, ls=":", label="unigram entropy (context ignored)")
        ax.axhline(data["threshold"], color="k", lw=1, ls="--", label="trained: below this line")
        ax.set_xscale("log")
        ax.set_xlabel("peak learning rate (log scale)")
        ax.set_ylabel("validation loss (nats/byte)")
        ax.set_title(f"loss at depth {depths[-1]}; x: diverged")
        ax.legend(fontsize=8)
        ax = axes[2]
        ax.set_xlabel("sublayer position / number of sublayers")
        ax.set_ylabel(r"$\Vert x_{l+1} - x_l\Vert / \Vert x_l\Vert$ at init")
        ax.set_title(f"update size per sublayer, depth {depths[-1]}")
        ax.legend(fontsize=8)
    return fig



@readable_figure
def deep_dynamics(data: dict[str, Any]) -> Figure:
    """At the largest depth without warmup, for the first seed: the training loss (a moving average over a tenth of
    the budget) and the gradient norm before clipping against the step, per architecture and learning rate."""
    depths = sorted({r["depth"] for r in data["runs"]})
    lrs = sorted({r["lr"] for r in data["runs"]})
    seed = min(r["seed"] for r in data["runs"])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, len(ARCHS), figsize=(18, 7.5), sharex=True, sharey="row")
        for i, (block, residual) in enumerate(ARCHS):
            runs = {r["lr"]: r for r in data["runs"] if (r["depth"], r["block"], r["residual"], r["warmup"], r["seed"])
                    == (depths[-1], block, residual, 0, seed)}
            for j, lr in enumerate(lrs):
                r = runs.get(lr)
                if r is None or not r.get("grad_norm"):
                    continue
                steps = np.asarray(r["train_steps"])
                window = max(1, len(steps) // 10)
                axes[0, i].plot(steps[window - 1:], moving_average(r["train_loss"], window), color=f"C{j}",
                                label=f"lr {lr:.2g}" + (" (diverged)" if r["diverged_at"] is not None else ""))
                axes[1, i].semilogy(np.arange(1, len(r["grad_norm"]) + 1), r["grad_norm"], color=f"C{j}", lw=1)
            half = next(iter(runs.values()), {}).get("half_step")
            for row in (0, 1):
                if half:
                    axes[row, i].axvline(half, color="0.5", lw=0.8, ls=":")
            axes[0, i].axhline(data["unigram_entropy"], color="k", lw=1, ls=":")
            axes[1, i].axhline(1.0, color="k", lw=1, ls="--")
            axes[0, i].set_title(f"{arch_label(block, residual)}, depth {depths[-1]}")
            axes[1, i].set_xlabel("training step")
        axes[0, 0].set_ylabel("training loss (nats/byte),\nmoving average")
        axes[1, 0].set_ylabel("gradient norm before clipping\n(log scale; dashed: the clip at 1)")
        axes[0, -1].legend(fontsize=8)
    return fig
