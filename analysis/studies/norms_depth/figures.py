"""The normalisation chapter's figures: the update size against depth per residual arrangement, and how much each
sublayer turns the residual stream with what running sublayers side by side costs."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.norms_depth.experiments.norms_depth import mean_update
from analysis.studies.plotting import STYLE, readable_figure


def t_half(seeds: int) -> float:
    """The multiple of the standard error that spans a two-sided 95% Student-t interval over ``seeds`` seeds (0 for
    one seed: no error estimate, no bar)."""
    return t_quantile(seeds - 1) if seeds > 1 else 0.0


@readable_figure
def depth_updates(rows: list[dict[str, Any]]) -> Figure:
    """Model update after one AdamW step and mean sublayer update at init, against depth, per residual arrangement."""
    depths = sorted({r["depth"] for r in rows})
    names = {"post": "post-norm", "pre": "pre-norm", "deepnorm": "DeepNorm"}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for i, (res, name) in enumerate(names.items()):
            for ax, key in zip(axes, ("model_update", "update_init")):
                mean, se = np.array([mean_update(rows, res, d, key) for d in depths]).T
                seeds = [sum(1 for r in rows if r["residual"] == res and r["depth"] == d) for d in depths]
                ax.errorbar(depths, mean, yerr=se * np.array([t_half(m) for m in seeds]), fmt="-o", color=f"C{i}",
                            label=name)
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("depth N (Transformer layers, log scale)")
            ax.legend()
        axes[0].set_ylabel(r"$\mathrm{RMS}(F(\theta_1) - F(\theta_0))\,/\,\mathrm{RMS}(F(\theta_0))$")
        axes[0].set_title("model update after one AdamW step")
        axes[1].set_ylabel(r"mean $\Vert x_{l+1} - x_l\Vert / \Vert x_l\Vert$ (log)")
        axes[1].set_title("sublayer update size at initialisation")
    return fig


@readable_figure
def residual_streams(rows: list[dict[str, Any]]) -> Figure:
    """Cosine of successive residual streams per sublayer, and the loss with sublayers run side by side in groups."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for i, res in enumerate(("pre", "post")):
            sel = [r for r in rows if r["residual"] == res]
            for stage, style in (("init", ":"), ("trained", "-o")):
                cos = np.mean([r[stage]["cosines"] for r in sel], axis=0)
                axes[0].plot(np.arange(1, len(cos) + 1), cos, style, color=f"C{i}", label=f"{res}-norm, {stage}")
            groups = sorted(int(g) for g in sel[0]["trained"]["loss"])
            loss = np.array([[r["trained"]["loss"][str(g)] for g in groups] for r in sel])
            err = loss.std(0, ddof=1) / np.sqrt(len(sel)) if len(sel) > 1 else np.zeros(len(groups))
            axes[1].errorbar(groups, loss.mean(0), yerr=t_half(len(sel)) * err, fmt="-o", color=f"C{i}",
                             label=f"{res}-norm, trained")
        l_cos = np.arange(1, len(rows[0]["init"]["cosines"]) + 1)
        axes[0].plot(l_cos, 1 / np.sqrt(1 + 1 / l_cos), "k--", lw=1,
                     label=r"$1/\sqrt{1 + 1/l}$: independent equal branches")
        axes[0].set_xlabel("sublayer l")
        axes[0].set_ylabel(r"mean $\cos(x_l, x_{l+1})$ over tokens")
        axes[0].set_title("how much each sublayer turns the residual stream")
        axes[0].legend(fontsize=8)
        axes[1].set_xscale("log", base=2)
        axes[1].set_xlabel("sublayers run side by side (group size, log scale)")
        axes[1].set_ylabel("validation loss (nats/byte)")
        axes[1].set_title("depth traded for width after training")
        axes[1].legend(fontsize=9)
    return fig
