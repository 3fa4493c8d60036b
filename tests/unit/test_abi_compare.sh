#!/bin/sh
# Compare the ABI facts of Chorus's nccl.h with NVIDIA's (when installed), key by key, and check
# that the library exports every function of both headers as weak nccl* + strong pncclX, and nothing else.
# Args: <abi_dump built with ours> <abi_dump built with NVIDIA's or "none"> <libchorus.so> <our nccl.h> <nvidia nccl.h or "none">
set -u
ours=$1; theirs=$2; lib=$3; hdr=$4; nvhdr=$5
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$ours" > "$tmp/ours" || { echo "abi_dump (ours) failed"; exit 1; }
if [ "$theirs" != none ]; then
  "$theirs" > "$tmp/theirs" || { echo "abi_dump (NVIDIA) failed"; exit 1; }
  while read -r key val; do
    case "$key" in value.NCCL_MAJOR|init.*) continue;; esac
    mine=$(awk -v k="$key" '$1==k {print $2}' "$tmp/ours")
    if [ "$mine" != "$val" ]; then echo "MISMATCH $key: chorus=$mine nvidia=$val"; fail=1; fi
  done < "$tmp/theirs"
fi
nm -D --defined-only "$lib" | awk '{print $2, $3}' > "$tmp/syms"
# Functions declared in our header.
grep -o 'CHORUS_DECLARE([^,]*, *nccl[A-Za-z0-9_]*' "$hdr" | sed 's/.*, *//' > "$tmp/funcs"
grep -o 'void ncclResetDebugInit' "$hdr" | sed 's/void //' >> "$tmp/funcs"
if [ "$nvhdr" != none ]; then
  grep -o '^[a-zA-Z_ *]*[ *]nccl[A-Za-z0-9_]*(' "$nvhdr" | sed 's/.*[ *]\(nccl[A-Za-z0-9_]*\)(/\1/' | sort -u > "$tmp/nvfuncs"
  while read -r f; do
    grep -qx "$f" "$tmp/funcs" || { echo "NVIDIA's nccl.h declares $f, ours does not"; fail=1; }
  done < "$tmp/nvfuncs"
fi
n=0
while read -r f; do
  n=$((n+1))
  grep -qx "W $f" "$tmp/syms" || { echo "missing weak export $f"; fail=1; }
  grep -qx "T p$f" "$tmp/syms" || { echo "missing strong export p$f"; fail=1; }
done < "$tmp/funcs"
extra=$(awk '$2 !~ /^p?nccl/ {print $2}' "$tmp/syms" | grep -v '^_' || true)
[ -z "$extra" ] || { echo "unexpected exports: $extra"; fail=1; }
[ "$fail" = 0 ] && echo "ok: $n functions exported as nccl* (weak) and pnccl* (strong)"
exit $fail
