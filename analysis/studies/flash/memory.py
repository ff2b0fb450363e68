"""The FLASH chapter's facts about the source's memory formulas (experiment ``flash-memory``), and the verdicts on the
batch FLASH-Quad fits (experiments ``flash-memory`` and ``flash-bench``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.core.mathtext import math_markdown
from analysis.studies.display import Markdown
from analysis.studies.flash.checks import phrase, verdict_sentence
from analysis.studies.text import and_list


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
    """The census's run label and sizes, its table, the two savings (the source's e/(c s) and the measured 1/c), the
    verdicts on the saved sizes (:func:`sizes_sentence`) and on the batch (:func:`batch_verdicts`), and the batch census
    at the source's size beyond those verdicts (:func:`batch_sentence`)."""
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
        "memory_batch_base": Markdown(math_markdown(batch_sentence(d))),
        "memory_verdicts": Markdown(math_markdown(sizes_sentence({c.key: c for c in ch.claims_of("flash-memory")},
                                                                 list(d["flash"])))),
        "batch_verdicts": Markdown(batch_verdicts({c.key: c for name in ("flash-bench", "flash-memory")
                                                   for c in ch.claims_of(name)})),
    }


def lean_batch_sentence(fused: float, unfused: float, where: str) -> str:
    """'<where>, the lean FLASH-Quad fits <fused>x the batch of the fused Transformer++ and <unfused>x that of the one
    with its attention written out.': its batch ratios to the two Transformers in one activation budget."""
    return (f"{where}, the lean FLASH-Quad fits {fused:.2f}x the batch of the fused Transformer++ and {unfused:.2f}x "
            f"that of the one with its attention written out.")


def batch_sentence(data: dict[str, Any]) -> str:
    """The batch census at the source's own size, in words, what the batch verdicts (:func:`batch_verdicts`) do not
    state: the MiB a sequence of its own saves in two GAU layers, dense and lean, and in one Transformer++ layer, fused
    and with its attention written out, and the lean layers' batch ratios (maths between $ signs)."""
    if "batch" not in data:
        return "This record predates the batch census at base size (data version 2)."
    z, b = data["sizes"], data["batch"]
    mib = {k: v / 2**20 for k, v in b.items()}
    lean = b["flash-quad-lean"]
    return (f"At the source's own size, $d = {z['d']}$ and $n = {b['n']:.0f}$ in float32 on the CPU, a sequence of its "
            f"own saves {mib['flash-quad']:.1f} MiB in two GAU layers and {mib['flash-quad-lean']:.1f} MiB in two lean "
            f"ones. One Transformer++ layer saves {mib['transformer']:.1f} MiB with fused attention and "
            f"{mib['transformer-unfused']:.1f} MiB with its attention written out. "
            + lean_batch_sentence(b["transformer"] / lean, b["transformer-unfused"] / lean, "There"))


def sizes_sentence(claims: Mapping[str, Any], chunks: list[str]) -> str:
    """For which tensors the saved sizes are exactly the source's, FLASH's chunk sizes ``chunks`` named together when
    they agree, and whether the lean GAU keeps no n×n tensor, by the census's claims among ``claims`` (key: claim;
    maths between $ signs)."""
    named = [(name, phrase(claims[k])) for k, name in (("mha-matrix", "multi-head attention's $bhn^2$"),
                                                        ("gau-matrix", "GAU's $bn^2$")) if k in claims]
    state = [(c, phrase(claims[f"flash-linear-state-c{c}"])) for c in chunks if f"flash-linear-state-c{c}" in claims]
    if len({verdict for _, verdict in state}) == 1:
        named.append((f"FLASH's chunk state $b(n/c)se$ at $c$ = {and_list([c for c, _ in state])}", state[0][1]))
    else:
        named += [(f"FLASH's chunk state $b(n/c)se$ at $c$ = {c}", verdict) for c, verdict in state]
    lean = [("", phrase(claims["gau-lean-no-matrix"]))] if "gau-lean-no-matrix" in claims else []
    return " ".join(filter(None, [verdict_sentence("the saved tensors have exactly the source's sizes", named),
                                  verdict_sentence("the lean GAU keeps no $n\\times n$ tensor", lean)]))


# the batch claims of experiments flash-bench and flash-memory, by what FLASH-Quad is set against
BATCH_NAMES = {"quad-batch": "fused attention in the benchmark",
               "quad-batch-base": "fused attention at the source's size",
               "quad-batch-unfused": "written-out attention in the benchmark",
               "quad-batch-base-unfused": "written-out attention at the source's size"}


def batch_verdicts(claims: Mapping[str, Any]) -> str:
    """Against which Transformer++ FLASH-Quad fits about 2x the batch and against which it does not, each with the
    measured batch ratio, by the ``quad-batch*`` claims among ``claims`` (key: claim)."""
    named = [(f"{name} ({claims[k].measured:.2f}x)", phrase(claims[k])) for k, name in BATCH_NAMES.items()
             if k in claims]
    return verdict_sentence("FLASH-Quad fits about 2x the Transformer's batch", named, scope="against")
