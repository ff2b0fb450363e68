"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "gau-lr-depth": ("no derived number: post-norm GAU's boundary falls by two grid steps (a ratio of 0.1) from "
                     "depth 2 to 24, and the runs above it stall at the context-free loss rather than diverge; the "
                     "chapter sets it beside the post-norm Transformer's, which trains at no learning rate at "
                     "depth 24, and the pre-norm Transformer's, which does not fall"),
    "gau-vs-strongest-transformer": ("qualitative: at depth 24 without warmup the DeepNorm Transformer reaches a "
                                     "lower loss than post-norm GAU, each at its best learning rate, by the "
                                     "measured gap; the source's 'tricks not needed' holds only against the "
                                     "post-norm Transformer"),
}

REPLACES: dict[str, str] = {
    "gau-lr-depth": ("the validation loss at a single learning rate at which no architecture diverged ('trains as "
                     "well without warmup', 'diverges in no seed': inconclusive), so warmup was never put at risk"),
    "gau-lr-no-warmup": ("the validation loss with and without warmup at a single learning rate at which nothing "
                         "diverged: it could not tell GAU from a post-norm Transformer"),
    "gau-vs-postnorm-transformer": ("the same comparison at one learning rate shared by all architectures; each "
                                    "now trains at its own best learning rate of the grid"),
}
