#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_packages.sh <build dir> <repository>: the Debian packages (cmake/packaging.cmake) as a packager
# checks them: four packages; the runtime one holds the real library and its SONAME link (not the
# development link) and needs only the C library; the development one the headers, libnccl.so,
# nccl.pc and the CMake package; the plugins and tools theirs. Then the runtime and development
# packages, unpacked into a folder, build and run the first README recipe's program.
set -u
build=$1
repo=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v dpkg-deb >/dev/null || { echo "skipped: no dpkg-deb"; exit 0; }
(cd "$build" && cpack -G DEB -B "$tmp/out") >"$tmp/cpack.log" 2>&1 || { tail -20 "$tmp/cpack.log"; fail "cpack"; }
deb() { ls "$tmp/out/$1"_*.deb 2>/dev/null | head -1; }
files() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./||'; }
for p in chorus-libnccl2 chorus-libnccl-dev chorus-plugins chorus-tools; do
  [ -n "$(deb $p)" ] || fail "no $p package"
done
rt=$(deb chorus-libnccl2)
dev=$(deb chorus-libnccl-dev)
depends=$(dpkg-deb -f "$rt" Depends)
echo "$depends" | grep -qE '^libc6( \([^)]*\))?$' || fail "the runtime package needs more than libc6: $depends"
files "$rt" | grep -qE '/libnccl\.so\.2$' || fail "the runtime package lacks libnccl.so.2"
files "$rt" | grep -qE '/libnccl\.so\.[0-9]+\.[0-9]+\.[0-9]+$' || fail "the runtime package lacks the real library file"
! files "$rt" | grep -qE '/libnccl\.so$' || fail "the runtime package holds the development link libnccl.so"
for f in '/libnccl\.so$' '/nccl\.h$' '/pkgconfig/nccl\.pc$' '/cmake/Chorus/ChorusConfig\.cmake$' '/chorus/plugin/net_v12\.h$'; do
  files "$dev" | grep -qE "$f" || fail "the development package lacks $f"
done
for f in libnccl-net-socket.so libnccl-tuner-chorus.so libnccl-profiler-chorus.so libnccl-env-chorus.so; do
  files "$(deb chorus-plugins)" | grep -q "/$f\$" || fail "the plugins package lacks $f"
done
for f in chorus-perf chorus-info chorus-netcheck; do
  files "$(deb chorus-tools)" | grep -q "/bin/$f\$" || fail "the tools package lacks $f"
done
mkdir "$tmp/root"
dpkg-deb -x "$rt" "$tmp/root" && dpkg-deb -x "$dev" "$tmp/root" || fail "unpacking"
pc=$(find "$tmp/root" -name nccl.pc | head -1)
libdir=$(dirname "$(dirname "$pc")")
PKG_CONFIG_PATH=$(dirname "$pc") cc -o "$tmp/allreduce" "$repo/examples/allreduce.c" \
  $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs nccl) -Wl,-rpath,"$libdir" || fail "building against the packages"
"$tmp/allreduce" || fail "the program built against the packages failed"
echo "packages: ok ($(cd "$tmp/out" && ls *.deb | tr '\n' ' '))"
