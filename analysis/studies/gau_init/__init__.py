"""GAU at initialisation: the moments of Swish, the entries of A and the two terms of AV at the source's reference
point, the output's RMS over a grid of n, s, widths and initialisations against the source's s nu^6 / n and the
corrected prediction, the lambda^7 law measured locally (experiment ``gau-init``), the size of each residual branch
across widths and depths (experiment ``coord-check``), and the per-position RMS of a bidirectional and a causal
layer."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis.core.stats import Estimate
from analysis.core.verify import verdict_phrase
from analysis.models.gau import GAU, GAUConfig
from analysis.studies.display import Markdown
from analysis.studies.gau_init.experiments import coord_check as cc, gau_init as gi
from analysis.studies.gau_init.figures import coord_check, gau_lambda, gau_rms_grid
from analysis.studies.text import text_block

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter
    from analysis.core.verify import Claim

TITLE = "How big is GAU at initialisation?"
EXPERIMENTS = ("gau-init", "coord-check")
POSITIONS = (1, 8, 32, 128)  # the positions whose output RMS the chapter prints, 1-based
SOURCE_BRANCH = 0.01  # the source's GAU(x) ~ 0.01 x: the branch's size relative to its input


def moments_table(moments: dict[str, dict[str, float]]) -> str:
    """One line per activation: its mean mu = E[phi(eps)] and second moment nu^2 = E[phi(eps)^2], eps ~ N(0, 1)."""
    lines = [f"{'activation':10s} {'mean mu':>20s} {'second moment nu^2':>20s}"]
    lines += [f"{name:10s} {m['mean']:20.15f} {m['second_moment']:20.15f}" for name, m in moments.items()]
    return "\n".join(lines)


def reference_table(label: str, ref: dict[str, Any]) -> str:
    """The reference grid point: A_ii, A_ij, their ratio (:func:`gau_init.entry_ratio`) and the off-diagonal row mass
    c, measured against the source's and the corrected predictions, and the RMS of the two terms of
    (AV)_i = A_ii V_i + sum_(j != i) A_ij V_j."""
    measured, source = gi.entry_ratio(ref)
    return "\n".join([
        f"{label}: d = {ref['d']}, e = {ref['e']}, s = {ref['s']}, n = {ref['n']}, LeCun",
        (f"  A_ii : measured {ref['a_diag']:.4g}   source s nu^4/n {ref['pred_a_diag_source']:.4g}   "
         f"corrected {ref['pred_a_diag']:.4g}"),
        (f"  A_ij : measured {ref['a_offdiag']:.3g}   source s mu^4/n {ref['pred_a_offdiag_source']:.3g}   "
         f"corrected {ref['pred_a_offdiag']:.3g}"),
        f"  A_ii / A_ij : measured {measured:.0f}   source nu^4/mu^4 {source:.0f}",
        (f"  row mass c = sum_(j != i) A_ij : measured {ref['row_offdiag_mass']:.3f}   "
         f"corrected {ref['pred_row_offdiag_mass']:.3f}"),
        f"  RMS of A_ii V_i {ref['av_diag_rms']:.4f}   vs   RMS of sum_(j != i) A_ij V_j {ref['av_offdiag_rms']:.4f}",
    ])


def grid_fit(grid: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How the corrected prediction fits the grid, by the ratio q = measured / predicted RMS of each point: the
    median q (the upper one of an even count), the share of points with 0.8 <= q <= 1.2, and the worst point, the
    one of largest |ln q| (the smallest q among equally bad ones). ValueError on an empty grid."""
    if not grid:
        raise ValueError("the grid has no point")
    ratios = sorted(((r["rms"] / r["pred_rms_corrected"], r) for r in grid), key=lambda t: t[0])
    worst_ratio, worst = max(ratios, key=lambda t: abs(math.log(t[0])))
    share_20 = sum(1 for q, _ in ratios if 0.8 <= q <= 1.2) / len(ratios)
    return {"median": ratios[len(ratios) // 2][0], "share_20": share_20, "worst_ratio": worst_ratio, "worst": worst}


def exponent_near_one(sweep: dict[str, Any]) -> tuple[float, float, float]:
    """The local exponent d ln RMS / d ln lambda (:func:`analysis.studies.gau_init.experiments.gau_init.local_exponents`) between the
    neighbouring lambdas whose geometric midpoint is nearest 1 (the first on ties), and its least and largest value
    over the sweep."""
    mid, exps = gi.local_exponents(sweep, "rms")
    if not len(exps):
        raise ValueError("the sweep needs at least two lambdas")
    i = int(abs(mid - 1).argmin())
    return float(exps[i]), float(exps.min()), float(exps.max())


def position_rms(positions: Sequence[int] = POSITIONS, d: int = 512, e: int = 1024, s: int = 128, n: int = 128,
                 batch: int = 4, seed: int = 0) -> dict[str, list[float]]:
    """RMS over batch and features of GAU(x) at each 1-based position, x ~ N(0, I) of shape (batch, n, d), for a
    bidirectional and then a causal layer (LeCun initialisation, torch's global generator seeded with ``seed``
    before x is drawn; the caller's generator state is kept)."""
    import torch


    out: dict[str, list[float]] = {}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        x = torch.randn(batch, n, d)
        for causal in (False, True):
            layer = GAU(GAUConfig(d=d, e=e, s=s, causal=causal))
            with torch.no_grad():
                per_position = layer(x).pow(2).mean((0, 2)).sqrt()
            out["causal" if causal else "bidirectional"] = [float(per_position[t - 1]) for t in positions]
    return out


def position_table(rms: dict[str, list[float]], positions: Sequence[int] = POSITIONS) -> str:
    """One line per layer kind: the output RMS at each of ``positions``, to three decimals."""
    where = ", ".join(str(t) for t in positions)
    return "\n".join(f"{kind:13s} RMS at positions {where}: " + ", ".join(f"{v:.3f}" for v in values)
                     for kind, values in rms.items())


VERDICT_KEYS = ("a-diag", "a-offdiag")  # the claims whose verdicts (and corrected verdicts) the prose names


def verdict_words(claim: Callable[[str], Claim], keys: Sequence[str] = VERDICT_KEYS) -> dict[str, str]:
    """'v-<key>' and 'v-<key>-corrected': the verdict of each claim ``key`` the prose names, and of its corrected
    prediction ('' when it has none), as predicates (:func:`verdict_phrase`)."""
    out = {}
    for key in keys:
        c = claim(key)
        out[f"v-{key}"] = verdict_phrase(c.verdict_text())
        out[f"v-{key}-corrected"] = verdict_phrase(c.corrected_verdict or "")
    return out


def estimate_text(est: Estimate) -> str:
    """'1.28 ± 0.09 (mean ± SE over 3 GAU stacks)'."""
    return f"{est.value:.2f} ± {est.se:.2f} (mean ± SE over {est.n} {est.units})"


def _text(block: str) -> Markdown:
    """A printed block as Markdown: a ```text fence around ``block``."""
    return Markdown(text_block(block))


def half_facts(data: dict[str, Any]) -> dict[str, str]:
    """The exponent p between lambda = 1/2 and 1 (:func:`gau_init.exponent_at_half`), the factor 2^-p and how many
    times smaller it is than the source's 2^-7."""
    p, _, _ = gi.exponent_at_half(data["sweep"], data["seeds"])
    return {"half_p": f"{p:.2f}", "half_factor": f"{2 ** -p:.2g}", "half_compare": Markdown(half_sentence(p))}


def half_sentence(p: float) -> str:
    """The measured shrinkage 2^-p between lambda = 1/2 and 1 against the source's 2^-7, and what it means for the
    paper's initialisation."""
    if p >= 7:
        return (f"That is {2 ** (p - 7):.1f} times more than 2⁻⁷, so the paper's initialisation starts GAU even closer "
                f"to the identity than the source says.")
    return (f"That is {2 ** (7 - p):.1f} times less than 2⁻⁷, so the paper's initialisation starts GAU less close to "
            f"the identity than the source says.")


def branch_sentence(median: float) -> str:
    """The causal stacks' median branch size against the source's 1% (:data:`SOURCE_BRANCH`)."""
    if median > SOURCE_BRANCH:
        return (f"That is {median / SOURCE_BRANCH:.0f} times the source's 1%, and not because the grid above was "
                f"wrong: these stacks are causal language models.")
    return f"That is within the source's 1%, at {100 * median:.2g}%."


def premise_sentence(bidir_below: float, first_causal: float) -> str:
    """Whether the near-identity premise holds for a bidirectional layer (output ``bidir_below`` times smaller than
    its unit-RMS input) and for a decoder's first row (output RMS ``first_causal``): small means below 1."""
    bidir = (f"holds for bidirectional GAU, whose output is {bidir_below:.0f} times smaller than its input"
             if bidir_below > 1 else f"fails for bidirectional GAU, whose output is {1 / bidir_below:.2g} times "
             f"its input")
    first = (f"the first row of a decoder, whose output is {first_causal:.1f} times its input"
             if first_causal >= 1 else f"the first row of a decoder, whose output is {first_causal:.2g} of its input")
    same = (bidir_below > 1) == (first_causal < 1)
    return f"The near-identity premise {bidir}, {'and for' if same else 'but not for'} {first}."


def identity_verdict(terms: float) -> str:
    """The source's A ~ (s nu^4 / n) I as a predicate: it fails when the off-diagonal terms of AV are not smaller than
    the diagonal one (``terms``, their RMS ratio)."""
    return f"fails: the off-diagonal terms of *AV* are {terms:.1f} times the diagonal one" if terms >= 1 else (
        f"holds: the off-diagonal terms of *AV* are {terms:.2g} of the diagonal one")


LAW_KEYS = ("rms-slope", "rms-corrected-grid", "lambda7", "swish-mean", "swish-second-moment")  # the laws' verdicts the prose names, without corrections
ALPHA_KEYS = ("gau-alpha-lambda7-softmax", "gau-alpha-softmax-rms")  # the GAU-α verdicts the prose names


def alpha_facts(data: dict[str, Any]) -> dict[str, str]:
    """GAU-α's init (the gau-alpha trial of gau-init): its lambda, the local exponents with relu² and with softmax,
    the softmax mode's exponent, and the measured and predicted RMS with each attention."""
    alpha = data["gau_alpha"]
    by = {norm: [r for r in alpha["rows"] if r["norm"] == norm] for norm in gi.ALPHA_NORMS}
    relu, soft = by["relu2_ns"], by["softmax_log512"]
    return {"alpha_layers": f"{alpha['layers']}", "alpha_lam": f"{relu[1]['lambda']:.3f}",
            "alpha_p_relu": f"{gi.alpha_exponent(relu, data['seeds'])[0]:.2f}",
            "alpha_p_soft": f"{gi.alpha_exponent(soft, data['seeds'])[0]:.2f}",
            "alpha_law_soft": f"{gi.alpha_exponent(soft, data['seeds'], 'pred')[0]:.2f}",
            "alpha_rms_relu": f"{relu[1]['rms']:.2g}", "alpha_rms_soft": f"{soft[1]['rms']:.3g}",
            "alpha_pred_soft": f"{soft[1]['pred']:.3g}"}


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number the chapter states: Swish's moments (quadrature, the same at every scale), the
    reference point (:func:`analysis.studies.gau_init.experiments.gau_init.summary`), the grid's fit (:func:`grid_fit`), the local
    exponent (:func:`exponent_near_one`) from the best run of gau-init, the GAU branch of the best coord-check run
    (:func:`analysis.studies.gau_init.experiments.coord_check.summary`) and the mean over its widest stacks, the
    per-position RMS (:func:`position_rms`), and the verdicts the prose names (:func:`verdict_words`)."""
    best = ch.best("gau-init")
    moments = best.data["moments"]
    summ = gi.summary(best.data)
    ref = summ["reference"]
    fit = grid_fit(best.data["grid"])
    worst = fit["worst"]
    at_1, lo, hi = exponent_near_one(best.data["sweep"])
    coord = cc.summary(ch.best("coord-check").data)
    positions = position_rms()  # POSITIONS[0] is the first row
    return {
        "best_label": best.label,
        "gpu_status": ch.gpu_status("gau-init"),
        "moments_table": _text(moments_table(moments)),
        "mu": f"{moments['swish']['mean']:.6f}",
        "nu2": f"{moments['swish']['second_moment']:.6f}",
        # the reference point: A's entries, the two terms of AV, and the output against both predictions
        "ref_table": _text(reference_table(best.label, ref)),
        "ref_where": summ["where"],
        # how many times smaller an off-diagonal entry of A is than a diagonal one: the table's ratio and the source's
        "ref_entry_ratio": f"{gi.entry_ratio(ref)[0]:.0f}",
        "src_entry_ratio": f"{gi.entry_ratio(ref)[1]:.0f}",
        "a_identity": Markdown(identity_verdict(ref["av_offdiag_rms"] / ref["av_diag_rms"])),
        "ref_rms": f"{ref['rms']:.3f}",
        "ref_src": f"{ref['pred_rms_source']:.4f}",
        "ref_cor": f"{ref['pred_rms_corrected']:.3f}",
        "ref_ratio_src": f"{summ['over_source']:.1f}",
        "ref_factor": f"{summ['times_below_input']:.0f}",
        "src_factor": f"{summ['source_times_below_input']:.0f}",
        # the grid: measured over corrected RMS
        "grid_median": f"{fit['median']:.2f}",
        "rms_slope": f"{ch.claim('gau-init', 'rms-slope').measured:.2f}",
        "grid_share20": f"{100 * fit['share_20']:.0f}%",
        "grid_worst": f"{fit['worst_ratio']:.2f} (n = {worst['n']}, s = {worst['s']}, d = {worst['d']}, "
                      f"{gi.init_words(worst['init'])} init)",
        # scaling every weight by lambda
        "exp_at_1": f"{at_1:.2f}",
        "exp_range": f"{lo:.1f} to {hi:.1f}",
        **half_facts(best.data),
        **alpha_facts(best.data),
        # coordinate checks, and the per-position RMS of a bidirectional and a causal layer
        "coord_gau": f"{coord['gau_median']:.3f}",
        "coord_where": coord["where"],
        "position_table": _text(position_table(positions)),
        "premise": Markdown(premise_sentence(summ["times_below_input"], positions["causal"][0])),
        "coord_vs_source": Markdown(branch_sentence(coord["gau_median"])),
        "coord_mean": estimate_text(cc.branch_estimate(ch.best("coord-check").data)),
        # verdicts the prose names
        **verdict_words(lambda key: ch.claim("gau-init", key)),
        **{f"v-{key}": verdict_phrase(ch.claim("gau-init", key).verdict_text()) for key in ALPHA_KEYS + LAW_KEYS},
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """The output's RMS over the grid, the lambda sweep (best gau-init run) and the coordinate checks (best
    coord-check run)."""
    best = ch.best("gau-init").data
    return {"fig-gau-grid": gau_rms_grid(best), "fig-gau-lambda": gau_lambda(best),
            "fig-coord": coord_check(ch.best("coord-check").data)}

