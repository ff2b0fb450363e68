"""Build plumbing for scripts/book.sh: write _config.yml for a scale and print its path.

The per-cell timeout follows the scale (smoke 120 s; cpu and gpu 1800 s); ``--execute off`` renders the outputs the
notebooks already hold.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from analysis.core.size import SIZES

CELL_TIMEOUT_S = {"smoke": 120, "cpu": 1800, "gpu": 1800}
ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=SIZES, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--execute", choices=("cache", "off"), default="cache",
                        help="off: render the outputs the notebooks hold (executed by nbmake before)")
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["timeout"] = CELL_TIMEOUT_S[args.scale]
    config["execute"]["execute_notebooks"] = args.execute
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"_config.{args.scale}.{args.execute}.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    print(path)
