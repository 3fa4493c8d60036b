#!/usr/bin/env bash
# run_host_loaded.sh: Chorus beside Open MPI, host buffers, 2 ranks of one host (shared memory), sizes
# 8 B .. 8 MiB, while HOGS CPU-bound processes run beside them (a busy machine), REPS times.
#
#   bash docs/perf/run_host_loaded.sh [BUILD_DIR]        # BUILD_DIR default: build/ (./build.sh)
#   HOGS=0 REPS=5 bash docs/perf/run_host_loaded.sh      # the quiet machine, for the same table
#
# Environment: HOGS (default 2), REPS (default 10), COLLS (default "allreduce allgather"), OUT (default
# build/perf-host-loaded-<hogs>hogs-<date> of the repository, which git ignores). Needs Open MPI (mpicc, mpirun) and python3.
# Method: in every rep each collective runs on Chorus and on Open MPI back to back (the order alternates
# by rep), so both see the same load. Both start through the same mpirun (which binds each rank to a
# core, as Open MPI does by default for 2 ranks) and are timed the same way, ITERS calls one by one after 20
# warm-up calls: Chorus with chorus-perf -I 1, Open MPI with tools/bench/mpi_colls.c -I. Each gives
# the mean (the slowest rank's wall-clock span / calls) and the median call (each call's slowest rank).
# Writes OUT/results.csv (one line per rep, collective and size) and prints, per collective and size,
# the medians over reps, the ratios (Chorus / Open MPI) of the means and of the medians, the worst,
# and in how many reps Chorus took at most twice Open MPI's time.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:-$REPO/build}" && pwd) || exit 1
PERF=$BUILD/bin/chorus-perf
HOGS=${HOGS:-2}
REPS=${REPS:-10}
ITERS=${ITERS:-200}
COLLS=${COLLS:-"allreduce allgather"}
OUT=${OUT:-$REPO/build/perf-host-loaded-${HOGS}hogs-$(date +%Y-%m-%d)}
mkdir -p "$OUT"
MPIB=${TMPDIR:-/tmp}/chorus-mpi-colls
mpicc -O2 -Wall -o "$MPIB" "$REPO/tools/bench/mpi_colls.c" || exit 1
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
unset NCCL_DEBUG CHORUS_TRANSPORT

source "$REPO/tools/bench/hogs.sh"
start_hogs "$HOGS"
{
  echo "date_utc: $(date -u '+%Y-%m-%d %H:%M:%S UTC')  nproc: $(nproc)  kernel: $(uname -r)"
  echo "cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "hogs: $HOGS  reps: $REPS  openmpi: $(mpirun --version 2>/dev/null | head -1)"
  echo "chorus: $("$PERF" allreduce -b 8 -e 8 -n 1 -w 0 -c 0 2>/dev/null | sed -n 's/^# library: //p') ($BUILD)"
  echo "chorus_git: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)"
} | tee "$OUT/machine.txt"

chorus_run() { # coll rep
  local b=8
  [ "$1" = allgather ] && b=64
  local ranks=$OUT/ranks_$1_rep$2 # each rank's output in its own file: mpirun may split long lines
  timeout 300 $MPIRUN -np 2 -x NCCL_COMM_ID=127.0.0.1:$((29500 + $2)) -x NCCL_SOCKET_IFNAME=lo --output-filename "$ranks" \
    "$PERF" "$1" -b "$b" -e 8M -f 4 -n "$ITERS" -w 20 -c 0 -a 3 -I 1 -q -J "$OUT/chorus_$1_rep$2.json" \
    >/dev/null 2>>"$OUT/chorus.stderr" || echo "chorus $1 rep $2 FAILED" | tee -a "$OUT/failures.txt"
  cat "$ranks"/1/rank.*/stdout >"$OUT/chorus_$1_rep$2.txt" && rm -rf "$ranks"
}
mpi_run() { # coll rep
  local b=8
  [ "$1" = allgather ] && b=64
  timeout 300 $MPIRUN -np 2 "$MPIB" -c "$1" -b "$b" -e 8M -f 4 -w 20 -I "$ITERS" >"$OUT/mpi_$1_rep$2.txt" 2>&1 ||
    echo "mpi $1 rep $2 FAILED" | tee -a "$OUT/failures.txt"
}
for rep in $(seq "$REPS"); do
  for coll in $COLLS; do
    if [ $((rep % 2)) = 1 ]; then chorus_run "$coll" "$rep"; mpi_run "$coll" "$rep"
    else mpi_run "$coll" "$rep"; chorus_run "$coll" "$rep"; fi
  done
  echo "rep $rep of $REPS done"
done
stop_hogs

python3 - "$OUT" "$REPS" "$COLLS" <<'EOF'
import json, re, statistics, sys
out, reps, colls = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
pat = re.compile(r"^# iteration us: rank (\d+), (\d+) B, out of place: (.*)$")
rows = []
for coll in colls:
    for rep in range(1, reps + 1):
        try:
            ch = json.load(open(f"{out}/chorus_{coll}_rep{rep}.json"))
            it = open(f"{out}/chorus_{coll}_rep{rep}.txt").read().splitlines()
            mp = open(f"{out}/mpi_{coll}_rep{rep}.txt").read().splitlines()
        except (OSError, ValueError):
            continue
        mpi = {int(l.split()[1]): float(l.split()[3]) for l in mp if l.strip() and not l.startswith("#")}
        mpiMean = {int(l.split()[4]): float(l.split()[5]) for l in mp if l.startswith("# mean us:")}
        per = {}  # size -> rank -> iteration times
        for l in it:
            m = pat.match(l)
            if m:
                # the iteration lines give a rank's bytes: an all-gather's size is both ranks'
                size = int(m.group(2)) * (2 if coll == "allgather" else 1)
                per.setdefault(size, {})[int(m.group(1))] = [float(x) for x in m.group(3).split()]
        for r in ch["results"]:
            size, mean = r["size"], r["out_of_place"]["time"]
            if size not in mpi or size not in mpiMean or size == 0 or size not in per:
                continue
            slowest = [max(v) for v in zip(*per[size].values())]  # each iteration: the slowest rank
            med = statistics.median(slowest)
            rows.append((coll, rep, size, mean, med, mpiMean[size], mpi[size], mean / mpiMean[size], med / mpi[size]))
with open(f"{out}/results.csv", "w") as f:
    f.write("coll,rep,size,chorus_mean_us,chorus_median_us,mpi_mean_us,mpi_median_us,mean_ratio,median_ratio\n")
    for r in rows:
        f.write("%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f\n" % r)
print("| collective | size | Chorus mean | Open MPI mean | ratio | worst | within 2x | Chorus median | Open MPI median | ratio | worst | within 2x |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
med = statistics.median
for coll in colls:
    for size in sorted({r[2] for r in rows if r[0] == coll}):
        rs = [r for r in rows if r[0] == coll and r[2] == size]
        cells = []
        for (c, m, q) in ((3, 5, 7), (4, 6, 8)):
            ratios = [r[q] for r in rs]
            cells.append("%.1f | %.1f | %.2f | %.2f | %d/%d" % (med(r[c] for r in rs), med(r[m] for r in rs), med(ratios),
                                                             max(ratios), sum(x <= 2.0 for x in ratios), len(ratios)))
        print("| %s | %d | %s |" % (coll, size, " | ".join(cells)))
EOF
