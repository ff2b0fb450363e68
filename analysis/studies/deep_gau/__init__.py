"""Deep GAU without warmup: post-norm GAU stacks against post-norm, pre-norm and DeepNorm Transformers of equal
parameters, each trained at every learning rate of a grid with and without warmup, and the largest learning rate at
which every seed trains against depth (experiment ``deep-gau``); and stacks of up to ten thousand layers at
initialisation, at LeCun's scale and at half of it (experiment ``deep-gau-init``). It cites the previous chapter's records of
``gau-init`` and ``coord-check`` for the size of GAU's output at initialisation."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis.core.verify import verdict_phrase
from analysis.studies.chapter import recorded
from analysis.studies.deep_gau.experiments import deep_gau as dg
from analysis.studies.deep_gau.figures import deep_dynamics, deep_gau
from analysis.studies.deep_gau.init_depth import depth_facts
from analysis.studies.display import Markdown
from analysis.studies.gau_init.experiments import coord_check, gau_init
from analysis.studies.text import text_block

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter, RunSet

TITLE = "Deep GAU without warmup"
EXPERIMENTS = ("deep-gau", "deep-gau-init")
LOSSES = (("post", "t0"), ("pre", "p0"), ("deepnorm", "n0"))  # residual -> glue suffix of the Transformers' losses


def facts(ch: Chapter) -> dict[str, Any]:
    """Every number, table and sentence the chapter states, from the best run of deep-gau and the previous
    chapter's records of gau-init and coord-check (not re-run here)."""

    best = ch.best("deep-gau")
    s = dg.summary(best.data)
    return {
        "best_label": best.label,
        "gpu_status": ch.gpu_status("deep-gau"),
        **threshold_facts(s),
        **previous_facts(recorded("gau-init", ch.directory), recorded("coord-check", ch.directory)),
        "deep_boundaries": Markdown(text_block(boundary_table(s))),
        "deep_d": f"{s['depth']}",
        "deep_2d": f"{2 * s['depth']}",
        "deep_d0": f"{s['depths'][0]}",
        "deep_depth_verdict": verdict_phrase(ch.claim("deep-gau", "gau-lr-depth").verdict_text()),
        "deep_warmup_verdict": verdict_phrase(ch.claim("deep-gau", "gau-lr-no-warmup").verdict_text()),
        **loss_facts(s),
        # sentences, glued as Markdown so that they read as prose
        "deep_failures": Markdown(failure_sentence(s)),
        "deep_gradients": Markdown(gradient_sentence(s)),
        "deep_drift": Markdown(drift_sentence(s)),
        "deep_gpu_reach": Markdown(gpu_reach(int(best.settings("deep-gau")["steps"]), dg.CONFIGS["gpu"])),
        **depth_facts(ch),
    }


def gpu_reach(steps: int, gpu: dg.Config) -> str:
    """What the gpu configuration can decide beside a run of ``steps`` steps: its depths, width, steps and seeds, and
    what its single seed (a fixed margin for 'trained') or its length (no longer than twice this run's) leaves open."""
    seeds = len(gpu.seeds)
    text = (f"The gpu configuration trains d = {gpu.d} at depths {' and '.join(str(d) for d in gpu.depths)} "
            f"(Transformer layers; twice as many GAU layers) for {gpu.steps} steps, with {seeds} "
            f"seed{'' if seeds == 1 else 's'} per setting: it puts the boundary's fall with depth to a wider, deeper "
            "model.")
    if seeds == 1:
        text += (" With one seed, whether a run trained is read against a fixed margin below the unigram entropy, "
                 "not against a seed spread, and no comparison of two settings has an error estimate.")
    if gpu.steps < 2 * steps:
        text += (f" Its {gpu.steps} steps are less than twice this run's {steps}, so a run that stalls at this "
                 "budget is not told apart from one that would train later: that needs a longer run than the "
                 "campaign affords.")
    return text


def figures(ch: Chapter) -> dict[str, Figure]:
    """The stability boundary against depth, the loss against the learning rate and the update sizes at init; the
    training loss and gradient norm against the step at the largest depth."""
    data = ch.best("deep-gau").data
    return {"fig-deep": deep_gau(data), "fig-deep-dynamics": deep_dynamics(data)}


def threshold_facts(s: dict[str, Any]) -> dict[str, str]:
    """The corpus's unigram entropy, the margin below it that a run must reach to count as trained (three seed
    spreads: unigram entropy - threshold) and the grid's step between neighbouring learning rates."""
    return {"deep_margin": f"{s['unigram'] - s['threshold']:.2g}", "deep_unigram": f"{s['unigram']:.3f} nats/byte",
            "deep_step": f"{s['grid_step']:.3g}"}


def previous_facts(init: RunSet, coord: RunSet) -> dict[str, str]:
    """From the previous chapter's runs: how many times smaller than its input a bidirectional GAU layer's output
    is (measured and per the source) and where, the median GAU branch in causal language models and where, and
    which runs these are."""

    init_sum, coord_sum = gau_init.summary(init.data), coord_check.summary(coord.data)
    return {"prev_bidir": f"{init_sum['times_below_input']:.0f}",
            "prev_source": f"{init_sum['source_times_below_input']:.0f}",
            "prev_larger": ("larger than" if init_sum["times_below_input"] < init_sum["source_times_below_input"]
                            else "no larger than"),
            "prev_where": init_sum["where"],
            "prev_coord": f"{coord_sum['gau_median']:.2f}",
            "prev_coord_where": coord_sum["where"],
            "prev_half_p": (f"{gau_init.exponent_at_half(init.data['sweep'], init.data['seeds'])[0]:.2f}"
                            if "sweep" in init.data else "not measured"),
            "prev_provenance": runs_phrase({"gau-init": init, "coord-check": coord})}


def runs_phrase(runs: dict[str, RunSet]) -> str:
    """'gau-init and coord-check, both recorded at cpu scale', or each run named with its own phrase when they
    differ: which runs a sentence's numbers come from."""
    names = list(runs)
    phrases = {r.phrase for r in runs.values()}
    joined = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
    if len(phrases) == 1:
        return f"{joined}, {'both ' if len(names) == 2 else 'all ' if len(names) > 2 else ''}{phrases.pop()}"
    parts = [f"{n} ({r.phrase})" for n, r in runs.items()]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def warmup_label(warmup: int) -> str:
    """'no warmup' for 0 steps, 'warmup 50 steps' otherwise."""
    return "no warmup" if warmup == 0 else f"warmup {warmup} steps"


def boundary_table(s: dict[str, Any]) -> str:
    """The boundaries of :func:`analysis.studies.deep_gau.experiments.deep_gau.summary`: a line per architecture and warmup, the
    largest learning rate at which every seed trains at each depth (0: none)."""
    depths = ", ".join(str(d) for d in s["depths"])
    lines = [f"largest learning rate that trains every seed (0: none) at depths {depths} (layers)"]
    for name, by_warmup in s["boundaries"].items():
        for w, bounds in by_warmup.items():
            lines.append(f"  {name:22s} {warmup_label(w):16s}: " + ", ".join(f"{b:.2g}" for b in bounds))
    return "\n".join(lines)


def loss_facts(s: dict[str, Any]) -> dict[str, str]:
    """At the largest depth without warmup, each architecture's best validation loss, GAU's against each
    Transformer's (paired by seed, 95% Student-t interval, from the summary) and the interval's words."""
    out = {"deep_g0": f"{s['gau']['val_loss']:.3f}"}
    for residual, short in LOSSES:
        out[f"deep_{short}"] = f"{s[residual]['val_loss']:.3f}"
        out[f"deep_vs_{short}"] = s[f"gau_vs_{residual}"]
    gap = next((g for g in s.get("gaps", {}).values() if g is not None), None)
    out["deep_interval"] = ("no error estimate (one seed)" if gap is None or not gap.resolved else
                            f"a 95% Student-t interval over {gap.n} {gap.units} ({gap.nu:g} df, "
                            f"±{gap.half_width() / gap.se:.3g} SE)" if gap.se > 0 else
                            f"a 95% Student-t interval over {gap.n} {gap.units}")
    return out


def count_word(n: float) -> str:
    """A count as prose: 'none' for 0, else the number."""
    return "none" if n == 0 else f"{n:.0f}"


def stalled_words(stalled: int, flat: int) -> str:
    """How many runs stalled and how many of them at the context-free loss: 'none stalled', '41 stalled, all of them
    at the context-free loss', '1 stalled, at the context-free loss', '78 stalled, 70 of them at ...'."""
    if stalled == 0:
        return "none stalled"
    if flat == stalled:
        where = "at the context-free loss" if stalled == 1 else "all of them at the context-free loss"
    elif stalled == 1:
        where = "above the context-free loss"
    else:
        where = f"{count_word(flat)} of them at the context-free loss"
    return f"{count_word(stalled)} stalled, {where}"


def failure_sentence(s: dict[str, Any]) -> str:
    """'In 240 steps, 90 of the 192 runs did not train: none diverged, 12 were slow and 78 stalled, 70 of them at the
    context-free loss. No training loss rose above 1.05 times the first.' (without half-budget losses: how many ended
    at the context-free loss and how many above it)."""
    f = s["failures"]
    head = (f"In {f['steps']} steps, {f['failed']} of the {f['runs']} runs did not train: "
            f"{count_word(f['diverged'])} diverged, ")
    tail = f" No training loss rose above {f['peak']:.2f} times the first."
    if not math.isfinite(f.get("slow", math.nan)):
        return (head + f"{count_word(f['context_free'])} ended at the context-free loss and {count_word(f['above'])} "
                "above it." + tail)
    # what "slow" and "stalled" mean is said in the prose before this sentence
    slow = "none was slow" if f["slow"] == 0 else f"{f['slow']:.0f} {'was' if f['slow'] == 1 else 'were'} slow"
    return head + f"{slow} and {stalled_words(f['stalled'], f['stalled_flat'])}." + tail


def gradient_sentence(s: dict[str, Any]) -> str:
    """The gradient norms before clipping at the largest depth without warmup (the summary's ``grads``): each
    architecture's first-step norm, how far post-norm GAU's rose and how it ended; empty without recorded norms."""
    g = s["grads"]
    gau = g["post-norm GAU"]
    if not math.isfinite(gau["first"]):
        return ""
    parts = [f"{g[name]['first']:.3g} for the {name}" for name in g if name != "post-norm GAU"]
    others = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    diverged = s["failures"]["diverged"]
    rise = (f"GAU's rises to {gau['peak']:.3g} times its first by step {gau['peak_step']:.0f}" if gau["peak"] > 1 else
            "GAU's never exceeds its first")
    return (f"Every run clips the gradient norm at 1. Before the clip, at depth {s['depth']} without warmup, the "
            f"first step's gradient norm is {gau['first']:.3g} for post-norm GAU, against {others} (medians over seeds "
            f"and learning rates). {rise}; after the first tenth of the budget no GAU run exceeds {gau['late_peak']:.2g} times its first, and over "
            f"the last tenth the median norm is {gau['final']:.2g}." + _trained_clip_words(gau)
            + (" The clip is not what bounds an update: AdamW divides each gradient by its running "
               "RMS, so a weight moves by about the learning rate per step, clipped or not; clipping changes how much "
               "one step's gradient weighs in the running moments." if diverged == 0 else ""))


def _trained_clip_words(g: dict[str, float]) -> str:
    """What the clip does to the GAU runs that trained: their last-tenth median norm and the share of their steps
    clipped; empty when none trained."""
    n = int(g.get("trained_n", 0))
    if n == 0 or not math.isfinite(g.get("trained_final", math.nan)):
        return " No GAU run at that depth trained."
    return (f" That median mixes the runs that stalled, whose gradients vanish, with the {n} that trained: these end "
            f"at a median of {g['trained_final']:.2g} and are clipped at {100 * g['trained_clipped']:.0f}% of "
            "their steps.")


def drift_sentence(s: dict[str, Any]) -> str:
    """Which boundaries at the largest depth moved between half the budget and its end (each architecture with and
    without warmup), with both values; empty without half-budget losses."""
    half = s.get("half_boundaries")
    if not half:
        return ""
    moved, kept, zero = [], 0, False
    for name, by_warmup in s["boundaries"].items():
        for w, bounds in by_warmup.items():
            before, after = half[name][w][-1], bounds[-1]
            if before == after:
                kept += 1
            else:
                moved.append(f"{name}, {warmup_label(w)} ({before:.2g} to {after:.2g})")
                zero = zero or 0 in (before, after)
    where = f"Between step {s['half_step']} and step {s['failures']['steps']}, the boundaries at depth {s['depth']}"
    if not moved:
        return f"{where} did not move, for every architecture with and without warmup."
    note = " (0: no learning rate trains every seed)" if zero else ""
    return (f"{where} moved for {', '.join(moved[:-1]) + (' and ' if len(moved) > 1 else '') + moved[-1]}{note}, "
            f"and stayed for the other {kept}.")
