#!/usr/bin/env bash
# A lent GPU session's one command, run from the repository root on the GPU machine:
#   bash scripts/lease.sh 9m [more arguments of 'python -m analysis lease run']
# with .lease/ carried (python -m analysis lease prepare makes it here). It runs the campaign's next steps within
# the budget and leaves, in $OUT, the new and changed results files packed as lease-results*.tar.gz, a summary and
# this log; here, python -m analysis lease unpack takes them in. PYTHON picks the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-_build/lease-out}
mkdir -p "$out"
budget=${1:-9m}
shift || true
PYTHONUNBUFFERED=1 "${PYTHON:-python3}" -m analysis lease run --budget "$budget" --out "$out" "$@" 2>&1 |
  tee "$out/lease.log"
exit "${PIPESTATUS[0]}"
