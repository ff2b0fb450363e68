"""The ledger's editorial notes on this chapter's claims, keyed by claim key (a key ending in '-' covers every
claim that starts with it); :mod:`analysis.studies.notes` collects them from every chapter."""

from __future__ import annotations

# failed claims without a corrected number: what holds instead, and where
NO_CORRECTED_NUMBER: dict[str, str] = {
    "rmsnorm-notes": ("the standard RMSNorm $x/\\mathrm{RMS}(x)$, with no mean subtracted, is the formula; the "
                      "Llama code the notes quote computes it"),
    "deepnorm-bounded": ("no derived number: under AdamW DeepNorm's one-step update still grows with depth, at the "
                         "slope the claim measures; the chapter gives the slope of each arrangement"),
}

# formal claims: why the source's conclusion survives their failure
FORMAL: dict[str, str] = {
    "ln-scale": ("the output differs only through LayerNorm's $\\epsilon$ (about $4 \\times 10^{-6}$): the "
                 "invariance to scale that the claim is about holds"),
}
