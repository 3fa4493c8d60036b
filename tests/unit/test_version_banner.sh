#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_version_banner.sh <chorus-perf>: with NCCL_DEBUG=VERSION a process prints NCCL's version line
# once, naming Chorus (two communicators in one process: still once); without NCCL_DEBUG, nothing.
perf=$1
out=$(NCCL_DEBUG=VERSION "$perf" -t 2 allreduce -b 8 -e 8 -n 1 -w 0 -c 1 2>&1) || { echo "FAIL: chorus-perf: $out"; exit 1; }
n=$(printf '%s\n' "$out" | grep -c 'NCCL INFO NCCL version [0-9]*\.[0-9]*\.[0-9]* (Chorus [0-9]')
[ "$n" = 1 ] || { echo "FAIL: $n version lines with NCCL_DEBUG=VERSION:"; printf '%s\n' "$out"; exit 1; }
quiet=$(env -u NCCL_DEBUG "$perf" -t 2 allreduce -b 8 -e 8 -n 1 -w 0 -c 1 2>&1) || { echo "FAIL: $quiet"; exit 1; }
if printf '%s\n' "$quiet" | grep -q 'NCCL version'; then echo "FAIL: version line without NCCL_DEBUG"; exit 1; fi
echo "version banner: $(printf '%s\n' "$out" | grep 'NCCL version' | sed 's/.*NCCL INFO //')"
