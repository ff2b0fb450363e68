"""Feed-forward layers, activations and dropout: the notes' parameter counts, GELU and its approximations, the
GLU family, SwiGLU's matrix merge and where the original Transformer applies dropout (experiment ``ffn-basics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.verify import PROVENANCE_WORDS, Claim, bounded, fmt, miss_limit, verdict_phrase
from analysis.studies.chapter import typeset
from analysis.studies.display import Markdown
from analysis.studies.plotting import STYLE, readable_figure

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "Feed-forward layers, activations and dropout"
EXPERIMENTS = ("ffn-basics",)


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number the chapter states, from the best run of ffn-basics (formatted as the prose prints it)."""

    best = ch.best("ffn-basics")
    d = best.data
    p, sym, act, m, dr = d["params"], d["symbolic"], d["activations"], d["merge"], d["dropout"]
    return {
        "best_label": best.label,
        "gpu_status": ch.gpu_status("ffn-basics"),
        # parameter counts: torch's FFN against 8H^2, and the SwiGLU width that matches it
        "ffn_d": f"{p['d']}",
        "ffn_w": f"{p['torch_ffn_weights']:,}",
        "ffn_wb": f"{p['torch_ffn_with_bias']:,}",
        "ffn_8h2": f"{8 * p['d'] ** 2:,}",
        "ffn_w_vs": Markdown(weights_relation(p["torch_ffn_weights"], p["d"])),
        "ffn_rel": f"{100 * (p['torch_ffn_with_bias'] / (8 * p['d'] ** 2) - 1):.2f}%",
        "ffn_sym": typeset(sym["ffn_parameters"]),
        "sw_notes_r": f"{p['notes_hidden']}",
        "sw_notes_w": f"{p['notes_swiglu_weights']:,}",
        "sw_notes_frac": f"{p['notes_swiglu_weights'] / p['torch_ffn_weights']:.3f}",
        "sw_match": f"{p['matching_hidden']:.1f}",
        "sw_book_r": f"{p['swiglu_hidden']}",
        "sw_book_w": f"{p['book_swiglu_weights']:,}",
        "sw_sym": typeset(sym["swiglu_width"]),
        # activations: the approximations' largest errors, the notes' erf from 1, torch's forms
        "gelu_tanh_err": f"{act['tanh']['max_abs']:.2e}",
        "gelu_tanh_at": f"{act['tanh']['at']:.2f}",
        "gelu_sig_err": f"{act['sigmoid']['max_abs']:.3f}",
        "gelu_sig_at": f"{act['sigmoid']['at']:.2f}",
        "notes_err": f"{act['notes']['max_abs']:.2f}",
        "notes_slope": f"{act['notes_slope_at_8']:.3f}",
        "notes_gap_sym": typeset(sym["notes_erf_minus_erf"]),
        "torch_gelu": f"{act['torch_gelu_gap']:.1e}",
        "torch_silu": f"{act['torch_silu_gap']:.1e}",
        "glu_gap": f"{max(d['glu'].values()):.1e}",
        # SwiGLU's merge: exact in the forward pass, not under training
        "merge_fwd": f"{m['forward_gap']:.1e}",
        "merge_step": f"{m['step_gap']:.2f}",
        "merge_pf": f"{m['params_factored']:,}",
        "merge_pm": f"{m['params_merged']:,}",
        # dropout sites: the paper's count against torch.nn.Transformer's
        "drop_paper": f"{dr['paper_residual']}",
        "drop_paper_total": f"{dr['paper_total']}",
        "drop_torch_mod": f"{dr['torch_modules']}",
        "drop_torch_att": f"{dr['torch_attention']}",
        "drop_torch_total": f"{dr['torch_total']}",
        # which tally the ledger counts the claim in: a check of PyTorch's module is not one of the sources'
        "drop_origin": PROVENANCE_WORDS[ch.claim("ffn-basics", "dropout-sites").origin],
        "drop_verdict": verdict_reason(ch.claim("ffn-basics", "dropout-sites")),
        **summary_facts(ch),
    }


def summary_facts(ch: Chapter) -> dict[str, Any]:
    """The verdict of the merge's training half and the summary's sentences, from the claims of ffn-basics."""

    def claim(key: str) -> Claim:
        return ch.claim("ffn-basics", key)

    def verdict(key: str) -> str:
        return claim(key).verdict_text()

    count, width, sites = claim("ffn-8h2"), claim("swiglu-width"), claim("dropout-sites")
    return {
        "merge_train_verdict": verdict_phrase(verdict("swiglu-merge-training")),
        "count_summary": Markdown(count_sentence(count.verdict_text(), count.corrected_verdict or "")),
        "gelu_summary": Markdown(gelu_sentence(verdict("gelu-notes"))),
        "width_summary": Markdown(width_sentence(width.verdict_text(), width.corrected_verdict or "")),
        "merge_summary": Markdown(merge_predicate(verdict("swiglu-merge"), verdict("swiglu-merge-training"))),
        "sites_summary": Markdown(sites_clause(sites.verdict_text(), sites.measured, sites.predicted)),
    }


def weights_relation(weights: int, d: int) -> str:
    """How an FFN's counted weights compare with 8H² at width ``d``: 'exactly' when equal, else the ratio."""
    if d < 1 or weights < 0:
        raise ValueError(f"d must be >= 1 and weights >= 0; got d={d!r}, weights={weights!r}")
    return "exactly" if weights == 8 * d * d else f"{weights / (8 * d * d):.4f} times"


def corrected_sentence(verdict: str, corrected: str, held: str, fixed: str, claim: str, correction: str) -> str:
    """A claim with a corrected prediction in one sentence: ``held`` when it holds, ``fixed`` when it fails and the
    correction holds, else '<claim> <verdict>, and <correction> <its verdict>'."""
    if verdict == "holds":
        return held
    if verdict == "fails" and corrected == "holds":
        return fixed
    tail = f", and {correction} {verdict_phrase(corrected)}" if corrected else ""
    return f"{claim} {verdict_phrase(verdict)}{tail}."


def count_sentence(verdict: str, corrected: str) -> str:
    """What the FFN's 8H² counts, from the ffn-8h2 claim (biases included) and its corrected count 8H² + 5H."""
    return corrected_sentence(verdict, corrected, "The FFN has 8H² parameters, biases included.",
                              "The FFN's 8H² counts its weights only: with its biases it has 8H² + 5H parameters.",
                              "The notes' count of 8H² parameters", "the count with biases, 8H² + 5H,")


def gelu_sentence(verdict: str) -> str:
    """Whether the notes' GELU, with erf integrated from 1, is GELU: the gelu-notes claim's verdict in words."""
    if verdict == "fails":
        return "The notes' GELU has a wrong integration limit."
    if verdict == "holds":
        return "The notes' GELU is GELU."
    return f"The check of the notes' GELU {verdict_phrase(verdict)}."


def width_sentence(verdict: str, corrected: str) -> str:
    """Whether SwiGLU's r = 2d/3 matches the FFN, from the swiglu-width claim and its corrected width r = 8d/3."""
    return corrected_sentence(verdict, corrected, "Their SwiGLU width r = 2d/3 matches the FFN's parameters.",
                              "Their SwiGLU width assumes a d×d FFN that the Transformer does not have: r = 8d/3 is "
                              "the matching width.", "Their SwiGLU width r = 2d/3", "r = 8d/3")


def merge_predicate(function: str, training: str) -> str:
    """'holds for the function but not for training': the verdicts of the merge's forward and training claims."""
    if function == "holds" and training == "fails":
        return "holds for the function but not for training"
    if function == training:
        return f"{verdict_phrase(function)} for the function and for training"
    return f"{verdict_phrase(function)} for the function and {verdict_phrase(training)} for training"


def sites_clause(verdict: str, measured: float, predicted: float) -> str:
    """Where PyTorch's module drops against the paper, from the dropout-sites claim: its verdict and the sites it
    counted (``measured``) against the paper's (``predicted``)."""
    if verdict == "holds":
        return "PyTorch's module drops in the same places"
    if verdict == "fails":
        return f"PyTorch's module drops in {'more' if measured > predicted else 'fewer'} places"
    return f"the claim that PyTorch's module drops in the same places {verdict_phrase(verdict)}"


def verdict_reason(c: Claim) -> str:
    """'fails, with 60 sites where it predicts 30': a claim's verdict as a predicate, and when it fails what was
    measured against the value it is judged by (:func:`analysis.core.verify.miss_limit`)."""
    said = verdict_phrase(c.verdict_text())
    if c.verdict != "fails":
        return said
    unit = f" {c.unit}" if c.unit else ""
    return f"{said}, with {bounded(c, fmt(c.measured))}{unit} where it predicts {fmt(miss_limit(c))}"


def figures(ch: Chapter) -> dict[str, Figure]:
    """The chapter's figure: activations and their distance from exact GELU."""
    return {"fig-act": activations_figure(ch.best("ffn-basics").data["activations"])}


@readable_figure
def activations_figure(act: dict[str, Any]) -> Figure:
    """GELU, its approximations, the notes' GELU, Swish and ReLU; absolute errors against exact GELU (log)."""
    c = {k: np.array(v) for k, v in act["curve"].items()}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
        ax = axes[0]
        for key, lab, style in (("relu", "ReLU", "k:"), ("gelu", r"GELU $x\,\Phi(x)$", "C0-"), ("swish", r"Swish$_1$ (SiLU)", "C2-"),
                                ("notes", r"the notes' GELU ($\mathrm{erf}$ from 1)", "C3--")):
            ax.plot(c["x"], c[key], style, label=lab)
        ax.set_xlim(-4, 4)
        ax.set_ylim(-1.5, 4)
        ax.set_xlabel("$x$")
        ax.set_ylabel("activation")
        ax.legend(fontsize=9)
        ax.set_title("activations")
        ax = axes[1]
        for key, lab, col in (("tanh", "tanh approximation", "C1"), ("sigmoid", r"$x\,\sigma(1.702\,x)$", "C4"),
                              ("notes", "the notes' GELU", "C3")):
            ax.semilogy(c["x"], np.maximum(np.abs(c[key] - c["gelu"]), 1e-17), color=col, label=lab)
        ax.set_xlabel("$x$")
        ax.set_ylabel(r"$|$approximation $-$ GELU$|$ (log scale)")
        ax.set_title("how far from exact GELU")
        ax.legend(fontsize=9)
        fig.tight_layout()
    return fig
