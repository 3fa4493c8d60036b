#!/usr/bin/env bash
# calibrate_cost_model.sh: measures the constants of the planner's cost model (core/plan/plan.c) on
# this machine and prints them. docs/perf/cost-model.md keeps one run's output with its command.
#
#   bash tools/calibrate_cost_model.sh [BUILD_DIR]   # default build/ of this repository (./build.sh)
#   REPS=5 TREE=0 bash tools/calibrate_cost_model.sh build-perf
#
# Environment: REPS (launches per measurement, default 5; each figure is the median over them),
#   TREE=0 skips the tree part (8 ranks, the slowest part), KEEP=DIR keeps the raw chorus-perf tables.
#
# The model (plan.c): a link costs alpha microseconds per hop plus bytes / beta (beta in GB/s); a ring
# all-reduce on n ranks costs 2(n-1) alpha + 2(n-1)/n bytes/beta, a double-binary-tree all-reduce
# 2 ceil(log2 n) alpha + k bytes/beta, with k the tree's bandwidth factor.
#
# 1. alpha and beta per transport, from ring all-reduce on 2 ranks, where the model is
#    T = 2 alpha + bytes/beta (two hops, each rank's whole buffer crosses the link once):
#      shm: chorus-perf -np 2             (both ranks on this host: shm links)
#      net: chorus-perf -np 2 --hosts 2   (each rank acts out its own host: the net plugin)
#    alpha = median out-of-place time over the small sizes (8 B .. 1 KiB), halved;
#    beta  = median over the large sizes (4, 16, 64 MiB) of bytes / (T - 2 alpha).
# 2. The tree factor k (shm): ring and tree all-reduce on 8 ranks (NCCL_ALGO forces each), 4 KiB ..
#    16 MiB. The crossover S* is the geometric mean of the largest size where the tree is faster and
#    the next size; k is the factor that puts the model's crossover there with the alpha and beta of
#    step 1: k = 2(n-1)/n + 2(n-1-d) alpha beta 1e3 / S*, n = 8, d = 3. A second estimate uses the
#    large sizes alone (>= 4 MiB), where the model's time ratio tree/ring is k / (2(n-1)/n).
# Timings are out-of-place, slowest rank (-a 3), median over REPS launches. Run it on a quiet machine:
# it measures whatever else runs at the same time too.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BUILD_ARG=${1:-build}
case "$BUILD_ARG" in /*) ;; *) BUILD_ARG=$REPO/$BUILD_ARG ;; esac
PERF=$BUILD_ARG/bin/chorus-perf
[ -x "$PERF" ] || { echo "calibrate_cost_model.sh: $PERF not found (build first: ./build.sh)" >&2; exit 1; }
REPS=${REPS:-5}
TREE=${TREE:-1}
OUT=${KEEP:-$(mktemp -d /tmp/chorus-calibrate.XXXXXX)}
mkdir -p "$OUT"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$OUT"' EXIT
export NCCL_SOCKET_IFNAME=lo
unset NCCL_DEBUG CHORUS_TRANSPORT NCCL_PROTO NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS NCCL_BUFFSIZE

# run NAME ENV... -- ARGS...: REPS launches of chorus-perf, each table kept as $OUT/NAME.<rep>.
run() {
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  for rep in $(seq 1 "$REPS"); do
    if ! env "${envs[@]}" timeout 300 "$PERF" "$@" -c 0 -a 3 -T 280 -q > "$OUT/$name.$rep" 2>&1; then
      echo "calibrate_cost_model.sh: chorus-perf failed: ${envs[*]} $*" >&2
      cat "$OUT/$name.$rep" >&2
      exit 1
    fi
  done
}

# medians NAME: "size median_time_us" per size, over the REPS tables of NAME (out-of-place time, $6).
medians() {
  cat "$OUT/$1".* | awk '$1 ~ /^[0-9]+$/ && NF >= 13 {print $1, $6}' | sort -k1,1n -k2,2g |
    awk '{ t[$1] = t[$1] " " $2; n[$1]++ }
         END { for (s in t) { split(substr(t[s], 2), v, " "); m = n[s];
                 med = (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2; print s, med } }' | sort -k1,1n
}

echo "# chorus cost-model calibration, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# host: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# library: $("$PERF" allreduce -b 8 -e 8 -n 1 -w 0 -c 0 2>/dev/null | sed -n 's/^# library: //p'), REPS=$REPS"

declare -A ALPHA BETA
for tr in shm net; do
  hosts=()
  [ "$tr" = net ] && hosts=(--hosts 2)
  run "$tr.small" NCCL_ALGO=ring -- -np 2 "${hosts[@]}" allreduce -b 8 -e 1K -f 2 -n 300 -w 30
  run "$tr.large" NCCL_ALGO=ring -- -np 2 "${hosts[@]}" allreduce -b 4M -e 64M -f 4 -n 5 -w 1
  medians "$tr.small" > "$OUT/$tr.small.med"
  medians "$tr.large" > "$OUT/$tr.large.med"
  ALPHA[$tr]=$(awk '{print $2}' "$OUT/$tr.small.med" | sort -g |
               awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m / 2}')
  BETA[$tr]=$(awk -v a="${ALPHA[$tr]}" '{print $1 / (($2 - 2 * a) * 1e3)}' "$OUT/$tr.large.med" | sort -g |
              awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m}')
  echo
  echo "## $tr: ring all-reduce, 2 ranks${hosts[*]:+ (${hosts[*]})}: size (B) and median time (us)"
  cat "$OUT/$tr.small.med" "$OUT/$tr.large.med" | awk '{printf "  %10d  %10.2f\n", $1, $2}'
done

echo
echo "## fitted link model (T = 2 alpha + bytes/beta on 2 ranks)"
printf "  %-4s  alpha %6s us/hop  beta %5s GB/s\n" shm "${ALPHA[shm]}" "${BETA[shm]}" net "${ALPHA[net]}" "${BETA[net]}"

if [ "$TREE" = 1 ]; then
  run tree.ring NCCL_ALGO=allreduce:ring -- -np 8 allreduce -b 4K -e 16M -f 2 -n 10 -w 2
  run tree.tree NCCL_ALGO=allreduce:tree -- -np 8 allreduce -b 4K -e 16M -f 2 -n 10 -w 2
  medians tree.ring > "$OUT/tree.ring.med"
  medians tree.tree > "$OUT/tree.tree.med"
  # "size ring_us tree_us" for the sizes both have, in size order.
  ring_and_tree() { awk 'NR == FNR { ring[$1] = $2; next } ($1 in ring) { print $1, ring[$1], $2 }' \
                      "$OUT/tree.ring.med" "$OUT/tree.tree.med"; }
  echo
  echo "## tree vs ring all-reduce, 8 ranks, shm: size (B), median time (us) ring, tree"
  ring_and_tree | awk '{printf "  %10d  %10.2f  %10.2f  %s\n", $1, $2, $3, $3 < $2 ? "tree" : "ring"}'
  # plan.c's own shm alpha and beta, to tell whether its factor still puts the crossover here.
  read -r PLAN_A PLAN_B < <(sed -n 's/.*linkModel shmModel = {\([0-9.]*\)f, *\([0-9.]*\)f}.*/\1 \2/p' "$REPO/core/plan/plan.c")
  ring_and_tree |
    awk -v a="${ALPHA[shm]}" -v b="${BETA[shm]}" -v pa="${PLAN_A:-0}" -v pb="${PLAN_B:-0}" '
    { size[NR] = $1; ring[NR] = $2; tree[NR] = $3; treeWins[NR] = ($3 < $2) }
    END {
      n = 8; d = 3
      # The crossover: after the last size at which the tree wins.
      last = 0
      for (i = 1; i <= NR; i++) if (treeWins[i]) last = i
      if (last == 0) print "  the tree is never faster here: no crossover, k not fitted from one"
      else if (last == NR) print "  the tree is faster at every size measured: crossover above " size[NR] " B, k not fitted from one"
      else {
        s = sqrt(size[last] * size[last + 1])
        printf "  crossover ~%.0f B (tree faster up to %d B, ring from %d B)\n", s, size[last], size[last + 1]
        printf "  tree bandwidth factor k = %.2f (with the shm alpha and beta above)\n",
               2 * (n - 1) / n + 2 * (n - 1 - d) * a * b * 1e3 / s
        if (pa > 0) printf "  with plan.c'"'"'s shm alpha %.1f and beta %.1f, this crossover needs k = %.2f\n", pa, pb,
                           2 * (n - 1) / n + 2 * (n - 1 - d) * pa * pb * 1e3 / s
      }
      # Second estimate, from bandwidth alone: at the largest sizes the alpha terms vanish and the
      # model says T_tree / T_ring = k / (2(n-1)/n).
      m = 0
      for (i = 1; i <= NR; i++) if (size[i] >= 4194304) r[++m] = tree[i] / ring[i]
      if (m > 0) {
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
        med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
        printf "  from sizes >= 4 MiB alone: median T_tree/T_ring = %.2f, so k = %.2f\n", med, med * 2 * (n - 1) / n
      }
    }'
fi
echo
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg) (this script's own ranks count too: 2, then 8)"
echo "# what core/plan/plan.c uses now:"
grep -E 'linkModel (shm|net)Model = |return 2\.0f \* depth' "$REPO/core/plan/plan.c" | sed 's/^ */#   /'
