"""The GAU-at-initialisation chapter's figures: the output's RMS over the grid, the lambda sweep and the coordinate
checks."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.gau_init.experiments.coord_check import ARCHS
from analysis.studies.gau_init.experiments.gau_init import local_exponents
from analysis.studies.plotting import STYLE, readable_figure


def interval_multiple(seeds: int) -> float:
    """The multiple of a standard deviation over ``seeds`` seeds that spans the two-sided 95% Student-t interval of
    their mean, t_{seeds-1} / sqrt(seeds) (0 for one seed: no error estimate, no bar)."""
    return t_quantile(seeds - 1) / float(np.sqrt(seeds)) if seeds > 1 else 0.0


@readable_figure
def gau_rms_grid(data: dict[str, Any]) -> Figure:
    """Measured RMS of GAU(x) against n, per s, with the source's and the corrected predictions (log-log); one
    legend, below the panels, for all of them."""
    from matplotlib.lines import Line2D

    widths = sorted({(r["d"], r["e"]) for r in data["grid"]}, reverse=True)
    half = interval_multiple(int(data.get("seeds", 1)))
    inits = sorted({r["init"] for r in data["grid"]})
    ss = sorted({r["s"] for r in data["grid"]})
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(inits), len(widths), figsize=(7 * len(widths), 4.8 * len(inits) + 1.2),
                                 squeeze=False, layout="constrained")
        for row, init in zip(axes, inits):
            for ax, (d, e) in zip(row, widths):
                for i, s in enumerate(ss):
                    rows = sorted((r for r in data["grid"] if r["init"] == init and r["d"] == d and r["s"] == s),
                                  key=lambda r: r["n"])
                    n = [r["n"] for r in rows]
                    ax.errorbar(n, [r["rms"] for r in rows], yerr=[half * r["rms_std"] for r in rows], fmt="o",
                                color=f"C{i}")
                    ax.plot(n, [r["pred_rms_corrected"] for r in rows], "-", color=f"C{i}")
                    ax.plot(n, [r["pred_rms_source"] for r in rows], ":", color=f"C{i}")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("n, sequence length (log scale)")
                ax.set_ylabel("RMS of GAU(x) (log scale)")
                ax.set_title(f"d = {d}, e = {e}, {init} init")
        handles = [Line2D([], [], color=f"C{i}", lw=3, label=f"s = {s}") for i, s in enumerate(ss)]
        handles += [Line2D([], [], color="k", ls="", marker="o", label="measured (95% interval)"),
                    Line2D([], [], color="k", label="corrected prediction"),
                    Line2D([], [], color="k", ls=":", label=r"source: $s\nu^6/n$")]
        fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False)
    return fig


@readable_figure
def gau_lambda(data: dict[str, Any]) -> Figure:
    """RMS of GAU(x) when every weight is scaled by lambda, and its local exponent against 7."""
    sweep = data["sweep"]
    lam = np.array([r["lambda"] for r in sweep["rows"]])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
        half = interval_multiple(int(data.get("seeds", 1)))
        axes[0].errorbar(lam, [r["rms"] for r in sweep["rows"]], yerr=[half * r["rms_std"] for r in sweep["rows"]],
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
    return fig


@readable_figure
def coord_check(data: dict[str, Any]) -> Figure:
    """Median branch ratio RMS(f(x))/RMS(x) against width, per depth (colour) and measured step (line style),
    mup-style, log-log. A depth counts Transformer layers; a GAU stack has two GAU layers in each."""
    from matplotlib.lines import Line2D

    steps = sorted({r["step"] for r in data["rows"]})
    depths = sorted({r["depth"] for r in data["rows"]})
    styles = dict(zip(steps, ("-o", "--s", ":^", "-.v", "-x")))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(ARCHS), figsize=(5.5 * len(ARCHS), 4.6), sharey=True)
        for ax, (block, residual) in zip(axes, ARCHS):
            for i, depth in enumerate(depths):
                for step, style in styles.items():
                    rows = sorted((r for r in data["rows"] if (r["block"], r["residual"], r["depth"], r["step"])
                                   == (block, residual, depth, step)), key=lambda r: r["width"])
                    ax.plot([r["width"] for r in rows], [r["median"] for r in rows], style, color=f"C{i}")
            ax.axhline(0.01, color="k", lw=0.8, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("width d (log scale)")
            ax.set_ylabel("median over layers of\nRMS(f(x)) / RMS(x)")
            name = "GAU" if block == "gau" else "Transformer"
            ax.set_title(f"{residual}-norm {name}")
        handles = [Line2D([], [], color=f"C{i}", lw=3, label=f"depth {d} ({2 * d} GAU layers)")
                   for i, d in enumerate(depths)]
        handles += [Line2D([], [], color="k", ls=style.rstrip("osv^x"), marker=style[-1], label=f"step {step}")
                    for step, style in styles.items()]
        axes[0].legend(handles=handles, fontsize=7, ncol=2)
    return fig
