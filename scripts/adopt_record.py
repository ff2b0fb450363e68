"""Adopt a record made on another machine from this repository's clean HEAD (a GPU machine, say).

The code fingerprint hashes syntax-tree dumps, which differ between Python versions (3.12 adds fields that 3.11
lacks), and a copied working tree may carry a stale .git. When the record was made from exactly this HEAD, this
sets its fingerprint to the one this Python computes for the same code, its commit to HEAD, and keeps what the
other machine reported under ``provenance.adopted``. It refuses a dirty tree or a config that differs from today's.

    python scripts/adopt_record.py RECORD.json [--out results/]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.experiments import config_for, fingerprint, get_experiment
from analysis.fingerprint import config_fingerprint


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           check=True).stdout.strip()
    if dirty:
        sys.exit(f"the tree has uncommitted changes; commit them first:\n{dirty}")
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    rec = json.loads(Path(args.record).read_text())
    module = get_experiment(rec["experiment"])
    cfg = config_for(module, rec["scale"], seed=rec["seed"], corpus_file=rec["config"].get("corpus_file"))
    if config_fingerprint(rec["config"]) != fingerprint(module, cfg)["config"]:
        sys.exit("the record's config differs from today's config at its scale: it was not made from this HEAD")
    today = fingerprint(module, cfg)
    prov = rec["provenance"]
    prov["adopted"] = {"git_commit_reported": prov.get("git_commit"), "git_dirty_reported": prov.get("git_dirty"),
                       "code_fingerprint_reported": rec["fingerprint"]["code"],
                       "note": f"made from the tree of {head[:10]} under Python {prov.get('python')}; "
                               "fingerprint recomputed here for the same code"}
    prov["git_commit"], prov["git_dirty"] = head, False
    rec["fingerprint"] = today
    out = Path(args.out) / Path(args.record).name
    out.write_text(json.dumps(rec, indent=1, allow_nan=False))
    print(f"adopted {args.record} -> {out} (code {today['code']}, commit {head[:10]})")


if __name__ == "__main__":
    main()
