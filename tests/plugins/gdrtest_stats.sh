#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gdrtest_stats.sh: runs a multi-rank program over the gdrtest net plugin (testnet_gdr.c) and checks the
# counters each rank process appended to the stats file (TESTNET_GDR_STATS): a line from at least RANKS
# processes (each writes when its last net context is finalized), no region errors in any, and
#   host buffers (the default): reg_host > 0, reg_cuda = 0, no GPU bytes, host bytes sent and received;
#   --gpu (GPU buffers, or host memory taken as such under TESTNET_GDR_HOST_AS_CUDA=1): reg_cuda > 0,
#         GPU bytes sent and received, flushes > 0;
#   --staged (GPU memory the NIC refuses, TESTNET_GDR_FAULT=refuse-cuda: the caller stages through host
#         memory): reg_refused > 0, and as for host buffers.
#
#   gdrtest_stats.sh [--gpu|--staged] STATS_FILE RANKS -- PROGRAM [ARGS...]
#
# Exit status: the program's when it failed, else 0 when the lines hold, 1 (with the lines) when not.
set -u
mode=host
case "${1:-}" in --gpu) mode=gpu; shift ;; --staged) mode=staged; shift ;; esac
[ $# -ge 4 ] && [ "$3" = "--" ] || {
  echo "usage: gdrtest_stats.sh [--gpu|--staged] STATS_FILE RANKS -- PROGRAM [ARGS...]" >&2
  exit 2
}
stats=$1
ranks=$2
shift 3
rm -f "$stats"
TESTNET_GDR_STATS=$stats "$@"
rc=$?
[ "$rc" = 0 ] || { echo "gdrtest_stats.sh: the program exited $rc"; exit "$rc"; }
[ -s "$stats" ] || { echo "gdrtest_stats.sh: no stats line in $stats"; exit 1; }
awk -v ranks="$ranks" -v mode="$mode" '
  { split("", v); for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 } pids[v["pid"]] = 1 }
  mode != "gpu" && (v["reg_host"] <= 0 || v["reg_cuda"] != 0) { bad = bad "\n  host registrations only: " $0 }
  mode != "gpu" && (v["send_cuda_bytes"] != 0 || v["recv_cuda_bytes"] != 0) { bad = bad "\n  no GPU bytes: " $0 }
  mode != "gpu" && (v["send_host_bytes"] <= 0 || v["recv_host_bytes"] <= 0) { bad = bad "\n  host bytes both ways: " $0 }
  mode == "staged" && v["reg_refused"] <= 0 { bad = bad "\n  GPU registrations refused: " $0 }
  mode == "gpu" && v["reg_cuda"] <= 0 { bad = bad "\n  GPU registrations: " $0 }
  mode == "gpu" && (v["send_cuda_bytes"] <= 0 || v["recv_cuda_bytes"] <= 0) { bad = bad "\n  GPU bytes both ways: " $0 }
  mode == "gpu" && v["flushes"] <= 0 { bad = bad "\n  flushes: " $0 }
  v["region_errors"] != 0 { bad = bad "\n  no region errors: " $0 }
  END {
    n = 0; for (p in pids) n++
    if (n < ranks) bad = bad "\n  a line from each of " ranks " processes: " n " wrote"
    if (bad != "") { print "gdrtest_stats.sh: FAIL" bad; exit 1 }
    if (mode == "gpu") print "gdrtest_stats.sh: " NR " lines from " n " processes, GPU registrations, bytes and flushes, no region errors"
    else if (mode == "staged") print "gdrtest_stats.sh: " NR " lines from " n " processes, GPU memory refused, staged through host memory, no region errors"
    else print "gdrtest_stats.sh: " NR " lines from " n " processes, host memory only, no region errors"
  }' "$stats"
