"""Check (default) or rewrite (--write) the checked-in verdict table tests/verdicts.json.

Rewrite it only on purpose, and say in the commit which verdict changed and why.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.site.verdict_table import compare, load_table, recorded_verdicts, write_table

TABLE = Path(__file__).resolve().parent.parent / "tests" / "verdicts.json"

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the table from today's claims on the records")
    args = parser.parse_args()
    current = recorded_verdicts()
    if args.write:
        write_table(current, TABLE)
        print(f"wrote {TABLE}: {sum(len(v) for v in current['records'].values())} claims")
        sys.exit(0)
    problems = compare(load_table(TABLE), current)
    print("\n".join(problems) or "verdict table: no change")
    sys.exit(1 if problems else 0)
