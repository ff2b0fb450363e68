#!/usr/bin/env bash
# A lent GPU session's one command, run from the repository root on the GPU machine:
#   bash scripts/lease.sh LIMIT [more arguments of 'python -m analysis lease run']
# LIMIT is the limit the command runs under (540, 590s, 9m): the lease's deadline is counted from this script's
# start, so a slow machine start costs the queue, not the packing. Carry .lease (python -m analysis lease prepare
# makes it here). After every finished trial, $OUT holds the new and changed results files packed as
# lease-results*.tar.gz, with a summary and this log; here, python -m analysis lease unpack takes them in.
# PYTHON picks the interpreter (default python3).
set -uo pipefail
started=$(date +%s.%N)
cd "$(dirname "$0")/.."
out=${OUT:-_build/lease-out}
mkdir -p "$out"
limit=${1:-540}
shift || true
# compiled kernels cached in the checkout: a second command on the warm machine compiles from it
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$PWD/_build/inductor-cache}
PYTHONUNBUFFERED=1 "${PYTHON:-python3}" -m analysis lease run --limit "$limit" --started-at "$started" \
  --out "$out" "$@" 2>&1 | tee "$out/lease.log"
exit "${PIPESTATUS[0]}"
