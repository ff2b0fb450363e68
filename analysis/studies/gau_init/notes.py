"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

NO_CORRECTED_NUMBER: dict[str, str] = {
    "rms-slope": ("the corrected RMS formula of the chapter, whose off-diagonal row mass does not shrink with n, "
                  "levels off instead of falling like $1/n$"),
    "rms-corrected-grid": ("this is the book's own corrected formula, and it misses part of the grid: the chapter "
                           "states the median, the share within 20% and the worst ratio; no better formula yet"),
    "lambda7": ("the chapter's corrected prediction is a curve over $\\lambda$, not one exponent: it is drawn "
                "beside the measured RMS and the source's $\\lambda^7$"),
    "gau-branch-size": ("no single number: the chapter's coordinate check gives the branch ratio per width, depth "
                        "and training step"),
}
