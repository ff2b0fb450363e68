"""The widening chapter's verdict sentences: which constructions are exact, which rows of the source's table are
right, whether the commenter's LayerNorm objection holds and the chapter's summary, each worded from the verdicts of
the widening experiment's claims (and, for the copies' symmetry, from the residuals against the threshold set in
advance)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analysis.core.verify import verdict_phrase
from analysis.studies.display import Markdown
from analysis.studies.widening.experiments import widening as wx
from analysis.studies.widening.figures import printed_is_exact, split_at
from analysis.studies.text import and_list, by_verdict

if TYPE_CHECKING:
    from analysis.studies.chapter import Chapter

# claim key -> what it says is widened exactly
LOSSLESS = {"bert-lossless": "BERT", "decoder-lossless": "the decoders", "gau-lossless": "GAU and FLASH",
            "fraction-rms": "the widenings by 3/2 and 5/4"}
# claim key -> the broken construction it says changes the function
BROKEN = {"global-breaks": "global repetition", "qk-factor": "leaving out the extra factor on q and k",
          "gelu-copies": "treating GELU's W₁ as linear", "rope-pairs-approx": "pairwise RoPE"}
# the rows of the source's table (claim key table-<row>) -> their name in a sentence
TABLE_ROWS = {"embedding": "the embedding", "layernorm": "LayerNorm", "attention-qk": "attention", "attention-vo":
              "attention", "ffn1": "the first FeedForward layer", "ffn2": "the second FeedForward layer",
              "output": "the output layer"}
# the claims the summary reads besides the table's rows
SUMMARY_KEYS = ("layernorm-eps", "table-head-layernorm-text", "rope-lossy", "fraction-ln", "copies-stay")
# the symmetry variants that split the copies at widening -> their name in a sentence
FREEING = {"split": "a random split", "noise": "noise"}


def holds(verdict: str) -> bool:
    """Whether a verdict text says the claim holds (exactly or within its stated deviation)."""
    return verdict.startswith("holds")


def tally(verdicts: Mapping[str, str]) -> str:
    """'holds for a and b and fails for c': the names grouped by their verdict, in order of first appearance."""
    named = [(name, verdict_phrase(verdict)) for name, verdict in verdicts.items()]
    return " and ".join(f"{phrase} for {and_list(names)}" for phrase, names in by_verdict(named))


def exact_sentence(verdicts: Mapping[str, str]) -> str:
    """Whether the exact constructions agree to rounding: each lossless-widening claim's verdict (name -> verdict)."""
    if all(holds(v) for v in verdicts.values()):
        return "The exact constructions agree to rounding: each claim of a lossless widening holds."
    return f"The claim of a lossless widening {tally(verdicts)}."


def broken_sentence(verdicts: Mapping[str, str]) -> str:
    """Whether the broken constructions change the function: each breaking claim's verdict (name -> verdict)."""
    if all(holds(v) for v in verdicts.values()):
        return "The broken constructions miss by far more: each claim that one changes the function holds."
    return f"The claim that a broken construction changes the function {tally(verdicts)}."


def wrong_entries(verdicts: Mapping[str, str], rows: Mapping[str, Any]) -> list[str]:
    """The table's failing rows, each with the tensors whose printed factor is not the exact one ('the second
    FeedForward layer's bias'); ``verdicts`` maps a row to its claim's verdict, ``rows`` is the experiment's table."""
    out = []
    for row, name in TABLE_ROWS.items():
        if verdicts.get(row) != "fails":
            continue
        parts = []
        for tensor in rows[row]["tensors"]:
            if not printed_is_exact(tensor):
                *_, module, kind = ["", *tensor["tensor"].split(".")]
                parts.append(f"{module} {kind}" if row.startswith("attention") and module else kind)
        out.append(f"{name}'s {and_list(parts)}" if parts else name)
    return out


def rows_sentence(verdicts: Mapping[str, str], wrong: Sequence[str]) -> str:
    """Which rows of the source's table are right, from each row's claim (row -> verdict) and the failing rows with
    the tensors that are off (:func:`wrong_entries`)."""
    undecided = [f"{TABLE_ROWS[row]}, whose check is inconclusive" for row, v in verdicts.items()
                 if row in TABLE_ROWS and v != "fails" and not holds(v)]
    if not any(holds(verdicts.get(row, "")) for row in TABLE_ROWS):
        return "No row of the table is right."
    exceptions = wrong + undecided
    return f"Every row is right except {and_list(exceptions)}." if exceptions else "Every row is right."


def fraction_clause(verdict: str) -> str:
    """The lead of the sentence on widening LayerNorm by a fraction, from the verdict of the commenter's claim."""
    claim = "LayerNorm cannot be widened exactly by a non-integer factor, for widenings built from copies"
    if verdict == "holds":
        return f"The commenter is right that {claim}"
    if verdict == "fails":
        return f"The commenter is wrong that {claim}"
    return f"The claim that {claim} {verdict_phrase(verdict)}"


def source_summary(verdicts: Mapping[str, str], wrong: Sequence[str]) -> str:
    """The summary's sentences on the source: its method (BERT and the decoders), its table (``wrong`` entries and
    LayerNorm's epsilon), its text on the MLM head's LayerNorm and its RoPE pessimism, from the claims' verdicts."""
    method = {LOSSLESS[k]: verdicts[k] for k in ("bert-lossless", "decoder-lossless")}
    if all(holds(v) for v in method.values()):
        first = "The source's method is right."
    else:
        first = f"The claim that the source's method is lossless {tally(method)}."
    table = [f"is wrong on {and_list(wrong)}"] if wrong else []
    eps = verdicts["layernorm-eps"]
    if eps == "fails":
        table.append("misses LayerNorm's ε/k")
    elif not holds(eps):
        table.append("leaves LayerNorm's ε undecided")
    head = {"holds": "is right", "fails": "is wrong"}.get(verdicts["table-head-layernorm-text"], "is inconclusive")
    rope_verdict = verdicts["rope-lossy"]
    rope = {"fails": "it is too pessimistic about RoPE: placed pairs are exact",
            "holds": "it is right that RoPE widens only approximately"}.get(
        rope_verdict, f"its claim that RoPE widens only approximately {verdict_phrase(rope_verdict)}")
    return (f"{first} Its table {' and '.join(table) or 'is right'}, its text {head} about the MLM head's "
            f"LayerNorm, and {rope}.")


def rules_summary(verdicts: Mapping[str, str]) -> str:
    """Whether the same rules widen GAU and FLASH, and RMSNorm models by fractions: name -> the claim's verdict."""
    if all(holds(v) for v in verdicts.values()):
        return f"The same rules widen {and_list(list(verdicts))}."
    return f"The claim that the same rules widen a model exactly {tally(verdicts)}."


def copies_summary(verdict: str) -> str:
    """Whether exact copies stay copies when trained on, from the verdict of the copies-stay claim."""
    if verdict == "holds":
        return "Exact copies stay copies."
    if verdict == "fails":
        return "Exact copies do not stay copies: training moves the stream out of the copied subspace."
    return "Whether exact copies stay copies is inconclusive."


def copies_lead(verdict: str) -> str:
    """The commenter's point on exact copies, from the verdict of the copies-stay claim: what it means for the model
    when it holds, what it would mean when it fails."""
    claim = "identical copies receive identical gradients"
    if verdict == "holds":
        return (f"The commenter's claim holds: {claim}, so the model keeps the small model's width in its stream, its "
                "FFN and its values.")
    if verdict == "fails":
        return f"The commenter's claim that {claim} fails: training moves the stream out of the copied subspace."
    return f"The commenter's claim that {claim} {verdict_phrase(verdict)}."


def freed_summary(stream: Mapping[str, float], threshold: float = wx.BROKEN_SYMMETRY) -> str:
    """Whether a random split or noise frees the copies: a stream residual after training above ``threshold`` does,
    one at or below it does not; variants not measured are left out."""
    free, kept = split_at(stream, FREEING, threshold)
    if not free and not kept:
        return "No split or noise variant was trained."
    if not free:
        text = f"neither {' nor '.join(kept)} frees them" if len(kept) > 1 else f"{kept[0]} does not free them"
    else:
        text = f"{' or '.join(free)} frees them" + (f"; {' or '.join(kept)} does not" if kept else "")
    return text[0].upper() + text[1:] + "."


def verdict_facts(ch: Chapter, data: dict[str, Any]) -> dict[str, Markdown]:
    """The chapter's verdict sentences from the claims of widening's best run (``data`` is that run's data)."""

    def verdict(key: str) -> str:
        return ch.claim("widening", key).verdict_text()

    rows = {row: verdict(f"table-{row}") for row in TABLE_ROWS}
    summary = {key: verdict(key) for key in SUMMARY_KEYS + ("bert-lossless", "decoder-lossless")}
    stream = wx.summary(data)["symmetry_variants"]
    wrong = wrong_entries(rows, data["table"]["rows"])
    return {name: Markdown(text) for name, text in {
        "exact_lead": exact_sentence({name: verdict(key) for key, name in LOSSLESS.items()}),
        "broken_lead": broken_sentence({name: verdict(key) for key, name in BROKEN.items()}),
        "rows_verdict": rows_sentence(rows, wrong),
        "fraction_lead": fraction_clause(verdict("fraction-ln")),
        "source_summary": source_summary(summary, wrong),
        "rules_summary": rules_summary({"GAU and FLASH": verdict("gau-lossless"),
                                        "RMSNorm models by fractions": verdict("fraction-rms")}),
        "copies_summary": copies_summary(verdict("copies-stay")),
        "copies_lead": copies_lead(verdict("copies-stay")),
        "freed_summary": freed_summary(stream),
    }.items()}
