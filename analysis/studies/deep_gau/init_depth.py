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
    """What the claim eps-lambda7 decides against the source's 7, as a predicate: its verdict, and when a rival
    exponent is named, whether the run's detectable difference tells the two apart (:attr:`Claim.rival_gap`)."""
    verdict = verdict_phrase(claim.verdict_text())
    if claim.alternative is None or claim.detectable is None or claim.rival_gap is None:
        return verdict
    rival, gap, det = -claim.alternative, claim.rival_gap, claim.detectable
    if det > gap:
        return (f"{verdict}: this run detects differences in p of {det:.3g} or more, and the source's 7 and the "
                f"previous chapter's {rival:.3g} differ by only {gap:.3g}, so it cannot tell the two apart")
    return (f"{verdict}, and this run tells the source's 7 from the previous chapter's {rival:.3g}: it detects "
            f"differences of {det:.3g}, less than the {gap:.3g} between them")


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
    """At lambda = 1/2: the range of dev_L / (sqrt(L) eps) over the depths, the deepest stack's dev_L, the verdicts of
    the random-walk and near-identity claims; and the one-layer gradient ratio at each lambda."""
    half = s.get("0.5")
    if half is None:
        return {"init_walk_range": "n/a", "init_deep_dev": "n/a", "init_walk_verdict": "is not measured",
                "init_near_verdict": "is not measured",
                "init_grad_one": ", ".join(f"{b['rows'][0]['grad_ratio']:.4g} at λ = {lam}" for lam, b in s.items())}
    ratios = [r["dev"] / r["walk"] for r in half["rows"]]
    return {
        "init_walk_range": f"{min(ratios):.2f} to {max(ratios):.2f}",
        "init_walk_verdict": verdict_phrase(ch.claim("deep-gau-init", "random-walk").verdict_text()),
        "init_deep_dev": f"{half['rows'][-1]['dev']:.2g}",
        "init_near_verdict": verdict_phrase(ch.claim("deep-gau-init", "ten-thousand-near-identity").verdict_text()),
        "init_grad_one": " and ".join(f"{b['rows'][0]['grad_ratio']:.4g} at λ = {'1/2' if lam == '0.5' else lam}"
                                      for lam, b in s.items()),
    }


def far_distance(dev: float, within: float = 0.02) -> str:
    """The deepest stack's dev_L beside sqrt(2), the distance of an independent vector of the same norm: 'near' within
    ``within`` (relative), else 'short of' or 'beyond'."""
    root = math.sqrt(2)
    where = "near" if abs(dev / root - 1) <= within else "short of" if dev < root else "beyond"
    return f"{dev:.2f}, {where} √2 ≈ {root:.3f}"


def depth_facts(ch: Any) -> dict[str, Any]:
    """Run label and sizes, the one-layer change eps at each lambda, the table, where the stack at lambda = 1 forgets
    its input (dev_L above 1) and where its gradient overflows float32."""
    run = ch.best("deep-gau-init")
    s = dgi.summary(run.data)
    rows = s["1"]["rows"] if "1" in s else []
    forget = next((r["depth"] for r in rows if r["dev"] > 1), None)
    overflow = next((r["depth"] for r in rows if not math.isfinite(r["grad_ratio"])), None)
    z = run.data["sizes"]
    seeds = len({r["seed"] for r in run.data["runs"]})
    deepest = max(r["depth"] for r in run.data["runs"])
    return {
        "init_label": run.label,
        "init_sizes": f"d = {z['d']}, e = {z['e']}, s = {z['s']}, n = {z['n']}, {seeds} seeds",
        "init_eps_1": f"{s['1']['eps']:.3g}" if "1" in s else "n/a",
        "init_eps_half": f"{s['0.5']['eps']:.3g}" if "0.5" in s else "n/a",
        "init_half_p": (f"{-ch.claim('deep-gau-init', 'eps-lambda7').measured:.2f}"
                        if "1" in s and "0.5" in s else "n/a"),
        "init_half_judged": Markdown(half_judgement(ch.claim("deep-gau-init", "eps-lambda7"))
                             if "1" in s and "0.5" in s else "is not measured: the run has one weight scale"),
        "init_grad": Markdown(deep_gradient_sentence(ch.claim("deep-gau-init", "ten-thousand-gradient"),
                                                     s["0.5"]["eps"], deepest)
                              if "0.5" in s else "is not measured: the run has no stack at λ = 1/2"),
        "init_table": depth_table(run.data),
        "init_deepest": f"{deepest:,}",
        **walk_facts(ch, s),
        "init_forget": f"{forget:,} layers" if forget else "no depth measured",
        "init_far_dev": far_distance(rows[-1]["dev"]) if rows else "n/a",
        "init_overflow": f"{overflow:,} layers" if overflow else "no depth measured",
    }
