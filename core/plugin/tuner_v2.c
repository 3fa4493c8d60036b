/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_v2.c: presents a v2 tuner plugin as v6.
 *
 * What changes from v6: as v4 (init without commId, domain info or constants; destroy for finalize;
 * no getChunkSize), and getCollInfo answers with a choice instead of editing the cost table. The
 * adapter derives what v2 is told from the table, as NCCL does: collNetSupport when COLLNET_CHAIN can
 * run with SIMPLE, nvlsSupport when NVLS or NVLS_TREE can; the choice starts as -1/-1 and nChannels
 * as the core passed it. A valid (algorithm, protocol) pair whose entry can run becomes 0.0, so it
 * wins; every other entry is left as it was. A pair whose entry cannot run for this call (-1) or that
 * is out of range is refused with one WARN per communicator and collective, and the table keeps the
 * core's own estimates (with CHORUS_PLUGIN_STRICT=1 the refusal is an error of the call instead). The parts v2..v4 share are in tuner_adapt.c.
 */
#include "config/param.h"
#include "log/log.h"
#include "plugin/tuner_adapter.h"

#define CTX(p) ((struct chrTunerAdaptCtx*)(p))
#define OLD(c) ((const ncclTuner_v2_t*)CTX(c)->lib->native)

static int canRun(const float* table, int numProto, int algo, int proto) {
  return table[algo * numProto + proto] >= 0.0f; /* the core writes -1 (IGNORE) for what cannot run */
}

static const char* algoName(int a) {
  static const char* names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  return a >= 0 && a < NCCL_NUM_ALGORITHMS ? names[a] : "?";
}

static const char* protoName(int p) {
  static const char* names[] = {"LL", "LL128", "SIMPLE"};
  return p >= 0 && p < NCCL_NUM_PROTOCOLS ? names[p] : "?";
}

/* Out of range or not runnable. Strict: an error of the call, with the reason as the last error
 * (marked, so the wrapper keeps it). Otherwise said once per communicator and collective. */
static ncclResult_t refuse(struct chrTunerAdaptCtx* c, ncclFunc_t collType, int algo, int proto, const char* why) {
  if (chrParamInt(CHR_P_PLUGIN_STRICT) != 0) {
    chrSetLastError("it chose algorithm %d (%s) protocol %d (%s), %s", algo, algoName(algo), proto, protoName(proto),
                    why);
    chrTunerAdaptMarkReported();
    return ncclInvalidUsage;
  }
  unsigned bit = (unsigned)collType < 32u ? 1u << (unsigned)collType : 1u << 31;
  if (c->refusedWarned & bit) return ncclSuccess;
  c->refusedWarned |= bit;
  WARN("TUNER/Plugin: tuner plugin %s (ABI v2) chose algorithm %d (%s) protocol %d (%s) for collective %d, %s; "
       "using Chorus's own choice (said once per communicator and collective)", c->lib->rec.name, algo, algoName(algo),
       proto, protoName(proto), (int)collType, why);
  return ncclSuccess;
}

static ncclResult_t getCollInfoV2(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                  int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)regBuff; /* v2 cannot be told about registered buffers */
  float* table = (float*)collCostTable; /* one contiguous [numAlgo][numProto] block */
  int collNetSupport = 0, nvlsSupport = 0;
  if (numAlgo > NCCL_ALGO_NVLS_TREE && numProto > NCCL_PROTO_SIMPLE) {
    collNetSupport = canRun(table, numProto, NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE);
    nvlsSupport = canRun(table, numProto, NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE) ||
                  canRun(table, numProto, NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE);
  }
  int algorithm = NCCL_ALGO_UNDEF, protocol = NCCL_PROTO_UNDEF;
  ncclResult_t res = OLD(ctx)->getCollInfo(CTX(ctx)->ctx, collType, nBytes, collNetSupport, nvlsSupport, numPipeOps,
                                           &algorithm, &protocol, nChannels);
  if (res != ncclSuccess) return res;
  if (algorithm == NCCL_ALGO_UNDEF && protocol == NCCL_PROTO_UNDEF) return ncclSuccess; /* deferred */
  if (algorithm < 0 || algorithm >= numAlgo || protocol < 0 || protocol >= numProto)
    return refuse(CTX(ctx), collType, algorithm, protocol, "which is not a valid pair");
  if (!canRun(table, numProto, algorithm, protocol))
    return refuse(CTX(ctx), collType, algorithm, protocol, "which cannot run for this call");
  table[algorithm * numProto + protocol] = 0.0f;
  return ncclSuccess;
}

ncclResult_t chrTunerAdaptV2(struct chrTunerLib* lib, const ncclTuner_v2_t* t) {
  lib->rec.version = 2;
  CHR_TUNER_REQUIRE(lib, t, name);
  CHR_TUNER_REQUIRE(lib, t, init);
  CHR_TUNER_REQUIRE(lib, t, getCollInfo);
  CHR_TUNER_REQUIRE(lib, t, destroy);
  chrTunerAdaptBindOld(lib, t, t->name, t->init, t->destroy);
  lib->table.getCollInfo = getCollInfoV2;
  return ncclSuccess;
}
