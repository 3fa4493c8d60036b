/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_peer_gpus.c: chrPeersGpuShare (bootstrap/peer_info.h) against the pair check it replaced
 * (every pair of ranks compared), on random tables: hosts, GPUs by bus id and by device index, ranks
 * without a GPU, none or many sharing; and a table of 16,384 ranks whose one shared GPU is its last
 * two ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/peer_info.h"

/* The pair check, as init and the device shape did it. */
static void reference(const struct chrPeerInfo* p, int n, int byBus, struct chrGpuShare* want) {
  want->largest = n > 0 ? 1 : 0;
  want->first = want->second = -1;
  for (int a = 0; a < n; a++) {
    int same = 0;
    for (int b = 0; b < n; b++) {
      const int gpuSame = byBus ? p[a].busId >= 0 && p[b].busId == p[a].busId : p[b].cudaDev == p[a].cudaDev;
      if (p[b].hostHash != p[a].hostHash || !gpuSame) continue;
      same++;
      if (b > a && want->first < 0) {
        want->first = a;
        want->second = b;
      }
    }
    if (same > want->largest) want->largest = same;
  }
}

static uint64_t state = 88172645463325252ull;
static unsigned next(unsigned range) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (unsigned)(state % range);
}

static int check(const char* what, const struct chrPeerInfo* p, int n, int byBus) {
  struct chrGpuShare got, want;
  if (chrPeersGpuShare(p, n, byBus, &got) != 0) {
    fprintf(stderr, "FAIL %s: out of memory\n", what);
    return 1;
  }
  reference(p, n, byBus, &want);
  if (got.largest == want.largest && got.first == want.first && got.second == want.second) return 0;
  fprintf(stderr, "FAIL %s (n=%d, by %s): got largest %d pair %d,%d; the pair check says %d pair %d,%d\n", what, n,
          byBus ? "bus id" : "device", got.largest, got.first, got.second, want.largest, want.first, want.second);
  return 1;
}

int main(void) {
  enum { BIG = 16384 };
  struct chrPeerInfo* p = calloc(BIG, sizeof(*p));
  if (p == NULL) return 1;
  int bad = 0, tables = 0, shared = 0;
  for (int iter = 0; iter < 3000 && !bad; iter++) {
    const int n = 1 + (int)next(40), hosts = 1 + (int)next(4), gpus = 1 + (int)next(10);
    for (int r = 0; r < n; r++) {
      memset(&p[r], 0, sizeof(p[r]));
      p[r].hostHash = 1000 + next((unsigned)hosts);
      p[r].cudaDev = next(8) == 0 ? -1 : (int)next((unsigned)gpus);
      p[r].busId = p[r].cudaDev < 0 ? -1 : 0x1000 * (p[r].cudaDev + 1);
    }
    bad |= check("random", p, n, 1) | check("random", p, n, 0);
    struct chrGpuShare s;
    shared += chrPeersGpuShare(p, n, 1, &s) == 0 && s.first >= 0;
    tables++;
  }
  /* 16,384 ranks, 8 a host, each its own GPU, but the last two on one. */
  for (int r = 0; r < BIG; r++) {
    p[r].hostHash = (uint64_t)(r / 8);
    p[r].cudaDev = r % 8;
    p[r].busId = 0x1000 * (r % 8 + 1);
  }
  struct chrGpuShare s;
  if (chrPeersGpuShare(p, BIG, 1, &s) != 0 || s.first != -1 || s.largest != 1) {
    fprintf(stderr, "FAIL 16384 ranks on their own GPUs: largest %d pair %d,%d\n", s.largest, s.first, s.second);
    bad = 1;
  }
  p[BIG - 1].cudaDev = p[BIG - 2].cudaDev;
  p[BIG - 1].busId = p[BIG - 2].busId;
  if (chrPeersGpuShare(p, BIG, 1, &s) != 0 || s.first != BIG - 2 || s.second != BIG - 1 || s.largest != 2) {
    fprintf(stderr, "FAIL 16384 ranks, the last two on one GPU: largest %d pair %d,%d\n", s.largest, s.first, s.second);
    bad = 1;
  }
  free(p);
  if (!bad) printf("peer_gpus: %d random tables (%d with a shared GPU) match the pair check; 16384 ranks right\n", tables, shared);
  return bad;
}
