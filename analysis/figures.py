"""The book's figures: each function takes plain data and returns a labelled matplotlib Figure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from analysis.studies.plotting import STYLE, readable_figure
from analysis.theory import entropy as ent

_readable = readable_figure


@_readable
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
        fig.tight_layout()
    return fig


@_readable
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
        fig.tight_layout()
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


@_readable
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


@_readable
def architecture_clouds(data: dict[str, Any], classes: int = 256) -> Figure:
    """The last snapshot's per-token (loss, entropy) density of every architecture, under the bound; and each one's
    mean loss minus mean entropy (calibration) with two standard errors, at every snapshot."""
    models = [("Transformer", data["real"])] + list(data.get("others", {}).items())
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(models) + 1, figsize=(5 * (len(models) + 1), 4.6), squeeze=False)
        axes = axes[0]
        for ax, (name, run) in zip(axes, models):
            _cloud(ax, run["snapshots"][-1], name, LogNorm(vmin=1), classes)
            ax.set_ylabel("entropy of the prediction (nats)")
        axes[0].legend(loc="lower right", fontsize=9)
        ax = axes[-1]
        for i, (name, run) in enumerate(models):
            snaps = run["snapshots"]
            ax.errorbar([s["step"] for s in snaps], [s["loss_minus_entropy"] for s in snaps],
                        yerr=[2 * s["loss_minus_entropy_se"] for s in snaps], fmt="-o", color=f"C{i}", label=name,
                        capsize=3)
        ax.axhline(0.0, color="k", lw=1, ls=":")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_yscale("symlog", linthresh=0.1)  # linear within +-0.1 nats, where trained models end
        ax.set_xlabel("optimiser step (symmetric log scale)")
        ax.set_ylabel("mean loss - mean entropy (nats, symlog)")
        ax.set_title("calibration: 0 when calibrated")
        ax.legend()
        fig.tight_layout()
    return fig


@_readable
def markov_curve(markov: dict[str, Any], title: str) -> Figure:
    """Training loss on the Markov source against its entropy rate, uniform loss and final validation loss."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, 4.5))
        ax.plot(markov["train_steps"], markov["train_loss"], "C0-", label="training loss (batch)")
        ax.axhline(markov["entropy_rate"], color="k", ls="--",
                   label=f"entropy rate of the source, {markov['entropy_rate']:.3f}")
        ax.axhline(markov["uniform_loss"], color="0.5", ls=":",
                   label=f"uniform over the alphabet, {markov['uniform_loss']:.3f}")
        ax.errorbar([markov["train_steps"][-1]], [markov["model_loss"]], yerr=[2 * markov["excess_loss_se"]],
                    fmt="C3o", label=f"validation loss, {markov['model_loss']:.3f}")
        ax.set_xlabel("optimiser step")
        ax.set_ylabel("loss (nats per token)")
        ax.set_ylim(markov["entropy_rate"] - 0.3, min(6.0, max(markov["train_loss"]) + 0.2))
        ax.set_title(title)
        ax.legend()
        fig.tight_layout()
    return fig


# --- the softmax scale -------------------------------------------------------------------


@_readable
def scale_normal(fits: dict[str, Any]) -> Figure:
    """alpha*(n) for normal scores: the exact maximiser, the source's fit, and the fit's relative error."""
    from analysis.theory import softmax_scale as sc

    n = np.logspace(np.log10(2), 12, 500)
    exact, fit = sc.alpha_star_normal(n), sc.source_fit_normal(n)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
        axes[0].semilogx(n, exact, "k-", lw=2, label=r"exact $\alpha^* = \sqrt{W_0(\sqrt{e}\,n/2) - 1/2}$")
        axes[0].semilogx(n, fit, "C1--", label=r"source's fit $0.84\sqrt{\ln n}$")
        axes[0].axhspan(2, 3, color="0.9", zorder=0, label=r"$\alpha^* \in [2, 3]$")
        axes[0].axvspan(40, 20_000, color="C0", alpha=0.08, zorder=0, label="n range of the source's fit")
        axes[0].set_xlabel("n, number of scores (log scale)")
        axes[0].set_ylabel(r"$\alpha^*$ (multiplier of $1/\sqrt{d}$)")
        axes[0].set_title("mean-field optimum, normal scores")
        axes[0].legend(fontsize=9)
        axes[1].semilogx(n, 100 * (fit / exact - 1), "C1-")
        axes[1].axvspan(40, 20_000, color="C0", alpha=0.08, zorder=0)
        axes[1].axhline(0, color="k", lw=0.8)
        axes[1].set_xlabel("n (log scale)")
        axes[1].set_ylabel("fit error (%)")
        axes[1].set_title(r"$0.84\sqrt{\ln n}$ relative to the exact $\alpha^*$")
        fig.tight_layout()
    return fig


@_readable
def cosine_scores(density: dict[str, Any], large_d: dict[str, Any]) -> Figure:
    """Cosine density against samples, alpha*(n, d) for several d with the source's 3.5 ln n, and the large-d ratio."""
    from analysis.theory import softmax_scale as sc

    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
        s = np.linspace(-1, 1, 801)
        rng = np.random.default_rng(0)
        for i, row in enumerate(density["rows"][:3]):
            d = row["d"]
            u, v = rng.standard_normal((4000, d)), rng.standard_normal((4000, d))
            cos = np.einsum("ij,ij->i", u, v) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
            axes[0].hist(cos, bins=60, density=True, alpha=0.35, color=f"C{i}")
            axes[0].plot(s, sc.cosine_density(s, d), color=f"C{i}", label=f"d = {d} (KS p = {row['p_value']:.2f})")
        axes[0].set_xticks([-1.0, -0.5, 0.0, 0.5, 1.0])
        axes[0].set_xlabel("cosine s of two random directions")
        axes[0].set_ylabel("density")
        axes[0].set_title(r"density $(1 - s^2)^{(d-3)/2}$, against samples")
        axes[0].legend(fontsize=9)
        n = np.logspace(np.log10(2), 9, 300)
        for i, d in enumerate((16, 128, 1024)):
            axes[1].semilogx(n, sc.alpha_star_cosine(n, d), color=f"C{i}", label=rf"$\alpha^*(n, d = {d})$")
        axes[1].semilogx(n, sc.source_fit_cosine(n), "k--", label="source: 3.5 ln n (d = 128)")
        axes[1].axvspan(40, 20_000, color="C0", alpha=0.08, zorder=0)
        axes[1].set_xlabel("n (log scale)")
        axes[1].set_ylabel(r"$\alpha^*$ (multiplier of cos)")
        axes[1].set_title("mean-field optimum, cosine scores")
        axes[1].legend(fontsize=9)
        dims = np.array(large_d["dims"])
        for i, (n_key, ratio) in enumerate(large_d["ratios"].items()):
            axes[2].loglog(dims, np.abs(np.array(ratio) - 1), "o-", color=f"C{i}", label=f"n = {float(n_key):,.0f}")
        axes[2].loglog(dims, 20 / dims, "k:", label="slope -1")
        axes[2].set_xlabel("dimension d (log scale)")
        axes[2].set_ylabel(r"$|\alpha^* / (\sqrt{d}\,\alpha^*_\mathrm{normal}) - 1|$")
        axes[2].set_title(r"large-$d$ law: $\alpha^* \approx \sqrt{d}\,\alpha^*_\mathrm{normal}$")
        axes[2].legend(fontsize=9)
        fig.tight_layout()
    return fig


@_readable
def finite_sample_curves(mc: dict[str, Any], ns: Sequence[int]) -> Figure:
    """Mean (with 2 SE) and median objective against alpha / alpha*_MF, with the plateau h(b_n)."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(15, 5))
        for ax, kind in zip(axes, ("normal", "cosine")):
            rows = [r for r in mc["rows"] if r["kind"] == kind and r["n"] in ns]
            for i, r in enumerate(rows):
                x = np.array(r["alpha"]) / r["alpha_mean_field"]
                mean, se = np.array(r["mean"]), np.array(r["mean_se"])
                ax.plot(x, mean, color=f"C{i}", label=f"n = {r['n']:,}: mean")
                ax.fill_between(x, mean - 2 * se, mean + 2 * se, color=f"C{i}", alpha=0.2)
                ax.plot(x, r["median"], "--", color=f"C{i}", label="median (typical row)")
                ax.axhline(r["plateau_predicted"], color=f"C{i}", ls=":", lw=1.2)
                ax.plot([r["alpha_finite_sample"] / r["alpha_mean_field"]], [max(r["median"])], "v", color=f"C{i}", ms=9)
            ax.axvline(1.0, color="k", lw=1)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
            ax.set_xlabel(r"$\alpha$ / mean-field $\alpha^*$ (log scale)")
            ax.set_ylabel(r"$\alpha\,(1 - \sum p_i^2)$")
            title = "normal scores" if kind == "normal" else f"cosine scores, d = {mc['d']}"
            ax.set_title(f"{title}: objective on actual samples")
            ax.legend(fontsize=8, ncol=2)
        fig.tight_layout()
    return fig


def _finite_sample_points(ax: Any, mc: dict[str, Any], kind: str) -> None:
    """The typical-row maximisers of the Monte Carlo, with two standard errors."""
    rows = [r for r in mc["rows"] if r["kind"] == kind]
    ax.errorbar([r["n"] for r in rows], [r["alpha_finite_sample"] for r in rows],
                yerr=[2 * r["alpha_finite_sample_se"] for r in rows], fmt="rs", label="finite-sample (typical row)")


@_readable
def scale_rules(mc: dict[str, Any], decoder: dict[str, Any]) -> Figure:
    """Length rules side by side (normal, cosine d), and what one alpha*(L/2) keeps along a decoder."""
    from analysis.theory import softmax_scale as sc

    n = np.logspace(1, 6, 300)
    d = mc["d"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
        ax = axes[0]
        ax.semilogx(n, sc.alpha_star_normal(n), "k-", lw=2, label=r"mean-field $\alpha^*$")
        ax.semilogx(n, sc.source_fit_normal(n), "C1--", label=r"$0.84\sqrt{\ln n}$")
        ax.semilogx(n, sc.entropy_invariant_scale(n), "C2-.", label="entropy-invariant log_512 n")
        s_fit = float(sc.alpha_star_normal(512)) / np.log(512)
        ax.semilogx(n, s_fit * np.log(n), "C4:", label=f"Scalable-Softmax s ln n (s = {s_fit:.2f})")
        ax.axhline(1.0, color="0.5", lw=1, label=r"standard $1/\sqrt{d}$ ($\alpha = 1$)")
        _finite_sample_points(ax, mc, "normal")
        ax.set_xlabel("n (log scale)")
        ax.set_ylabel(r"$\alpha$ (multiplier of $1/\sqrt{d}$)")
        ax.set_title("dot-product scores")
        ax.legend(fontsize=8)
        ax = axes[1]
        ax.semilogx(n, sc.alpha_star_cosine(n, d), "k-", lw=2, label=rf"mean-field $\alpha^*$ ($d = {d}$)")
        ax.semilogx(n, sc.source_fit_cosine(n), "C1--", label="3.5 ln n")
        ax.axhspan(10, 30, color="0.9", zorder=0, label="temperatures used with QK-norm (10-30)")
        _finite_sample_points(ax, mc, "cosine")
        ax.set_xlabel("n (log scale)")
        ax.set_ylabel(r"$\alpha$ (multiplier of cos)")
        ax.set_title("cosine scores")
        ax.legend(fontsize=8)
        ax = axes[2]
        for i, row in enumerate(decoder["rows"]):
            t = np.array(row["t"])
            ax.semilogx(t / row["length"], 100 * np.array(row["kept"]), color=f"C{i}",
                        label=rf"$L$ = {row['length']:,}: $\alpha$ = {row['alpha_fixed']:.2f}")
        ax.axhline(90, color="0.5", ls=":")
        ax.set_xlabel("position t / L (log scale)")
        ax.set_ylabel("mean-field objective kept (%)")
        ax.set_title(r"decoder rule: one $\alpha^*(L/2)$ for every position")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return fig


@_readable
def training_sweep(runs: Sequence[tuple[str, dict[str, Any]]]) -> Figure:
    """Validation loss and softmax gradient against the attention scale, per length, dot and cosine."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(runs), 3, figsize=(17, 4.6 * len(runs)), squeeze=False)
        for row_axes, (label, data) in zip(axes, runs):
            lengths = sorted({r["ctx"] for r in data["runs"]})
            for i, ctx in enumerate(lengths):
                pred = data["predictions"][str(ctx)]
                for ax, kind, key in ((row_axes[0], "dot", "dot_alpha_mean_field"), (row_axes[1], "cosine", "cosine_alpha_mean_field")):
                    rows = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == kind and not r["learned"]]
                    values = sorted({r["value"] for r in rows})
                    means = [np.mean([r["val_loss"] for r in rows if r["value"] == v]) for v in values]
                    ax.plot(values, means, "o-", color=f"C{i}", label=f"L = {ctx}")
                    ax.axvline(pred[key], color=f"C{i}", ls="--", lw=1)
                    if kind == "cosine":
                        learned = [r for r in data["runs"] if r["ctx"] == ctx and r["learned"]]
                        ax.plot([r["final_scale"] for r in learned], [r["val_loss"] for r in learned], "*", color=f"C{i}",
                                ms=14, label=f"learned scale, L = {ctx}")
                dot = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == "dot"]
                values = sorted({r["value"] for r in dot})
                final = [np.mean([r["softmax_gradient"][-1][1] for r in dot if r["value"] == v]) for v in values]
                first = [np.mean([r["softmax_gradient"][0][1] for r in dot if r["value"] == v]) for v in values]
                row_axes[2].plot(values, final, "o-", color=f"C{i}", label=f"L = {ctx}, end of training")
                row_axes[2].plot(values, first, "x:", color=f"C{i}", label=f"L = {ctx}, initialisation")
            for ax, name in zip(row_axes, (r"dot-product: $\alpha$ ($\times 1/\sqrt{k}$)", "cosine: scale", r"dot-product: $\alpha$")):
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(plt.NullFormatter())
                ax.set_xlabel(f"{name} (log scale)")
            row_axes[0].set_ylabel("validation loss (nats/byte)")
            row_axes[0].set_title(rf"{label}: dot-product (dashed: $\alpha^*(L/2)$)")
            row_axes[1].set_title(rf"{label}: cosine (dashed: $\alpha^*(L/2, k)$)")
            row_axes[2].set_ylabel(r"mean $\alpha\,(1 - \sum p_i^2)$ over rows")
            row_axes[2].set_title(f"{label}: the softmax gradient")
            for ax in row_axes:
                ax.legend(fontsize=8)
        fig.tight_layout()
    return fig


# --- GAU at initialisation ---------------------------------------------------------------


@_readable
def gau_rms_grid(data: dict[str, Any]) -> Figure:
    """Measured RMS of GAU(x) against n, per s, with the source's and the corrected predictions (log-log)."""
    widths = sorted({(r["d"], r["e"]) for r in data["grid"]}, reverse=True)
    inits = sorted({r["init"] for r in data["grid"]})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(inits), len(widths), figsize=(7 * len(widths), 4.8 * len(inits)), squeeze=False)
        for row, init in zip(axes, inits):
            for ax, (d, e) in zip(row, widths):
                ss = sorted({r["s"] for r in data["grid"]})
                for i, s in enumerate(ss):
                    rows = sorted((r for r in data["grid"] if r["init"] == init and r["d"] == d and r["s"] == s),
                                  key=lambda r: r["n"])
                    n = [r["n"] for r in rows]
                    ax.errorbar(n, [r["rms"] for r in rows], yerr=[2 * r["rms_std"] for r in rows], fmt="o",
                                color=f"C{i}", label=f"s = {s}: measured")
                    ax.plot(n, [r["pred_rms_corrected"] for r in rows], "-", color=f"C{i}")
                    ax.plot(n, [r["pred_rms_source"] for r in rows], ":", color=f"C{i}")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("n, sequence length (log scale)")
                ax.set_ylabel("RMS of GAU(x) (log scale)")
                ax.set_title(f"d = {d}, e = {e}, {init} init")
                ax.legend(fontsize=8, title=r"solid: corrected; dotted: $s\nu^6/n$", title_fontsize=8)
        fig.tight_layout()
    return fig


@_readable
def gau_lambda(data: dict[str, Any]) -> Figure:
    """RMS of GAU(x) when every weight is scaled by lambda, and its local exponent against 7."""
    from analysis.experiments.gau_init import local_exponents

    sweep = data["sweep"]
    lam = np.array([r["lambda"] for r in sweep["rows"]])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
        axes[0].errorbar(lam, [r["rms"] for r in sweep["rows"]], yerr=[2 * r["rms_std"] for r in sweep["rows"]],
                         fmt="o", label="measured")
        axes[0].plot(lam, [r["pred_corrected"] for r in sweep["rows"]], "k-", label="corrected prediction")
        i1 = int(np.argmin(np.abs(lam - 1)))
        ref = sweep["rows"][i1]["rms"]
        axes[0].plot(lam, ref * (lam / lam[i1]) ** 7, "C3:", label=r"$\lambda^7$ through $\lambda = 1$")
        axes[0].set_xscale("log")
        axes[0].set_yscale("log")
        axes[0].set_xlabel(r"$\lambda$, scale of every weight (log scale)")
        axes[0].set_ylabel("RMS of GAU(x) (log scale)")
        axes[0].set_title(f"d = {sweep['d']}, e = {sweep['e']}, s = {sweep['s']}, n = {sweep['n']}, LeCun")
        axes[0].legend()
        mid, measured = local_exponents(sweep, "rms")
        _, predicted = local_exponents(sweep, "pred_corrected")
        axes[1].semilogx(mid, measured, "o", label="measured")
        axes[1].semilogx(mid, predicted, "k-", label="corrected prediction")
        axes[1].axhline(7, color="C3", ls=":", label="source: 7")
        axes[1].set_xlabel(r"$\lambda$ (log scale)")
        axes[1].set_ylabel(r"local exponent $d \ln \mathrm{RMS} / d \ln \lambda$")
        axes[1].set_title(r"the $\lambda^7$ law, measured locally")
        axes[1].legend()
        fig.tight_layout()
    return fig


@_readable
def deep_gau(data: dict[str, Any]) -> Figure:
    """The learning-rate boundary against depth per architecture, with and without warmup; the validation loss
    against the learning rate at the largest depth; and the update size per sublayer at initialisation."""
    from analysis.experiments.deep_gau import ARCHS, arch_label, boundary, lr_curve

    depths = sorted({r["depth"] for r in data["runs"]})
    warmups = sorted({r["warmup"] for r in data["runs"]})
    lrs = sorted({r["lr"] for r in data["runs"]})
    floor = lrs[0] / 2  # where "no learning rate trains" is drawn
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
                                 yerr=[2 * r["se"] for r in rows], fmt=style, color=f"C{i}", capsize=3)
                gone = [r["lr"] * shift for r in rows if r["diverged"] > 0]
                axes[1].plot(gone, [data["unigram_entropy"] + 0.4] * len(gone), "x", color=f"C{i}", ms=10, mew=2)
            deepest = [r for r in data["runs"] if r["depth"] == depths[-1] and (r["block"], r["residual"]) == (block, residual)
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
        fig.tight_layout()
    return fig


@_readable
def recall_scale(data: dict[str, Any]) -> Figure:
    """Held-out recall loss against the cosine scale per number of pairs; the best scale against the row length,
    with its bootstrap interval, beside every prediction; and the best scale against the training budget."""
    from analysis.experiments.softmax_scale_recall import by_budget, loss_table, summary
    from analysis.theory import softmax_scale as sc

    s = summary(data)
    pairs = s["pairs"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(20, 5.2))
        ax = axes[0]
        for i, p in enumerate(pairs):
            scales, table = loss_table(data, p)
            se = table.std(axis=0, ddof=1) / np.sqrt(table.shape[0]) if table.shape[0] > 1 else 0 * scales
            ax.errorbar(scales, table.mean(axis=0), yerr=2 * se, fmt="-o", color=f"C{i}", capsize=3,
                        label=f"{p} pairs (m = {s['rows'][p]['row_length']:.3g})")
            ax.axvline(s["rows"][p]["mean_field"], color=f"C{i}", ls=":", lw=1.2)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("cosine scale s: logits s cos(q, k) (log scale)")
        ax.set_ylabel("held-out loss at the queries (nats)")
        ax.set_title(r"after a fixed budget; dotted: mean-field $\alpha^*$")
        ax.legend(fontsize=9)
        ax = axes[1]
        m = np.array([s["rows"][p]["row_length"] for p in pairs])
        best = np.array([s["rows"][p]["best"] for p in pairs])
        lo = np.array([s["rows"][p]["lo"] for p in pairs])
        hi = np.array([s["rows"][p]["hi"] for p in pairs])
        ax.errorbar(m, best, yerr=[best - lo, hi - best], fmt="ko", capsize=4, ms=8, label="trains best (95% interval)")
        grid = np.geomspace(m.min() / 1.5, m.max() * 1.5, 100)
        k = data["head_dim"]
        ax.plot(grid, sc.alpha_star_cosine(grid, k), "C0-", label=rf"mean-field $\alpha^*(m, k = {k})$")
        ax.plot(grid, sc.source_fit_cosine(grid), "C1--", label="log-n rule 3.5 ln m")
        ax.plot(grid, np.full_like(grid, math.sqrt(k)), "C2-.", label=rf"QK-norm practice $\sqrt{{k}}$ = {math.sqrt(k):.3g}")
        ax.errorbar(m, [s["rows"][p]["finite_sample"] for p in pairs],
                    yerr=[2 * s["rows"][p]["finite_sample_se"] for p in pairs], fmt="C3s", capsize=3,
                    label="finite-sample maximiser")
        ax.set_xscale("log")
        ax.set_xticks(m, [f"{v:.3g}" for v in m])
        ax.minorticks_off()
        ax.set_yscale("log", base=2)
        ax.set_xlabel("mean row length m (log scale)")
        ax.set_ylabel("cosine scale (log scale)")
        ax.set_title("the best scale against the predictions")
        top = max(max(s["rows"][p]["finite_sample"] + 2 * s["rows"][p]["finite_sample_se"] for p in pairs), hi.max())
        ax.set_ylim(min(lo.min(), math.sqrt(k)) / 4, top * 1.3)  # room below the data for the legend
        ax.legend(fontsize=9, loc="lower right")
        ax = axes[2]
        for i, p in enumerate(pairs):
            path = by_budget(data, p, bootstrap=100)
            steps = [b["step"] for b in path]
            ax.fill_between(steps, [b["lo"] for b in path], [b["hi"] for b in path], color=f"C{i}", alpha=0.25)
            ax.plot(steps, [b["best"] for b in path], "-o", color=f"C{i}", label=f"{p} pairs")
            ax.axhline(s["rows"][p]["mean_field"], color=f"C{i}", ls=":", lw=1.2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("optimiser steps (training budget)")
        ax.set_ylabel("best cosine scale (log scale)")
        ax.set_title(r"the best scale against the budget; dotted: $\alpha^*$")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return fig


@_readable
def coord_check(data: dict[str, Any]) -> Figure:
    """Median branch ratio RMS(f(x))/RMS(x) against width, per depth, at each measured step (mup-style, log-log)."""
    from analysis.experiments.coord_check import ARCHS

    steps = sorted({r["step"] for r in data["rows"]})
    depths = sorted({r["depth"] for r in data["rows"]})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(ARCHS), figsize=(5.5 * len(ARCHS), 4.6), sharey=True)
        for ax, (block, residual) in zip(axes, ARCHS):
            for i, depth in enumerate(depths):
                for step, style in zip(steps, ("-o", "--s", ":^", "-.v", "-x")):
                    rows = sorted((r for r in data["rows"] if (r["block"], r["residual"], r["depth"], r["step"])
                                   == (block, residual, depth, step)), key=lambda r: r["width"])
                    ax.plot([r["width"] for r in rows], [r["median"] for r in rows], style, color=f"C{i}",
                            label=f"depth {depth}, step {step}" if block == ARCHS[0][0] else None)
            ax.axhline(0.01, color="k", lw=0.8, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("width d (log scale)")
            name = "GAU" if block == "gau" else "Transformer"
            ax.set_title(f"{residual}-norm {name}")
        axes[0].set_ylabel("median over layers of RMS(f(x)) / RMS(x)")
        axes[0].legend(fontsize=7, ncol=2)
        fig.tight_layout()
    return fig


@_readable
def qk_saturation(data: dict[str, Any], law: dict[int, float]) -> Figure:
    """q.k moments against d; softmax-row entropy and median Jacobian norm against d, with and without 1/sqrt(d)."""
    qk, sat, n = data["qk"], data["saturation"], data["keys"]
    ds = np.array([r["d"] for r in qk], dtype=float)
    rd = np.array([r["d"] for r in sat], dtype=float)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(13, 9))
        ax = axes[0, 0]
        ax.errorbar(ds, [r["var"] / r["d"] for r in qk], yerr=[2 * r["var_se"] / r["d"] for r in qk], fmt="o", label="sampled")
        ax.axhline(1.0, color="k", lw=1, label="Var[q.k] = d")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d (log scale)")
        ax.set_ylabel("Var[q.k] / d")
        ax.set_title("the variance: exact")
        ax.legend()
        ax = axes[0, 1]
        ax.errorbar(ds, [r["kurtosis"] for r in qk], yerr=[2 * r["kurtosis_se"] for r in qk], fmt="o", label="sampled")
        ax.plot(ds, 6 / ds, "k-", label="6/d (sum of d normal products)")
        ax.axhline(0, color="C3", ls="--", label="normal (the notes)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_xlabel("d (log scale)")
        ax.set_ylabel("excess kurtosis of q.k (symlog)")
        ax.set_title("the shape: normal only as d grows")
        ax.legend(fontsize=9)
        ax = axes[1, 0]
        for i, (name, lab) in enumerate((("scaled", r"$q \cdot k / \sqrt{d}$"), ("unscaled", r"$q \cdot k$"))):
            ax.errorbar(rd, [r[name]["entropy_mean"] for r in sat], yerr=[2 * r[name]["entropy_se"] for r in sat],
                        fmt="o", color=f"C{i}", label=f"softmax of {lab}")
        fine = np.geomspace(rd[0], rd[-1], 200)
        ax.plot(fine, np.full_like(fine, np.log(n) - 0.5), "C0-", lw=1, label="mean field ln n - 1/2")
        mf = np.log(n) - fine / 2
        ax.plot(fine[mf > 0], mf[mf > 0], "C1-", lw=1, label="mean field ln n - d/2")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d (log scale)")
        ax.set_ylabel("mean row entropy (nats)")
        ax.set_title(f"attention-row entropy, n = {n} keys")
        ax.legend(fontsize=9)
        ax = axes[1, 1]
        for i, name in enumerate(("scaled", "unscaled")):
            ax.errorbar(rd, [r[name]["jac_median"] for r in sat], yerr=[2 * r[name]["jac_median_se"] for r in sat],
                        fmt="o", color=f"C{i}", label=f"median, {name}")
            ax.fill_between(rd, [r[name]["jac_q10"] for r in sat], [r[name]["jac_q90"] for r in sat], color=f"C{i}",
                            alpha=0.15, label=f"10-90% of rows, {name}")
        ld = sorted(law)
        ax.plot(ld, [law[d] for d in ld], "k-", label="saturated law 2 exp(-t) (derived)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("d (log scale)")
        ax.set_ylabel(r"$\Vert \mathrm{diag}(p) - p p^\top \Vert_F$ (log scale)")
        ax.set_title("softmax Jacobian norm")
        ax.legend(fontsize=8)
        fig.tight_layout()
    return fig


@_readable
def head_symmetry(runs: dict[str, Any]) -> Figure:
    """Relative spread between heads against training step for each initialisation (log scale; 0 drawn at the floor)."""
    floor = 1e-10
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8, 4.8))
        for i, (name, run) in enumerate(runs.items()):
            steps = np.maximum(np.array(run["steps"], dtype=float), 0.5)
            spread = np.maximum(np.array(run["spread"]), floor)
            ax.plot(steps, spread, "-o", color=f"C{i}", label=name + (" (exactly 0 throughout)" if max(run["spread"]) == 0 else ""))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 10)
        ax.set_xlabel("AdamW step (log scale; step 0 drawn at 0.5)")
        ax.set_ylabel(r"$\max_h \Vert\theta_h - \theta_0\Vert / \Vert\theta_0\Vert$ (log; 0 drawn at 1e-10)")
        ax.set_title("do identically initialised heads stay identical?")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return fig


@_readable
def positions_figure(pos: dict[str, Any]) -> Figure:
    """PE dot product against k; float32 error of PE and of M_k against position; projected positional scores."""
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(13, 9))
        grid = fig.add_gridspec(2, 2)
        axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
        ax = axes[0]
        ax.plot(pos["dot_curve_k"], pos["dot_curve"], "C0-")
        ax.set_xlabel("offset k = q - p (tokens)")
        ax.set_ylabel("PE(p) . PE(p + k)")
        ax.set_title(rf"$\sum_i \cos(k\,w_i)$, $d$ = {pos['d']}: same for $+k$ and $-k$")
        ax = axes[1]
        p = np.maximum(np.array(pos["pe32_pos"], dtype=float), 0.5)
        ax.loglog(p, np.maximum(pos["pe32_err_by_pos"], 1e-12), "C1-", label="float32 PE vs float64 PE")
        ax.loglog(p, p * 6e-8, "k:", label="p x eps32 / 2 (angle rounding)")
        ax.axhline(max(pos["m_err64"]), color="C0", ls="--", label=r"max $|PE(p+k) - M_k\,PE(p)|$, float64")
        ax.set_xlabel("position p (log scale)")
        ax.set_ylabel("max absolute error (log scale)")
        ax.set_title("rounding: exact in float64, drifts in float32")
        ax.legend(fontsize=8)
        ax = axes[2]
        proj = [r for r in pos["projected"] if r["k"] > 0]
        ax.semilogy([r["k"] for r in proj], [r["std"] / abs(r["mean"]) for r in proj], "o-", color="C3",
                    label=r"sinusoidal PE through random $W_q, W_k$")
        ax.axhline(pos["rope_spread"], color="C2", ls="--", label="RoPE (worst k)")
        ax.set_xlabel("offset k (tokens)")
        ax.set_ylabel("std over p / |mean| of the score (log)")
        ax.set_title("does the positional score depend on k only?")
        ax.legend(fontsize=8)
        fig.tight_layout()
    return fig


@_readable
def depth_updates(rows: list[dict[str, Any]]) -> Figure:
    """Model update after one AdamW step and mean sublayer update at init, against depth, per residual arrangement."""
    from analysis.experiments.norms_depth import mean_update

    depths = sorted({r["depth"] for r in rows})
    names = {"post": "post-norm", "pre": "pre-norm", "deepnorm": "DeepNorm"}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        for i, (res, name) in enumerate(names.items()):
            for ax, key in zip(axes, ("model_update", "update_init")):
                mean, se = np.array([mean_update(rows, res, d, key) for d in depths]).T
                ax.errorbar(depths, mean, yerr=2 * se, fmt="-o", color=f"C{i}", label=name)
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("depth N (Transformer layers, log scale)")
            ax.legend()
        axes[0].set_ylabel("RMS(F(theta_1) - F(theta_0)) / RMS(F(theta_0))")
        axes[0].set_title("model update after one AdamW step")
        axes[1].set_ylabel(r"mean $\Vert x_{l+1} - x_l\Vert / \Vert x_l\Vert$ (log)")
        axes[1].set_title("sublayer update size at initialisation")
        fig.tight_layout()
    return fig


@_readable
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
            axes[1].errorbar(groups, loss.mean(0), yerr=2 * err, fmt="-o", color=f"C{i}", label=f"{res}-norm, trained")
        l_cos = np.arange(1, len(rows[0]["init"]["cosines"]) + 1)
        axes[0].plot(l_cos, 1 / np.sqrt(1 + 1 / l_cos), "k--", lw=1, label=r"$1/\sqrt{1 + 1/l}$: independent equal branches")
        axes[0].set_xlabel("sublayer l")
        axes[0].set_ylabel(r"mean $\cos(x_l, x_{l+1})$ over tokens")
        axes[0].set_title("how much each sublayer turns the residual stream")
        axes[0].legend(fontsize=8)
        axes[1].set_xscale("log", base=2)
        axes[1].set_xlabel("sublayers run side by side (group size, log scale)")
        axes[1].set_ylabel("validation loss (nats/byte)")
        axes[1].set_title("depth traded for width after training")
        axes[1].legend(fontsize=9)
        fig.tight_layout()
    return fig


@_readable
def gau_quality(data: dict[str, Any]) -> Figure:
    """Validation loss against steps and against measured training seconds per architecture (mean over seeds, band
    of 2 SE), and held-out recall accuracy against the number of pairs."""
    from analysis.experiments.gau_quality import (
        ARCH_LABELS,
        ARCHS,
        _text_runs,
        recall_table,
    )

    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(18, 5))
        for i, arch in enumerate(ARCHS):
            runs = _text_runs(data, arch)
            curves = np.array([r["curve"] for r in runs], dtype=float)  # (seeds, evals, 3)
            mean, se = curves.mean(0), curves.std(0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else 0 * curves[0]
            for ax, axis in ((axes[0], 0), (axes[1], 1)):
                x = mean[1:, axis]
                ax.plot(x, mean[1:, 2], "-", color=f"C{i}", label=ARCH_LABELS[arch])
                ax.fill_between(x, mean[1:, 2] - 2 * se[1:, 2], mean[1:, 2] + 2 * se[1:, 2], color=f"C{i}",
                                alpha=0.2)
            rec = recall_table(data, arch)
            axes[2].errorbar(rec["pairs"], rec["mean"], yerr=[2 * e for e in rec["se"]], fmt="-o", color=f"C{i}",
                             capsize=3, label=ARCH_LABELS[arch])
        for ax, xlabel in ((axes[0], "optimiser steps"), (axes[1], "training time on this machine (s, one thread)")):
            ax.set_xlabel(xlabel)
            ax.set_ylabel("validation loss (nats/byte)")
            lo = min(line.get_ydata().min() for line in ax.get_lines())
            ax.set_ylim(lo - 0.05, lo + 1.2)
        axes[0].set_title("loss against steps (band: 2 SE over seeds)")
        axes[1].set_title("the same runs against training time")
        axes[0].legend()
        axes[2].axhline(data["chance"], color="grey", ls=":", lw=1.2, label="chance (1/values)")
        axes[2].set_xscale("log", base=2)
        axes[2].set_xticks(data["pairs"], [str(p) for p in data["pairs"]])
        axes[2].minorticks_off()
        axes[2].set_ylim(-0.03, 1.05)
        axes[2].set_xlabel("pairs a query chooses among (log scale)")
        axes[2].set_ylabel("held-out recall accuracy")
        axes[2].set_title("single-token recall (2 SE over seeds)")
        axes[2].legend(loc="lower left")
        fig.tight_layout()
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


@_readable
def gau_length(data: dict[str, Any]) -> Figure:
    """Recall accuracy against evaluation length per normalisation (spread and near layouts); text loss against
    position with the full context and with the last n tokens only; the entropy and the mass of the query rows'
    attention against length (the layer that attends most sharply at the training length)."""
    from analysis.experiments.gau_length import (
        NORM_LABELS,
        _runs,
        recall_curve,
        summary,
    )

    s = summary(data)
    n, ctx, long = s["train_span"], s["ctx"], s["long"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
        ax = axes[0, 0]
        for i, norm in enumerate(s["norms"]):
            for layout, style in (("spread", "-o"), ("near", "--s")):
                c = s[norm][layout]
                ax.errorbar(c["span"], c["mean"], yerr=[2 * e for e in c["se"]], fmt=style, color=f"C{i}", ms=5,
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
        ax.set_ylim(lo - 0.1, min(hi + 0.1, math.log(256) + 0.5))
        ax.axhline(math.log(256), color="grey", ls=":", lw=1)
        ax.axvline(ctx, color="k", ls=":", lw=1.2)
        ax.legend(fontsize=9, loc="upper left")
        for ax, metric, ylabel in ((axes[1, 0], "entropy", "entropy of the query rows (nats)"),
                                   (axes[1, 1], "mass", "row mass: sum of weights (log)")):
            for i, norm in enumerate(s["norms"]):
                sharpest = int(np.argmin([c["mean"][s["spans"].index(n)] for c in s[norm]["entropy_near"]]))
                c = recall_curve(data, norm, "near", f"{metric}:{sharpest}")
                ax.errorbar(c["span"], c["mean"], yerr=[2 * e for e in c["se"]], fmt="-o", color=f"C{i}", ms=5,
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
        axes[1, 1].set_yscale("log")
        axes[1, 1].set_title("attention mass at the query rows")
        fig.tight_layout()
    return fig
