#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_output.sh: runs a test program and checks both its exit status and its output, for tests that
# must say something particular. (ctest's PASS_REGULAR_EXPRESSION and FAIL_REGULAR_EXPRESSION ignore
# the exit status: a program that crashed after printing the right line would pass.)
#
#   expect_output.sh [--status ok|fail] [--has ERE]... [--lacks ERE]... -- PROGRAM [ARGS...]
#
#   --status ok    the program must exit 0 (the default)
#   --status fail  the program must exit non-zero, but not by a signal or a timeout(1) kill
#   --has ERE      some line of stdout+stderr must match the extended regular expression (grep -E)
#   --lacks ERE    no line may match it
# Patterns match line by line; to ask for two things in any order, give two --has.
# Exit status: 0 when every condition holds, else 1, with the failed conditions and the whole output.
set -u
want=ok
has_file=$(mktemp) || exit 1
lacks_file=$(mktemp) || exit 1
out=$(mktemp) || exit 1
trap 'rm -f "$has_file" "$lacks_file" "$out"' EXIT
while [ $# -gt 0 ]; do
  case "$1" in
    --status) want=$2; shift 2 ;;
    --has) printf '%s\n' "$2" >>"$has_file"; shift 2 ;;
    --lacks) printf '%s\n' "$2" >>"$lacks_file"; shift 2 ;;
    --) shift; break ;;
    *) echo "expect_output.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "expect_output.sh: no program given" >&2; exit 2; }
case "$want" in ok|fail) ;; *) echo "expect_output.sh: --status ok|fail, not $want" >&2; exit 2 ;; esac

"$@" >"$out" 2>&1
status=$?
fail=0
if [ "$want" = ok ] && [ "$status" -ne 0 ]; then
  echo "expect_output.sh: exit status $status, expected 0"; fail=1
elif [ "$want" = fail ] && [ "$status" -eq 0 ]; then
  echo "expect_output.sh: exit status 0, expected a failure"; fail=1
elif [ "$want" = fail ] && { [ "$status" -gt 128 ] || [ "$status" -eq 124 ]; }; then
  echo "expect_output.sh: exit status $status (killed or timed out), expected a clean failure"; fail=1
fi
while IFS= read -r pattern; do
  grep -Eq -- "$pattern" "$out" || { echo "expect_output.sh: no line matches: $pattern"; fail=1; }
done <"$has_file"
while IFS= read -r pattern; do
  if grep -Eq -- "$pattern" "$out"; then
    echo "expect_output.sh: a line matches what must not appear: $pattern"
    grep -En -- "$pattern" "$out" | head -5
    fail=1
  fi
done <"$lacks_file"
if [ "$fail" -ne 0 ]; then
  echo "---- output of: $*"
  cat "$out"
fi
exit "$fail"
