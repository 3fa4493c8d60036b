#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# build.sh: the one entry point.
#   ./build.sh          install missing Debian packages (as root), configure, build, install into build/
#   ./build.sh test     the above, then the whole ctest suite
#   ./build.sh run      the above, then the main job: chorus-perf all-reduce on 4 local ranks
# Environment: CUDA_ARCH (default 90), BUILD_TYPE (default RelWithDebInfo), SANITIZE=1 (ASan+UBSan,
# separate build dir), CTEST_ARGS (extra ctest arguments, e.g. "-R unit"), JOBS, OFI_BUNDLE_LIBFABRIC=1
# (copy libfabric and its libraries next to libnccl-net-chorus-ofi.so: plugins/net_ofi/README.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")" && pwd)
PREFIX=$ROOT/build
CMAKE_DIR=$PREFIX/cmake
[ "${SANITIZE:-0}" = 1 ] && CMAKE_DIR=$PREFIX/cmake-asan
JOBS=${JOBS:-$(nproc)}

need_packages() {
  local pkgs="cmake make gcc pkg-config libinih-dev libibverbs-dev libfabric-dev iproute2 procps python3 dpkg-dev file"
  local missing=""
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "build.sh: installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "build.sh: missing packages; run as root or: sudo apt-get install -y$missing" >&2
    exit 1
  fi
}

build() {
  need_packages
  local cuda_flags=()
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_flags=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
                -DCHORUS_CUDA_ARCH="${CUDA_ARCH:-90}")
  fi
  cmake -S "$ROOT" -B "$CMAKE_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
        -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCHORUS_SANITIZE="$([ "${SANITIZE:-0}" = 1 ] && echo ON || echo OFF)" \
        -DCHORUS_OFI_BUNDLE_LIBFABRIC="$([ "${OFI_BUNDLE_LIBFABRIC:-0}" = 1 ] && echo ON || echo OFF)" \
        "${cuda_flags[@]}" >/dev/null
  cmake --build "$CMAKE_DIR" -j "$JOBS"
  # A sanitizer build is for running the tests; it does not replace the installed libraries.
  [ "${SANITIZE:-0}" = 1 ] || cmake --install "$CMAKE_DIR" >/dev/null
}

case "${1:-build}" in
  build) build ;;
  test)
    build
    # shellcheck disable=SC2086
    ctest --test-dir "$CMAKE_DIR" --output-on-failure -j "${CTEST_JOBS:-2}" ${CTEST_ARGS:-}
    ;;
  run)
    build
    "$PREFIX/bin/chorus-perf" -np 4 allreduce -b 8 -e 64M -f 4 -n 20 -w 5 -c 1
    ;;
  *) echo "usage: ./build.sh [build|test|run]" >&2; exit 2 ;;
esac
