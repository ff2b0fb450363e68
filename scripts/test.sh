#!/usr/bin/env bash
# Runs the library's unit tests and executes every chapter (nbmake) at smoke
# scale. Extra arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
export ANALYSIS_SCALE=smoke MPLBACKEND=Agg
exec .venv/bin/python -m pytest tests book --nbmake --nbmake-timeout=120 -p no:cacheprovider "$@"
