/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testtuner_plugin.c: a tiny tuner plugin for the ABI conformance tests, built once per ABI version
 * (TESTTUNER_VERSION = 2..6) and in a few broken variants (TESTTUNER_INIT_FAIL, TESTTUNER_NULL_SLOT).
 * It exports exactly one ncclTunerPlugin_vN object, plus testTunerStats() for the tests, which
 * record every argument it is given and set how it answers (testtuner_stats.h).
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner.h"
#include "testtuner_stats.h"

#ifndef TESTTUNER_VERSION
#error "build with -DTESTTUNER_VERSION=2..6"
#endif
#ifndef TESTTUNER_NAME
#define TESTTUNER_NAME "testtuner"
#endif

#define EXPORT __attribute__((visibility("default")))
#define MAYBE_UNUSED __attribute__((unused)) /* a variant may leave a slot NULL, or v2 use no table */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static struct testTunerStats stats = {.version = TESTTUNER_VERSION, .forceAlgo = -1, .forceProto = -1,
                                      .lastRegBuff = -1};

EXPORT struct testTunerStats* testTunerStats(void) { return &stats; }

#define CTX_MAGIC 0x54554e45u /* "TUNE" */
struct context {
  uint32_t magic;
  size_t nRanks;
};

static int goodContext(void* ctx) {
  struct context* c = ctx;
  if (c == NULL || c->magic != CTX_MAGIC) {
    stats.badContexts++;
    return 0;
  }
  return 1;
}

static ncclResult_t newContext(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** ctx) {
  stats.initCalls++;
  stats.lastNRanks = (long long)nRanks;
  stats.lastNNodes = (long long)nNodes;
  stats.loggerGiven = logFunction != NULL;
#ifdef TESTTUNER_INIT_FAIL
  *ctx = NULL;
  return ncclInternalError;
#endif
  struct context* c = calloc(1, sizeof(*c));
  if (c == NULL) return ncclSystemError;
  c->magic = CTX_MAGIC;
  c->nRanks = nRanks;
  stats.liveContexts++;
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t dropContext(void* ctx) {
  stats.finalizeCalls++;
  if (!goodContext(ctx)) return ncclInternalError;
  ((struct context*)ctx)->magic = 0;
  free(ctx);
  stats.liveContexts--;
  return ncclSuccess;
}

/* v3+: record the table, then answer as the test asked. */
MAYBE_UNUSED static ncclResult_t tableCall(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels) {
  stats.getCollInfoCalls++;
  if (!goodContext(ctx)) return ncclInternalError;
  stats.lastCollType = (int)collType;
  stats.lastNBytes = (long long)nBytes;
  stats.lastNumPipeOps = numPipeOps;
  stats.lastRegBuff = regBuff;
  stats.lastNumAlgo = numAlgo;
  stats.lastNumProto = numProto;
  stats.lastNChannelsIn = *nChannels;
  float* table = (float*)collCostTable; /* one contiguous [numAlgo][numProto] block */
  int n = numAlgo * numProto;
  for (int i = 0; i < n && i < TESTTUNER_TABLE_MAX; i++) stats.lastTable[i] = table[i];
  if (stats.failGetCollInfo) return ncclInternalError;
  if (stats.forbidAll)
    for (int i = 0; i < n; i++) table[i] = -1.0f;
  if (stats.forceAlgo >= 0 && stats.forceProto >= 0 && stats.forceAlgo < numAlgo && stats.forceProto < numProto)
    table[stats.forceAlgo * numProto + stats.forceProto] = 0.0f;
  if (stats.setChannels != 0) *nChannels = stats.setChannels;
  return ncclSuccess;
}

#if TESTTUNER_VERSION >= 5
static ncclResult_t initV5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                           ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t* k) {
  stats.lastCommId = commId;
  stats.nvlDomains = nvl ? nvl->nNvlDomains : -1;
  stats.nvlMin = nvl ? nvl->minRanksPerNvlDomain : -1;
  stats.nvlMax = nvl ? nvl->maxRanksPerNvlDomain : -1;
  if (k != NULL) {
    stats.baseLatRingSimple = k->baseLatencies[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE];
    stats.baseLatNvlsSimple = k->baseLatencies[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE];
    stats.hwLatNetRingSimple = k->hwLatencies[NCCL_HW_NET][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE];
    stats.hwLatNvlinkTreeSimple = k->hwLatencies[NCCL_HW_NVLINK][NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE];
    stats.treeBw1Node = k->perChMaxTreeBws[NCCL_HOPPER_COMPCAP_IDX][NCCL_TUNING_SCALE_1NODE];
    stats.treeBw2Nodes = k->perChMaxTreeBws[NCCL_HOPPER_COMPCAP_IDX][NCCL_TUNING_SCALE_2NODES];
    k->baseLatencies[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 1e6; /* plugins may edit: must be harmless */
  }
  return newContext(nRanks, nNodes, logFunction, ctx);
}
#else
static ncclResult_t initOld(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** ctx) {
  return newContext(nRanks, nNodes, logFunction, ctx);
}
#endif

#if TESTTUNER_VERSION >= 4
MAYBE_UNUSED static ncclResult_t getCollInfo(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                int numAlgo, int numProto, int regBuff, int* nChannels) {
  return tableCall(ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, regBuff, nChannels);
}
#elif TESTTUNER_VERSION == 3
MAYBE_UNUSED static ncclResult_t getCollInfo(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                int numAlgo, int numProto, int* nChannels) {
  return tableCall(ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, -1, nChannels);
}
#else
MAYBE_UNUSED static ncclResult_t getCollInfo(void* ctx, ncclFunc_t collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                                int numPipeOps, int* algorithm, int* protocol, int* nChannels) {
  stats.getCollInfoCalls++;
  if (!goodContext(ctx)) return ncclInternalError;
  stats.lastCollType = (int)collType;
  stats.lastNBytes = (long long)nBytes;
  stats.lastNumPipeOps = numPipeOps;
  stats.lastCollNetSupport = collNetSupport;
  stats.lastNvlsSupport = nvlsSupport;
  stats.lastAlgoIn = *algorithm;
  stats.lastProtoIn = *protocol;
  stats.lastNChannelsIn = *nChannels;
  if (stats.failGetCollInfo) return ncclInternalError;
  if (stats.forceAlgo >= 0) *algorithm = stats.forceAlgo;
  if (stats.forceProto >= 0) *protocol = stats.forceProto;
  if (stats.setChannels != 0) *nChannels = stats.setChannels;
  return ncclSuccess;
}
#endif

#if TESTTUNER_VERSION == 6
static ncclResult_t getChunkSize(void* ctx, ncclFunc_t collType, size_t nBytes, int algo, int proto, int nChannels,
                                 size_t* chunkSize) {
  stats.getChunkSizeCalls++;
  if (!goodContext(ctx)) return ncclInternalError;
  stats.chunkCollType = (int)collType;
  stats.chunkNBytes = (long long)nBytes;
  stats.chunkAlgo = algo;
  stats.chunkProto = proto;
  stats.chunkNChannels = nChannels;
  stats.chunkIn = (long long)*chunkSize;
  if (stats.failChunk) return ncclInternalError;
  if (stats.chunkOut > 0) *chunkSize = (size_t)stats.chunkOut;
  return ncclSuccess;
}
#endif

#ifdef TESTTUNER_NULL_SLOT
#define COLL_INFO_SLOT NULL
#else
#define COLL_INFO_SLOT getCollInfo
#endif

EXPORT const CAT(CAT(ncclTuner_v, TESTTUNER_VERSION), _t) CAT(ncclTunerPlugin_v, TESTTUNER_VERSION) = {
    .name = TESTTUNER_NAME,
#if TESTTUNER_VERSION >= 5
    .init = initV5,
    .getCollInfo = COLL_INFO_SLOT,
    .finalize = dropContext,
#else
    .init = initOld,
    .getCollInfo = COLL_INFO_SLOT,
    .destroy = dropContext,
#endif
#if TESTTUNER_VERSION == 6
    .getChunkSize = getChunkSize,
#endif
};
