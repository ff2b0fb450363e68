"""Passes Jupyter Book's output through, adding one line per chapter as it is executed or taken from the cache."""

from __future__ import annotations

import re
import sys
import time

START = time.perf_counter()
for line in sys.stdin:
    sys.stdout.write(line)
    m = re.search(r"(Executing notebook|Using cached notebook outputs|Executed notebook in)", line)
    if m and "mystnb" in line:
        doc = re.search(r"(book/[\w-]+)", line)
        print(f"book: [{time.perf_counter() - START:6.0f} s] {m.group(1).lower()}" + (f" {doc.group(1)}" if doc else ""),
              flush=True)
    sys.stdout.flush()
