#!/usr/bin/env bash
# Runs the library's unit tests and executes every chapter (nbmake) at smoke
# scale, with the Ray executor and the Hugging Face adapter installed so that
# their tests run. Extra arguments go to pytest. TEST_CHAPTERS=0 leaves the
# chapters out. ANALYSIS_CHAPTER_OUTPUTS=1 (CI) keeps each executed chapter's
# outputs in its notebook and its claims in _build/claims, so that
# scripts/book.sh renders the book from them without executing any chapter a
# second time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ANALYSIS_EXTRAS="ray hf" bash scripts/setup.sh
export ANALYSIS_SCALE=smoke MPLBACKEND=Agg
# Live runs keep their trials here, keyed by config and code: the tests, the chapters and the
# book then share one run of each experiment, and a trial is run again only when its code changed.
export ANALYSIS_LIVE_CACHE=${ANALYSIS_LIVE_CACHE-$root/_build/live-trials}
pytest=(.venv/bin/python -m pytest -p no:cacheprovider)
# TEST_QUICK=1: leave out the tests marked slow (executors, kills, leases, gpu dry runs); CI runs them all
[ "${TEST_QUICK:-0}" = 1 ] && pytest+=(-m "not slow")
if [ "${TEST_CHAPTERS:-1}" = 0 ]; then
  exec "${pytest[@]}" tests "$@"
fi
if [ "${ANALYSIS_CHAPTER_OUTPUTS:-0}" = 1 ]; then
  "${pytest[@]}" tests "$@"
  # only the chapters write claims here: the unit tests open chapters on records of their own
  rm -rf _build/claims
  # the kept outputs are the book's: the kernels draw with the inline backend, as book.sh's do
  ANALYSIS_CLAIMS_DIR=$root/_build/claims exec env -u MPLBACKEND "${pytest[@]}" book --nbmake --nbmake-timeout=120 \
    --overwrite "$@"
fi
exec "${pytest[@]}" tests book --nbmake --nbmake-timeout=120 "$@"
