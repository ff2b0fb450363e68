"""The one call that opens every chapter: live runs, recorded runs with their staleness, claims, GPU status.

``open_chapter(doc, title, *experiments)`` runs each experiment live at the
build's scale ($ANALYSIS_SCALE), loads the recorded runs at the other scales,
says for each record whether it is stale (its config or code differs from
today's), gives every run's claims to the chapter's :class:`ChapterClaims`
(so the ledger gets them) and prints one provenance line per run. A chapter
then plots and states what :meth:`Chapter.best` holds: the largest-scale run
available (a gpu record, else a cpu record, else the live run).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.compute.plan import plan_experiment
from analysis.core.mathtext import math_markdown, math_spans
from analysis.core.registry import EXPERIMENTS, config_for, current_record, get_experiment
from analysis.core.results import provenance
from analysis.core.runner import run_in_process
from analysis.core.size import Size, current_size
from analysis.core.stats import planned_detectable_multiple
from analysis.core.trials import Experiment, decided_claims, trial_status
from analysis.core.verify import (
    CLAIMS_DIR_ENV,
    ChapterClaims,
    Claim,
    ClaimId,
    EVIDENCE_RANK,
    SIGNS,
    bounded,
    claim_numbers,
    claim_ref,
    claims_html,
    fmt,
    ledger_link,
    plural,
    run_name,
    short_statement,
    strongest_claims,
    verdict_box_html,
    verdict_phrase,
)
from analysis.studies.notes import severity
from analysis.studies.text import and_list

RECORDED_ORDER: tuple[Size, ...] = ("cpu", "gpu")  # ascending: of two current records, the gpu one is the stronger


# the start of a reason of analysis.core.registry.staleness -> how the chapter's prose says it
STALE_WORDS = {"config differs": "with another config", "the experiment's code": "by older code",
               "data version": "in an older data layout", "recorded before": "before records carried fingerprints"}


def stale_words(reasons: Sequence[str]) -> str:
    """A record's staleness reasons as prose ('with another config and by older code'); the configs' differences
    stay in the provenance fold. ValueError for a reason :data:`STALE_WORDS` does not know."""
    words = []
    for reason in reasons:
        match = [w for start, w in STALE_WORDS.items() if reason.startswith(start)]
        if not match:
            raise ValueError(f"reasons must start with one of {', '.join(STALE_WORDS)}; got {reason!r}")
        words.append(match[0])
    if not words:
        raise ValueError("reasons must name at least one reason: a current record is not stale")
    return and_list(words)


@dataclass(frozen=True)
class RunSet:
    """One run a chapter shows: its label, data, provenance and staleness, its scale and whether it is a record."""

    label: str
    data: dict[str, Any]
    provenance: str
    scale: str
    recorded: bool = False
    stale: tuple[str, ...] = ()
    config: dict[str, Any] | None = None  # a record's own config, as stored (None: today's config of its scale)

    @property
    def key(self) -> str:
        """The run's short name ('smoke', 'recorded-cpu'), which claims' statements name (:func:`run_name`)."""
        return run_name(self.scale, self.recorded)

    def settings(self, name: str) -> dict[str, Any]:
        """The config experiment ``name``'s run was made with, as a dict: a record's own stored config (a record made
        before a config changed keeps its sizes), else today's config of the run's scale."""
        if self.config is not None:
            return self.config

        return dataclasses.asdict(config_for(EXPERIMENTS[name], self.scale))

    @property
    def evidence(self) -> str:
        """Its evidence as a claim it measured states it: 'cpu (recorded)', 'gpu (recorded, stale)', 'smoke (live)'."""
        return ClaimId("", "", self.scale, self.recorded, bool(self.stale)).evidence

    @property
    def phrase(self) -> str:
        """How the run was made, for prose: 'recorded at cpu scale', 'run by this build at smoke scale', with
        ', stale' for a stale record."""
        how = f"recorded at {self.scale} scale" if self.recorded else f"run by this build at {self.scale} scale"
        return how + (", stale" if self.stale else "")

    @property
    def note(self) -> str:
        """The provenance line, with the staleness reasons when the record is stale."""
        if not self.stale:
            return self.provenance
        return f"{self.provenance}. STALE: {'; '.join(self.stale)}"


def _live_provenance(size: str, data: dict[str, Any], seconds: float, seed: int | None = None) -> str:

    p = provenance(seconds)
    return (f"this build: {size} scale on {p['device']}, torch {p['torch']}, "
            f"Python {p['python']}, commit {(p['git_commit'] or 'unknown')[:10]}"
            f"{' (uncommitted changes)' if p.get('git_dirty') else ''}, "
            f"{'' if seed is None else f'seed {seed}, '}{str(p.get('date', ''))[:10]}, {seconds:.1f} s")


def _live_run(size: str, live: dict[str, Any], seconds: float, seed: int | None = None) -> RunSet:
    return RunSet(f"this build ({size} scale)", live, _live_provenance(size, live, seconds, seed), size)


def _seed(exp: Experiment, size: str) -> int | None:
    """The seed of ``exp``'s config at ``size``."""

    return getattr(config_for(exp.module, size), "seed", None)


def _run_live(exp: Experiment, size: str) -> tuple[dict[str, Any], float]:
    """Run ``exp`` at ``size``: its data and the seconds its trials ran. With ``ANALYSIS_LIVE_CACHE``
    set to a folder, a trial that today's code already ran there under the same config is read back, not run again
    (the test and book commands set it, so that the tests, the chapters and the book share one smoke run)."""

    return run_in_process(exp, size, config_for(exp.module, size), cache=os.environ.get("ANALYSIS_LIVE_CACHE") or None)


def _recorded_run(name: str, size: str, directory: str | None) -> RunSet | None:
    """The record of ``name`` at ``size`` as a RunSet, marked stale with its reasons; None when there is none."""

    record, stale = current_record(name, size, directory)
    if record is None:
        return None
    return RunSet(f"recorded, {size} scale" + (" (stale)" if stale else ""), record.data,
                  "recorded: " + record.describe(), size, recorded=True, stale=tuple(stale), config=record.config)


def strongest_run(runs: Sequence[RunSet]) -> RunSet:
    """The run with the strongest evidence (:data:`analysis.core.verify.EVIDENCE_RANK`: a gpu record over a cpu record over
    this build's run; a stale record below every current run but a smoke check); of equal ones, the last."""
    if not runs:
        raise ValueError("runs must hold at least one run")
    return max(reversed(runs), key=lambda r: EVIDENCE_RANK[r.evidence])


def runs_for(exp: Experiment, size: str, live: dict[str, Any], seconds: float = 0.0,
             directory: str | None = None) -> list[RunSet]:
    """The live run of ``exp`` at ``size``, then its records at the other scales (cpu, then gpu)."""
    records = (_recorded_run(exp.name, other, directory) for other in RECORDED_ORDER if other != size)
    return [_live_run(size, live, seconds, _seed(exp, size))] + [r for r in records if r is not None]


@dataclass
class Chapter:
    """What a chapter's opening call gathered: per experiment its runs, and the chapter's claims."""

    doc: str
    title: str
    scale: Size
    claims: ChapterClaims
    runs: dict[str, list[RunSet]] = field(default_factory=dict)
    directory: str | None = None  # the results folder (None: the repository's results/)
    experiments: dict[str, Experiment] = field(default_factory=dict)  # looked up once, by name

    def experiment(self, name: str) -> Experiment:
        """Experiment ``name``, looked up in the registry once per chapter."""
        if name not in self.experiments:
            self.experiments[name] = Experiment(get_experiment(name))
        return self.experiments[name]

    def best(self, name: str) -> RunSet:
        """The strongest evidence for experiment ``name`` (:func:`strongest_run` of its runs)."""
        return strongest_run(self.runs[name])

    def shown(self, name: str) -> list[RunSet]:
        """The runs of ``name`` that are measurements, weakest first: its records, and this build's run when it is at
        cpu or gpu scale; the smoke run only when nothing else exists (it checks that the code runs)."""
        measured = [r for r in self.runs[name] if r.recorded or r.scale != "smoke"]
        return measured or self.runs[name][:1]

    def live(self, name: str) -> RunSet:
        """The run made by this build."""
        return self.runs[name][0]

    def claims_of(self, name: str, run: RunSet | None = None, computed: bool = True) -> list[Claim]:
        """The claims experiment ``name`` made on ``run`` (default: its best run), with its computed claims."""
        run = run or self.best(name)
        return [c for c in self.claims.claims if c.id is not None and c.id.experiment == name
                and ((c.id.scale, c.id.recorded) == (run.scale, run.recorded) or (computed and c.id.scale is None))]

    def claim(self, name: str, key: str) -> Claim:
        """The claim ``key`` of experiment ``name``, measured by its best run (or computed)."""
        for c in self.claims_of(name):
            if c.key == key:
                return c
        raise KeyError(f"no claim {key!r} of {name!r} on its {self.best(name).key} run in chapter {self.doc!r}")

    def try_it(self, name: str, **settings: Any) -> TryIt:
        """Run experiment ``name`` again at smoke scale with ``settings`` of its config changed (a length, a width, a
        seed count: any field of its Config), and set each claim it makes beside the same claim of this chapter's
        strongest run (:func:`try_it`)."""
        return try_it(self, name, **settings)

    def verdicts(self, name: str, run: str | None = None) -> Any:
        """Markdown: one bullet per claim of the best run of ``name`` (or of the run whose short name is ``run``), its
        verdict (and corrected verdict) from the claim."""
        from IPython.display import Markdown

        chosen = next((r for r in self.runs[name] if r.key == run), None) if run else self.best(name)
        if chosen is None:
            raise KeyError(f"no run {run!r} of {name!r} in chapter {self.doc!r}")
        numbers = claim_numbers(self.claims.claims)
        strongest = {id(c) for c in strongest_claims(self.claims.claims)}
        return Markdown("\n".join(verdict_line(c, self.doc, numbers.get(claim_ref(c)), id(c) in strongest)
                                   for c in self.claims_of(name, chosen, computed=False)))

    def stale_beside(self, name: str) -> str:
        """Markdown: the claims of ``name``'s stale gpu record beside those of its best run, which count (a table of
        each claim's value and verdict on both, the gpu one what its own comparison gives), and a sentence naming
        where the two verdicts differ; '' when no stale gpu record stands beside a stronger run."""
        stale = next((r for r in reversed(self.runs[name]) if r.scale == "gpu" and r.recorded and r.stale), None)
        if stale is None or stale is self.best(name):
            return ""
        best = self.best(name)
        old = {c.key: c for c in self.claims_of(name, stale, computed=False)}
        now = {c.key: c for c in self.claims_of(name, best, computed=False)}
        if not old:
            return ""

        def cell(c: Claim | None) -> str:
            if c is None:
                return "not measured"
            check = " as a check" if c.gpu_only and c.id is not None and c.id.scale != "gpu" else ""
            return f"{bounded(c, fmt(c.measured))} {c.unit}: {c.check_verdict}{check}".replace("  ", " ")

        where = f"{best.scale} {'record' if best.recorded else 'run'}"
        numbers = claim_numbers(self.claims.claims)

        def label(c: Claim) -> str:
            number = numbers.get(claim_ref(c))
            return ledger_link(self.doc, c, number) if number else c.key

        rows = [f"| # | claim | {where} (counts) | gpu record (stale) |", "|---|---|---|---|"]
        rows += [f"| {label(c)} | {math_markdown(short_statement(c.statement))} | {cell(now.get(k))} | "
                 f"{cell(old.get(k))} |" for k in dict.fromkeys([*now, *old]) for c in [now.get(k) or old[k]]]
        differ = [(now[k], old[k]) for k in now if k in old and now[k].check_verdict != old[k].check_verdict]
        if not differ:
            said = "The two agree on every claim both measured."
        else:
            said = (f"They disagree on {plural(len(differ), 'claim')}: " + "; ".join(
                f"{label(a)} {verdict_phrase(a.check_verdict)} on the {where} ({fmt(a.measured)}) and "
                f"{verdict_phrase(b.check_verdict)} on the stale gpu record ({fmt(b.measured)})"
                for a, b in differ) + ".")
        return "\n".join(rows) + f"\n\n{said}"

    def gpu_only_sentence(self, name: str) -> str:
        """' Its 5 claims about GPU arithmetic or GPU speed ...': how the chapter treats the claims of ``name`` that only a
        current gpu run decides (:attr:`analysis.core.verify.Claim.gpu_only`) while its gpu record is stale; '' when it has
        none."""
        keys = {c.key for c in self.claims.claims if c.id is not None and c.id.experiment == name and c.gpu_only}
        if not keys:
            return ""
        return (f" Its {plural(len(keys), 'claim')} about GPU arithmetic or GPU speed "
                f"{'is' if len(keys) == 1 else 'are'} decided only by a current gpu record: the stale one keeps "
                f"{'it' if len(keys) == 1 else 'them'} inconclusive, its numbers shown beside those of the cpu run, "
                "which is a check.")

    def gpu_status(self, name: str) -> Any:
        """Markdown: that the GPU run is included, or that none was recorded, or that the only one is stale (made by
        other code or another config: shown, marked stale; its verdicts count only where no current run measured the
        claim, :data:`analysis.core.verify.EVIDENCE_RANK`), with the command and its estimate."""
        from IPython.display import Markdown

        gpu = [r for r in self.runs[name] if r.scale == "gpu"]
        beside = self.stale_beside(name)
        if any(not r.stale for r in gpu):
            return Markdown(f"The GPU-scale run of `{name}` is included.")
        if gpu:
            rests = ("it is shown and, since no current run measured its claims, its verdicts are this chapter's "
                     "for now, marked stale" if self.best(name) is gpu[-1] else
                     f"it is shown, marked stale, and its verdicts are listed below beside the current "
                     f"{self.best(name).scale}-scale ones, which count" if beside else
                     f"it is shown, marked stale, and the current {self.best(name).scale}-scale verdicts count")
            head = (f"**No current GPU-scale run of `{name}`:** its gpu record is stale: it was made "
                    f"{stale_words(gpu[-1].stale)}. {rests[0].upper()}{rests[1:]}.{self.gpu_only_sentence(name)}")
        else:
            head = f"**No GPU-scale run of `{name}` has been recorded yet.**"

        exp = self.experiment(name)
        cfg = config_for(exp.module, "gpu")
        status = trial_status(exp, "gpu", cfg, self.directory)
        trials = f"{status.total} trial{'' if status.total == 1 else 's'}"
        command = f"python -m analysis campaign --scale gpu --only {name}"
        runs = f"runs its {trials}"
        decided = [c for c in self.claims.claims if c.id is not None and c.id.experiment == name and c.id.partial]
        if status.done and not status.complete and decided:
            partial = (f" Its gpu campaign is partial: {status.describe()} stored, so no record is shown; "
                       f"{plural(len(decided), 'claim')} already {'has' if len(decided) == 1 else 'have'} all the "
                       f"trials {'it reads' if len(decided) == 1 else 'they read'} and "
                       f"{'is' if len(decided) == 1 else 'are'} decided from them at gpu scale "
                       f"({', '.join(f'{c.key}: {c.verdict_text()}' for c in decided)}).")
        elif status.done and not status.complete:
            partial = f" Its gpu campaign is partial: {status.describe()} stored, so no record is shown."
        elif status.stale:  # every trial stored, some by older code: the stale record is theirs
            k = len(status.stale)
            partial = (f" All {status.total} of its gpu trials are stored; {k} of them {'was' if k == 1 else 'were'} "
                       "made by code that has changed since.")
            command += " --refresh-stale"
            runs = (f"{runs} again" if k == status.total else "runs that one again" if k == 1 else
                    f"runs those {k} again")
        else:
            partial = ""
        est = plan_experiment(name, "gpu", execute=False)
        chunks = (", in commands of nine minutes or less (`--budget 9m`)" if est.h100_seconds > 9 * 60 else "")
        took = duration_text(est.h100_seconds)
        took = "under a second by estimate" if took == "under a second" else f"an estimated {took}"
        return Markdown(
            f"{head}{partial} On one H100 its {trials} would take {took} "
            f"(from training-step times measured on an H100; {est.flops:.2g} "
            f"FLOPs, peak memory about {est.peak_memory_gb:.2g} GB): `{command}` {runs}, resumable{chunks}."
            f"{seeds_words(cfg)} "
            "That time is an estimate; every number this book gives as measured on a GPU was measured on one."
            + (f"\n\n{beside}" if beside else "")
        )


# the chapter's table of claims fits the text column: fixed column widths, long words and numbers wrap, and a
# formula wider than its cell (MathJax 3 does not break inline maths) scrolls inside the cell
CHAPTER_TABLE_CSS = (
    "<style>div.chapter-claims table.claims-table{table-layout:fixed;width:100%}"
    # words wrap between words (hyphenated where the browser knows the language), never mid-word; a formula or
    # number wider than its cell scrolls inside it
    "div.chapter-claims table.claims-table td,div.verdict-box table.claims-table td"
    "{overflow-wrap:normal;word-break:normal;hyphens:auto;overflow-x:auto}"
    + "".join(f"div.chapter-claims table.claims-table th:nth-child({i}){{width:{w}%}}"
              for i, w in enumerate((9, 24, 12, 14, 13, 15, 13), 1))
    + "div.verdict-box{margin:0.5em 0 1em}div.verdict-box table.claims-table{table-layout:fixed;width:100%}"
    + "div.verdict-box summary{cursor:pointer}"
    + "".join(f"div.verdict-box table.claims-table th:nth-child({i}){{width:{w}%}}"
              for i, w in enumerate((6, 40, 19, 18, 17), 1))
    + "</style>"
)


class RenderedClaims(ChapterClaims):
    """A chapter's claims, whose HTML table fits the text column and renders the claims' inline LaTeX with
    MathJax."""

    def _repr_html_(self) -> str:
        table = claims_html(self.claims, self.chapter, severity)
        return f'{CHAPTER_TABLE_CSS}<div class="chapter-claims">{math_spans(table)}</div>'


@dataclass(frozen=True)
class VerdictBox:
    """The box at the top of a chapter: each claim at its strongest evidence, in short, with its source, verdict,
    scale of evidence and severity (:func:`analysis.core.verify.verdict_box_html`)."""

    claims: tuple[Claim, ...]
    doc: str

    def __repr__(self) -> str:

        numbers = claim_numbers(list(self.claims))
        return "\n".join(f"{self.doc}.{numbers[claim_ref(c)]} {c.verdict_text()} ({c.evidence}, {severity(c.key)}): "
                         f"{short_statement(c.statement)}" for c in strongest_claims(list(self.claims)))

    def _repr_html_(self) -> str:
        return (f'{CHAPTER_TABLE_CSS}<div class="verdict-box">'
                f"{math_spans(verdict_box_html(list(self.claims), self.doc, severity))}</div>")


def verdict_line(claim: Claim, doc: str | None = None, number: int | None = None, strongest: bool = True) -> str:
    """A Markdown bullet: the claim, its verdict in bold, what it measured against what was predicted when it fails,
    the reason when inconclusive (:attr:`Claim.inconclusive_reason`), the corrected verdict;
    with ``doc`` and ``number``, a link to the claim in the ledger (``ledger.html#<doc>-<key>``, or
    ``#<doc>-<key>-<run>`` for a run weaker than the claim's ``strongest``)."""
    link = "" if doc is None or number is None else ledger_link(doc, claim, number, strongest) + " "
    line = f"- {link}{math_markdown(claim.statement)}: **{claim.verdict_text()}**"
    if claim.verdict == "fails":  # which side it fails on: a 'fails' of '= 0' may be a win
        unit = f" {claim.unit}" if claim.unit else ""
        # a bound fails past the prediction plus its tolerance (analysis.core.verify.judge): that is the number to show
        limit = {"upper_bound": claim.predicted + claim.tolerance,
                 "lower_bound": claim.predicted - claim.tolerance}.get(claim.kind, claim.predicted)
        line += (f" (measured {bounded(claim, fmt(claim.measured))}{unit} against {SIGNS[claim.kind]} "
                 f"{fmt(limit)}{unit})")
    if claim.verdict == "inconclusive":
        line += f" ({math_markdown(claim.inconclusive_reason)})"
    if claim.corrected is not None:
        line += f"; corrected: **{claim.corrected_verdict}** ({math_markdown(claim.corrected_note)})"
    return line


def typeset(expr: Any) -> Any:
    """Markdown of inline LaTeX ($...$) for a sympy expression, or one recorded as a string
    (``'sqrt(2)/(2*K**(1/4))'``), to glue into prose with ``{glue:md}``."""
    import sympy as sp
    from IPython.display import Markdown

    # glued Markdown is parsed as CommonMark without maths: MathJax's inline form in a span of class "math"
    return Markdown(math_markdown("$" + sp.latex(sp.sympify(expr)) + "$"))


def seeds_words(cfg: Any) -> str:
    """' It has 3 seeds: ...', what a planned config's seeds can resolve, stated before it runs: the degrees of freedom
    of an estimate over them and the mean a one-sided t test detects in their SDs (planned_detectable_multiple);
    '' for a config without seeds."""

    seeds = getattr(cfg, "seeds", None)
    if seeds is None:
        return ""
    n = seeds if isinstance(seeds, int) else len(seeds)
    if n < 1:
        raise ValueError(f"a config's seeds must number at least 1; got {seeds!r}")
    if n == 1:
        return " It has one seed: nothing estimated over seeds has an error estimate at that scale."
    multiple = planned_detectable_multiple(n, sided="one")
    return (f" It has {n} seeds: an estimate over them has {n - 1} df, and a one-sided t test (95%, 80% power) "
            f"detects a mean of {multiple:.2g} standard deviations of one seed's value.")


def duration_text(seconds: float) -> str:
    """A duration as prose prints it: 'under a second', whole seconds below a minute, minutes at two significant
    digits below ten and whole from ten on ('102 minutes', not '1e+02 minutes' or '3.7e-06 minutes')."""
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"seconds must be finite and >= 0; got {seconds!r}")
    if seconds < 1:
        return "under a second"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:,.0f} minutes" if minutes >= 9.95 else f"{minutes:.2g} minute{'' if minutes < 1.05 else 's'}"


def recorded(name: str, directory: str | None = None) -> RunSet:
    """The strongest recorded run of ``name`` (gpu, else cpu; a current record over a stale one), cited from another
    chapter without re-running it; a live smoke run when nothing is recorded."""
    runs = [r for r in (_recorded_run(name, size, directory) for size in RECORDED_ORDER) if r is not None]
    if runs:
        return strongest_run(runs)
    exp = Experiment(get_experiment(name))
    return _live_run("smoke", *_run_live(exp, "smoke"), _seed(exp, "smoke"))


def open_chapter(doc: str, title: str, *experiments: str, directory: str | None = None) -> Chapter:
    """Run ``experiments`` live at the build's scale, gather their records and claims, print their provenance."""
    from IPython.display import display


    size = current_size()
    chapter = Chapter(doc, title, size, RenderedClaims(doc, title), directory=directory)
    timings: dict[str, float] = {}
    notes: list[str] = []
    for name in experiments:
        exp = chapter.experiment(name)
        data, seconds = _run_live(exp, size)
        timings[name] = seconds
        runs = runs_for(exp, size, data, seconds, directory)
        chapter.runs[name] = runs
        for run in runs:
            notes.append(f"{name}: {run.note}")
            for claim in exp.module.claims(run.data, run.key):
                chapter.claims.record(claim.identified(name, run.scale, run.recorded, bool(run.stale)))
        if not any(r.scale == "gpu" and r.recorded and not r.stale for r in runs):
            decided, note = partial_claims(exp, "gpu", directory)
            for claim in decided:
                chapter.claims.record(claim)
            if note:
                notes.append(f"{name}: {note}")
    save_timings(doc, size, timings)
    check = f"The code still runs: this build's smoke run took {sum(timings.values()):.1f} s" if size == "smoke" else ""
    display(Provenance(tuple(notes), check))
    display(VerdictBox(tuple(chapter.claims.claims), doc))
    return chapter


def partial_claims(exp: Experiment, size: str, directory: str | None = None) -> tuple[list[Claim], str]:
    """The claims of ``exp`` that its partial campaign at ``size`` decides from the stored trials each
    reads (:func:`analysis.core.trials.decided_claims`), identified as that scale's record's with the trials stored,
    and a provenance line for them; ([], '') when it decides none."""

    decided = decided_claims(exp, size, config_for(exp.module, size), directory)
    if decided is None:
        return [], ""
    label = run_name(size, True)
    claims = [c.identified(exp.name, size, True, partial=decided.trials_words)
              for c in exp.module.claims(decided.data, label) if c.key in decided.keys]
    keys = ", ".join(c.key for c in claims)
    return claims, (f"{size} campaign partial, {decided.trials_words} stored by today's code: no record yet, but "
                    f"{plural(len(claims), 'claim')} decided from the trials each reads ({keys})")


@dataclass(frozen=True)
class Provenance:
    """The provenance lines of a chapter's runs: collapsed under one summary line in HTML, plain lines as text."""

    lines: tuple[str, ...]
    check: str = ""  # at smoke scale: the one line that says the code still runs (the smoke run measures nothing)

    def summary(self) -> str:
        """One line: the smoke check when there is one, how many runs are shown, and whether any record is stale."""
        stale = sum("STALE" in line for line in self.lines)
        if self.check:
            shown = sum(not line.split(": ", 1)[-1].startswith("this build:") for line in self.lines)
            return (f"{self.check}. Provenance of the {plural(shown, 'recorded run')} shown here"
                    + (f" ({stale} stale)" if stale else "") + " and of this build")
        return (f"Provenance of the {plural(len(self.lines), 'run')} shown here"
                + (f" ({stale} stale)" if stale else "") + ": this build and the recorded runs")

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill(line, width=72, subsequent_indent="    ") for line in self.lines)

    def _repr_html_(self) -> str:
        import html

        items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines)
        return (f'<details class="provenance"><summary>{html.escape(self.summary())}</summary>'
                f'<ul style="font-size:0.85em">{items}</ul></details>')


def save_timings(doc: str, size: str, seconds: dict[str, float]) -> Path | None:
    """During a book build, write the live runs' wall times to $ANALYSIS_CLAIMS_DIR/runs/<doc>.json (for the
    reproduction page); nothing outside a build."""
    folder = os.environ.get(CLAIMS_DIR_ENV)
    if not folder:
        return None
    path = Path(folder) / "runs" / f"{doc}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"chapter": doc, "scale": size, "seconds": seconds}))
    return path


@dataclass(frozen=True)
class TryIt:
    """A reader's own run of a chapter's experiment beside the chapter's: per claim, the recorded measurement and
    verdict and the reader's."""

    experiment: str
    settings: dict[str, Any]
    seconds: float
    rows: tuple[tuple[str, Claim | None, Claim | None], ...]  # (claim key, the chapter's claim, this run's claim)

    def lines(self) -> list[str]:
        """One line per claim: its key, the chapter's measurement and verdict, then this run's."""
        def cell(c: Claim | None) -> str:
            return "not made" if c is None else f"{bounded(c, fmt(c.measured))} {c.unit}, {c.verdict_text()}".strip()

        return [f"{key}: recorded {cell(mine)}; this run {cell(yours)}" for key, mine, yours in self.rows]

    def _repr_markdown_(self) -> str:
        changed = ", ".join(f"`{k} = {v!r}`" for k, v in self.settings.items()) or "no setting changed"
        head = (f"Your run of `{self.experiment}` at smoke scale ({changed}), {self.seconds:.1f} s, beside the "
                "chapter's strongest run:\n\n| claim | the chapter's run | your run |\n|---|---|---|\n")
        def cell(c: Claim | None) -> str:
            return "not made" if c is None else f"{bounded(c, fmt(c.measured))} {c.unit}: **{c.verdict_text()}**"

        return head + "\n".join(f"| {key} | {cell(mine)} | {cell(yours)} |" for key, mine, yours in self.rows)

    def _repr_html_(self) -> str:
        """The same sentence and table as HTML, which the book renders: it leaves a Markdown table in a cell's output
        as text."""
        import html

        changed = ", ".join(f"<code>{html.escape(f'{k} = {v!r}')}</code>" for k, v in self.settings.items())
        head = (f"<p>Your run of <code>{html.escape(self.experiment)}</code> at smoke scale "
                f"({changed or 'no setting changed'}), {self.seconds:.1f} s, beside the chapter's strongest run:</p>")

        def cell(c: Claim | None) -> str:
            if c is None:
                return "<td>not made</td>"
            return (f"<td>{math_spans(html.escape(f'{bounded(c, fmt(c.measured))} {c.unit}'.strip()))}: "
                    f"<strong>{html.escape(c.verdict_text())}</strong></td>")

        rows = "".join(f"<tr><td>{html.escape(key)}</td>{cell(mine)}{cell(yours)}</tr>" for key, mine, yours in self.rows)
        return (f'{head}<table class="try-it"><thead><tr><th>claim</th><th>the chapter\'s run</th><th>your run</th>'
                f"</tr></thead><tbody>{rows}</tbody></table>")

    def __repr__(self) -> str:
        return "\n".join(self.lines())


def try_it(ch: Chapter, name: str, **settings: Any) -> TryIt:
    """The reader's experiment: ``name``'s smoke config with ``settings`` replaced (ValueError naming a field the
    experiment's config does not have), run here, nothing stored; its claims beside the chapter's strongest run's.
    At smoke scale a run takes seconds: its numbers check what the setting does, they are no measurement."""
    if name not in ch.runs:
        raise ValueError(f"name must be an experiment of chapter {ch.doc!r} ({', '.join(ch.runs)}); got {name!r}")
    exp = ch.experiment(name)
    cfg = config_for(exp.module, "smoke", **settings)
    data, seconds = run_in_process(exp, "smoke", cfg)
    yours = {c.key: c for c in exp.module.claims(data, "your run")}
    mine = {c.key: c for c in ch.claims_of(name, computed=False)}
    keys = list(dict.fromkeys([*mine, *yours]))
    return TryIt(name, dict(settings), seconds, tuple((k, mine.get(k), yours.get(k)) for k in keys))

