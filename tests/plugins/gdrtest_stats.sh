#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gdrtest_stats.sh: runs a multi-rank program over the gdrtest net plugin (testnet_gdr.c) and checks the
# counters each rank process appended to the stats file (TESTNET_GDR_STATS), and that a line came from
# at least RANKS processes (each writes when its last net context is finalized). In every line no
# region errors, and by the memory the program's buffers should have used:
#   host (default)  host buffers only: reg_host > 0, reg_cuda = 0, no GPU bytes, host bytes both ways
#   --cuda          GPUDirect: reg_cuda > 0, GPU bytes received, flushes > 0
#   --staged        GPU memory refused (TESTNET_GDR_FAULT=refuse-cuda): reg_refused > 0, reg_cuda = 0, no GPU
#                   bytes, host bytes both ways
#
#   gdrtest_stats.sh STATS_FILE RANKS [--cuda|--staged] -- PROGRAM [ARGS...]
#
# Exit status: the program's when it failed, else 0 when the lines hold, 1 (with the lines) when not.
set -u
usage() { echo "usage: gdrtest_stats.sh STATS_FILE RANKS [--cuda|--staged] -- PROGRAM [ARGS...]" >&2; exit 2; }
[ $# -ge 4 ] || usage
stats=$1
ranks=$2
mode=host
shift 2
case "$1" in --cuda) mode=cuda; shift ;; --staged) mode=staged; shift ;; esac
[ $# -ge 2 ] && [ "$1" = "--" ] || usage
shift
rm -f "$stats"
TESTNET_GDR_STATS=$stats "$@"
rc=$?
[ "$rc" = 0 ] || { echo "gdrtest_stats.sh: the program exited $rc"; exit "$rc"; }
[ -s "$stats" ] || { echo "gdrtest_stats.sh: no stats line in $stats"; exit 1; }
awk -v ranks="$ranks" -v mode="$mode" '
  { split("", v); for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 } pids[v["pid"]] = 1 }
  mode != "cuda" && (v["reg_host"] <= 0 || v["reg_cuda"] != 0) { bad = bad "\n  host registrations only: " $0 }
  mode != "cuda" && (v["send_cuda_bytes"] != 0 || v["recv_cuda_bytes"] != 0) { bad = bad "\n  no GPU bytes: " $0 }
  mode != "cuda" && (v["send_host_bytes"] <= 0 || v["recv_host_bytes"] <= 0) { bad = bad "\n  host bytes both ways: " $0 }
  mode == "staged" && v["reg_refused"] <= 0 { bad = bad "\n  GPU registrations refused: " $0 }
  mode == "cuda" && (v["reg_cuda"] <= 0 || v["recv_cuda_bytes"] <= 0 || v["flushes"] <= 0) {
    bad = bad "\n  GPU memory registered, received into and flushed: " $0 }
  v["region_errors"] != 0 { bad = bad "\n  no region errors: " $0 }
  END {
    n = 0; for (p in pids) n++
    if (n < ranks) bad = bad "\n  a line from each of " ranks " processes: " n " wrote"
    if (bad != "") { print "gdrtest_stats.sh: FAIL" bad; exit 1 }
    print "gdrtest_stats.sh: " NR " lines from " n " processes, " mode " memory as expected, no region errors"
  }' "$stats"
