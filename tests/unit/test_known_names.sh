#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_known_names.sh <source dir>: every CHORUS_ name that plugins/ or tools/ read is one Chorus
# knows, so setting it never draws "unknown variable ... ignored": a parameter of params.def or a
# name of otherNames (core/config/config_names.c). Read means a "CHORUS_..." string in C or CUDA
# (getenv, or a helper that calls it), $CHORUS_... in shell, and os.environ or getenv in Python.
# CHORUS_TEST_ names belong to test harnesses and are known by their prefix.
set -u
cd "$1" || exit 2
known=$(mktemp) || exit 2
trap 'rm -f "$known"' EXIT
grep -oE 'CHR_PARAM\([A-Za-z0-9_]+, *"[A-Z0-9_]+"' core/config/params.def | sed 's/.*"\(.*\)"/\1/' >"$known"
sed -n '/otherNames\[\] = {/,/^};/p' core/config/config_names.c | grep -oE '"CHORUS_[A-Z0-9_]+"' | tr -d '"' >>"$known"
[ "$(grep -c . "$known")" -gt 50 ] || { echo "cannot read the known names (params.def, config_names.c)"; exit 2; }
{
  grep -rnoE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' '"CHORUS_[A-Z0-9_]*[A-Z0-9]"' plugins tools
  grep -rnoE --include='*.sh' '\$\{?CHORUS_[A-Z0-9_]*[A-Z0-9]' plugins tools
  grep -rnoE --include='*.py' '(environ(\.get)?[[(]|getenv\()"CHORUS_[A-Z0-9_]*[A-Z0-9]"' plugins tools
} | sed -E 's/^([^:]*):([0-9]*):.*(CHORUS_[A-Z0-9_]*).*/\3 \1:\2/' | {
  fail=0
  while read -r name where; do
    case "$name" in CHORUS_TEST_*) continue ;; esac
    grep -qx "$name" "$known" && continue
    echo "$where reads $name, which is neither in core/config/params.def nor in otherNames (core/config/config_names.c)"
    fail=1
  done
  exit $fail
}
