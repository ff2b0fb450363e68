"""Input checks shared by the theory modules: one clear ValueError naming the argument and its range."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def checked_array(
    values: npt.ArrayLike, name: str, ok: Callable[[FloatArray], npt.NDArray[np.bool_]], allowed: str
) -> FloatArray:
    """``values`` as float64, or ValueError "NAME must be ALLOWED; got V" with one offending value (or "must not be empty")."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError(f"{name} must not be empty")
    with np.errstate(invalid="ignore"):
        good = ok(x)
    if not np.all(good):
        raise ValueError(f"{name} must be {allowed}; got {float(x[~good].flat[0])!r}")
    return x


def checked_range(values: npt.ArrayLike, name: str, lo: float, hi: float, integer: bool = False) -> FloatArray:
    """``values`` finite in [lo, hi] (and integer-valued if ``integer``), via :func:`checked_array`."""
    kind = "an integer" if integer else "a number"

    def ok(x: FloatArray) -> npt.NDArray[np.bool_]:
        good = np.isfinite(x) & (x >= lo) & (x <= hi)
        return good & (x == np.floor(x)) if integer else good

    return checked_array(values, name, ok, f"{kind} in [{lo:g}, {hi:g}]")
