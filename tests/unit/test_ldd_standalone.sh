#!/bin/sh
# test_ldd_standalone.sh <lib dir> <libchorus.so>: libnccl.so.2 and every plugin beside it must load
# on a machine that has only the C library (CUDA images have no libinih, no libstdc++, ...), so ldd
# may list nothing else. libgcc_s would be tolerable only if a compiler builtin needed it; none does.
set -u
libdir=$1
chorus=$2
fail=0
checked=0
seen=
for lib in "$chorus" "$libdir"/*.so; do
  [ -f "$lib" ] || continue
  real=$(readlink -f "$lib")
  case " $seen " in *" $real "*) continue ;; esac # libnccl.so(.2) -> libchorus.so: checked once
  seen="$seen $real"
  checked=$((checked + 1))
  out=$(ldd "$lib" 2>&1) || { echo "$lib: ldd failed: $out"; fail=1; continue; }
  extra=$(printf '%s\n' "$out" | awk '{print $1}' | grep -v -E \
    '^(linux-vdso\.so\.1|linux-gate\.so\.1|/lib(64)?/ld-linux[^ ]*|ld-linux[^ ]*|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|statically)$')
  if [ -n "$extra" ]; then
    echo "$lib needs more than the C library:" $extra
    fail=1
  fi
done
[ "$checked" -gt 0 ] || { echo "no library found in $libdir"; fail=1; }
exit $fail
