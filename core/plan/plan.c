/*
 * plan.c: the planner. Today: all-reduce runs as a ring on NCCL_MIN_NCHANNELS channels; a step
 * carries at most one staging slot.
 * The estimate is a plain alpha-beta model of the ring: 2(n-1) steps of latency plus 2(n-1)/n of
 * the bytes at the link bandwidth (constants for TCP loopback; measured per transport later).
 */
#include "comm/comm.h"
#include "config/param.h"
#include "log/log.h"
#include "plan/plan.h"

extern const struct chrAlgo chrRingAllReduce;
extern const struct chrAlgo chrRingReduceScatter;
extern const struct chrAlgo chrRingAllGather;
extern const struct chrAlgo chrRingBroadcast;
extern const struct chrAlgo chrRingReduce;
extern const struct chrAlgo chrLocalAlgo;
extern const struct chrAlgo chrP2pAlgo;

static const struct chrAlgo* ringAlgoFor(ncclFunc_t func) {
  switch (func) {
    case ncclFuncAllReduce: return &chrRingAllReduce;
    case ncclFuncReduceScatter: return &chrRingReduceScatter;
    case ncclFuncAllGather: return &chrRingAllGather;
    case ncclFuncBroadcast: return &chrRingBroadcast;
    case ncclFuncReduce: return &chrRingReduce;
    default: return NULL;
  }
}

#define NET_LATENCY_US 15.0f
#define NET_BW_GBS 2.0f

static size_t slotBytes(const struct ncclComm* comm) {
  struct chrChannel const* ch = &comm->channels[0];
  if (ch->ringSend) return ch->ringSend->stepSize;
  int64_t buff = chrParamInt(CHR_P_BUFFSIZE);
  if (buff < CHR_STEPS * 4096) buff = CHR_STEPS * 4096;
  return ((size_t)buff / CHR_STEPS) & ~(size_t)4095;
}

ncclResult_t chrPlanTask(struct chrCollTask* t) {
  struct ncclComm* comm = t->comm;
  int n = comm->nRanks;
  int p2p = t->func == ncclFuncSend || t->func == ncclFuncRecv;
  t->algo = p2p ? &chrP2pAlgo : n == 1 ? &chrLocalAlgo : ringAlgoFor(t->func);
  if (t->algo == NULL) return chrFail(ncclInvalidUsage, "no algorithm for function %d yet", (int)t->func);
  for (int i = 0; i < n; i++)
    if (comm->ringOrder[i] == comm->rank) t->ringPos = i;
  size_t bytes = t->count * t->typeSize;
  size_t slot = slotBytes(comm);
  t->chunkElems = slot / t->typeSize;
  /* Host buffers: one thread drives every channel, so more channels add connections, not
   * parallelism; measured on 2 cores, one channel is fastest at every size (docs/perf/host.md).
   * NCCL_MIN_NCHANNELS raises it (capped by NCCL_MAX_NCHANNELS). */
  t->nChannels = p2p ? 1 : comm->minChannels;
  float steps = n > 1 ? 2.0f * (float)(n - 1) : 0.0f;
  t->estimatedUs = steps * NET_LATENCY_US + (n > 1 ? steps / (float)n * (float)bytes / (NET_BW_GBS * 1e3f) : 0.0f);
  TRACE(NCCL_COLL, "plan: func %d count %zu type %d -> %s, %d channels, chunk %zu elems, est %.1f us", (int)t->func,
        t->count, (int)t->type, t->algo->name, t->nChannels, t->chunkElems, t->estimatedUs);
  return ncclSuccess;
}
