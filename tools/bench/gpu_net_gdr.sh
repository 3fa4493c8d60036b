#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu_net_gdr.sh BUILD OUT [COLLS]: GPU buffers between two acted-out hosts on one GPU, through the
# gdrtest NIC (tests/plugins/testnet_gdr.c), in four ways with the same chorus-perf binary and the same
# plugin: Chorus with GPUDirect (NCCL_NET_GDR_LEVEL=SYS), Chorus host-staged (LOC), NVIDIA's NCCL with
# GPUDirect allowed (SYS) and host-staged (LOC). The plugin's counters (CUDA registrations, copies,
# flushes) go to OUT/<way>-<coll>.stats, one line per process: they show which path really ran.
# NVIDIA's NCCL is the image's Python wheel (nvidia.nccl), bound first through LD_LIBRARY_PATH.
# Written for the device machine: docs/perf/gpu-net.md quotes its output.
set -uo pipefail
B=$(cd "$1" && pwd)
OUT=$2
COLLS=${3:-broadcast allreduce sendrecv}
SWEEP=${SWEEP:--b 8 -e 128M -f 4 -n 10 -w 3 -c 1}
mkdir -p "$OUT"
NVDIR=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))")
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo CHORUS_SHARED_GPU=1 NCCL_NET_PLUGIN=gdrtest
export NCCL_DEBUG=${NCCL_DEBUG:-VERSION}
P=$B/bin/chorus-perf
[ -x "$P" ] && [ -f "$B/lib/libnccl-net-gdrtest.so" ] || { echo "missing chorus-perf or gdrtest in $B"; exit 1; }

run_way() { # way lib-path gdr-level coll
  local way=$1 libs=$2 level=$3 coll=$4
  local stats=$OUT/$way-$coll.stats
  : >"$stats"
  LD_LIBRARY_PATH=$libs NCCL_NET_GDR_LEVEL=$level TESTNET_GDR_STATS=$stats \
    timeout 240 "$P" -np 2 --hosts 2 -M cuda "$coll" $SWEEP >"$OUT/$way-$coll.txt" 2>&1
  echo "$way $coll: exit $? $(grep -c 'Out of bounds values : 0 OK' "$OUT/$way-$coll.txt") ok-lines"
}

for coll in $COLLS; do
  run_way chorus-gdr "$B/lib" SYS "$coll"
  run_way chorus-staged "$B/lib" LOC "$coll"
  run_way nccl-gdr "$NVDIR:$B/lib" SYS "$coll"
  run_way nccl-staged "$NVDIR:$B/lib" LOC "$coll"
done
# Which library each way bound, and NCCL's own word on GPUDirect for this plugin.
ldd "$P" | grep -i nccl >"$OUT/ldd-chorus.txt"
LD_LIBRARY_PATH=$NVDIR:$B/lib ldd "$P" | grep -i nccl >"$OUT/ldd-nccl.txt"
LD_LIBRARY_PATH=$NVDIR:$B/lib NCCL_NET_GDR_LEVEL=SYS NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
  timeout 60 "$P" -np 2 --hosts 2 -M cuda broadcast -b 1M -e 1M -n 2 -w 1 -c 1 >"$OUT/nccl-gdr-info.txt" 2>&1
grep -i -E "GPU Direct|GDR|NET/gdrtest|Using network" "$OUT/nccl-gdr-info.txt" | sort | uniq -c | head -20
