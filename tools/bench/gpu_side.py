#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gpu_side.py: the side-by-side table of docs/perf/gpu.md from chorus-perf JSON files of the same
runs on two libraries (Chorus and NVIDIA's NCCL, chorus-perf built once; tests/gpu/run_gpus.sh).

  gpu_side.py DIR          reads DIR/side-<lib>-<mode>-<coll>-<sweep>.json, lib "chorus" or "nvidia",
                           mode "thr" or "proc", with ".ring" / ".tree" when NCCL_ALGO was forced
                           and ".<type>" (e.g. ".bfloat16") when the datatype was not float

One table per (mode, collective): per size, each library's time (µs, out of place), the part of it
spent inside the library's calls ("in calls": enqueueing; files from before chorus-perf measured it
show "-"), bus bandwidth, and the ratio Chorus / NVIDIA of bus bandwidth (> 1: Chorus faster). A size one library
lacks (a sweep that failed or timed out) shows "-". The JSON's "library" field says which library
actually ran; a file whose library does not match its name is reported and left out, so a table can
never compare a library with itself.
"""
import glob
import json
import os
import sys

from gpu_table import human  # the size labels of the one-GPU tables (same folder)

ALGOS = {"ring", "tree", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"}  # NCCL_ALGO tags


def load(folder):
    """{(mode, coll): {lib: {size: out_of_place dict}}}"""
    runs = {}
    for path in sorted(glob.glob(os.path.join(folder, "side-*.json"))):
        parts = os.path.basename(path)[:-len(".json")].split("-")
        if len(parts) != 5:
            continue
        _, lib, mode, coll, _sweep = parts
        try:
            d = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"<!-- {path}: unreadable ({e}) -->")
            continue
        is_chorus = d.get("library", "").lower().startswith("chorus")
        if is_chorus != (lib == "chorus"):
            print(f"<!-- {path}: named {lib} but the library was {d.get('library')!r}: left out -->")
            continue
        cell = runs.setdefault((mode, coll), {}).setdefault(lib, {})
        for r in d.get("results", []):
            cell[r["size"]] = dict(r["out_of_place"], nranks=d.get("nranks"))
    return runs


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    runs = load(sys.argv[1])
    for (mode, coll), libs in sorted(runs.items()):
        ours, theirs = libs.get("chorus", {}), libs.get("nvidia", {})
        n = next(iter(ours.values() or theirs.values()), {}).get("nranks", "?")
        base, *tags = mode.split(".")
        where = f"one process, {n} GPUs (-t)" if base == "thr" else f"{n} processes, one GPU each (-np)"
        extra = "".join(f", NCCL_ALGO={t.upper()}" if t in ALGOS else f", {t}" for t in tags)
        print(f"### {coll}, {where}{extra}\n")
        print("| size | Chorus µs | NCCL µs | Chorus in calls | NCCL in calls | Chorus busbw | NCCL busbw | "
              "Chorus / NCCL | wrong (C/N) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in sorted(set(ours) | set(theirs)):
            a, b = ours.get(size), theirs.get(size)
            ratio = "-"
            if a and b and b["bus_bw"] > 0:
                ratio = f"{a['bus_bw'] / b['bus_bw']:.2f}"
            elif a and b and a["time"] > 0:  # sizes of 0 elements: compare times
                ratio = f"{b['time'] / a['time']:.2f} (time)"

            def cellv(h, key, fmt):
                return "-" if h is None or h.get(key) is None else fmt.format(h[key])

            def wrong(h):
                return "-" if h is None else ("N/A" if h["nwrong"] is None else str(h["nwrong"]))

            print(f"| {human(size)} | {cellv(a, 'time', '{:.1f}')} | {cellv(b, 'time', '{:.1f}')} | "
                  f"{cellv(a, 'host_time', '{:.1f}')} | {cellv(b, 'host_time', '{:.1f}')} | "
                  f"{cellv(a, 'bus_bw', '{:.2f}')} | {cellv(b, 'bus_bw', '{:.2f}')} | {ratio} | {wrong(a)}/{wrong(b)} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
