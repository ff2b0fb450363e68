"""GAU and FLASH trained side by side: FLASH-Quad (post- and pre-norm) and FLASH against a Transformer++ of equal
parameters on the same batches, loss, convergence and recall (experiment ``gau-quality``), and GAU under four
attention normalisations trained at one length and evaluated at shorter and longer ones (experiment
``gau-length``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from IPython.display import Markdown
from matplotlib.figure import Figure

from analysis.studies.gau_trained.experiments import gau_length, gau_quality
from analysis.studies.gau_trained.figures import length, no_run, quality

if TYPE_CHECKING:
    from analysis.chapter import Chapter, RunSet

TITLE = "GAU and FLASH trained: quality and length"
EXPERIMENTS = ("gau-quality", "gau-length")
NO_CPU_RUN = "no cpu-scale run other than the one above"  # said where the cpu-scale figure and verdicts would be


def pm(pair: Sequence[float], digits: int = 3) -> str:
    """'mean ± standard error' of a (mean, SE) pair at ``digits`` decimals."""
    return f"{pair[0]:.{digits}f} ± {pair[1]:.{digits}f}"


def quality_table(q: dict[str, Any], lr_check: float) -> str:
    """One line per architecture: parameters, validation loss (mean ± SE), median seconds per step, the loss at the
    second learning rate ``lr_check`` and recall accuracy at the most pairs, from ``gau_quality.summary``."""
    header = (f"{'architecture':23s} {'parameters':>10s} {'loss (nats/byte)':>17s} {'s/step':>7s} "
              f"{'lr ' + format(lr_check, '.0e'):>8s} {'recall@' + str(q['top_pairs']):>9s}")
    lines = [header]
    for a in gau_quality.ARCHS:
        v = q["archs"][a]
        lines.append(f"{gau_quality.ARCH_LABELS[a]:23s} {v['parameters']:10,d} {pm(v['val_loss']):>17s} "
                     f"{v['seconds_per_step']:7.4f} {v['val_loss_lr_check']:8.3f} {v['recall']['mean'][-1]:9.2f}")
    return "\n".join(lines)


def quality_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The quality section's numbers from one gau-quality record: parameters, losses and paired gaps (mean ± SE
    over seeds), convergence ratios, step times, recall at the most pairs, both orderings, and the printed table."""
    q = gau_quality.summary(data)
    arch, lab = q["archs"], gau_quality.ARCH_LABELS
    out: dict[str, Any] = {
        "q_table": Markdown(f"```text\n{quality_table(q, data['lr_check'])}\n```"),
        "q_params_tfm": f"{arch['transformer']['parameters']:,}",
        "q_params_quad": f"{arch['flash-quad-post']['parameters']:,}",
        "q_param_pct": f"{100 * (arch['flash-quad-post']['param_ratio'] - 1):.0f}%",
    }
    for a, short in (("transformer", "tfm"), ("flash-quad-post", "quad"), ("flash-quad-pre", "pre"),
                     ("flash", "flash")):
        out[f"q_loss_{short}"] = pm(arch[a]["val_loss"])
        out[f"q_rec_{short}"] = f"{arch[a]['recall']['mean'][-1]:.2f}"
    out |= {
        "q_gap": pm(q["gap_quad_tfm"]),
        "q_gap_pre": pm(q["gap_quad_pre_tfm"]),
        "q_gap_flash": pm(q["gap_flash_quad"]),
        "q_gap_flash_pct": f"{100 * q['gap_flash_quad'][0] / arch['flash-quad-post']['val_loss'][0]:.1f}%",
        "q_steps": pm(q["steps_ratio"], 2),
        "q_steps_flash": pm(q["steps_ratio_flash"], 2),
        "q_time": pm(q["time_ratio_to_target"], 2),
        "q_step_time": f"{arch['flash-quad-post']['time_ratio']:.2f}",
        "q_step_time_flash": f"{arch['flash']['time_ratio']:.2f}",
        "q_top": f"{q['top_pairs']}",
        "q_lr": f"{data['lr']:g}",
        "q_lr_check": f"{data['lr_check']:g}",
        "q_order": ", ".join(lab[a] for a in q["order"]),
        "q_order_check": ", ".join(lab[a] for a in q["order_lr_check"]),
        "q_chance": f"{data['chance']:.3g}",
    }
    return out


def best_norm(s: dict[str, Any]) -> str:
    """The normalisation with the highest recall at the longest length with the bindings at training distances
    ('near'), among those that learnt the task (all of them when none did); the first in ``s['norms']`` on a tie."""
    return max(s["norms"], key=lambda m: (s[m]["learned"], s[m]["near"]["mean"][-1]))


def unlearned_sentence(s: dict[str, Any]) -> str:
    """Which normalisations did not learn the task at the training length (accuracy below LEARNED), if any."""
    unlearned = [gau_length.NORM_LABELS[m] for m in s["norms"] if not s[m]["learned"]]
    threshold = f"(accuracy below {gau_length.LEARNED})"
    if not unlearned:
        return "Every normalisation learnt the task at its training length."
    if len(unlearned) == len(s["norms"]):
        return f"No normalisation learnt the task at its training length {threshold}, so no recall claim is made."
    return (f"Only {', '.join(unlearned)} did not learn the task at its training length {threshold}, so no recall "
            f"claim is made for {'it' if len(unlearned) == 1 else 'them'}.")


def short_gap(s: dict[str, Any]) -> float | None:
    """The largest |accuracy at the shortest length - accuracy at the training length| (filler spread) over the
    normalisations that learnt the task; None when none did."""
    i_train = s["spans"].index(s["train_span"])
    gaps = [abs(s[m]["spread"]["mean"][0] - s[m]["spread"]["mean"][i_train]) for m in s["norms"] if s[m]["learned"]]
    return max(gaps) if gaps else None


def costs_text(s: dict[str, Any]) -> str:
    """Per normalisation, the text loss at the second half of the longest length with the full context minus from
    the last ``ctx`` tokens only (mean ± SE, nats/byte)."""
    return "; ".join(f"{gau_length.NORM_LABELS[m]} {s[m]['text_cost'][0]:+.2f} ± {s[m]['text_cost'][1]:.2f}"
                     for m in s["norms"])


def length_lines(runs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Per (label, ``gau_length.summary`` of the run): the training length, and per normalisation the recall
    accuracy (filler spread) at every evaluation length and the text cost of the context beyond the training
    length."""
    lines = []
    for label, s in runs:
        n = s["train_span"]
        lines.append(f"{label}, trained at {n}")
        lines.append(f"  recall accuracy at lengths {', '.join(map(str, s['spans']))}; text cost beyond {n}")
        for norm in s["norms"]:
            v = s[norm]
            lines.append(f"  {gau_length.NORM_LABELS[norm]:20s} spread "
                         + " ".join(f"{a:4.2f}" for a in v["spread"]["mean"])
                         + f"  text cost {v['text_cost'][0]:+.2f}")
    return "\n".join(lines)


def length_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The length section's numbers from one gau-length record: the lengths, which normalisation learnt the task,
    the shortest length's largest accuracy change, the best normalisation at the longest length and the text
    costs."""
    s = gau_length.summary(data)
    best = best_norm(s)
    gap = short_gap(s)
    return {
        "l_n": f"{s['train_span']}",
        "l_top": f"{s['spans'][-1]}",
        "l_factor": f"{s['spans'][-1] // s['train_span']}",
        "l_short": f"{s['spans'][0]}",
        "l_ctx": f"{s['ctx']}",
        "l_half": f"{s['long'] // 2}",
        "l_best_norm": gau_length.NORM_LABELS[best],
        "l_best_near": f"{s[best]['near']['mean'][-1]:.2f}",
        "l_best_spread": f"{s[best]['spread']['mean'][-1]:.2f}",
        "l_unlearned": Markdown(unlearned_sentence(s)),
        "l_short_gap": "n/a (no normalisation learnt the task)" if gap is None else f"{gap:.2f}",
        "l_costs": costs_text(s),
    }


def cpu_run(runs: Sequence[RunSet]) -> RunSet | None:
    """The cpu-scale run among ``runs`` when it is not the last (the best) one; None otherwise."""
    cpu = [r for r in runs if r.scale == "cpu"]
    return cpu[-1] if cpu and cpu[-1] is not runs[-1] else None


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number, sentence and table the chapter states: quality from the best gau-quality run, length from the
    best gau-length run, and the verdicts of both (and of the cpu-scale gau-length run when it is not the best)."""
    qbest, lbest = ch.best("gau-quality"), ch.best("gau-length")
    cpu = cpu_run(ch.runs["gau-length"])
    summaries = [(r.label, gau_length.summary(r.data)) for r in ch.runs["gau-length"]]
    return {
        "q_label": qbest.label,
        "q_gpu": ch.gpu_status("gau-quality"),
        **quality_facts(qbest.data),
        "l_label": lbest.label,
        "l_gpu": ch.gpu_status("gau-length"),
        "l_table": Markdown(f"```text\n{length_lines(summaries)}\n```"),
        **length_facts(lbest.data),
        "l_cpu_label": NO_CPU_RUN if cpu is None else cpu.label,
        "q_verdicts": ch.verdicts("gau-quality"),
        "l_verdicts": ch.verdicts("gau-length"),
        "l_verdicts_cpu": (Markdown(f"None: {NO_CPU_RUN}.") if cpu is None
                           else ch.verdicts("gau-length", cpu.key)),
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """Quality at equal parameters; length transfer from the best gau-length run and from its cpu-scale run."""
    cpu = cpu_run(ch.runs["gau-length"])
    return {"fig-gau-quality": quality(ch.best("gau-quality").data),
            "fig-gau-length": length(ch.best("gau-length").data),
            "fig-gau-length-cpu": no_run(NO_CPU_RUN) if cpu is None else length(cpu.data)}
