"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "eps-lambda7": ("$\\lambda^7$ takes Swish as homogeneous, $\\phi(\\lambda x) \\approx \\lambda\\phi(x)$, which "
                    "holds only for small pre-activations; between $\\lambda = 1$ and $1/2$ the post-norm layer's "
                    "change falls by the exponent the chapter measures, and no closed form for it at these sizes "
                    "is derived here"),
    "ten-thousand-gradient": ("the claim is first order in a layer's change $\\varepsilon$; the measured log ratio "
                              "is of the order of $(L - 1)\\,\\varepsilon^2$, the second-order term each layer's "
                              "small random Jacobian adds, and the chapter gives both; the coefficient is not "
                              "derived here"),
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
