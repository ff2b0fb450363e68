"""FLASH-Quad and FLASH: parameters and FLOPs counted, the identities and the decoder's normaliser checked, and
speed and activation memory timed against the Transformer++ and FLASH-pytorch, and the fused relu^2 kernel checked
and timed, and the memory formulas measured (experiments ``flash-counts``, ``flash-bench``, ``gau-kernel`` and
``flash-memory``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis.core.mathtext import math_markdown
from analysis.studies.display import Markdown, sentences
from analysis.studies.flash.checks import (check_facts, leak_sentence, peer_deviations, peer_facts,
                                          peer_leak_sentence, phrase, run_checks, unit_gate_is_attention,
                                          verdict_sentence)
from analysis.studies.flash.figures import counts, layer_table, layers, leak, prose, ratio_table, speed
from analysis.studies.flash.kernel import kernel_facts
from analysis.studies.flash.memory import memory_facts
from analysis.studies.text import and_list, by_verdict, text_block
from analysis.theory import flash_counts as fc

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "FLASH-Quad and FLASH: counted, checked and timed"
EXPERIMENTS = ("flash-counts", "flash-bench", "flash-memory", "gau-kernel")


def counts_table(cnt: dict[str, Any]) -> Markdown:
    """Parameters and forward FLOPs per token of each layer, counted on the module and by formula."""
    rows = ["| layer | parameters | formula | FLOPs/token | formula |", "|---|--:|--:|--:|--:|"]
    for key in ("gau", "flash", "transformer"):
        r = cnt[key]
        rows.append(f"| {key} | {r['parameters']:,d} | {r['parameters_formula']:,d} | {r['flops_per_token']:,.0f} | "
                    f"{r['flops_formula']:,d} |")
    return Markdown("\n".join(rows))


LAYER_NAMES = {"gau": "GAU", "flash": "FLASH", "transformer": "the Transformer++"}  # count-<layer> claims, by name
# the identity claims of experiment flash-counts, by the names the prose gives them
IDENTITY_NAMES = {"identity-is-glu": "A = I giving the GLU layer",
                  "flash-global": "FLASH's chunked term giving full linear attention",
                  "flash-causal": "FLASH's cumulative sum giving the explicit sum"}


def counts_sentence(claims: Mapping[str, Any]) -> str:
    """For which layers the closed form gives the forward FLOPs per token counted on the module, by the verdicts of
    the ``count-*`` claims among ``claims`` (key: claim)."""
    return verdict_sentence("the closed form gives the forward FLOPs per token counted on the module",
                            [(name, phrase(claims[f"count-{k}"])) for k, name in LAYER_NAMES.items()
                             if f"count-{k}" in claims])


def parameters_sentence(cnt: Mapping[str, Any]) -> str:
    """For which layers the parameters counted on the module equal the formula's, and for which they differ."""
    named = [(name, "equal" if cnt[k]["parameters"] == cnt[k]["parameters_formula"] else "differ from")
             for k, name in LAYER_NAMES.items() if k in cnt]
    return " ".join(f"The parameters counted on {and_list(names)} {verb} the formula's."
                    for verb, names in by_verdict(named))


def identities_sentence(claims: Mapping[str, Any]) -> str:
    """Which of the identities are exact to rounding in float64, by the verdicts of their claims among ``claims``."""
    return verdict_sentence("the identity is exact to rounding in float64",
                            [(name, phrase(claims[k])) for k, name in IDENTITY_NAMES.items() if k in claims])


def claim_facts(ch: Chapter) -> dict[str, Any]:
    """The verdicts of experiment flash-counts that the prose states: the counts, GAU's quadratic cost, the identities,
    which normalisers leak, and the corrected prediction of FLASH-pytorch's GAU leak."""
    claims = {c.key: c for c in ch.claims_of("flash-counts")}
    return {
        "counts_verdicts": Markdown(f"{counts_sentence(claims)} "
                                    f"{parameters_sentence(ch.best('flash-counts').data['counts'])}"),
        "v-gau-quadratic-vs-mha": phrase(claims["gau-quadratic-vs-mha"]),
        "identity_verdicts": Markdown(identities_sentence(claims)),
        "leak_verdicts": Markdown(math_markdown(leak_sentence(claims))),
        "peer_leak_fit": Markdown(math_markdown(peer_leak_sentence(claims.get("leak-peer-gau"),
                                                                   ch.best("flash-counts").data["leak"]))),
    }


def facts(ch: Chapter) -> dict[str, Any]:
    """The counts' closed forms at the chapter's sizes, the counted table, and every sentence about the benchmark
    (:func:`analysis.studies.flash.figures.prose`), from the best runs; and ``analysis check`` run live on the
    layers and normalisers the chapter discusses, FLASH-pytorch's departures and the U = 1 check
    (:mod:`analysis.studies.flash.checks`); and the recorded verdicts the prose states (:func:`claim_facts`)."""
    counts_run, bench_run = ch.best("flash-counts"), ch.best("flash-bench")
    return sentences({
        "counts_label": counts_run.label,
        "bench_label": bench_run.label,
        "gpu_status": ch.gpu_status("flash-bench"),
        "two_gau_256": f"{100 * (fc.two_gau_over_transformer(256) - 1):.1f}%",
        "two_gau_4096": f"{100 * (fc.two_gau_over_transformer(4096) - 1):.2f}%",
        "quad_ratio": f"{2 * fc.quadratic_ratio_per_layer(768, 1536, 128):.2f}",
        "break_even": ", ".join(f"n = {fc.flash_break_even_length(1536, 128, c):.0f} for c = {c}"
                                for c in (64, 128, 256)),
        "counts_table": counts_table(counts_run.data["counts"]),
        **prose(bench_run.data),
        "ratio_table": Markdown(text_block(ratio_table(bench_run.data))),
        "layer_table": Markdown(layer_table(bench_run.data)),
        **claim_facts(ch),
        **check_facts(run_checks()),
        **peer_facts(peer_deviations(), unit_gate_is_attention()),
        **kernel_facts(ch),
        **memory_facts(ch),
    }, ("batch_lean", "targets"))


def figures(ch: Chapter) -> dict[str, Figure]:
    """Counts against d and n, the normalisers' length leak, the stacks' and the single layers' speed and memory."""
    counts_data, bench = ch.best("flash-counts").data, ch.best("flash-bench").data
    return {"fig-flash-counts": counts(counts_data["counts"]), "fig-flash-leak": leak(counts_data["leak"]),
            "fig-flash-speed": speed(bench), "fig-flash-layers": layers(bench)}
