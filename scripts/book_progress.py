"""Keeps Jupyter Book's output quiet: the whole log goes to the file named by the first argument, and the terminal
gets one line per chapter (executed, with its time, or taken from the cache), every warning or error, and the
build's last word."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOISE = re.compile(r"Kernel is running over TCP without encryption")  # the kernel's own notice, once per chapter
PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|Traceback|Exception)\b|^\S+Error\b")
LAST_WORD = re.compile(r"build succeeded|build finished with problems|Build failed|Exception occurred")


def main() -> int:
    log_path = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/book.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as log:
        for raw in sys.stdin:
            log.write(raw)
            log.flush()
            line = ANSI.sub("", raw).rstrip("\n")
            doc = re.search(r"(book/[\w-]+)", line)
            name = doc.group(1) if doc else "a chapter"
            executed = re.search(r"Executed notebook in ([\d.]+) seconds", line)
            stamp = f"book: [{time.perf_counter() - start:6.0f} s]"
            if executed and "mystnb" in line:
                print(f"{stamp} executed {name} in {float(executed.group(1)):.0f} s", flush=True)
            elif "Using cached notebook outputs" in line and "mystnb" in line:
                print(f"{stamp} {name}: unchanged, from the cache", flush=True)
            elif (PROBLEM.search(line) and not NOISE.search(line)) or LAST_WORD.search(line):
                print(f"book: {line.strip()}", flush=True)
    print(f"book: the full log is in {log_path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
