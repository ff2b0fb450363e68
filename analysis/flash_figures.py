"""Figures of the FLASH chapter: counts, the length leak of each normaliser, speed and activation memory."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.figures import STYLE
from analysis.theory import flash_counts as fc


def counts(data: dict[str, Any], d: int = 768, s: int = 128, chunk: int = 256) -> Figure:
    """Left: parameters of 2 GAU layers over one Transformer++ layer against d. Right: forward FLOPs per token of
    the three layers at equal parameters against n, with FLASH's break-even length marked."""
    ratios = data["two_gau_over_transformer"]
    widths = sorted(int(w) for w in ratios)
    n = np.logspace(np.log10(64), np.log10(65536), 60).astype(int)
    n = (n // chunk + 1) * chunk
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        axes[0].semilogx(widths, [100 * (ratios[str(w)] - 1) for w in widths], "o-", base=2)
        axes[0].set_xlabel("model width d (log scale)")
        axes[0].set_ylabel("2 GAU layers over 1 Transformer++ layer (% more parameters)")
        axes[0].set_title("parameters, e = 2d, s = 128")
        quad = [2 * fc.gau_counts(d, 2 * d, s, int(k)).flops for k in n]
        flash = [2 * fc.flash_counts(d, 2 * d, s, int(k), chunk).flops for k in n]
        tfm = [fc.transformer_counts(d, int(k)).flops for k in n]
        for values, label in ((quad, "2 GAU layers (FLASH-Quad)"), (flash, f"2 FLASH layers (c = {chunk})"),
                              (tfm, "1 Transformer++ layer")):
            axes[1].loglog(n, values, label=label)
        axes[1].axvline(fc.flash_break_even_length(2 * d, s, chunk), color="grey", ls=":",
                        label="FLASH break-even n = c + 2se/(s+e)")
        axes[1].set_xlabel("sequence length n (log scale)")
        axes[1].set_ylabel("forward FLOPs per token (log scale)")
        axes[1].set_title(f"matrix-product FLOPs at d = {d}")
        axes[1].legend()
        fig.tight_layout()
    return fig


def leak(data: dict[str, Any]) -> Figure:
    """Relative change of the first positions' outputs against the total length, one line per normaliser."""
    lengths = np.array(data["lengths"][1:])
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(11, 5))
        for i, (label, changes) in enumerate(data["relative_change"].items()):
            y = np.maximum(np.array(changes[1:]), 1e-18)
            ax.plot(lengths, y, "o-" if "this book" in label else "s--", color=f"C{i}", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.axhline(1e3 * np.finfo(float).eps, color="grey", ls=":", label="1000 float64 ulps")
        ax.set_xlabel("total sequence length n (log scale)")
        ax.set_ylabel(f"max relative change of the first {data['prefix']} outputs (log scale)")
        ax.set_title("does appending tokens change earlier outputs? (causal, float64; 0 plotted at 1e-18)")
        ax.legend(fontsize=9, loc="center right")
        fig.tight_layout()
    return fig


def speed(data: dict[str, Any]) -> Figure:
    """Left: training-step throughput against n. Right: activations saved for backward per sequence against n."""
    names = list(dict.fromkeys(r["implementation"] for r in data["rows"]))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        for i, name in enumerate(names):
            rows = [r for r in data["rows"] if r["implementation"] == name and r["status"] == "ok"]
            if not rows:
                continue
            n = [r["n"] for r in rows]
            style = "-o" if "ours" in name or name == "Transformer++" else "--s"
            axes[0].plot(n, [r["tokens_per_s"] for r in rows], style, color=f"C{i}", label=name)
            axes[1].plot(n, [r["saved_bytes_per_sequence"] / 2**20 for r in rows], style, color=f"C{i}", label=name)
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        axes[0].set_xlabel("sequence length n (log scale)")
        axes[0].set_ylabel("training tokens per second (log scale)")
        axes[0].set_title(f"one step: forward, backward, AdamW; {data['threads']} CPU threads")
        axes[1].set_xlabel("sequence length n (log scale)")
        axes[1].set_ylabel("activations saved for backward (MiB per sequence, log scale)")
        axes[1].set_title("memory that grows with n")
        axes[0].legend(fontsize=9)
        fig.tight_layout()
    return fig
