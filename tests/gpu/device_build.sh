# SPDX-License-Identifier: BSD-3-Clause
# device_build.sh: sourced by the GPU machine's scripts (run_on_device.sh: one GPU; run_gpus.sh: several
# GPUs). Prints the environment, configures a fresh build directory ($BUILD, CUDA arch 90) and builds
# it, timed (CHORUS_GPU_BUILD names a folder to reuse); sets ROOT, OUT (default ./gpu-run-<date>), SUMMARY, BUILD, JOBS, MODE (full or
# device-only) and the helpers note (a line to the summary) and section (a heading). Exits the
# calling script when configure or build fails.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$PWD/gpu-run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
# CHORUS_GPU_BUILD: a build folder to reuse (a later call on the same warm machine rebuilds only
# what changed); by default a fresh one.
BUILD=${CHORUS_GPU_BUILD:-$(mktemp -d /tmp/chorus-gpu-build.XXXXXX)}
mkdir -p "$BUILD"
JOBS=$(nproc 2>/dev/null || echo 4)
export NCCL_NVLS_ENABLE=0 # nothing here uses NVLink multicast; keep it that way for anything loaded

T_START=$(date +%s)
note() { echo "$*" | tee -a "$SUMMARY"; }
# A heading, and in the summary the seconds since the start, so a later call can size its steps.
section() { echo; echo "==== $* ===="; echo "[$(($(date +%s) - T_START)) s] $*" >>"$SUMMARY"; }

section "environment"
{
  date -u
  uname -a
  nvidia-smi || echo "nvidia-smi failed"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$NVCC" --version || echo "no nvcc at $NVCC"
  cmake --version | head -1
  gcc --version | head -1
  echo "cores: $JOBS"
  git -C "$ROOT" log --oneline -1 2>/dev/null || echo "(not a git checkout)"
} 2>&1 | tee "$OUT/env.txt"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)

section "configure ($BUILD)"
MODE=full
CONF=(-S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_COMPILER="$NVCC"
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCHORUS_CUDA_ARCH=90)
# CUDA_DEFINES: extra -D flags for the CUDA sources only (kernel variants for an experiment, e.g.
# "-DCHR_DEV_UNROLL_PACKS=16"); the build folder and summary say which.
[ -n "${CUDA_DEFINES:-}" ] && CONF+=("-DCMAKE_CUDA_FLAGS=$CUDA_DEFINES")
if ! timeout 300 cmake "${CONF[@]}" >"$OUT/configure.log" 2>&1; then
  echo "full configure failed (tail below); configuring the device side alone"
  tail -5 "$OUT/configure.log"
  rm -rf "$BUILD" && mkdir -p "$BUILD"
  MODE=device-only
  if ! timeout 300 cmake "${CONF[@]}" -DCHORUS_DEVICE_ONLY=ON >>"$OUT/configure.log" 2>&1; then
    tail -30 "$OUT/configure.log"
    note "RESULT: configure FAILED (see configure.log)"
    exit 1
  fi
fi
note "configure: $MODE build in $BUILD${CUDA_DEFINES:+ (CUDA flags: $CUDA_DEFINES)}"
[ "$MODE" = full ] || note "gpu.nccl.*: NOT BUILT (the public-API tests need the full build; see configure.log)"

section "build (-j$JOBS)"
T0=$(date +%s.%N)
if ! timeout 900 cmake --build "$BUILD" -j "$JOBS" >"$OUT/build.log" 2>&1; then
  grep -E "error|Error" "$OUT/build.log" | head -40
  tail -20 "$OUT/build.log"
  note "RESULT: build FAILED (see build.log)"
  exit 1
fi
T1=$(date +%s.%N)
note "build: $(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }') s wall with $JOBS jobs"
grep -iE "warning|spill" "$OUT/build.log" | grep -v "^--" | head -20

