"""A trial: one independent unit of work of an experiment (a seed x a grid point).

Kept alone, with nothing of the package imported, because every experiment split into trials imports it: its code
fingerprint (:mod:`analysis.core.fingerprint`) then follows this class only, not the machinery that runs and stores
trials (:mod:`analysis.core.trials`, :mod:`analysis.core.runner`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_=+-]*(\.[A-Za-z0-9_=+-]+)*$")


@dataclass(frozen=True)
class Trial:
    """One independent unit of work: a readable key unique in its experiment, its seed, and what sets it apart."""

    key: str
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key) or len(self.key) > 120:
            raise ValueError(f"trial key must be letters, digits and _=+-. (at most 120); got {self.key!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"trial seed must be an integer >= 0; got {self.seed!r}")
        try:
            json.dumps(dict(self.params), allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"trial {self.key!r}: params must be plain data ({err})") from None

    def __hash__(self) -> int:
        return hash((self.key, self.seed))
