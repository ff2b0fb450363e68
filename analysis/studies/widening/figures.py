"""The widening chapter's figures (exactness case by case, training after widening), its table of the source's
factors and the numbers its text states, from the widening experiment's data."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.core.stats import Estimate
from analysis.core.verify import claims_table_css, fmt
from analysis.studies.plotting import readable
from analysis.studies.widening.experiments import widening as wx

COLOURS = {"placed": "#1b7f3b", "pairs": "#a36b00", "split": "#8e44ad", "scratch": "#3b5ba5", "small": "#777777"}
FLOOR = 1e-17  # a difference of exactly 0 is drawn here on the log axis


def exactness_figure(data: dict[str, Any]) -> Figure:
    """Every case's largest relative logit difference, float64 (bars) and float32 (dots), on a log axis."""
    rows = data["exactness"]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.4))
    y = np.arange(len(rows))[::-1]
    f64 = np.maximum([r["f64_rel"] for r in rows], FLOOR)
    f32 = np.maximum([r["f32_rel"] for r in rows], FLOOR)
    colours = ["#1b7f3b" if r["expected_exact"] else "#b3261e" for r in rows]
    ax.barh(y, f64, color=colours, height=0.6, left=FLOOR, label="float64")
    ax.plot(f32, y, "o", mfc="white", mec="black", ms=5, label="float32")
    ax.axvline(wx.EXACT_TOL, color="black", ls="--", lw=1)
    ax.text(wx.EXACT_TOL, len(rows) - 0.3, " rounding tolerance 1e-12", fontsize=9, va="bottom")
    ax.set_xscale("log")
    ax.set_xlim(FLOOR, 10)
    ax.set_yticks(y, [r["case"] for r in rows], fontsize=9)
    ax.set_xlabel("largest |logit difference| / largest |logit| (log scale)")
    ax.legend(loc="upper right", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return readable(fig)


ROW_NAMES = {"embedding": "Embedding", "layernorm": "LayerNorm", "attention-qk": "Attention q, k",
             "attention-vo": "Attention v, o", "ffn1": "FeedForward W<sub>1</sub>",
             "ffn2": "FeedForward W<sub>2</sub>", "output": "Output (MLM dense)",
             "head-layernorm-text": "MLM head's LayerNorm (the text, not the table)"}


PRINTED_TOL = 1e-12  # a printed factor within this of the exact one is the exact one


def printed_is_exact(tensor: dict[str, Any], tol: float = PRINTED_TOL) -> bool:
    """Whether the source's printed factor of a tensor is the exact widening's: |printed - derived| <= tol."""
    return abs(tensor["printed"] - tensor["derived"]) <= tol


def table_html(data: dict[str, Any]) -> str:
    """The source's table for k = 2, row by row: printed factor, the exact widening's factor (green where the printed
    one is exact, :func:`printed_is_exact`, red otherwise), logits as printed."""
    head = ["row of the table", "tensor", "printed factor", "exact factor", "logits with the row as printed"]
    body = []
    for row, info in data["table"]["rows"].items():
        for i, t in enumerate(info["tensors"]):
            ok = printed_is_exact(t)
            colour = "#1b7f3b" if ok else "#b3261e"
            cells = [ROW_NAMES.get(row, html.escape(row)) if i == 0 else "", f"<code>{html.escape(t['tensor'])}</code>",
                     f"{t['printed']:.6f}", f'<span style="color:{colour}">{t["derived"]:.6f}</span>',
                     f"{fmt(info['logit_rel'], 2)} relative" if i == 0 else ""]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (claims_table_css() + '<table class="claims-table"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def _mean_curve(curves: list[tuple[list[float], list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    """The seeds' curves share their evaluation steps: mean loss at each (NaN-free) point."""
    x = np.asarray(curves[0][0], dtype=float)
    y = np.nanmean(np.asarray([c[1] for c in curves], dtype=float), axis=0)
    return x, y


def training_figure(data: dict[str, Any]) -> Figure:
    """Top: validation loss against training FLOPs for the small model, the two widened arms (their FLOPs include the
    small model's) and the scratch wide model. Bottom: the copies' symmetry during training, per variant."""
    tr = data["training"]
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(9, 10))
    per_arm: dict[str, list[tuple[list[float], list[float]]]] = {}
    for seed in tr["seeds"]:
        for arm, curve in wx.curves(tr, seed).items():
            per_arm.setdefault(arm, []).append(curve)
            x, y = np.asarray(curve[0]), np.asarray(curve[1], dtype=float)
            ok = np.isfinite(y) & (x > 0)
            ax.plot(x[ok], y[ok], color=COLOURS[arm], lw=0.6, alpha=0.35)
    labels = {"small": "small model (d)", "placed": "widened exactly (RoPE placed)",
              "pairs": "widened, RoPE pairwise", "split": "widened exactly, random split",
              "scratch": "wide model from scratch (2d)"}
    for arm, curves in per_arm.items():
        x, y = _mean_curve(curves)
        ok = np.isfinite(y) & (x > 0)
        ax.plot(x[ok], y[ok], color=COLOURS[arm], lw=2, label=labels[arm] + f" ({len(curves)} seeds)")
    ax.set_xscale("log")
    ax.set_xlabel("training FLOPs spent (log scale)")
    ax.set_ylabel("validation loss (nats per byte)")
    ax.legend(fontsize=10, loc="upper right")
    ax.grid(alpha=0.3)
    ax.set_title("widening a partly trained model vs scratch", fontsize=12)
    seed0 = tr["seeds"][0]
    variants = {k: v["symmetry"] for k, v in seed0.get("variants", {}).items()}
    colours = plt.get_cmap("tab10")
    markers = "osv^Dx"
    for i, (name, sym) in enumerate(variants.items()):
        steps = np.asarray(sym["steps"])
        bx.plot(steps, np.maximum(sym["residual"], FLOOR), color=colours(i), lw=2, marker=markers[i % 6], ms=6,
                mfc="none", label=f"{name}: stream")
        bx.plot(steps, np.maximum(sym["weights"], FLOOR), color=colours(i), lw=1, ls="--", marker=markers[i % 6],
                ms=4)
    bx.axhline(1e3 * wx.EPS32, color="black", lw=1, ls=":")
    bx.text(steps[-1], 1e3 * wx.EPS32, "1000 float32 ulps", fontsize=9, ha="right", va="bottom")
    bx.set_yscale("log")
    bx.set_xlabel("training steps after widening")
    bx.set_ylabel("part outside the copied subspace (log scale)")
    bx.set_title("copies' symmetry: stream (solid), weights (dashed)", fontsize=12)
    bx.legend(fontsize=10, loc="center right")
    bx.grid(alpha=0.3)
    return readable(fig)


def _pm(mean_se: tuple[float, float], digits: int = 3) -> str:
    """'mean ± standard error' at ``digits`` decimals."""
    return f"{mean_se[0]:.{digits}f} ± {mean_se[1]:.{digits}f}"


def prose(data: dict[str, Any]) -> dict[str, str]:
    """The numbers the chapter's text states, formatted: the worst exact and broken cases (relative logit
    differences), the training comparison's losses and savings (mean ± SE over seeds), the copies' symmetry per
    variant and the gradients at a stationary point."""
    s = wx.summary(data)
    tr = data["training"]
    st = data["stationary"]
    ex = {r["case"]: r for r in data["exactness"]}
    saving, saving_se = s["saving"]
    out = {
        "exact_bert": f"{s['exact_worst']['bert']:.1e}", "exact_decoder": f"{s['exact_worst']['decoder']:.1e}",
        "exact_gau": f"{s['exact_worst']['gau']:.1e}", "exact_fraction": f"{s['exact_worst']['fraction']:.1e}",
        "exact_f32": f"{s['exact_worst_f32']:.1e}",
        "global": f"{ex['BERT, global repetition, x2']['f64_rel']:.2g}",
        "no_qk": f"{ex['BERT, without the k^(1/4) on q, k, x2']['f64_rel']:.2g}",
        "gelu_linear": f"{ex['BERT, GELU W_1 as a linear layer (w/2, b/sqrt 2), x2']['f64_rel']:.2g}",
        "eps5": f"{ex['BERT, LayerNorm eps 1e-5 kept, x2']['f64_rel']:.1e}",
        "eps12": f"{ex['BERT, LayerNorm eps 1e-12 kept, x2']['f64_rel']:.1e}",
        "eps12_ratio": f"{ex['BERT, LayerNorm eps 1e-12 kept, x2']['f64_rel'] / s['exact_worst']['bert']:.0f}",
        "pairs": f"{ex['Transformer++, RoPE pairwise repetition, x2']['f64_rel']:.2g}",
        "pairs_gau": f"{ex['GAU, RoPE pairwise repetition, x2']['f64_rel']:.2g}",
        "local": f"{ex['Transformer++, RoPE unit-wise repetition, x2']['f64_rel']:.2g}",
        "ln_fraction": f"{ex['pre-LayerNorm Transformer, learned positions, x3/2']['f64_rel']:.2g}",
        "ffn2_rows": f"{data['table']['rows']['ffn2']['logit_rel']:.2g}",
        "head_ln": f"{data['table']['rows']['head-layernorm-text']['logit_rel']:.2g}",
        "jump_pairs": _pm(s['jump']['pairs']),
        "jump_placed": f"{s['jump']['placed'][0]:.1e}",
        "first_step": f"{tr['seeds'][0]['arms']['pairs']['val_steps'][1]}",
        "final_placed": _pm(s['final']['placed']),
        "final_scratch": _pm(s['final']['scratch']),
        "saving": f"{100 * saving:.0f}% ± {100 * saving_se:.0f}%",
        "saving_split": f"{100 * s['saving_split'][0]:.0f}% ± {100 * s['saving_split'][1]:.0f}%",
        "final_split": _pm(s['final']['split']),
        "gap_first": _pm(s['pairs_gap']['first']),
        "gap_final": _pm(s['pairs_gap']['final']),
        "val_copies": f"{s['variant_val'].get('exact copies', math.nan):.3f}",
        "val_split": f"{s['variant_val'].get('split', math.nan):.3f}",
        "val_noise": f"{s['variant_val'].get('noise', math.nan):.3f}",
        "val_unit": f"{s['variant_val'].get('unit dropout', math.nan):.3f}",
        "val_resid": f"{s['variant_val'].get('residual dropout', math.nan):.3f}",
        "sym_steps": f"{data['training']['seeds'][0].get('variants', {}).get('split', {}).get('val_steps', [0])[-1]}",
        "seeds": f"{len(tr['seeds'])}", "small_steps": f"{tr['seeds'][0]['small']['val_steps'][-1]}",
        "wide_after": f"{tr['wide_after']}", "wide_steps": f"{tr['seeds'][0]['arms']['scratch']['val_steps'][-1]}",
        "flops_ratio": f"{s['flops_ratio']:.2f}",
        "small_params": f"{tr['small_params']:,}", "wide_params": f"{tr['wide_params']:,}",
        "sym_copy": f"{s['symmetry_copy']:.1e}",
        "sym_split": f"{s['symmetry_variants'].get('split', math.nan):.2g}",
        "sym_noise": f"{s['symmetry_variants'].get('noise', math.nan):.2g}",
        "sym_attn": f"{s['symmetry_variants'].get('attention dropout', math.nan):.1e}",
        "sym_unit": f"{s['symmetry_variants'].get('unit dropout', math.nan):.1e}",
        "w_unit": f"{s['weight_variants'].get('unit dropout', math.nan):.2g}",
        "sym_resid": f"{s['symmetry_variants'].get('residual dropout', math.nan):.2g}",
        "dropout_summary": dropout_summary(s["symmetry_variants"]),
        "w_placed": f"{s['weights_placed']:.2g}",
        "init_split": f"{s['variant_initial'].get('split', math.nan):.1e}",
        "init_noise": f"{s['variant_initial'].get('noise', math.nan):.2g}",
        "grad_identity": f"{st['gradient_identity_rel']:.1e}",
        **stationary_sentences(st["gradient_identity_rel"], st["gradient_identity_rel32"]),
        "grad_small": f"{st['grad_small']:.2e}", "grad_copy": f"{st['grad_copy']:.2e}",
        "grad_split": f"{st['grad_split']:.2e}", "memo_loss": f"{st['loss_small']:.3f}",
        "memo_steps": f"{st['memo_steps']}",
        "split_gradient": split_gradient_sentence(st["grad_split_linear"], st["grad_copy_linear"]),
        **saving_sentences(wx.saving_estimate(data)),
    }
    return out


def saving_sentences(est: Estimate, published: float = wx.BERT2BERT_SAVING) -> dict[str, str]:
    """What the chapter says of the measured saving: its 95% Student-t interval over seeds, whether that interval holds
    0 and the published saving, the smallest difference the run detects, and the seeds that would tell 0 from the
    published saving at this seed spread."""
    if not est.resolved:
        return {"saving_interval": f"With {est.n} seed there is no error estimate, so the saving is not judged.",
                "seeds_basis": "one seed per arm: no error estimate"}
    half = est.half_width()
    lo, hi = est.value - half, est.value + half
    contains = [f"{v:.0%}" for v in (0.0, published) if lo <= v <= hi]
    excludes = [f"{v:.0%}" for v in (0.0, published) if not lo <= v <= hi]
    words = (f"contains {' and '.join(contains)}" if contains else "contains neither 0% nor the published saving") + (
        f" and excludes {' and '.join(excludes)}" if contains and excludes else "")
    return {"saving_interval": (f"Its 95% Student-t interval over {est.n} seeds ({est.nu:g} df), {lo:.0%} to "
                                f"{hi:.0%}, {words}; the run detects a saving differing by {est.detectable():.0%} "
                                f"with 80% power, and {wx.seeds_to_tell(est, published)}."),
            "seeds_basis": (f"each mean is judged by its 95% Student-t interval over the {est.n} seeds "
                            f"({est.nu:g} df, ±{est.half_width() / est.se:.3g} SE)" if est.se > 0 else
                            f"each mean is judged by its 95% Student-t interval over the {est.n} seeds")}


DROPOUT_SITES = {"attention dropout": "on the attention weights", "unit dropout": "on the FFN's hidden units",
                 "residual dropout": "on the sublayers' outputs (BERT's residual dropout)"}


def split_at(stream: Mapping[str, float], names: Mapping[str, str], threshold: float) -> tuple[list[str], list[str]]:
    """The names of the measured variants of ``names`` whose stream residual after training is above ``threshold``
    (they break the copies' symmetry), then those at or below it; variants not measured are left out."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1); got {threshold!r}")
    measured = {k: v for k, v in stream.items() if k in names and math.isfinite(v)}
    return ([names[k] for k, v in measured.items() if v > threshold],
            [names[k] for k, v in measured.items() if v <= threshold])


def dropout_summary(stream: dict[str, float], threshold: float = wx.BROKEN_SYMMETRY) -> str:
    """Which dropout sites break the copies' symmetry: a stream residual after training (outside the copied subspace,
    relative) above ``threshold`` breaks it, one at or below leaves the stream copied; sites not measured are left
    out."""
    breaks, keeps = split_at(stream, DROPOUT_SITES, threshold)
    if not breaks and not keeps:
        return "No dropout variant was trained."
    parts = ([f"dropout {' or '.join(keeps)} leaves the stream copied"] if keeps else []) + (
        [f"dropout {' or '.join(breaks)} breaks it" if keeps else f"dropout {' or '.join(breaks)} breaks the copies"]
        if breaks else [])
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def split_gradient_sentence(split: float, copy: float) -> str:
    """How far a random split moves the widened model from stationary: the ratio of its linear weights' gradient norm
    ``split`` to the exact widening's ``copy``, and the change in percent it means."""
    if not (math.isfinite(split) and math.isfinite(copy)) or split < 0 or copy <= 0:
        raise ValueError(f"split must be a finite norm >= 0 and copy one > 0; got {split!r} and {copy!r}")
    ratio = split / copy
    text = f"On the linear weights its gradient norm is {ratio:.4f} times the exact widening's"
    if f"{ratio:.4f}" == "1.0000":
        return f"{text}: the split leaves the model as far from stationary as exact copies do."
    side = "farther from" if ratio > 1 else "closer to"
    return f"{text}: the split moves the model {abs(ratio - 1):.2%} {side} stationary."


def stationary_sentences(gap: float, gap32: float) -> dict[str, str]:
    """What the chapter says of the stationary-point identity: the wide gradient equals the lifted small one to
    ``gap`` (relative, float64) against the rounding floor gap32 * 2^-29 that the float32 check predicts, within or
    beyond the allowance, as :func:`analysis.studies.widening.experiments.widening.stationary_claim` decides."""
    if not math.isfinite(gap) or gap < 0:
        raise ValueError(f"gap must be a finite relative difference >= 0; got {gap!r}")
    floor = wx.rounding_floor(gap32)
    claim = wx.stationary_claim({"gradient_identity_rel": gap, "gradient_identity_rel32": gap32}, "")
    allowance = wx.ROUNDING_ALLOWANCE
    scaled = (f"The same check in float32 misses by {gap32:.1e}; rounding error shrinks with the unit roundoff, "
              f"by 2⁻²⁹ from float32 to float64, which predicts a float64 floor of {floor:.1e}. The float64 gap is "
              f"{gap / floor:.1f} times that floor")
    if claim.verdict == "holds":
        return {"stationary_detail": f"{scaled}, within the allowance of {allowance:g} set in advance for the two "
                                     "precisions' kernels: the gap is rounding, and the wide gradient vanishes exactly "
                                     "where the small one does.",
                "stationary_summary": "They also keep a stationary point stationary."}
    return {"stationary_detail": f"{scaled}, beyond the allowance of {allowance:g} set in advance for the two "
                                 "precisions' kernels: a gap that does not shrink with precision is not rounding.",
            "stationary_summary": "They do not keep a stationary point exactly stationary: the float64 gap is larger "
                                  "than rounding explains."}
