"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "leak-flash-printed": ("the linear term must be divided by the keys it sums, $(g - 1)\\,c$ for chunk $g$: "
                           "the claim on this book's FLASH (linear / keys summed) holds"),
    "two-gau-params": ("two GAU layers hold $12d^2 + 2ds$ weights (and the scale-offsets) against $12d^2$: the "
                       "ratio tends to 1 only as $d \\to \\infty$, and the chapter gives it per width"),
    "quad-batch-unfused": ("against the unfused Transformer++ FLASH-Quad fits the measured batch ratio, more than "
                           "against the fused one but outside 'about 2x' (1.5 to 2.5); the chapter gives both "
                           "ratios"),
    "quad-batch": ("against a Transformer that stores its attention matrix (unfused) FLASH-Quad fits the larger "
                   "batch: see the claim on the unfused Transformer in this chapter"),
    "quad-batch-base": ("at the source's base size FLASH-Quad fits about 2x the batch of a Transformer that stores "
                        "its softmax, as the source's did (the claim on the written-out attention, which holds); a "
                        "fused attention kernel saves no n×n matrix, and against it FLASH-Quad fits the smaller "
                        "batch"),
    "kernel-exact-float16": ("the bound is first order in the unit roundoff and counts seven roundings on the "
                             "longest chain; float16's measured error exceeds it by about 6% on the GPU (the same "
                             "check holds on the CPU's interpreter), and no second-order bound is derived here: "
                             "the measured error is the number"),
    "kernel-peak-": ("a target this book set its kernel, not a prediction of the sources: the attention's measured "
                     "fraction of the bf16 peak at each length is the number, and the chapter gives it"),
    "kernel-vs-transformer-n4096": ("a target this book set its kernel: beyond n = 2,048 the GAU layer on the "
                                    "kernel falls behind the Transformer++ layer with FlashAttention, by the "
                                    "measured ratio"),
    "kernel-vs-transformer-n8192": ("a target this book set its kernel: the measured ratio to the Transformer++ "
                                    "layer at this length is the number"),
    "kernel-vs-transformer-n16384": ("a target this book set its kernel: the measured ratio to the Transformer++ "
                                     "layer at this length is the number"),
}
