/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group.cu: N ranks of one process, made and connected at once (hostdev/dev_api.h): a thin layer over the
 * rank API of rank.cu. Every rank is created, exported, and connected to every rank (itself
 * included); within one process the blobs resolve to the ranks' own addresses, no IPC.
 */
#include <stdlib.h>
#include <string.h>
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"

extern "C" ncclResult_t chrDevGroupDestroy(struct chrDevGroup* g) {
  if (g == NULL) return ncclSuccess;
  if (g->ranks)
    for (int r = 0; r < g->cfg.nRanks; r++) chrDevRankDestroy(g->ranks[r]);
  free(g->ranks);
  free(g);
  return ncclSuccess;
}

static struct chrDevRankConfig rankConfig(const struct chrDevGroupConfig* cfg, int rank) {
  struct chrDevRankConfig rc;
  memset(&rc, 0, sizeof rc);
  rc.rank = rank;
  rc.nRanks = cfg->nRanks;
  rc.nChannels = cfg->nChannels;
  rc.p2pConns = cfg->p2pConns;
  rc.stepBytes = cfg->stepBytes;
  rc.llLines = cfg->llLines;
  rc.ringOrder = cfg->ringOrder;
  rc.cudaDev = cfg->cudaDev;
  rc.p2pStepBytes = cfg->p2pStepBytes;
  rc.copyEngine = cfg->copyEngine;
  rc.ceWaitUs = cfg->ceWaitUs;
  rc.ceShareFd = cfg->ceShareFd;
  rc.cePull = cfg->cePull;
  return rc;
}

extern "C" ncclResult_t chrDevGroupCreate(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out) {
  if (cfg == NULL || out == NULL) return chrDevFail(ncclInvalidArgument, "chrDevGroupCreate: NULL argument");
  *out = NULL;
  /* Checked before any CUDA call: a bad configuration is refused without a GPU. */
  const struct chrDevRankConfig rc0 = rankConfig(cfg, 0);
  ncclResult_t res = chrDevCheckRankConfig(&rc0);
  if (res != ncclSuccess) return res;
  const int n = cfg->nRanks;
  struct chrDevRankBlob* blobs = NULL;
  int* all = NULL;
  struct chrDevGroup* g = (struct chrDevGroup*)calloc(1, sizeof *g);
  if (g == NULL) return chrDevFail(ncclSystemError, "out of memory");
  g->cfg = *cfg;
  g->cfg.ringOrder = NULL; /* the caller's array; each rank keeps its own copy */
  g->ranks = (struct chrDevRank**)calloc((size_t)n, sizeof(struct chrDevRank*));
  blobs = (struct chrDevRankBlob*)calloc((size_t)n, sizeof(struct chrDevRankBlob));
  all = (int*)malloc((size_t)n * sizeof(int));
  if (g->ranks == NULL || blobs == NULL || all == NULL) {
    res = chrDevFail(ncclSystemError, "out of memory for a group of %d ranks", n);
    goto fail_destroy;
  }
  for (int r = 0; r < n; r++) {
    const struct chrDevRankConfig rc = rankConfig(cfg, r);
    res = chrDevRankCreate(&rc, &g->ranks[r]);
    if (res == ncclSuccess) res = chrDevRankExport(g->ranks[r], &blobs[r]);
    if (res != ncclSuccess) goto fail_destroy;
    all[r] = r;
  }
  for (int r = 0; r < n; r++) {
    res = chrDevRankConnect(g->ranks[r], n, all, blobs);
    if (res != ncclSuccess) goto fail_destroy;
  }
  free(blobs);
  free(all);
  *out = g;
  return ncclSuccess;

fail_destroy:
  free(blobs);
  free(all);
  chrDevGroupDestroy(g);
  return res;
}

extern "C" struct chrDevRank* chrDevGroupRank(struct chrDevGroup* g, int rank) {
  if (g == NULL || rank < 0 || rank >= g->cfg.nRanks) return NULL;
  return g->ranks[rank];
}

extern "C" ncclResult_t chrDevLaunch(struct chrDevGroup* g, int rank, const struct chrWork* works, const int* nWorks,
                                     int nChannels, cudaStream_t stream) {
  if (g == NULL) return chrDevFail(ncclInvalidArgument, "chrDevLaunch: NULL group");
  if (rank < 0 || rank >= g->cfg.nRanks)
    return chrDevFail(ncclInvalidArgument, "chrDevLaunch: rank %d of %d", rank, g->cfg.nRanks);
  if (nWorks == NULL) return chrDevFail(ncclInvalidArgument, "chrDevLaunch: NULL work counts");
  if (nChannels < 1 || nChannels > CHR_DEV_MAX_CHANNELS)
    return chrDevFail(ncclInvalidArgument, "chrDevLaunch: %d channels (1..%d)", nChannels, CHR_DEV_MAX_CHANNELS);
  struct chrDevLaunch launch;
  memset(&launch, 0, sizeof launch);
  launch.works = works;
  launch.nChannels = nChannels;
  /* Each channel's sends and receives follow its other works (the rank launch checks that they do). */
  for (int c = 0, k = 0; c < nChannels; k += nWorks[c] > 0 ? nWorks[c] : 0, c++) {
    launch.nWorks[c] = nWorks[c];
    while (works != NULL && launch.nCut[c] < nWorks[c] && works[k + launch.nCut[c]].pattern != CHR_PAT_P2P_SEND &&
           works[k + launch.nCut[c]].pattern != CHR_PAT_P2P_RECV)
      launch.nCut[c]++;
  }
  ncclResult_t res = chrDevStreamCapturing(g->ranks[rank]->cfg.cudaDev, stream, &launch.capturing);
  if (res != ncclSuccess) return res;
  return chrDevRankLaunch(g->ranks[rank], &launch, stream);
}

extern "C" void chrDevSetAbort(struct chrDevGroup* g, int rank, uint32_t value) {
  if (g == NULL) return;
  for (int r = 0; r < g->cfg.nRanks; r++)
    if (rank < 0 || rank == r) chrDevRankSetAbort(g->ranks[r], value);
}

extern "C" uint32_t chrDevKernelError(struct chrDevGroup* g, int rank) {
  if (g == NULL || rank < 0 || rank >= g->cfg.nRanks) return 0;
  return chrDevRankKernelError(g->ranks[rank]);
}

extern "C" int chrDevApiVersion(void) { return CHR_DEV_API_VERSION; }
