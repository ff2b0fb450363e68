"""The three run sizes every experiment runs at: smoke (CI and the default build), cpu (a laptop), gpu.

Readers, records, the ledger and the command line (``--scale``, ``$ANALYSIS_SCALE``) call a run size its scale; the
code calls it ``size``, since in this book a scale is also the softmax's."""

from __future__ import annotations

import os
from typing import Literal, cast

Size = Literal["smoke", "cpu", "gpu"]
SIZES: tuple[Size, ...] = ("smoke", "cpu", "gpu")
ENV_VAR = "ANALYSIS_SCALE"


def validate_size(size: str) -> Size:
    """Return ``size`` if it is one of smoke, cpu, gpu; raise ValueError otherwise."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}; got {size!r}")
    return cast(Size, size)


def default_size() -> Size:
    """smoke: a build runs every experiment at smoke scale and presents the recorded runs as its evidence."""
    return "smoke"


def current_size() -> Size:
    """The run size named by $ANALYSIS_SCALE, or :func:`default_size` when it is unset."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return default_size()
    try:
        return validate_size(value)
    except ValueError as err:
        raise ValueError(f"${ENV_VAR}: {err}") from None
