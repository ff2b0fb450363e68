"""The figures of the chapter on GAU and FLASH trained: quality at equal parameters (loss against steps and time,
recall against pairs) and transfer across lengths per attention normalisation."""

from __future__ import annotations

import itertools
import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.gau_trained.experiments.gau_length import NORM_LABELS, _runs, recall_curve, summary
from analysis.studies.gau_trained.experiments.gau_quality import ARCHS, ARCH_LABELS, lr_table, recall_table, text_runs
from analysis.studies.plotting import STYLE, readable_figure


def t_multiple(n: int) -> float:
    """The two-sided 95% Student-t quantile for a mean over ``n`` seeds (n - 1 df): the band's half width in SE (0 with
    one seed, which has no error estimate)."""
    return t_quantile(n - 1) if n > 1 else 0.0


@readable_figure
def quality(data: dict[str, Any]) -> Figure:
    """Validation loss against steps and against measured training seconds per architecture at its best learning
    rate (mean over seeds, band of the 95% Student-t interval), held-out recall accuracy against the number of pairs
    (each at its best learning rate there), and the final validation loss against the peak learning rate."""
    with plt.rc_context(STYLE):
        fig, grid = plt.subplots(2, 2, figsize=(13, 10))
        axes = grid.ravel()
        for i, arch in enumerate(ARCHS):
            sweep = lr_table(data, "text", arch)
            seeds_at = len({r["seed"] for r in data["runs"] if r["task"] == "text" and r["arch"] == arch})
            axes[3].errorbar([row["lr"] * (1 + 0.03 * (i - 1.5)) for row in sweep], [row["mean"] for row in sweep],
                             yerr=[t_multiple(seeds_at) * row["se"] for row in sweep], fmt="-o", color=f"C{i}",
                             capsize=3, label=ARCH_LABELS[arch])
            runs = text_runs(data, arch)
            curves = np.array([r["curve"] for r in runs], dtype=float)  # (seeds, evals, 3)
            mean, se = curves.mean(0), curves.std(0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else 0 * curves[0]
            for ax, axis in ((axes[0], 0), (axes[1], 1)):
                x = mean[1:, axis]
                ax.plot(x, mean[1:, 2], "-", color=f"C{i}", label=ARCH_LABELS[arch])
                t = t_multiple(len(runs))
                ax.fill_between(x, mean[1:, 2] - t * se[1:, 2], mean[1:, 2] + t * se[1:, 2], color=f"C{i}",
                                alpha=0.2)
            rec = recall_table(data, arch)
            seeds = len({r["seed"] for r in data["runs"] if r["task"] == "recall" and r["arch"] == arch})
            axes[2].errorbar(rec["pairs"], rec["mean"], yerr=[t_multiple(seeds) * e for e in rec["se"]], fmt="-o",
                             color=f"C{i}",
                             capsize=3, label=ARCH_LABELS[arch])
        for ax, xlabel in ((axes[0], "optimiser steps"), (axes[1], "training time on this machine (s, one thread)")):
            ax.set_xlabel(xlabel)
            ax.set_ylabel("validation loss (nats/byte)")
            lo = min(line.get_ydata().min() for line in ax.get_lines())
            ax.set_ylim(lo - 0.05, lo + 1.2)
        axes[0].set_title("at each one's best learning rate (band: 95% t)")
        axes[1].set_title("the same runs against training time")
        axes[0].legend()
        axes[2].axhline(data["chance"], color="grey", ls=":", lw=1.2, label="chance (1/values)")
        axes[2].set_xscale("log", base=2)
        axes[2].set_xticks(data["pairs"], [str(p) for p in data["pairs"]])
        axes[2].minorticks_off()
        axes[2].set_ylim(-0.03, 1.05)
        axes[2].set_xlabel("pairs a query chooses among (log scale)")
        axes[2].set_ylabel("held-out recall accuracy")
        axes[2].set_title("single-token recall (95% t interval)")
        axes[2].legend(loc="lower left")
        axes[3].set_xscale("log")
        axes[3].set_xticks(data["lrs"], [f"{lr:g}" for lr in data["lrs"]])
        axes[3].minorticks_off()
        axes[3].set_xlabel("peak learning rate (log scale)")
        axes[3].set_ylabel("final validation loss (nats/byte)")
        axes[3].set_title("loss against the learning rate (95% t interval)")
        axes[3].legend(fontsize=8)
    return fig


def _log_bins(values: np.ndarray, start: int, stop: int, per_octave: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Means of values[start:stop] in bins equally spaced in log position; returns (bin centre positions, means)."""
    edges = np.unique(np.geomspace(start, stop, max(2, int(per_octave * math.log2(stop / start)) + 1)).astype(int))
    centres, means = [], []
    for a, b in itertools.pairwise(edges):
        if b > a:
            centres.append(math.sqrt(a * (b - 1)) if a > 0 else (b - 1) / 2)
            means.append(float(np.mean(values[a:b])))
    return np.array(centres), np.array(means)


def sharpest_layer(s: dict[str, Any], norm: str) -> int:
    """The layer whose query rows attend most sharply (lowest mean entropy, filler first) at the training length, in
    a gau-length summary ``s``: the layer the figure's and the prose's mechanism read."""
    at = s["spans"].index(s["train_span"])
    return int(np.argmin([c["mean"][at] for c in s[norm]["entropy_near"]]))


@readable_figure
def length(data: dict[str, Any]) -> Figure:
    """Recall accuracy against evaluation length per normalisation (spread and near layouts); text loss against
    position with the full context and with the last n tokens only; the entropy and the mass of the query rows'
    attention against length (the layer that attends most sharply at the training length)."""
    s = summary(data)
    n, ctx, long = s["train_span"], s["ctx"], s["long"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
        ax = axes[0, 0]
        for i, norm in enumerate(s["norms"]):
            for layout, style in (("spread", "-o"), ("near", "--s")):
                c = s[norm][layout]
                t = t_multiple(len(_runs(data, "recall", norm)))
                ax.errorbar(c["span"], c["mean"], yerr=[t * e for e in c["se"]], fmt=style, color=f"C{i}", ms=5,
                            capsize=2, label=f"{NORM_LABELS[norm]}, {layout}")
        ax.axvline(n, color="k", ls=":", lw=1.2)
        ax.axhline(data["chance"], color="grey", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(s["spans"], [str(v) for v in s["spans"]])
        ax.minorticks_off()
        ax.set_xlabel(f"evaluation length (log scale; dotted: training length {n})")
        ax.set_ylabel("recall accuracy at the queries")
        ax.set_title("recall: solid spread filler, dashed filler first")
        ax.set_ylim(-0.03, 1.05)
        ax.legend(fontsize=9, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
        ax = axes[0, 1]
        for i, norm in enumerate(s["norms"]):
            runs = _runs(data, "text", norm)
            full = np.mean([r["position_loss"] for r in runs], axis=0)
            cut = np.mean([r["truncated_loss"] for r in runs], axis=0)
            x, y = _log_bins(full, 8, long)
            ax.plot(x, y, "-", color=f"C{i}", label=NORM_LABELS[norm])
            xc, yc = _log_bins(np.concatenate([np.full(ctx - 1, np.nan), cut]), ctx, long)
            ax.plot(xc, yc, "--", color=f"C{i}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("position in the sequence (log scale)")
        ax.set_ylabel("loss (nats/byte)")
        ax.set_title(f"text: solid full context, dashed last {ctx} tokens")
        lo = min(np.nanmin(line.get_ydata()) for line in ax.get_lines())
        hi = max(np.nanmax(line.get_ydata()) for line in ax.get_lines())
        ax.set_ylim(lo - 0.1, hi + 0.1)
        ax.axvline(ctx, color="k", ls=":", lw=1.2)
        ax.legend(fontsize=9, loc="upper left")
        for ax, metric, ylabel in ((axes[1, 0], "entropy", "entropy of the query rows (nats)"),
                                   (axes[1, 1], "mass", "row mass: sum of weights (log)")):
            for i, norm in enumerate(s["norms"]):
                sharpest = sharpest_layer(s, norm)
                c = recall_curve(data, norm, "near", f"{metric}:{sharpest}")
                t = t_multiple(len(_runs(data, "recall", norm)))
                ax.errorbar(c["span"], c["mean"], yerr=[t * e for e in c["se"]], fmt="-o", color=f"C{i}", ms=5,
                            capsize=2, label=f"{NORM_LABELS[norm]} (layer {sharpest + 1})")
            ax.axvline(n, color="k", ls=":", lw=1.2)
            ax.set_xscale("log", base=2)
            ax.set_xticks(s["spans"], [str(v) for v in s["spans"]])
            ax.minorticks_off()
            ax.set_xlabel("evaluation length, filler first (log scale)")
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=9)
        spans = np.array(s["spans"], dtype=float)
        axes[1, 0].plot(spans, np.log(spans), "k--", lw=1, label="ln n (uniform row)")
        axes[1, 0].legend(fontsize=9)
        axes[1, 0].set_title("attention entropy at the query rows")
        # an entropy lies in [0, ln n] for a row over n positions: intervals reaching outside are cut there
        axes[1, 0].set_ylim(0, 1.05 * math.log(spans[-1]))
        axes[1, 1].set_yscale("log")
        axes[1, 1].set_title("attention mass at the query rows")
    return fig
