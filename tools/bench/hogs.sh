# SPDX-License-Identifier: BSD-3-Clause
# hogs.sh: sourced by scripts that run something on a busy machine (tests/under_load.sh,
# docs/perf/run_host_loaded.sh). start_hogs N starts N CPU-bound shell loops; stop_hogs ends them,
# and runs by itself when the script exits.
HOG_PIDS=()
stop_hogs() {
  [ ${#HOG_PIDS[@]} -eq 0 ] || kill "${HOG_PIDS[@]}" 2>/dev/null || true
  HOG_PIDS=()
}
start_hogs() {
  trap stop_hogs EXIT
  for _ in $(seq "$1"); do
    sh -c 'while :; do :; done' &
    HOG_PIDS+=($!)
  done
}
