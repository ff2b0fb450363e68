"""Widening a trained model k times without changing its function: one lift rule for every layer, checked to
rounding on BERT, decoders with RoPE, GAU and FLASH and by fractional factors; the source's table row by row; and
what widening does to training (savings at equal FLOPs, the copies' symmetry, stationary points, RoPE pairwise)
(experiment ``widening``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy as sp
from matplotlib.figure import Figure

from analysis.studies.chapter import typeset
from analysis.studies.display import Markdown, sentences
from analysis.studies.widening.figures import exactness_figure, prose, table_html, training_figure
from analysis.studies.widening.verdicts import verdict_facts

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "Widening a Transformer or a GAU without changing its function"
EXPERIMENTS = ("widening",)


def solved_factors() -> dict[str, sp.Expr]:
    """Three widening conditions solved with sympy: W_2 of a GELU FFN (weight and bias factors), LayerNorm's epsilon,
    and the factor on each of GAU's k copies of q and k."""
    k, a, w, b, eps, sig, f_w, f_b, q = sp.symbols("k a w b epsilon sigma f_w f_b q", positive=True)
    # W_2 of a GELU FFN: input k pure copies of a, output must be (a w + b) / sqrt(k)
    ffn2 = sp.solve([sp.Eq(k * a * f_w * w, a * w / sp.sqrt(k)), sp.Eq(f_b * b, b / sp.sqrt(k))], [f_w, f_b],
                    dict=True)[0]
    # LayerNorm / RMSNorm: a lifted input has variance sigma^2 / k; which eps keeps x / sqrt(var + eps) a copy?
    e_w = sp.symbols("epsilon_w", positive=True)
    ln_eps = sp.solve(sp.Eq(sig**2 / k + e_w, (sig**2 + eps) / k), e_w)[0]
    # GAU relu^2(q.k)^2 / (n s): k copies of a q and a k; (k a^2 qk)^2 / (n k s) = qk^2 / (n s)
    gau_a = sp.solve(sp.Eq((k * a**2 * q) ** 2 / k, q**2), a)[0]
    return {"ffn2_w": ffn2[f_w], "ffn2_b": ffn2[f_b], "eps": ln_eps, "gau": gau_a}


# the whole sentences of prose() that the chapter glues as Markdown
SENTENCES = ("stationary_summary", "dropout_summary", "saving_interval", "stationary_detail", "split_gradient")


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number the chapter states (:func:`analysis.studies.widening.figures.prose`), its verdict sentences
    (:func:`analysis.studies.widening.verdicts.verdict_facts`), the solved factors and the source's table, from the
    best run of widening."""

    best = ch.best("widening")
    solved = solved_factors()
    return sentences({
        "best_label": best.label,
        "gpu_status": ch.gpu_status("widening"),
        **prose(best.data),
        **verdict_facts(ch, best.data),
        **{f"sym_{name}": typeset(expr) for name, expr in solved.items()},
        "source_table": Markdown(table_html(best.data)),
    }, SENTENCES)


def figures(ch: Chapter) -> dict[str, Figure]:
    """Exactness of every case, and training after widening against scratch."""
    data = ch.best("widening").data
    return {"fig-widen-exact": exactness_figure(data), "fig-widen-train": training_figure(data)}
