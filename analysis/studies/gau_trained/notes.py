"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "flash-matches-flashquad-recall": ("FLASH recalls as well only while the pairs fit in its chunks: beyond them "
                                       "its linear attention, a fixed-size state, loses them (accuracy against "
                                       "pairs in the chapter)"),
    "gau-converges-slower": ("the ratio measured here, each architecture at its best learning rate, lies below the "
                             "comments' 2.5 by more than its interval, and even its direction is not resolved (the "
                             "claim 'GAU converges slower' on the direction, in this chapter); the 2.5 comes from "
                             "other tasks and scales"),
    "flash-matches-flashquad-chunks": ("with eight chunks per window FLASH ends below FLASH-Quad by the paired gap "
                                       "the chapter states: better, not 'about as good'; its local part alone also "
                                       "ends below FLASH-Quad, so at 512 tokens and a few hundred steps locality "
                                       "helps, and no single number at the source's scale replaces the claim"),
    "log-softmax-length-": ("softmax with $\\log n$ scaling does not transfer either: the chapter plots accuracy "
                            "and loss against length for every normalisation and names the one that keeps the most "
                            "recall at the longest length"),
    "log-scaling-beats-softmax": ("the $\\log n$ factor does not make softmax GAU keep more recall at 8× here; the "
                                  "chapter gives both curves"),
}
