"""Why a failed claim carries no corrected number: one editorial sentence per claim, shown in the ledger.

A claim that fails gets a ``corrected`` prediction when one number replaces the source's. Some failures are not
of that kind: the claim is qualitative, or the replacement is a construction, a formula over a range, or another
claim of the chapter. For those, :data:`NO_CORRECTED_NUMBER` says what holds instead and where. Keys are claim keys
(the same on every run); a key ending in '-' covers every claim that starts with it.
``tests/test_ledger_notes.py`` checks that every recorded failure without a corrected number has a sentence here,
and that every sentence belongs to such failures only.
"""

from __future__ import annotations

# the recall sweep's best scale by loss, at every number of pairs
RECALL_LOSS_NOTE = ("by held-out loss the best cosine scale no longer moves with the budget and lies below the "
                    "mean-field $\\alpha^*$, by the ratio the chapter states, at every number of pairs; no formula for "
                    "that ratio is derived here")

# a trained language model's calibration, whatever its architecture
CALIBRATION_NOTE = ("qualitative: at this budget the model is over-confident, its mean loss above its mean entropy by "
                    "the measured gap; calibration comes from training, not from a formula, and the chapter compares "
                    "the architectures' gaps paired by window")

NO_CORRECTED_NUMBER: dict[str, str] = {
    # attention_basics
    "heads-symmetry-stable": "qualitative: the identical-heads state is unstable; a 1e-6 asymmetry grows to the "
                             "measured spread within 300 steps",
    "heads-dropout": "qualitative: with attention dropout each head draws its own mask, so identical heads drift "
                     "apart; the measured spread is the evidence",
    "pe-projected": "the construction that does hold is RoPE, which rotates q and k after the projection: see the "
                    "claim 'With RoPE the score ... depends on $k$ only' of this chapter",
    "mask-1e9-float16": "not one number but another fill: the dtype's own lowest value, torch.finfo(dtype).min, "
                        "keeps every weight finite in float16 too (the claim 'Filling with the dtype's lowest value' "
                        "of this chapter)",
    # norms_depth
    "rmsnorm-notes": "the standard RMSNorm $x/\\mathrm{RMS}(x)$, with no mean subtracted, is the formula; the Llama code the "
                     "notes quote computes it",
    "deepnorm-bounded": "no derived number: under AdamW DeepNorm's one-step update still grows with depth, at the "
                        "slope the claim measures; the chapter gives the slope of each arrangement",
    # entropy: every architecture's model, the same sentence
    "lm-calibration": CALIBRATION_NOTE,
    "lm-calibration-": CALIBRATION_NOTE,
    # ffn_basics
    "gelu-notes": "GELU with erf integrated from 0, $x\\,\\Phi(x)$: see the claim 'GELU with erf from 0 ... is what torch "
                  "computes' of this chapter",
    "swiglu-merge-training": "qualitative: a product of matrices trains differently from the single matrix it equals; "
                             "no formula for the gap is claimed",
    # softmax_scale
    "fit-normal-own-range": "the exact mean-field maximiser $\\alpha^*(n) = \\sqrt{W_0(\\sqrt{e}\\, n/2) - 1/2}$, derived in the "
                            "chapter, replaces the fit for every $n$",
    "fit-normal-wide-range": "the exact mean-field maximiser $\\alpha^*(n) = \\sqrt{W_0(\\sqrt{e}\\, n/2) - 1/2}$ replaces the "
                             "fit for every $n$",
    "fit-cosine-own-range": "the exact mean-field maximiser for cosine scores, computed by the chapter from the "
                            "Bessel-function moment generating function, replaces the fit",
    "finite-argmax-normal": "on actual samples the objective has no sharp maximum: its mean levels off at $h(b_n)$ "
                            "(the chapter's plateau law) and the typical row peaks at a few times $\\alpha^*$ "
                            "(the claim's measured value over its prediction gives the multiple)",
    "finite-argmax-cosine": "on actual samples the objective has no sharp maximum: its mean levels off at $h(b_n)$ "
                            "(the chapter's plateau law) and the typical row peaks far above $\\alpha^*$",
    "exact-maximiser-": "no finite maximiser replaces it: the exact expected objective rises at every step towards "
                        "its limit $L_n = n(n-1)\\int f^2 F^{n-2}$, the density at zero of the gap between the two "
                        "largest scores; the chapter gives $L_n$ and where the objective reaches 90% and 99% of it",
    "recall-best-scale-4": RECALL_LOSS_NOTE,
    "recall-best-scale-16": RECALL_LOSS_NOTE,
    "recall-best-scale-64": RECALL_LOSS_NOTE,
    # deep_gau
    "gau-lr-depth": "no derived number: post-norm GAU's boundary falls by two grid steps (a ratio of 0.1) from depth 2 "
                    "to 24, and the runs above it stall at the context-free loss rather than diverge; the chapter "
                    "sets it beside the post-norm Transformer's, which trains at no learning rate at depth 24, and "
                    "the pre-norm Transformer's, which does not fall",
    "gau-vs-strongest-transformer": "qualitative: at depth 24 without warmup the DeepNorm Transformer reaches a "
                                    "lower loss than post-norm GAU, each at its best learning rate, by the measured "
                                    "gap; the source's 'tricks not needed' holds only against the post-norm "
                                    "Transformer",
    # gau_init
    "rms-slope": "the corrected RMS formula of the chapter, whose off-diagonal row mass does not shrink with n, "
                 "levels off instead of falling like $1/n$",
    "rms-corrected-grid": "this is the book's own corrected formula, and it misses part of the grid: the chapter "
                          "states the median, the share within 20% and the worst ratio; no better formula yet",
    "lambda7": "the chapter's corrected prediction is a curve over $\\lambda$, not one exponent: it is drawn beside the "
               "measured RMS and the source's $\\lambda^7$",
    "gau-branch-size": "no single number: the chapter's coordinate check gives the branch ratio per width, depth "
                       "and training step",
    # flash
    "leak-source-as-printed-flash-1-g-1-n-c": "the linear term must be divided by the keys it sums, $(g - 1)\\,c$ for "
                                              "chunk $g$: the claim on this book's FLASH (linear / keys summed) holds",
    "two-gau-params": "two GAU layers hold $12d^2 + 2ds$ weights (and the scale-offsets) against $12d^2$: the ratio "
                      "tends to 1 only as $d \\to \\infty$, and the chapter gives it per width",
    "quad-batch-unfused": "against the unfused Transformer++ FLASH-Quad fits the measured batch ratio, more than against "
                          "the fused one but outside 'about 2x' (1.5 to 2.5); the chapter gives both ratios",
    "quad-batch": "against a Transformer that stores its attention matrix (unfused) FLASH-Quad fits the larger batch: "
                  "see the claim on the unfused Transformer in this chapter",
    "quad-batch-base": "at the source's base size FLASH-Quad fits about 2x the batch of a Transformer that stores its "
                       "softmax, as the source's did (the claim on the written-out attention, which holds); a fused "
                       "attention kernel saves no n×n matrix, and against it FLASH-Quad fits the smaller batch",
    "kernel-exact-float16": "the bound is first order in the unit roundoff and counts seven roundings on the longest "
                            "chain; float16's measured error exceeds it by about 6% on the GPU (the same check holds on "
                            "the CPU's interpreter), and no second-order bound is derived here: the measured error is "
                            "the number",
    "kernel-peak-": "a target this book set its kernel, not a prediction of the sources: the attention's measured "
                    "fraction of the bf16 peak at each length is the number, and the chapter gives it",
    "kernel-vs-transformer-n4096": "a target this book set its kernel: beyond n = 2,048 the GAU layer on the kernel "
                                   "falls behind the Transformer++ layer with FlashAttention, by the measured ratio",
    "kernel-vs-transformer-n8192": "a target this book set its kernel: the measured ratio to the Transformer++ layer "
                                   "at this length is the number",
    "kernel-vs-transformer-n16384": "a target this book set its kernel: the measured ratio to the Transformer++ layer "
                                    "at this length is the number",
    # gau_trained
    "flash-matches-flashquad-recall": "FLASH recalls as well only while the pairs fit in its chunks: beyond them its "
                                      "linear attention, a fixed-size state, loses them (accuracy against pairs in "
                                      "the chapter)",
    "gau-converges-slower": "the ratio measured here, each architecture at its best learning rate, lies below the "
                            "comments' 2.5 by more than its interval, and even its direction is not resolved (the "
                            "claim 'GAU converges slower' on the direction, in this chapter); the 2.5 comes from "
                            "other tasks and scales",
    "flash-matches-flashquad-chunks": "with eight chunks per window FLASH ends below FLASH-Quad by the paired gap the "
                                      "chapter states: better, not 'about as good'; its local part alone also ends "
                                      "below FLASH-Quad, so at 512 tokens and a few hundred steps locality helps, and "
                                      "no single number at the source's scale replaces the claim",
    "log-softmax-length-": "softmax with $\\log n$ scaling does not transfer either: the chapter plots accuracy and loss "
                           "against length for every normalisation and names the one that keeps the most recall at "
                           "the longest length",
    "log-scaling-beats-softmax": "the $\\log n$ factor does not make softmax GAU keep more recall at 8× here; the chapter "
                                 "gives both curves",
    # source_checks
    "entropy-invariance-": "no law is derived for the ratio: the measured share of a fixed scale's entropy growth that "
                           "$\\alpha^*(n)$ leaves is the number, and the chapter plots both curves",
    "zeros-dropout-breaks": "qualitative: dropout multiplies each unit by its own mask, and a unit whose weights are "
                            "all zero stays at zero under any mask; what does separate zero-padded units is random "
                            "padding on one side, the comment's own scheme (its gradients are measured beside)",
    # widening
    "rope-recovers": "continued training recovers most of what pairwise RoPE repetition loses but not all: the "
                     "pairwise arm still trails the placed arm by the paired gap the chapter states, a fraction of what "
                     "it loses at once; whether the rest closes with more steps is a question for a longer run",
}


# Claims that replace weaker ones: what the earlier claim was, and why it could not decide. Keys as above.
REPLACES: dict[str, str] = {
    "gau-lr-depth": "the validation loss at a single learning rate at which no architecture diverged ('trains as well "
                    "without warmup', 'diverges in no seed': inconclusive), so warmup was never put at risk",
    "gau-lr-no-warmup": "the validation loss with and without warmup at a single learning rate at which nothing "
                        "diverged: it could not tell GAU from a post-norm Transformer",
    "gau-vs-postnorm-transformer": "the same comparison at one learning rate shared by all architectures; each now "
                                   "trains at its own best learning rate of the grid",
    "recall-best-scale-": "asks what the corpus sweep ('trains best at $\\alpha^*(L/2)$') could not: there a dot-product "
                          "scale is undone by $W_q, W_k$ and scales differ within seed noise",
    "recall-scale-growth": "new: the corpus sweep had two lengths, and no best scale it could resolve at either",
}


def covers(note_key: str, key: str) -> bool:
    """Whether a note keyed ``note_key`` applies to claim ``key``: the same claim, or any claim starting with a
    ``note_key`` that ends in '-'."""
    return key.startswith(note_key) if note_key.endswith("-") else key == note_key


def _lookup(table: dict[str, str], key: str) -> str | None:
    return next((v for k, v in table.items() if covers(k, key)), None)


def reason(key: str) -> str | None:
    """The sentence for claim ``key``, or None."""
    return _lookup(NO_CORRECTED_NUMBER, key)


def replaces(key: str) -> str | None:
    """What claim ``key`` replaces and why, or None."""
    return _lookup(REPLACES, key)


# The severity of a claim: what it would mean for the source if the claim failed. A claim is *formal* when its
# conclusion survives a failure, which then lies in a printed digit, a rounding, an epsilon, a bias term or a dated
# fact; every other claim is *substantive*: its failure changes what the source concludes. One sentence per formal
# claim says why; keys as above. ``tests/test_ledger_notes.py`` checks that every key names a recorded claim.
SEVERITY_RULE = ("A claim is formal when the source's conclusion survives its failure: the miss lies in a printed "
                 "digit, a rounding, an epsilon, a bias term or a dated fact. Every other claim is substantive: its "
                 "failure changes what the source concludes. The largest miss of a chapter is its largest "
                 "substantive one.")
FORMAL: dict[str, str] = {
    "ln-scale": "the output differs only through LayerNorm's $\\epsilon$ (about $4 \\times 10^{-6}$): the invariance "
                "to scale that the claim is about holds",
    "no-torch-rmsnorm": "a dated fact: PyTorch added torch.nn.RMSNorm in version 2.4, after the notes were written",
    "ffn-8h2": "the $8H^2$ counts the weights and leaves out the biases, 0.12% of the FFN's parameters",
    "layernorm-eps": "an epsilon: keeping $\\epsilon$ unchanged moves the logits by $5 \\times 10^{-5}$ relative, and "
                     "halving it makes the widening exact",
    "notes-onehot-entropy": "an epsilon: the code's clip at $10^{-10}$ adds $2.3 \\times 10^{-4}$ nats to an entropy "
                            "that is 0; the notes' curves of entropy against accuracy are not changed visibly",
    "nu-rounded": "a rounding: 0.6 rounds $\\nu = 0.5965$ to one digit and moves $s\\nu^6/n$ by about 4%",
    "stationary": "a rounding: the lifted gradient agrees to about $10^{-12}$ relative in float64; the identity holds "
                  "in exact arithmetic",
}


def severity(key: str) -> str:
    """'formal' for a claim listed in :data:`FORMAL`, else 'substantive' (the rule is :data:`SEVERITY_RULE`)."""
    return "formal" if _lookup(FORMAL, key) is not None else "substantive"


def formal_reason(key: str) -> str | None:
    """Why claim ``key`` is formal, or None when it is substantive."""
    return _lookup(FORMAL, key)
