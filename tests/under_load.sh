#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# under_load.sh: the whole test suite while other work keeps the CPUs busy. A test may not fail
# because the machine is slow; run this before each stop.
#   tests/under_load.sh              build (./build.sh), then ctest with two CPU-bound processes beside it
#   HOGS=4 tests/under_load.sh       another number of busy processes
#   tests/under_load.sh -R ofi       extra arguments go to ctest
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HOGS=${HOGS:-2}

"$ROOT/build.sh"

source "$ROOT/tools/bench/hogs.sh"
start_hogs "$HOGS"
echo "under_load.sh: $HOGS CPU-bound processes running beside the suite (pids ${HOG_PIDS[*]})"
ctest --test-dir "$ROOT/build/cmake" --output-on-failure -j "${CTEST_JOBS:-2}" "$@"
