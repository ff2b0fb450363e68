"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "gelu-notes": ("GELU with erf integrated from 0, $x\\,\\Phi(x)$: see the claim 'GELU with erf from 0 ... is "
                   "what torch computes' of this chapter"),
    "swiglu-merge-training": ("qualitative: a product of matrices trains differently from the single matrix it "
                              "equals; no formula for the gap is claimed"),
}

FORMAL: dict[str, str] = {
    "ffn-8h2": "the $8H^2$ counts the weights and leaves out the biases, 0.12% of the FFN's parameters",
}
