"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "heads-symmetry-stable": ("qualitative: the identical-heads state is unstable; a 1e-6 asymmetry grows to the "
                              "measured spread within 300 steps"),
    "heads-dropout": ("qualitative: with attention dropout each head draws its own mask, so identical heads drift "
                      "apart; the measured spread is the evidence"),
    "pe-projected": ("the construction that does hold is RoPE, which rotates q and k after the projection: see the "
                     "claim 'With RoPE the score ... depends on $k$ only' of this chapter"),
    "mask-1e9-float16": ("not one number but another fill: the dtype's own lowest value, torch.finfo(dtype).min, "
                         "keeps every weight finite in float16 too (the claim 'Filling with the dtype's lowest "
                         "value' of this chapter)"),
}

FORMAL: dict[str, str] = {
    "no-torch-rmsnorm": ("a dated fact: PyTorch added torch.nn.RMSNorm in version 2.4, after the notes were "
                         "written"),
}
