"""Claims: a prediction, a measurement with its error, a tolerance, and a verdict.

Verdicts, for a claim of kind ``equal`` (|measured - predicted|), ``upper_bound``
(measured - predicted) or ``lower_bound`` (predicted - measured), with ``excess``
that signed or absolute deviation:

* holds: excess <= tolerance (the tolerance comes from the measurement's own
  error and is fixed before the comparison; ``tolerance_basis`` says how);
* holds approximately: excess <= tolerance + approx_rel * |predicted|, only for a
  claim whose source states an approximation (``approx_words`` quotes it; the
  deviation in percent is reported: "holds within X%");
* fails: otherwise; a ``corrected`` prediction, if given, gets its own verdict
  against the same measurement and tolerance;
* inconclusive: the prediction passes, but so does the ``alternative`` the
  claim is tested against (the value a rival explanation predicts), so the
  measurement cannot tell them apart; or the measurement's ``detectable``
  difference (:mod:`analysis.core.stats`: the smallest true deviation it finds with
  80% power) exceeds the gap to the claim's rival (:attr:`Claim.rival_gap`: the
  ``effect`` the claim is about, else the distance from the prediction to the
  ``alternative``), so passing says nothing;
  or it has no error estimate at all (``detectable`` infinite: one seed); or the
  claim names why the run cannot decide it (``undecided``, e.g. an optimum still
  moving with the training budget), whatever the comparison gives; or the claim
  is about GPU arithmetic or GPU speed (``gpu_only`` says why) and the run that
  measured it is no current gpu run: a cpu run, Triton's interpreter included,
  is a check shown beside the claim (:func:`beside_text`), and a stale gpu record
  keeps the claim undecided rather than handing it to that check.

Directional claims, kinds ``below`` (measured < predicted) and ``above``
(measured > predicted), must be shown, not merely not refuted: they hold when
the whole interval measured ± tolerance lies on the claimed side, fail when it
lies wholly on the other side (or on the prediction), and are inconclusive
otherwise.

Exact claims (counts, identities) hold or fail: ``approx_rel`` is 0 unless the
source's own words give an approximation.

Every claim has a provenance (:func:`provenance_of`, read from its ``source``
unless the claim names one): from one of the five source texts, the book's own
target or derivation, a check of other software, or another paper. The sources'
claims are one tally and all others a second (:func:`tallies`), wherever verdicts
are counted.

A chapter collects its claims in a :class:`ChapterClaims`; when the book is
built, each chapter writes them to $ANALYSIS_CLAIMS_DIR and the ledger page is
generated from those files (``analysis.site.sphinx_ledger``).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from typing import Any, Literal

from analysis.core.stats import CONFIDENCE, Estimate, Sided

Kind = Literal["equal", "upper_bound", "lower_bound", "below", "above"]
Provenance = Literal["source", "book", "software", "paper"]
Verdict = Literal["holds", "holds approximately", "inconclusive", "fails"]
KINDS: tuple[Kind, ...] = ("equal", "upper_bound", "lower_bound", "below", "above")
DIRECTIONAL: tuple[Kind, ...] = ("below", "above")
DEFAULT_APPROX_REL = 0.0
CLAIMS_DIR_ENV = "ANALYSIS_CLAIMS_DIR"
# what each provenance is called where verdicts are counted, in tally order
PROVENANCE_WORDS: dict[Provenance, str] = {"source": "from the five sources", "book": "the book's own",
                                           "software": "checks of other software", "paper": "other papers"}
PROVENANCES: tuple[Provenance, ...] = tuple(PROVENANCE_WORDS)
# the five source texts, as a claim's source names them: four posts by their addresses, and the notes
SOURCE_MARKERS = ("kexue.fm/archives/8990", "kexue.fm/archives/8934", "kexue.fm/archives/8444",
                  "kexue.fm/archives/9812", "DL——Transformer", "the notes")
SOFTWARE_MARKERS = ("PyTorch", "torch.", "Hugging Face", "FLASH-pytorch")
BOOK_PREFIXES = ("this book", "derived", "bound derived")


def provenance_of(source: str) -> Provenance:
    """Where a claim comes from, read from its ``source``: the book's own when the source starts with 'this book',
    'derived' or 'bound derived' (a derivation from the notes' curve is still the book's); else a check of other
    software when it names PyTorch, torch., Hugging Face or FLASH-pytorch; else one of the five sources when it names
    one of their addresses or the notes; else another paper."""
    text = source.strip()
    if not text:
        raise ValueError("source must name where the claim comes from; got an empty string")
    if text.startswith(BOOK_PREFIXES):
        return "book"
    if any(m in text for m in SOFTWARE_MARKERS):
        return "software"
    if any(m in text for m in SOURCE_MARKERS):
        return "source"
    return "paper"


def _finite(name: str, value: float, minimum: float | None = None) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value!r}")
    return v


def judge(kind: Kind, predicted: float, measured: float, tolerance: float, approx_rel: float,
          alternative: float | None = None) -> Verdict:
    """Verdict of one comparison: excess <= tol holds, <= tol + approx_rel |pred| approximately, else fails; a
    directional kind holds when measured ± tol lies wholly on its side of the prediction.

    When the prediction passes and an ``alternative`` passes the same test, the verdict is inconclusive. A bound's
    alternative is a value, not a bound ('no speed-up' against 'at least 1.5x'): it passes when the measurement lies
    within the tolerance of it.
    """
    if kind in DIRECTIONAL:
        sign = 1.0 if kind == "above" else -1.0
        if sign * (measured - predicted) - tolerance > 0:
            return "holds"
        if sign * (measured - predicted) + tolerance <= 0:
            return "fails"
        return "inconclusive"
    verdict = _judge(kind, predicted, measured, tolerance, approx_rel)
    rival: Kind = "equal" if kind in ("upper_bound", "lower_bound") else kind
    if alternative is not None and verdict != "fails" and \
            _judge(rival, alternative, measured, tolerance, approx_rel) != "fails":
        return "inconclusive"
    return verdict


def _judge(kind: Kind, predicted: float, measured: float, tolerance: float, approx_rel: float) -> Verdict:
    if kind == "equal":
        excess = abs(measured - predicted)
    elif kind == "upper_bound":
        excess = measured - predicted
    else:
        excess = predicted - measured
    if excess <= tolerance:
        return "holds"
    if excess <= tolerance + approx_rel * abs(predicted):
        return "holds approximately"
    return "fails"


def underpowered(verdict: Verdict, kind: Kind, detectable: float | None, effect: float | None) -> bool:
    """Whether a passing verdict says nothing: no error estimate (detectable inf), or a detectable difference larger
    than ``effect``, the gap to the claim's rival (a directional claim that holds was detected, so only the first
    applies)."""
    if detectable is None:
        return False
    if math.isinf(detectable):
        return True
    if kind in DIRECTIONAL or verdict not in ("holds", "holds approximately"):
        return False
    return effect is not None and detectable > abs(effect)


def run_name(size: str, recorded: bool) -> str:
    """A run's short name, as chapters and claims' statements write it: 'recorded-cpu' for a record, 'smoke' for a
    live run."""
    return f"recorded-{size}" if recorded else size


@dataclass(frozen=True)
class ClaimId:
    """Which claim a chapter shows: the experiment that makes it, its key there, and the run that measured it
    (``scale`` None for a claim computed without a run, such as a quadrature)."""

    experiment: str
    key: str
    scale: str | None = None
    recorded: bool = False
    stale: bool = False  # a record made by other code or another config than today's
    partial: str = ""  # decided from its own trials before the record is complete: '12 of 48 trials' stored

    def __post_init__(self) -> None:
        if self.scale is None and self.recorded:
            raise ValueError("a computed claim (scale None) has no record")
        if self.stale and not self.recorded:
            raise ValueError("only a record can be stale")
        if self.partial and (self.stale or not self.recorded):
            raise ValueError("only a current record's trials decide a claim before the record is complete")

    @property
    def run(self) -> str:
        """The run, as a chapter names it: 'recorded-cpu', 'smoke', or '' when computed."""
        return "" if self.scale is None else run_name(self.scale, self.recorded)

    @property
    def evidence(self) -> str:
        """'cpu (recorded)', 'gpu (recorded, stale)', 'smoke (live)', or 'computed'."""
        if self.scale is None:
            return "computed"
        return f"{self.scale} ({'recorded' if self.recorded else 'live'}{', stale' if self.stale else ''})"

    @property
    def slug(self) -> str:
        """The key and its run, unique within a chapter ('recall-best-scale-16-recorded-cpu')."""
        return f"{self.key}-{self.run}" if self.run else self.key


@dataclass(frozen=True)
class Claim:
    """One claim of a source, its prediction and its measurement (``computed``: made without a run, the same
    at every scale; ``id``: set when a chapter takes the claim from a run)."""

    key: str
    statement: str
    source: str
    predicted: float
    measured: float
    uncertainty: float
    tolerance: float
    tolerance_basis: str
    kind: Kind = "equal"
    approx_rel: float = DEFAULT_APPROX_REL
    approx_words: str = ""  # the source's words that state the approximation approx_rel reads
    unit: str = ""
    corrected: float | None = None
    corrected_note: str = ""
    alternative: float | None = None  # what a rival explanation predicts; None: resolved to the tolerance
    alternative_note: str = ""
    detectable: float | None = None  # smallest true deviation found with 80% power (analysis.core.stats); inf: none
    effect: float | None = None  # the size of difference the claim is about; a larger detectable one is inconclusive
    undecided: str = ""  # why the run cannot decide the claim (e.g. an optimum still moving): always inconclusive
    measured_bound: str = ""  # "≥" or "≤": the measurement only bounds the quantity (no crossover up to the longest n)
    gpu_only: str = ""  # why only a gpu run decides the claim (GPU arithmetic or speed); '': any run does
    # where the claim comes from, when its source's words do not say it (provenance_of); '': read them
    provenance: Provenance | Literal[""] = ""
    computed: bool = False
    id: ClaimId | None = None

    def __post_init__(self) -> None:
        if not self.key or not self.key.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"key must be a non-empty identifier of letters, digits, - and _; got {self.key!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        _finite("predicted", self.predicted)
        _finite("measured", self.measured)
        _finite("uncertainty", self.uncertainty, 0.0)
        _finite("tolerance", self.tolerance, 0.0)
        _finite("approx_rel", self.approx_rel, 0.0)
        if self.approx_rel > 0 and not self.approx_words.strip():
            raise ValueError("approx_words must quote the source's words that state the approximation "
                             f"approx_rel={self.approx_rel!r} reads")
        if self.approx_rel > 0 and self.kind in DIRECTIONAL:
            raise ValueError(f"approx_rel must be 0 for a directional claim (kind {self.kind!r})")
        if self.detectable is not None and (math.isnan(self.detectable) or self.detectable < 0):
            raise ValueError(f"detectable must be >= 0 (inf: no error estimate); got {self.detectable!r}")
        if self.effect is not None:
            _finite("effect", self.effect)
        if self.corrected is not None:
            _finite("corrected", self.corrected)
        if self.alternative is not None:
            _finite("alternative", self.alternative)
            if not self.alternative_note.strip():
                raise ValueError("alternative_note must say what the alternative is")
        if not self.tolerance_basis.strip():
            raise ValueError("tolerance_basis must say how the tolerance was chosen")
        if self.measured_bound not in ("", "≥", "≤"):
            raise ValueError(f"measured_bound must be '', '≥' or '≤'; got {self.measured_bound!r}")
        if self.provenance not in ("", *PROVENANCES):
            raise ValueError(f"provenance must be '' or one of {', '.join(PROVENANCES)}; got {self.provenance!r}")
        provenance_of(self.source)  # a claim names its source

    def identified(self, experiment: str, size: str, recorded: bool, stale: bool = False, partial: str = ""
                   ) -> Claim:
        """This claim as made by ``experiment`` on a run at ``size`` (live or recorded, a record stale or not; with
        ``partial``, '12 of 48 trials', decided from the stored trials it reads before the record is complete)."""
        kept = recorded and not self.computed
        return replace(self, id=ClaimId(experiment, self.key, None if self.computed else size, kept,
                                        stale and kept, partial if kept else ""))

    @property
    def origin(self) -> Provenance:
        """Where the claim comes from: its ``provenance`` when named, else :func:`provenance_of` its source."""
        return self.provenance or provenance_of(self.source)

    @property
    def evidence_words(self) -> str:
        """Its evidence in a narrow cell (:func:`evidence_words`), with the trials that decided it when the record is
        not complete: 'gpu record, 12 of 48 trials'."""
        words = evidence_words(self.evidence)
        return f"{words}, {self.id.partial}" if self.id is not None and self.id.partial else words

    @property
    def slug(self) -> str:
        """Unique within a chapter: the key with its run ('x-recorded-cpu'), or the key alone before identification."""
        return self.id.slug if self.id is not None else self.key

    @property
    def evidence(self) -> str:
        """What measured the claim: 'cpu (recorded)', 'smoke (live)', 'computed'."""
        if self.id is not None:
            return self.id.evidence
        return "computed" if self.computed else "unidentified"

    @property
    def verdict(self) -> Verdict:
        """holds / holds approximately / inconclusive / fails for the source's prediction."""
        return self._verdict(self.predicted)

    def _verdict(self, predicted: float) -> Verdict:
        return self._decide(predicted)[0]

    def _decide(self, predicted: float, gpu_rule: bool = True) -> tuple[Verdict, str]:
        """The verdict for ``predicted`` and, when inconclusive, the rule that made it so, in words: the claim's own
        reason (``undecided``); a gpu-only claim measured by no current gpu run (:meth:`gpu_reason`, unless
        ``gpu_rule`` is off); one run, no error estimate; a directional interval on both sides; the alternative
        passing as well (:func:`judge`); a detectable difference larger than the effect (:func:`underpowered`)."""
        if self.undecided.strip():
            return "inconclusive", self.undecided.strip()
        if gpu_rule and self.gpu_reason():
            return "inconclusive", self.gpu_reason()
        if self.detectable is not None and math.isinf(self.detectable):
            return "inconclusive", "one run: no error estimate"
        if judge(self.kind, predicted, self.measured, self.tolerance, self.approx_rel) == "inconclusive":
            return "inconclusive", "the interval reaches both sides of the prediction"
        # a corrected prediction that is the alternative itself has no rival in it: judged on its own
        rival = self.rival
        alternative = None if predicted != self.predicted and rival == predicted else rival
        v = judge(self.kind, predicted, self.measured, self.tolerance, self.approx_rel, alternative)
        if v == "inconclusive":
            return v, f"the alternative, {self.rival_note}, fits as well"
        gap = self.rival_gap if alternative is not None or self.effect is not None else None
        if underpowered(v, self.kind, self.detects, gap):
            about = ("the claim is about" if self.effect is not None else
                     f"that separates the prediction from the alternative, {self.rival_note}")
            return "inconclusive", (f"the run detects only differences of {self.detects:.3g} or more, larger "
                                    f"than the {gap or 0.0:.3g} {about}")
        return v, ""

    @property
    def detects(self) -> float:
        """The smallest true deviation the comparison finds: ``detectable`` when the run states it (80% power, inf
        without an error estimate), else the tolerance: a comparison without sampling noise (rounding, exact counts)
        finds every deviation beyond it, for certain."""
        return self.detectable if self.detectable is not None else self.tolerance

    @property
    def has_rival(self) -> bool:
        """Whether the claim names what it must be told apart from: an alternative value, the effect it is about, or,
        for a directional claim, the other side (its interval must exclude it)."""
        return self.rival is not None or self.effect is not None or self.kind in DIRECTIONAL

    @property
    def rival(self) -> float | None:
        """The value the claim must be told apart from, its ``alternative`` (named by the claim: a corrected
        prediction is not always a rival, it may refine the claim's own law), else None."""
        return self.alternative

    @property
    def rival_note(self) -> str:
        """What the rival is, in words: the alternative's note."""
        return self.alternative_note.strip()

    @property
    def rival_gap(self) -> float | None:
        """How far the claim's rival lies from its prediction, the difference its run must detect: the ``effect``
        the claim is about, else |rival - predicted| (:attr:`rival`), else None (no rival named)."""
        if self.effect is not None:
            return abs(self.effect)
        if self.rival is not None:
            return abs(self.rival - self.predicted)
        return None

    def gpu_reason(self) -> str:
        """Why a gpu-only claim's run cannot decide it ('' when it can, or when the claim is not gpu-only or its run is
        not known): a cpu run is a check, whatever its verdict; a stale gpu record measured other code."""
        if not self.gpu_only.strip() or self.id is None or self.id.scale is None:
            return ""
        check = self.check_verdict
        if self.id.scale != "gpu":
            return (f"only a gpu run decides it ({self.gpu_only.strip()}); this {evidence_words(self.evidence)} "
                    f"is a check, by which it {verdict_phrase(check)}")
        if self.id.stale:
            return (f"only a current gpu record decides it, and this one is stale: it measured {fmt(self.measured)}, "
                    f"by which it {verdict_phrase(check)}")
        return ""

    @property
    def check_verdict(self) -> Verdict:
        """The verdict the comparison gives whatever run measured it: for a gpu-only claim on a cpu run, what the
        check says (:meth:`gpu_reason`); for every other claim, its verdict."""
        return self._decide(self.predicted, gpu_rule=False)[0]

    @property
    def corrected_verdict(self) -> Verdict | None:
        """The verdict of the corrected prediction, or None when there is none."""
        if self.corrected is None:
            return None
        return self._verdict(self.corrected)

    @property
    def deviation_pct(self) -> float:
        """100 |measured - predicted| / |predicted| (inf when predicted is 0 and they differ)."""
        diff = abs(self.measured - self.predicted)
        if self.predicted == 0:
            return 0.0 if diff == 0 else math.inf
        return 100.0 * diff / abs(self.predicted)

    @property
    def inconclusive_reason(self) -> str:
        """Why the verdict is inconclusive, in words ('' when it is not): :meth:`_decide`'s reason."""
        return self._decide(self.predicted)[1]

    def verdict_text(self) -> str:
        """The verdict in words, with the deviation when it holds only approximately."""
        v = self.verdict
        if v == "holds approximately":
            return f"holds within {self.deviation_pct:.3g}%"
        return v

    def to_dict(self) -> dict[str, Any]:
        """Plain data, with the verdicts, for JSON."""
        d = asdict(self)
        d["verdict"] = self.verdict
        d["verdict_text"] = self.verdict_text()
        d["corrected_verdict"] = self.corrected_verdict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Claim":
        """Inverse of :meth:`to_dict` (the stored verdicts are recomputed, not trusted)."""
        names = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in d.items() if k in names}
        if isinstance(fields.get("id"), dict):
            fields["id"] = ClaimId(**fields["id"])
        return cls(**fields)


# evidence, weakest first: a live smoke run only exercises the code (it is never a measurement); records and live cpu
# or gpu runs measure; a computed claim needs no run. A stale record (made by other code or another config than
# today's) measured another setup: it ranks below every current measurement, whatever its scale
EVIDENCE_RANK: dict[str, int] = {"smoke (live)": 0, "cpu (recorded, stale)": 1, "gpu (recorded, stale)": 2,
                                 "cpu (live)": 3, "cpu (recorded)": 4, "gpu (live)": 5, "gpu (recorded)": 6,
                                 "computed": 7}
CHECK_ONLY = "smoke (live)"


def claim_ref(claim: Claim) -> tuple[str, str]:
    """What identifies a claim whatever run measured it: (experiment, key); ('', key) before identification."""
    return (claim.id.experiment if claim.id is not None else "", claim.key)


def ledger_id(doc: str, claim: Claim, strongest: bool = True) -> str:
    """The claim's id on the ledger page: '<doc>-<key>' for its strongest evidence (the same at every scale),
    '<doc>-<key>-<run>' for a weaker run of it."""
    return f"{doc}-{claim.key}" if strongest else f"{doc}-{claim.slug}"


def ledger_link(doc: str, claim: Claim, number: int, strongest: bool = True) -> str:
    """'<a href="ledger.html#<ledger_id>" ...><doc>.<number></a>': the claim's number, linked to it in the ledger."""
    return (f'<a href="ledger.html#{html.escape(ledger_id(doc, claim, strongest))}" title="this claim in the ledger">'
            f"{html.escape(doc)}.{number}</a>")


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 chapter', '10 chapters': a count with its noun."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def unmeasured_sentence(count: int) -> str:
    """The sentence that counts the claims only a smoke run made, which no table or count shows."""
    return (f"{plural(count, 'claim')} made only by this build's smoke run (a check that the code runs, not a "
            f"measurement) {'is' if count == 1 else 'are'} left out until a cpu or gpu run measures "
            f"{'it' if count == 1 else 'them'}.")


def measurements(claims: list[Claim]) -> list[Claim]:
    """The claims that are measurements: every run but a live smoke one, which only checks that the code runs."""
    return [c for c in claims if c.evidence != CHECK_ONLY]


def evidence_rank(claim: Claim) -> int:
    """How strong a measurement of ``claim`` is: :data:`EVIDENCE_RANK` of its evidence, except that for a gpu-only
    claim every gpu run, stale or not, outranks every cpu run (a cpu run of it is a check, never its evidence)."""
    rank = EVIDENCE_RANK.get(claim.evidence, -1)
    if claim.gpu_only.strip() and claim.id is not None and claim.id.scale == "gpu":
        rank += len(EVIDENCE_RANK)
    return rank


def strongest_claims(claims: list[Claim]) -> list[Claim]:
    """Per claim (:func:`claim_ref`), the measurement with the strongest evidence (:func:`evidence_rank`: a gpu record
    over a cpu record over a live run; smoke runs never count), in the order the claims first appear. This is the one
    definition of 'strongest evidence' that the chapters' tables, the ledger and the landing page count by."""
    best: dict[tuple[str, str], Claim] = {}
    for c in measurements(claims):
        ref = claim_ref(c)
        if ref not in best or evidence_rank(c) > evidence_rank(best[ref]):
            best[ref] = c
    return list(best.values())


def beside_text(claim: Claim, claims: list[Claim]) -> str:
    """For a gpu-only claim, its other measurements among ``claims``, shown beside the one that decides it: 'cpu
    record: 0.0021, holds as a check'; '' for any other claim or when there is none."""
    if not claim.gpu_only.strip():
        return ""
    others = [c for c in measurements(claims) if claim_ref(c) == claim_ref(claim) and c is not claim
              and c.evidence != claim.evidence]
    return "; ".join(f"{c.evidence_words}: {bounded(c, fmt(c.measured))}, {c.check_verdict} as a check"
                     if c.id is not None and c.id.scale != "gpu" else
                     f"{c.evidence_words}: {bounded(c, fmt(c.measured))}, {c.check_verdict}" for c in others)


def claim_numbers(claims: list[Claim]) -> dict[tuple[str, str], int]:
    """Each measured claim's number within its chapter (1, 2, ...), by first appearance: the same claim has the same
    number at every scale, and a claim only a smoke run made has none."""
    return {claim_ref(c): i for i, c in enumerate(strongest_claims(claims), 1)}


def unmeasured(claims: list[Claim]) -> list[Claim]:
    """The claims that only a smoke run made (no record or cpu / gpu run has measured them yet), one per claim."""
    measured_refs = {claim_ref(c) for c in measurements(claims)}
    seen: dict[tuple[str, str], Claim] = {}
    for c in claims:
        if claim_ref(c) not in measured_refs:
            seen.setdefault(claim_ref(c), c)
    return list(seen.values())


def short_statement(statement: str, limit: int = 110, details: bool = False) -> str:
    """A claim's statement for a compact table: without its closing parenthesis of measurement details (kept with
    ``details``), and cut at a word (never inside $...$ maths) with '…' when still longer than ``limit`` characters."""
    if limit < 20:
        raise ValueError(f"limit must be >= 20 characters; got {limit!r}")
    text = statement.strip()
    if text.endswith(")") and not details:
        depth, in_math = 0, False
        for i in range(len(text) - 1, -1, -1):
            ch = text[i]
            if ch == "$":
                in_math = not in_math
            elif not in_math and ch == ")":
                depth += 1
            elif not in_math and ch == "(":
                depth -= 1
                if depth == 0:
                    if i > 0 and text[:i].strip():
                        text = text[:i].rstrip().rstrip(":;,")
                    break
    if len(text) <= limit:
        return text
    cut, in_math = 0, False
    for i, ch in enumerate(text[:limit]):
        if ch == "$":
            in_math = not in_math
        elif ch == " " and not in_math:
            cut = i
    return (text[:cut] if cut else text[:limit]).rstrip(" ,;:") + " …"


def verdict_phrase(verdict: str) -> str:
    """A verdict as a predicate for prose: 'holds', 'fails', 'is inconclusive', 'holds within 3.7%' ('' stays '')."""
    return "is inconclusive" if verdict == "inconclusive" else verdict


def estimate_fields(est: Estimate, what: str, sided: Sided = "two",
                    confidence: float = CONFIDENCE) -> dict[str, Any]:
    """A claim's ``measured``, ``uncertainty`` (SE), ``tolerance`` (t_{nu} SE, :mod:`analysis.core.stats`),
    ``tolerance_basis`` and ``detectable`` for a measurement ``est`` of ``what``; one-sided for a directional claim.
    Without an error estimate (one unit) the tolerance is 0 and ``detectable`` infinite: the claim is inconclusive."""
    half = est.half_width(confidence, sided)
    return {"measured": est.value, "uncertainty": est.se, "tolerance": half if math.isfinite(half) else 0.0,
            "tolerance_basis": est.basis(what, confidence, sided),
            "detectable": est.detectable(confidence, sided=sided)}


def fmt(x: float, digits: int = 4) -> str:
    """A number for tables: ``digits`` significant figures, scientific when very small or large."""
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


_TABLE_CSS = (
    "table.claims-table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em;width:100%}"
    "table.claims-table th,table.claims-table td{border:1px solid #ccc;padding:0.3em 0.5em;vertical-align:top;text-align:left}"
    "table.claims-table th{background:#f3f3f3}table.claims-table small{color:#555}"
    # dark mode (the theme sets data-theme on <html>): dark headings, light small text, lighter verdict colours
    "html[data-theme=dark] table.claims-table th{background:#2a2e35;color:#e8e8e8}"
    "html[data-theme=dark] table.claims-table th,html[data-theme=dark] table.claims-table td{border-color:#555}"
    "html[data-theme=dark] table.claims-table small{color:#b8b8b8}"
    # the theme gives a notebook's HTML output a light panel in dark mode; a claims table brings its own colours
    "html[data-theme=dark] .bd-content div.cell_output .text_html:has(table.claims-table)"
    "{background-color:transparent!important;color:inherit!important}"
    "html[data-theme=dark] table.claims-table td{background:#1b1e23;color:#dcdcdc}"
    + "".join(f'html[data-theme=dark] [style*="{light}"]{{color:{dark}!important}}'
              f'html[data-theme=dark] .verdict-bar [style*="{light}"]{{background:{dark}!important}}'
              for light, dark in (("#1b7f3b", "#6fd08c"), ("#a36b00", "#f0b44c"), ("#5f6368", "#b0b4b8"),
                                  ("#b3261e", "#ff8a80")))
)
SIGNS: dict[Kind, str] = {"equal": "=", "upper_bound": "≤", "lower_bound": "≥", "below": "<", "above": ">"}
VERDICT_COLOURS: dict[Verdict, str] = {"holds": "#1b7f3b", "holds approximately": "#a36b00",
                                       "inconclusive": "#5f6368", "fails": "#b3261e"}


_PROTECTED = re.compile(r"(<[^>]+>|\$[^$]*\$|\\\(.*?\\\))", re.DOTALL)  # tags, $maths$ and \(maths\)
_SLASH = re.compile(r"(?<=[\w.])/(?=\w)|(?<=[A-Za-z])\.(?=[A-Za-z])|(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


def address_breaks(text: str) -> str:
    """HTML text with a line-break opportunity (<wbr>) after each slash of an address such as
    'kexue.fm/archives/8934', after each dot between letters and each underscore inside a name (a module path such
    as 'analysis.theory.flash_counts', a unit such as 'FLOPs/token'), so that a narrow cell breaks it there and not
    mid-word; tags and maths are left as they are."""
    return "".join(part if _PROTECTED.fullmatch(part) else _SLASH.sub(lambda m: m.group(0) + "<wbr>", part)
                   for part in _PROTECTED.split(text))


def claims_table_css() -> str:
    """The <style> block of the book's tables (class "claims-table"), for other tables that should look the same."""
    return f"<style>{_TABLE_CSS}</style>"


def detects_text(c: Claim) -> str:
    """'detects ≥ 0.031' (the smallest deviation the measurement finds with 80% power), with the effect the claim is
    about, else how far its rival lies (:attr:`Claim.rival_gap`); 'no error estimate' for one unit; the reason a claim
    is undecided; '' for an exact claim."""
    if c.undecided.strip():
        return f"undecided: {c.undecided}"
    if c.detectable is None:
        return ""
    if math.isinf(c.detectable):
        return "no error estimate"
    about = ("" if c.rival_gap is None else f"; the claim is about {fmt(c.rival_gap, 3)}" if c.effect is not None
             else f"; the rival lies {fmt(c.rival_gap, 3)} away")
    return f"detects ≥ {fmt(c.detectable, 3)}{about}"


def beside_html(c: Claim, claims: list[Claim]) -> str:
    """:func:`beside_text` as a small line of a table cell ('' when there is none)."""
    text = beside_text(c, claims)
    return f"<br><small>beside it: {html.escape(text)}</small>" if text else ""


def detects_html(c: Claim) -> str:
    """:func:`detects_text` as a small second line of a table cell ('' when there is none)."""
    text = detects_text(c)
    return f"<br><small>{html.escape(text)}</small>" if text else ""


def _number_cell(claim: Claim, number: int | None, doc: str | None) -> str:
    """'chapter.n' (a link to the claim in the ledger when ``doc`` is given) over the claim's scale of evidence."""
    label = ledger_link(doc, claim, number) if doc and number else (str(number) if number else "")
    return f"<td>{label}<br><small>{html.escape(claim.evidence_words)}</small></td>"


def claims_html(claims: list[Claim], doc: str | None = None, severity: Callable[[str], str] | None = None) -> str:
    """An HTML table of claims, each at its strongest evidence (:func:`strongest_claims`; smoke runs are checks, not
    rows), numbered, with predictions, measurements and verdicts side by side; a formal claim is marked where
    ``severity`` (claim key -> 'formal' or 'substantive', the ledger's notes) is given."""

    head = ["#", "claim", "predicted", "measured ± error", "tolerance (basis)", "verdict", "corrected"]
    numbers = claim_numbers(claims)
    rows = []
    for c in strongest_claims(claims):
        colour = VERDICT_COLOURS[c.verdict]
        corrected = "" if c.corrected is None else (
            f"{fmt(c.corrected)} ({c.corrected_verdict}){': ' + html.escape(c.corrected_note) if c.corrected_note else ''}"
        )
        alternative = "" if c.alternative is None else (
            f"<br><small>alternative {fmt(c.alternative)}: {html.escape(c.alternative_note)}</small>")
        formal = "<br><small>formal</small>" if severity is not None and severity(c.key) == "formal" else ""
        rows.append(
            "<tr>" + _number_cell(c, numbers.get(claim_ref(c)), doc)
            + f"<td>{html.escape(c.statement)}<br><small>{address_breaks(html.escape(c.source))}</small></td>"
            f"<td>{SIGNS[c.kind]} {fmt(c.predicted)} {address_breaks(html.escape(c.unit))}</td>"
            f"<td>{bounded(c, fmt(c.measured))} ± {fmt(c.uncertainty, 2)}{detects_html(c)}"
            f"{beside_html(c, claims)}</td>"
            f"<td>{fmt(c.tolerance, 2)}<br><small>{html.escape(c.tolerance_basis)}</small>{alternative}</td>"
            f'<td><span style="color:{colour};font-weight:bold">{html.escape(c.verdict_text())}</span>{formal}</td>'
            f"<td>{corrected}</td>"
            "</tr>"
        )
    header = "".join(f"<th>{h}</th>" for h in head)
    missing = unmeasured(claims)
    note = f"<p><small>{unmeasured_sentence(len(missing))}</small></p>" if missing else ""
    return (
        f"{claims_table_css()}"
        f'<table class="claims-table"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>{note}'
    )


def verdict_count(verdict: str, count: int) -> str:
    """'1 holds', '12 hold', '2 are inconclusive', '3 hold approximately': a count with its verdict as a verb."""
    one, many = {"holds": ("holds", "hold"), "holds approximately": ("holds approximately", "hold approximately"),
                 "inconclusive": ("is inconclusive", "are inconclusive"), "fails": ("fails", "fail")}[verdict]
    return f"{count} {one if count == 1 else many}"


def tallies(claims: list[Claim]) -> tuple[dict[Verdict, int], dict[Verdict, int], dict[Provenance, int]]:
    """Verdict counts in two tallies over ``claims`` (one per claim): the five sources' claims, then every other, and
    how many of the others each provenance holds (:attr:`Claim.origin`); verdicts in :data:`VERDICT_COLOURS` order,
    provenances in :data:`PROVENANCES` order, each without zero counts."""
    sources = [c for c in claims if c.origin == "source"]
    others = [c for c in claims if c.origin != "source"]
    by_verdict = [{v: n for v in VERDICT_COLOURS if (n := sum(c.verdict == v for c in part))}
                  for part in (sources, others)]
    kinds = {k: n for k in PROVENANCES if (n := sum(c.origin == k for c in others))}
    return by_verdict[0], by_verdict[1], kinds


def tallies_html(claims: list[Claim], label: Callable[[str, int], str] | None = None) -> str:
    """The two tallies of :func:`tallies` as a sentence: '8 claims from the five sources: 5 hold, 3 fail; 4 other
    claims (the book's own: 3, checks of other software: 1): 4 hold', each verdict in its colour; ``label(verdict,
    count)`` words a count (default :func:`verdict_count`)."""
    words = label or verdict_count
    sources, others, kinds = tallies(claims)

    def parts(counts: dict[Verdict, int]) -> str:
        return ", ".join(f'<span style="color:{VERDICT_COLOURS[v]};font-weight:bold">{html.escape(words(v, n))}</span>'
                         for v, n in counts.items())

    n_src, n_oth = sum(sources.values()), sum(others.values())
    first = (f"{plural(n_src, 'claim')} from the five sources: {parts(sources)}" if n_src
             else "no claim from the five sources")
    if not n_oth:
        return first
    breakdown = ", ".join(f"{PROVENANCE_WORDS[k]}: {n}" for k, n in kinds.items())
    return f"{first}; {plural(n_oth, 'other claim')} ({breakdown}): {parts(others)}"


MISS_ROUNDING = 0.01  # a miss beyond its tolerance by less than this share of the tolerance is no headline miss


def miss_limit(c: Claim) -> float:
    """The value a failing claim is judged against: its prediction, plus or minus the tolerance for a bound."""
    return {"upper_bound": c.predicted + c.tolerance, "lower_bound": c.predicted - c.tolerance}.get(c.kind,
                                                                                                    c.predicted)


def miss_words(c: Claim) -> str:
    """How a failing claim misses, with its side: '0.35 x against = 2 x: below by 1.65 x'; '' unless it fails."""
    if c.verdict != "fails":
        return ""
    unit = f" {c.unit}" if c.unit else ""
    limit = miss_limit(c)
    side = "above" if c.measured > limit else "below"
    return (f"{bounded(c, fmt(c.measured))}{unit} against {SIGNS[c.kind]} {fmt(limit)}{unit}: {side} by "
            f"{fmt(abs(c.measured - limit))}{unit}")


def miss_size(c: Claim) -> float:
    """A failing claim's miss in units of what its run resolves (its tolerance, or its uncertainty when larger): 0
    for a claim that does not fail, or that fails within :data:`MISS_ROUNDING` of its tolerance."""
    if c.verdict != "fails":
        return 0.0
    scale = max(c.tolerance, c.uncertainty)
    excess = abs(c.measured - c.predicted) - c.tolerance
    if scale > 0 and excess < MISS_ROUNDING * scale:
        return 0.0
    return abs(c.measured - miss_limit(c)) / scale if scale > 0 else math.inf


def largest_miss(claims: list[Claim]) -> Claim | None:
    """Of the five sources' claims (at their strongest evidence), the one that fails by most in units of what its run
    resolves (:func:`miss_size`); None when none fails beyond rounding."""
    failing = [c for c in claims if c.origin == "source" and miss_size(c) > 0]
    return max(failing, key=miss_size) if failing else None


def box_summary_html(shown: list[Claim], doc: str, numbers: dict[tuple[str, str], int]) -> str:
    """The first lines of a chapter: what its evidence is, and its largest miss with what holds instead."""
    scales: dict[str, int] = {}
    for c in shown:
        scales[c.evidence_words] = scales.get(c.evidence_words, 0) + 1
    evidence = "; ".join(f"{html.escape(w)}: {n}" for w, n in sorted(scales.items(), key=lambda kv: -kv[1]))
    out = f"<p><strong>Evidence</strong>, claim by claim: {evidence}.</p>"
    worst = largest_miss(shown)
    if worst is not None:
        n = numbers[claim_ref(worst)]
        instead = (f"what holds instead: {html.escape(worst.corrected_note or fmt(worst.corrected))} "
                   f"({html.escape(str(worst.corrected_verdict))})" if worst.corrected is not None
                   else "no corrected prediction is offered")
        out += (f'<p><strong>Largest miss</strong>: <a href="#claim-{html.escape(worst.key)}">{html.escape(doc)}.{n}'
                f"</a> {html.escape(short_statement(worst.statement, limit=90))}: {html.escape(miss_words(worst))}; "
                f"{instead}.</p>")
    return out




def bounded(claim: Claim, text: str) -> str:
    """A measured value as written, with the claim's bound when the measurement only bounds the quantity: '≥ 8192'."""
    return f"{claim.measured_bound} {text}" if claim.measured_bound else text


def evidence_words(evidence: str) -> str:
    """'cpu (recorded)' as 'cpu record', 'gpu (recorded, stale)' as 'gpu record (stale)', 'gpu (live)' as 'gpu, this
    build': a scale of evidence in a narrow cell."""
    scale, _, how = evidence.partition(" (")
    return {"recorded)": f"{scale} record", "recorded, stale)": f"{scale} record (stale)",
            "live)": f"{scale}, this build"}.get(how, evidence)


def origin_note(c: Claim) -> str:
    """'' for a claim of the five sources; else its provenance on a line of its own ('<br>(the book's own)')."""
    return "" if c.origin == "source" else f"<br>({html.escape(PROVENANCE_WORDS[c.origin])})"


def verdict_box_html(claims: list[Claim], doc: str, severity: Callable[[str], str]) -> str:
    """The chapter's verdicts at a glance: per claim at its strongest evidence, its number (a link to the ledger), the
    claim in short (:func:`short_statement`), its source, verdict, scale of evidence and severity (``severity``: claim
    key -> 'formal' or 'substantive', the ledger's notes); rows carry the ids ``claim-<key>`` that the ledger links
    back to."""

    shown = strongest_claims(claims)
    numbers = claim_numbers(claims)
    shorts = [short_statement(c.statement) for c in shown]
    clash = {s for s in shorts if shorts.count(s) > 1}  # claims told apart only by their details keep them
    summary = tallies_html(shown)
    rows = []
    for c, short in zip(shown, shorts):
        text = short_statement(c.statement, limit=200, details=True) if short in clash else short
        verdict = html.escape(c.verdict_text())
        if c.verdict == "fails":  # which side, and by how much: a 'fails' of '= 0' may be a win
            verdict += f"<br><small>{html.escape(miss_words(c))}</small>"
        if c.corrected is not None and c.verdict == "fails":
            verdict += f"<br><small>corrected: {html.escape(str(c.corrected_verdict))}</small>"
        if c.gpu_reason():  # a gpu-only claim its run cannot decide: what that run measured, then the others
            verdict += (f"<br><small>{html.escape(c.evidence_words)}: {bounded(c, fmt(c.measured))}, "
                        f"{c.check_verdict}</small>")
        verdict += beside_html(c, claims)
        n = numbers[claim_ref(c)]
        source = address_breaks(html.escape(c.source)) + origin_note(c)
        rows.append(
            f'<tr id="claim-{html.escape(c.key)}"><td><a href="ledger.html#{html.escape(ledger_id(doc, c))}" '
            f'title="{html.escape(doc)}.{n} in the ledger">{n}</a></td>'
            f"<td>{html.escape(text)}</td><td><small>{source}</small></td>"
            f'<td style="color:{VERDICT_COLOURS[c.verdict]};font-weight:bold">{verdict}</td>'
            f"<td><small>{html.escape(c.evidence_words)}<br>{severity(c.key)}</small></td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("#", "claim", "source", "verdict", "evidence, severity"))
    return (f'{claims_table_css()}<details class="verdict-box" open><summary><strong>Verdicts</strong>: '
            f"{len(shown)} claims, each at its strongest evidence. {summary}</summary>"
            f"{box_summary_html(shown, doc, numbers)}"
            f'<table class="claims-table verdict-box-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></details>'
            '<p><small>Symbols and terms: <a href="notation.html">notation and glossary</a>. Severity and the '
            'verdicts: <a href="ledger.html">claims ledger</a>.</small></p>')


@dataclass
class ChapterClaims:
    """The claims of one chapter; ``record`` adds, displays and (during a book build) stores them."""

    chapter: str
    title: str
    claims: list[Claim] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.chapter or "/" in self.chapter or self.chapter.startswith("."):
            raise ValueError(f"chapter must be a plain document name; got {self.chapter!r}")

    def record(self, claim: Claim) -> Claim:
        """Add (or replace, by key and run) a claim, store the chapter's claims, and return the claim."""
        self.claims = [c for c in self.claims if c.slug != claim.slug] + [claim]
        self.save()
        return claim

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"chapter": self.chapter, "title": self.title, "claims": [c.to_dict() for c in self.claims]}

    def save(self, directory: str | os.PathLike[str] | None = None) -> Path | None:
        """Write the claims to ``directory`` (default $ANALYSIS_CLAIMS_DIR; nothing when unset)."""
        target = directory if directory is not None else os.environ.get(CLAIMS_DIR_ENV)
        if not target:
            return None
        path = Path(target) / f"{self.chapter}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        os.replace(tmp, path)
        return path

    def _repr_html_(self) -> str:
        return claims_html(self.claims, self.chapter)


def load_chapter_claims(path: str | os.PathLike[str]) -> ChapterClaims:
    """Read a file written by :meth:`ChapterClaims.save`; a malformed file raises ValueError naming it."""
    p = Path(path)
    try:
        d = json.loads(p.read_text())
        return ChapterClaims(d["chapter"], d["title"], [Claim.from_dict(c) for c in d["claims"]])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{p}: not a valid claims file ({err})") from err
