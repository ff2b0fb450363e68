"""The softmax scale that maximises the gradient: the Jacobian identity and the mean-field maximisers for normal and
cosine scores checked exactly (experiment ``softmax-scale-checks``), the objective on finite samples against the
extreme-value plateau (``softmax-scale-mc``), a sweep of the scale in byte-level language models
(``softmax-scale-train``) and cosine attention trained on recall at fixed temperatures (``softmax-scale-recall``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis.core.mathtext import math_markdown
from analysis.core.registry import config_for
from analysis.studies.display import Markdown, sentences
from analysis.studies.softmax_scale import figures as fg, prose as pr
from analysis.studies.softmax_scale.experiments import softmax_scale_checks as sc_checks, softmax_scale_recall
from analysis.studies.softmax_scale.experiments.softmax_scale_checks import SOURCE_RANGE, large_d_limits
from analysis.studies.softmax_scale.experiments.softmax_scale_mc import exact_against_mc
from analysis.studies.text import text_block
from analysis.theory import softmax_scale as sc

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "The softmax scale that maximises the gradient"
EXPERIMENTS = ("softmax-scale-checks", "softmax-scale-mc", "softmax-scale-train", "softmax-scale-recall")


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number, sentence and table the chapter states, from the best run of each experiment (the tables of
    the Monte Carlo from all its runs)."""
    return sentences({**checks_facts(ch), **exact_facts(ch), **mc_facts(ch), **train_facts(ch), **recall_facts(ch)},
                     ("train_summary", "recall_budget"))


def checks_facts(ch: Chapter) -> dict[str, Any]:
    """The identity's checks, the normal and cosine maximisers against the source's fits, and the length rules."""

    checks = ch.best("softmax-scale-checks").data
    fits, rules, dec = checks["fits"], checks["rules"], checks["decoder"]["rows"]
    lo, hi = fits["cosine_own_range_alpha"]
    law, direction = large_d_limits(checks["large_d"]["dims"], checks["large_d"]["ratios"]["1024"])
    return {
        "jacobian_checks": Markdown(text_block(pr.jacobian_checks(sc.symbolic_jacobian_identity(3),
                                                                     checks["jacobian"]))),
        # normal scores: where alpha* lies in [2, 3], the source's fit 0.84 sqrt(ln n) on and off its range
        "alpha_band": Markdown(pr.alpha_band_sentence(
            fits["n_alpha_2"], fits["n_alpha_3"], SOURCE_RANGE,
            [float(sc.alpha_star_normal(float(n))) for n in SOURCE_RANGE])),
        "checks_summary": Markdown(math_markdown(pr.checks_summary(
            [ch.claim("softmax-scale-checks", k) for k in ("jacobian-identity", "normal-closed-form", "cosine-root")],
            [ch.claim("softmax-scale-checks", f"fit-{k}") for k in ("normal-own-range", "normal-wide-range",
                                                                     "cosine-own-range")],
            [ch.claim("softmax-scale-checks", f"exact-maximiser-{k}") for k in ("normal", "cosine-128",
                                                                               "cosine-64")]))),
        "fit_own": f"{100 * fits['normal_own']['rel_error']:+.1f}%",
        "fit_own_n": f"{fits['normal_own']['n']:,.0f}",
        "fit_wide": f"{100 * fits['normal_wide']['rel_error']:+.1f}%",
        "max_gap_normal": f"{checks['maximiser']['normal_max_rel_diff']:.1e}",
        # cosine scores: the slope in d, the fit 3.5 ln n, the range against the source's "25 to 35"
        "slope_d": f"{checks['large_d']['slope_1024_to_65536']:.3f}",
        "slope_unit": f"{checks['large_d']['slope_1024_to_65536'] - 1:.3f}",
        "slope_limit": f"{direction['limit']:.6f}",
        "law_limit": f"{law['limit']:.9f}",
        "fit_cos": f"{100 * fits['cosine_own']['rel_error']:+.1f}%",
        "cos_range": f"{lo:.1f} to {hi:.1f}",
        "cos_range_vs_source": pr.range_against_source(lo, hi),
        "mgf_gap": f"{checks['mgf']['max_rel_diff']:.1e}",
        # length rules and the decoder rule
        "dec_share": pr.and_list([f"{100 * r['share_positions_at_90pct']:.0f}%" for r in dec]),
        "dec_lengths": pr.and_list([f"{r['length']:,}" for r in dec]),
        "rules_gap": f"{pr.worst_rule_gap(rules):.2f}",
        "ei_ratio": f"{rules['entropy_invariant_ratio_min']:.2f} to {rules['entropy_invariant_ratio_max']:.2f}",
        "cos_n30": f"{rules['cosine_n_at_30']:,.0f}",
        "cos_a10": f"{rules['cosine_alpha_n10']:.1f}",
    }


def exact_facts(ch: Chapter) -> dict[str, Any]:
    """The exact expected objective: its table per score law and n, what it does (:func:`prose.exact_finding`), the
    lattice against mpmath and the Monte Carlo, and the claims' verdicts on the source's premise."""

    exact = ch.best("softmax-scale-checks").data["exact"]
    mc = exact_against_mc(ch.best("softmax-scale-mc").data)
    claims = [ch.claim("softmax-scale-checks", f"exact-maximiser-{law['law']}") for law in exact["laws"]]
    return {
        "exact_table": Markdown(text_block(pr.exact_table(exact))),
        "exact_finding": Markdown(math_markdown(pr.exact_finding(exact, [sc_checks.exact_rises(law)
                                                                         for law in exact["laws"]]))),
        "exact_verdict": Markdown(math_markdown(pr.exact_verdict(claims, [law["law"] for law in exact["laws"]]))),
        "exact_ref_gap": f"{exact['reference_max_rel_diff']:.1e}",
        "exact_ref_points": f"{exact['reference_points']}",
        "exact_h_over_l": Markdown(math_markdown(pr.h_over_limit(exact))),
        "exact_mc": Markdown(math_markdown(pr.exact_mc_sentence(ch.claim("softmax-scale-mc", "exact-vs-monte-carlo"),
                                                                mc, ch.best("softmax-scale-mc").label))),
    }


def mc_facts(ch: Chapter) -> dict[str, Any]:
    """The objective on finite samples at the largest n of normal scores (:func:`prose.largest_normal_row`), and
    the table of every run."""
    best = ch.best("softmax-scale-mc")
    row = pr.largest_normal_row(best.data["rows"])
    return {
        "mc_label": best.label,
        "mc_n": f"{row['n']:,}",
        "mc_mf": f"{row['alpha_mean_field']:.2f}",
        "mc_fs": f"{row['alpha_finite_sample']:.1f} ± {row['alpha_finite_sample_se']:.1f}",
        "mc_fs_ratio": f"{row['alpha_finite_sample'] / row['alpha_mean_field']:.2g}",
        "mc_fs_ratios": pr.value_range([r["alpha_finite_sample"] / r["alpha_mean_field"] for r in best.data["rows"]],
                                       ".2g"),
        "mc_share": f"{100 * pr.plateau_share(row):.0f}%",
        "mc_plateau": f"{row['plateau_predicted']:.2f}",
        "mc_plateau_meas": Markdown(math_markdown(pr.plateau_measured_sentence(row))),
        "mc_table": Markdown(text_block(pr.mc_table([(r.label, r.data) for r in ch.shown("softmax-scale-mc")]))),
        # the plateau law is this book's prediction: its verdicts follow it where the chapter states it
        "mc_plateau_verdict": Markdown(math_markdown(pr.by_kind(
            "Tested at $\\alpha = 4h(b_n)$ and the largest $n$, the prediction",
            *(ch.claim("softmax-scale-mc", f"finite-plateau-{kind}") for kind in ("normal", "cosine")),
            "the exact expected objective of the next section at the same $\\alpha$"))),
        "mc_argmax_verdict": Markdown(math_markdown(pr.by_kind(
            "The claim that the mean-field $\\alpha^*$ maximises a typical row",
            *(ch.claim("softmax-scale-mc", f"finite-argmax-{kind}") for kind in ("normal", "cosine"))))),
    }


def train_facts(ch: Chapter) -> dict[str, Any]:
    """The training sweep's best scales and the ranges within seed noise of them, and how many lengths the claims
    leave undecided, and whether the sweep tells the mean-field alpha* from alpha = 1
    (:func:`prose.standard_in_band`)."""
    best = ch.best("softmax-scale-train")
    return {
        "train_table": Markdown(text_block(pr.train_table(best.data))),
        "train_gpu_status": ch.gpu_status("softmax-scale-train"),
        "train_summary": pr.train_summary(best.data, best.label),
        "train_standard": Markdown(math_markdown(pr.standard_in_band(best.data))),
        "train_resolution": pr.sweep_resolution(best.data),
        "train_tally": pr.verdict_tally(ch.claims_of("softmax-scale-train"), r"train-best-dot-\d+", "lengths"),
    }


def recall_facts(ch: Chapter) -> dict[str, Any]:
    """The recall sweep's set-up, its best scales beside the predictions, what it can resolve, and its conclusion
    (:func:`prose.recall_conclusion`)."""
    rec = ch.best("softmax-scale-recall")
    cfg = config_for(softmax_scale_recall, rec.scale)
    rs = softmax_scale_recall.summary(rec.data)
    rows, pairs, g = rs["rows"], rs["pairs"], rs["growth"]
    return {
        "recall_table": Markdown(text_block(pr.recall_table(rs))),
        "recall_label": rec.label,
        "recall_k": f"{rec.data['head_dim']}",
        "recall_steps": f"{cfg.steps}",
        "recall_grid": pr.grid_text(cfg.scales),
        "recall_pairs": pr.and_list([str(p) for p in pairs]),
        "recall_seeds": f"{len(cfg.seeds)}",
        "recall_width": pr.value_range(pr.interval_widths(rs), ".3g"),
        "recall_n0": f"{g['from']}",
        "recall_n1": f"{g['to']}",
        "recall_growth_se": f"{100 * (math.exp(g['log_se']) - 1):.1f}%",
        "recall_growth_preds": f"{g['mean_field']:.2f}x (mean-field), {g['finite_sample']:.2f}x (finite-sample), "
                               f"{g['log_n']:.2f}x (log-n rule) and 1x (QK-norm)",
        "recall_conclusion": Markdown(math_markdown(pr.recall_conclusion(rs, rec.label))),
        "recall_growth_drift": Markdown(softmax_scale_recall.growth_drift_sentence(rec.data)),
        "recall_ratio": pr.value_range(pr.best_over_mean_field(rs), ".2f"),
        "recall_fs_ratio": pr.value_range([rows[p]["finite_sample"] / rows[p]["best"] for p in pairs], ".2g"),
        "recall_budget": pr.recall_budget(rs),
        "recall_acc_plateau": Markdown(math_markdown(pr.accuracy_plateau_sentence(rs))),
        "recall_growth_dof": f"{g['dof']:g}",
        "recall_loss_tally": pr.verdict_tally(ch.claims_of("softmax-scale-recall"), r"recall-best-scale-\d+",
                                              "numbers of pairs"),
        "recall_acc_tally": pr.verdict_tally(ch.claims_of("softmax-scale-recall"),
                                             r"recall-best-scale-accuracy-\d+", "numbers of pairs"),
        "recall_gpu_status": ch.gpu_status("softmax-scale-recall"),
        "recall_gpu_plan": pr.run_plan(softmax_scale_recall.CONFIGS["gpu"]),
        **published_facts(rs, rec),
    }


def published_facts(rs: dict[str, Any], rec: Any) -> dict[str, Any]:
    """Every published choice of the scale at the recall runs' own sizes (:func:`prose.published_scale_choices`), in a
    table and a summary, with the sizes it was evaluated at."""

    queries = int(rec.settings("softmax-scale-recall")["queries"])
    lengths = [p + queries for p in rs["pairs"]]  # a LookupTask's sequence: its pairs, then its queries
    choices = pr.published_scale_choices(rs, int(rec.data["head_dim"]), lengths)
    low, high = sc.qknorm_length_for_scale([10.0, 30.0])
    return {
        "published_scales": Markdown(pr.published_scales_table(rs, choices)),
        "published_scales_summary": Markdown(math_markdown(pr.published_scales_summary(rs, choices))),
        "published_lengths": pr.and_list([f"{n}" for n in lengths]),
        "published_label": rec.label,
        "qk_band_lengths": f"{low:,.0f} to {high:,.0f}",
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """The normal and cosine maximisers, the objective on finite samples at the smallest and largest n, the length
    rules, every run of the training sweep, and the recall runs."""
    checks, mc = ch.best("softmax-scale-checks").data, ch.best("softmax-scale-mc").data
    return {
        "fig-scale-normal": fg.scale_normal(checks["fits"]),
        "fig-cosine": fg.cosine_scores(checks["density"], checks["large_d"]),
        "fig-finite": fg.finite_sample_curves(mc, pr.shown_lengths(mc["rows"])),
        "fig-exact": fg.exact_objective(checks["exact"]),
        "fig-rules": fg.scale_rules(mc, checks["decoder"]),
        "fig-train": fg.training_sweep([(r.label, r.data) for r in ch.shown("softmax-scale-train")]),
        "fig-recall": fg.recall_scale(ch.best("softmax-scale-recall").data),
    }
