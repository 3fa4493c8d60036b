#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# perf_calibrate.sh <chorus-perf> <chorus-info>: a short `chorus-perf --calibrate` (2 ranks, 3 sizes
# up to 4 MB, best of 2 runs: with 1 MB and one run, 1 of 8 runs beside 4 busy loops on 2 cores failed
# "net tree: the time does not grow with the size"; 0 of 8 so) writes a [cost_model] section with
# every key once and a number above 0; the library takes all of it (chorus-info: each value from
# that file, no problem that would fail init); a run limited to shm writes only the shm keys; bad
# options are refused.
set -u
perf=$1
info=$2
dir=$(mktemp -d /tmp/chorus-calibrate-test.XXXXXX) || exit 2
trap 'rm -rf "$dir"' EXIT
fail=0
short="-np 2 -b 1K -e 4M -f 64 -n 3 -w 1 --reps 2 -T 60"
# shellcheck disable=SC2086
"$perf" --calibrate $short --output "$dir/cal.ini" >"$dir/stdout" 2>"$dir/stderr" ||
  { echo "calibrate failed (exit $?):"; cat "$dir/stderr"; exit 1; }
[ -s "$dir/stdout" ] && { echo "--output also printed on stdout"; fail=1; }

# keys FILE TRANSPORTS...: every key of those transports exactly once, after [cost_model], above 0.
keys() {
  file=$1; shift
  for t in "$@"; do for a in RING TREE; do for k in LATENCY_US BANDWIDTH_GBS; do
    key=CHORUS_COST_${t}_${a}_SIMPLE_$k
    n=$(grep -c "^$key = " "$file")
    [ "$n" = 1 ] || { echo "$key appears $n times in $file"; fail=1; continue; }
    v=$(sed -n "s/^$key = //p" "$file")
    awk -v v="$v" 'BEGIN { exit !(v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 > 0) }' ||
      { echo "$key = '$v' is not a number above 0"; fail=1; }
    [ "$(awk -v k="$key" '/^\[/ { s = $0 } $1 == k { print s }' "$file")" = "[cost_model]" ] ||
      { echo "$key is not in [cost_model]"; fail=1; }
  done; done; done
}
keys "$dir/cal.ini" SHM NET
[ "$(grep -c '^CHORUS_COST_' "$dir/cal.ini")" = 8 ] || { echo "not 8 keys:"; cat "$dir/cal.ini"; fail=1; }

# The library reads it: every cost key from the file, and nothing init would refuse.
env -i HOME="$dir" PATH="$PATH" CHORUS_CONF="$dir/cal.ini" "$info" --params >"$dir/params" 2>&1 ||
  { echo "chorus-info refuses the output (exit $?):"; cat "$dir/params"; fail=1; }
n=$(grep -c "^CHORUS_COST_.* $dir/cal.ini:[0-9]" "$dir/params")
[ "$n" = 8 ] || { echo "chorus-info shows $n cost keys from the file, expected 8:"; grep COST "$dir/params"; fail=1; }

# Only the transports asked for.
# shellcheck disable=SC2086
"$perf" --calibrate $short --transports shm >"$dir/shm.ini" 2>"$dir/stderr" ||
  { echo "calibrate --transports shm failed:"; cat "$dir/stderr"; fail=1; }
keys "$dir/shm.ini" SHM
grep -q "^CHORUS_COST_NET" "$dir/shm.ini" && { echo "--transports shm wrote net keys"; fail=1; }

# Refused: one rank (no links to measure), sizes that give one point, an unknown transport.
for bad in "-np 1" "-b 1M -e 1M" "--transports ib"; do
  # shellcheck disable=SC2086
  if "$perf" --calibrate $bad >"$dir/bad" 2>&1; then echo "accepted: --calibrate $bad"; fail=1; fi
done
[ "$fail" = 0 ] || echo "files: $(ls "$dir")"
exit "$fail"
