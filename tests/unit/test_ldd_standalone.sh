#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_ldd_standalone.sh <lib dir> <libnccl.so.2.x.y>: libnccl.so.2 and every plugin beside it must load
# on a machine that has only the C library (CUDA images have no libinih, no libstdc++, ...), so ldd
# may list nothing else. libgcc_s would be tolerable only if a compiler builtin needed it; none does.
# The exceptions are the net plugins built over a provider library, which is their reason to exist:
# libnccl-net-chorus-ofi.so may need libfabric.so.1 and libnccl-net-ib.so libibverbs.so.1 (and what those
# load), and nothing else of their own (checked on their NEEDED entries instead of ldd's closure).
set -u
libdir=$1
chorus=$2
fail=0
checked=0
seen=
for lib in "$chorus" "$libdir"/*.so; do
  [ -f "$lib" ] || continue
  real=$(readlink -f "$lib")
  case " $seen " in *" $real "*) continue ;; esac # libnccl.so(.2) -> libnccl.so.2.x.y: checked once
  seen="$seen $real"
  checked=$((checked + 1))
  provider=
  case "$(basename "$real")" in
    libnccl-net-chorus-ofi.so) provider='|libfabric\.so\.1' ;;
    libnccl-net-ib.so) provider='|libibverbs\.so\.1' ;;
  esac
  if [ -n "$provider" ]; then
    out=$(readelf -d "$real" 2>&1 | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  else
    out=$(ldd "$lib" 2>&1) || { echo "$lib: ldd failed: $out"; fail=1; continue; }
  fi
  extra=$(printf '%s\n' "$out" | awk 'NF {print $1}' | grep -v -E \
    "^(linux-vdso\\.so\\.1|linux-gate\\.so\\.1|/lib(64)?/ld-linux[^ ]*|ld-linux[^ ]*|libc\\.so\\.6|libm\\.so\\.6|libpthread\\.so\\.0|libdl\\.so\\.2|librt\\.so\\.1|statically$provider)\$")
  if [ -n "$extra" ]; then
    echo "$lib needs more than the C library:" $extra
    fail=1
  fi
done
[ "$checked" -gt 0 ] || { echo "no library found in $libdir"; fail=1; }
exit $fail
