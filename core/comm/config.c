/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c: reading the caller's ncclConfig_t the way NCCL does, so programs built against older
 * headers (smaller struct, older version field) keep working:
 *   1. NULL -> defaults; else copy min(size, sizeof) bytes over an initialised default struct;
 *   2. wrong magic -> ncclInvalidArgument;
 *   3. fields newer than the caller's version are reset to the initializer value;
 *   4. out-of-range values -> ncclInvalidArgument; UNDEF fields get defaults; env overrides.
 */
#include <string.h>
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "log/log.h"

#define UNDEF NCCL_CONFIG_UNDEF_INT
#define MAX_CTAS 64

static void resetNewerFields(ncclConfig_t* c, unsigned int version) {
  const ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  if (version < NCCL_VERSION(2, 14, 0)) c->blocking = init.blocking;
  if (version < NCCL_VERSION(2, 17, 0)) {
    c->cgaClusterSize = init.cgaClusterSize;
    c->minCTAs = init.minCTAs;
    c->maxCTAs = init.maxCTAs;
    c->netName = init.netName;
  }
  if (version < NCCL_VERSION(2, 25, 0)) c->trafficClass = init.trafficClass;
  if (version < NCCL_VERSION(2, 27, 0)) {
    c->collnetEnable = init.collnetEnable;
    c->CTAPolicy = init.CTAPolicy;
    c->shrinkShare = init.shrinkShare;
    c->nvlsCTAs = init.nvlsCTAs;
  }
  if (version < NCCL_VERSION(2, 28, 0)) {
    c->nChannelsPerNetPeer = init.nChannelsPerNetPeer;
    c->nvlinkCentricSched = init.nvlinkCentricSched;
  }
  if (version < NCCL_VERSION(2, 29, 0)) {
    c->graphUsageMode = init.graphUsageMode;
    c->numRmaCtx = init.numRmaCtx;
  }
  if (version < NCCL_VERSION(2, 30, 0)) c->maxP2pPeers = init.maxP2pPeers;
  if (version < NCCL_VERSION(2, 30, 5)) c->graphStreamOrdering = init.graphStreamOrdering;
}

static int isBool(int v) { return v == UNDEF || v == 0 || v == 1; }

static ncclResult_t checkRanges(const ncclConfig_t* c) {
  if (!isBool(c->blocking)) return chrFail(ncclInvalidArgument, "config.blocking = %d: must be 0 or 1", c->blocking);
  if (c->cgaClusterSize != UNDEF && c->cgaClusterSize < 0)
    return chrFail(ncclInvalidArgument, "config.cgaClusterSize = %d: must be >= 0", c->cgaClusterSize);
  if (c->minCTAs != UNDEF && c->minCTAs <= 0)
    return chrFail(ncclInvalidArgument, "config.minCTAs = %d: must be > 0", c->minCTAs);
  if (c->maxCTAs != UNDEF && c->maxCTAs <= 0)
    return chrFail(ncclInvalidArgument, "config.maxCTAs = %d: must be > 0", c->maxCTAs);
  if (c->minCTAs != UNDEF && c->maxCTAs != UNDEF && c->minCTAs > c->maxCTAs)
    return chrFail(ncclInvalidArgument, "config.minCTAs = %d is larger than config.maxCTAs = %d", c->minCTAs, c->maxCTAs);
  if (!isBool(c->splitShare)) return chrFail(ncclInvalidArgument, "config.splitShare = %d: must be 0 or 1", c->splitShare);
  if (!isBool(c->collnetEnable))
    return chrFail(ncclInvalidArgument, "config.collnetEnable = %d: must be 0 or 1", c->collnetEnable);
  if (c->CTAPolicy != UNDEF && (c->CTAPolicy & ~(NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO)))
    return chrFail(ncclInvalidArgument, "config.CTAPolicy = %d: unknown flag bits", c->CTAPolicy);
  if (!isBool(c->shrinkShare)) return chrFail(ncclInvalidArgument, "config.shrinkShare = %d: must be 0 or 1", c->shrinkShare);
  if (c->nvlsCTAs != UNDEF && c->nvlsCTAs <= 0)
    return chrFail(ncclInvalidArgument, "config.nvlsCTAs = %d: must be > 0", c->nvlsCTAs);
  if (c->nChannelsPerNetPeer != UNDEF && (c->nChannelsPerNetPeer < 1 || c->nChannelsPerNetPeer > MAX_CTAS))
    return chrFail(ncclInvalidArgument, "config.nChannelsPerNetPeer = %d: must be 1..%d", c->nChannelsPerNetPeer, MAX_CTAS);
  if (!isBool(c->nvlinkCentricSched))
    return chrFail(ncclInvalidArgument, "config.nvlinkCentricSched = %d: must be 0 or 1", c->nvlinkCentricSched);
  if (c->graphUsageMode != UNDEF && (c->graphUsageMode < 0 || c->graphUsageMode > 2))
    return chrFail(ncclInvalidArgument, "config.graphUsageMode = %d: must be 0, 1 or 2", c->graphUsageMode);
  if (c->numRmaCtx != UNDEF && c->numRmaCtx < 0)
    return chrFail(ncclInvalidArgument, "config.numRmaCtx = %d: must be >= 0", c->numRmaCtx);
  if (c->maxP2pPeers != UNDEF && c->maxP2pPeers <= 0)
    return chrFail(ncclInvalidArgument, "config.maxP2pPeers = %d: must be > 0", c->maxP2pPeers);
  if (!isBool(c->graphStreamOrdering))
    return chrFail(ncclInvalidArgument, "config.graphStreamOrdering = %d: must be 0 or 1", c->graphStreamOrdering);
  return ncclSuccess;
}

static void fillDefaults(ncclConfig_t* c) {
  if (c->blocking == UNDEF) c->blocking = 1;
  if (c->cgaClusterSize == UNDEF) c->cgaClusterSize = 4;
  if (c->minCTAs == UNDEF) c->minCTAs = 1;
  if (c->maxCTAs == UNDEF) c->maxCTAs = MAX_CTAS;
  if (c->maxCTAs > MAX_CTAS) c->maxCTAs = MAX_CTAS;
  if (c->splitShare == UNDEF) c->splitShare = 0;
  if (c->collnetEnable == UNDEF) c->collnetEnable = 0;
  if (c->CTAPolicy == UNDEF) c->CTAPolicy = NCCL_CTA_POLICY_DEFAULT;
  if (c->shrinkShare == UNDEF) c->shrinkShare = 0;
  if (c->nvlinkCentricSched == UNDEF) c->nvlinkCentricSched = 0;
  if (c->graphUsageMode == UNDEF) c->graphUsageMode = 2;
  if (c->numRmaCtx == UNDEF) c->numRmaCtx = 1;
  if (c->graphStreamOrdering == UNDEF) c->graphStreamOrdering = 1;
}

static void applyEnvOverrides(ncclConfig_t* c) {
  const char* net = chrParamStr(CHR_P_NET);
  if (net[0]) c->netName = net;  /* points into the config store, valid for the process */
  int64_t v;
  if ((v = chrParamInt(CHR_P_COMM_SPLIT_SHARE_RESOURCES)) >= 0) c->splitShare = v ? 1 : 0;
  if ((v = chrParamInt(CHR_P_COLLNET_ENABLE)) >= 0) c->collnetEnable = v ? 1 : 0;
  if ((v = chrParamInt(CHR_P_CTA_POLICY)) >= 0) c->CTAPolicy = (int)v;
  if ((v = chrParamInt(CHR_P_GRAPH_STREAM_ORDERING)) >= 0) c->graphStreamOrdering = v ? 1 : 0;
}

ncclResult_t chrConfigFromUser(const ncclConfig_t* user, ncclConfig_t* out) {
  const ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  *out = init;
  if (user != NULL) {
    size_t size = user->size;
    if (size < offsetof(ncclConfig_t, blocking))
      return chrFail(ncclInvalidArgument, "config.size = %zu is too small: not initialized via NCCL_CONFIG_INITIALIZER", size);
    if (size > sizeof(ncclConfig_t)) size = sizeof(ncclConfig_t);
    memcpy(out, user, size);
    out->size = sizeof(ncclConfig_t);
    if (user->magic != NCCL_API_MAGIC)
      return chrFail(ncclInvalidArgument, "config.magic = 0x%x: config not initialized via NCCL_CONFIG_INITIALIZER", user->magic);
    resetNewerFields(out, user->version);
  }
  ncclResult_t res = checkRanges(out);
  if (res != ncclSuccess) return res;
  fillDefaults(out);
  applyEnvOverrides(out);
  return ncclSuccess;
}
