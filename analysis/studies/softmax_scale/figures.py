"""The softmax-scale chapter's figures: the normal and cosine maximisers, the objective on finite samples, the length
rules side by side, the training sweep and the recall runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.plotting import STYLE, log_ticks, readable_figure
from analysis.studies.softmax_scale.experiments.softmax_scale_recall import by_budget, loss_table, summary
from analysis.theory import softmax_scale as sc


@readable_figure
def scale_normal(fits: dict[str, Any]) -> Figure:
    """alpha*(n) for normal scores: the exact maximiser, the source's fit, and the fit's relative error."""
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
    return fig


@readable_figure
def cosine_scores(density: dict[str, Any], large_d: dict[str, Any]) -> Figure:
    """Cosine density against samples, alpha*(n, d) for several d with the source's 3.5 ln n, and the large-d ratio."""
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
    return fig


@readable_figure
def finite_sample_curves(mc: dict[str, Any], ns: Sequence[int]) -> Figure:
    """Mean (with its 95% interval over the rows) and median objective against alpha / alpha*_MF, with the plateau
    h(b_n); the legends serve both panels (left: the colour of each n; right: the line styles)."""
    from matplotlib.lines import Line2D

    shown = sorted({r["n"] for r in mc["rows"] if r["n"] in ns})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(15, 5))
        for ax, kind in zip(axes, ("normal", "cosine")):
            rows = [r for r in mc["rows"] if r["kind"] == kind and r["n"] in ns]
            for r in rows:
                i = shown.index(r["n"])  # one colour per n in both panels, as the legend says
                x = np.array(r["alpha"]) / r["alpha_mean_field"]
                mean, se = np.array(r["mean"]), np.array(r["mean_se"])
                ax.plot(x, mean, color=f"C{i}")
                z = t_quantile(math.inf)
                ax.fill_between(x, mean - z * se, mean + z * se, color=f"C{i}", alpha=0.2)
                ax.plot(x, r["median"], "--", color=f"C{i}")
                ax.axhline(r["plateau_predicted"], color=f"C{i}", ls=":", lw=1.2)
                ax.plot([r["alpha_finite_sample"] / r["alpha_mean_field"]], [max(r["median"])], "v", color=f"C{i}",
                        ms=9)
            ax.axvline(1.0, color="k", lw=1)
            ax.set_xscale("log")
            log_ticks(ax.xaxis)
            ax.set_xlabel(r"$\alpha$ / mean-field $\alpha^*$ (log scale)")
            ax.set_ylabel(r"$\alpha\,(1 - \sum p_i^2)$")
            ax.set_title("normal scores" if kind == "normal" else f"cosine scores, d = {mc['d']}")
        handles = [Line2D([], [], color=f"C{i}", lw=6, alpha=0.5, label=f"n = {n:,}") for i, n in enumerate(shown)]
        styles = [Line2D([], [], color="k", label="mean over rows (band: 95%)"),
                  Line2D([], [], color="k", ls="--", label="median row (typical)"),
                  Line2D([], [], color="k", ls="", marker="v", label="maximum of the median"),
                  Line2D([], [], color="k", ls=":", label=r"plateau $h(b_n)$")]
        axes[0].legend(handles=handles, fontsize=8, loc="upper left")  # colours, for both panels
        axes[1].legend(handles=styles, fontsize=8, loc="upper left")  # line styles, for both panels
    return fig


def _finite_sample_points(ax: Any, mc: dict[str, Any], kind: str) -> None:
    """The typical-row maximisers of the Monte Carlo, with 95% intervals (hundreds of rows: the normal quantile)."""
    rows = [r for r in mc["rows"] if r["kind"] == kind]
    ax.errorbar([r["n"] for r in rows], [r["alpha_finite_sample"] for r in rows],
                yerr=[t_quantile(math.inf) * r["alpha_finite_sample_se"] for r in rows], fmt="rs", label="finite-sample (typical row)")


@readable_figure
def exact_objective(exact: dict[str, Any]) -> Figure:
    """The exact expected objective over its limit L_n against alpha / alpha* per score law and n, with the
    mean-field objective at n = 16 for comparison."""
    laws = exact["laws"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(laws), figsize=(6 * len(laws), 4.8), sharey=True)
        for ax, law in zip(np.atleast_1d(axes), laws):
            d = law["d"]
            for i, r in enumerate(law["rows"]):
                ratio = np.asarray(r["alpha_over_star"])
                ax.semilogx(ratio, np.asarray(r["objective"]) / r["limit"], color=f"C{i}", label=f"n = {r['n']:,}")
            row = next((r for r in law["rows"] if r["n"] == 16), law["rows"][0])
            ratio = np.asarray(row["alpha_over_star"])
            alpha = row["alpha_star"] * ratio
            with np.errstate(over="ignore"):  # far past alpha* the mean-field objective runs to -inf: clipped at 0
                mf = (sc.mean_field_objective_normal(alpha, row["n"]) if d is None
                      else sc.mean_field_objective_cosine(alpha, row["n"], d))
            ax.semilogx(ratio, np.clip(mf / row["limit"], 0, None), "k:",
                        label=f"mean-field objective, n = {row['n']:,}")
            ax.axvline(1.0, color="0.5", lw=1)
            ax.axhline(1.0, color="0.5", lw=1, ls="--")
            ax.set_xlabel(r"$\alpha / \alpha^*$ (log scale)")
            ax.set_title("normal scores" if d is None else f"cosines in d = {d}")
        axes[0].set_ylabel(r"$E[\alpha(1 - \sum_i p_i^2)]\,/\,L_n$")
        axes[0].legend(fontsize=8, loc="lower right")
    return fig


@readable_figure
def scale_rules(mc: dict[str, Any], decoder: dict[str, Any]) -> Figure:
    """Length rules side by side (normal, cosine d), and what one alpha*(L/2) keeps along a decoder."""
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
    return fig


@readable_figure
def training_sweep(runs: Sequence[tuple[str, dict[str, Any]]]) -> Figure:
    """Validation loss and softmax gradient against the attention scale, per length, dot and cosine: one row of
    panels per run given (the chapter passes :meth:`analysis.studies.chapter.Chapter.shown`: the smoke run only when there
    is no record)."""
    runs = list(runs)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(runs), 3, figsize=(17, 4.6 * len(runs)), squeeze=False)
        for row_axes, (label, data) in zip(axes, runs):
            lengths = sorted({r["ctx"] for r in data["runs"]})
            for i, ctx in enumerate(lengths):
                pred = data["predictions"][str(ctx)]
                for ax, kind, key in ((row_axes[0], "dot", "dot_alpha_mean_field"),
                                      (row_axes[1], "cosine", "cosine_alpha_mean_field")):
                    rows = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == kind and not r["learned"]]
                    values = sorted({r["value"] for r in rows})
                    means = [np.mean([r["val_loss"] for r in rows if r["value"] == v]) for v in values]
                    ax.plot(values, means, "o-", color=f"C{i}", label=f"L = {ctx}")
                    ax.axvline(pred[key], color=f"C{i}", ls="--", lw=1)
                    if kind == "cosine":
                        learned = [r for r in data["runs"] if r["ctx"] == ctx and r["learned"]]
                        ax.plot([r["final_scale"] for r in learned], [r["val_loss"] for r in learned], "*",
                                color=f"C{i}", ms=14, label=f"learned scale, L = {ctx}")
                dot = [r for r in data["runs"] if r["ctx"] == ctx and r["kind"] == "dot"]
                values = sorted({r["value"] for r in dot})
                final = [np.mean([r["softmax_gradient"][-1][1] for r in dot if r["value"] == v]) for v in values]
                first = [np.mean([r["softmax_gradient"][0][1] for r in dot if r["value"] == v]) for v in values]
                row_axes[2].plot(values, final, "o-", color=f"C{i}", label=f"L = {ctx}, end of training")
                row_axes[2].plot(values, first, "x:", color=f"C{i}", label=f"L = {ctx}, initialisation")
            for ax, name in zip(row_axes, (r"dot-product: $\alpha$ ($\times 1/\sqrt{k}$)", "cosine: scale",
                                           r"dot-product: $\alpha$")):
                ax.set_xscale("log")
                log_ticks(ax.xaxis)
                ax.set_xlabel(f"{name} (log scale)")
            row_axes[0].set_ylabel("validation loss (nats/byte)")
            row_axes[1].set_ylabel("validation loss (nats/byte)")
            row_axes[0].set_title(rf"{label}" "\n" r"dot-product (dashed: $\alpha^*(L/2)$)")
            row_axes[1].set_title(rf"{label}" "\n" r"cosine (dashed: $\alpha^*(L/2, k)$)")
            row_axes[2].set_ylabel(r"mean $\alpha\,(1 - \sum p_i^2)$ over rows")
            row_axes[2].set_title(f"{label}\nthe softmax gradient")
            for ax in row_axes:
                ax.legend(fontsize=8)
    return fig


@readable_figure
def recall_scale(data: dict[str, Any]) -> Figure:
    """Held-out recall loss against the cosine scale per number of pairs; the best scale by loss against the row
    length, with its 95% Student-t interval over seeds, and the scales at which the accuracy is tied at its best,
    beside every prediction; and the best scale against the training budget."""
    s = summary(data)
    pairs = s["pairs"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(20, 5.2))
        ax = axes[0]
        for i, p in enumerate(pairs):
            scales, table = loss_table(data, p)
            seeds = table.shape[0]
            se = table.std(axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else 0 * scales
            ax.errorbar(scales, table.mean(axis=0), yerr=(t_quantile(seeds - 1) if seeds > 1 else 0) * se, fmt="-o", color=f"C{i}", capsize=3,
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
        ax.errorbar(m, best, yerr=[best - lo, hi - best], fmt="ko", capsize=4, ms=8, label="lowest loss (95% interval)")
        acc_lo = np.array([s["rows"][p]["accuracy_lo"] for p in pairs])
        acc_hi = np.array([s["rows"][p]["accuracy_hi"] for p in pairs])
        # a tie, not an estimate: every scale of the bar has the best accuracy
        ax.vlines(m * 1.06, acc_lo, acc_hi, colors="0.35", lw=6, alpha=0.45, label="accuracy tied at its best")
        grid = np.geomspace(m.min() / 1.5, m.max() * 1.5, 100)
        k = data["head_dim"]
        ax.plot(grid, sc.alpha_star_cosine(grid, k), "C0-", label=rf"mean-field $\alpha^*(m, k = {k})$")
        ax.plot(grid, sc.source_fit_cosine(grid), "C1--", label="log-n rule 3.5 ln m")
        ax.plot(grid, np.full_like(grid, math.sqrt(k)), "C2-.",
                label=rf"QK-norm practice $\sqrt{{k}}$ = {math.sqrt(k):.3g}")
        ax.errorbar(m, [s["rows"][p]["finite_sample"] for p in pairs],
                    yerr=[t_quantile(math.inf) * s["rows"][p]["finite_sample_se"] for p in pairs], fmt="C3s", capsize=3,
                    label="finite-sample maximiser")
        ax.set_xscale("log")
        ax.set_xticks(m, [f"{v:.3g}" for v in m])
        ax.minorticks_off()
        ax.set_yscale("log", base=2)
        ax.set_xlabel("mean row length m (log scale)")
        ax.set_ylabel("cosine scale (log scale)")
        ax.set_title("the best scale against the predictions")
        ax.legend(fontsize=9, loc="lower right")
        ax = axes[2]
        for i, p in enumerate(pairs):
            path = by_budget(data, p)
            steps = [b["step"] for b in path]
            ax.fill_between(steps, [b["lo"] for b in path], [b["hi"] for b in path], color=f"C{i}", alpha=0.25)
            ax.plot(steps, [b["best"] for b in path], "-o", color=f"C{i}", label=f"{p} pairs")
            ax.axhline(s["rows"][p]["mean_field"], color=f"C{i}", ls=":", lw=1.2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("optimiser steps (training budget)")
        ax.set_ylabel("best cosine scale (log scale)")
        ax.set_title(r"the best scale against the budget; dotted: $\alpha^*$")
        ax.legend(fontsize=9)
    return fig
