"""The FLASH chapter's facts about the fused relu^2 attention kernel (experiment ``gau-kernel``)."""

from __future__ import annotations

from typing import Any

from analysis.studies.display import Markdown
from analysis.studies.flash.experiments import gau_kernel as gk


def error_table(data: dict[str, Any]) -> Markdown:
    """Per dtype: the unit roundoff u, the largest componentwise error over every case and tensor, in units of u,
    and the bound the claim reads."""
    worst = gk.summary(data)["worst"]
    rows = ["| dtype | u | largest error / magnitude | in units of u | bound |", "|---|--:|--:|--:|--:|"]
    for dtype, w in worst.items():
        u = gk.U[dtype]
        rows.append(f"| {dtype} | {u:.3g} | {w['error']:.3g} | {w['error'] / u:.2f} | {w['bound']:.3g} |")
    return Markdown("\n".join(rows))


def timing_table(data: dict[str, Any]) -> Markdown:
    """Per length measured on a GPU: each layer's tokens/s over the Transformer++ layer's, and the kernel's attention
    TFLOP/s as a fraction of the dense bf16 peak; a sentence when no GPU timing is recorded."""
    lengths = gk.summary(data)["lengths"]
    if not lengths:
        return Markdown("No timing is in this run: the kernel is timed only on a GPU.")
    head = "| n | attention, share of bf16 peak | " + " | ".join(gk.LAYERS[:-1]) + " |"
    rows = [head + "\n|--:|--:|" + "--:|" * (len(gk.LAYERS) - 1)]
    for row in lengths:
        ratios = " | ".join(f"{row['vs_transformer'][k]:.2f}x" if k in row["vs_transformer"] else "n/a"
                            for k in gk.LAYERS[:-1])
        rows.append(f"| {row['n']} | {100 * row['peak_fraction']:.1f}% | {ratios} |")
    return Markdown("\n".join(rows) + "\n\nTokens/s relative to the Transformer++ layer (SDPA) at each length.")


def kernel_facts(ch: Any) -> dict[str, Any]:
    """The kernel's run label, exactness table, check sizes and where it ran, GPU timings or their status, verdicts."""
    run = ch.best("gau-kernel")
    chk = run.data["check"]
    size = chk["sizes"]
    return {
        "kernel_label": run.label,
        "kernel_where": "Triton's interpreter on the CPU" if chk["interpreted"] else "compiled on a GPU",
        "kernel_sizes": f"n = {size['n']}, s = {size['s']}, e = {size['e']}, batch {size['batch']}",
        "kernel_errors": error_table(run.data),
        "kernel_timings": timing_table(run.data),
        "kernel_gpu_status": ch.gpu_status("gau-kernel"),
        "verdicts_kernel": ch.verdicts("gau-kernel"),
    }
