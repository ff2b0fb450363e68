"""The FLASH chapter's facts about the source's memory formulas (experiment ``flash-memory``)."""

from __future__ import annotations

from typing import Any

from analysis.studies.display import Markdown


def memory_table(data: dict[str, Any]) -> Markdown:
    """Per tensor the source sizes: its formula, the formula's value at the run's sizes, and the elements measured."""
    z = data["sizes"]
    b, e, s, n, h = z["batch"], z["e"], z["s"], z["n"], z["heads"]
    rows = ["| saved for backward | source's formula | formula | measured |", "|---|---|--:|--:|",
            f"| multi-head attention matrix | b h n² | {b * h * n * n:,} | {data['mha']['elements']:,} |",
            f"| GAU's attention matrix (dense path) | b n² | {b * n * n:,} | {data['gau_dense']['elements']:,} |",
            f"| GAU's attention matrix (lean path) | (none) | 0 | {data['gau_lean']['elements']:,} |"]
    for c, row in data["flash"].items():
        rows.append(f"| FLASH's linear state, c = {c} | b (n/c) s e | {b * (n // int(c)) * s * e:,} | "
                    f"{row['elements']:,} |")
    rows.append(f"| linear attention without chunks, values of width e | b n s² | {b * n * s * s:,} | "
                f"{data['prefix_e']['elements']:,} |")
    rows.append(f"| linear attention without chunks, values of width s | b n s² | {b * n * s * s:,} | "
                f"{data['prefix_s']['elements']:,} |")
    return Markdown("\n".join(rows))


def memory_facts(ch: Any) -> dict[str, Any]:
    """The census's run label and sizes, its table, the two savings (the source's e/(c s) and the measured 1/c)."""
    run = ch.best("flash-memory")
    d = run.data
    z = d["sizes"]
    c = max(int(k) for k in d["flash"])
    measured = d["flash"][str(c)]["elements"] / d["prefix_e"]["elements"]
    return {
        "memory_label": run.label,
        "memory_sizes": f"b = {z['batch']}, n = {z['n']}, s = {z['s']}, e = {z['e']}, h = {z['heads']}",
        "memory_table": memory_table(d),
        "memory_saving_source": f"e/(c s) = {z['e'] / (c * z['s']):.3g} at c = {c}",
        "memory_saving_measured": f"{measured:.3g} = 1/{round(1 / measured)}",
        "memory_e_over_s": f"{z['e'] / z['s']:.0f}",
        "memory_batch_base": batch_sentence(d),
    }


def batch_sentence(data: dict[str, Any]) -> str:
    """The batch census at the census's sizes, in words: the MiB a sequence of its own saves in two GAU layers and in
    one Transformer++ layer (fused, and with its attention written out), and the batch ratios they give."""
    if "batch" not in data:
        return "This record predates the batch census at base size (data version 2)."
    z, b = data["sizes"], data["batch"]
    mib = {k: v / 2**20 for k, v in b.items()}
    quad, lean = b["flash-quad"], b["flash-quad-lean"]
    fused, unfused = b["transformer"], b["transformer-unfused"]
    return (f"At the source's own size (d = {z['d']}, n = {b['n']:.0f}, float32 on the CPU), a sequence of its own "
            f"saves {mib['flash-quad']:.1f} MiB in two GAU layers. One Transformer++ layer saves "
            f"{mib['transformer']:.1f} MiB with fused attention and {mib['transformer-unfused']:.1f} MiB with its "
            f"attention written out. So FLASH-Quad fits {unfused / quad:.2f}x the batch of a Transformer that stores "
            f"its softmax, as the source's did, and {fused / quad:.2f}x that of the fused one. The lean GAU fits "
            f"{unfused / lean:.2f}x and {fused / lean:.2f}x.")
