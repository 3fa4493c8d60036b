/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: the exported tables ncclTunerPlugin_v6 .. ncclTunerPlugin_v2, so Chorus and NVIDIA's
 * NCCL from 2.21 on load this library (each takes the newest version it knows). Everything is
 * implemented once (tuner.c); these are thin shims for the signatures of each version.
 */
#include "plugin/tuner_v2.h"
#include "plugin/tuner_v3.h"
#include "plugin/tuner_v4.h"
#include "plugin/tuner_v5.h"
#include "plugin/tuner_v6.h"
#include "tuner_chorus.h"

#define TC_EXPORT __attribute__((visibility("default")))

/* ---- v5 and v6: init with commId, domain info and the core's constants ------------------------- */

static ncclResult_t initV5(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                           ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants) {
  (void)commId;
  (void)nvlDomainInfo;
  return tcInit(context, nRanks, nNodes, logFunction, constants);
}

/* The table-editing getCollInfo of v4..v6 (regBuff does not change the rules). */
static ncclResult_t getCollInfoV4(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)numPipeOps;
  (void)regBuff;
  return tcGetCollInfo(context, collType, nBytes, (float*)collCostTable, numAlgo, numProto, nChannels);
}

static ncclResult_t getChunkSizeV6(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                                   int nChannels, size_t* chunkSize) {
  (void)nChannels;
  return tcGetChunkSize(context, collType, nBytes, algo, proto, chunkSize);
}

TC_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = TC_PLUGIN_NAME,
    .init = initV5,
    .getCollInfo = getCollInfoV4,
    .finalize = tcFinalize,
    .getChunkSize = getChunkSizeV6,
};

TC_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = TC_PLUGIN_NAME,
    .init = initV5,
    .getCollInfo = getCollInfoV4,
    .finalize = tcFinalize,
};

/* ---- v2..v4: init without constants ------------------------------------------------------------- */

static ncclResult_t initOld(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context) {
  return tcInit(context, nRanks, nNodes, logFunction, NULL);
}

TC_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = TC_PLUGIN_NAME,
    .init = initOld,
    .getCollInfo = getCollInfoV4,
    .destroy = tcFinalize,
};

static ncclResult_t getCollInfoV3(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int* nChannels) {
  (void)numPipeOps;
  return tcGetCollInfo(context, collType, nBytes, (float*)collCostTable, numAlgo, numProto, nChannels);
}

TC_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {
    .name = TC_PLUGIN_NAME,
    .init = initOld,
    .getCollInfo = getCollInfoV3,
    .destroy = tcFinalize,
};

static ncclResult_t getCollInfoV2(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                                  int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels) {
  (void)collNetSupport;
  (void)nvlsSupport;
  (void)numPipeOps;
  return tcGetChoice(context, collType, nBytes, algorithm, protocol, nChannels);
}

TC_EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {
    .name = TC_PLUGIN_NAME,
    .init = initOld,
    .getCollInfo = getCollInfoV2,
    .destroy = tcFinalize,
};
