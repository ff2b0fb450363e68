"""GAU and FLASH trained side by side: FLASH-Quad (post- and pre-norm) and FLASH against a Transformer++ of equal
parameters on the same batches, loss, convergence and recall (experiment ``gau-quality``), and GAU under four
attention normalisations trained at one length and evaluated at shorter and longer ones (experiment
``gau-length``); three of the source's design choices, each changed alone in one GAU (``gau-ablations``); one
GAU head against several at the same parameters (``gau-heads``); and FLASH's local and global attention, each alone
and together (``flash-parts``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from matplotlib.figure import Figure

from analysis.core.stats import Estimate, Sided, t_quantile
from analysis.core.verify import Claim
from analysis.studies.display import Markdown, sentences
from analysis.studies.gau_trained.experiments import flash_parts, gau_ablations, gau_heads, gau_length, gau_quality
from analysis.studies.gau_trained.figures import length, quality, sharpest_layer
from analysis.studies.text import and_list, text_block

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter, RunSet

TITLE = "GAU and FLASH trained: quality and length"
EXPERIMENTS = ("gau-quality", "gau-length", "gau-ablations", "gau-heads", "flash-parts")


def pm(pair: Sequence[float], digits: int = 3) -> str:
    """'mean ± standard error' of a (mean, SE) pair at ``digits`` decimals."""
    return f"{pair[0]:.{digits}f} ± {pair[1]:.{digits}f}"


def quality_table(q: dict[str, Any]) -> str:
    """One line per architecture, at its best learning rate: parameters (millions), that learning rate, validation
    loss in nats/byte (mean ± SE), median seconds per step, and recall accuracy at the most pairs with its own best
    learning rate, from ``gau_quality.summary``."""
    width = max(len(gau_quality.ARCH_LABELS[a]) for a in gau_quality.ARCHS)
    top = q["top_pairs"]
    header = (f"{'architecture':{width}s} {'params':>7s} {'lr':>6s} {'val. loss':>13s} {'s/step':>6s} "
              f"{'rec@' + str(top):>6s} {'rec lr':>6s}")
    lines = [header]
    for a in gau_quality.ARCHS:
        v = q["archs"][a]
        lines.append(f"{gau_quality.ARCH_LABELS[a]:{width}s} {v['parameters'] / 1e6:6.3g}M {v['lr']:6.2g} "
                     f"{pm(v['val_loss']):>13s} {v['seconds_per_step']:6.4f} {v['recall']['mean'][-1]:6.2f} "
                     f"{v['recall_lr']:6.2g}")
    return "\n".join(lines)


def est_pm(est: Estimate | None, digits: int = 3) -> str:
    """An estimate as 'mean ± SE' (:func:`pm`), or 'not comparable' without one."""
    return "not comparable" if est is None else pm((est.value, est.se), digits)


def quality_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The quality section's numbers from one gau-quality record, each architecture at its best learning rate:
    parameters, paired gaps (mean ± SE over seeds), convergence ratios, step times, recall at the most pairs, the
    order, the learning-rate grid and the printed table, which holds the losses."""
    q = gau_quality.summary(data)
    arch, lab = q["archs"], gau_quality.ARCH_LABELS
    out: dict[str, Any] = {
        "q_table": Markdown(text_block(quality_table(q))),
        "q_params_tfm": f"{arch['transformer']['parameters']:,}",
        "q_params_quad": f"{arch['flash-quad-post']['parameters']:,}",
        "q_param_pct": f"{100 * (arch['flash-quad-post']['param_ratio'] - 1):.0f}%",
    }
    for a, short in (("transformer", "tfm"), ("flash-quad-post", "quad"), ("flash-quad-pre", "pre"),
                     ("flash", "flash")):
        out[f"q_rec_{short}"] = f"{arch[a]['recall']['mean'][-1]:.2f}"
    gap_flash = q["gaps"]["flash-flash-quad-post"]
    out |= {
        "q_gap": est_pm(q["gaps"]["flash-quad-post-transformer"]),
        "q_gap_pre": est_pm(q["gaps"]["flash-quad-pre-transformer"]),
        "q_gap_flash": est_pm(gap_flash),
        "q_gap_flash_pct": ("n/a" if gap_flash is None else
                            f"{100 * gap_flash.value / arch['flash-quad-post']['val_loss'][0]:.1f}%"),
        "q_steps": est_pm(q["steps_ratio"], 2),
        "q_steps_flash": est_pm(q["steps_ratio_flash"], 2),
        "q_time": est_pm(q["time_ratio_to_target"], 2),
        "q_step_time": f"{arch['flash-quad-post']['time_ratio']:.2f}",
        "q_step_time_flash": f"{arch['flash']['time_ratio']:.2f}",
        "q_top": f"{q['top_pairs']}",
        "q_lrs": and_list([f"{lr:g}" for lr in data["lrs"]]),
        "q_recall_lrs": and_list([f"{lr:g}" for lr in data["recall_lrs"]]),
        "q_order": ", ".join(lab[a] for a in q["order"]),
        "q_chance": f"{data['chance']:.3g}, a guess among {round(1 / data['chance'])} values",
        "q_interval": interval_words(gau_quality.best_gap(data, "text", "flash-quad-post", "transformer")),
        "q_lr_sentence": lr_sentence(q, data["steps"]),
        "q_pre_recall": pre_norm_recall_sentence(data),
    }
    return out


def interval_words(gap: Estimate | None) -> str:
    """How a paired gap is judged, in words: 'a 95% Student-t interval over 3 paired seeds (2 df: ±4.30 SE two-sided,
    2.92 SE one-sided)', or that one seed gives no error estimate."""
    if gap is None:
        return "no interval (an architecture diverged at every learning rate)"
    if not gap.resolved:
        return f"no error estimate ({gap.n} {gap.units})"
    return (f"a 95% Student-t interval over {gap.n} {gap.units} ({gap.nu:g} df: ±{t_quantile(gap.nu):.3g} SE "
            f"two-sided, {t_quantile(gap.nu, sided='one'):.3g} SE one-sided)")


def lr_sentence(q: dict[str, Any], steps: int) -> str:
    """Each architecture's best learning rate on text, which ones sit at an end of the grid, and which would have
    been chosen differently at half the budget (from ``gau_quality.summary``)."""
    lab = gau_quality.ARCH_LABELS
    lrs = {q["archs"][a]["lr"] for a in gau_quality.ARCHS}
    best = (f"{lrs.pop():g} for every architecture" if len(lrs) == 1 else
            and_list([f"{q['archs'][a]['lr']:g} for {lab[a]}" for a in gau_quality.ARCHS]))
    edges = [f"{lab[a]}'s is {q['archs'][a]['lr_edge']}" for a in gau_quality.ARCHS if q["archs"][a]["lr_edge"]]
    moved = [f"{q['archs'][a]['lr_half']:g} for {lab[a]}" for a in gau_quality.ARCHS
             if q["archs"][a]["lr_half"] != q["archs"][a]["lr"]]
    out = f"The best peak learning rate is {best}."
    if edges:
        out += f" At an end of the grid: {and_list(edges)}, so one beyond it might do better."
    out += (f" At step {steps // 2}, half the budget, the best would have been the same for every architecture."
            if not moved else f" At step {steps // 2}, half the budget, it was {and_list(moved)}.")
    return out


def chunk_sentence(ctx: int, chunk: int) -> str:
    """How much of FLASH's linear attention a window of ``ctx`` tokens in chunks of ``chunk`` exercises: the chunks
    per window, how far back the linear term reaches, the positions without it, and its share of the keys a causal
    row holds."""
    rows = np.arange(ctx) + 1
    across = (np.arange(ctx) // chunk) * chunk
    share = float(across.sum() / rows.sum())
    return (f"A text window of {ctx} tokens in chunks of {chunk} holds {ctx // chunk} chunks. FLASH's linear attention "
            f"across chunks reaches at most {ctx - chunk} tokens back, and the first {min(chunk, ctx)} positions do not "
            f"use it. It carries {100 * share:.0f}% of the keys a causal row holds. The lengths at which FLASH is "
            f"meant to pay, where the linear term spans many chunks, are not reached here.")


def pre_norm_recall_sentence(data: dict[str, Any]) -> str:
    """Why pre-norm FLASH-Quad recalls less than post-norm at the most pairs, from the recall runs: both norms'
    accuracy at every learning rate of the grid, and pre-norm's at half the budget and at its end at its best."""
    top = data["pairs"][-1]
    pre = gau_quality.lr_table(data, "recall", "flash-quad-pre", top)
    post = gau_quality.lr_table(data, "recall", "flash-quad-post", top)
    if not pre or not post:
        return ""
    lr = gau_quality.best_lr(data, "recall", "flash-quad-pre", top)
    runs = [r for r in data["runs"] if r["task"] == "recall" and r["arch"] == "flash-quad-pre" and r["pairs"] == top
            and r["lr"] == lr and r["diverged_at"] is None]
    if not runs:
        return f"Pre-norm FLASH-Quad diverged at every learning rate with {top} pairs."
    half, end = (float(np.mean([r[k] for r in runs])) for k in ("accuracy_half", "accuracy"))
    gap = gau_quality.best_gap(data, "recall", "flash-quad-pre", "flash-quad-post", top)
    verdict = gau_quality.gap_words(gap)
    pre_words = and_list(["{:.2f} at a peak learning rate of {:g}".format(row["mean"], row["lr"]) for row in pre])
    post_words = and_list(["{:.2f} at {:g}".format(row["mean"], row["lr"]) for row in post])
    return (f"With {top} pairs, pre-norm FLASH-Quad recalls {pre_words}, post-norm {post_words}. At its best learning "
            f"rate pre-norm's accuracy went from {half:.2f} at step {runs[0]['half_step']} to {end:.2f} at the end; "
            f"each at its best, pre-norm's accuracy minus post-norm's is {est_pm(gap, 2)}, {verdict} 0 by its 95% "
            f"Student-t interval.")


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
        lines.append(f"  recall accuracy by length (filler spread); text cost beyond {n}")
        lines.append(f"  {'length':20s} " + " ".join(f"{span:>4d}" for span in s["spans"]) + "   cost")
        for norm in s["norms"]:
            v = s[norm]
            lines.append(f"  {gau_length.NORM_LABELS[norm]:20s} "
                         + " ".join(f"{a:4.2f}" for a in v["spread"]["mean"])
                         + f"  {v['text_cost'][0]:+.2f}")
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
        "l_mechanism": Markdown(mechanism_text(data, s)),
    }


# relu² normalisation -> the power of 1/n by which a row's total weight falls when every added key scores zero
MASS_POWER = {"relu2_ns": 1, "relu2_n2": 2}


def _fold(before: float, after: float) -> tuple[str, str]:
    """('falls', '1.9-fold') or ('rises', '1.2-fold'): how a positive quantity moved from ``before`` to ``after``."""
    return ("falls", f"{before / after:.1f}-fold") if after < before else ("rises", f"{after / before:.1f}-fold")


def mechanism_text(data: dict[str, Any], s: dict[str, Any]) -> str:
    """Why length hurts, read off one gau-length record (``s`` its :func:`gau_length.summary`) at the sharpest layer's
    query rows (filler first): how each relu² row's total weight moves from the training length to the longest
    against the fall were every new key to score zero, and how the softmax rows' entropy moves against ln n, with and
    without the log₅₁₂ n factor."""
    n, top = s["train_span"], s["spans"][-1]
    at, end = s["spans"].index(n), len(s["spans"]) - 1

    def curve(norm: str, metric: str) -> tuple[float, float]:
        c = gau_length.recall_curve(data, norm, "near", f"{metric}:{sharpest_layer(s, norm)}")
        return c["mean"][at], c["mean"][end]

    out = []
    relu = [norm for norm in MASS_POWER if norm in s["norms"]]
    if relu:
        masses = {norm: curve(norm, "mass") for norm in relu}
        moves = [_fold(*m) for m in masses.values()]
        same = len({verb for verb, _ in moves}) == 1
        named = [f"{size} for {gau_length.NORM_LABELS[norm]}" for norm, (_, size) in zip(relu, moves)]
        text = (f"{moves[0][0]} {and_list(named)}" if same else
                and_list([f"{verb} {name}" for (verb, _), name in zip(moves, named)]))
        zero = and_list([f"{(top / n) ** MASS_POWER[norm]:.0f}-fold" for norm in relu])
        fades = all(b < a for a, b in masses.values())
        out.append(f"From the training length {n} to {top}, a query row's total weight {text} (bottom right), "
                   f"against a fall of {zero} were every added key to score zero"
                   + (", so the attended value fades." if fades else "."))
    soft = {norm: curve(norm, "entropy") for norm in ("softmax", "softmax_log512") if norm in s["norms"]}
    if soft:
        moves = [f"{'rises' if b > a else 'falls'} from {a:.2f} to {b:.2f} nats" for a, b in soft.values()]
        lead = {"softmax": "its rows' entropy", "softmax_log512": "with the factor log₅₁₂ n it"}
        parts = [f"{lead[norm]} {move}" for norm, move in zip(soft, moves)]
        out.append(f"Softmax keeps the weights summing to 1, but {', and '.join(parts)}, against ln {top} = "
                   f"{math.log(top):.2f} for a uniform row (bottom left).")
        if "softmax_log512" in soft and soft["softmax_log512"][1] > soft["softmax_log512"][0]:
            out.append("The factor offsets the rise only for logits that do not change with n, and a trained "
                       "model's do.")
    return " ".join(out)


# the claim each variant's paired gap loss(base) - loss(variant) decides, per experiment: its row of the table
# prints that claim's own interval and verdict
CLAIM_OF_VARIANT: dict[str, dict[str, str]] = {
    "gau-ablations": {"n2": "ns-beats-n2", "softmax": "relu2-not-worse-than-softmax", "nopos": "rope-helps-gau"},
    "gau-heads": {v: f"one-head-not-worse-{h}" for v, h in gau_heads.HEADS.items() if h > 1},
    "flash-parts": {"local": "flash-mix-beats-local", "global": "flash-mix-beats-global",
                    "quad": "flash-matches-flashquad-chunks"},
}


def claim_interval(claim: Claim, end: Estimate) -> str:
    """A paired gap as its claim decides it: '-0.0155 ± 0.0191 (95% two-sided t, 4 seeds, 3 df)' for a claim of
    equality; for a directional claim or a bound, its one-sided 95% t bound, the side its verdict reads ('-0.0155, at
    most -0.0014 (95% one-sided t, ...)' for '< 0' or '>= 0'; 'at least' for '> 0' or '<= 0'). ValueError when the
    claim's measurement or tolerance is not that of ``end``: the row and the verdict must be one computation."""
    sided: Sided = "two" if claim.kind == "equal" else "one"
    if not end.resolved:
        return f"{end.value:+.4f} (one seed: no interval)"
    if not (math.isclose(claim.measured, end.value, rel_tol=1e-12, abs_tol=1e-15)
            and math.isclose(claim.tolerance, end.half_width(sided=sided), rel_tol=1e-9)):
        raise ValueError(f"claim {claim.key!r} must be decided by the gap it is shown with (measured {end.value!r} "
                         f"± {end.half_width(sided=sided)!r}); got {claim.measured!r} ± {claim.tolerance!r}")
    where = f"95% {'two' if sided == 'two' else 'one'}-sided t, {end.n} seeds, {end.nu:g} df"
    if sided == "two":
        return f"{end.value:+.4f} ± {claim.tolerance:.4f} ({where})"
    if claim.kind in ("below", "lower_bound"):
        return f"{end.value:+.4f}, at most {end.value + claim.tolerance:+.4f} ({where})"
    return f"{end.value:+.4f}, at least {end.value - claim.tolerance:+.4f} ({where})"


def ablation_table(s: dict[str, Any], variants: Sequence[str], claims: Mapping[str, Claim]) -> str:
    """Markdown table of a paired ablation (gau-ablations, gau-heads, flash-parts): per variant its mean final loss
    and loss(base) - loss(variant) paired by seed with the interval and verdict of the claim ``claims[variant]``
    decides by it (:func:`claim_interval`), the detectable difference and how the gap moved since the previous
    validation point; ``variants[0]`` is the base."""
    if len(variants) < 2 or any(v not in s["variants"] for v in variants):
        raise ValueError(f"variants must be a base and at least one variant of the summary "
                         f"({', '.join(s['variants'])}); got {list(variants)}")
    if any(v not in claims for v in variants[1:]):
        raise ValueError(f"claims must hold a claim for every variant but the base ({', '.join(variants[1:])}); "
                         f"got {', '.join(claims) or 'none'}")
    base = s["variants"][variants[0]]
    rows = ["| variant | validation loss (nats/byte) | loss(base) − loss(variant), the claim's 95% t | detects ≥ | "
            "verdict | moved since step {} |".format(s["gaps"][variants[1]]["previous_step"]),
            "| --- | --- | --- | --- | --- | --- |",
            f"| {base['label']} (base) | {base['val_loss']:.4f} | | | | |"]
    for v in variants[1:]:
        g = s["gaps"][v]
        end: Estimate = g["end"]
        c = claims[v]
        detects = "none" if c.detectable is None else f"{c.detectable:.4f}"
        rows.append(f"| {s['variants'][v]['label']} | {s['variants'][v]['val_loss']:.4f} | {claim_interval(c, end)} | "
                    f"{detects} | {c.verdict_text()} | {g['drift']:+.4f} |")
    return "\n".join(rows)


def variant_claims(ch: Chapter, name: str) -> dict[str, Claim]:
    """Per variant of experiment ``name``, the claim its paired gap decides (:data:`CLAIM_OF_VARIANT`), from the
    experiment's best run."""
    return {v: ch.claim(name, key) for v, key in CLAIM_OF_VARIANT[name].items()}


def ablation_facts(ch: Chapter) -> dict[str, Any]:
    """The ablation section: its run, table, sizes and verdicts, from the best gau-ablations run."""
    best = ch.best("gau-ablations")
    s = gau_ablations.summary(best.data)
    cfg = gau_ablations.CONFIGS[best.scale]
    return {"a_label": best.label,
            "a_table": Markdown(ablation_table(s, gau_ablations.VARIANTS, variant_claims(ch, "gau-ablations"))),
            "a_sizes": f"width {cfg.d}, expanded width {cfg.e}, key size {cfg.s}, {cfg.layers} layers, "
                       f"{cfg.ctx} tokens, {cfg.steps} steps",
            "a_gpu": ch.gpu_status("gau-ablations")}


def heads_facts(ch: Chapter) -> dict[str, Any]:
    """The heads section: its run, table, the key size per head and the parameter counts, from the best gau-heads
    run."""
    best = ch.best("gau-heads")
    s = gau_heads.summary(best.data)
    params = {v: s["variants"][v]["parameters"] for v in gau_heads.VARIANTS}
    heads = gau_heads.HEADS[gau_heads.VARIANTS[-1]]
    return {"h_label": best.label,
            "h_table": Markdown(ablation_table(s, gau_heads.VARIANTS, variant_claims(ch, "gau-heads"))),
            "h_heads": str(heads), "h_key": f"{best.data['s'] // heads}",
            "h_params": (f"{params[gau_heads.VARIANTS[0]]:,} parameters in every arm" if len(set(params.values())) == 1
                         else "parameters " + ", ".join(f"{p:,}" for p in params.values())),
            "h_gpu": ch.gpu_status("gau-heads")}


def _side(gap: Estimate) -> str:
    """Where FLASH ends against FLASH-Quad by a paired gap loss(FLASH) - loss(FLASH-Quad): 'above' or 'below' when
    the two-sided 95% t interval excludes 0, else '' (not resolved)."""
    half = gap.half_width()  # two-sided, as the claim of equality it sits beside (flash-matches-flashquad-chunks)
    if gap.resolved and gap.value - half > 0:
        return "above"
    if gap.resolved and gap.value + half < 0:
        return "below"
    return ""


def _gap_words(gap: Estimate, side: str) -> str:
    """'ends below FLASH-Quad, by 0.129 ± 0.009 (mean ± SE)', or the signed gap and that its interval reaches 0."""
    if side:
        return f"FLASH ends {side} FLASH-Quad, by {pm((abs(gap.value), gap.se))} (mean ± SE)"
    return (f"FLASH's gap to FLASH-Quad, {est_pm(gap)} (mean ± SE), is not resolved from 0 (its 95% t interval "
            "reaches it)")


def flash_quad_sentence(quality: dict[str, Any], quality_gap: Estimate | None, parts: dict[str, Any],
                        parts_chunk: int, parts_gap: Estimate) -> str:
    """The two runs that compare FLASH with FLASH-Quad (gau-quality's config ``quality``, flash-parts' config
    ``parts`` and chunk length), each paired gap loss(FLASH) - loss(FLASH-Quad) with where its 95% t interval puts
    FLASH, whether they agree, and how the two set-ups differ."""
    if quality_gap is None:
        return ""
    q_side, p_side = _side(quality_gap), _side(parts_gap)
    q_where = (f"windows of {quality['ctx']} bytes in {quality['ctx'] // quality['chunk']} chunks, width "
               f"{quality['d']}, {quality['steps']} steps, each at its best learning rate")
    p_where = (f"windows of {parts['ctx']} bytes in {parts['ctx'] // parts_chunk} chunks, width "
               f"{parts['d']}, {parts['steps']} steps, every arm at learning rate {parts['lr']:g}")
    # one sentence per run, so that neither set-up's description nests inside the other's
    gaps = (f"In the quality section ({q_where}), {_gap_words(quality_gap, q_side)}. Here ({p_where}), "
            f"{_gap_words(parts_gap, p_side)}.")
    differ = ("The two set-ups differ in window, chunks per window, width, budget and learning rate at once. Which of "
              "these {} is not measured, and neither run is at the source's scale.")
    if q_side and q_side == p_side:
        return f"The two comparisons of FLASH with FLASH-Quad agree. {gaps}"
    if q_side and p_side:
        return f"The two comparisons of FLASH with FLASH-Quad disagree. {gaps} " + differ.format("turns the sign")
    return (f"Of the two comparisons of FLASH with FLASH-Quad, {'neither' if not (q_side or p_side) else 'one'} "
            f"resolves a side. {gaps} " + differ.format("moves the gap"))


def parts_facts(ch: Chapter) -> dict[str, Any]:
    """The local-and-global section: its run, table, chunk length and the local-minus-global gap, from the best
    flash-parts run; and how its FLASH-Quad gap sits beside the quality section's."""
    best = ch.best("flash-parts")
    s = flash_parts.summary(best.data)
    quality = ch.best("gau-quality")
    q_gap = gau_quality.summary(quality.data)["gaps"]["flash-flash-quad-post"]
    return {"p_label": best.label,
            "p_table": Markdown(ablation_table(s, flash_parts.VARIANTS, variant_claims(ch, "flash-parts"))),
            "p_chunk": str(best.data["chunk"]), "p_chunks": str(best.data["ctx"] // best.data["chunk"]),
            "p_local_global": claim_interval(ch.claim("flash-parts", "flash-local-beats-global"),
                                             s["pair_gaps"]["local:global"]["end"]),
            "p_vs_quality": flash_quad_sentence(quality.settings("gau-quality"), q_gap,
                                                best.settings("flash-parts"), int(best.data["chunk"]),
                                                s["gaps"]["quad"]["end"]),
            "p_gpu": ch.gpu_status("flash-parts")}


def design_sentence(best: RunSet) -> str:
    """Before the gpu run of gau-quality: the gap its seeds detect (in per-seed SDs, and at the best run's SD) and the
    SD at which it would decide a gap as large as the best run's; what the gpu run itself states once it is the best
    run."""
    if best.scale == "gpu":
        return ("The run shown is the gpu run: each interval above carries its own degrees of freedom and "
                "detectable gap.")
    planned = gau_quality.CONFIGS["gpu"]
    d = gau_quality.planned_design(best.data, planned)
    if d is None:
        return f"The {best.label} run has no error estimate of its gap, so it sizes nothing."
    tokens = planned.steps * planned.batch * planned.ctx
    return (f"**What the gpu run can detect, stated before it runs.** The gpu config trains {d.seeds} seeds per "
            f"architecture and learning rate, each for {planned.steps:,} steps, {tokens / 1e6:.0f} M tokens, so each "
            f"paired gap has {d.seeds - 1} df, and a one-sided t test (95%, "
            f"80% power) detects a gap of {d.multiple:.2g} standard deviations of the per-seed gap. At the SD "
            f"measured here ({d.sd:.3g} nats/byte) that is {d.detects:.3g} nats/byte, against the "
            f"{abs(d.gap):.3g} by which FLASH-Quad and Transformer++ differ here. The gpu run decides a gap of that "
            f"size only if its per-seed SD is at most {d.max_sd:.3g}, {d.sd / d.max_sd:.2g} times smaller than "
            f"here; how much seeds vary at d = {planned.d} and {planned.ctx:,} tokens is part of what it measures.")


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number, sentence and table the chapter states: quality from the best gau-quality run, length from the
    best gau-length run, and the ablations, heads and local-and-global sections from theirs."""
    qbest, lbest = ch.best("gau-quality"), ch.best("gau-length")
    qcfg = qbest.settings("gau-quality")
    summaries = [(r.label, gau_length.summary(r.data)) for r in ch.shown("gau-length")]
    return sentences({
        "q_label": qbest.label,
        "q_gpu": ch.gpu_status("gau-quality"),
        "q_design": Markdown(design_sentence(qbest)),
        "q_budget": f"{qbest.data['steps']:,}",
        "q_ctx": f"{qcfg['ctx']:,}",
        **quality_facts(qbest.data),
        "q_recall_d": f"{qcfg['recall_d']}",
        "q_recall_steps": f"{qbest.data['recall_steps']:,}",
        "q_chunk_sentence": chunk_sentence(qcfg["ctx"], qcfg["chunk"]),
        "l_label": lbest.label,
        "l_gpu": ch.gpu_status("gau-length"),
        "l_table": Markdown(text_block(length_lines(summaries))),
        **length_facts(lbest.data),
        **ablation_facts(ch),
        **heads_facts(ch),
        **parts_facts(ch),
    }, ("q_lr_sentence", "q_chunk_sentence", "q_pre_recall", "p_vs_quality"))


def figures(ch: Chapter) -> dict[str, Figure]:
    """Quality at equal parameters; length transfer from the best gau-length run (the length table lists every
    run shown, the cpu-scale one too when it is not the best)."""
    return {"fig-gau-quality": quality(ch.best("gau-quality").data),
            "fig-gau-length": length(ch.best("gau-length").data)}
