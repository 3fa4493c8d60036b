#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_tools_on_path.sh <bin dir> <lib dir>: chorus-info and chorus-netcheck started by name through
# PATH, from another folder, find Chorus's own plugins in <lib dir>: their argv[0] then has no
# folder, so the loader must take the program's folder from /proc/self/exe (core/util/own_dir.h).
set -u
bin=$1 lib=$(cd "$2" && pwd -P) || exit 2
dir=$(mktemp -d /tmp/chorus-path-test.XXXXXX) || exit 2
trap 'rm -rf "$dir"' EXIT
fail=0
cd "$dir" || exit 2
env -i PATH="$bin:/usr/bin:/bin" HOME="$dir" chorus-info >out 2>&1 || { echo "chorus-info: exit $?"; fail=1; }
grep -q "^  socket: $lib/libnccl-net-socket\.so: name Socket" out || {
  echo "chorus-info through PATH: no socket plugin from $lib"; cat out; fail=1; }
env -i PATH="$bin:/usr/bin:/bin" HOME="$dir" NCCL_SOCKET_IFNAME=lo chorus-netcheck --no-perf --scale 0.1 socket \
  >out 2>&1 || { echo "chorus-netcheck: exit $?"; cat out; fail=1; }
grep -q "^result: PASS" out || { echo "chorus-netcheck through PATH did not pass"; cat out; fail=1; }
exit $fail
