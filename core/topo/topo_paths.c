/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_paths.c: best paths (topo_paths.h).
 *
 * For each destination, a breadth-first relaxation walks the links backwards from it: a node's path
 * is the link to its neighbour plus the neighbour's path. A candidate replaces the known path when its
 * type is better, or the type is equal and it is wider, or both are equal and it is shorter; a node
 * whose path improved goes back in the queue, so the result does not depend on the order links were
 * added. Since a path only ever improves and there are finitely many, the loop ends. Per hop (NCCL's
 * rules): the link's type (a NET link counts as LOC); PCI to PCI is PXB; a PCIe link that touches a CPU
 * is PHB; a second NVLink hop out of a GPU is NVB. A GPU is crossed only that way (NVB, unless
 * NCCL_NVB_DISABLE), never by PCIe.
 */
#include <stdlib.h>
#include <string.h>

#include "log/log.h"
#include "topo/topo_nic.h"
#include "topo/topo_paths.h"

static struct chrTopoPath* at(struct chrTopoSystem* sys, int from, int to) {
  return &sys->paths[from * sys->nNodes + to];
}

static int better(const struct chrTopoPath* cand, const struct chrTopoPath* old) {
  if (cand->type != old->type) return cand->type < old->type;
  if (cand->bw != old->bw) return cand->bw > old->bw;
  return cand->hops < old->hops;
}

/* The link from -> to of this type (two nodes may have several: PCIe and C2C), else any one. */
static const struct chrTopoLink* reverseLink(const struct chrTopoSystem* sys, int from, int to, int type) {
  const struct chrTopoNode* n = &sys->nodes[from];
  const struct chrTopoLink* any = NULL;
  for (int l = 0; l < n->nLinks; l++)
    if (n->links[l].remote == to) {
      if (n->links[l].type == type) return &n->links[l];
      if (!any) any = &n->links[l];
    }
  return any;
}

static void pathsTo(struct chrTopoSystem* sys, int base, int* queue, char* queued) {
  int n = sys->nNodes, head = 0, tail = 0;
  for (int i = 0; i < n; i++) *at(sys, i, base) = (struct chrTopoPath){.type = CHR_PATH_DIS, .via = -1};
  *at(sys, base, base) = (struct chrTopoPath){.type = CHR_PATH_LOC, .bw = CHR_TOPO_LOC_BW, .via = -1};
  memset(queued, 0, (size_t)n);
  queue[tail++ % n] = base;
  queued[base] = 1;
  while (head != tail) {
    int node = queue[head++ % n];
    queued[node] = 0;
    const struct chrTopoNode* nd = &sys->nodes[node];
    struct chrTopoPath path = *at(sys, node, base);
    for (int l = 0; l < nd->nLinks; l++) {
      int rem = nd->links[l].remote;
      const struct chrTopoLink* hop = reverseLink(sys, rem, node, nd->links[l].type); /* rem -> node */
      if (!hop || rem == node) continue;
      if (node != base && nd->type == CHR_TOPO_GPU &&
          (sys->settings.nvbDisable || hop->type != CHR_LINK_NVL || nd->links[l].type != CHR_LINK_NVL || path.hops > 1))
        continue;
      int type = hop->type == CHR_LINK_NET ? CHR_PATH_LOC : hop->type;
      if (nd->type == CHR_TOPO_PCI && sys->nodes[rem].type == CHR_TOPO_PCI) type = CHR_PATH_PXB;
      if (hop->type == CHR_LINK_PCI && (nd->type == CHR_TOPO_CPU || sys->nodes[rem].type == CHR_TOPO_CPU))
        type = CHR_PATH_PHB;
      if (nd->type == CHR_TOPO_GPU && path.type == CHR_PATH_NVL && type == CHR_PATH_NVL && path.hops >= 1)
        type = CHR_PATH_NVB;
      struct chrTopoPath cand = {.type = type > path.type ? type : path.type,
                                 .bw = hop->bw < path.bw ? hop->bw : path.bw,
                                 .hops = path.hops + 1,
                                 .via = -1};
      if (!better(&cand, at(sys, rem, base))) continue;
      *at(sys, rem, base) = cand;
      if (!queued[rem]) {
        queued[rem] = 1;
        queue[tail++ % n] = rem;
      }
    }
  }
}

/* from -> mid -> to, typed `type` (or the worse of the two when type < 0). */
static struct chrTopoPath joined(struct chrTopoSystem* sys, int from, int mid, int to, int type) {
  const struct chrTopoPath *a = at(sys, from, mid), *b = at(sys, mid, to);
  struct chrTopoPath p = {.type = type >= 0 ? type : (a->type > b->type ? a->type : b->type),
                          .bw = a->bw < b->bw ? a->bw : b->bw,
                          .hops = a->hops + b->hops,
                          .via = -1};
  if (a->type == CHR_PATH_DIS || b->type == CHR_PATH_DIS) p.type = CHR_PATH_DIS;
  return p;
}

/* P2C: a GPU tied to its CPU by C2C reaches the NICs of that CPU's root complex over C2C. */
static void applyP2c(struct chrTopoSystem* sys) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
    int g = sys->list[CHR_TOPO_GPU][i], c = sys->nodes[g].cpu;
    if (at(sys, g, c)->type != CHR_PATH_C2C) continue;
    for (int j = 0; j < sys->count[CHR_TOPO_NET]; j++) {
      int n = sys->list[CHR_TOPO_NET][j];
      if (at(sys, n, c)->type != CHR_PATH_PHB) continue;
      *at(sys, g, n) = joined(sys, g, c, n, CHR_PATH_P2C);
      *at(sys, n, g) = joined(sys, n, c, g, CHR_PATH_P2C);
    }
  }
}

/* PXN: GPU g sends to NET n through the GPU g' that owns n, over NVLink, when g' is close to n, may
 * read GPU memory for it, and gives more bandwidth than g's own path (or g's own is worse than PXN).
 * Only the GPU -> NET direction changes: receives never use PXN. */
static void applyPxn(struct chrTopoSystem* sys) {
  int limit = sys->settings.pxnC2c ? CHR_PATH_P2C : CHR_PATH_PXB;
  for (int j = 0; j < sys->count[CHR_TOPO_NET]; j++) {
    int n = sys->list[CHR_TOPO_NET][j];
    int peer = chrTopoLocalGpuOfNet(sys, n);
    if (peer < 0 || at(sys, peer, n)->type > limit || !chrTopoCheckGdr(sys, peer, n, 1)) continue;
    for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
      int g = sys->list[CHR_TOPO_GPU][i];
      if (g == peer || at(sys, g, peer)->type > CHR_PATH_NVL) continue;
      if (at(sys, peer, n)->bw > at(sys, g, n)->bw || at(sys, g, n)->type > CHR_PATH_PXN) {
        struct chrTopoPath p = joined(sys, g, peer, n, CHR_PATH_PXN);
        p.via = peer;
        *at(sys, g, n) = p;
      }
    }
  }
}

/* A GPU <-> NET path closer than PHB that GPUDirect may not write over is staged in host memory:
 * route it through the GPU's CPU. */
static void applyNoGdr(struct chrTopoSystem* sys) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
    int g = sys->list[CHR_TOPO_GPU][i], c = sys->nodes[g].cpu;
    for (int j = 0; j < sys->count[CHR_TOPO_NET]; j++) {
      int n = sys->list[CHR_TOPO_NET][j];
      if (at(sys, g, n)->type >= CHR_PATH_PHB || chrTopoCheckGdr(sys, g, n, 0)) continue;
      *at(sys, g, n) = joined(sys, g, c, n, -1);
      *at(sys, n, g) = joined(sys, n, c, g, -1);
    }
  }
}

ncclResult_t chrTopoComputePaths(struct chrTopoSystem* sys) {
  int n = sys->nNodes;
  free(sys->paths);
  sys->paths = calloc((size_t)(n ? n : 1) * (size_t)(n ? n : 1), sizeof(*sys->paths));
  int* queue = malloc(sizeof(int) * (size_t)(n ? n : 1));
  char* queued = malloc((size_t)(n ? n : 1));
  if (!sys->paths || !queue || !queued) {
    free(queue);
    free(queued);
    return chrFail(ncclSystemError, "topology: out of memory for %d x %d paths", n, n);
  }
  for (int base = 0; base < n; base++) pathsTo(sys, base, queue, queued);
  free(queue);
  free(queued);
  applyP2c(sys);
  if (!sys->settings.pxnDisable) applyPxn(sys);
  applyNoGdr(sys);
  return ncclSuccess;
}
