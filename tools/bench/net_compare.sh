#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# net_compare.sh: Chorus's net path against raw TCP and Open MPI over TCP, measured in one run, and one
# table with the ratios of the goal: from 4 MB up, Chorus >= 90 % of raw TCP; small messages (up to
# 64 KiB) within 1.5x Open MPI's time.
#
#   bash tools/bench/net_compare.sh [BUILD_DIR]     # default: build/ of this repository (./build.sh)
#
# Environment: REPS (default 3: each tool runs REPS times, interleaved, and every cell is the median),
#   MAXB (largest size, default 64M), IFACE (default lo), OUT (folder for the raw logs, default a new
#   temporary folder; its name is printed), CHORUS_ENV (extra settings for the Chorus runs, e.g.
#   "NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2"; empty = the defaults, which the goal is about),
#   PLUGINS (default "socket chorus-ofi": the net plugins Chorus runs over; chorus-ofi only when libnccl-net-chorus-ofi.so
#   was built; it uses the tcp;ofi_rxm provider on IFACE).
# Needs: BUILD_DIR/bin/chorus-perf and chorus-tcp-stream, BUILD_DIR/lib/libnccl-net-socket.so, python3;
#   Open MPI (mpicc, mpirun) for the MPI column, else that column says "-".
#
# What runs, per rep (the order of the three rotates by rep, so load from elsewhere hits each):
#   Chorus   chorus-perf -np 2 --hosts 2 {sendrecv,allreduce} -b 8 -e MAXB -f 2: two ranks that are
#            separate hosts to the library (NCCL_HOSTID), so every byte goes through the net plugin
#            (each of PLUGINS in turn), over IFACE (NCCL_SOCKET_IFNAME / CHORUS_OFI_DOMAIN); default
#            settings otherwise.
#   raw TCP  chorus-tcp-stream: one stream, send()/recv() calls of each size from 4 MiB up, and the
#            8-byte ping-pong latency (half a round trip).
#   Open MPI mpirun -np 2 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include IFACE
#            mpi_colls -c sendrecv,allreduce (tools/bench/mpi_colls.c, built here with mpicc).
# Columns: time in us (Chorus: out of place, average over the iterations; MPI: median sample), busbw in
# GB/s (nccl-tests' definition; for 2 ranks busbw = algbw for both), raw TCP GB/s at that size one way
# and both ways at once (per stream), and the ratios: Chorus busbw / raw TCP (from 4 MiB; the goal is
# stated against one way) and Chorus time / MPI time (up to 64 KiB).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD_ARG=${1:-build}
case "$BUILD_ARG" in /*) ;; *) BUILD_ARG=$REPO/$BUILD_ARG ;; esac
BUILD=$(cd "$BUILD_ARG" 2>/dev/null && pwd) || { echo "net_compare.sh: no build dir $BUILD_ARG" >&2; exit 1; }
PERF=$BUILD/bin/chorus-perf
TCP=$BUILD/bin/chorus-tcp-stream
for f in "$PERF" "$TCP"; do
  [ -x "$f" ] || { echo "net_compare.sh: $f not found (./build.sh first)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "net_compare.sh: python3 is needed for the table" >&2; exit 1; }
REPS=${REPS:-3}
MAXB=${MAXB:-64M}
IFACE=${IFACE:-lo}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/net_compare.XXXXXX")}
mkdir -p "$OUT" || exit 1
maxBytes=$(numfmt --from=iec "$MAXB") || exit 1
PLUGINS=${PLUGINS:-socket chorus-ofi}
case " $PLUGINS " in
  *" chorus-ofi "*) [ -e "$BUILD/lib/libnccl-net-chorus-ofi.so" ] || { echo "net_compare.sh: no libnccl-net-chorus-ofi.so: chorus-ofi left out" >&2
               PLUGINS=$(echo " $PLUGINS " | sed 's/ chorus-ofi / /'); } ;;
esac

have_mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 -Wall -o "$OUT/mpi_colls" "$REPO/tools/bench/mpi_colls.c" && have_mpi=1
fi
[ "$have_mpi" = 1 ] || echo "net_compare.sh: no Open MPI (mpicc/mpirun): the MPI columns stay empty" >&2

{
  echo "date_utc: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), kernel $(uname -r)"
  echo "chorus: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) ($(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) files modified)"
  echo "openmpi: $(mpirun --version 2>/dev/null | head -1)"
  echo "iface: $IFACE  reps: $REPS  maxbytes: $MAXB  plugins: $PLUGINS  chorus_env: ${CHORUS_ENV:-(defaults)}"
  echo "loadavg_at_start: $(cat /proc/loadavg)"
} | tee "$OUT/machine.txt"

# chorus-perf times one span of -n iterations: small sizes get many, so that a span is well above the
# clock's noise; large ones few, so that a rep stays short.
run_chorus() {
  local rep=$1 coll part plugin f
  for plugin in $PLUGINS; do
    for coll in sendrecv allreduce; do
      for part in "s 8 64K 500 50" "l 128K $MAXB 20 3"; do
        set -- $part
        f=$OUT/chorus_${plugin}_${coll}_${rep}_$1
        # shellcheck disable=SC2086
        env NCCL_NET_PLUGIN="$plugin" NCCL_SOCKET_IFNAME="$IFACE" FI_PROVIDER="tcp;ofi_rxm" CHORUS_OFI_DOMAIN="$IFACE" \
          ${CHORUS_ENV:-} timeout 300 "$PERF" -np 2 --hosts 2 -T 250 "$coll" \
          -b "$2" -e "$3" -f 2 -n "$4" -w "$5" -c 0 -J "$f.json" >"$f.txt" 2>&1 ||
          echo "net_compare.sh: chorus-perf ($plugin) $coll $2..$3 failed (rep $rep): see $f.txt" >&2
      done
    done
  done
}
# Raw TCP at each size from 4 MiB: one stream one way (tcp_<rep>.txt), then two streams started
# together, one each way between two pairs of processes (tcp2_<rep>.txt): the traffic of a 2-rank
# sendrecv or all-reduce, where every rank sends and receives the size at once.
run_tcp() {
  local rep=$1 b=$((4 << 20)) bytes
  : >"$OUT/tcp_$rep.txt"
  : >"$OUT/tcp2_$rep.txt"
  timeout 60 "$TCP" -s 8 -b 8 -l 5000 >>"$OUT/tcp_$rep.txt" 2>&1
  while [ "$b" -le "$maxBytes" ]; do
    bytes=$((b * 8 > 512 << 20 ? b * 8 : 512 << 20))
    timeout 120 "$TCP" -s "$b" -b "$bytes" -l 0 >>"$OUT/tcp_$rep.txt" 2>&1 ||
      echo "net_compare.sh: chorus-tcp-stream -s $b failed (rep $rep)" >&2
    timeout 120 "$TCP" -s "$b" -b "$bytes" -l 0 >"$OUT/tcp2a.txt" 2>&1 &
    timeout 120 "$TCP" -s "$b" -b "$bytes" -l 0 >"$OUT/tcp2b.txt" 2>&1
    wait
    cat "$OUT/tcp2a.txt" "$OUT/tcp2b.txt" >>"$OUT/tcp2_$rep.txt"
    b=$((b * 2))
  done
  rm -f "$OUT/tcp2a.txt" "$OUT/tcp2b.txt"
}
run_mpi() {
  local rep=$1
  [ "$have_mpi" = 1 ] || return 0
  timeout 300 mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include "$IFACE" --mca oob_tcp_if_include "$IFACE" -np 2 \
    "$OUT/mpi_colls" -c sendrecv,allreduce -b 8 -e "$MAXB" -f 2 -T 0.3 -n 10 >"$OUT/mpi_$rep.txt" 2>&1 ||
    echo "net_compare.sh: mpirun failed (rep $rep): see $OUT/mpi_$rep.txt" >&2
}

for ((rep = 1; rep <= REPS; rep++)); do
  case $((rep % 3)) in
    1) order="run_chorus run_tcp run_mpi" ;;
    2) order="run_tcp run_mpi run_chorus" ;;
    0) order="run_mpi run_chorus run_tcp" ;;
  esac
  for step in $order; do
    echo "[$(date +%H:%M:%S)] rep $rep: ${step#run_} (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$step" "$rep"
  done
done

python3 - "$OUT" "$REPS" $PLUGINS <<'EOF' | tee "$OUT/table.md"
import json, re, statistics, sys
out, reps, plugins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
chorus, mpi, tcp, tcp2, lat = {}, {}, {}, {}, []
for rep in range(1, reps + 1):
    for plugin in plugins:
        for coll in ("sendrecv", "allreduce"):
            for part in ("s", "l"):
                try:
                    doc = json.load(open(f"{out}/chorus_{plugin}_{coll}_{rep}_{part}.json"))
                except (OSError, ValueError):
                    continue
                for r in doc.get("results", []):
                    o = r["out_of_place"]
                    chorus.setdefault((plugin, coll, r["size"]), []).append((o["time"], o["bus_bw"]))
    try:
        for line in open(f"{out}/mpi_{rep}.txt"):
            f = line.split()
            if len(f) == 11 and f[0] in ("sendrecv", "allreduce") and f[10] == "ok":
                mpi.setdefault((f[0], int(f[1])), []).append((float(f[3]), float(f[7])))
    except OSError:
        pass
    for name, table in (("tcp", tcp), ("tcp2", tcp2)):
        try:
            lines = open(f"{out}/{name}_{rep}.txt").read().splitlines()
        except OSError:
            continue
        both = {}
        for line in lines:
            m = re.match(r"raw TCP: 1 stream\(s\) x \d+ bytes, (\d+) bytes per call: ([\d.]+) GB/s", line)
            if m and int(m.group(1)) > 8:
                both.setdefault(int(m.group(1)), []).append(float(m.group(2)))
            m = re.match(r"raw TCP latency: ([\d.]+) us", line)
            if m:
                lat.append(float(m.group(1)))
        # One way: the stream's rate. Both ways: the mean of the two streams (each is one direction).
        for size, v in both.items():
            if name == "tcp" or len(v) == 2:
                table.setdefault(size, []).append(statistics.mean(v))

def med(v, i):
    return statistics.median(x[i] for x in v) if v else None

def fmt(x, spec):
    return format(x, spec) if x is not None else "-"

BIG, SMALL = 4 << 20, 64 << 10
print("| plugin | coll | size (B) | Chorus us | Chorus busbw GB/s | raw TCP 1 way GB/s | raw TCP both ways GB/s (each) "
      "| Chorus / raw 1 way | Chorus / raw both ways | MPI us | MPI busbw GB/s | Chorus time / MPI time |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
misses = {"bw": [], "lat": []}
for plugin, coll in [(p, c) for p in plugins for c in ("sendrecv", "allreduce")]:
    for size in sorted(s for (p, c, s) in chorus if c == coll and p == plugin):
        ct, cb = med(chorus[(plugin, coll, size)], 0), med(chorus[(plugin, coll, size)], 1)
        m = mpi.get((coll, size))
        mt, mb = med(m, 0), med(m, 1)
        raw = statistics.median(tcp[size]) if size >= BIG and size in tcp else None
        raw2 = statistics.median(tcp2[size]) if size >= BIG and size in tcp2 else None
        bw_ratio = cb / raw if raw else None
        bw_ratio2 = cb / raw2 if raw2 else None
        lat_ratio = ct / mt if mt and size <= SMALL else None
        if bw_ratio is not None and bw_ratio < 0.9:
            misses["bw"].append(f"{plugin} {coll} {size}: {bw_ratio:.2f}")
        if lat_ratio is not None and lat_ratio > 1.5:
            misses["lat"].append(f"{plugin} {coll} {size}: {lat_ratio:.2f}")
        print(f"| {plugin} | {coll} | {size} | {fmt(ct, '.1f')} | {fmt(cb, '.3f')} | {fmt(raw, '.2f')} | {fmt(raw2, '.2f')} "
              f"| {fmt(bw_ratio, '.2f')} | {fmt(bw_ratio2, '.2f')} | {fmt(mt, '.1f')} | {fmt(mb, '.3f')} "
              f"| {fmt(lat_ratio, '.2f')} |")
print()
print(f"raw TCP latency (8 B ping-pong, half round trip): {fmt(statistics.median(lat) if lat else None, '.1f')} us")
print("bandwidth goal (Chorus busbw >= 0.90 x raw TCP one way from 4 MiB): " +
      ("met" if not misses["bw"] else "missed at " + ", ".join(misses["bw"])))
print("latency goal (Chorus time <= 1.5 x Open MPI's up to 64 KiB): " +
      ("met" if not misses["lat"] else "missed at " + ", ".join(misses["lat"])))
EOF
echo "net_compare.sh: raw logs and table.md in $OUT" >&2
