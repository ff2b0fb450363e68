"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

# the recall sweep's best scale by loss, at every number of pairs
RECALL_LOSS_NOTE = ("by held-out loss the best cosine scale no longer moves with the budget and lies below the "
                    "mean-field $\\alpha^*$, by the ratio the chapter states, at every number of pairs; no formula "
                    "for that ratio is derived here")

NO_CORRECTED_NUMBER: dict[str, str] = {
    "fit-normal-own-range": ("the exact mean-field maximiser $\\alpha^*(n) = \\sqrt{W_0(\\sqrt{e}\\, n/2) - 1/2}$, "
                             "derived in the chapter, replaces the fit for every $n$"),
    "fit-normal-wide-range": ("the exact mean-field maximiser $\\alpha^*(n) = \\sqrt{W_0(\\sqrt{e}\\, n/2) - 1/2}$ "
                              "replaces the fit for every $n$"),
    "fit-cosine-own-range": ("the exact mean-field maximiser for cosine scores, computed by the chapter from the "
                             "Bessel-function moment generating function, replaces the fit"),
    "finite-argmax-normal": ("on actual samples the mean objective rises towards the exact limit $L_n$ and the "
                             "typical row peaks at a multiple of $\\alpha^*$, which the claim's measured value over its "
                             "prediction gives"),
    "finite-argmax-cosine": ("on actual samples the mean objective rises towards the exact limit $L_n$ and the "
                             "typical row peaks at a multiple of $\\alpha^*$, which the claim's measured value over its "
                             "prediction gives"),
    "exact-maximiser-": ("no finite maximiser replaces it: the exact expected objective rises at every step "
                         "towards its limit $L_n = n(n-1)\\int f^2 F^{n-2}$, the density at zero of the gap "
                         "between the two largest scores; the chapter gives $L_n$ and where the objective reaches "
                         "90% and 99% of it"),
    "recall-best-scale-4": RECALL_LOSS_NOTE,
    "recall-best-scale-16": RECALL_LOSS_NOTE,
    "recall-best-scale-64": RECALL_LOSS_NOTE,
}

REPLACES: dict[str, str] = {
    "recall-best-scale-": ("asks what the corpus sweep ('trains best at $\\alpha^*(L/2)$') could not: there "
                           "$W_q, W_k$ may partly undo a dot-product scale"),
    "recall-scale-growth": "new: the corpus sweep had two lengths, and no best scale it could resolve at either",
}
