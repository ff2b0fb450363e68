"""The ledger's editorial notes on this chapter's claims, keyed by claim key (a key ending in '-' covers every
claim that starts with it); :mod:`analysis.studies.notes` collects them from every chapter."""

from __future__ import annotations

# a trained language model's calibration, whatever its architecture
CALIBRATION_NOTE = ("qualitative: at this budget the model is over-confident, its mean loss above its mean entropy "
                    "by the measured gap; calibration comes from training, not from a formula, and the chapter "
                    "compares the architectures' gaps paired by window")

# failed claims without a corrected number: what holds instead, and where
NO_CORRECTED_NUMBER: dict[str, str] = {
    "lm-calibration": CALIBRATION_NOTE,
    "lm-calibration-": CALIBRATION_NOTE,
}
