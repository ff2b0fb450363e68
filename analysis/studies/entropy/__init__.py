"""Entropy, loss and the probability of the right answer: the entropy of the notes' spread prediction in closed form
against their summation and a 50-digit reference, where it peaks, the bound it is on the entropy of any prediction
with the same loss, checked by sampling (experiment ``entropy-bound``), and byte-level language models (Transformer,
GAU, FLASH) measured against the bound and against a Markov source of known entropy rate (experiment
``entropy-lm``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from analysis.core.mathtext import math_markdown
from analysis.core.stats import CONFIDENCE, Estimate, direction
from analysis.core.verify import verdict_phrase
from analysis.studies.display import Markdown
from analysis.studies.entropy.experiments import entropy_bound, entropy_lm
from analysis.studies.entropy.figures import (
    architecture_clouds,
    bound_sampling,
    entropy_curves,
    lm_clouds,
    markov_curve,
)
from analysis.studies.text import and_list, by_verdict
from analysis.studies.text import text_block as fenced_text
from analysis.theory import entropy as ent


if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

TITLE = "Entropy, loss and the probability of the right answer"
EXPERIMENTS = ("entropy-bound", "entropy-lm")
NOTES_EXAMPLE = (0.8, 100_000)  # the notes' example: p on the correct class, K classes
LARGE_C = 10.0  # the sampled cells from this Dirichlet concentration on are "large c", where the gap's law applies


def text_block(lines: Sequence[str]) -> Markdown:
    """Lines of plain text as a fenced ``text`` block of Markdown (monospaced, as printed), fitted to the column."""
    return Markdown(fenced_text(lines))


def plus_minus(value: float, se: float, digits: int) -> str:
    """'value ± se', both with ``digits`` decimals."""
    return f"{value:.{digits}f} ± {se:.{digits}f}"


def symbolic_lines(rows: Sequence[tuple[str, Any]], zero: Sequence[Any]) -> list[str]:
    """One 'label value' line per sympy result; ValueError unless every expression in ``zero`` is exactly 0 (the
    identity the lines show)."""
    nonzero = [z for z in zero if z != 0]
    if nonzero:
        raise ValueError(f"sympy did not reduce the identity to 0: {', '.join(map(str, nonzero))}")
    return [f"{label} {value}" for label, value in rows]


def spread_identity_lines(sym: Mapping[str, Any]) -> list[str]:
    """The K-term sum, its closed form (eq-spread-entropy) and their difference, which must simplify to 0."""
    return symbolic_lines((("direct sum :", sym["direct"]), ("closed form:", sym["closed_form"]),
                           ("difference simplifies to:", sym["difference"])), (sym["difference"],))


def grouping_identity_lines(ident: Mapping[str, Any]) -> list[str]:
    """The grouping rule H(q) = h(p) + (1-p) H(r) and H(r) = ln m - KL(r || u), each as a difference that must be 0."""
    return symbolic_lines((("H(q) - [h(p) + (1-p) H(r)]      =", ident["difference"]),
                           ("ln(m) - H(r) - KL(r || uniform) =", ident["entropy_deficit_minus_kl"])),
                          (ident["difference"], ident["entropy_deficit_minus_kl"]))


def monotone_lines(mono: Mapping[Any, Mapping[str, Any]], peaks: Mapping[Any, Mapping[str, Any]]) -> list[str]:
    """Per K: the increases of H(p, K) on the notes' p range and on [1e-12, 1], and the grid's largest H minus
    H(1/K) = ln K."""
    head = f"{'K':>8s}  {'increases on the':>16s}  {'increases on':>12s}  {'largest H on the grid':>21s}"
    notes_range = "notes' p range"
    sub = f"{'':>8s}  {notes_range:>16s}  {'[1e-12, 1]':>12s}  {'minus H(1/K) = ln K':>21s}"
    return [head, sub] + [f"{int(k):>8,d}  {int(mono[k]['increases_on_notes_range']):>16d}  "
                          f"{int(mono[k]['increases_on_full_range']):>12d}  "
                          f"{grid_gap(peaks[k]['grid_max_minus_peak']):>21s}" for k in mono]


def grid_gap(value: float) -> str:
    """A grid maximum minus the peak for the table: '0' when the grid hits the peak exactly, else '-1.1e-13'."""
    return "0" if value == 0 else f"{value:.1e}"


def increases_on_notes_range(mono: Mapping[Any, Mapping[str, Any]]) -> int:
    """How many times H(p, K) increases on the notes' p range, summed over their K (0: falling throughout)."""
    return sum(int(m["increases_on_notes_range"]) for m in mono.values())


def monotone_text(mono: Mapping[Any, Mapping[str, Any]]) -> str:
    """Whether H(p, K) ever increases on the grid of the notes' p range, as Markdown: never for any of their K, or
    how many steps increase, summed over the K."""
    increases, count = increases_on_notes_range(mono), len(mono)
    if increases == 0:
        return math_markdown(f"In the notes' range it never increases, for any of the {count} values of $K$")
    return math_markdown(f"In the notes' range it increases at {increases} steps, summed over the {count} values "
                         "of $K$")


def closest_gap(rows: Sequence[Mapping[str, Any]]) -> float:
    """The smallest gap H_max - H of any sampled distribution to the bound (eq-entropy-bound), over all cells."""
    if not rows:
        raise ValueError("no sampled cells")
    return min(float(r["min_gap"]) for r in rows)


def sampled_text(count: int, gap: float, verdict: str) -> str:
    """Where the sampled distribution closest to the bound lies (the smallest gap of :func:`closest_gap`: below,
    on or above it) and the verdict of the claim that none exceeds the bound."""
    if gap > 0:
        where = f"the one closest to the bound lies {gap:.2e} nats below it"
    elif gap < 0:
        where = f"the one farthest over the bound lies {-gap:.2e} nats above it"
    else:
        where = "the one closest to the bound lies on it"
    return (f"Of {count:,} sampled distributions, {where}: the claim that none exceeds the bound "
            f"{verdict_phrase(verdict)}")


def markov_text(excess: float, se: float, verdict: str) -> str:
    """The model's validation loss on the Markov source against the true model's on the same tokens (above, below or
    equal, ± its SE over tokens), and the verdict of the claim that it stays above."""
    where = ("equals" if excess == 0 else
             f"is {plus_minus(abs(excess), se, 4)} nats {'above' if excess > 0 else 'below'}")
    return (f"On the Markov source the model's validation loss {where} the true model's loss on the same tokens: "
            f"the claim that it stays above {verdict_phrase(verdict)}")


def range_reading(increases: int, subject: str = "their figures") -> str:
    """What the count of increases of H(p, K) on the notes' p range says of their figures, which show it falling."""
    if increases == 0:
        return f"{subject} are right about their range"
    return f"{subject} miss {increases} rises of the entropy on their range"


def predicted_gap(p: float, concentration: float, classes: int) -> float:
    """The large-c median gap to the bound, (1 - p)(m - 1) / (2(m c + 1)) with m = K - 1 (the margin's law)."""
    m = classes - 1
    return (1 - p) * (m - 1) / (2 * (m * concentration + 1))


def gap_slope_text(rows: Sequence[Mapping[str, Any]], classes: int, from_c: float = LARGE_C) -> str:
    """The log-log slope of the sampled median gap against c for c >= ``from_c`` (the range over the p of the cells),
    beside the large-c law's slope over the same cells, and the largest relative gap to the law there."""
    cells = [r for r in rows if r["concentration"] >= from_c]
    ps = sorted({r["p"] for r in cells})
    if not ps or any(len([r for r in cells if r["p"] == p]) < 2 for p in ps):
        raise ValueError(f"every p needs two concentrations of at least {from_c:g} to fit a slope")

    def slope(p: float, gap: Callable[[Mapping[str, Any]], float]) -> float:
        mine = [r for r in cells if r["p"] == p]
        return float(np.polyfit(np.log([r["concentration"] for r in mine]), np.log([gap(r) for r in mine]), 1)[0])

    measured = [slope(p, lambda r: r["median_gap"]) for p in ps]
    law = [slope(p, lambda r: predicted_gap(r["p"], r["concentration"], classes)) for p in ps]
    worst = max(abs(r["median_gap"] / predicted_gap(r["p"], r["concentration"], classes) - 1) for r in cells)
    span = (f"{min(measured):.3f}" if f"{min(measured):.3f}" == f"{max(measured):.3f}"
            else f"{min(measured):.3f} to {max(measured):.3f}")
    return (f"For c ≥ {from_c:g} the median gap has a log–log slope against c of {span} over the {len(ps)} values "
            f"of p, against {min(law):.3f} for the margin's large-c law, and differs from that law by at most "
            f"{100 * worst:.1f}%")


def lm_bound_text(snapshots: Sequence[Mapping[str, Any]], vocab: int) -> str:
    """Where a run's token cloud sits against the bound: at the first snapshot the largest gap of a plotted point and
    the median token's share of the bound, and at the last the median share and gap, with whether it fell."""
    first, last = snapshots[0], snapshots[-1]
    gap0 = float(np.max(ent.entropy_upper_bound(np.asarray(first["loss"]), vocab) - np.asarray(first["entropy"])))
    init = (f"At initialisation every plotted point lies within {gap0:.2g} nats of the bound, at a mean loss of "
            f"{first['val_loss']:.2f} against ln {vocab} = {np.log(vocab):.2f} for a uniform prediction. The median "
            f"token's entropy is {first['median_fraction_of_bound']:.1%} of the bound.")
    after = (f"after {last['step']:,} steps the median token's entropy is {last['median_fraction_of_bound']:.1%} of "
             f"the bound, {last['median_gap_to_bound']:.2f} nats below it")
    if last["median_fraction_of_bound"] < first["median_fraction_of_bound"]:
        return (f"{init} Training pulls the cloud below it: {after}. A trained model does not spread its doubt "
                "evenly, so the notes' curve is the worst case, not the typical one.")
    return f"{init} Training does not pull the cloud below it: {after}."


def trained_bound_text(arch: Mapping[str, Mapping[str, Any]]) -> str:
    """Where each architecture's median token sits against the bound, as a share of it, at the last snapshot and at
    the first: training can move it either way, so both are given."""
    names = and_list([_named(n) for n in arch])
    first, last = ([f"{100 * run['snapshots'][i]['median_fraction_of_bound']:.0f}%" for run in arch.values()]
                   for i in (0, -1))
    steps = {run["snapshots"][0].get("step", 0) for run in arch.values()}
    start = "at initialisation" if steps == {0} else f"at the first snapshot, step {min(steps)}"
    return (f"After training, the median token's entropy is {and_list(last)} of the bound for {names}, against "
            f"{and_list(first)} {start}")


def provenance_notes(notes: Sequence[str], corpus_sha256: str) -> list[str]:
    """The runs' provenance lines, the first (this build's) naming the corpus it trained on by its sha256 prefix."""
    if not notes:
        raise ValueError("no runs")
    return [f"{notes[0]}, corpus sha256 {corpus_sha256[:12]}", *notes[1:]]


def run_words(scale: str, recorded: bool, stale: bool = False) -> str:
    """'the cpu-scale record', 'the gpu-scale record (stale)', "this build's smoke-scale run"."""
    return (f"the {scale}-scale record" + (" (stale)" if stale else "") if recorded
            else f"this build's {scale}-scale run")


def shown_runs_text(shown: Sequence[tuple[str, bool, bool]]) -> str:
    """Which runs the token clouds show, from (scale, recorded, stale) of each."""
    if not shown:
        raise ValueError("no runs")
    return f"The token clouds below show {and_list([run_words(*r) for r in shown])}"


def calibration_evidence(scale: str, recorded: bool, stale: bool, recorded_scales: Sequence[str]) -> str:
    """What the calibration verdicts rest on: the best run, that a smoke run says little, and that no gpu-scale run
    has been recorded when none has."""
    if scale == "smoke":
        return ("These verdicts rest on this build's smoke-scale run, a model trained for seconds, so they say "
                "little about calibration")
    gpu = "" if scale == "gpu" or "gpu" in recorded_scales else "; no gpu-scale run has been recorded"
    return f"These verdicts rest on {run_words(scale, recorded, stale)}{gpu}"


def architectures(data: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The corpus runs by architecture: the Transformer's first, then the others in the record's order."""
    return {"Transformer": data["real"], **data.get("others", {})}


def parameters_text(arch: Mapping[str, Mapping[str, Any]]) -> str:
    """'Transformer 254,592, GAU 261,376, FLASH 261,888 parameters'."""
    return ", ".join(f"{name} {run['parameters']:,}" for name, run in arch.items()) + " parameters"


def calibration_text(snap: Mapping[str, Any]) -> str:
    """'0.070 ± 0.025 nats (SE over 160 evaluation windows)': a snapshot's mean loss minus mean entropy with the
    standard error of :func:`analysis.studies.entropy.experiments.entropy_lm.calibration_estimate`."""
    est = entropy_lm.calibration_estimate(dict(snap))
    return f"{plus_minus(est.value, est.se, 3)} nats (SE over {est.n} {est.units})"


def bound_distance_text(excess: float) -> str:
    """The largest excess H - H_max of any token over all snapshots, in words: how far below (or above) the bound
    the token closest to it (or farthest over it) lies."""
    if excess < 0:
        return f"closest token at any snapshot {-excess:.2g} below the bound"
    if excess > 0:
        return f"a token {excess:.2g} above the bound"
    return "a token on the bound"


def calibration_lines(arch: Mapping[str, Mapping[str, Any]]) -> str:
    """A Markdown bullet per architecture: its last snapshot's loss, entropy and loss - entropy (calibration, with
    its standard error over evaluation windows), and where its token closest to the bound lies at any snapshot."""
    lines = []
    for name, run in arch.items():
        late = run["snapshots"][-1]
        lines.append(f"- {name}: loss {late['val_loss']:.3f}, entropy {late['mean_entropy']:.3f}, loss - entropy "
                     f"{calibration_text(late)}, "
                     f"{bound_distance_text(max(s['max_excess_over_bound'] for s in run['snapshots']))}")
    return "\n".join(lines)


def _joined(parts: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _named(name: str) -> str:
    return "the Transformer" if name == "Transformer" else name


def calibration_key(name: str) -> str:
    """The key of the calibration claim of architecture ``name``: 'lm-calibration', 'lm-calibration-gau'."""
    return "lm-calibration" + ("" if name == "Transformer" else f"-{name.lower()}")


def calibration_verdicts(verdict: Callable[[str], str], names: Sequence[str]) -> str:
    """'holds for the Transformer, fails for GAU and holds for FLASH', or 'fails for each of the Transformer, GAU and
    FLASH' when they agree: the calibration claim's verdict per architecture (``verdict`` maps a claim key to its
    verdict), in the order of ``names``."""
    words = {name: verdict(calibration_key(name)) for name in names}
    phrase = {name: "is inconclusive" if w == "inconclusive" else w for name, w in words.items()}
    if len(names) > 1 and len(set(words.values())) == 1:
        return f"{phrase[names[0]]} for each of {_joined([_named(n) for n in names])}"
    return _joined([f"{phrase[n]} for {_named(n)}" for n in names])


def calibration_summary(judged: Sequence[tuple[str, str, float]]) -> str:
    """What the calibration verdicts say of each architecture, from (name, verdict, measured loss - entropy):
    over-confident (fails, loss above entropy), under-confident (fails, below), calibrated within the noise (holds)
    or undecided (inconclusive), grouped in the order of ``judged``."""
    def state(verdict: str, gap: float) -> str:
        """One architecture's state in words, from its verdict and the sign of its gap."""
        if verdict.startswith("holds"):
            return "calibrated within the noise"
        if verdict == "fails":
            return "over-confident" if gap > 0 else "under-confident"
        return "undecided"

    groups = by_verdict([(_named(name), state(verdict, gap)) for name, verdict, gap in judged])
    if len(groups) == 1 and len(judged) > 1:
        (word, names), = groups
        return f"at this budget {and_list(names)} are all {word}"
    parts = [f"{and_list(names)} {'is' if len(names) == 1 else 'are'} {word}" for word, names in groups]
    return "at this budget " + "; ".join(parts)


def calibration_comparison(gaps: Mapping[tuple[str, str], Estimate], confidence: float = CONFIDENCE) -> str:
    """What the paired differences of the architectures' calibration gaps (:func:`entropy_lm.calibration_gaps`)
    decide, as one family at ``confidence``: each difference by its two-sided t interval at 1 - (1 - confidence) / k
    for k differences (Bonferroni), which architecture's gap is larger than which, or that none can be told from
    another, with each difference ± its SE."""
    if not gaps:
        return "Only one architecture was run, so none is compared with another."
    each = 1.0 - (1.0 - confidence) / len(gaps)
    listed = "; ".join(f"{_named(a)} minus {_named(b)} {plus_minus(d.value, d.se, 3)}" for (a, b), d in gaps.items())
    first = next(iter(gaps.values()))
    head = (f"Paired by window, their gaps differ by: {listed} nats, ± SE over {first.n} {first.units} "
            f"({first.nu:g} df). Judged as one family, each interval at {100 * each:.3g}% (Bonferroni for "
            f"{len(gaps)} differences), ")
    resolved = [(a, b, word) for (a, b), d in gaps.items() if (word := direction(d, each)) in ("larger than",
                                                                                              "smaller than")]
    if not resolved:
        return head + "none excludes 0: no architecture is more or less over-confident than another."
    said = _joined([f"{_named(a)}'s gap is {word} {_named(b)}'s" for a, b, word in resolved])
    rest = "; no other difference is resolved from 0" if len(resolved) < len(gaps) else ""
    return f"{head}{said}{rest}."


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number and printed check the chapter states: the closed form's accuracy, the curves' monotonicity, the
    sampled gap (from the best entropy-bound run); the language model runs' provenance, and the best entropy-lm run's
    Markov excess, calibration and architectures with their calibration verdicts."""
    bound = ch.best("entropy-bound").data
    direct, mono = bound["direct"], bound["monotone"]
    runs, best_lm = ch.shown("entropy-lm"), ch.best("entropy-lm")
    notes = provenance_notes([r.note for r in runs], best_lm.data["real"]["corpus"]["sha256"])
    mk = best_lm.data["markov"]
    arch = architectures(best_lm.data)
    calib = {name: ch.claim("entropy-lm", calibration_key(name)) for name in arch}
    p, k = NOTES_EXAMPLE
    return {
        # the closed form, against sympy, the direct sum and the 50-digit reference
        "sympy_spread": text_block(spread_identity_lines(ent.symbolic_spread_entropy())),
        "direct_cases": f"{direct['cases']}",
        "direct_max_k": f"{direct['max_classes']:,}",
        "direct_over_bound": f"{direct['direct_over_bound']:.2f}",
        "direct_max_ulps": f"{direct['direct_max_ulps']:.1e}",
        "closed_max_ulps": f"{direct['closed_max_ulps']:.2f}",
        "extreme_cases": f"{direct['extreme_cases']}",
        "accuracy_verdict": verdict_phrase(ch.claim("entropy-bound", "closed-form-accuracy").verdict_text()),
        # the curves: monotone on the notes' range, peaked at p = 1/K; the notes' example
        "mono_reading": Markdown(monotone_text(mono)),
        "short_reading": Markdown(range_reading(increases_on_notes_range(mono), "The notes' figures")),
        "direct_verdict": verdict_phrase(ch.claim("entropy-bound", "closed-form-vs-direct").verdict_text()),
        "monotone_summary": text_block(monotone_lines(mono, bound["peaks"])),
        "example_h": f"{float(ent.spread_prediction_entropy(p, k)):.4f}",
        "example_l": f"{float(ent.cross_entropy_loss(p)):.4f}",
        # the bound: the grouping identity and the sampled distributions
        "sympy_grouping": text_block(grouping_identity_lines(ent.symbolic_grouping_identity(3))),
        "sampled_reading": Markdown(sampled_text(bound["sampled"]["count"], closest_gap(bound["sampled"]["rows"]),
                                                 ch.claim("entropy-bound", "bound-sampled").verdict_text())),
        "gap_slope": Markdown(gap_slope_text(bound["sampled"]["rows"], bound["sampled"]["classes"])),
        # the language model: provenance, the Markov source, calibration late in training
        "lm_runs": Markdown(shown_runs_text([(r.scale, r.recorded, bool(r.stale)) for r in runs])),
        "lm_provenance": "; ".join(notes),
        "provenance_lines": text_block(notes),
        "gpu_status": ch.gpu_status("entropy-lm"),
        "markov_reading": Markdown(markov_text(mk["excess_loss"], mk["excess_loss_se"],
                                               ch.claim("entropy-lm", "markov-floor").verdict_text())),
        "markov_tokens": f"{mk['tokens']:,}",
        "markov_true": f"{mk['true_loss']:.4f}",
        "markov_rate": f"{mk['entropy_rate']:.4f}",
        "lm_bound": Markdown(lm_bound_text(best_lm.data["real"]["snapshots"], entropy_lm.VOCAB)),
        "trained_bound": Markdown(trained_bound_text(arch)),
        # the architectures against the bound
        "arch_params": parameters_text(arch),
        "arch_label": best_lm.label,
        "arch_calibration": Markdown(calibration_lines(arch)),
        "calib_verdicts": calibration_verdicts(lambda key: ch.claim("entropy-lm", key).verdict_text(), list(arch)),
        "calib_evidence": Markdown(calibration_evidence(best_lm.scale, best_lm.recorded, bool(best_lm.stale),
                                                        [r.scale for r in runs if r.recorded])),
        "calib_summary": Markdown(calibration_summary([(n, c.verdict_text(), c.measured) for n, c in calib.items()])),
        "calib_compare": Markdown(calibration_comparison(entropy_lm.calibration_gaps(dict(arch)))),
    }


def figures(ch: Chapter) -> dict[str, Figure]:
    """The notes' curves extended, the sampled distributions under the bound, the runs' token clouds, the Markov
    source's training curve and the architectures' clouds and calibration (best run)."""
    runs, best = ch.shown("entropy-lm"), ch.best("entropy-lm")
    title = f"first-order Markov source over 26 letters, {best.scale} scale"
    return {
        "fig-curves": entropy_curves(entropy_bound.NOTES_CLASSES, entropy_bound.NOTES_P_RANGE),
        "fig-bound-sampled": bound_sampling(ch.best("entropy-bound").data["sampled"]),
        "fig-lm-cloud": lm_clouds([(r.label, r.data) for r in runs]),
        "fig-markov": markov_curve(best.data["markov"], title),
        "fig-arch": architecture_clouds(ch.best("entropy-lm").data),
    }
