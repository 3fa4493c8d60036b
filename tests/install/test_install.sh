#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_install.sh <build dir> <this folder>: install the build into a fresh prefix and use it as a
# packager and a downstream project would. The manifest holds the real library file, its SONAME link
# and its development link; nccl.pc and the CMake package Chorus are there; developer probes are
# not; a CMake project (find_package(Chorus)) and a pkg-config build of the same program compile,
# link and run; then the prefix is moved and the pkg-config build still works (relocatable).
set -u
build=$1
here=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
libdir=$(sed -n 's/^libdir=\${prefix}\///p' "$prefix"/lib*/pkgconfig/nccl.pc 2>/dev/null | head -1)
[ -n "$libdir" ] || fail "no nccl.pc under $prefix/lib*/pkgconfig"
manifest=$build/install_manifest.txt
for f in libnccl.so libnccl.so.2 "libnccl.so.[0-9]*.[0-9]*.[0-9]*"; do
  grep -q "/$libdir/$f\$" "$manifest" || fail "$libdir/$f is not in the install manifest"
done
[ -L "$prefix/$libdir/libnccl.so.2" ] && [ -L "$prefix/$libdir/libnccl.so" ] || fail "libnccl.so.2 and libnccl.so must be links"
[ -f "$prefix/$libdir/cmake/Chorus/ChorusConfig.cmake" ] || fail "no CMake package config"
[ -f "$prefix/include/chorus/plugin/net_v12.h" ] || fail "plugin headers are not under include/chorus/plugin"
for probe in chorus-ce-probe chorus-vmm-probe chorus-gpu-ceiling chorus-tcp-stream; do
  [ ! -e "$prefix/bin/$probe" ] || fail "developer probe $probe was installed"
done
! ls "$prefix/$libdir"/*.a >/dev/null 2>&1 || fail "a static test library was installed: $(ls "$prefix/$libdir"/*.a)"

# CMake
cmake -S "$here/downstream" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 &&
  cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "the CMake project did not build"; }
"$tmp/cmake/consumer" || fail "the CMake-built consumer failed"

# pkg-config, then the same from a moved prefix
pcbuild() { # prefix, output
  PKG_CONFIG_PATH=$1/$libdir/pkgconfig
  export PKG_CONFIG_PATH
  cc -o "$2" "$here/../../examples/allreduce.c" $(pkg-config --cflags --libs nccl) -Wl,-rpath,"$1/$libdir" || return 1
  cc -shared -fPIC -o "$2-plugin.so" "$here/plugin_user.c" $(pkg-config --cflags chorus-plugin) || return 1
  "$2"
}
pcbuild "$prefix" "$tmp/pc-consumer" || fail "the pkg-config build did not build or run"
mv "$prefix" "$tmp/moved"
pcbuild "$tmp/moved" "$tmp/pc-moved" || fail "the pkg-config build from a moved prefix did not build or run"
echo "install: ok ($libdir)"
