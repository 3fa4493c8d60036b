/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_v3.c: presents a v3 tuner plugin as v6.
 *
 * What changes from v6: as v4 (init without commId, domain info or constants; destroy for finalize;
 * no getChunkSize), and getCollInfo has no regBuff argument, which the adapter drops. The parts
 * v2..v4 share are in tuner_adapt.c.
 */
#include "plugin/tuner_adapter.h"

#define CTX(p) ((struct chrTunerAdaptCtx*)(p))
#define OLD(c) ((const ncclTuner_v3_t*)CTX(c)->lib->native)

static ncclResult_t getCollInfoV3(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                  int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)regBuff; /* v3 cannot be told about registered buffers */
  return OLD(ctx)->getCollInfo(CTX(ctx)->ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto,
                               nChannels);
}

ncclResult_t chrTunerAdaptV3(struct chrTunerLib* lib, const ncclTuner_v3_t* t) {
  lib->rec.version = 3;
  CHR_TUNER_REQUIRE(lib, t, name);
  CHR_TUNER_REQUIRE(lib, t, init);
  CHR_TUNER_REQUIRE(lib, t, getCollInfo);
  CHR_TUNER_REQUIRE(lib, t, destroy);
  chrTunerAdaptBindOld(lib, t, t->name, t->init, t->destroy);
  lib->table.getCollInfo = getCollInfoV3;
  return ncclSuccess;
}
