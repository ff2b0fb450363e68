"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "rmsnorm-notes": ("the standard RMSNorm $x/\\mathrm{RMS}(x)$, with no mean subtracted, is the formula; the "
                      "Llama code the notes quote computes it"),
    "deepnorm-bounded": ("no derived number: under AdamW DeepNorm's one-step update still grows with depth, at the "
                         "slope the claim measures; the chapter gives the slope of each arrangement"),
}

FORMAL: dict[str, str] = {
    "ln-scale": ("the output differs only through LayerNorm's $\\epsilon$ (about $4 \\times 10^{-6}$): the "
                 "invariance to scale that the claim is about holds"),
}
