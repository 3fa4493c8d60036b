#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ce_wait_ab.sh: the kernel copy's wait for its publish (docs/perf/gpu-2gpu.md, l3-l8 and m1), built
# several ways and timed in one call on a machine with 2 GPUs. Each variant is a build with
# -DCHR_CE_TIMING=1 plus its own CUDA flags (device/copy_engine/ce_timing.cuh prints the waits); each runs
# 2-rank broadcasts whose root's kernel copies whenever it calls first (engine from 128 MiB, no
# pulls) and the all-reduce's engine half, in both layouts, ROUNDS times, interleaved.
#
#   VARIANTS="base: wide:-DCHR_CE_COPY_THREADS=1024" OUT=$OUT/x tests/gpu/ce_wait_ab.sh
#     (name:flags per variant; the default is "base:", the build as it is)
#
# Writes $OUT/<variant>-<coll>-<layout>-<round>.txt (and .json, chorus-perf -J) and $OUT/waits.md: per run, the time per
# operation at each size (out of place / in place) and the mean publish wait per kernel copy.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/ce-wait-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# Several ranks share a GPU here on purpose; without this, init refuses it as NCCL does.
export CHORUS_SHARED_GPU=${CHORUS_SHARED_GPU:-1}
VARIANTS=${VARIANTS:-"base:"}
ROUNDS=${ROUNDS:-2}
declare -A PERF
for v in $VARIANTS; do
  name=${v%%:*}
  flags="-DCHR_CE_TIMING=1 ${v#*:}"
  # device_build.sh builds into a fresh folder and prints it as $BUILD; a subshell keeps its settings apart
  (OUT=$OUT/build-$name CUDA_DEFINES="$flags" source "$HERE/device_build.sh" >/dev/null 2>&1 && echo "$BUILD" >"$OUT/build-$name.dir")
  if [ ! -s "$OUT/build-$name.dir" ]; then
    echo "variant $name ($flags): build failed (see $OUT/build-$name)"
    continue
  fi
  PERF[$name]=$(cat "$OUT/build-$name.dir")/bin/chorus-perf
done
ENGINE="CHORUS_GPU_CE_BCAST_MIN_BYTES=134217728 CHORUS_GPU_CE_PULL=0"
for r in $(seq 1 "$ROUNDS"); do
  for layout in "-np 2" "-t 2"; do
    for name in "${!PERF[@]}"; do
      L=${layout// /}
      env $ENGINE timeout 90 "${PERF[$name]}" $layout -M cuda broadcast -b 128M -e 1G -f 2 -n 20 -w 5 -c $((r == 1)) \
        -J "$OUT/$name-broadcast-$L-$r.json" >"$OUT/$name-broadcast-$L-$r.txt" 2>&1
      env CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES=134217728 timeout 90 "${PERF[$name]}" $layout -M cuda allreduce -b 128M -e 512M \
        -f 2 -n 20 -w 5 -c $((r == 1)) -J "$OUT/$name-allreduce-$L-$r.json" >"$OUT/$name-allreduce-$L-$r.txt" 2>&1
    done
  done
done
python3 - "$OUT" >"$OUT/waits.md" <<'EOF'
import glob, json, os, re, sys
out = sys.argv[1]
print("| run | µs per size, out of place / in place | mean publish wait per kernel copy, µs (rank: copies) | check |")
print("|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(out, "*-*-*-*.txt"))):
    text = open(f).read()
    try:  # chorus-perf's own JSON (-J) for the times
        rows = json.load(open(f[:-4] + ".json"))["results"]
        cells = " ".join("%dM %.1f/%.1f" % (r["size"] >> 20, r["out_of_place"]["time"], r["in_place"]["time"]) for r in rows)
    except (OSError, ValueError, KeyError):
        cells = ""
    waits = re.findall(r"ce timing rank (\d+): (\d+) kernel copies; mean us: start after the last copy's end [\d.]+, "
                       r"publish wait ([\d.]+)", text)
    w = ", ".join("%s: %s (%s)" % (rk, pw, n) for rk, n, pw in waits if n != "0")
    ok = re.search(r"Out of bounds values : \d+ \w+", text)
    print("| %s | %s | %s | %s |" % (os.path.basename(f)[:-4], cells or "failed", w or "-", ok.group(0) if ok else "-"))
EOF
cat "$OUT/waits.md"
