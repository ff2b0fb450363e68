"""The FLASH chapter's facts about the fused relu^2 attention kernel (experiment ``gau-kernel``)."""

from __future__ import annotations

from typing import Any

from analysis.compute.steptimes import efficiency_table
from analysis.core.verify import verdict_phrase
from analysis.studies.chapter import stale_words
from analysis.studies.display import Markdown
from analysis.studies.flash.experiments import gau_kernel as gk
from analysis.studies.flash.targets import efficiency_targets
from analysis.training.train import COMPILE_MIN_STEPS


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
    head = "| n | attention, share of bf16 peak | " + " | ".join(gk.LABELS[k] for k in gk.LAYERS[:-1]) + " |"
    rows = [head + "\n|--:|--:|" + "--:|" * (len(gk.LAYERS) - 1)]
    for row in lengths:
        ratios = " | ".join(f"{row['vs_transformer'][k]:.2f}x" if k in row["vs_transformer"] else "n/a"
                            for k in gk.LAYERS[:-1])
        rows.append(f"| {row['n']} | {100 * row['peak_fraction']:.1f}% | {ratios} |")
    return Markdown("\n".join(rows) + "\n\nTokens/s relative to the Transformer++ layer (SDPA) at each length.")


def gpu_section(ch: Any) -> Markdown:
    """The gpu record of the kernel when it is not the chapter's strongest run (a stale one beside a current cpu
    record): where it ran, its exactness table and its timings (its verdicts stand beside the cpu ones in the
    experiment's gpu status, :meth:`analysis.studies.chapter.Chapter.stale_beside`); empty when there is no such record."""
    best = ch.best("gau-kernel")
    gpu = next((r for r in ch.runs["gau-kernel"] if r.scale == "gpu" and r.recorded), None)
    if gpu is None or gpu is best:
        return Markdown("")
    stale = f" It is stale: it was made {stale_words(gpu.stale)}." if gpu.stale else ""
    return Markdown("\n\n".join([
        f"**Measured on the GPU.** The gpu record ({gpu.provenance.removeprefix('recorded: ')}) ran the same "
        "exactness checks with the kernel compiled on the GPU, where bfloat16 and float16 tiles are multiplied by "
        f"the tensor cores, and timed the layers.{stale}",
        error_table(gpu.data).data,
        timing_table(gpu.data).data,
    ]))


def where_checked(chk: dict[str, Any]) -> str:
    """Where the kernel's check ran: 'Triton's interpreter on the CPU' or 'compiled on a GPU'."""
    return "Triton's interpreter on the CPU" if chk["interpreted"] else "compiled on a GPU"


def exact_rows_sentence(chk: dict[str, Any], prefix: Any, padding: Any) -> str:
    """The check's causal-prefix and padding gaps, and what the two exactness claims decide: one verdict for both when
    they agree, with the reason when it is inconclusive."""
    head = (f"A causal prefix and a padded sequence give the rows of the shorter run with largest gaps of "
            f"{chk['prefix_gap']:.2g} and {chk['padding_gap']:.2g}, in float32 on {where_checked(chk)}.")
    if prefix.verdict_text() != padding.verdict_text():
        return (f"{head} The claim that the prefix is exact {verdict_phrase(prefix.verdict_text())}, and the claim "
                f"that the padding is exact {verdict_phrase(padding.verdict_text())}.")
    reason = f": {prefix.inconclusive_reason}" if prefix.verdict == "inconclusive" else ""
    return f"{head} The claim that each is exact {verdict_phrase(prefix.verdict_text())}{reason}."


def kernel_facts(ch: Any) -> dict[str, Any]:
    """The kernel's run label, exactness table, check sizes and where it ran, GPU timings or their status, and the gpu
    record beside them when a current cpu record outranks it."""
    run = ch.best("gau-kernel")
    chk = run.data["check"]
    size = chk["sizes"]
    return {
        "kernel_gpu": gpu_section(ch),
        "efficiency_table": Markdown(efficiency_table(efficiency_targets("gpu"), "gpu")),
        "compile_min_steps": f"{COMPILE_MIN_STEPS:,}",
        "kernel_label": run.label,
        "kernel_where": where_checked(chk),
        "kernel_sizes": f"n = {size['n']}, s = {size['s']}, e = {size['e']}, batch {size['batch']}",
        "kernel_errors": error_table(run.data),
        "kernel_exact_rows": Markdown(exact_rows_sentence(chk, ch.claim("gau-kernel", "kernel-prefix-exact"),
                                                          ch.claim("gau-kernel", "kernel-padding-exact"))),
        "kernel_timings": timing_table(run.data),
        "kernel_gpu_status": ch.gpu_status("gau-kernel"),
    }
