"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "rope-recovers": ("continued training recovers most of what pairwise RoPE repetition loses but not all: the "
                      "pairwise arm still trails the placed arm by the paired gap the chapter states, a fraction "
                      "of what it loses at once; whether the rest closes with more steps is a question for a "
                      "longer run"),
}

FORMAL: dict[str, str] = {
    "layernorm-eps": ("an epsilon: keeping $\\epsilon$ unchanged moves the logits by $5 \\times 10^{-5}$ relative, "
                      "and halving it makes the widening exact"),
    "stationary": ("a rounding: the lifted gradient agrees to about $10^{-12}$ relative in float64; the identity "
                   "holds in exact arithmetic"),
}
