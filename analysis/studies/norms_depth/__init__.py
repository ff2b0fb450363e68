"""Normalisation and depth: per-token norms and incremental decoding, the notes' LayerNorm examples and RMSNorm
formula, DeepNorm's constants, the one-step update against depth for post-norm, pre-norm and DeepNorm, and whether
pre-norm trades depth for width in trained models (experiment ``norms-depth``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis.core.stats import CONFIDENCE, Estimate, mean_estimate
from analysis.core.verify import Claim, claims_table_css, verdict_phrase
from analysis.studies.chapter import typeset
from analysis.studies.display import Markdown
from analysis.studies.norms_depth.experiments import norms_depth as nd
from analysis.studies.norms_depth.figures import depth_updates, residual_streams
from analysis.studies.text import and_list, text_block
from analysis.theory import transformer_basics as tb

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "Normalisation and depth"
EXPERIMENTS = ("norms-depth",)
DEEPNORM_DEPTHS = (6, 12, 100, 1000)  # the rows of the table of DeepNorm's constants (N = M)
NAMES = {"post": "post-norm", "pre": "pre-norm", "deepnorm": "DeepNorm"}  # the residual arrangements in words
DEEPNORM_HEAD = ("N = M", "alpha (encoder- or decoder-only)", "beta", "enc-dec: encoder alpha", "encoder beta",
                 "decoder alpha", "decoder beta")


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number, table and verdict the chapter states, from the best run of norms-depth (DeepNorm's constants
    from their closed forms)."""
    best = ch.best("norms-depth")
    d = best.data
    s = nd.summary(d)
    return {
        "best_label": best.label,
        "gpu_status": ch.gpu_status("norms-depth"),
        "dec_table": decoding_table(d["decoding"]),
        "dec_sentences": Markdown(decoding_sentences(d["decoding"], ch.claim("norms-depth", "incremental-decoding"),
                                                     ch.claim("norms-depth", "mixing-norm-leaks"))),
        **norm_facts(d["norms"]),
        "ln_scale": Markdown(scale_words(ch.claim("norms-depth", "ln-scale"))),
        "ln_printed": Markdown(printed_sentence(ch.claim("norms-depth", "ln-printed"))),
        "rms_code_verdict": verdict_phrase(ch.claim("norms-depth", "rmsnorm-code").verdict_text()),
        **deepnorm_facts(),
        **depth_facts(d["depth"]),
        **stream_facts(s),
        "premise_verdict": verdict_phrase(ch.claim("norms-depth", "prenorm-cosine").verdict_text()),
        "pair_group_verdicts": two_verdicts(ch.claim("norms-depth", "prenorm-pairs-cheaper").verdict_text(),
                                            ch.claim("norms-depth", "prenorm-groups-cheaper").verdict_text(),
                                            s["gmax"]),
        "bounded_verdict": verdict_phrase(ch.claim("norms-depth", "deepnorm-bounded").verdict_text()),
        "bounded_growth": Markdown(bounded_growth(ch.claim("norms-depth", "deepnorm-bounded"))),
        "init_falls": Markdown(init_update_text(d["depth"])),
        "pre_growth": Markdown(growth_sentence(s["pre"]["norm_growth"])),
        "post_constant": Markdown(constancy_text(s["post"]["norm_growth"], s["pre"]["norm_growth"])),
        "pair_cost": Markdown(pair_cost_sentence({res: mean_estimate(nd.group_penalties(d, res, 2), "seeds")
                                                  for res in ("pre", "post")})),
        "below_post_verdict": verdict_phrase(ch.claim("norms-depth", "deepnorm-below-post").verdict_text()),
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """The update size against depth, and the residual streams of the trained pre- and post-norm models."""
    d = ch.best("norms-depth").data
    return {"fig-depth": depth_updates(d["depth"]), "fig-streams": residual_streams(d["trained"])}


# --- incremental decoding ---------------------------------------------------------------------------------------


def decoding_table(rows: list[dict[str, Any]]) -> Markdown:
    """One line per decoding model: its label and the largest relative gap between incremental and full decoding,
    under one heading."""
    width = max([len("model")] + [len(r["label"]) for r in rows])
    lines = [f"{'model':{width}s}  max relative gap"] + [f"{r['label']:{width}s}  {r['gap']:.2e}" for r in rows]
    return Markdown(text_block(lines))


def gap_of(rows: list[dict[str, Any]], word: str) -> float:
    """The decoding gap of the first model whose label contains ``word``; ValueError when none does."""
    for r in rows:
        if word in r["label"]:
            return float(r["gap"])
    raise ValueError(f"no decoding model labelled with {word!r}")


def decoding_facts(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The worst gap over the per-token models and their count, and the gaps of the norm over positions and of
    training-mode BatchNorm."""
    per_token = [r for r in rows if r["per_token"]]
    return {"dec_worst": f"{max(r['gap'] for r in per_token):.1e}", "dec_count": f"{len(per_token)}",
            "dec_seq": f"{gap_of(rows, 'positions'):.2f}", "dec_bn": f"{gap_of(rows, 'BatchNorm'):.2f}"}


def decoding_sentences(rows: list[dict[str, Any]], per_token: Claim, mixing: Claim) -> str:
    """The worst per-token gap with the verdict of incremental decoding, and the two mixing norms' gaps with the
    verdict that they leak; 'float64 rounding' only when the per-token claim holds."""
    f = decoding_facts(rows)
    size = {"holds": ", float64 rounding", "fails": ", more than float64 rounding"}.get(per_token.verdict, "")
    return (f"Across the {f['dec_count']} per-token models, the largest gap between incremental and full decoding is "
            f"{f['dec_worst']} of the largest logit{size}: the claim that they decode incrementally "
            f"{verdict_phrase(per_token.verdict_text())}. A norm over positions changes earlier outputs by "
            f"{f['dec_seq']}, and training-mode BatchNorm by {f['dec_bn']}: the claim that they leak "
            f"{verdict_phrase(mixing.verdict_text())}.")


# --- the notes' LayerNorm and RMSNorm examples ---------------------------------------------------------------


def scale_words(claim: Claim) -> str:
    """What scaling [1,2,3,4] to [2,4,6,8] does to LayerNorm's output, as a predicate: unchanged when the claim of
    invariance holds, else the gap beside the closed form's prediction with epsilon, as its corrected verdict reads."""
    gap = f"{claim.measured:.2e}"
    if claim.verdict in ("holds", "inconclusive"):
        return (f"changes the output by {gap}, and the claim that it leaves the output unchanged "
                f"{verdict_phrase(claim.verdict_text())}")
    if claim.corrected is None:
        return f"changes the output by {gap}"
    pred = f"{claim.corrected:.2e}"
    return {"holds": f"changes the output by {gap}, as the float64 closed form with ε predicts: {pred}",
            "fails": f"changes the output by {gap}, which the float64 closed form with ε, {pred}, does not explain",
            }.get(claim.corrected_verdict or "",
                  f"changes the output by {gap}, against {pred} from the float64 closed form with ε: the run "
                  "cannot tell whether ε accounts for it")


def printed_sentence(claim: Claim) -> str:
    """Whether the LayerNorm outputs the notes print match torch's, by the claim ln-printed: its largest gap against
    half a unit of the fourth printed decimal, and the reason when the run cannot decide."""
    err, tol = f"{claim.measured:.1e}", f"{claim.tolerance:.0e}"
    if claim.verdict == "holds":
        return f"The outputs the notes print match torch to {err}, within {tol}, half a unit of their fourth decimal."
    if claim.verdict == "fails":
        return (f"The outputs the notes print differ from torch by {err}, more than {tol}, half a unit of their "
                "fourth decimal.")
    return (f"The outputs the notes print differ from torch by {err}, and the claim that they match is inconclusive: "
            f"{claim.inconclusive_reason}.")


def vector_text(values: list[float]) -> str:
    """'0.3651, 0.7303, ...': a vector at four decimals, as the notes print it."""
    return ", ".join(f"{v:.4f}" for v in values)


def norm_facts(ex: dict[str, Any]) -> dict[str, str]:
    """The LayerNorm gap of the shift (the printed and scaled gaps are in :func:`printed_sentence` and
    :func:`scale_words`), the three RMSNorm versions on [1,2,3,4], the larger gap of the two implementations (the
    quoted Llama code, torch.nn.RMSNorm) to the standard x/RMS(x), and the notes' formula's gap."""
    rv, gaps = ex["rms_versions"], ex["rms_gap_to_standard"]
    return {
        "ln_gap_shift": f"{ex['gap_1234_2345']:.1g}",
        "rms_std": vector_text(rv["standard x / RMS(x)"][0]),
        "rms_notes": vector_text(rv["notes (x - mean) / RMS(x)"][0]),
        "rms_ln": vector_text(rv["LayerNorm"][0]),
        "rms_code_gap": f"{max(gaps['quoted Llama code'], gaps['torch.nn.RMSNorm']):.1e}",
        "rms_notes_gap": f"{gaps['notes (x - mean) / RMS(x)']:.2f}",
    }


# --- DeepNorm's constants ---------------------------------------------------------------------------------------


def deepnorm_row(n_layers: int) -> tuple[float, ...]:
    """N, the decoder-only (alpha, beta) and the encoder-decoder's encoder and decoder (alpha, beta) at N = M
    (DeepNet, sec. 4: :func:`analysis.theory.transformer_basics.deepnorm_constants`)."""

    e = tb.deepnorm_constants("decoder", n_layers)
    x = tb.deepnorm_constants("encoder-decoder", n_layers, n_layers)
    return (n_layers, e["alpha"], e["beta"], x["encoder_alpha"], x["encoder_beta"], x["decoder_alpha"],
            x["decoder_beta"])


def table_cell(value: float) -> str:
    """An HTML cell: a float at three decimals, an int (a depth) as it is."""
    return f"<td>{value:.3f}</td>" if isinstance(value, float) else f"<td>{value}</td>"


def deepnorm_table(depths: tuple[int, ...] = DEEPNORM_DEPTHS) -> Markdown:
    """The table of DeepNorm's constants, one row per depth, in the style of the book's tables (raw HTML), in a box
    that scrolls sideways on a phone rather than widening the page."""

    rows = ["<tr>" + "".join(table_cell(v) for v in deepnorm_row(n)) + "</tr>" for n in depths]
    return Markdown(claims_table_css() + '<div style="overflow-x: auto"><table class="claims-table"><thead><tr>'
                    + "".join(f"<th>{h}</th>" for h in DEEPNORM_HEAD) + "</tr></thead><tbody>" + "".join(rows)
                    + "</tbody></table></div>")


def deepnorm_facts() -> dict[str, Any]:
    """sympy's alpha and beta from DeepNorm's two conditions (eq-deepnorm), alpha^2 beta^2 of the encoder-decoder's
    encoder at N = M = 6, and the table of constants."""

    sym = tb.symbolic_checks()
    ed = tb.deepnorm_constants("encoder-decoder", 6, 6)
    return {"dn_alpha": typeset(sym["deepnorm_alpha"]), "dn_beta": typeset(sym["deepnorm_beta"]),
            "dn_ab_enc": f"{ed['encoder_alpha'] ** 2 * ed['encoder_beta'] ** 2:.4f}", "dn_table": deepnorm_table()}


# --- update size against depth ----------------------------------------------------------------------------------


def mean_text(pair: tuple[float, float], signed: bool = False, digits: int = 2) -> str:
    """'0.51 ± 0.06' (with a sign: '+0.633 ± 0.079'): a mean and its standard error."""
    mean, se = pair
    return f"{mean:+.{digits}f} ± {se:.{digits}f}" if signed else f"{mean:.{digits}f} ± {se:.{digits}f}"


def estimate_text(est: Estimate, signed: bool = False, digits: int = 2) -> str:
    """'0.51 ± 0.06' (:func:`mean_text` of the estimate's value and standard error), with as many decimals as the
    standard error needs for one significant digit ('0.525 ± 0.002'); '0.50, the same in every seed' when it is 0,
    and no error at all for one unit."""
    if not est.resolved:
        return f"{est.value:.{digits}f} (one {est.units.rstrip('s')}: no error estimate)"
    if est.se == 0:
        return f"{est.value:.{digits}f}, the same in every {est.units.rstrip('s')}"
    # a standard error printed as 0.00 would read as no error: widen until its first digit shows
    digits = max(digits, -math.floor(math.log10(est.se)))
    return mean_text((est.value, est.se), signed, digits)


def interval_text(est: Estimate, digits: int = 2) -> str:
    """'-0.54 ± 0.17 (SE over 2 paired seeds, 95% interval ± 2.15)': a paired or per-seed estimate with its SE, its
    units and the half width of its two-sided 95% Student-t interval ('no error estimate' for one unit)."""
    if not est.resolved:
        return f"{est.value:+.{digits}f} (one {est.units.rstrip('s')}: no error estimate)"
    return (f"{est.value:+.{digits}f} ± {est.se:.{digits}f} (SE over {est.n} {est.units}, 95% interval "
            f"± {est.half_width():.{digits}f})")


def dof_text(est: Estimate) -> str:
    """'1 degree of freedom', '2 degrees of freedom': the estimate's degrees of freedom in words."""
    nu = f"{est.nu:g}"
    return f"{nu} degree of freedom" if nu == "1" else f"{nu} degrees of freedom"


def mean_at(rows: list[dict[str, Any]], residual: str, depth: int) -> float:
    """The one-step model update at ``depth`` for ``residual``, mean over seeds."""
    return nd.mean_update(rows, residual, depth)[0]


def depth_facts(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The log-log slope of the model update against depth per residual arrangement, the depths' range, the mean
    updates at the largest depth, and post-norm's update over DeepNorm's at the smallest and the largest depth."""
    dmin, dmax = min(r["depth"] for r in rows), max(r["depth"] for r in rows)
    post_lo, post_hi = mean_at(rows, "post", dmin), mean_at(rows, "post", dmax)
    dn_lo, dn_hi = mean_at(rows, "deepnorm", dmin), mean_at(rows, "deepnorm", dmax)
    return {
        **{f"slope_{res}": estimate_text(nd.slope_estimate(rows, res)) for res in nd.RESIDUALS},
        "depth_range": f"{dmin} to {dmax}",
        "mu_post_max": f"{post_hi:.2f}",
        "mu_dn_max": f"{dn_hi:.3f}",
        "mu_pre_max": f"{mean_at(rows, 'pre', dmax):.2f}",
        "dmax": f"{dmax}",
        "dn_ratio": f"{post_hi / dn_hi:.1f}",
        "dn_ratio_lo": f"{post_lo / dn_lo:.1f}",
        "dmin": f"{dmin}",
    }


def bounded_growth(claim: Claim) -> str:
    """How DeepNorm's fitted slope reads against the bound's slope of 0, beside post-norm's (the claim's rival): 'it
    still grows, at a slope of 0.53 against post-norm's 0.51' when the bound fails, else 'it has a slope of ...'."""
    slope = f"a slope of {claim.measured:.2f} against post-norm's {claim.alternative:.2f}"
    return f"it still grows, at {slope}" if claim.verdict == "fails" else f"it has {slope}"


def init_update_text(rows: list[dict[str, Any]]) -> str:
    """Whether the mean per-sublayer update at initialisation falls from each depth to the next in each arrangement,
    with its mean over seeds at the smallest and the largest depth."""
    depths = sorted({r["depth"] for r in rows})
    means = {res: [nd.mean_update(rows, res, d, "update_init")[0] for d in depths] for res in NAMES}
    falls = [res for res, m in means.items() if all(b < a for a, b in zip(m, m[1:]))]
    rest = [res for res in NAMES if res not in falls]
    if not rest:
        head = "falls with depth in every arrangement"
    elif not falls:
        head = "does not fall from each depth to the next in any arrangement"
    else:
        head = (f"falls with depth for {and_list([NAMES[r] for r in falls])}, but not from each depth to the next "
                f"for {and_list([NAMES[r] for r in rest])}")
    spans = [f"{m[0]:.3g} to {m[-1]:.3g} for {NAMES[res]}" for res, m in means.items()]
    return f"{head}: from depth {depths[0]} to depth {depths[-1]} it goes from {and_list(spans)}"


def growth_sentence(growth: float) -> str:
    """Which way pre-norm's stream norm moves from the first sublayer to the last, from their ratio ``growth``."""
    if not math.isfinite(growth) or growth <= 0:
        raise ValueError(f"growth must be a finite ratio > 0; got {growth!r}")
    if f"{growth:.1f}" == "1.0":
        return "Its stream norm stays within 5% from the first sublayer to the last."
    if growth > 1:
        return f"Its stream norm grows {growth:.1f}-fold from the first sublayer to the last."
    return f"Its stream norm falls to {growth:.2f} of the first sublayer's by the last."


def constancy_text(post_growth: float, pre_growth: float) -> str:
    """How post-norm's stream-norm growth over the stack compares with pre-norm's, read against the notes' 'post-norm
    keeps the trunk's variance constant' (a growth of 1)."""
    quote = '"post-norm keeps the trunk\'s variance constant"'
    if abs(math.log(post_growth)) < abs(math.log(pre_growth)):
        return f"nearer the constant norm that {quote} describes than pre-norm's"
    return f"no nearer the constant norm that {quote} describes than pre-norm's"


def pair_cost_sentence(pens: dict[str, Estimate], confidence: float = CONFIDENCE) -> str:
    """Whether running pairs of sublayers side by side raises the loss, per arrangement ('pre', 'post'), by the
    one-sided lower t bound of each arrangement's mean penalty over seeds."""
    first = next(iter(pens.values()))
    if not all(e.resolved for e in pens.values()):
        return "With one seed, no cost of running pairs side by side can be resolved from 0."
    above = [NAMES[res] for res, e in pens.items() if e.lower(confidence) > 0]
    bound = f"one-sided {100 * confidence:.3g}% lower bound over {first.n} {first.units}"
    if len(above) == len(pens):
        return (f"Yet running pairs side by side is not free: in both arrangements the loss rises, with a {bound} "
                "above 0.")
    if above:
        return (f"Running pairs side by side raises the loss resolvably only for {and_list(above)}: only there is "
                f"its {bound} above 0.")
    return (f"Running pairs side by side raises the loss by no amount resolved from 0: in neither arrangement is its "
            f"{bound} above 0.")


# --- does pre-norm trade depth for width? -----------------------------------------------------------------------


def two_verdicts(pairs: str, groups: str, gmax: int) -> str:
    """Two verdicts as one predicate: 'is inconclusive for pairs and for groups of 8' when they agree, else 'holds
    for pairs and is inconclusive for groups of 8'."""
    if pairs == groups:
        return f"{verdict_phrase(pairs)} for pairs and for groups of {gmax}"
    return f"{verdict_phrase(pairs)} for pairs and {verdict_phrase(groups)} for groups of {gmax}"


def stream_facts(s: dict[str, Any]) -> dict[str, str]:
    """From :func:`analysis.studies.norms_depth.experiments.norms_depth.summary`: per residual the sequential loss, the
    penalties of groups of 2 and of the largest group and the late cosine; post-norm's stream-norm growth (pre-norm's
    is :func:`growth_sentence`); pre-norm's penalties compared with post-norm's (paired by seed, with its SE and 95% t
    interval), the seeds and the pair's degrees of freedom, the pair penalty as a share of the loss, the largest group
    and the number of sublayers."""
    out: dict[str, str] = {}
    for res in ("pre", "post"):
        r = s[res]
        out |= {f"loss1_{res}": f"{r['loss1']:.3f}", f"pen2_{res}": mean_text(r["pen2"], signed=True, digits=3),
                f"penmax_{res}": mean_text(r["penmax"], signed=True, digits=3), f"cos_{res}": f"{r['cosine']:.3f}"}
    return out | {"norm_growth_post": f"{s['post']['norm_growth']:.1f}",
                  "pen2_diff": interval_text(s["pen2_diff"], 2), "penmax_diff": interval_text(s["penmax_diff"], 2),
                  "n_seeds": f"{s['penmax_diff'].n}", "pair_df": dof_text(s["penmax_diff"]),
                  "pen_frac": f"{100 * s['pen2_share_of_loss']:.0f}%", "gmax": f"{s['gmax']}",
                  "n_sub": f"{s['sublayers']}"}
