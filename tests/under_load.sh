#!/usr/bin/env bash
# under_load.sh: the whole test suite while other work keeps the CPUs busy. A test may not fail
# because the machine is slow; run this before each stop.
#   tests/under_load.sh              build (./build.sh), then ctest with two CPU-bound processes beside it
#   HOGS=4 tests/under_load.sh       another number of busy processes
#   tests/under_load.sh -R ofi       extra arguments go to ctest
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HOGS=${HOGS:-2}

"$ROOT/build.sh"

pids=()
stop_hogs() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$HOGS"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "under_load.sh: $HOGS CPU-bound processes running beside the suite (pids ${pids[*]})"
ctest --test-dir "$ROOT/build/cmake" --output-on-failure -j "${CTEST_JOBS:-2}" "$@"
