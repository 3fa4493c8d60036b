#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_layers.py: the include order of the product code (docs/design.md, "Layout").

  tools/ci/check_layers.py [--root DIR] [--debt FILE] [--write-debt] [-v]

Reads every `#include "..."` of core/, device/, plugins/ and tools/, resolves it the way the build's
include paths do (SEARCH below), and checks it against the order declared in LAYERS and the rules
for the device library, plugins and tools:

  - a file of core/ may include its own folder and any folder of a lower rank;
  - the device library (device/) sees only the public headers, the host/device contract and its
    own folder, and no file of core/ includes device/ (both meet in the contract, core/hostdev);
  - a plugin sees only the frozen ABI headers, the support library and its own folder;
  - a tool sees only the public headers, the host/device contract, the support library and tools/.

Every include that breaks these is a violation. The includes that broke them when the check came in
are listed in the debt file (tools/ci/layers_debt.txt, one `file: include` a line, sorted). The
check fails on a violation that is not in the list, on an entry of the list that no longer occurs
(so the list can only shrink), and on a quoted include found nowhere in the tree (the search paths
below would be out of date). --write-debt rewrites the list from what the tree holds now.
Then a summary: the violations by pair of folders, and the folders of the core that include each
other in a circle. Exit status 0 when the tree and the list agree, 1 otherwise, 2 on a usage error.
"""
import argparse
import os
import re
import signal
import sys

# The layers of core/, bottom first. A file may include its own folder and any folder
# of a lower rank; nothing may include upward. Every folder of core/ that holds sources needs a line
# here (a new one fails the check until it has a rank). Two folders never share a rank, so any
# circle between folders has an upward include in it.
LAYERS = [
    # folder            rank  job
    ("core/include",      0, "the public headers: nccl.h, chorus.h and the frozen plugin ABI headers"),
    ("core/hostdev",      5, "the host/device contract: works, step math, tasks, reduction encoding, ids, device API"),
    ("core/util",        10, "OS helpers: futex, idle waits, the plugin library search, siphash"),
    ("plugins/support",  20, "the plugin support library, libc only: sockets (the bootstrap's too), settings"),
    ("core/log",         30, "the NCCL-style logger, last-error text, the CHECK macros"),
    ("core/config",      40, "parameters (params.def), the INI/env loader, the env plugin, the store"),
    ("core/topo",        45, "the host's topology: NCCL's XML, nodes and links, paths, NIC choice, GPUDirect"),
    ("core/bootstrap",   50, "unique ids, the root, rendezvous, messages between ranks"),
    ("core/plugin",      60, "the net, tuner and profiler loaders, their adapters and call wrappers"),
    ("core/transport",   65, "links between ranks: shm, net (through the net plugin), connection"),
    ("core/commstate",   70, "the communicator object: struct ncclComm, handle checks, references, errors"),
    ("core/cuda",        90, "the CUDA driver, the device library's loader, a rank's GPU state"),
    ("core/profile",     95, "the profiler plugin's events around groups, tasks and steps"),
    ("core/exec",       100, "the host executor, the GPU launch path, element-wise reductions"),
    ("core/plan",       110, "the planner: algorithm, protocol, channels, works; the tuner's hooks"),
    ("core/comm",       120, "the communicator's lifecycle: init, topology, split, shrink, windows, free"),
    ("core/group",      130, "ncclGroupStart/End, the per-thread task list, deferred inits and calls"),
    ("core/api",        150, "public entry points: argument checks, then hand-off"),
]

# What the code outside the layers may include (folders, or single files).
ABI_HEADERS = ["core/include/plugin"]           # the frozen plugin ABI, one header per version
PUBLIC_HEADERS = ["core/include"]               # nccl.h, chorus.h and the plugin ABI
CONTRACT = ["core/hostdev"]                     # the host/device contract, header-only
SUPPORT_LIBRARY = ["plugins/support",          # linked by every plugin and by libchorus
                   "plugins/net_common"]        # compiled into each net plugin
RULES = {
    # top folder: (what a file there may include besides its own subfolder, the rule in words)
    "plugins": (ABI_HEADERS + SUPPORT_LIBRARY, "a plugin sees only the ABI headers and the support library"),
    "tools": (PUBLIC_HEADERS + CONTRACT + SUPPORT_LIBRARY + ["tools"],
              "a tool sees only the public headers, the host/device contract and the support library"),
    # libchorus-device.so: the CUDA kernels and their C launcher, beside the core, not in its layers.
    "device": (PUBLIC_HEADERS + CONTRACT, "the device library sees only the public headers and the host/device contract"),
}

# Where `#include "x"` is looked for, after the including file's own folder: the include
# directories of the targets built from each top folder (core/CMakeLists.txt, device/CMakeLists.txt,
# plugins/*/CMakeLists.txt, tools/*.cmake), in their order. "{own}" is the plugin's own folder.
SEARCH = {
    "core": ["core/include", "core", "plugins/support"],
    "device": [".", "core/include", "core"],
    # core last: no plugin builds with it, but an include it would reach is named by the rule it breaks.
    "plugins": ["core/include", "{own}", "plugins/support", "plugins/net_common", "plugins/net_common/tests", "core"],
    "tools": ["core/include", "tools", "tools/perf", "tools/netcheck", "tools/bench", "core", "plugins/support", "."],
}

SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh", ".cu.in", ".def", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DEFAULT_DEBT = "tools/ci/layers_debt.txt"


def layer_of(rel):
    """The layer (folder, rank) that the repository path rel belongs to, or None."""
    for folder, rank, _ in LAYERS:
        if rel == folder or rel.startswith(folder + "/"):
            return folder, rank
    return None


def unit_of(rel):
    """The folder a path is judged by: its layer in core/ and device/, else plugins/<name> or tools."""
    parts = rel.split("/")
    if parts[0] in ("core", "device"):
        layer = layer_of(rel)
        if layer:
            return layer[0]
        return "/".join(parts[:2]) if parts[0] == "core" and len(parts) > 2 else parts[0]
    if parts[0] == "plugins" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def within(rel, folders):
    return any(rel == f or rel.startswith(f + "/") for f in folders)


def source_files(root):
    for top in ("core", "device", "plugins", "tools"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def resolve(root, rel, text):
    """The repository path that `#include "text"` in rel reaches, or None (a system header)."""
    top = rel.split("/")[0]
    own = "/".join(rel.split("/")[:2])
    dirs = [os.path.dirname(rel)] + [d.replace("{own}", own) for d in SEARCH[top]]
    for d in dirs:
        path = os.path.normpath(os.path.join(d, text)).replace(os.sep, "/")
        if not path.startswith("../") and os.path.isfile(os.path.join(root, path)):
            return path
    return None


def check_include(rel, target):
    """Why including target from rel breaks the order, or None when it may."""
    src_unit, dst_unit = unit_of(rel), unit_of(target)
    if src_unit == dst_unit:
        return None
    top = rel.split("/")[0]
    if top in RULES:
        allowed, words = RULES[top]
        if within(target, allowed):
            return None
        return f"{words} ({src_unit} -> {dst_unit})"
    src, dst = layer_of(rel), layer_of(target)
    if src is None:
        return f"{src_unit} has no rank in LAYERS"
    if dst is None:
        return f"{dst_unit} is outside the layers ({src_unit} -> {dst_unit})"
    if dst[1] > src[1]:
        return f"goes up: {src[0]} (rank {src[1]}) -> {dst[0]} (rank {dst[1]})"
    return None


def scan(root):
    """Every include of the tree: a list of (file, line, include text, resolved path or None)."""
    found = []
    for rel in source_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if m:
                    found.append((rel, lineno, m.group(1), resolve(root, rel, m.group(1))))
    return found


def read_debt(path):
    entries = set()
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                entries.add(line)
    return entries


def write_debt(path, entries):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# SPDX-License-Identifier: BSD-3-Clause\n"
                "# Includes that break the layer order (tools/ci/check_layers.py), allowed until they are\n"
                "# fixed: one `file: include` a line, sorted. The list only shrinks: the check fails on an\n"
                "# entry that no longer occurs. Regenerate with tools/ci/check_layers.py --write-debt.\n")
        for e in sorted(entries):
            f.write(e + "\n")


def circles(edges):
    """Strongly connected components of more than one folder (Tarjan), each sorted by rank."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    rank = {folder: r for folder, r, _ in LAYERS}
    return [sorted(c, key=lambda f: rank.get(f, 1 << 30)) for c in out], graph


def shortest_circle(graph, members):
    """One shortest circle through the first of members, inside members: [a, ..., a]."""
    start, inside = members[0], set(members)
    prev, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [start]
                while v is not None:
                    path.append(v)
                    v = prev[v]
                return path[::-1]
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    return members


def check_table(root):
    """Problems of the table itself: a folder of core/ with sources but no rank, a rank used twice."""
    problems = []
    ranks = {}
    for folder, rank, _ in LAYERS:
        if rank in ranks:
            problems.append(f"LAYERS: {folder} and {ranks[rank]} share rank {rank}")
        ranks[rank] = folder
    for rel in source_files(root):
        parts = rel.split("/")
        if parts[0] == "core" and len(parts) > 2 and not layer_of(rel):
            problem = f"LAYERS: core/{parts[1]} has no rank (add a line for it)"
            if problem not in problems:
                problems.append(problem)
    return problems


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                    help="the repository (default: the one holding this script)")
    ap.add_argument("--debt", help=f"the allow-list (default: ROOT/{DEFAULT_DEBT})")
    ap.add_argument("--write-debt", action="store_true", help="rewrite the allow-list from the tree")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also list the violations that the allow-list allows")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    debt_path = args.debt or os.path.join(root, DEFAULT_DEBT)

    problems = check_table(root)
    for p in problems:
        print(p)

    includes = scan(root)
    violations = {}  # "file: include" -> [(line, why)]
    edges = set()
    unresolved = 0
    for rel, lineno, text, target in includes:
        if target is None:
            # The build would not find it either, or SEARCH has lost a folder of the include path (and
            # would stop checking what is included from there): either way, say so.
            unresolved += 1
            print(f"{rel}:{lineno}: #include \"{text}\": found nowhere in the tree "
                  "(a system header: write <...>; else SEARCH lacks a folder of the build's include path)")
            continue
        src, dst = unit_of(rel), unit_of(target)
        if src != dst and layer_of(rel) and layer_of(target):
            edges.add((src, dst))
        why = check_include(rel, target)
        if why:
            violations.setdefault(f"{rel}: {text}", []).append((lineno, why, src, dst))

    if args.write_debt:
        write_debt(debt_path, violations.keys())
        print(f"check_layers: wrote {len(violations)} entries to {os.path.relpath(debt_path, root)}")
        return 1 if problems else 0

    debt = read_debt(debt_path)
    new = sorted(k for k in violations if k not in debt)
    stale = sorted(debt - violations.keys())
    for key in new:
        rel, text = key.split(": ", 1)
        for lineno, why, _, _ in violations[key]:
            print(f"{rel}:{lineno}: #include \"{text}\": {why}")
    for key in stale:
        print(f"{os.path.relpath(debt_path, root)}: '{key}' no longer occurs: remove the line")
    if args.verbose:
        for key in sorted(k for k in violations if k in debt):
            rel, text = key.split(": ", 1)
            for lineno, why, _, _ in violations[key]:
                print(f"{rel}:{lineno}: #include \"{text}\": {why} (allowed: in the debt list)")

    pairs = {}
    for key, hits in violations.items():
        _, _, src, dst = hits[0]
        pairs[(src, dst)] = pairs.get((src, dst), 0) + 1
    print(f"check_layers: {len(includes)} includes, {unresolved} found nowhere, "
          f"{len(violations)} violations ({len(violations) - len(new)} in the debt list), "
          f"{len(new)} new, {len(stale)} stale")
    for (src, dst), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}  {src} -> {dst}")
    found, graph = circles(edges)
    if found:
        for c in found:
            print(f"  circle of {len(c)} folders: {', '.join(c)}")
            print("    e.g. " + " -> ".join(shortest_circle(graph, c)))
    else:
        print("  no circle between the folders of the core")
    if new or stale or problems or unresolved:
        print("check_layers: FAILED (the order is in docs/design.md, \"Layout\"; "
              "fix the include, or move the declaration down)")
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quietly, when the output goes to head
    sys.exit(main(sys.argv[1:]))
