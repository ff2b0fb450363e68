"""Scaled dot-product attention, heads and positions: the variance and shape of q.k, the softmax's saturation without
1/sqrt(d) against a law derived here, multi-head attention's parameter count and the symmetry of identically
initialised heads, and sinusoidal positions (the shift matrix M_k, the dot product, scores through projections,
RoPE, permutation equivariance), from experiment ``attention-basics``; and four of the notes' statements checked
against torch (cross-attention's inputs, the -1e9 mask in low precision, RMSNorm, tied embeddings), from ``notes-checks``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from analysis.core.mathtext import math_markdown
from analysis.core.stats import CONFIDENCE, t_quantile
from analysis.core.verify import verdict_phrase
from analysis.studies.attention_basics.experiments import attention_basics as ab
from analysis.studies.attention_basics.figures import head_symmetry, positions_figure, qk_saturation
from analysis.studies.display import Markdown
from analysis.studies.text import and_list, sci, verdicts_by
from analysis.theory import transformer_basics as tb

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "Scaled dot-product attention, heads and positions"
EXPERIMENTS = ("attention-basics", "notes-checks")
LAW_FROM_D = 64  # the saturated law (eq-saturation-law) is drawn from this width on, where rows saturate


def saturation_law(n: int, widths: Sequence[int], from_d: int = LAW_FROM_D) -> dict[int, float]:
    """The saturated law's median softmax-Jacobian norm 2 exp(-t), P(|q| G > t) = 1/2 (eq-saturation-law), for
    every width d >= ``from_d`` among ``widths``, with n keys."""
    return {d: tb.saturated_jacobian_median(n, d) for d in widths if d >= from_d}


def extreme_widths(rows: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The rows of the smallest and the largest width d (the first and the last of a sweep in ascending d)."""
    if not rows:
        raise ValueError("no widths")
    return min(rows, key=lambda r: r["d"]), max(rows, key=lambda r: r["d"])


def ratio_with_se(row: Mapping[str, Any]) -> str:
    """Var[q.k]/d with its standard error, 'ratio ± se' at 4 decimals."""
    return f"{row['var'] / row['d']:.4f} ± {row['var_se'] / row['d']:.4f}"


def heads_text(counts: Sequence[Mapping[str, Any]]) -> str:
    """The head counts whose parameters were counted, '1, 2, 4'."""
    return ", ".join(str(r["heads"]) for r in counts)


def mha_sentence(counts: Sequence[Mapping[str, Any]]) -> str:
    """What torch's and the book's multi-head attention count over the head counts (rows of ``mha_counts``), as a
    clause: one shared count, one count each, or torch's range over h."""
    width = (math.isqrt(counts[0]["formula"] + 1) - 1) // 2  # 4d^2 + 4d + 1 = (2d + 1)^2
    where = f"at $d = {width}$ for $h = {heads_text(counts)}$"
    torch_counts = {r["torch"] for r in counts}
    ours = {r["ours"] for r in counts}
    if len(torch_counts) > 1:
        return (f"`torch.nn.MultiheadAttention` counts from {min(torch_counts):,} to {max(torch_counts):,} "
                f"parameters {where}")
    if ours == torch_counts:
        return f"`torch.nn.MultiheadAttention` and the book's attention both count {counts[0]['torch']:,} parameters {where}"
    return (f"`torch.nn.MultiheadAttention` counts {counts[0]['torch']:,} parameters {where}, the book's attention "
            + and_list([f"{n:,}" for n in sorted(ours)]))


def cross_rows_sentence(out_len: int, tgt_len: int, src_len: int, verdict: str) -> str:
    """Whose length the cross-attention's output has, and the verdict of the notes' 'queries from the encoder'."""
    if out_len == tgt_len != src_len:
        rows = f"Its output has {out_len} rows, the decoder's length, not the encoder's {src_len}"
    elif out_len == src_len != tgt_len:
        rows = f"Its output has {out_len} rows, the encoder's length, not the decoder's {tgt_len}"
    else:
        rows = f"Its output has {out_len} rows, with {tgt_len} in the decoder and {src_len} in the encoder"
    return f"{rows}, so the claim that the queries come from the encoder {verdict}."


def rmsnorm_presence(has: bool, version: str, verdict: str) -> str:
    """The verdict of the notes' 'no official RMSNorm', with whether the installed torch has ``torch.nn.RMSNorm``."""
    found = "has" if has else "has no"
    return (f"The claim {verdict} for torch {version}, which {found} `torch.nn.RMSNorm`; torch 2.4 added it in "
            f"July 2024.")


def growth(spread: Sequence[float]) -> float:
    """How many times the head spread grew from its first to its last step; ValueError when it starts at 0."""
    if not spread or spread[0] == 0:
        raise ValueError("the spread must start above 0 to have a growth factor")
    return spread[-1] / spread[0]


def spread_text(spread: float) -> str:
    """A head spread as the prose states it: 'exactly 0' for an exact 0, else two significant figures."""
    return "exactly 0" if spread == 0 else f"{spread:.2g}"


def stability_reading(verdict: str) -> str:
    """What the stability claim's verdict says about identical heads, as one sentence."""
    if verdict == "fails":
        return "Identical heads are a fixed point of training that training moves away from."
    if verdict.startswith("holds"):
        return "Identical heads are a fixed point of training that training does not leave."
    return "This run does not tell whether training moves away from identical heads."


def unit_widths_text(scales: Sequence[Mapping[str, Any]], confidence: float = CONFIDENCE) -> str:
    """Where the token embeddings' mean square times sqrt(d) lies within its two-sided t interval of 1 (nu = rows -
    1): 'at every width', 'at every width but d = 64 and 256' or 'at no width'."""
    off = [w["d"] for w in scales
           if abs(w["token_ms"] - 1.0) > t_quantile(w["rows"] - 1, confidence) * w["token_ms_se"]]
    if not off:
        return "at every width"
    if len(off) == len(scales):
        return "at no width"
    named = [f"{d:,}" for d in off]
    return "at every width but d = " + (named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1])


def encoder_inputs(from_encoder: Mapping[str, bool]) -> str:
    """Which of the query, key and value come from the encoder, in words: 'the keys and the values'."""
    names = [f"the {name}s" for name in ("query", "key", "value") if from_encoder[name]]
    if not names:
        return "none of them"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def mask_paths_clause(m: dict[str, Any]) -> str:
    """What the two ways of applying −1e9 do in one dtype (a row of ``masked_rows``): whether ``masked_fill``
    accepts the value, and what an additive mask stores for it."""
    fill = "refuses" if m["masked_fill_error"] else "accepts"
    return f"`masked_fill` {fill} −1e9 and an additive mask turns it into {sci(float(m['stored']), 4)}"


def notes_facts(ch: Chapter) -> dict[str, Any]:
    """The numbers of the notes-checks section: cross-attention's inputs and output rows, the -1e9 mask per
    precision, and torch's RMSNorm, from the best run of notes-checks."""
    best = ch.best("notes-checks")
    d = best.data
    cross, mask, rms = d["cross"], d["masking"], d["rmsnorm"]
    half = mask["float16"]

    def said(key: str) -> str:
        return verdict_phrase(ch.claim("notes-checks", key).verdict_text())

    return {
        "nc_label": best.label,
        "cross_from": encoder_inputs(cross["from_encoder"]),
        "cross_rows": Markdown(cross_rows_sentence(cross["out_len"], cross["tgt_len"], cross["src_len"],
                                                   said("cross-q-from-encoder"))),
        "mask_fp16_error": half["masked_fill_error"] or "no error",
        "mask_fp16_paths": Markdown(mask_paths_clause(half)),
        "mask_fp16_nan": f"{half['nan_weights']} of {half['weights']}",
        "mask_bf16_stored": sci(float(mask["bfloat16"]["stored"]), 4),
        "mask_fp16_max": f"{float(half['finite_max']):,.0f}",
        "mask_finite_verdicts": verdicts_by([(name, said(f"mask-1e9-{name}")) for name in ("float32", "bfloat16")], "in"),
        "rms_presence": Markdown(rmsnorm_presence(bool(rms["has_rmsnorm"]), rms["torch"], said("no-torch-rmsnorm"))),
        "rms_gap": f"{float(rms['relative_gap']):.1e}",
        **tied_facts(d["tied"]),
        **{f"{key.replace('-', '_')}_verdict": said(key)
           for key in ("mask-1e9-float16", "mask-finfo-min", "tie-sqrt-d", "tie-logit-scale")},
    }


def tied_table(scales: list[dict[str, Any]]) -> Markdown:
    """Per width d: the token embeddings' mean square times sqrt(d) (± SE), its ratio to the positions' mean square
    with and without the factor, and the logits' mean square (± SE)."""
    head = ["$d$", "tokens' mean square $\\times\\sqrt{d}$", "tokens over positions",
            "the same without $\\sqrt{d}$", "logits' mean square"]
    rows = [[f"{w['d']:,}", f"{w['token_ms']:.4f} ± {w['token_ms_se']:.4f}", f"{w['token_ms'] / w['pe_ms']:.3f}",
             f"{w['token_ms'] / w['d'] / w['pe_ms']:.2g}", f"{w['logit_ms']:.4f} ± {w['logit_ms_se']:.4f}"]
            for w in scales]
    lines = ["| " + " | ".join(r) + " |" for r in [head, ["---:"] * len(head), *rows]]
    return Markdown("\n".join(lines))


def tied_facts(tied: dict[str, Any]) -> dict[str, Any]:
    """The tied-embedding numbers the prose states: the parameters tying saves, the table over widths, and how far
    the token-to-position ratio falls without the factor between the narrowest and the widest width."""
    par, scales = tied["parameters"], tied["scales"]
    lo, hi = scales[0], scales[-1]
    return {"tie_saved": f"{par['untied'] - par['tied']:,}", "tie_vocab": f"{tied['vocab']:,}",
            "tie_d": f"{tied['d']:,}", "tie_table": tied_table(scales),
            "tie_pe": f"{max(w['pe_ms'] for w in scales):.3f}", "tie_lo": f"{lo['d']:,}", "tie_hi": f"{hi['d']:,}",
            "tie_fall": f"{(lo['token_ms'] / lo['d']) / (hi['token_ms'] / hi['d']):.1f}",
            "tie_widths": Markdown(unit_widths_text(scales))}


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number the chapter states, from the best run of attention-basics (formatted as the prose prints it), and
    the notes' four statements checked against torch."""
    best = ch.best("attention-basics")
    d = best.data
    qk, sat, n = d["qk"], d["saturation"], d["keys"]
    worst = ab.worst_variance_row(qk)
    law = saturation_law(n, [r["d"] for r in sat])
    lo, hi = extreme_widths(sat)
    runs = d["symmetry"]["runs"]
    pert = runs["identical + 1e-6 perturbation"]
    pos, perm = d["positions"], d["permutation"]
    stable = ch.claim("attention-basics", "heads-symmetry-stable")
    tb.symbolic_checks()  # the sympy identities the prose cites (eq-pe-dot among them): raises when one fails
    return {
        "best_label": best.label,
        "gpu_status": ch.gpu_status("attention-basics"),
        # q.k: its variance (exact) and excess kurtosis (6/d)
        "qk_pairs": f"{qk[0].get('pairs', 0):,}",
        "qk_worst_d": f"{worst['d']}",
        "qk_worst_ratio": ratio_with_se(worst),
        "qk_k1": f"{qk[0]['kurtosis']:.2f} ± {qk[0]['kurtosis_se']:.2f}",
        "qk_d1": f"{qk[0]['d']}",
        "qk_pred1": f"{6 / qk[0]['d']:.2f}",
        # saturation: entropy and Jacobian norm at the largest width, with and without 1/sqrt(d)
        "sat_n": f"{n}",
        "sat_d": f"{hi['d']}",
        "sat_scaled_h": f"{hi['scaled']['entropy_mean']:.3f}",
        "sat_unscaled_h": f"{hi['unscaled']['entropy_mean']:.3f}",
        "sat_scaled_j": f"{hi['scaled']['jac_median']:.3g}",
        "sat_unscaled_j": f"{hi['unscaled']['jac_median']:.2g} ± {hi['unscaled']['jac_median_se']:.1g}",
        "sat_law": f"{law[hi['d']]:.2g}",
        "sat_ratio": f"{hi['scaled']['jac_median'] / hi['unscaled']['jac_median']:,.0f}",
        "sat_mf": f"{np.log(n) - 0.5:.3f}",
        "sat_lo_h": f"{lo['scaled']['entropy_mean']:.3f} ± {lo['scaled']['entropy_se']:.3f}",
        "sat_lo_d": f"{lo['d']}",
        "autograd_gap": f"{d['autograd_jacobian_gap']:.1e}",
        # heads: parameter count, W^V W^O merge, symmetry under training
        "mha_counts": Markdown(math_markdown(mha_sentence(d["mha"]))),
        "mha_verdict": verdict_phrase(ch.claim("attention-basics", "mha-params").verdict_text()),
        "wo_gap": f"{d['merged_wo_gap']:.1e}",
        "sym_steps": f"{runs['identical']['steps'][-1]}",
        "sym_same": spread_text(runs["identical"]["spread"][-1]),
        "same_verdict": verdict_phrase(ch.claim("attention-basics", "heads-stay-identical").verdict_text()),
        "drop_verdict": verdict_phrase(ch.claim("attention-basics", "heads-dropout").verdict_text()),
        "stable_verdict": verdict_phrase(stable.verdict_text()),
        "sym_reading": Markdown(stability_reading(stable.verdict_text())),
        "sym_drop": f"{runs['identical + attention dropout']['spread'][-1]:.2g}",
        "sym_pert0": f"{pert['spread'][0]:.1e}",
        "sym_pert1": f"{pert['spread'][-1]:.2g}",
        "sym_growth": f"{growth(pert['spread']):,.0f}",
        "sym_indep": f"{runs['independent init']['spread'][-1]:.2f}",
        # positions: M_k, the dot product, projected scores, RoPE, permutations
        "pe_err64": f"{max(pos['m_err64']):.1e}",
        "pe_err32": f"{max(pos['m_err32']):.1e}",
        "pe_own32": f"{max(pos['pe32_err_by_pos']):.1e}",
        "pe_P": f"{pos['positions']:,}",
        "pe_dot_err": f"{pos['dot_pred_err']:.1e}",
        "pe_mirror": f"{pos['dot_mirror_err']:.1e}" if pos["dot_mirror_err"] else "exactly 0",
        "pe_proj": f"{ab.projected_spread(pos):.2f}",
        "pe_proj_verdict": verdict_phrase(ch.claim("attention-basics", "pe-projected").verdict_text()),
        "pe_rope": f"{pos['rope_spread']:.1e}",
        "perm_no": f"{perm['without_pe']:.1e}",
        "perm_pe": f"{perm['with_pe']:.2f}",
        **notes_facts(ch),
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """q.k's moments and the softmax's saturation (with the saturated law), the heads' spread during training, and
    sinusoidal positions, from the best run."""
    d = ch.best("attention-basics").data
    law = saturation_law(d["keys"], [r["d"] for r in d["saturation"]])
    return {"fig-qk": qk_saturation(d, law), "fig-heads": head_symmetry(d["symmetry"]["runs"]),
            "fig-pe": positions_figure(d["positions"])}
