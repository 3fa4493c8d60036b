#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gpu_table.py: turns chorus-perf JSON files (-M cuda, ranks sharing ONE GPU) and the output of
chorus-gpu-ceiling into the markdown table of docs/perf/gpu.md.

  gpu_table.py ceiling.txt perf-*.json

Fraction of the ceiling. With every rank on one GPU, all traffic of a collective is HBM traffic:
Chorus's ring reads the inputs and the slots (which live in the receiver's memory, the same HBM) and
writes the slots and the outputs. Per rank, with c = S/n (S the nccl-tests "size", n ranks), the
ring moves (reads + writes):
  all_reduce      c * (6n - 4)   (reduce-scatter then all-gather around the ring)
  all_gather      c * (3n - 1)   reduce_scatter c * (3n - 1)
  broadcast       S * (3n - 1)/n per rank on average (root reads and writes, others pass on)
  reduce          S * (3n - 1)/n
  alltoall, sendrecv: 4 bytes per byte crossing ranks (read input, write slot, read slot, write
                  output), 2 per byte a rank keeps (a local copy)
All n ranks together move n times that, in the measured time. The ceiling is the GPU's own
device-to-device copy measured in the same run: a copy of B bytes moves 2B (read + write), so the
HBM rate it shows is 2 x the copy rate. fraction = (traffic / time) / (2 x copy rate).
"""
import json
import sys


def traffic_bytes(coll, size, n):
    """Total HBM bytes all n ranks move for one operation of nccl-tests size `size`."""
    c = size / n
    if coll == "allreduce":
        per = c * (6 * n - 4)
    elif coll in ("allgather", "reducescatter"):
        per = c * (3 * n - 1)
    elif coll in ("broadcast", "reduce"):
        per = size * (3 * n - 1) / n
    elif coll == "alltoall":
        per = 4 * c * (n - 1) + 2 * c
    elif coll == "sendrecv":
        per = 4 * size
    else:
        return None
    return per * n


def human(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return str(b)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    ceiling = {}
    for line in open(sys.argv[1]):
        parts = line.split()
        if len(parts) >= 2:
            try:
                ceiling[parts[0]] = float(parts[1])
            except ValueError:
                pass
    copy = max(ceiling.get("d2d_memcpy", 0), ceiling.get("d2d_sm_copy", 0))
    floor = ceiling.get("launch_back_to_back")
    print(f"Ceiling: device-to-device copy {copy:.0f} GB/s (HBM {2 * copy:.0f} GB/s read + write); "
          f"launch floor {floor} us back to back, {ceiling.get('launch_sync_round_trip')} us launch + sync.\n")
    runs = {}  # one table per collective: files of the same collective (size ranges) merged
    for path in sys.argv[2:]:
        d = json.load(open(path))
        key = (d["collective"], d["nranks"])
        runs.setdefault(key, []).extend(d["results"])
    for (coll, n), rows in runs.items():
        rows.sort(key=lambda r: r["size"])
        print(f"### {coll}, {n} ranks on one GPU ({rows[0]['type'] if rows else ''}, {rows[0]['redop'] if rows else ''})\n")
        print("| size | time µs | algbw GB/s | busbw GB/s | HBM fraction | × launch floor | wrong |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            h = r["out_of_place"]
            t = h["time"]
            traffic = traffic_bytes(coll, r["size"], n)
            frac = "" if traffic is None or t <= 0 or copy <= 0 else f"{traffic / (t * 1e-6) / 1e9 / (2 * copy):.2f}"
            lf = "" if not floor else f"{t / floor:.1f}"
            print(f"| {human(r['size'])} | {t:.1f} | {h['alg_bw']:.2f} | {h['bus_bw']:.2f} | {frac} | {lf} | {'N/A' if h['nwrong'] is None else h['nwrong']} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
