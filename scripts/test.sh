#!/usr/bin/env bash
# Runs the library's unit tests and executes every chapter (nbmake) at smoke
# scale, with the Ray executor and the Hugging Face adapter installed so that
# their tests run. Extra arguments go to pytest. TEST_CHAPTERS=0 leaves the
# chapters out (CI builds the book next, which executes every chapter).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ANALYSIS_EXTRAS="ray hf" bash scripts/setup.sh
export ANALYSIS_SCALE=smoke MPLBACKEND=Agg
# Live runs keep their trials here, keyed by config and code: the tests, the chapters and the
# book then share one run of each experiment, and a trial is run again only when its code changed.
export ANALYSIS_LIVE_CACHE=${ANALYSIS_LIVE_CACHE-$root/_build/live-trials}
targets=(tests book)
[ "${TEST_CHAPTERS:-1}" = 0 ] && targets=(tests)
exec .venv/bin/python -m pytest "${targets[@]}" --nbmake --nbmake-timeout=120 -p no:cacheprovider "$@"
