"""The sources' smaller statements: side remarks, replies to readers and code, each decided by the cheapest run that
can (experiments ``scale-gradient-notes`` and ``source-side-checks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.mathtext import math_markdown
from analysis.core.verify import VERDICT_COLOURS, Claim, fmt, verdict_count, verdict_phrase
from analysis.studies.plotting import STYLE, readable_figure
from analysis.studies.source_checks.experiments.scale_gradient_notes import SOURCE_D
from analysis.studies.text import and_list, by_verdict, sci, verdicts_by

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "The sources' smaller statements"
EXPERIMENTS = ("scale-gradient-notes", "source-side-checks")


def verdicts_for(named: list[tuple[str, str]]) -> str:
    """Verdict phrases of named cases, each phrase said once: 'fails for both', 'holds for A and fails for B'."""
    groups = by_verdict(named)
    if len(groups) == 1 and len(named) > 1:
        return f"{groups[0][0]} for {'both' if len(named) == 2 else 'all'}"
    return verdicts_by(named)


def bounded_mean_sentence(limit: float, n: int) -> str:
    """What bounds the gradient instead, without a period: the mean over continuous scores, whose alpha -> infinity
    limit L_n is a closed form (eq-exact-limit of the softmax-scale chapter)."""
    return (f"What stays bounded is the mean over continuous scores: as $\\alpha \\to \\infty$ it tends to the "
            f"closed-form limit $L_n = {limit:.3f}$ at $n = {n:,}$")


def width_growth_sentence(methods: list[dict[str, Any]], source_d: int) -> str:
    """How alpha*(n, d) grows with the width at each method's n: the exponent p of alpha* ~ d^p between the source's
    ``source_d`` and the method's own d, from alpha*(n, d) of eq-cosine-star, against 1/2 for sqrt(d)."""
    parts = []
    for m in methods:
        if m["d"] <= source_d or min(m["alpha_star"], m["alpha_star_source_d"]) <= 0:
            raise ValueError(f"methods must have d > source_d = {source_d} and alpha* > 0; got {m['name']!r}")
        p = np.log(m["alpha_star"] / m["alpha_star_source_d"]) / np.log(m["d"] / source_d)
        parts.append(f"${p:.2f}$ for {m['name']}'s $n$")
    return (f"From $d = {source_d}$ to each method's width, $\\alpha^*$ grows as $d^p$ with $p$ = "
            f"{and_list(parts)}, against $1/2$ for $\\sqrt d$")


def spread_words(x: float) -> str:
    """A computed gap as the prose states it: 'exactly 0' for an exact 0, else two significant figures."""
    return "exactly 0" if x == 0 else f"{x:.2g}"


def tally_words(claims: list[Claim]) -> str:
    """'8 hold and 9 fail': the verdict counts of the chapter's claims, in the verdict box's order."""
    parts = [verdict_count(v, n) for v in VERDICT_COLOURS if (n := sum(c.verdict == v for c in claims))]
    return f"{', '.join(parts[:-1]) + ' and ' if len(parts) > 1 else ''}{parts[-1]}"


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number the chapter states, from the best runs of its two experiments (as the prose prints them)."""
    from IPython.display import Markdown  # a book package: the campaign imports this study without it

    grad, side = ch.best("scale-gradient-notes"), ch.best("source-side-checks")
    g, e, cm = grad.data["gradient"], grad.data["entropy"], {m["key"]: m for m in grad.data["cosine_methods"]}
    r, pad, ne = side.data["relu2"], side.data["padding"], side.data["notes_entropy"]

    def c(name: str, key: str) -> Claim:
        return ch.claim(name, key)

    def v(name: str, key: str) -> str:
        return verdict_phrase(c(name, key).verdict_text())

    shown = [claim for name in EXPERIMENTS for claim in ch.claims_of(name)]
    offset = c("source-side-checks", "relu2-only-power-changes-sparsity")
    signed = c("source-side-checks", "signed-qk-fits-better")
    rows = r["rows"]
    return {
        "grad_label": grad.label,
        # whether a GPU-scale run exists, for each experiment
        "gpu_status": Markdown("\n\n".join(ch.gpu_status(name).data for name in EXPERIMENTS)),
        "tally": tally_words(shown), "n_claims": f"{len(shown)}",
        # the softmax gradient's size: at scale 0, with a tie, and what bounds it
        "v_grad_zero": v("scale-gradient-notes", "grad-zero-at-scale-0"),
        "g_small": sci(g["small"]), "g_small_alpha": sci(g["small_alpha"]), "g_one": f"{g['at_one']:.3f}",
        "v_grad_bounded": v("scale-gradient-notes", "grad-bounded"),
        "g_large_alpha": f"{g['large_alpha']:,.0f}", "g_tied": f"{g['tied_large']:.1f}",
        "g_mean_field": f"{g['mean_field_max']:.3f}",
        "v_grad_tied": verdict_phrase(str(c("scale-gradient-notes", "grad-bounded").corrected_verdict)),
        "g_bounded_mean": Markdown(math_markdown(bounded_mean_sentence(g["exact_limit"], g["n"]))),
        # entropy invariance: the slope ratio per kind of score
        "v_ent": verdicts_for([(kind, v("scale-gradient-notes", f"entropy-invariance-{key}"))
                               for kind, key in (("normal scores", "normal"), ("cosines", "cosine"))]),
        "ent_normal": f"{c('scale-gradient-notes', 'entropy-invariance-normal').measured:.2f}",
        "ent_cosine": f"{c('scale-gradient-notes', 'entropy-invariance-cosine').measured:.2f}",
        "ent_d": f"{e['cosine']['d']}",
        "ent_removed_normal": f"{100 * (1 - c('scale-gradient-notes', 'entropy-invariance-normal').measured):.0f}%",
        "ent_removed_cosine": f"{100 * (1 - c('scale-gradient-notes', 'entropy-invariance-cosine').measured):.0f}%",
        "ent_n_lo": f"{np.exp(e['normal']['ln_n'][0]):,.0f}", "ent_n_hi": f"{np.exp(e['normal']['ln_n'][-1]):,.0f}",
        # cosine softmax in practice
        "v_cosine": verdicts_for([(cm[key]["name"], v("scale-gradient-notes", f"cosine-scale-{key}"))
                                  for key in ("am-softmax", "simcse")]),
        "am_d": f"{cm['am-softmax']['d']}", "simcse_d": f"{cm['simcse']['d']}",
        "am_star": f"{cm['am-softmax']['alpha_star']:.1f}", "simcse_star": f"{cm['simcse']['alpha_star']:.1f}",
        "am_star128": f"{cm['am-softmax']['alpha_star_source_d']:.1f}",
        "cos_growth": Markdown(math_markdown(width_growth_sentence(list(cm.values()), SOURCE_D))),
        "am_used": f"{cm['am-softmax']['used']:g}", "simcse_used": f"{cm['simcse']['used']:g}",
        "simcse_star128": f"{cm['simcse']['alpha_star_source_d']:.1f}",
        # GAU: nu and relu^2's sparsity
        "v_nu": v("source-side-checks", "nu-rounded"), "nu": f"{r['nu']:.4f}",
        "nu_rise": f"{100 * ((0.6 / r['nu']) ** 6 - 1):.1f}%",
        "v_relu2_scale": v("source-side-checks", "relu2-scale-keeps-sparsity"),
        "relu2_softmax_factor": f"{1 + c('source-side-checks', 'relu2-scale-keeps-sparsity').rival:.3g}",
        "v_relu2_offset": v("source-side-checks", "relu2-only-power-changes-sparsity"),
        "relu2_offset": f"{r['offset']:g}", "relu2_offset_change": f"{100 * offset.measured:+.0f}%",
        "relu2_zero": f"{np.mean([x['zero'] for x in rows]):.2f}",
        "relu2_offset_zero": f"{np.mean([x['offset_zero'] for x in rows]):.2f}",
        "relu2_power_change": f"{100 * float(offset.effect or 0.0):+.0f}%",
        # signed against non-negative factors
        "v_signed": v("source-side-checks", "signed-qk-fits-better"),
        "signed_ratio": f"{signed.measured:.3f}", "signed_se": f"{signed.uncertainty:.3f}",
        "signed_rank": f"{side.data['factor']['rank']}", "signed_n": f"{side.data['factor']['n']}",
        # widening: the identity, k-fold repetition, padding
        "v_leaky": v("source-side-checks", "leaky-relu-identity"),
        "leaky_gelu": fmt(side.data["homogeneity"]["gelu"], 2),
        "v_repeat": v("source-side-checks", "repeat-k-lossless"),
        "repeat_gelu": fmt(side.data["repeat"]["gelu"], 2),
        "v_zero_rows": v("source-side-checks", "zero-rows-lossless"),
        "random_gap": fmt(pad["random"]["gap"], 2),
        "v_zero_rows_grad": v("source-side-checks", "zero-rows-gradients"),
        "zero_rows_share": f"{pad['zero-rows']['zero_share']:.2f}",
        "zero_rows_share2": f"{pad['zero-rows']['zero_share_step2']:.2f}",
        "v_zeros_same": v("source-side-checks", "zeros-same-gradient"),
        "v_zeros_dropout": v("source-side-checks", "zeros-dropout-breaks"),
        "pad_dropout": f"{pad['dropout']:g}",
        "zeros_dropout_gap": spread_words(c("source-side-checks", "zeros-dropout-breaks").measured),
        # the notes' entropy code
        "v_notes": v("source-side-checks", "notes-onehot-entropy"),
        "notes_printed": f"{ne['printed']:.6f}", "notes_closed": sci(ne["closed_form"], 5),
        "notes_classes": f"{ne['classes']:,}",
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """The chapter's figure: the softmax gradient against its scale, and entropy against length."""
    return {"fig-scale-notes": scale_figure(ch.best("scale-gradient-notes").data)}


@readable_figure
def scale_figure(data: dict[str, Any]) -> Figure:
    """Left: alpha (1 - sum p^2) of a sampled row and of a row with a tied top pair, against alpha (log-log), with the
    mean-field maximum and the exact limit L_n. Right: the mean entropy against n at alpha*(n) and at a fixed alpha."""
    g, e = data["gradient"], data["entropy"]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        ax = axes[0]
        a = np.array(g["curve_alpha"])
        ax.loglog(a, np.maximum(g["curve_row"], 1e-300), "C0-", label="a sampled row")
        ax.loglog(a, g["curve_tied"], "C3-", label="the same row, two largest tied")
        ax.axhline(g["mean_field_max"], color="k", ls=":", label="mean-field maximum")
        ax.axhline(g["exact_limit"], color="C2", ls="--", label=r"$L_n$: limit of the mean")
        ax.set_ylim(1e-4, 2 * max(g["curve_tied"]))
        ax.set_xlabel(r"scale $\alpha$ (log scale)")
        ax.set_ylabel(r"$\alpha\,(1 - \sum_i p_i^2)$ (log scale)")
        ax.set_title(f"softmax gradient, $n$ = {g['n']:,}")
        ax.legend(fontsize=9)
        ax = axes[1]
        for kind, col, name in (("normal", "C0", "$N(0, 1)$"), ("cosine", "C1", f"cosine, $d$ = {e['cosine']['d']}")):
            n = np.exp(e[kind]["ln_n"])
            ax.semilogx(n, e[kind]["entropy_star"], "-o", color=col, label=rf"{name}, $\alpha^*(n)$")
            ax.semilogx(n, e[kind]["entropy_fixed"], "--", color=col,
                        label=rf"{name}, fixed $\alpha^*({e[kind]['n_mid']:,})$")
        ax.set_xlabel("keys $n$ (log scale)")
        ax.set_ylabel("mean attention entropy (nats)")
        ax.set_title("entropy against length")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return fig
