#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_spdx.sh <source dir> [--add]: every source file we wrote (C, CUDA, CMake, shell and Python
# under core/ device/ plugins/ tools/ tests/, and the top CMakeLists.txt and build.sh) names its
# license in an SPDX line: its first line, or its second after a #! line. Lists the files without
# one and exits 1. With --add it puts the line into those files instead ('/* */' for C and CUDA, '#'
# for the rest), above the comment that was first. Files are git's tracked ones in a checkout, else
# found by name; config/chorus.ini and docs/ are not source and are left alone.
set -u
src=$1
add=${2:-}
tag='SPDX-License-Identifier: BSD-3-Clause'
cd "$src" || exit 2
folders="core device plugins tools tests"
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  files=$(git ls-files -- $folders CMakeLists.txt build.sh)
else
  files=$(find $folders CMakeLists.txt build.sh -type f 2>/dev/null)
fi
missing=0
for f in $(printf '%s\n' "$files" | grep -E '(\.(c|h|cu|cuh|cu\.in|def|map|cmake|sh|py)|(^|/)CMakeLists\.txt)$'); do
  [ -f "$f" ] || continue
  first=$(sed -n 1p "$f")
  case "$first" in
    '#!'*) line=2; have=$(sed -n 2p "$f") ;;
    *) line=1; have=$first ;;
  esac
  case "$have" in *"$tag"*) continue ;; esac
  case "$f" in
    *.c|*.h|*.cu|*.cuh|*.cu.in|*.def|*.map) text="/* $tag */" ;;
    *) text="# $tag" ;;
  esac
  if [ "$add" = --add ]; then
    if [ $line = 1 ]; then sed -i "1i\\$text" "$f"; else sed -i "1a\\$text" "$f"; fi
  else
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done
[ $missing = 0 ] || { echo "$missing file(s) lack '$tag' (tests/unit/test_spdx.sh . --add puts it in)"; exit 1; }
exit 0
