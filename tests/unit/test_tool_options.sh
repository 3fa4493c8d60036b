#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_tool_options.sh <chorus-perf> <chorus-info> <chorus-netcheck>: each tool prints
# "chorus-<tool> <version>" for --version; chorus-netcheck refuses a value it cannot read whole or
# that is out of range, and an unknown option, with exit status 2 and a line naming the option, and
# --mem cuda where no GPU can be used, with exit status 2 and the reason.
set -u
perf=$1 info=$2 netcheck=$3
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
fail=0
for pair in "perf:$perf" "info:$info" "netcheck:$netcheck"; do
  tool=${pair%%:*} bin=${pair#*:}
  "$bin" --version >"$out" 2>&1 || { echo "chorus-$tool --version: exit $?"; fail=1; }
  grep -qx "chorus-$tool [0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*" "$out" || {
    echo "chorus-$tool --version printed:"; cat "$out"; fail=1; }
done
refused() { # option value...: chorus-netcheck must exit 2 naming the option
  opt=$1
  "$netcheck" "$@" libnccl-net-socket.so >"$out" 2>&1
  status=$?
  [ $status = 2 ] || { echo "chorus-netcheck $*: exit $status, expected 2"; fail=1; }
  grep -q "^chorus-netcheck: .*'$opt'" "$out" || { echo "chorus-netcheck $*: no line naming $opt:"; cat "$out"; fail=1; }
  grep -q "^usage: " "$out" || { echo "chorus-netcheck $*: no usage"; fail=1; }
}
refused --perf-bytes 64X
refused --perf-bytes 0
refused --scale -3
refused --scale 2x
refused --comms 0
refused --depth 3x
refused --perf-reps ""
refused --timeout -1
refused --seed -1
refused --abi 7
refused --listen 70000
refused --peer host
refused --bogus
refused --comms
refused --mem bogus
refused --mem ""
refused --gpu -1
refused --gpu 2x
# --mem cuda where no GPU can be used (no CUDA driver here, or no GPU 1048576 where there is one):
# exit status 2 and the reason, before any rank starts.
"$netcheck" --mem cuda --gpu 1048576 libnccl-net-socket.so >"$out" 2>&1
status=$?
[ $status = 2 ] || { echo "chorus-netcheck --mem cuda --gpu 1048576: exit $status, expected 2"; cat "$out"; fail=1; }
grep -q "^chorus-netcheck: --mem cuda: .*\(no CUDA driver\|no GPU 1048576\)" "$out" || {
  echo "chorus-netcheck --mem cuda --gpu 1048576: no line with the reason:"; cat "$out"; fail=1; }
"$perf" -b 64X allreduce >"$out" 2>&1 && { echo "chorus-perf -b 64X accepted"; fail=1; }
grep -q "bad value for -b: 64X" "$out" || { echo "chorus-perf -b 64X:"; cat "$out"; fail=1; }
exit $fail
