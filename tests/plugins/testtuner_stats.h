/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testtuner_stats.h: what the test tuner plugins record about the calls they get, and the knobs the
 * tests turn to make them answer one way or another. Each test tuner exports
 * `struct testTunerStats* testTunerStats(void)` next to its single ncclTunerPlugin_vN object.
 */
#ifndef CHORUS_TESTTUNER_STATS_H_
#define CHORUS_TESTTUNER_STATS_H_

#include <stddef.h>
#include <stdint.h>

#define TESTTUNER_TABLE_MAX 32

struct testTunerStats {
  int version;              /* ABI version the plugin was built for */

  /* What the tests set (read at each call). */
  int forceAlgo, forceProto; /* -1: leave the choice alone; else write 0.0 at that entry (v2: answer it),
                                whether or not it was -1 */
  int setChannels;          /* written to *nChannels when not 0 */
  int forbidAll;            /* v3+: write -1 everywhere */
  int failGetCollInfo;      /* return ncclInternalError from getCollInfo */
  long long chunkOut;       /* v6: written to *chunkSize when > 0 */
  int failChunk;            /* v6: return ncclInternalError from getChunkSize */

  /* init / finalize */
  int initCalls, finalizeCalls, liveContexts;
  int badContexts;          /* a call came with a context this plugin never handed out, or a stale one */
  uint64_t lastCommId;      /* v5+ */
  long long lastNRanks, lastNNodes;
  int loggerGiven;
  int nvlDomains, nvlMin, nvlMax; /* v5+ */
  double baseLatRingSimple, baseLatNvlsSimple, hwLatNetRingSimple, hwLatNvlinkTreeSimple, treeBw1Node, treeBw2Nodes;

  /* getCollInfo */
  int getCollInfoCalls;
  int lastCollType;
  long long lastNBytes;
  int lastNumPipeOps;
  int lastRegBuff;          /* v4+, else -1 */
  int lastNumAlgo, lastNumProto; /* v3+ */
  float lastTable[TESTTUNER_TABLE_MAX]; /* v3+: the table as it came in, row-major */
  int lastNChannelsIn;
  int lastCollNetSupport, lastNvlsSupport, lastAlgoIn, lastProtoIn; /* v2 */

  /* getChunkSize (v6) */
  int getChunkSizeCalls;
  int chunkCollType, chunkAlgo, chunkProto, chunkNChannels;
  long long chunkNBytes, chunkIn;
};

typedef struct testTunerStats* (*testTunerStatsFn)(void);

#endif /* CHORUS_TESTTUNER_STATS_H_ */
