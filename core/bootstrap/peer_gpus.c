/* SPDX-License-Identifier: BSD-3-Clause */
/* peer_gpus.c: ranks that share a GPU, found by sorting (peer_info.h). */
#include <stdlib.h>
#include "bootstrap/peer_info.h"

struct gpuKey {
  uint64_t host;
  int64_t gpu;
  int rank;
};

static int byGpu(const void* a, const void* b) {
  const struct gpuKey* x = a;
  const struct gpuKey* y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

int chrPeersGpuShare(const struct chrPeerInfo* peers, int n, int byBus, struct chrGpuShare* out) {
  out->largest = n > 0 ? 1 : 0;
  out->first = out->second = -1;
  if (n < 2) return 0;
  struct gpuKey* keys = malloc(sizeof(*keys) * (size_t)n);
  if (keys == NULL) return -1;
  int m = 0;
  for (int r = 0; r < n; r++) {
    if (byBus && peers[r].busId < 0) continue; /* no GPU: shares nothing */
    keys[m++] = (struct gpuKey){peers[r].hostHash, byBus ? peers[r].busId : peers[r].cudaDev, r};
  }
  qsort(keys, (size_t)m, sizeof(*keys), byGpu);
  for (int i = 0, j; i < m; i = j) { /* a group: keys[i .. j), its ranks ascending */
    for (j = i + 1; j < m && keys[j].host == keys[i].host && keys[j].gpu == keys[i].gpu; j++) {
    }
    if (j - i > out->largest) out->largest = j - i;
    if (j - i >= 2 && (out->first < 0 || keys[i].rank < out->first)) {
      out->first = keys[i].rank;
      out->second = keys[i + 1].rank;
    }
  }
  free(keys);
  return 0;
}
