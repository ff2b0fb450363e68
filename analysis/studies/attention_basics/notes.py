"""The ledger's editorial notes on this chapter's claims, keyed by claim key (a key ending in '-' covers every
claim that starts with it); :mod:`analysis.studies.notes` collects them from every chapter."""

from __future__ import annotations

# failed claims without a corrected number: what holds instead, and where
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

# formal claims: why the source's conclusion survives their failure
FORMAL: dict[str, str] = {
    "no-torch-rmsnorm": ("a dated fact: PyTorch added torch.nn.RMSNorm in version 2.4, after the notes were "
                         "written"),
}
