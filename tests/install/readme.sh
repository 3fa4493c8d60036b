#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# readme.sh BUILD REPO: install BUILD into a fresh prefix and run the README's recipes against it.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$1" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
sh "$2/tests/readme_recipes.sh" "$2" "$tmp/prefix" cpu
