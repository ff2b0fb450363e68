"""The ledger's notes on this chapter's claims; :mod:`analysis.studies.notes` says what each table is for."""

# a trained language model's calibration, whatever its architecture
CALIBRATION_NOTE = ("qualitative: at this budget the model is over-confident, its mean loss above its mean entropy "
                    "by the measured gap; calibration comes from training, not from a formula, and the chapter "
                    "compares the architectures' gaps paired by window")

NO_CORRECTED_NUMBER: dict[str, str] = {
    "lm-calibration": CALIBRATION_NOTE,
    "lm-calibration-": CALIBRATION_NOTE,
}
