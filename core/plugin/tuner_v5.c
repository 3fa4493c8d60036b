/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_v5.c: presents a v5 tuner plugin as v6.
 *
 * v5 is v6 without the optional getChunkSize slot: init, getCollInfo and finalize have the same
 * signatures (v6's domain-info and constants types are v5's), so the slots are copied as they are
 * and getChunkSize is left NULL (the core keeps its step size). No wrapping, no state.
 */
#include "plugin/tuner_adapter.h"

#define OLD(lib) ((const ncclTuner_v5_t*)(lib)->native)

static ncclResult_t initV5(struct chrTunerLib* lib, void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                           ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                           ncclTunerConstants_v6_t* constants) {
  return OLD(lib)->init(ctx, commId, nRanks, nNodes, logFunction, nvlDomainInfo, constants);
}

ncclResult_t chrTunerAdaptV5(struct chrTunerLib* lib, const ncclTuner_v5_t* t) {
  lib->rec.version = 5;
  CHR_TUNER_REQUIRE(lib, t, name);
  CHR_TUNER_REQUIRE(lib, t, init);
  CHR_TUNER_REQUIRE(lib, t, getCollInfo);
  CHR_TUNER_REQUIRE(lib, t, finalize);
  lib->native = t;
  lib->rec.name = t->name;
  lib->init = initV5;
  lib->table.name = t->name;
  lib->table.init = NULL; /* needs the library: lib->init */
  lib->table.getCollInfo = t->getCollInfo;
  lib->table.finalize = t->finalize;
  lib->table.getChunkSize = NULL;
  return ncclSuccess;
}
