"""The softmax-scale chapter's decisions and sentences, each a function of the runs' data: which rows the prose quotes,
which rule the recall growth is nearest to, what the training sweeps can tell apart, and the tables the chapter
prints."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from analysis.core.stats import t_quantile
from analysis.core.verify import verdict_phrase
from analysis.studies.softmax_scale.experiments.softmax_scale_train import best_setting, detectable_loss, noise_band
from analysis.theory import softmax_scale as sc
from analysis.studies.text import and_list

# the rival growths of the best recall scale from the fewest to the most pairs (key of the summary's growth, or a
# fixed ratio): QK-norm practice keeps s = sqrt(k) at every n, so it predicts no growth
RIVAL_GROWTHS: tuple[tuple[str, str | float], ...] = (
    ("the mean-field alpha*", "mean_field"),
    ("the finite-sample maximiser", "finite_sample"),
    ("the log-n rule", "log_n"),
    ("QK-norm practice (no growth)", 1.0),
)
SOURCE_COSINE_RANGE = (25.0, 35.0)  # the source's "25 to 35" for cosine scores at d = 128, n = 40 to 20,000


class Verdict(Protocol):
    """What :func:`verdict_tally` and :func:`group_verdict` read of a claim: its key and its verdict."""

    key: str
    verdict: str


def jacobian_checks(symbolic: object, jacobian: dict[str, Any]) -> str:
    """The identity (eq-jacobian-l1) checked twice: sympy's residual for three classes, and autograd's largest
    relative gap over random (n, alpha, s)."""
    return (f"sympy, n = 3: {symbolic}\n"
            f"autograd, {jacobian['trials']} random (n, alpha, s): largest relative gap {jacobian['max_rel_diff']:.1e}")


def range_against_source(lo: float, hi: float, source: tuple[float, float] = SOURCE_COSINE_RANGE) -> str:
    """How far the ends of the source's range lie from the exact range [lo, hi] of alpha*, in per cent of each end:
    100 (source_end / exact_end - 1)."""
    return f"{100 * (source[0] / lo - 1):+.0f}% and {100 * (source[1] / hi - 1):+.0f}%"


def shown_lengths(rows: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """The smallest and the largest n among the Monte Carlo's rows: the two lengths the finite-sample figure draws."""
    if not rows:
        raise ValueError("rows must not be empty")
    ns = sorted({int(r["n"]) for r in rows})
    return ns[0], ns[-1]


def largest_normal_row(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The Monte Carlo row of normal scores with the largest n (the first such row on a tie): the one the prose
    quotes."""
    normal = [r for r in rows if r["kind"] == "normal"]
    if not normal:
        raise ValueError("rows must hold at least one row of normal scores")
    return max(normal, key=lambda r: r["n"])


def plateau_share(row: dict[str, Any]) -> float:
    """The objective at the mean-field alpha* as a fraction of the plateau h(b_n) of eq-plateau."""
    return float(row["objective_at_mean_field"] / row["plateau_predicted"])


def mc_table(runs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Per run (label, data) of the Monte Carlo, one line per (scores, n): the mean-field alpha*, the typical row's
    maximiser with its standard error, and the plateau h(b_n) predicted and measured."""
    lines: list[str] = []
    for label, data in runs:
        lines += [label, f"  {'scores':6s} {'n':>7s}  {'mean-field':>10s}  {'typical row':>14s}   "
                         "h(b_n): pred., measured"]
        lines += [f"  {r['kind']:6s} {r['n']:7d}  {r['alpha_mean_field']:10.2f}  {r['alpha_finite_sample']:7.2f} ± "
                  f"{r['alpha_finite_sample_se']:4.2f}   {r['plateau_predicted']:6.2f}, {r['plateau_measured']:5.2f} ± "
                  f"{r['plateau_measured_se']:.2f}" for r in data["rows"]]
    return "\n".join(lines)


def worst_rule_gap(rules: dict[str, Any]) -> float:
    """The larger of the two largest gaps from the mean-field alpha* over n = 100 to 1e4: the source's fit
    0.84 sqrt(ln n) and Scalable-Softmax's s ln n."""
    return max(rules["fit_gap_100_1e4"], rules["ssmax_gap_100_1e4"])


def train_lengths(data: dict[str, Any]) -> list[int]:
    """The context lengths of the training sweep, ascending."""
    return sorted({r["ctx"] for r in data["runs"]})


def train_table(data: dict[str, Any]) -> str:
    """Per context length L: the dot-product alpha with the lowest mean validation loss (with its seed standard
    error), the mean-field alpha*(L/2), and the scales the learned cosine runs ended at."""
    lines = []
    for ctx in train_lengths(data):
        value, loss, se = best_setting(data, ctx, "dot")
        pred = data["predictions"][str(ctx)]["dot_alpha_mean_field"]
        learned = [r["final_scale"] for r in data["runs"] if r["ctx"] == ctx and r["learned"]]
        lines.append(f"L = {ctx}: best dot alpha {value:g} (loss {loss:.3f} ± {se:.3f}); mean-field alpha*(L/2) = "
                     f"{pred:.2f}; learned cosine scale(s) {', '.join(f'{x:.1f}' for x in learned)}")
    return "\n".join(lines)


def train_summary(data: dict[str, Any], label: str) -> str:
    """The best dot-product alpha per context length, then the band of alpha within seed noise of it (paired loss
    differences within their 95% Student-t interval) once for all lengths that share it, in the words the lengths'
    claims state it (:meth:`analysis.studies.softmax_scale.experiments.softmax_scale_train.NoiseBand.words`); then
    the run's label."""
    lengths = train_lengths(data)
    best = and_list([f"α = {best_setting(data, ctx, 'dot')[0]:g} at L = {ctx}" for ctx in lengths])
    groups: dict[str, list[int]] = {}
    for ctx in lengths:
        groups.setdefault(noise_band(data, ctx, "dot").words(), []).append(ctx)
    bands = [f"At {which_lengths(ctxs, lengths)}, {words}." for words, ctxs in groups.items()]
    return f"The lowest loss is at {best}. " + " ".join(bands) + f" Data: {label}."


def standard_in_band(data: dict[str, Any]) -> str:
    """Whether the sweep can tell the mean-field alpha*(L/2) from the standard alpha = 1: the lengths whose band
    within seed noise (:func:`noise_band`) holds both, alpha = 1 among its values and alpha* inside its range."""
    lengths = train_lengths(data)
    both = [ctx for ctx in lengths if 1.0 in (band := noise_band(data, ctx, "dot")).close
            and band.lo <= data["predictions"][str(ctx)]["dot_alpha_mean_field"] <= band.hi]
    if not both:
        return ("At no length does the band within seed noise contain both the mean-field $\\alpha^*(L/2)$ and the "
                "standard $\\alpha = 1$.")
    return (f"At {which_lengths(both, lengths)} the band within seed noise contains the mean-field $\\alpha^*(L/2)$ "
            "and also the standard $\\alpha = 1$, so the sweep cannot tell the mean-field rule from no rule at all.")


def which_lengths(chosen: Sequence[int], lengths: Sequence[int]) -> str:
    """'both lengths' or 'all 3 lengths' when ``chosen`` holds every one of several ``lengths``, else 'L = 32' or
    'L = 32 and 128'."""
    if len(chosen) == len(lengths) > 1:
        return every(len(lengths), "lengths")
    return "L = " + and_list([f"{ctx:,}" for ctx in chosen])


def every(total: int, unit: str) -> str:
    """'1 of the 1 lengths', 'both lengths' or 'all 3 lengths': all of ``total`` things of ``unit``, a plural noun."""
    return f"1 of the 1 {unit}" if total == 1 else "both " + unit if total == 2 else f"all {total} {unit}"


def verdict_tally(claims: Iterable[Verdict], pattern: str, unit: str) -> str:
    """The verdicts of the claims whose key matches ``pattern`` (a regular expression, whole key) as predicates,
    most common first: 'fails at 3 of the 3 numbers of pairs', 'is inconclusive at 1 and holds at 1 of the 2
    lengths'."""
    chosen = [c.verdict for c in claims if re.fullmatch(pattern, c.key)]
    if not chosen:
        raise ValueError(f"no claim's key matches {pattern!r}")
    counts = sorted(((chosen.count(v), v) for v in dict.fromkeys(chosen)), key=lambda cv: -cv[0])
    if len(counts) == 1:
        return f"{verdict_phrase(counts[0][1])} at {every(len(chosen), unit)}"
    return and_list([f"{verdict_phrase(v)} at {n}" for n, v in counts]) + f" of the {len(chosen)} {unit}"


def grid_text(scales: Sequence[float]) -> str:
    """The recall sweep's grid of cosine scales in words: how many, the first and the last."""
    return f"{len(scales)} values from {scales[0]:.3g} to {scales[-1]:.3g} in steps of √2"


def recall_table(summary: dict[str, Any]) -> str:
    """Per number of pairs: the best scale by loss with its 95% Student-t interval over seeds, the scales at which
    the accuracy is tied at its best, how far the best by loss moved over the second half of training, and every
    prediction."""
    lines = []
    for p in summary["pairs"]:
        r = summary["rows"][p]
        lines.append(f"{p:3d} pairs, mean row length m = {r['row_length']:.3g}: best s = {r['best']:.3g} "
                     f"(95%: {r['lo']:.3g} to {r['hi']:.3g}); accuracy {accuracy_tie(r)},")
        lines.append(f"    moved {100 * r['drift']:+.1f}% over the second half of training; predicted: "
                     f"mean-field {r['mean_field']:.3g}, finite-sample {r['finite_sample']:.3g}, 3.5 ln m "
                     f"{r['log_n']:.3g}, sqrt(k) {r['qk_norm']:.3g}")
    return "\n".join(lines)


def accuracy_tie(row: dict[str, Any]) -> str:
    """'tied at 100% from 2.83 to 8 (4 grid scales)' for a summary row: where every seed's held-out accuracy equals
    its best; one scale alone when no scale ties for every seed."""
    share = f"{100 * (1 - row['accuracy_error']):.4g}%"
    if not row["accuracy_tied"]:
        return f"best on average at {row['accuracy_lo']:.3g}, {share}, no scale tied for every seed"
    if row["accuracy_points"] == 1:
        return f"at {share} for every seed at {row['accuracy_lo']:.3g} alone"
    return f"tied at {share} from {row['accuracy_lo']:.3g} to {row['accuracy_hi']:.3g} ({row['accuracy_points']} grid scales)"


def accuracy_plateau_sentence(summary: dict[str, Any]) -> str:
    """What the accuracy shows: the scales at which it is tied at its best per number of pairs, their extent as a
    factor, and how far the tie reached at half the budget."""
    pairs = summary["pairs"]
    rows = [summary["rows"][p] for p in pairs]
    if not all(r["accuracy_tied"] and r["accuracy_points"] > 1 for r in rows):
        ties = "; ".join(f"{p} pairs: {accuracy_tie(r)}" for p, r in zip(pairs, rows))
        return f"The held-out accuracy per number of pairs: {ties}."
    shares = {f"{100 * (1 - r['accuracy_error']):.4g}%" for r in rows}
    share = shares.pop() if len(shares) == 1 else "its best share"
    spans = [f"{r['accuracy_lo']:.3g} to {r['accuracy_hi']:.3g}" for r in rows]
    factors = value_range([r["accuracy_hi"] / r["accuracy_lo"] for r in rows], ".2g")
    half = [r["accuracy_half_points"] if r["accuracy_half_tied"] else 0 for r in rows]
    widened = all(h < r["accuracy_points"] for h, r in zip(half, rows))
    return (f"The accuracy has no peak. Every seed answers {share} of the held-out queries at every grid scale from "
            f"{and_list(spans)}, for {and_list([str(p) for p in pairs])} pairs: a factor of {factors} in $s$. Inside "
            "such a tie accuracy cannot rank scales, so the tie is the finding, not its first scale. At half the "
            f"budget it covered "
            f"{and_list([f'{grid_scales(h)} at {p} pairs' for h, p in zip(half, pairs)])}"
            + (": it widened with training." if widened else "."))


def grid_scales(count: int) -> str:
    """'no grid scale', '1 grid scale' or '4 grid scales'."""
    return "no grid scale" if count == 0 else "1 grid scale" if count == 1 else f"{count} grid scales"


# the rivals as the chapter typesets them (names of RIVAL_GROWTHS)
TYPESET = {"the mean-field alpha*": "the mean-field $\\alpha^*$"}


def value_range(values: Iterable[float], fmt: str) -> str:
    """'min to max' of ``values``, each written with the format ``fmt``."""
    chosen = list(values)
    return f"{min(chosen):{fmt}} to {max(chosen):{fmt}}"


def interval_widths(summary: dict[str, Any]) -> list[float]:
    """Per number of pairs, the width hi / lo of the best scale's 95% Student-t interval (a factor)."""
    return [summary["rows"][p]["hi"] / summary["rows"][p]["lo"] for p in summary["pairs"]]


def best_over_mean_field(summary: dict[str, Any]) -> list[float]:
    """Per number of pairs, the best scale over the mean-field alpha*(m, k)."""
    return [summary["rows"][p]["best"] / summary["rows"][p]["mean_field"] for p in summary["pairs"]]


def rival_growths(growth: dict[str, Any]) -> dict[str, float]:
    """Each rule's predicted growth of the best scale from the fewest to the most pairs (:data:`RIVAL_GROWTHS`)."""
    return {name: float(growth[key]) if isinstance(key, str) else key for name, key in RIVAL_GROWTHS}


def distances(measured: float, log_se: float, rivals: dict[str, float]) -> dict[str, float]:
    """How far the measured growth lies from each rival's, in standard errors of its logarithm:
    |ln(measured / rival)| / se (measured floored at 1e-9, se at 1e-12)."""
    return {name: abs(math.log(max(measured, 1e-9) / v)) / max(log_se, 1e-12) for name, v in rivals.items()}


def nearest_rival(measured: float, log_se: float, rivals: dict[str, float]) -> tuple[str, float]:
    """The rival growth nearest the measured one in standard errors of its logarithm (:func:`distances`), and that
    distance; on a tie, the rival named first."""
    if not rivals:
        raise ValueError("rivals must not be empty")
    dist = distances(measured, log_se, rivals)
    name = min(dist, key=lambda k: dist[k])
    return name, dist[name]


def recall_conclusion(summary: dict[str, Any], label: str) -> str:
    """The measured growth of the best scale and the nearest rival growth (:func:`nearest_rival`), with the run's
    label."""
    g = summary["growth"]
    nearest, distance = nearest_rival(g["measured"], g["log_se"], rival_growths(g))
    return (f"The best scale grows by {g['measured']:.2f}x from {g['from']} to {g['to']} pairs ({label}). Of the rival "
            f"growths, the nearest is {TYPESET.get(nearest, nearest)}'s, {distance:.1f} standard errors away.")


def recall_budget(summary: dict[str, Any]) -> str:
    """Whether the loss optimum still moves with the training budget (said after its drift): the numbers of pairs at
    which it moved over the second half of training by more than its interval (``moving``), and what that
    decides."""
    loss = [str(p) for p in summary["pairs"] if summary["rows"][p]["moving"]]
    if loss:
        return (f"Over the second half of training the optimum moved by more than its interval at {and_list(loss)} "
                "pairs: there it still moves with the budget, the claim is inconclusive, and a run that trains until "
                "it stops moving decides it.")
    return ("Over the second half of training the optimum moved by less than its interval at every number of pairs, "
            "so the loss verdicts stand at this budget.")


class RecallPlan(Protocol):
    """What :func:`run_plan` reads of a recall configuration."""

    steps: int
    pairs: tuple[int, ...]
    seeds: tuple[int, ...]


def run_plan(cfg: RecallPlan) -> str:
    """A recall configuration's budget in words: steps, numbers of pairs, seeds and the t multiple of its 95%
    intervals over those seeds."""

    m = len(cfg.seeds)
    pairs = ", ".join(str(p) for p in cfg.pairs[:-1]) + f" and {cfg.pairs[-1]}" if len(cfg.pairs) > 1 else str(cfg.pairs[0])
    interval = f"its intervals are ± {t_quantile(m - 1):.2f} standard errors" if m > 1 else "no error estimate"
    return f"{cfg.steps:,} steps at {pairs} pairs with {m} seeds ({m - 1} degrees of freedom: {interval})"


# --- the exact objective -------------------------------------------------------------------------------------------

EXACT_LAW_WORDS = {"normal": "normal scores", "cosine-128": "cosines in $d = 128$", "cosine-64": "cosines in $d = 64$"}


def exact_table(exact: dict[str, Any]) -> str:
    """Per score law and n: the mean-field alpha*, the exact objective there as a share of its limit L_n, the alphas
    where it reaches 90% and 99% of L_n in units of alpha*, L_n, and the extreme-value level h(b_n) it replaces."""
    lines = [f"{'scores':10s} {'n':>6s} {'alpha*':>7s}  {'F(alpha*)/L_n':>13s}  {'a90/alpha*':>10s}  "
             f"{'a99/alpha*':>10s}  {'L_n':>7s}  {'h(b_n)':>7s}"]
    for law in exact["laws"]:
        for r in law["rows"]:
            star = r["alpha_star"]
            lines.append(f"{law['law']:10s} {r['n']:6d} {star:7.3g}  {r['at_star'] / r['limit']:13.3f}  "
                         f"{r['share_alpha']['0.9'] / star:10.2f}  {r['share_alpha']['0.99'] / star:10.2f}  "
                         f"{r['limit']:7.4g}  {r['plateau_h']:7.4g}")
    return "\n".join(lines)


def exact_ranges(exact: dict[str, Any]) -> dict[str, str]:
    """Over every law and n: the share of L_n reached at alpha*, and where 90% and 99% of L_n are reached (multiples
    of alpha*), each as 'min to max'."""
    rows = [r for law in exact["laws"] for r in law["rows"]]
    return {
        "share": value_range([100 * r["at_star"] / r["limit"] for r in rows], ".0f"),
        "at90": value_range([r["share_alpha"]["0.9"] / r["alpha_star"] for r in rows], ".2g"),
        "at99": value_range([r["share_alpha"]["0.99"] / r["alpha_star"] for r in rows], ".2g"),
    }


def h_over_limit(exact: dict[str, Any]) -> str:
    """How far the extreme-value level h(b_n) lies above the exact limit L_n over the table: the range of h/L_n and
    the n where it is nearest, as a sentence."""
    rows = [r for law in exact["laws"] for r in law["rows"]]
    ratios = [r["plateau_h"] / r["limit"] for r in rows]
    nearest = rows[int(np.argmin(ratios))]
    return (f"The extreme-value level $h(b_n)$ of the plateau law lies above the exact limit $L_n$ by a factor of "
            f"{value_range(ratios, '.3g')} over the table, nearest at $n$ = {nearest['n']:,}.")


def exact_finding(exact: dict[str, Any], rises: Sequence[bool]) -> str:
    """What the exact objective does, per score law, from the test of :func:`softmax_scale_checks.exact_rises`
    (``rises``, one per law): no finite maximiser where it rises on the whole grid, stays below L_n and approaches it
    from below; else the laws where it does not."""
    laws = [EXACT_LAW_WORDS[law["law"]] for law in exact["laws"]]
    ns = [r["n"] for r in exact["laws"][0]["rows"]]
    top = exact["laws"][0]["rows"][0]["alpha_over_star"][-1]
    r = exact_ranges(exact)
    if all(rises):
        return (f"For {and_list(laws)}, and every $n$ from {ns[0]:,} to {ns[-1]:,}, the exact objective rises at "
                f"every step of a grid up to ${top:g}\\,\\alpha^*$, stays below $L_n$ and approaches it from below, "
                f"$D_n < 0$. It has no finite maximiser: its supremum is $L_n$, reached only as "
                f"$\\alpha\\to\\infty$. At the mean-field $\\alpha^*$ it reaches {r['share']}% of $L_n$. It reaches "
                f"90% of $L_n$ at {r['at90']} times $\\alpha^*$, and 99% at {r['at99']} times $\\alpha^*$.")
    bad = [w for w, ok in zip(laws, rises) if not ok]
    return (f"For {and_list(bad)} the exact objective does not rise monotonically to $L_n$ on the grid: the table "
            "gives its values, and its maximiser is not decided here.")


def exact_verdict(claims: Sequence[Verdict], laws: Sequence[str]) -> str:
    """The verdict of the source's premise, that the expected objective peaks at alpha*, per score law, in words, built
    from the exact-maximiser claims (one per law, in the order of ``laws``); where it fails for every law, what
    follows for the source's alpha*."""

    by: dict[str, list[str]] = {}
    for claim, law in zip(claims, laws):
        by.setdefault(verdict_phrase(claim.verdict), []).append(EXACT_LAW_WORDS[law])
    parts = [f"{verb} for {and_list(words)}" for verb, words in by.items()]
    head = f"The source's premise, that the expected objective peaks at $\\alpha^*$, {'; it '.join(parts)}."
    if set(by) != {"fails"}:
        return head
    return (head + " The source's $\\alpha^*$ is therefore a property of its mean-field approximation, not of "
            "softmax attention. Read exactly, the criterion asks for ever sharper attention, with returns that fade "
            "within a few $\\alpha^*$.")


# --- published scale choices ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScaleChoice:
    """One choice of the cosine scale s for the recall runs: its name and source, its rule on the scale s, and its
    value at each number of pairs (``text`` overrides how a value is written, for an interval)."""

    name: str
    rule: str
    values: tuple[float, ...]
    text: tuple[str, ...] = ()
    key: str = ""  # 'exact', 'trained-loss', 'trained-accuracy' for the rows other sentences read

    def cells(self) -> list[str]:
        """The values as the table writes them."""
        return list(self.text) if self.text else [f"{v:.3g}" for v in self.values]


def published_scale_choices(summary: dict[str, Any], head_dim: int, lengths: Sequence[int]) -> list[ScaleChoice]:
    """Every published choice of the scale, evaluated at the recall runs' head width k, mean row lengths m and
    sequence lengths L (one per number of pairs), on the cosine scale s: a dot-product multiplier c of q.k/sqrt(k)
    is s = c sqrt(k), its value at |q| = |k| = sqrt(k). Then the source's mean-field alpha*(m, k), where the exact
    objective reaches 90% of its limit, and the trained optimum (lowest loss, its 95% interval; the accuracy's tie)."""

    pairs = summary["pairs"]
    rows = [summary["rows"][p] for p in pairs]
    m = np.array([r["row_length"] for r in rows])
    root = math.sqrt(head_dim)
    return [
        ScaleChoice("standard $1/\\sqrt{d}$, Vaswani et al. 2017", "$\\sqrt{k}$", tuple(np.full(m.shape, root))),
        ScaleChoice("QK-norm's initial scale, Henry et al. 2020", "$\\log_2(L^2 - L)$",
                    tuple(sc.qknorm_initial_scale(np.asarray(lengths, dtype=float)))),
        ScaleChoice("entropy-invariant, Su 2021", "$\\sqrt{k}\\,\\log_{512} m$",
                    tuple(root * sc.entropy_invariant_scale(m))),
        ScaleChoice("GAU-α's softmax_plus, Su et al. 2022", "$\\sqrt{k}\\,\\ln\\max(m, 16)/\\ln 512$",
                    tuple(root * sc.gau_alpha_factor(m))),
        ScaleChoice("log-length scaling, Chiang and Cholak 2022", "$\\sqrt{k}\\,\\ln m$",
                    tuple(root * sc.log_length_factor(m))),
        ScaleChoice("the source's rounded rule $2.5/\\sqrt{d}$, Su 2023", "$2.5\\sqrt{k}$",
                    tuple(np.full(m.shape, 2.5 * root))),
        ScaleChoice("the source's cosine fit for $d = 128$, Su 2023", "$3.5\\ln m$", tuple(r["log_n"] for r in rows)),
        ScaleChoice("AM-Softmax, Wang et al. 2018", "$30$", tuple(np.full(m.shape, 30.0))),
        ScaleChoice("SimCSE, Gao et al. 2021", "$1/\\tau = 20$", tuple(np.full(m.shape, 20.0))),
        ScaleChoice("mean-field maximiser, Su 2023", "$\\alpha^*(m, k)$", tuple(r["mean_field"] for r in rows)),
        ScaleChoice("exact objective, no maximiser: where it reaches 90% of its limit", "$\\alpha_{90}(m, k)$",
                    tuple(sc.exact_alpha_at_share("cosine", 0.9, float(v), head_dim) for v in m), key="exact"),
        ScaleChoice("trained: lowest held-out loss, this book", "95% interval over seeds",
                    tuple(r["best"] for r in rows),
                    tuple(f"{r['best']:.3g}, {r['lo']:.3g} to {r['hi']:.3g}" for r in rows), key="trained-loss"),
        ScaleChoice("trained: accuracy tied at its best, this book", "every scale of the tie",
                    tuple(r["accuracy_centre"] for r in rows),
                    tuple(f"{r['accuracy_lo']:.3g} to {r['accuracy_hi']:.3g}" for r in rows), key="trained-accuracy"),
    ]


def choice(choices: Sequence[ScaleChoice], key: str) -> ScaleChoice:
    """The row of ``choices`` with ``key``."""
    for c in choices:
        if c.key == key:
            return c
    raise ValueError(f"key must name a row of the choices; got {key!r}")


def exact_over_trained(choices: Sequence[ScaleChoice]) -> list[float]:
    """Per number of pairs, where the exact objective reaches 90% of its limit over the trained loss optimum."""
    return [a / b for a, b in zip(choice(choices, "exact").values, choice(choices, "trained-loss").values)]


def published_scales_table(summary: dict[str, Any], choices: Sequence[ScaleChoice]) -> str:
    """Markdown: per choice its rule and its scale at each number of pairs, and at how many numbers of pairs it
    lies inside the trained loss interval and inside the accuracy's tie (blank for the trained rows)."""
    pairs = summary["pairs"]
    rows = [summary["rows"][p] for p in pairs]
    head = ("| choice | $s$ | " + " | ".join(f"{p} pairs, $m = {r['row_length']:.3g}$" for p, r in zip(pairs, rows))
            + " | in the loss interval | in the accuracy tie |")
    lines = [head, "|---|---|" + "---:|" * len(pairs) + "---:|---:|"]
    for c in choices:
        trained = c.key.startswith("trained")
        inside = ("", "") if trained else (
            f"{sum(r['lo'] <= v <= r['hi'] for v, r in zip(c.values, rows))} of {len(pairs)}",
            f"{sum(r['accuracy_lo'] <= v <= r['accuracy_hi'] for v, r in zip(c.values, rows))} of {len(pairs)}")
        lines.append(f"| {c.name} | {c.rule} | " + " | ".join(c.cells()) + f" | {inside[0]} | {inside[1]} |")
    return "\n".join(lines)


def published_scales_summary(summary: dict[str, Any], choices: Sequence[ScaleChoice]) -> str:
    """Which choices lie inside the trained loss interval at every number of pairs, at some, or at none; how many
    lie inside the accuracy's tie at every number of pairs; and where the exact objective reaches 90% of its limit
    against the trained optimum (:func:`exact_over_trained`)."""
    rows = [summary["rows"][p] for p in summary["pairs"]]
    chosen = [c for c in choices if not c.key.startswith("trained")]
    count = {c.name: sum(r["lo"] <= v <= r["hi"] for v, r in zip(c.values, rows)) for c in chosen}
    every = [n for n, k in count.items() if k == len(rows)]
    some = [n for n, k in count.items() if 0 < k < len(rows)]
    tie = sum(all(r["accuracy_lo"] <= v <= r["accuracy_hi"] for v, r in zip(c.values, rows)) for c in chosen)
    def lie(names: Sequence[str]) -> str:
        return f"{and_list(names)} {'lies' if len(names) == 1 else 'lie'}"

    loss = (f"{lie(every)} inside the trained loss interval at every number of pairs" if every else
            "no choice lies inside the trained loss interval at every number of pairs")
    part = f"; {lie(some)} inside it at some but not all" if some else "; no other choice lies inside it at any"
    ratios = exact_over_trained(choices)
    sharper = ("sharper" if min(ratios) > 1 else "blunter" if max(ratios) < 1 else "neither sharper nor blunter")
    return (f"Of the {len(chosen)} choices, {loss}{part}. {tie} of the {len(chosen)} lie inside the accuracy's tie at "
            "every number of pairs, which therefore cannot rank them. The exact objective reaches 90% of its limit "
            f"at {value_range(ratios, '.2g')} times the trained loss optimum: the gradient criterion, read exactly, "
            f"asks for {sharper} attention than training picks.")


def alpha_band_sentence(n_low: float, n_high: float, source_range: tuple[int, int], alpha_ends: Sequence[float]) -> str:
    """Whether the source's 'alpha* in [2, 3] over a fairly large range' covers its own plotted n range: alpha* is in
    [2, 3] for n in [``n_low``, ``n_high``] (eq-alpha-normal); ``alpha_ends`` is alpha* at the range's two ends."""
    lo, hi = source_range
    head = f"$\\alpha^*$ lies in $[2, 3]$ for $n$ from {n_low:,.0f} to {n_high:,.0f}"
    if n_low <= lo and hi <= n_high:
        return f"{head}, which contains the source's whole plotted range, $n$ = {lo:,} to {hi:,}, as the source says."
    start, end = max(lo, n_low), min(hi, n_high)
    part = f"only for $n$ from {start:,.0f} to {end:,.0f}" if start <= end else "nowhere"
    return (f"{head}. Over the source's plotted range, $n$ = {lo:,} to {hi:,}, $\\alpha^*$ runs from "
            f"{alpha_ends[0]:.2f} to {alpha_ends[1]:.2f}: it is in $[2, 3]$ {part}.")


class KindClaim(Protocol):
    """What :func:`by_kind` reads of a claim: its verdict in words and its corrected prediction's verdict."""

    corrected_verdict: str | None

    def verdict_text(self) -> str:
        """The verdict in words."""


def by_kind(subject: str, normal: KindClaim, cosine: KindClaim, corrected: str = "") -> str:
    """The verdicts of one claim for normal and for cosine scores as sentences on ``subject``: 'holds for both kinds
    of score', or 'holds for normal scores but fails for cosines'; then, for a kind where it does not hold and has a
    corrected prediction, that prediction's verdict (``corrected`` names it)."""
    n, c = verdict_phrase(normal.verdict_text()), verdict_phrase(cosine.verdict_text())
    head = (f"{subject} {c} for both kinds of score." if n == c else
            f"{subject} {n} for normal scores but {c} for cosines.")
    fixes = [f" For {kind} its corrected prediction, {corrected}, {verdict_phrase(claim.corrected_verdict)}."
             for kind, claim in (("normal scores", normal), ("cosines", cosine))
             if claim.corrected_verdict and not claim.verdict_text().startswith("holds")]
    return head + "".join(fixes)


def plateau_measured_sentence(row: dict[str, Any]) -> str:
    """The Monte Carlo mean at alpha = 4 h(b_n) of a row, and on which side of the plateau h(b_n) it lies, in its
    standard errors."""
    measured, predicted, se = row["plateau_measured"], row["plateau_predicted"], row["plateau_measured_se"]
    side = ("equal to it" if f"{measured:.2f}" == f"{predicted:.2f}" else
            f"{abs(measured - predicted) / se:.1f} standard errors {'below' if measured < predicted else 'above'} it")
    return f"At $\\alpha = 4h$ the measured mean is {measured:.2f} ± {se:.2f}, {side}."


def exact_mc_sentence(claim: KindClaim, mc: dict[str, Any], label: str) -> str:
    """The claim that the exact objective is the Monte Carlo mean, its verdict, and the evidence: the largest distance
    over the points in standard errors against the Bonferroni bound, and how far the mean-field rival lies."""
    side = "under" if mc["max_z"] <= mc["critical"] else "over"
    return (f"Against the Monte Carlo ({label}), the claim that the exact objective is the mean over sampled rows "
            f"{verdict_phrase(claim.verdict_text())}. Its largest distance over {mc['points']} points is "
            f"{mc['max_z']:.2f} standard errors, {side} the Bonferroni bound {mc['critical']:.2f}. The mean-field "
            f"objective lies at least {mc['rival_min_z']:.0f} standard errors from the same means at $\\alpha^*$.")


def group_verdict(claims: Sequence[Verdict]) -> str:
    """The verdicts of a group of claims as a plural predicate: 'hold', 'fail', 'are inconclusive', or 'hold in 2 of
    the 3 cases, fail in 1' when they differ."""
    plural = {"holds": "hold", "fails": "fail", "inconclusive": "are inconclusive"}
    verdicts = [c.verdict for c in claims]
    if not verdicts:
        raise ValueError("claims must not be empty")
    if len(set(verdicts)) == 1:
        return plural.get(verdicts[0], verdicts[0])
    counts = sorted(((verdicts.count(v), v) for v in dict.fromkeys(verdicts)), key=lambda cv: -cv[0])
    inside = {"holds": "hold in", "fails": "fail in", "inconclusive": "are inconclusive in"}
    first, *rest = counts
    return (f"{inside[first[1]]} {first[0]} of the {len(verdicts)} cases, "
            + ", ".join(f"{inside[v].removeprefix('are ')} {n}" for n, v in rest))


def checks_summary(exact: Sequence[Verdict], fits: Sequence[Verdict], literal: Sequence[Verdict]) -> str:
    """The theory's checks in one passage: the identity and closed forms, the source's fits as exact forms, and the
    exact objective's maximiser."""
    return (f"The identity and the closed-form maximisers {group_verdict(exact)}. The source's fits "
            f"{group_verdict(fits)} as exact forms. The step everything rests on, the mean-field replacement, is "
            f"tested by the exact objective's maximiser, and the claims that it peaks at the mean-field $\\alpha^*$ "
            f"{group_verdict(literal)}.")


def sweep_resolution(data: dict[str, Any]) -> str:
    """What the training sweep resolves over its lengths: the range of loss differences it detects with 80% power
    (:func:`detectable_loss`) and the largest difference from the best it measured."""
    found = [detectable_loss(data, ctx, "dot") for ctx in train_lengths(data)]
    small, large, measured = min(f[0] for f in found), max(f[1] for f in found), max(f[2] for f in found)
    return (f"detects loss differences of {small:.2g} to {large:.2g} nats with 80% power, and the largest it "
            f"measured from the best is {measured:.2g}")
