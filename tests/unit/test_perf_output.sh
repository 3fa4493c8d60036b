#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_perf_output.sh <chorus-perf> <checker.py>: chorus-perf's -J (JSON) and -C (CSV) files from
# 2 ranks with host buffers: every key and column there, the CSV rows equal to the JSON rows, the
# algorithm and protocol equal to the table's column (test_perf_output.py); a bad -J/-C value and
# a file that cannot be written are refused, naming them. Exit 77 (skipped) without python3.
set -u
perf=$1 check=$2
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0

# run NAME ARGS...: chorus-perf on 2 ranks writing NAME.json and NAME.csv, then the checker.
run() {
  name=$1
  shift
  before=$(date +%s)
  "$perf" -np 2 -T 60 "$@" -J "$tmp/$name.json" -C "$tmp/$name.csv" >"$tmp/$name.txt" 2>&1 || {
    echo "chorus-perf $*: exit $?"; cat "$tmp/$name.txt"; fail=1; return; }
  after=$(date +%s)
  python3 "$check" "$tmp/$name.json" "$tmp/$name.csv" "$tmp/$name.txt" "$before" "$after" || {
    echo "chorus-perf $*: the files do not check (above)"; fail=1; }
}
run allreduce allreduce -b 8 -e 64K -f 8 -n 2 -w 1 -c 1
run sendrecv sendrecv -b 8 -e 1K -f 8 -n 1 -w 0 -c 1 # in place not checked: #wrong N/A
run broadcast broadcast -b 4 -e 4K -f 32 -n 1 -w 0 -c 0 -r 1 # nothing checked

# refused VALUE PATTERN ARGS...: chorus-perf must fail before any rank starts, saying PATTERN.
refused() {
  pattern=$1
  shift
  "$perf" "$@" >"$tmp/refused.txt" 2>&1 && { echo "chorus-perf $*: accepted"; fail=1; }
  grep -q -- "$pattern" "$tmp/refused.txt" || { echo "chorus-perf $*: no '$pattern' in:"; cat "$tmp/refused.txt"; fail=1; }
  if grep -q "Collective test starting" "$tmp/refused.txt"; then echo "chorus-perf $*: ran"; fail=1; fi
}
refused "bad value for -C: $" allreduce -C ""
refused "bad value for -C: -q" allreduce --csv -q
refused "bad value for -J: -C" allreduce -J -C x.csv
refused "-J and -C name the same file ($tmp/same)" allreduce -J "$tmp/same" -C "$tmp/same"
refused "option requires an argument" allreduce -C

# A CSV file that cannot be written: the run fails (every rank's status), naming the file.
"$perf" -np 2 -T 60 allreduce -b 8 -e 8 -n 1 -C "$tmp/none/x.csv" >"$tmp/nodir.txt" 2>&1 &&
  { echo "chorus-perf -C $tmp/none/x.csv: exit 0"; fail=1; }
grep -q "$tmp/none/x.csv" "$tmp/nodir.txt" || { echo "chorus-perf -C into no folder:"; cat "$tmp/nodir.txt"; fail=1; }
exit $fail
