#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_abi_compare.sh: ABI checks of Chorus's nccl.h and libnccl.so.2.
#
#   test_abi_compare.sh exports <libnccl.so.2> <our nccl.h>
#     every function our header declares is exported as a weak nccl* and a strong pncclX, and the
#     library exports nothing else
#   test_abi_compare.sh nvidia <abi_dump built with ours> <abi_dump built with NVIDIA's | none>
#                              <our nccl.h> <NVIDIA's nccl.h | none>
#     the ABI facts both abi_dump builds print agree key by key, and every function NVIDIA's header
#     declares is declared in ours. Exit status 77 (ctest: skipped) when NVIDIA's header is not there.
set -u
mode=${1:-}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Functions declared in our header.
our_funcs() {
  grep -o 'CHORUS_DECLARE([^,]*, *nccl[A-Za-z0-9_]*' "$1" | sed 's/.*, *//'
  grep -o 'void ncclResetDebugInit' "$1" | sed 's/void //'
}

case "$mode" in
exports)
  lib=$2; hdr=$3
  nm -D --defined-only "$lib" | awk '{print $2, $3}' > "$tmp/syms"
  our_funcs "$hdr" > "$tmp/funcs"
  n=0
  while read -r f; do
    n=$((n+1))
    grep -qx "W $f" "$tmp/syms" || { echo "missing weak export $f"; fail=1; }
    grep -qx "T p$f" "$tmp/syms" || { echo "missing strong export p$f"; fail=1; }
  done < "$tmp/funcs"
  [ "$n" -gt 0 ] || { echo "no functions found in $hdr"; fail=1; }
  extra=$(awk '$2 !~ /^p?nccl/ {print $2}' "$tmp/syms" | grep -v '^_' || true)
  [ -z "$extra" ] || { echo "unexpected exports: $extra"; fail=1; }
  [ "$fail" = 0 ] && echo "ok: $n functions exported as nccl* (weak) and pnccl* (strong)"
  ;;
nvidia)
  ours=$2; theirs=$3; hdr=$4; nvhdr=$5
  if [ "$theirs" = none ] || [ "$nvhdr" = none ]; then
    echo "skipped: NVIDIA's nccl.h is not installed (CMake option CHORUS_NV_NCCL_H)"
    exit 77
  fi
  "$ours" > "$tmp/ours" || { echo "abi_dump (ours) failed"; exit 1; }
  "$theirs" > "$tmp/theirs" || { echo "abi_dump (NVIDIA) failed"; exit 1; }
  n=0
  while read -r key val; do
    case "$key" in value.NCCL_MAJOR|init.*) continue;; esac
    n=$((n+1))
    mine=$(awk -v k="$key" '$1==k {print $2}' "$tmp/ours")
    if [ "$mine" != "$val" ]; then echo "MISMATCH $key: chorus=$mine nvidia=$val"; fail=1; fi
  done < "$tmp/theirs"
  our_funcs "$hdr" > "$tmp/funcs"
  grep -o '^[a-zA-Z_ *]*[ *]nccl[A-Za-z0-9_]*(' "$nvhdr" | sed 's/.*[ *]\(nccl[A-Za-z0-9_]*\)(/\1/' | sort -u > "$tmp/nvfuncs"
  while read -r f; do
    grep -qx "$f" "$tmp/funcs" || { echo "NVIDIA's nccl.h declares $f, ours does not"; fail=1; }
  done < "$tmp/nvfuncs"
  [ "$fail" = 0 ] && echo "ok: $n ABI facts and $(wc -l < "$tmp/nvfuncs") functions agree with $nvhdr"
  ;;
*)
  echo "usage: test_abi_compare.sh exports|nvidia ..."; exit 2 ;;
esac
exit $fail
