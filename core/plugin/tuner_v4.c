/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_v4.c: presents a v4 tuner plugin as v6.
 *
 * What changes from v6: init takes no commId, domain info or constants (dropped; the core's constants
 * stay its own) and returns the context as its last argument; destroy is v6's finalize; there is no
 * getChunkSize (the core keeps its step size). getCollInfo has v6's signature, so the adapter only
 * unwraps the context. The parts v2..v4 share are in tuner_adapt.c.
 */
#include "plugin/tuner_adapter.h"

#define CTX(p) ((struct chrTunerAdaptCtx*)(p))
#define OLD(c) ((const ncclTuner_v4_t*)CTX(c)->lib->native)

static ncclResult_t getCollInfoV4(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                  int numAlgo, int numProto, int regBuff, int* nChannels) {
  return OLD(ctx)->getCollInfo(CTX(ctx)->ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, regBuff,
                               nChannels);
}

ncclResult_t chrTunerAdaptV4(struct chrTunerLib* lib, const ncclTuner_v4_t* t) {
  lib->rec.version = 4;
  CHR_TUNER_REQUIRE(lib, t, name);
  CHR_TUNER_REQUIRE(lib, t, init);
  CHR_TUNER_REQUIRE(lib, t, getCollInfo);
  CHR_TUNER_REQUIRE(lib, t, destroy);
  chrTunerAdaptBindOld(lib, t, t->name, t->init, t->destroy);
  lib->table.getCollInfo = getCollInfoV4;
  return ncclSuccess;
}
