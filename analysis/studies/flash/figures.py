"""The FLASH chapter's figures (counts, the length leak of each normaliser, speed and activation memory) and its
sentences about the benchmark."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.studies.flash.experiments import flash_bench as fb
from analysis.studies.flash.experiments.flash_bench import IMPLEMENTATIONS, LABELS, LAYERS, PEER_PREFIX
from analysis.studies.flash.experiments.flash_counts import OURS, shown
from analysis.studies.flash.memory import lean_batch_sentence
from analysis.studies.plotting import STYLE, log_ticks, readable
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
        axes[0].set_ylabel("parameters of 2 GAU layers\nover 1 Transformer++ layer (% more)")
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
        log_ticks(axes[1].yaxis)
        axes[1].set_title(f"matrix-product FLOPs at d = {d}")
        axes[1].legend()
    return readable(fig)


ZERO = 1e-18  # an exact 0 is drawn here on the log axis


def leak(data: dict[str, Any]) -> Figure:
    """Relative change of the first positions' outputs against the total length, one line per normaliser: on a log
    axis (exact zeros drawn at :data:`ZERO`), and on a linear axis where the leaking forms, which sit within a
    factor of 2 of each other near 1, come apart. Series that coincide (the exact zeros) are told apart by their
    markers: each normaliser has its own marker and size, the larger ones hollow."""
    lengths = np.array(data["lengths"][1:])
    markers = ("o", "D", "s", "^", "v", "P", "X")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 7.4), layout="constrained")
        for i, (variant, changes) in enumerate(data["relative_change"].items()):
            raw = np.array(changes[1:], dtype=float)
            ours = variant in OURS
            size = 13 - 1.3 * i  # the first series the largest: a later one drawn on the same point shows inside it
            style = {"color": f"C{i}", "ls": "-" if ours else "--", "marker": markers[i % len(markers)], "ms": size,
                     "mfc": "none" if i < 4 else f"C{i}", "mew": 1.6, "label": shown(variant)}
            axes[0].plot(lengths, np.maximum(raw, ZERO), **style)
            axes[1].plot(lengths, raw, **style)
        axes[0].set_yscale("log")
        axes[0].axhline(1e3 * np.finfo(float).eps, color="grey", ls=":", label="1000 float64 ulps")
        axes[0].set_ylabel(f"max relative change of the\nfirst {data['prefix']} outputs (log scale)")
        axes[0].set_title(f"log axis: exact 0 drawn at {ZERO:.0e}")
        axes[1].set_ylabel(f"max relative change of the\nfirst {data['prefix']} outputs")
        axes[1].set_title("linear axis: the leaking forms apart")
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("total sequence length n (log scale)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    return readable(fig)


def _throughput_and_memory(data: dict[str, Any], names: tuple[str, ...], title: str) -> Figure:
    """Left: training-step throughput against n. Right: activations saved for backward per sequence against n.
    One legend for both, below them."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(14, 6.2), layout="constrained")
        for i, name in enumerate(names):
            rows = [r for r in data["rows"] if r["implementation"] == name and r["status"] == "ok"]
            if not rows:
                continue
            n = [r["n"] for r in rows]
            style = "--s" if name.startswith(PEER_PREFIX) else ":^" if "compiled" in name else "-o"
            axes[0].plot(n, [r["tokens_per_s"] for r in rows], style, color=f"C{i}", label=LABELS[name])
            axes[1].plot(n, [r["saved_bytes_per_sequence"] / 2**20 for r in rows], style, color=f"C{i}",
                         label=LABELS[name])
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            log_ticks(ax.yaxis)
            ax.set_xlabel("sequence length n (log scale)")
        axes[0].set_ylabel("training tokens per second (log)")
        axes[0].set_title(f"{title}: speed, {data['threads']} CPU threads")
        axes[1].set_ylabel("MiB per sequence (log)")
        axes[1].set_title("activations saved for backward")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
    return readable(fig)


def speed(data: dict[str, Any]) -> Figure:
    """The equal-parameter stacks: throughput and saved activations against n."""
    return _throughput_and_memory(data, IMPLEMENTATIONS, "stacks")


def layers(data: dict[str, Any]) -> Figure:
    """One GAU layer, this book's four paths against FLASH-pytorch's: throughput and saved activations against n."""
    return _throughput_and_memory(data, LAYERS, "one GAU layer")


def _per_length(ratios: dict[str, float], minimum: int = 0) -> str:
    """'n = 2048: 1.93x; n = 4096: 2.10x' for the lengths at or above ``minimum`` (the largest length when none is)."""
    chosen = [(n, r) for n, r in ratios.items() if int(n) >= minimum] or list(ratios.items())[-1:]
    return "; ".join(f"n = {n}: {r:.2f}x" for n, r in chosen) or "no common length"


def prose(data: dict[str, Any]) -> dict[str, str]:
    """The chapter's numbers and sentences about the benchmark, each computed from the record (key: text)."""
    s = fb.summary(data)
    out = {"matmul_peak": f"{data['matmul_flops_per_s'] / 1e9:.0f}", "quad_cross": s["quad_vs_transformer_text"],
           "quad_lean_cross": s["quad_lean_vs_transformer_text"],
           "ours_vs_peer": _per_length(s["ours_over_peer"]["flash-quad"], 1024),
           "ours_vs_peer_flash": _per_length(s["ours_over_peer"]["flash"], 1024),
           "flash_cross": (f"at n ≈ {s['flash_overtakes_quad']:.0f}" if np.isfinite(s["flash_overtakes_quad"])
                           else "at none of the lengths measured"), "flash_time_exp": f"{s['flash_time_exponent']:.2f}",
           "flash_mem_exp": f"{s['flash_memory_exponent']:.2f}", "quad_mem_exp": f"{s['quad_memory_exponent']:.2f}",
           "memory_length": str(s["memory_length"]), "query_block": str(data.get("query_block", ""))}
    saved = s["saved_bytes_per_sequence_at"]
    out["saved_mib"] = "; ".join(f"{LABELS[name]} {v / 2**20:.1f} MiB" for name, v in saved.items() if v is not None)
    batch, unfused, lean = s["batch_ratio_vs_transformer"], s["batch_ratio_vs_unfused_transformer"], "flash-quad-lean"
    out["unfused_mib"] = (f"{s['unfused_transformer_saved_bytes_per_sequence'] / 2**20:.1f} MiB"
                          if s["unfused_transformer_saved_bytes_per_sequence"] else "not measured")
    out["batch_lean"] = (lean_batch_sentence(batch[lean], unfused[lean], "In the benchmark")
                         if lean in batch and lean in unfused else "The lean FLASH-Quad's batch was not measured.")
    targets = []
    for claim in fb.claims(data, "chapter"):
        if claim.key.startswith("lean-gau-over-peer"):
            which = "matched peer" if "matched" in claim.key else "peer with its defaults"
            gap = 100 * (1 - claim.measured / claim.predicted)
            targets.append(f"Against the {which}, the lean layer trains at {claim.measured:.2f}x its tokens/s at "
                           f"worst: the {claim.predicted:.1f}x target is "
                           + ("met." if claim.verdict != "fails" else f"missed by {gap:.0f}%."))
    out["targets"] = " ".join(targets) or "The targets were not measured."
    out["lean_mem_exp"] = f"{s['lean_layer_memory_exponent']:.2f}"
    out["dense_mem_exp"] = f"{s['dense_layer_memory_exponent']:.2f}"
    compiled = [r for r in data["rows"] if "compiled" in r["implementation"] and r["status"] == "ok"]
    out["compile_seconds"] = (f"{min(r['first_forward_seconds'] for r in compiled):.0f} to "
                              f"{max(r['first_forward_seconds'] for r in compiled):.0f} s" if compiled else "-")
    return out


def layer_table(data: dict[str, Any]) -> str:
    """Markdown, one row per length of the single GAU layers: the lean layer's tokens/s over the matched peer's and
    over the peer's with its defaults, the dense layer's over the matched peer's, torch.compile's gain on each (compiled
    over eager) and the lean layer's share of the matmul ceiling ('-' where a ratio was not measured)."""
    s = fb.summary(data)
    lean, dense = s["layers"][LAYERS[2]], s["layers"][LAYERS[0]]
    columns = (("lean / matched peer", lean["over_matched_peer"]),
               ("lean / peer defaults", lean["over_default_peer"]),
               ("dense / matched peer", dense["over_matched_peer"]),
               ("compiled / eager, dense", s["compile_gain"]["dense"]),
               ("compiled / eager, lean", s["compile_gain"]["lean"]))
    mfu = {str(r["n"]): r["utilisation"] for r in data["rows"]
           if r["implementation"] == LAYERS[2] and r["status"] == "ok"}
    lengths = sorted({int(n) for _, ratios in columns for n in ratios})
    rows = ["| n | " + " | ".join(name for name, _ in columns) + " | lean, share of matmul peak |",
            "|--:|" + "--:|" * (len(columns) + 1)]
    for n in lengths:
        cells = [f"{ratios[str(n)]:.2f}x" if str(n) in ratios else "-" for _, ratios in columns]
        cells.append(f"{100 * mfu[str(n)]:.0f}%" if str(n) in mfu else "-")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def ratio_table(data: dict[str, Any]) -> str:
    """tokens/s over the Transformer++'s per length for the stacks (a dash where a stack did not run)."""
    s = fb.summary(data)
    short = {"flash-quad": "Quad", "flash-quad-lean": "Quad lean", "flash": "FLASH", "transformer": "T++",
             "flash-pytorch-gau": "peer GAU", "flash-pytorch-flash": "peer FLASH"}
    lines = ["tokens/s over the Transformer++'s ('-': not run, see below)",
             f"{'n':>6s}" + "".join(f"{v:>11s}" for v in short.values())]
    for n in sorted({r["n"] for r in data["rows"] if r["implementation"] in IMPLEMENTATIONS}):
        cells = [s["ratios_vs_transformer"][name].get(str(n)) for name in short]
        lines.append(f"{n:6d}" + "".join(f"{c:11.2f}" if c is not None else f"{'-':>11s}" for c in cells))
    lines += [f"{LABELS[r['implementation']]} at n = {r['n']}: {r['status']}" for r in data["rows"]
              if r["status"] != "ok"]
    return "\n".join(lines)
