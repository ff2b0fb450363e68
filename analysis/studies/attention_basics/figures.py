"""The attention chapter's figures: the moments of q.k and the softmax's saturation against d, the spread between
heads during training, and sinusoidal positions (their dot product, rounding, and scores through projections)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import t_quantile
from analysis.studies.attention_basics.experiments.attention_basics import QK_BATCHES, ROWS_AT_LEAST
from analysis.studies.plotting import STYLE, readable_figure


@readable_figure
def qk_saturation(data: dict[str, Any], law: dict[int, float]) -> Figure:
    """q.k moments against d; softmax-row entropy and median Jacobian norm against d, with and without 1/sqrt(d);
    error bars are 95% Student-t intervals over the units of the claims (batches of pairs, sampled rows)."""
    qk, sat, n = data["qk"], data["saturation"], data["keys"]
    ds = np.array([r["d"] for r in qk], dtype=float)
    rd = np.array([r["d"] for r in sat], dtype=float)
    t_qk, t_rows = t_quantile(QK_BATCHES - 1), t_quantile(ROWS_AT_LEAST - 1)  # 95% intervals over their units
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(13, 9))
        ax = axes[0, 0]
        ax.errorbar(ds, [r["var"] / r["d"] for r in qk], yerr=[t_qk * r["var_se"] / r["d"] for r in qk], fmt="o",
                    label="sampled")
        ax.axhline(1.0, color="k", lw=1, label="Var[q.k] = d")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d (log scale)")
        ax.set_ylabel("Var[q.k] / d")
        ax.set_title("the variance: exact")
        ax.legend()
        ax = axes[0, 1]
        ax.errorbar(ds, [r["kurtosis"] for r in qk], yerr=[t_qk * r["kurtosis_se"] for r in qk], fmt="o", label="sampled")
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
            ax.errorbar(rd, [r[name]["entropy_mean"] for r in sat], yerr=[t_rows * r[name]["entropy_se"] for r in sat],
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
            ax.errorbar(rd, [r[name]["jac_median"] for r in sat], yerr=[t_rows * r[name]["jac_median_se"] for r in sat],
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
    return fig


@readable_figure
def head_symmetry(runs: dict[str, Any]) -> Figure:
    """Relative spread between heads against training step for each initialisation (log scale; 0 drawn at the floor)."""
    floor = 1e-10
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8, 4.8))
        for i, (name, run) in enumerate(runs.items()):
            steps = np.maximum(np.array(run["steps"], dtype=float), 0.5)
            spread = np.maximum(np.array(run["spread"]), floor)
            ax.plot(steps, spread, "-o", color=f"C{i}",
                    label=name + (" (exactly 0 throughout)" if max(run["spread"]) == 0 else ""))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 10)
        ax.set_xlabel("AdamW step (log scale; step 0 drawn at 0.5)")
        ax.set_ylabel(r"$\max_h \Vert\theta_h - \theta_0\Vert / \Vert\theta_0\Vert$ (log; 0 drawn at 1e-10)")
        ax.set_title("do identically initialised heads stay identical?")
        ax.legend(fontsize=9)
    return fig


@readable_figure
def positions_figure(pos: dict[str, Any]) -> Figure:
    """PE dot product against k; float32 error of PE and of M_k against position; projected positional scores."""
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(13, 9))
        grid = fig.add_gridspec(2, 2)
        axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
        ax = axes[0]
        ax.plot(pos["dot_curve_k"], pos["dot_curve"], "C0-")
        ax.set_xlabel("offset k = q - p (tokens)")
        ax.set_ylabel(r"$PE(p)\cdot PE(p + k)$")
        ax.set_title(rf"$\sum_i \cos(k\,w_i)$, $d$ = {pos['d']}, for $k \geq 0$ (even in $k$: the same at $-k$)")
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
    return fig
