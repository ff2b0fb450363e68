"""The ledger's editorial notes on this chapter's claims, keyed by claim key (a key ending in '-' covers every
claim that starts with it); :mod:`analysis.studies.notes` collects them from every chapter."""

from __future__ import annotations

# failed claims without a corrected number: what holds instead, and where
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
