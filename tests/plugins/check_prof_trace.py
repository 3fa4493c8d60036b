#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check the reference profiler's output of one run (tests/plugins/profiler_chorus.cmake).

usage: check_prof_trace.py <dir> <nranks> <function> [<min ops>]

Every rank wrote one Chrome trace that json.load parses; every async begin ("b") has exactly one
end ("e") with the same id, no earlier than it; complete events ("X") have a duration >= 0; each
collective (cat "coll") appears once per rank, with the sequence numbers 0..N-1 of its function and
the same ones on every rank; and each rank's summary has a row for <function>.
"""
import glob
import json
import os
import sys


def fail(msg):
    print("check_prof_trace: FAIL: " + msg)
    sys.exit(1)


def main():
    folder, nranks, func = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    min_ops = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    traces = sorted(glob.glob(os.path.join(folder, "chorus-prof-*-rank*.json")))
    if len(traces) != nranks:
        fail("%d trace files in %s, expected %d: %s" % (len(traces), folder, nranks, traces))
    per_rank = {}
    for path in traces:
        with open(path) as f:
            try:
                doc = json.load(f)
            except ValueError as e:
                fail("%s is not valid JSON: %s" % (path, e))
        events = doc.get("traceEvents")
        if not isinstance(events, list) or not events:
            fail("%s has no traceEvents" % path)
        pids = {e.get("pid") for e in events}
        if len(pids) != 1:
            fail("%s: more than one pid (rank): %s" % (path, pids))
        if not any(e.get("ph") == "M" and e.get("name") == "process_name" for e in events):
            fail("%s: no process_name" % path)
        open_async = {}
        colls = {}
        for e in events:
            ph = e.get("ph")
            if ph == "X":
                if e["dur"] < 0:
                    fail("%s: negative duration: %s" % (path, e))
            elif ph == "b":
                key = (e["cat"], e["id"])
                if key in open_async:
                    fail("%s: async id started twice: %s" % (path, e))
                open_async[key] = e
                if e["cat"] == "coll":
                    seq = (e["name"], e["args"]["seq"])
                    if seq in colls:
                        fail("%s: %s seq %d appears twice" % (path, seq[0], seq[1]))
                    colls[seq] = e
            elif ph == "e":
                key = (e["cat"], e["id"])
                b = open_async.pop(key, None)
                if b is None:
                    fail("%s: end without a start: %s" % (path, e))
                if e["ts"] < b["ts"]:
                    fail("%s: ends before it starts: %s" % (path, e))
        if open_async:
            fail("%s: %d started events never ended, e.g. %s" % (path, len(open_async), next(iter(open_async.values()))))
        seqs = sorted(s for (name, s) in colls if name == func)
        if len(seqs) < min_ops:
            fail("%s: %d %s operations, expected at least %d" % (path, len(seqs), func, min_ops))
        if seqs != list(range(len(seqs))):
            fail("%s: %s sequence numbers are not 0..%d" % (path, func, len(seqs) - 1))
        per_rank[path] = set(colls)
        summary = path[: -len(".json")] + ".summary.txt"
        if not os.path.exists(summary):
            fail("no summary %s" % summary)
        with open(summary) as f:
            rows = [line.split() for line in f if not line.startswith("#")]
        if not any(r and r[0] == func for r in rows[1:]):
            fail("%s has no %s row" % (summary, func))
    sets = list(per_rank.values())
    if any(s != sets[0] for s in sets):
        fail("the ranks saw different collectives")
    return 0


if __name__ == "__main__":
    sys.exit(main())
