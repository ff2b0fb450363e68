"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "entropy-invariance-": ("no law is derived for the ratio: the measured share of a fixed scale's entropy growth "
                            "that $\\alpha^*(n)$ leaves is the number, and the chapter plots both curves"),
    "zeros-dropout-breaks": ("qualitative: dropout multiplies each unit by its own mask, and a unit whose weights "
                             "are all zero stays at zero under any mask; what does separate zero-padded units is "
                             "random padding on one side, the comment's own scheme (its gradients are measured "
                             "beside)"),
}

FORMAL: dict[str, str] = {
    "notes-onehot-entropy": ("an epsilon: the code's clip at $10^{-10}$ adds $2.3 \\times 10^{-4}$ nats to an "
                             "entropy that is 0; the notes' curves of entropy against accuracy are not changed "
                             "visibly"),
    "nu-rounded": "a rounding: 0.6 rounds $\\nu = 0.5965$ to one digit and moves $s\\nu^6/n$ by about 4%",
}
