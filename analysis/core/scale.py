"""The three scales every experiment runs at: smoke (CI and the default build), cpu (a laptop), gpu."""

from __future__ import annotations

import os
from typing import Literal, cast

Scale = Literal["smoke", "cpu", "gpu"]
SCALES: tuple[Scale, ...] = ("smoke", "cpu", "gpu")
ENV_VAR = "ANALYSIS_SCALE"


def validate_scale(scale: str) -> Scale:
    """Return ``scale`` if it is one of smoke, cpu, gpu; raise ValueError otherwise."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    return cast(Scale, scale)


def default_scale() -> Scale:
    """smoke: a build runs every experiment at smoke scale and presents the recorded runs as its evidence."""
    return "smoke"


def current_scale() -> Scale:
    """The scale named by $ANALYSIS_SCALE, or :func:`default_scale` when it is unset."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return default_scale()
    try:
        return validate_scale(value)
    except ValueError as err:
        raise ValueError(f"${ENV_VAR}: {err}") from None
