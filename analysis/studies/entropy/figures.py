"""The entropy chapter's figures: the notes' curves extended past their range, sampled distributions under the
bound, the language models' per-token clouds under it, and the Markov source's loss against its entropy rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.entropy.experiments.entropy_lm import calibration_estimate
from analysis.studies.plotting import STYLE, readable_figure
from analysis.theory import entropy as ent


@readable_figure
def entropy_curves(classes: Sequence[int], notes_range: tuple[float, float]) -> Figure:
    """Entropy against p, loss against p, entropy against loss, for each K; the notes' p range shaded."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
        p = np.logspace(-8, 0, 2000)
        for k in classes:
            h = ent.spread_prediction_entropy(p, k)
            axes[0].plot(p, h, label=f"K = {k:,}")
            axes[0].plot(1 / k, np.log(k), "k.", ms=8)
            axes[2].plot(ent.cross_entropy_loss(p), h, label=f"K = {k:,}")
        axes[1].plot(p, ent.cross_entropy_loss(p), "C3")
        for ax in axes[:2]:
            ax.set_xscale("log")
            ax.axvspan(*notes_range, color="0.85", zorder=0, label="range the notes draw")
            ax.set_xlabel("p, probability of the correct class")
        axes[0].set_ylabel("entropy H (nats)")
        axes[0].set_title("entropy (dots: peak ln K at p = 1/K)")
        axes[0].legend(loc="upper left")
        axes[1].set_ylabel("loss L = -ln p (nats)")
        axes[1].set_title("cross-entropy loss")
        axes[2].set_xlabel("loss L (nats)")
        axes[2].set_ylabel("entropy H (nats)")
        axes[2].set_title("entropy against loss")
    return fig


@readable_figure
def bound_sampling(sampled: dict[str, Any]) -> Figure:
    """Sampled (loss, entropy) under the bound, and the median gap against Dirichlet concentration."""
    rows, k = sampled["rows"], sampled["classes"]
    m = k - 1
    conc = sorted({r["concentration"] for r in rows})
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(conc)))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        loss = np.linspace(0, 8, 400)
        axes[0].plot(loss, ent.entropy_upper_bound(loss, k), "k-", lw=2, label="bound $H_{max}(L, K)$")
        for r in rows:
            col = colours[conc.index(r["concentration"])]
            xs = np.full(len(r["entropy_sample"]), r["loss"])
            axes[0].plot(xs, r["entropy_sample"], "o", color=col, ms=4, alpha=0.6)
        for c, col in zip(conc, colours):
            axes[0].plot([], [], "o", color=col, label=f"c = {c:g}")
        axes[0].set_xlabel("loss L = -ln p (nats)")
        axes[0].set_ylabel("entropy H (nats)")
        axes[0].set_title(f"random distributions, K = {k:,}")
        axes[0].legend(ncol=2, fontsize=9, loc="lower right")
        for p_val in sorted({r["p"] for r in rows}):
            sel = [r for r in rows if r["p"] == p_val]
            cs = np.array([r["concentration"] for r in sel])
            (line,) = axes[1].loglog(cs, [r["median_gap"] for r in sel], "o", label=f"p = {p_val:g}")
            axes[1].loglog(cs, (1 - p_val) * (m - 1) / (2 * (m * cs + 1)), "--", color=line.get_color(), lw=1)
        axes[1].set_xlabel("Dirichlet concentration c")
        axes[1].set_ylabel("median gap $H_{max} - H$ (nats)")
        axes[1].set_title("gap to the bound (dashed: prediction)")
        axes[1].legend(fontsize=9)
    return fig


_CLOUD_BINS, _CLOUD_EXTENT = (60, 40), ((0.0, 12.0), (0.0, 6.0))  # (loss, entropy) histogram of a token cloud


def _cloud(ax: Any, snap: dict[str, Any], title: str, norm: LogNorm, classes: int) -> Any:
    """One snapshot's per-token (loss, entropy) density under the bound H_max(L, classes), with the means; the image."""
    loss = np.linspace(0, 12, 600)
    image = ax.hist2d(snap["loss"], snap["entropy"], bins=_CLOUD_BINS, range=_CLOUD_EXTENT, norm=norm, cmap="Blues")[3]
    ax.plot(loss, ent.entropy_upper_bound(loss, classes), "k-", lw=1.5, label=rf"bound $H_{{\max}}(L, {classes})$")
    ax.plot([snap["val_loss"]], [snap["mean_entropy"]], "r*", ms=14, label="mean (L, H)")
    ax.set_title(f"{title}, step {snap['step']}")
    ax.set_xlabel("loss -ln q(y) (nats)")
    return image


@readable_figure
def lm_clouds(runs: Sequence[tuple[str, dict[str, Any]]], classes: int = 256) -> Figure:
    """Per-token (loss, entropy) density for each run (rows) and snapshot (columns), with the bound."""
    n_snap = max(len(data["real"]["snapshots"]) for _, data in runs)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            len(runs), n_snap, figsize=(15, 4.4 * len(runs)), squeeze=False, sharex=True, sharey=True,
            layout="constrained",
        )
        # one colour scale for all panels, so that densities compare across them
        peak = max(
            np.histogram2d(s["loss"], s["entropy"], bins=_CLOUD_BINS, range=_CLOUD_EXTENT)[0].max()
            for _, data in runs for s in data["real"]["snapshots"]
        )
        norm = LogNorm(vmin=1, vmax=max(peak, 2))
        for row, (label, data) in zip(axes, runs):
            for ax, snap in zip(row, data["real"]["snapshots"]):
                image = _cloud(ax, snap, label, norm, classes)
            row[0].set_ylabel("entropy of the prediction (nats)")
            row[0].legend(loc="lower right", fontsize=9)
        fig.colorbar(image, ax=axes, label="tokens per bin (log scale)", shrink=0.8)
    return fig


@readable_figure
def architecture_clouds(data: dict[str, Any], classes: int = 256) -> Figure:
    """The last snapshot's per-token (loss, entropy) density of every architecture, under the bound, on one log
    colour scale with its colour bar; and each one's mean loss minus mean entropy (calibration) with its 95%
    Student-t interval over evaluation windows
    (:func:`analysis.studies.entropy.experiments.entropy_lm.calibration_estimate`), at every snapshot."""
    models = [("Transformer", data["real"])] + list(data.get("others", {}).items())
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(models) + 1, figsize=(5 * (len(models) + 1), 4.6), squeeze=False,
                                 layout="constrained")
        axes = axes[0]
        # one colour scale for every cloud, so that densities compare across architectures
        peak = max(np.histogram2d(run["snapshots"][-1]["loss"], run["snapshots"][-1]["entropy"], bins=_CLOUD_BINS,
                                  range=_CLOUD_EXTENT)[0].max() for _, run in models)
        norm = LogNorm(vmin=1, vmax=max(peak, 2))
        for ax, (name, run) in zip(axes, models):
            image = _cloud(ax, run["snapshots"][-1], name, norm, classes)
            ax.set_ylabel("entropy of the prediction (nats)")
        axes[0].legend(loc="lower right", fontsize=9)
        fig.colorbar(image, ax=list(axes[:-1]), label="tokens per bin (log scale)", shrink=0.8)
        ax = axes[-1]
        for i, (name, run) in enumerate(models):
            snaps = run["snapshots"]
            ests = [calibration_estimate(s) for s in snaps]
            ax.errorbar([s["step"] for s in snaps], [e.value for e in ests], yerr=[e.half_width() for e in ests],
                        fmt="-o", color=f"C{i}", label=name, capsize=3)
        ax.axhline(0.0, color="k", lw=1, ls=":")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)  # steps are never negative
        ax.set_yscale("symlog", linthresh=0.1)  # linear within +-0.1 nats, where trained models end
        ax.set_xlabel("optimiser step (symmetric log scale)")
        ax.set_ylabel("mean loss - mean entropy (nats, symlog)")
        ax.set_title("calibration: 0 when calibrated")
        ax.legend()
    return fig


@readable_figure
def markov_curve(markov: dict[str, Any], title: str) -> Figure:
    """Training loss on the Markov source against its entropy rate, uniform loss and final validation loss."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, 4.5))
        ax.plot(markov["train_steps"], markov["train_loss"], "C0-", label="training loss (batch)")
        ax.axhline(markov["entropy_rate"], color="k", ls="--",
                   label=f"entropy rate of the source, {markov['entropy_rate']:.3f}")
        ax.axhline(markov["uniform_loss"], color="0.5", ls=":",
                   label=f"uniform over the alphabet, {markov['uniform_loss']:.3f}")
        ax.errorbar([markov["train_steps"][-1]], [markov["model_loss"]],
                    yerr=[t_quantile(markov["tokens"] - 1) * markov["excess_loss_se"]],
                    fmt="C3o", label=f"validation loss, {markov['model_loss']:.3f}")
        ax.set_xlabel("optimiser step")
        ax.set_ylabel("loss (nats per token)")
        ax.set_ylim(markov["entropy_rate"] - 0.3, min(6.0, max(markov["train_loss"]) + 0.2))
        ax.set_title(title)
        ax.legend()
    return fig
