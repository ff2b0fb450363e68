#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs the pinned requirements and the
# analysis package into it; with ANALYSIS_EXTRAS containing ray, also the pinned
# Ray executor (requirements-ray.txt), and containing hf, the pinned Hugging Face
# adapter of `analysis check` (requirements-hf.txt). Idempotent: reinstalls only
# when a requirements file or pyproject.toml changed since the last install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

py=${PYTHON:-}
if [ -z "$py" ]; then
  for cand in python3.11 python3 python; do
    if command -v "$cand" >/dev/null 2>&1; then py=$cand; break; fi
  done
fi
[ -n "$py" ] || { echo "setup: no python3 found (need Python >= 3.11)" >&2; exit 1; }
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' ||
  { echo "setup: $py is older than Python 3.11" >&2; exit 1; }

venv=$root/.venv
stamp=$venv/.installed-requirements
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -c1-64)
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing requirements into $venv (first run takes a few minutes)"
  pip_install() {
    # Some machines list local indexes that may be absent: keep those notices out.
    "$venv/bin/python" -m pip install --quiet "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  }
  pip_install -r requirements.txt
  pip_install --no-deps -e .
  echo "$want" > "$stamp"
fi

if [[ " ${ANALYSIS_EXTRAS:-} " == *" ray "* ]]; then
  ray_stamp=$venv/.installed-ray
  ray_want=$(sha256sum requirements-ray.txt | cut -c1-64)
  if [ "$(cat "$ray_stamp" 2>/dev/null)" != "$ray_want" ]; then
    echo "setup: installing the Ray executor into $venv"
    "$venv/bin/python" -m pip install --quiet -r requirements-ray.txt 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    echo "$ray_want" > "$ray_stamp"
  fi
fi

if [[ " ${ANALYSIS_EXTRAS:-} " == *" hf "* ]]; then
  hf_stamp=$venv/.installed-hf
  hf_want=$(sha256sum requirements-hf.txt | cut -c1-64)
  if [ "$(cat "$hf_stamp" 2>/dev/null)" != "$hf_want" ]; then
    echo "setup: installing the Hugging Face adapter into $venv"
    "$venv/bin/python" -m pip install --quiet -r requirements-hf.txt 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    echo "$hf_want" > "$hf_stamp"
  fi
fi
