"""The deep-GAU chapter's facts about ten thousand layers at initialisation (experiment ``deep-gau-init``)."""

from __future__ import annotations

import math
from typing import Any

from analysis.core.verify import Claim, verdict_phrase
from analysis.studies.deep_gau.experiments import deep_gau_init as dgi
from analysis.studies.display import Markdown


def depth_table(data: dict[str, Any]) -> Markdown:
    """Per weight scale lambda and depth L: the mean dev_L, its random-walk prediction sqrt(L) eps, and the mean
    input-gradient ratio."""
    rows = ["| λ | L | ‖x_L − x_0‖ / ‖x_0‖ | √L · eps | ‖dl/dx_0‖ / ‖dl/dx_L‖ |", "|--:|--:|--:|--:|--:|"]
    for lam, block in dgi.summary(data).items():
        for r in block["rows"]:
            grad = f"{r['grad_ratio']:.3g}" if math.isfinite(r["grad_ratio"]) else "overflow"
            rows.append(f"| {lam} | {r['depth']:,} | {r['dev']:.3g} | {r['walk']:.3g} | {grad} |")
    return Markdown("\n".join(rows))


def half_judgement(claim: Claim) -> str:
    """What the claim eps-lambda7 decides against the source's 7: its verdict, and when a rival exponent is named, a
    second sentence on whether the run's detectable difference tells the two apart (:attr:`Claim.rival_gap`)."""
    head = f"Against the source's 7, the claim {verdict_phrase(claim.verdict_text())}."
    if claim.alternative is None or claim.detectable is None or claim.rival_gap is None:
        return head
    rival, gap, det = -claim.alternative, claim.rival_gap, claim.detectable
    if det > gap:
        return (f"{head} The run detects differences in p only of {det:.3g} or more, and the source's 7 and the "
                f"previous chapter's {rival:.3g} differ by {gap:.3g}: it cannot tell the two apart.")
    return (f"{head} The run detects differences in p of {det:.3g}, less than the {gap:.3g} between the source's 7 "
            f"and the previous chapter's {rival:.3g}, so it tells the two apart.")


def sizes_sentences(claim: Claim) -> str:
    """Whether this run's exponent p and the previous chapter's (the claim eps-lambda7's alternative) differ by more
    than the run's 95% interval, and so whether p is shown to depend on the layer's sizes."""
    if claim.alternative is None:
        return "Without the previous chapter's exponent, this run cannot say whether p depends on the layer's sizes."
    swish = "As that chapter shows, Swish is not homogeneous."
    if abs(claim.measured - claim.alternative) > claim.tolerance:
        return (f"The two exponents differ by more than this run's 95% interval of ± {claim.tolerance:.2g}, so "
                f"neither is a constant of GAU. {swish} The exponent depends on how far the layer's activations sit "
                "from Swish's linear range, and so on the sizes: the stacks here are small, the layer there is "
                "BERT-base's.")
    return (f"The two exponents lie within this run's 95% interval of ± {claim.tolerance:.2g} of each other, so "
            f"this run does not show that p depends on the layer's sizes. {swish}")


def deep_gradient_sentence(claim: Claim, eps: float, depth: int) -> str:
    """What the claim ten-thousand-gradient measured, as a predicate on 'the input gradient': as large as through one
    layer when it holds; else the ratio G_L / G_1 = e^m, and m / (L - 1), the mean change a further layer makes,
    beside eps^2, the order at which a small random change of a layer's Jacobian moves a gradient's norm."""
    m, tol = claim.measured, claim.tolerance
    if claim.verdict == "holds":
        return f"is as large as through one layer: the log of their ratio is {m:.2g} ± {tol:.2g}"
    if claim.verdict != "fails":
        return f"is {math.exp(m):.3g} times that through one layer, which {verdict_phrase(claim.verdict_text())}"
    return (f"is {math.exp(m):.3g} times that through one layer. The log of the ratio, {m:.2g} with a 95% interval "
            f"of ± {tol:.2g}, excludes the predicted 0. Over the {depth - 1:,} further layers that is "
            f"{m / (depth - 1):.2g} a layer, of the order of ε² = {eps * eps:.2g}. A small random change of each "
            f"layer's Jacobian moves a gradient's norm at second order, and {depth - 1:,} such changes add up")


def walk_facts(ch: Any, s: dict[str, Any]) -> dict[str, str]:
    """At lambda = 1/2: the range of dev_L / (sqrt(L) eps) over the depths and the verdicts of the random-walk and
    near-identity claims (the distances themselves are in the table)."""
    if s.get("0.5") is None:
        return {"init_walk_range": "n/a", "init_walk_verdict": "is not measured",
                "init_near_verdict": "is not measured"}
    ratios = [r["dev"] / r["walk"] for r in s["0.5"]["rows"]]
    return {
        "init_walk_range": f"{min(ratios):.2f} to {max(ratios):.2f}",
        "init_walk_verdict": verdict_phrase(ch.claim("deep-gau-init", "random-walk").verdict_text()),
        "init_near_verdict": verdict_phrase(ch.claim("deep-gau-init", "ten-thousand-near-identity").verdict_text()),
    }


def far_distance(dev: float, within: float = 0.02) -> str:
    """Where the deepest stack's dev_L lies beside sqrt(2), the distance of an independent vector of the same norm:
    'near' within ``within`` (relative), else 'short of' or 'beyond'; the value itself is in the table."""
    root = math.sqrt(2)
    where = "near" if abs(dev / root - 1) <= within else "short of" if dev < root else "beyond"
    return f"{where} √2 ≈ {root:.3f}"


def lecun_sentences(rows: list[dict[str, Any]]) -> str:
    """The stacks at lambda = 1 (``rows``, by depth): the depth by which their distance from the input passes 1, where
    the deepest one lies beside sqrt(2), and the depth by which the input gradient overflows float32; each sentence
    whole when that never happens."""
    if not rows:
        return "The run has no stacks at LeCun's scale."
    forget = next((r["depth"] for r in rows if r["dev"] > 1), None)
    overflow = next((r["depth"] for r in rows if not math.isfinite(r["grad_ratio"])), None)
    far = (f"at {rows[-1]['depth']:,} layers it is {far_distance(rows[-1]['dev'])}, the distance of an independent "
           "vector of the same norm.")
    head = (f"At LeCun's scale the same width forgets its input by {forget:,} layers: the distance passes 1, and {far}"
            if forget is not None else
            f"At LeCun's scale the distance stays below 1 at every depth measured, and {far}")
    tail = (f"Its input gradient is no longer finite in float32 by {overflow:,} layers." if overflow is not None else
            "Its input gradient stays finite in float32 at every depth measured.")
    return f"{head} {tail}"


def depth_facts(ch: Any) -> dict[str, Any]:
    """Run label and sizes, the exponent p of the one-layer change eps and what it says, the table, where the stack at
    lambda = 1 forgets its input (dev_L above 1) and where its gradient overflows float32."""
    run = ch.best("deep-gau-init")
    s = dgi.summary(run.data)
    both = "1" in s and "0.5" in s
    z = run.data["sizes"]
    seeds = len({r["seed"] for r in run.data["runs"]})
    deepest = max(r["depth"] for r in run.data["runs"])
    return {
        "init_label": run.label,
        "init_sizes": f"d = {z['d']}, e = {z['e']}, s = {z['s']}, n = {z['n']}, {seeds} seeds",
        "init_half_p": f"{-ch.claim('deep-gau-init', 'eps-lambda7').measured:.2f}" if both else "not measured",
        "init_half_judged": Markdown(half_judgement(ch.claim("deep-gau-init", "eps-lambda7")) if both else
                                     "The run has one weight scale, so it does not test the source's 7."),
        "init_sizes_p": Markdown(sizes_sentences(ch.claim("deep-gau-init", "eps-lambda7")) if both else
                                 "With one weight scale, the run has no exponent to set beside that chapter's."),
        "init_grad": Markdown(deep_gradient_sentence(ch.claim("deep-gau-init", "ten-thousand-gradient"),
                                                     s["0.5"]["eps"], deepest)
                              if "0.5" in s else "is not measured: the run has no stack at λ = 1/2"),
        "init_table": depth_table(run.data),
        "init_deepest": f"{deepest:,}",
        **walk_facts(ch, s),
        "init_lecun": Markdown(lecun_sentences(s["1"]["rows"] if "1" in s else [])),
    }
