#!/usr/bin/env bash
# Builds the HTML book into _build/html.
# Scale: $ANALYSIS_SCALE, default smoke: every chapter runs its experiments live at
# smoke scale (a check that the code still runs) and presents the recorded cpu
# (and, once recorded, gpu) measurements as its evidence. ANALYSIS_SCALE=cpu or
# gpu re-measures everything live. A failing cell fails the build, with its
# traceback. A chapter is re-executed only when it, the analysis library, the
# records or the scale changed since the last build (Jupyter Book's cache).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
export ANALYSIS_SCALE=${ANALYSIS_SCALE:-smoke}
# Live runs keep their trials here, keyed by config and code: the tests, the chapters and the
# book then share one run of each experiment, and a trial is run again only when its code changed.
export ANALYSIS_LIVE_CACHE=${ANALYSIS_LIVE_CACHE-$root/_build/live-trials}
config=$(.venv/bin/python scripts/book_config.py --scale "$ANALYSIS_SCALE" --out _build/config \
  --execute "${ANALYSIS_BOOK_EXECUTE:-cache}")
# The execution cache keys on a notebook's code only: drop it (and the claims the chapters
# wrote) when the library, the records, the requirements or the scale changed.
stamp=$( (echo "$ANALYSIS_SCALE"; cat requirements.txt; find analysis results -type f \( -name '*.py' -o -name '*.json' \) \
  -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-64)
if [ "${ANALYSIS_BOOK_EXECUTE:-cache}" = off ]; then
  # the chapters were executed already (scripts/test.sh with ANALYSIS_CHAPTER_OUTPUTS=1): their outputs are in the
  # notebooks and their claims in _build/claims; render those, execute nothing
  [ -d _build/claims ] || { echo "book: ANALYSIS_BOOK_EXECUTE=off needs the chapters' claims in _build/claims" >&2; exit 1; }
  rm -rf _build/html _build/.doctrees _build/jupyter_execute
elif [ "$(cat _build/.analysis-stamp 2>/dev/null)" != "$stamp" ]; then
  rm -rf _build/.jupyter_cache _build/claims _build/html _build/.doctrees _build/jupyter_execute
fi
echo "book: building at scale '$ANALYSIS_SCALE' with $config"
start=$(date +%s)
# one line per chapter here; Sphinx's whole log in _build/book.log, whose end is shown when the build fails
log=_build/book.log
if ! .venv/bin/jupyter-book build . --config "$config" -W --keep-going 2>&1 |
  .venv/bin/python scripts/book_progress.py "$log"; then
  echo "book: the build failed; the last 60 lines of $log:"
  grep -v "copying images\.\.\." "$log" | tail -n 60
  exit 1
fi
[ "${ANALYSIS_BOOK_EXECUTE:-cache}" = off ] || echo "$stamp" > _build/.analysis-stamp
# what a reader would notice: captions, lists, unrendered syntax, GPU status, ledger ids and downloads
.venv/bin/python -m analysis.site.html_check _build/html
echo "book: done in $(( $(date +%s) - start )) s; open _build/html/index.html"
