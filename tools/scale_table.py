#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""scale_table.py: the numbers of docs/design.md's "Toward thousands of hosts": what one rank holds
and does at 2, 64, 1,024 and 16,384 GPUs, from the defaults in the source tree (params.def,
dev_consts.h, ...) and the formulas the section gives. Run from the repository root:
    python3 tools/scale_table.py
Prints one markdown table; the section rounds its figures."""
import math
import re

def define(path, name):
    return int(re.search(r"#define\s+%s\s+\(?(\d+)" % name, open(path).read()).group(1))

PARAMS = open("core/config/params.def").read()

def param(env):
    return int(re.search(r'"%s", \w+(?:\([^)]*\))?, "(\d+)"' % env, PARAMS).group(1))

STEPS = define("core/hostdev/dev_consts.h", "CHR_STEPS")
NET_CTRL = define("device/launch/net_ends.cu", "NET_CTRL_BYTES")      # control page of a net end
LL_LINES = define("core/cuda/dev_state.c", "DEV_LL_LINES")             # LL lines per slot, 16 B each
BLK_CTRL = define("device/launch/dev_group.h", "CHR_DEV_CTRL_BYTES")   # arena: received block header
HEAD = define("device/launch/dev_group.h", "CHR_DEV_HEAD_BYTES")       # arena: sent head word
DEV_MAX_RANKS = int(re.search(r"nRanks > (\d+)", open("device/launch/rank.cu").read()).group(1))
PEER_ENTRY = 240 + 28  # sizeof(struct chrPeerInfo) + sizeof(chrSockAddr), x86-64 Linux
BUFF, P2P_BUFF = param("NCCL_BUFFSIZE"), param("CHORUS_P2P_BUFFSIZE")
NET_BUFF, NET_CH = param("CHORUS_GPU_NET_BUFFSIZE"), param("CHORUS_GPU_NET_CHANNELS")
HOST_CH = param("NCCL_MIN_NCHANNELS")

def align(x): return (x + 255) & ~255
def slot(buff): return (max(buff, STEPS * 4096) // STEPS) & ~4095   # dev_state.c slotBytes
RING_SLOT, P2P_SLOT = slot(NET_BUFF), max(4096, (slot(BUFF) // 2) & ~4095)
def end(s): return NET_CTRL + STEPS * s                               # net_ends.cu endBytes
def block(s): return BLK_CTRL + align(STEPS * s) + align(STEPS * LL_LINES * 16)  # rank.cu blockBytes

def lanes(n, ch):  # dev_state.c p2pLanes
    l = min(64, ch // 2)
    return max(1, min(l, max(64, ch) // n))

def btree(p, n):  # plan/works.c chrBinaryTree: parent, children
    bit = 1
    while bit < n and not p & bit: bit <<= 1
    if p == 0:
        top = 1
        while top * 2 < n: top *= 2
        return -1, [top] if n > 1 else []
    up = (p ^ bit) | (bit << 1)
    if up >= n: up = p ^ bit
    low, kids = bit >> 1, []
    if low: kids.append(p - low)
    l = low
    while l > 0:
        if p + l < n: kids.append(p + l); break
        l >>= 1
    return up, kids

def host_tree(n, L):
    """Chorus's double binary tree over ring positions: most cross-host links of one rank, of one
    host, and cross-host hops on the longest root-to-leaf path (of either tree)."""
    per_rank, per_host, worst = [0] * n, {}, 0
    for t in range(2):
        pos = (lambda p: p) if t == 0 else (lambda p: n - 1 - p)
        hops = {}
        for q in range(n):  # positions in increasing depth order is not guaranteed: memoize upward
            p, chain = q, []
            while p not in hops and p != 0:
                chain.append(p); p = btree(p, n)[0]
            h = hops.get(p, 0)
            for c in reversed(chain):
                par = btree(c, n)[0]
                h += pos(c) // L != pos(par) // L
                hops[c] = h
        worst = max(worst, max(hops.values(), default=0))
        for q in range(1, n):
            a, b = pos(q), pos(btree(q, n)[0])
            if a // L != b // L:  # one edge, a send and a receive link at each end
                for r in (a, b):
                    per_rank[r] += 2
                    per_host[r // L] = per_host.get(r // L, 0) + 2
    return max(per_rank), max(per_host.values(), default=0), worst

def fmt(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div: return "%.3g %s" % (b / div, unit)
    return "%d B" % b

rows = {}
for n in (2, 64, 1024, 16384):
    L = 1 if n == 2 else 8
    H, ch, la = n // L, NET_CH, lanes(n, NET_CH)
    over = " (over %d)" % DEV_MAX_RANKS if n > DEV_MAX_RANKS else ""
    edge_ends = (2 * ch + 2 * la) if H == 2 and L == 1 else (ch + 2 * la)  # L = 1: next is prev
    edge_ring = (2 * ch) if H == 2 and L == 1 else ch
    a2a = 2 * la * (n - L)
    arena = align(HEAD * (ch + la * n)) + ch * block(RING_SLOT) + la * n * block(P2P_SLOT) + align(8 * n)
    tr = host_tree(n, L)
    r = rows.setdefault
    r("GPU: channels, lanes, ring slot, lane slot", []).append(
        "%d, %d, %s, %s" % (ch, la, fmt(RING_SLOT), fmt(P2P_SLOT)))
    r("GPU ring: net ends of a host's edge rank", []).append("%d%s" % (edge_ends, over))
    r("GPU ring: their pinned memory (no GDR)", []).append(
        fmt(edge_ring * end(RING_SLOT) + 2 * la * end(P2P_SLOT)) + over)
    r("GPU tree runs (lanes >= 2, n >= 3)", []).append("yes" if la >= 2 and n >= 3 else "no")
    r("GPU all-to-all: net ends", []).append("%d%s" % (a2a, over))
    r("GPU all-to-all: pinned (no GDR)", []).append(fmt(a2a * end(P2P_SLOT)) + over)
    r("GPU arena (every rank, GPU memory)", []).append(fmt(arena) + over)
    r("fds, GPU all-to-all (net_socket 2 a comm, bootstrap 2(N-1))", []).append("%d" % (2 * a2a + 2 * (n - 1)))
    r("host ring: links of an edge rank, registered", []).append(
        "%d, %s" % (2 * HOST_CH if L == 1 else HOST_CH, fmt((2 if L == 1 else 1) * HOST_CH * BUFF)))
    r("host tree: cross-host links, most on a rank / a host", []).append("%d / %d" % tr[:2])
    r("host tree all-reduce: steps in sequence / between hosts", []).append(
        "%d / %d" % (2 * math.ceil(math.log2(n)), 2 * tr[2]))
    r("host all-to-all: links, registered", []).append("%d, %s" % (2 * (n - L), fmt(2 * (n - L) * P2P_BUFF)))
    r("ring all-reduce: steps in sequence / between hosts 2(H-1)", []).append("%d / %d" % (2 * (n - 1), 2 * (H - 1)))
    r("NCCL tree: hops across hosts 2 log2 H", []).append("%d" % (2 * math.ceil(math.log2(H))))
    r("bootstrap root sends N*N*%d B" % PEER_ENTRY, []).append(fmt(n * n * PEER_ENTRY))
    r("... seconds at 10 Gb/s", []).append("%.2g" % (n * n * PEER_ENTRY / 1.25e9))
    r("each rank receives N*%d B" % PEER_ENTRY, []).append(fmt(n * PEER_ENTRY))
    r("init: comparisons to find ranks sharing a GPU, N log2 N (every rank)", []).append(
        "%d" % (n * math.ceil(math.log2(n))))
    r("bootstrap all-gather: ring steps N-1", []).append("%d" % (n - 1))

print("| per rank | 2 (2 hosts) | 64 (8) | 1,024 (128) | 16,384 (2,048) |")
print("|---|---|---|---|---|")
for name, vals in rows.items():
    print("| %s | %s |" % (name, " | ".join(vals)))
