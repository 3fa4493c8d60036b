#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_perf_output.py JSON CSV TABLE BEFORE AFTER: checks one chorus-perf run's -J and -C files.

The JSON keeps every key scripts read (docs/perf, tools/bench) and has the new ones: tool_version,
library_path, host, hosts, start_time (UTC, ISO 8601, between BEFORE and AFTER, in seconds since
the epoch) and duration_s, and per row algo and proto, equal to the table's "algo/proto" column
(TABLE: chorus-perf's stdout). The CSV has its header and one line per JSON row with the same
values (both print numbers as %.6g; an empty #wrong is JSON's null). Prints what differs; exit 1.
"""
import csv
import datetime
import json
import os
import re
import socket
import sys

CSV_HEADER = ["size", "count", "type", "redop", "root",
              "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_nwrong",
              "ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_nwrong",
              "algo", "proto", "collective", "nranks"]
HALF_CSV = ["time_us", "algbw_gbs", "busbw_gbs", "nwrong"]
HALF_JSON = ["time", "alg_bw", "bus_bw", "nwrong"]

errors = []


def expect(cond, what):
    if not cond:
        errors.append(what)


def main():
    json_path, csv_path, table_path, before, after = sys.argv[1:6]
    before, after = int(before), int(after)
    d = json.load(open(json_path))

    # Existing keys, as the scripts read them.
    for key in ("tool", "collective", "test", "nranks", "nhosts", "nccl_headers", "nccl_library", "library",
                "memory", "options", "results", "out_of_bounds", "avg_bus_bw"):
        expect(key in d, f"JSON: no {key!r}")
    expect(d.get("tool") == "chorus-perf", f"JSON: tool {d.get('tool')!r}")
    expect(d.get("nranks") == 2, f"JSON: nranks {d.get('nranks')!r}")
    expect(d.get("memory") == "host", f"JSON: memory {d.get('memory')!r}")
    expect(str(d.get("library", "")).startswith("chorus "), f"JSON: library {d.get('library')!r}")

    # New top-level keys.
    expect(re.fullmatch(r"\d+\.\d+\.\d+", str(d.get("tool_version"))), f"JSON: tool_version {d.get('tool_version')!r}")
    lib = d.get("library_path")
    expect(isinstance(lib, str) and os.path.basename(lib).startswith("libnccl.so") and os.path.exists(lib),
           f"JSON: library_path {lib!r}")
    host = socket.gethostname()
    expect(d.get("host") == host, f"JSON: host {d.get('host')!r}, this host is {host!r}")
    expect(d.get("hosts") == [host, host], f"JSON: hosts {d.get('hosts')!r}")
    start = d.get("start_time")
    if isinstance(start, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", start):
        t = datetime.datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        expect(before <= t.timestamp() <= after, f"JSON: start_time {start} not within the run ({before}..{after})")
    else:
        errors.append(f"JSON: start_time {start!r} is not UTC ISO 8601 (YYYY-MM-DDThh:mm:ssZ)")
    dur = d.get("duration_s")
    expect(isinstance(dur, (int, float)) and 0 < dur <= after - before + 1,
           f"JSON: duration_s {dur!r} (the run took {after - before} s by the shell's clock)")

    # Rows: the table's algo/proto column, per row.
    rows = d.get("results", [])
    table = [line.split() for line in open(table_path) if line.strip() and not line.startswith("#")]
    expect(len(rows) > 0 and len(rows) == len(table), f"JSON: {len(rows)} rows, the table {len(table)}")
    for r, t in zip(rows, table):
        for key in ("size", "count", "type", "redop", "root", "out_of_place", "in_place", "algo", "proto"):
            expect(key in r, f"JSON row {r.get('size')}: no {key!r}")
        expect(isinstance(r.get("algo"), str) and isinstance(r.get("proto"), str),
               f"JSON row {r.get('size')}: algo/proto {r.get('algo')!r}/{r.get('proto')!r} (Chorus always knows)")
        expect(t[0] == str(r.get("size")) and t[-1] == f"{r.get('algo')}/{r.get('proto')}",
               f"JSON row {r.get('size')}: {r.get('algo')}/{r.get('proto')}, the table's row: {' '.join(t)}")

    # CSV: header, then the JSON rows field by field.
    with open(csv_path, newline="") as f:
        lines = list(csv.reader(f))
    expect(lines and lines[0] == CSV_HEADER, f"CSV header {lines[0] if lines else None}")
    body = lines[1:]
    expect(len(body) == len(rows), f"CSV: {len(body)} rows, JSON {len(rows)}")
    for line, r in zip(body, rows):
        if len(line) != len(CSV_HEADER):
            errors.append(f"CSV row {line}: {len(line)} fields")
            continue
        c = dict(zip(CSV_HEADER, line))
        where = f"CSV row of size {c['size']}"
        for key in ("size", "count", "root"):
            expect(int(c[key]) == r[key], f"{where}: {key} {c[key]}, JSON {r[key]}")
        for key in ("type", "redop"):
            expect(c[key] == r[key], f"{where}: {key} {c[key]}, JSON {r[key]}")
        for prefix, half in (("oop_", "out_of_place"), ("ip_", "in_place")):
            for cn, jn in zip(HALF_CSV, HALF_JSON):
                v, want = c[prefix + cn], r[half][jn]
                got = None if v == "" else (int(v) if cn == "nwrong" else float(v))
                expect(got == want, f"{where}: {prefix + cn} {v!r}, JSON {half}.{jn} {want!r}")
        expect(c["algo"] == (r["algo"] or "") and c["proto"] == (r["proto"] or ""),
               f"{where}: algo/proto {c['algo']}/{c['proto']}, JSON {r['algo']}/{r['proto']}")
        expect(c["collective"] == d["collective"] and int(c["nranks"]) == d["nranks"],
               f"{where}: collective {c['collective']} nranks {c['nranks']}, JSON {d['collective']} {d['nranks']}")

    for e in errors:
        print("FAIL " + e)
    if not errors:
        print(f"{json_path}: {len(rows)} rows, JSON and CSV agree")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
