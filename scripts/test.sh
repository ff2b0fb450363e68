#!/usr/bin/env bash
# Runs the library's unit tests and executes every chapter (nbmake) at smoke
# scale, with the Ray executor installed so that its tests run. Extra
# arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ANALYSIS_EXTRAS=ray bash scripts/setup.sh
export ANALYSIS_SCALE=smoke MPLBACKEND=Agg
# Live runs keep their trials here, keyed by config and code: the tests, the chapters and the
# book then share one run of each experiment, and a trial is run again only when its code changed.
export ANALYSIS_LIVE_CACHE=${ANALYSIS_LIVE_CACHE-$root/_build/live-trials}
exec .venv/bin/python -m pytest tests book --nbmake --nbmake-timeout=120 -p no:cacheprovider "$@"
