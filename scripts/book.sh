#!/usr/bin/env bash
# Builds the HTML book into _build/html, executing every chapter.
# Scale: $ANALYSIS_SCALE (smoke | cpu | gpu); by default gpu when CUDA is
# present, else cpu. A failing cell fails the build, with its traceback.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
export ANALYSIS_SCALE=${ANALYSIS_SCALE:-$(.venv/bin/python -m analysis scale-default)}
config=$(.venv/bin/python -m analysis book-config --scale "$ANALYSIS_SCALE" --out _build/config)
echo "book: building at scale '$ANALYSIS_SCALE' with $config"
.venv/bin/jupyter-book build . --all --config "$config" -W --keep-going
echo "book: open _build/html/index.html"
