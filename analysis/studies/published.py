"""What published work reports on the questions this book measures, and at what scale, set beside this book's
verdicts: one table per chapter (:func:`published_table`), so that a reader sees where a verdict disagrees with
published work and why it might.

Each study keeps its rows in ``analysis/studies/<chapter>/published.py`` (``ROWS``), collected by
:func:`published_rows`. Each :class:`Published` row quotes one source's reported numbers (from its abstract, or for
GAU-α from its released code and its CLUE table), the scale they were measured at, the claims of this book that
address the same question (rendered with their verdict and the scale of the run behind them), and why the two may
differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.core.verify import SIGNS, bounded, claim_numbers, claim_ref, ledger_link
from analysis.studies.parts import study_parts

# The config fields that say at what scale an experiment's run was made, shown beside its claims
SCALE_FIELDS: dict[str, tuple[str, ...]] = {
    "gau-quality": ("d", "layers", "ctx", "steps", "seeds"),
    "gau-length": ("d", "layers", "ctx", "text_steps", "seeds"),
    "flash-bench": ("d", "layers", "lengths"),
    "widening": ("train_d", "train_layers", "ctx", "wide_steps", "seeds"),
    "deep-gau": ("d", "depths", "steps", "seeds"),
    "norms-depth": ("depth_d", "depths", "d", "layers", "steps", "seeds"),  # the one-step depth sweep, the trained pair
    "softmax-scale-recall": ("d", "pairs", "steps", "seeds"),
    "attention-basics": (),  # each claim states the sizes it was measured at (d = 1 to 2,048, d = 512, ...)
    "ffn-basics": (),
    "gau-init": ("ns", "ss", "widths", "seeds"),
    "coord-check": ("widths", "depths", "ctx"),
    "entropy-bound": ("sample_classes", "samples_per_cell"),
    "entropy-lm": ("model.d", "model.layers", "model.ctx", "train.steps"),  # a dotted name reads a nested field
    "scale-gradient-notes": (),  # each claim states its n, d and scales
}


@dataclass(frozen=True)
class Published:
    """One source's reported result, its scale, the claims of this book on the same question, and why they may
    differ."""

    source: str
    address: str
    reports: str
    scale: str
    chapters: tuple[str, ...]
    claims: tuple[tuple[str, str], ...]  # (experiment, claim key)
    why: str


def published_rows() -> tuple[Published, ...]:
    """Every study's rows (``analysis/studies/<chapter>/published.py``, its ``ROWS``), in the order of the studies."""
    return tuple(row for _, module in study_parts("published") for row in module.ROWS)


def rows_for(chapter: str) -> list[Published]:
    """The published rows shown in ``chapter``."""
    return [p for p in published_rows() if chapter in p.chapters]


def distinct_digits(a: float, b: float, least: int = 3, most: int = 12) -> tuple[str, str]:
    """``a`` and ``b`` to ``least`` significant digits, or to the fewest (up to ``most``) at which two different
    numbers print differently (2,099,712 against 2,097,152 is 2.100e+06 against 2.097e+06, not 2.1e+06 twice)."""
    if least < 1 or most < least:
        raise ValueError(f"least must be in [1, most]; got least={least}, most={most}")
    for digits in range(least, most + 1):
        flag = "#" if digits > least else ""  # past the least digits, trailing zeros are digits shown on purpose
        pair = (f"{a:{flag}.{digits}g}", f"{b:{flag}.{digits}g}")
        if a == b or pair[0] != pair[1]:
            return pair
    return f"{a:.{least}g}", f"{b:.{least}g}"  # alike to the most digits: shown as alike as they print


def _shown(value: Any) -> str:
    """A config value as the table prints it, in words: a list or tuple as 'a, b and c'."""
    if isinstance(value, (list, tuple)):
        items = [_shown(v) for v in value]
        return " and ".join(items) if len(items) <= 2 else ", ".join(items[:-1]) + " and " + items[-1]
    return str(value)


def config_field(cfg: Any, name: str) -> Any:
    """The field ``name`` of a config (a dataclass, or a record's stored dict); a dotted name reads a nested field."""
    value = cfg
    for part in name.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


def _scale_text(ch: Any, experiment: str) -> str:
    """The run behind an experiment's claims in ``ch``, marked stale when it is, and the config fields that say its
    scale, from the config the run was made with (:meth:`analysis.studies.chapter.RunSet.settings`)."""
    run = ch.best(experiment)
    cfg = run.settings(experiment)
    shown = []
    for name in SCALE_FIELDS.get(experiment, ()):
        shown.append(f"{name.rsplit('.', 1)[-1]} = {_shown(config_field(cfg, name))}")
    key = f"{run.key}, stale" if run.stale else run.key
    return f"{key}{': ' + '; '.join(shown) if shown else ''}"


def _ours(ch: Any, row: Published) -> str:
    """This book's claims on the row's question: the claim's number in the chapter (linked to the ledger; its key only
    when the claim has no number, measured by a smoke run alone), verdict, measured against predicted with the
    claim's relation (< 0, not a bare 0, for 'below 0'), and the run's scale."""

    numbers = claim_numbers(ch.claims.claims)
    parts, scales = [], {}
    for experiment, key in row.claims:
        if experiment not in ch.runs:
            continue
        try:
            c = ch.claim(experiment, key)
        except KeyError:
            parts.append(f"`{key}`: not measured by this build's runs")
            continue
        unit = f" {c.unit}" if c.unit else ""
        measured, predicted = distinct_digits(c.measured, c.predicted)
        number = numbers.get(claim_ref(c))
        name = f"`{key}`" if number is None else ledger_link(ch.doc, c, number)  # the number, not the code name
        parts.append(f"{name}: **{c.verdict}** ({bounded(c, measured)}{unit} measured, {SIGNS[c.kind]} {predicted}{unit} "
                     f"predicted)")
        if experiment not in scales:
            scales[experiment] = _scale_text(ch, experiment)
    return "; ".join(parts + [f"({s})" for s in scales.values()]) or "-"


def published_table(chapter: str, ch: Any) -> str:
    """Markdown: one row per published result shown in ``chapter``: source, what it reports, at what scale, this
    book's claims on the same question with their verdicts and scale, and why they may differ."""
    rows = rows_for(chapter)
    if not rows:
        raise ValueError(f"chapter {chapter!r} shows no published results; chapters with some: "
                         f"{', '.join(sorted({c for p in published_rows() for c in p.chapters}))}")
    head = "| source | reports | at what scale | this book | why they may differ |\n|---|---|---|---|---|"
    lines = [f"| [{p.source}]({p.address}) | {p.reports} | {p.scale} | {_ours(ch, p)} | {p.why} |" for p in rows]
    return "\n".join([head, *lines])
