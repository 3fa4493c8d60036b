#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run_on_device.sh: everything the GPU side needs checked, in ONE invocation on a machine with an
# NVIDIA GPU (written for Ubuntu 24.04, CUDA 13, cmake, gcc 13; the repository copied there).
#
#   tests/gpu/run_on_device.sh            (from anywhere; logs go to $OUT, or ./gpu-run-<date>)
#
# Steps, each with its own time limit so that one stuck step cannot eat the others (1-3 are
# device_build.sh, shared with run_gpus.sh, the runs that need several GPUs):
#   1. environment: nvidia-smi, nvcc --version, cmake/gcc versions, cores
#   2. configure a fresh build directory (-DCMAKE_CUDA_ARCHITECTURES=90); without libinih the library
#      uses its own minimal INI reader; if the full project still cannot be configured there,
#      configure the device side alone (CHORUS_DEVICE_ONLY: no gpu.nccl.* tests then)
#   3. build, timed
#   4. ctest -R '^gpu\.': arithmetic and simulation checks, collectives on 1/2/3/4/8 ranks sharing the
#      GPU, abort, API checks, and gpu.nccl.*: the public NCCL API on GPU buffers (2/3/4 ranks of one
#      process sharing the GPU: ncclCommInitAll driven by one thread, one thread per rank, CUDA graph
#      capture, abort), and gpu.procs.*: one process per rank on the GPU (CUDA IPC; collectives, a
#      killed peer)
#   5. chorus-gpu-bw: ring all-reduce, 2 ranks on the GPU, 8 B .. 256 MB, GB/s (SIMPLE and LL)
#   6. compute-sanitizer memcheck and racecheck on the 1-rank collectives (one kernel at a time is
#      enough there; the multi-rank tests need their kernels to run concurrently, which the sanitizer
#      may not allow)
#   7. PyTorch (when python3 imports torch): tests/gpu/torch_ops.py, torch_ddp.py and torch_dup_gpu.py
#      (two ranks left on GPU 0 must fail, as with NCCL), Chorus preloaded, and the README's torchrun
#      recipe (examples/torch_allreduce.py)
#   8. the docs/perf/gpu.md table: chorus-gpu-ceiling (copy rate, launch floor), then chorus-perf
#      -t 2 -M cuda for every collective, 8 B .. PERF_MAX (default 8G; checked up to 1 GB), table.md via
#      tools/bench/gpu_table.py (about 3 minutes per collective: two or three per device call)
# STEPS (default "tests bw sanitizer torch perf") picks steps 4-8; PERF_COLLS the collectives.
# The last lines printed (and $OUT/summary.txt) say what passed. Exit status: 0 when the build and
# every gpu test passed.
set -uo pipefail
# One GPU: the tables measure one GPU's memory system, and chorus-perf -t 2 would put rank 1 on a
# second GPU where there is one. On a machine with several, GPU 0 unless CUDA_VISIBLE_DEVICES says.
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
# Several ranks share a GPU here on purpose; without this, init refuses it as NCCL does.
export CHORUS_SHARED_GPU=${CHORUS_SHARED_GPU:-1}
source "$(dirname "$0")/device_build.sh"

STEPS=${STEPS:-tests bw sanitizer torch perf}
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
TESTS_RC=0

section "gpu tests"
# RUN_SERIAL tests: one at a time, each its own process with its own timeout.
# -V: the tests print one line each on success (cases run, time, abort latencies), worth keeping.
if want tests; then
  (cd "$BUILD" && timeout 900 ctest -R '^gpu\.' -V --timeout 180) 2>&1 | tee "$OUT/ctest.log"
  TESTS_RC=${PIPESTATUS[0]}
  grep -E "tests passed|tests failed|\*\*\*Skipped|\*\*\*Failed|\*\*\*Timeout|gpu.colls n=|gpu.nccl |gpu.procs |after the abort|^[0-9]+: FAIL" \
    "$OUT/ctest.log" | head -60 | tee -a "$SUMMARY"
  note "gpu tests: exit $TESTS_RC"
fi

section "bandwidth probe"
BW=$BUILD/bin/chorus-gpu-bw
if ! want bw; then
  :
elif [ -x "$BW" ]; then
  timeout 300 "$BW" --min 8 --max 256M --channels 8 2>&1 | tee "$OUT/bw.txt"
  echo "# channels sweep at 64 MB" | tee -a "$OUT/bw.txt"
  for c in 1 2 4 16; do
    timeout 60 "$BW" --min 64M --max 64M --channels $c --ms 50 2>&1 | grep -v "^#\|bytes" | sed "s/^/ch=$c /" |
      tee -a "$OUT/bw.txt"
  done
  grep -E "^ *(8|1048576|16777216|268435456) " "$OUT/bw.txt" | sed 's/^/bw: /' >>"$SUMMARY"
  grep -q "WRONG" "$OUT/bw.txt" && note "bw: WRONG RESULTS (see bw.txt)"
else
  note "bw: chorus-gpu-bw not built"
fi

section "compute-sanitizer memcheck (1 rank, quick)"
if ! want sanitizer; then
  :
elif command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/bin/test_gpu_colls" 1 --quick \
      >"$OUT/sanitizer-$tool.log" 2>&1
    SAN_RC=$?
    tail -5 "$OUT/sanitizer-$tool.log"
    note "$tool (test_gpu_colls 1 --quick): exit $SAN_RC (0 clean, 9 errors found, 124 timeout)"
  done
else
  note "memcheck: compute-sanitizer not found"
fi

section "PyTorch"
if want torch && python3 -c "import torch" 2>/dev/null; then
  for script in torch_ops torch_ddp torch_dup_gpu; do
    LD_PRELOAD=$BUILD/lib/libnccl.so.2 timeout 600 python3 "$ROOT/tests/gpu/$script.py" >"$OUT/$script.txt" 2>&1
    rc=$?
    tail -3 "$OUT/$script.txt"
    note "$script: exit $rc ($(tail -1 "$OUT/$script.txt"))"
  done
  # The README's PyTorch recipe (torchrun), as written; the build folder stands for build/.
  sh "$ROOT/tests/readme_recipes.sh" "$ROOT" "$BUILD" gpu >"$OUT/readme_gpu.txt" 2>&1
  rc=$?
  note "README gpu recipes: exit $rc ($(grep -E '^(PASS|FAIL)' "$OUT/readme_gpu.txt" | tr '\n' ' '))"
elif want torch; then
  note "torch: python3 cannot import torch here"
fi

section "perf table"
if want perf && [ -x "$BUILD/bin/chorus-gpu-ceiling" ]; then
  "$BUILD/bin/chorus-gpu-ceiling" 2>&1 | tee "$OUT/ceiling.txt"
  PERF_MAX=${PERF_MAX:-8G}
  # Warm-up, not recorded: the first collective of a run measured slow small sizes that fell along
  # the sweep (broadcast, 2026-11-23 run 3), which looks like clocks or the host settling.
  timeout 60 "$BUILD/bin/chorus-perf" -t 2 -M cuda allreduce -b 8 -e 1M -f 4 -n 300 -w 20 -c 0 -q >/dev/null 2>&1
  for coll in ${PERF_COLLS:-allreduce allgather reducescatter broadcast reduce alltoall sendrecv}; do
    # Small sizes: many iterations, checked; 128 MB .. 1 GB: few iterations, checked once; from 2 GB:
    # timed only (the host-side fill and check of gigabytes per element would take the run's time;
    # the smaller sizes check the same code paths).
    for sweep in "small 8 64M 30 3 1" "mid 128M 1G 5 1 1" "big 2G $PERF_MAX 3 1 0"; do
      set -- $sweep
      timeout 300 "$BUILD/bin/chorus-perf" -t 2 -M cuda "$coll" -b "$2" -e "$3" -f 2 -n "$4" -w "$5" -c "$6" -q \
        -J "$OUT/perf-$coll-$1.json" >"$OUT/perf-$coll-$1.txt" 2>&1 || note "perf $coll $1: FAILED"
      grep -h "Out of bounds" "$OUT/perf-$coll-$1.txt" | sed "s/^/$coll $1: /" | tee -a "$SUMMARY"
    done
  done
  python3 "$ROOT/tools/bench/gpu_table.py" "$OUT/ceiling.txt" $(ls "$OUT"/perf-*.json 2>/dev/null) >"$OUT/table.md" 2>&1
  note "perf table: $OUT/table.md"
fi

section "summary"
cat "$SUMMARY"
if [ "$TESTS_RC" != 0 ]; then
  echo "RESULT: gpu tests FAILED"
elif grep -q "gpu.colls.n2 .*Skipped" "$OUT/ctest.log"; then
  echo "RESULT: gpu tests SKIPPED (no usable GPU: see env.txt and ctest.log)"
else
  echo "RESULT: gpu tests PASSED"
fi
echo "logs: $OUT"
exit "$TESTS_RC"
