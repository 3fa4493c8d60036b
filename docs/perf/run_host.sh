#!/usr/bin/env bash
# run_host.sh: Chorus vs Open MPI on this host, host buffers, side by side.
#
#   bash docs/perf/run_host.sh [BUILD_DIR]      # BUILD_DIR default: build/ of this repository (./build.sh)
#   REPS=5 bash docs/perf/run_host.sh build-perf  # a relative BUILD_DIR is taken from the repository root
#
# Environment: REPS (default 3), MAXB4 (largest size for 4 ranks, default 256M; e.g. MAXB4=128M to cut),
#   MAXB (largest size for fewer ranks, default 256M; e.g. MAXB=1M for a quick trial),
#   NPS (rank counts, default "2 4"), SKIP_INSTALL=1 (do not apt-get openmpi-bin/libopenmpi-dev),
#   RAW_DIR (where the logs go, default build/perf-host/ of the repository, which git ignores).
# Needs: Open MPI (Debian openmpi-bin + libopenmpi-dev: mpicc, mpirun), python3, and a Chorus build
#   (BUILD_DIR/bin/chorus-perf, BUILD_DIR/lib/libnccl-net-socket.so).
# Writes: RAW_DIR/ (logs of the last run, rewritten each time) and RAW_DIR/summary.md (every table,
#   medians with min-max; docs/perf/data/host.csv holds the medians that docs/perf/host.md shows). The MPI benchmark, tools/bench/mpi_colls.c of this
#   repository, is built with mpicc into $TMPDIR/chorus-perf-mpi.
# Everything runs on loopback: MPI with oob/btl_tcp_if_include lo, Chorus with NCCL_SOCKET_IFNAME=lo.
#
# Method: for every rep, rank count, transport pair (Chorus shm vs MPI shm; Chorus net plugin vs MPI TCP)
# and collective, Chorus and MPI run back to back (which one goes first alternates by rep), so that load
# from elsewhere on the box hits both. Each figure in the tables is the median over REPS launches,
# with min-max. Chorus timing runs use -c 0; one -c 1 run per configuration first checks every size 8 B - 32 MiB.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD_ARG=${1:-build}
case "$BUILD_ARG" in /*) ;; *) BUILD_ARG=$REPO/$BUILD_ARG ;; esac
BUILD=$(cd "$BUILD_ARG" 2>/dev/null && pwd) || { echo "run_host.sh: no build dir $BUILD_ARG" >&2; exit 1; }
PERF=$BUILD/bin/chorus-perf
[ -x "$PERF" ] || { echo "run_host.sh: $PERF not found (build Chorus first: ./build.sh, or cmake into that dir)" >&2; exit 1; }
REPS=${REPS:-3}
MAXB4=${MAXB4:-256M}
MAXB=${MAXB:-256M}
NPS=${NPS:-"2 4"}
RAW=${RAW_DIR:-$REPO/build/perf-host}
MPIDIR=${TMPDIR:-/tmp}/chorus-perf-mpi
SRC_MPI=$REPO/tools/bench/mpi_colls.c
T0=$(date +%s)
log() { echo "[$(date +%H:%M:%S) +$(( $(date +%s) - T0 ))s] $*"; }

# ------------------------------------------------------------------ Open MPI
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  missing=""
  for p in openmpi-bin libopenmpi-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
      log "installing:$missing"; apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null || exit 1
    else
      echo "run_host.sh: missing Debian packages; run as root or: sudo apt-get install -y$missing" >&2; exit 1
    fi
  fi
fi
# The log folder is emptied first: refuse a folder with files that are not from an earlier run.
if [ -n "$(ls -A "$RAW" 2>/dev/null)" ] && [ ! -f "$RAW/machine.txt" ]; then
  echo "run_host.sh: $RAW holds files that are not logs of an earlier run; not emptying it" >&2; exit 1
fi
mkdir -p "$MPIDIR" "$RAW"
find "${RAW:?}" -maxdepth 1 -type f -delete # its own logs; the folders beside them (other runs) stay
mpicc -O2 -Wall -o "$MPIDIR/mpi_colls" "$SRC_MPI" || exit 1
MPIB=$MPIDIR/mpi_colls
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
MPI_TCP="--mca pml ob1 --mca btl tcp,self"
MPI_OPTS="-T 0.3 -n 10"            # per (collective,size): <=10 samples of >=2 ms batches, 0.3 s budget
export NCCL_SOCKET_IFNAME=lo       # Chorus bootstrap and net plugin on loopback
unset NCCL_DEBUG CHORUS_TRANSPORT

# ------------------------------------------------------------------ machine facts
CACHE=$BUILD/CMakeCache.txt                       # a plain cmake build dir
[ -f "$CACHE" ] || CACHE=$BUILD/cmake/CMakeCache.txt  # build/ made by ./build.sh
SRCDIR=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$CACHE" 2>/dev/null)
{
  echo "date_utc: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "nproc: $(nproc)"
  echo "cpu_model: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
  echo "hypervisor: $(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p' | head -1)"
  echo "caches: L2 $(lscpu | sed -n 's/^L2 cache:[[:space:]]*//p'), L3 $(lscpu | sed -n 's/^L3 cache:[[:space:]]*//p')"
  echo "mem_total: $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel: $(uname -r)"
  echo "os: $(. /etc/os-release; echo "$PRETTY_NAME")"
  echo "gcc: $(gcc -dumpfullversion)"
  echo "openmpi: $(mpirun --version 2>/dev/null | head -1)"
  echo "vader_single_copy: $(ompi_info --param btl vader --level 9 2>/dev/null | sed -n 's/.*btl_vader_single_copy_mechanism" (current value: "\([^"]*\)".*/\1/p')"
  echo "chorus_build_dir: $BUILD"
  echo "chorus_build_type: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$CACHE" 2>/dev/null)"
  echo "chorus_library: $("$PERF" allreduce -b 8 -e 8 -n 1 -w 0 -c 0 2>/dev/null | sed -n 's/^# library: //p')"
  if [ -n "$SRCDIR" ] && git -C "$SRCDIR" rev-parse HEAD >/dev/null 2>&1; then
    echo "chorus_git: $(git -C "$SRCDIR" rev-parse --short HEAD) ($(git -C "$SRCDIR" status --porcelain | wc -l) files modified/untracked in the tree at run time)"
  fi
  echo "reps: $REPS  nps: $NPS  maxbytes_4ranks: $MAXB4$([ "$MAXB" != 256M ] && echo "  maxbytes: $MAXB")"
  echo "loadavg_at_start: $(cat /proc/loadavg)"
} > "$RAW/machine.txt"
cat "$RAW/machine.txt"

# ------------------------------------------------------------------ helpers
# chorus_timing NP TRANSPORT COLL MAXB REP: four launches with iteration counts fitted to the size
# (chorus-perf times one wall-clock span of -n iterations; small sizes need many to be above noise).
chorus_timing() {
  local np=$1 tr=$2 coll=$3 maxb=$4 rep=$5 envt="" part b e f n w
  [ "$tr" = net ] && envt="CHORUS_TRANSPORT=net"
  for part in "s 8 512K 4 200 20" "m 2M 8M 4 20 2" "l 32M 128M 4 5 1" "h 256M 256M 1 3 1"; do
    set -- $part
    [ "$(numfmt --from=iec "$2")" -gt "$(numfmt --from=iec "$maxb")" ] && continue
    e=$3; [ "$(numfmt --from=iec "$e")" -gt "$(numfmt --from=iec "$maxb")" ] && e=$maxb
    echo "loadavg $(cut -d' ' -f1 /proc/loadavg)" >> "$RAW/chorus_np${np}_${tr}_${coll}.stderr"
    env $envt timeout 600 "$PERF" -np "$np" "$coll" -b "$2" -e "$e" -f "$4" -n "$5" -w "$6" -c 0 -a 3 -T 500 -q \
      -J "$RAW/json/chorus_np${np}_${tr}_${coll}_rep${rep}_$1.json" \
      > /dev/null 2>> "$RAW/chorus_np${np}_${tr}_${coll}.stderr" \
      || log "chorus-perf FAILED: np=$np $tr $coll $2..$e rep $rep (see $RAW/chorus_np${np}_${tr}_${coll}.stderr)"
  done
}
mpi_timing() {
  local np=$1 tr=$2 coll=$3 maxb=$4 rep=$5 extra=""
  [ "$tr" = tcp ] && extra=$MPI_TCP
  timeout 600 $MPIRUN -np "$np" $extra "$MPIB" -c "$coll" -e "$maxb" $MPI_OPTS \
    > "$RAW/mpi_np${np}_${tr}_${coll}_rep${rep}.txt" 2>&1 \
    || log "MPI FAILED: np=$np $tr $coll rep $rep (see $RAW/mpi_np${np}_${tr}_${coll}_rep${rep}.txt)"
}
mpi_coll() { case $1 in broadcast) echo bcast;; *) echo "$1";; esac; }
maxb_for() { [ "$1" -ge 4 ] && echo "$MAXB4" || echo "$MAXB"; }

# ------------------------------------------------------------------ correctness (Chorus, -c 1, 8 B - 32 MiB)
mkdir -p "$RAW/json"
for np in $NPS; do
  maxb=$(maxb_for "$np")
  for tr in shm net; do
    envt=""; [ "$tr" = net ] && envt="CHORUS_TRANSPORT=net"
    for coll in allreduce allgather broadcast; do
      f="$RAW/check_np${np}_${tr}_${coll}.txt"
      log "correctness: chorus np=$np $tr $coll"
      # every size from 8 B to 32 MiB (256 slots of 128 KiB); the host-side checker needs about a
      # minute per configuration at 128/256 MiB on 2 cores, so those sizes are only timed
      e=32M; [ "$(numfmt --from=iec "$maxb")" -lt "$(numfmt --from=iec 32M)" ] && e=$maxb
      { env $envt timeout 600 "$PERF" -np "$np" "$coll" -b 8 -e "$e" -f 4 -n 1 -w 1 -c 1 -a 3 -T 500; echo "exit=$?"
      } > "$f" 2>&1
      grep -q 'FAILED\|exit=[1-9]' "$f" && log "CHECK FAILED: $f"
    done
  done
done

# ------------------------------------------------------------------ timing, interleaved
for rep in $(seq 1 "$REPS"); do
  for np in $NPS; do
    maxb=$(maxb_for "$np")
    for pair in "shm shm" "net tcp"; do
      set -- $pair; ctr=$1; mtr=$2
      for coll in allreduce allgather broadcast; do
        mc=$(mpi_coll "$coll")
        log "rep $rep np=$np chorus-$ctr vs mpi-$mtr $coll"
        if [ $((rep % 2)) = 1 ]; then
          chorus_timing "$np" "$ctr" "$coll" "$maxb" "$rep"; mpi_timing "$np" "$mtr" "$mc" "$maxb" "$rep"
        else
          mpi_timing "$np" "$mtr" "$mc" "$maxb" "$rep"; chorus_timing "$np" "$ctr" "$coll" "$maxb" "$rep"
        fi
      done
    done
  done
done
echo "loadavg_at_end: $(cat /proc/loadavg)" >> "$RAW/machine.txt"
echo "total_runtime_s: $(( $(date +%s) - T0 ))" >> "$RAW/machine.txt"

# ------------------------------------------------------------------ summary
log "summarising"
python3 - "$RAW" <<'PY' > "$RAW/summary.md"
import glob, json, os, re, statistics, sys
raw = sys.argv[1]
def med(v): return statistics.median(v) if v else None
# Chorus: all JSON rows -> one compact CSV (the per-launch JSON files are then removed)
ch = {}   # (np, tr, coll, size) -> list of (time_us, busbw) per rep
jdir = os.path.join(raw, "json")
if os.path.isdir(jdir):   # first pass: per-launch JSON -> one compact CSV, then the JSON files go
    csv = ["np,transport,collective,rep,size,oop_time_us,oop_busbw,ip_time_us,ip_busbw"]
    for f in sorted(glob.glob(os.path.join(jdir, "*.json"))):
        m = re.match(r"chorus_np(\d+)_(\w+?)_(\w+)_rep(\d+)_\w\.json", os.path.basename(f))
        d = json.load(open(f))
        for r in d["results"]:
            o, i = r["out_of_place"], r["in_place"]
            csv.append(f"{m[1]},{m[2]},{m[3]},{m[4]},{r['size']},{o['time']},{o['bus_bw']},{i['time']},{i['bus_bw']}")
    open(os.path.join(raw, "chorus_timing.csv"), "w").write("\n".join(csv) + "\n")
    for f in glob.glob(os.path.join(jdir, "*.json")): os.remove(f)
    os.rmdir(jdir)
for line in open(os.path.join(raw, "chorus_timing.csv")).read().splitlines()[1:]:
    np_, tr, coll, rep, size, ot, ob, it, ib = line.split(",")
    # MPI_Bcast is in place; MPI allreduce/allgather are timed out of place
    t, b = (it, ib) if coll == "broadcast" else (ot, ob)
    ch.setdefault((int(np_), tr, coll, int(size)), []).append((float(t), float(b)))
# MPI
mp, mpi_ok = {}, {}
for f in sorted(glob.glob(os.path.join(raw, "mpi_np*_rep*.txt"))):
    m = re.match(r"mpi_np(\d+)_(\w+?)_(\w+)_rep(\d+)\.txt", os.path.basename(f))
    np_, tr, coll = int(m[1]), m[2], m[3]
    txt = open(f).read()
    mpi_ok[(np_, tr, coll)] = mpi_ok.get((np_, tr, coll), True) and "# result check: all ok" in txt
    for line in txt.splitlines():
        p = line.split()
        if len(p) == 11 and p[0] == coll and p[1].isdigit():
            t = float(p[3]); size = int(p[1])   # busbw recomputed from the time (the log rounds it to 3 decimals)
            bf = 2.0 * (np_ - 1) / np_ if coll == "allreduce" else (np_ - 1) / np_ if coll == "allgather" else 1.0
            mp.setdefault((np_, tr, coll, size), []).append((t, size / 1e3 / t * bf))
def fnum(x):
    if x is None: return "–"
    if x == 0: return "0"
    if abs(x) >= 100: return f"{x:.0f}"
    if abs(x) >= 0.01: return f"{x:.3g}"
    return f"{x:.2e}"
def fspread(v, k):
    xs = [t[k] for t in v]
    return f"{fnum(med(xs))} ({fnum(min(xs))}–{fnum(max(xs))})"
REQ = [8 * 4**k for k in range(13)] + [256 << 20]
def chorus_size(coll, np_, s):   # chorus-perf rounds the per-rank all-gather count down to 16 B
    if coll != "allgather": return s
    b = s // 4 // np_; b -= b % 4; return b * np_ * 4
def mpi_size(coll, np_, s):
    if coll != "allgather": return s
    c = max(1, s // 4 // np_); return c * np_ * 4
names = {"allreduce": "all-reduce", "allgather": "all-gather", "broadcast": "broadcast (root 0)"}
pairs = [("shm", "shm", "Chorus shm vs MPI shm (vader)"), ("net", "tcp", "Chorus net plugin (CHORUS_TRANSPORT=net) vs MPI TCP (ob1 + btl tcp)")]
nps = sorted({k[0] for k in ch} | {k[0] for k in mp})
key, body = [], []
key.append("| collective | ranks | transports | ratio at 2 / 8 / 32 / 128 / 256 MiB | min ratio ≥ 2 MiB | geo-mean ratio ≥ 2 MiB | sizes ≥ 2 MiB with ratio ≥ 1 | 8 B time µs Chorus / MPI |")
key.append("| --- | ---: | --- | --- | ---: | ---: | ---: | --- |")
for coll in ["allreduce", "allgather", "broadcast"]:
    mc = "bcast" if coll == "broadcast" else coll
    for np_ in nps:
        for ctr, mtr, title in pairs:
            body.append(f"\n### {names[coll]}, {np_} ranks, {title}\n")
            body.append("| size (B) | Chorus time µs | MPI time µs | Chorus busbw GB/s | MPI busbw GB/s | ratio Chorus/MPI |")
            body.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
            big = []
            t8 = None
            for s in REQ:
                cs, ms = chorus_size(coll, np_, s), mpi_size(coll, np_, s)
                c = ch.get((np_, ctr, coll, cs)) if cs else None
                m = mp.get((np_, mtr, mc, ms))
                if not c and not m: continue
                ratio = None
                if c and m and cs == ms:
                    cb, mb = med([x[1] for x in c]), med([x[1] for x in m])
                    ratio = cb / mb if mb > 0 else None
                    if ratio is None:
                        ratio = med([x[0] for x in m]) / med([x[0] for x in c])
                if s == 8 and c and m: t8 = (med([x[0] for x in c]), med([x[0] for x in m]))
                if s >= 2 << 20 and ratio is not None: big.append((s, ratio))
                lab = f"{s}" if cs == ms else f"{s} (Chorus {cs} B, MPI {ms} B: not comparable)"
                body.append(f"| {lab} | {fspread(c, 0) if c else '–'} | {fspread(m, 0) if m else '–'} | "
                            f"{fspread(c, 1) if c else '–'} | {fspread(m, 1) if m else '–'} | "
                            f"{'**%.2f**' % ratio if ratio is not None and ratio >= 1 else ('%.2f' % ratio if ratio is not None else '–')} |")
            if big:
                rs = [r for _, r in big]
                at = {s: r for s, r in big}
                pts = " / ".join(f"{at[x]:.2f}" if x in at else "–" for x in [2 << 20, 8 << 20, 32 << 20, 128 << 20, 256 << 20])
                gm = 1.0
                for r in rs: gm *= r
                gm **= 1 / len(rs)
                key.append(f"| {names[coll]} | {np_} | Chorus {ctr} vs MPI {mtr} | {pts} | {min(rs):.2f} | {gm:.2f} | {sum(r >= 1 for r in rs)}/{len(rs)} | "
                           f"{'%.1f / %.1f' % t8 if t8 else '–'} |")
print("# Chorus vs Open MPI, host buffers (generated by docs/perf/run_host.sh)\n")
print("```\n" + open(os.path.join(raw, "machine.txt")).read() + "```\n")
print("Chorus column: out-of-place half for all-reduce and all-gather, in-place half for broadcast "
      "(what the MPI benchmark times). ratio = median Chorus busbw / median MPI busbw (same bytes on both sides, so this equals MPI time / Chorus time). "
      "Medians over reps, (min–max) over reps.\n")
print("## Correctness\n")
for f in sorted(glob.glob(os.path.join(raw, "check_np*.txt"))):
    t = open(f).read()
    ok = "FAILED" not in t and not re.search(r"exit=[1-9]", t) and t.count("Out of bounds values : 0 OK") >= 1
    print(f"- chorus-perf -c 1 {os.path.basename(f)[6:-4]}: {'passed' if ok else 'FAILED'}")
for k, v in sorted(mpi_ok.items()):
    print(f"- mpi_colls np={k[0]} {k[1]} {k[2]}: {'all ok' if v else 'FAILED'} (every rep)")
print("\n## Key ratios (sizes ≥ 2 MiB; 1 MiB lies between the 512 KiB and 2 MiB points)\n")
print("\n".join(key))
print("\n## Tables")
print("\n".join(body))
PY
log "wrote $RAW/summary.md"
du -sh "$RAW"
