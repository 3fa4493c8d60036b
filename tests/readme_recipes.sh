#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# readme_recipes.sh REPO PREFIX [cpu|gpu]: run the README's recipes as written, so they stay true.
# A recipe is the ```sh block after a line "<!-- recipe: NAME [gpu] expect=REGEX -->" (REGEX for
# grep -E, '.' standing for spaces). Each runs with bash -e in a fresh folder where build/ is the
# install PREFIX and examples/ and config/ are the repository's, as from the repository root after
# ./build.sh; its output must match REGEX. cpu (default) runs the recipes not marked gpu, gpu only
# those. Prints one PASS or FAIL line per recipe; the exit status counts the failures.
set -u
repo=$1
prefix=$2
want=${3:-cpu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
  /^<!-- recipe: / { n++; name = $3; gpu = ($0 ~ / gpu /) ? "gpu" : "cpu"; expect = $0
                     sub(/.*expect=/, "", expect); sub(/ -->.*/, "", expect)
                     printf "%s %s %s\n", name, gpu, expect > (dir "/list"); want_block = 1; next }
  want_block && /^```sh/ { inblock = 1; want_block = 0; next }
  inblock && /^```/ { inblock = 0; next }
  inblock { print > (dir "/" name ".sh") }
' "$repo/README.md"
[ -s "$tmp/list" ] || { echo "FAIL: no recipe found in $repo/README.md"; exit 1; }
fails=0
while read -r name kind expect; do
  [ "$kind" = "$want" ] || continue
  work=$tmp/run-$name
  mkdir -p "$work"
  ln -s "$prefix" "$work/build"
  ln -s "$repo/examples" "$work/examples"
  ln -s "$repo/config" "$work/config"
  if (cd "$work" && timeout 300 bash -e "$tmp/$name.sh") >"$tmp/$name.out" 2>&1 && grep -qE "$expect" "$tmp/$name.out"; then
    echo "PASS $name"
  else
    echo "FAIL $name (expected /$expect/):"
    sed 's/^/  /' "$tmp/$name.out" | tail -20
    fails=$((fails + 1))
  fi
done <"$tmp/list"
exit $fails
