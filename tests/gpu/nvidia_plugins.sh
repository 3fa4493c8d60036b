#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nvidia_plugins.sh: NVIDIA's own profiler and tuner plugins, built from NCCL's sources unchanged
# (ext-profiler/example, ext-profiler/inspector, ext-tuner/example, ext-tuner/basic), loaded into
# Chorus on a GPU machine. Not part of the repository: pass the folder that holds their built
# libraries.
#
#   tests/gpu/nvidia_plugins.sh PLUGIN_LIB_DIR BUILD_DIR OUT_DIR
#
# PLUGIN_LIB_DIR: libnccl-profiler-example.so, libnccl-profiler-inspector.so, libnccl-tuner-example.so,
# libnccl-tuner-basic.so. BUILD_DIR: a Chorus build (bin/chorus-perf, lib/). Each run is chorus-perf on
# GPU buffers, 2 ranks (processes) on one GPU (CHORUS_SHARED_GPU=1), checked results; what each plugin
# wrote is kept under OUT_DIR, and one line per check says PASS or FAIL. Exit status: failures.
set -uo pipefail
LIBS=$1
BUILD=$2
OUT=$3
mkdir -p "$OUT"
PERF=$BUILD/bin/chorus-perf
MEM=${MEM:-cuda} # host: try the script where there is no GPU
export CHORUS_SHARED_GPU=1 NCCL_NVLS_ENABLE=0
FAILS=0
verdict() { # name, condition status (0 = pass), detail
  if [ "$2" = 0 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; FAILS=$((FAILS + 1)); fi
}
perf() { # log, then chorus-perf arguments
  local log=$1
  shift
  timeout 120 "$PERF" "$@" >"$log" 2>&1
  local rc=$?
  grep -q "Out of bounds values : 0 OK" "$log" || rc=1
  return $rc
}

# 1. NVIDIA's example profiler: with a mask that leaves out the parents (its README suggests 8) and
# with every event, each event must appear in its Chrome trace, which it writes by walking from the
# GroupApi events down, so a Coll event with no parent chain would be missing.
for mask in 2 8 4095; do
  dir=$OUT/example-profiler-mask$mask
  mkdir -p "$dir"
  NCCL_PROFILER_PLUGIN=$LIBS/libnccl-profiler-example.so NCCL_PROFILE_EVENT_MASK=$mask \
    NCCL_PROFILE_DUMP_FILE=$dir/trace NCCL_PROFILE_COLL_POOL_SIZE=64 NCCL_PROFILE_COLL_API_POOL_SIZE=64 \
    NCCL_PROFILE_GROUP_API_POOL_SIZE=64 NCCL_PROFILE_GROUP_POOL_SIZE=64 \
    perf "$dir/perf.txt" -np 2 -M "$MEM" allreduce -b 8 -e 1M -f 32 -n 3 -w 1 -c 1
  rc=$?
  counts=$(python3 - "$dir" <<'EOF'
import glob, json, sys, collections
c = collections.Counter()
for f in glob.glob(sys.argv[1] + "/trace_*.json"):
    text = open(f).read().strip()
    try:
        events = json.loads(text)
    except ValueError:
        events = [json.loads(l.rstrip(",")) for l in text.splitlines()[1:] if l.strip() not in ("", "]", "{}]")]
    for e in events:
        if e.get("ph") == "b":
            c[e.get("cat", "?")] += 1
print(" ".join(f"{k}={v}" for k, v in sorted(c.items())) or "no events")
EOF
)
  ok=$rc
  echo "$counts" | grep -q "COLL=" || ok=1
  verdict "example profiler, mask $mask" $ok "chorus-perf rc $rc; trace events begun: $counts"
done

# 2. NVIDIA's Inspector: it records collectives from their Coll and KernelCh events and writes one
# JSON line per communicator and interval.
dir=$OUT/inspector
rm -rf "$dir"
mkdir -p "$dir"
NCCL_PROFILER_PLUGIN=$LIBS/libnccl-profiler-inspector.so NCCL_INSPECTOR_ENABLE=1 \
  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=500 NCCL_INSPECTOR_DUMP_DIR=$dir/dump \
  perf "$dir/perf.txt" -np 2 -M "$MEM" allreduce -b 1K -e 16M -f 16 -n 20 -w 2 -c 1
rc=$?
lines=$(cat "$dir"/dump/*.log 2>/dev/null | grep -c '"coll_perf"')
head -2 "$dir"/dump/*.log >"$dir/first-lines.txt" 2>/dev/null
ok=$rc
[ "${lines:-0}" -gt 0 ] || ok=1
verdict "Inspector, GPU buffers" $ok "chorus-perf rc $rc; $lines coll_perf records ($(head -c 300 "$dir/first-lines.txt" | tr '\n' ' '))"
# Without a usable CUDA device the Inspector declines (its init leaves the context NULL): host
# buffers must run, and destroy must not finalize that NULL context.
NCCL_PROFILER_PLUGIN=$LIBS/libnccl-profiler-inspector.so NCCL_INSPECTOR_ENABLE=1 CUDA_VISIBLE_DEVICES= \
  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=500 NCCL_INSPECTOR_DUMP_DIR=$dir/dump-nogpu \
  perf "$dir/perf-nogpu.txt" -np 2 allreduce -b 8 -e 64K -f 8 -n 3 -c 1
rc=$?
verdict "Inspector, no GPU visible, host buffers" $rc "chorus-perf rc $rc (a crash at destroy fails it)"

# 3. NVIDIA's example tuner. Its getCollInfo indexes the cost table as rows of pointers
# (collCostTable[a][p] on a float**), while NCCL, and Chorus as NCCL, pass one contiguous
# float[numAlgo][numProto]: a rule that matches dereferences two floats as a pointer and crashes, in
# NCCL too (NVIDIA/nccl issue 1974; NVIDIA's own unit test of the plugin passes row pointers). So
# the rules here name a collective that does not run: the plugin loads, reads its file, is asked for
# every all-reduce (and sets one channel, as it always does) and is finalized.
dir=$OUT/example-tuner
mkdir -p "$dir"
cat >"$dir/nccl_tuner.conf" <<'CONF'
# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
broadcast,0,65536,tree,simple,-1,-1,-1
CONF
NCCL_TUNER_PLUGIN=$LIBS/libnccl-tuner-example.so NCCL_TUNER_CONFIG_FILE=$dir/nccl_tuner.conf \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
  perf "$dir/perf.txt" -np 3 -M "$MEM" allreduce -b 8 -e 1M -f 16 -n 3 -c 1
rc=$?
asked=$(grep -c "TUNER/ExamplePlugin: No matching config found" "$dir/perf.txt")
ok=$rc
[ "$asked" -gt 0 ] || ok=1
verdict "example tuner" $ok "rc $rc; asked $asked times; $(grep -m1 -o 'uses tuner plugin.*' "$dir/perf.txt")"

# 4. NVIDIA's basic tuner: ring/simple, one channel, a context it never sets.
dir=$OUT/basic-tuner
mkdir -p "$dir"
NCCL_TUNER_PLUGIN=$LIBS/libnccl-tuner-basic.so NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
  perf "$dir/perf.txt" -np 3 -M "$MEM" allreduce -b 8 -e 1M -f 16 -n 3 -c 1
rc=$?
algos=$(awk '$1 ~ /^[0-9]+$/ {print $NF}' "$dir/perf.txt" | sort -u | tr '\n' ' ')
ok=$rc
[ "$algos" = "RING/SIMPLE " ] || ok=1
verdict "basic tuner" $ok "rc $rc; algorithms chosen: ${algos:-none}; $(grep -m1 -o 'uses tuner plugin.*' "$dir/perf.txt")"

echo "nvidia_plugins.sh: $FAILS failure(s)"
exit $FAILS
