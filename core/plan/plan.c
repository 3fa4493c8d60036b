/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c: the planner. For each task: which algorithm and protocol, how many channels (lanes), how
 * large a step, and an estimated time (what ncclGroupSimulateEnd reports).
 *
 * Choice: a cost table float[algorithm][protocol] in microseconds, laid out as NCCL's tuner ABI
 * expects (7 algorithms x 3 protocols, -1 = cannot run), is filled from the cost model of the
 * transport this comm uses (plan/cost_model.h, constants read at init); NCCL_ALGO / NCCL_PROTO
 * remove entries (-1), so a tuner never sees them; the tuner plugin's hook (plan/tuner_hook.c) may rewrite the table and ask for a channel count, and
 * refuses answers that cannot run; the smallest entry wins, ties to the first. If the settings leave
 * nothing that can run, the call fails with a message naming them. After the choice a v6 tuner may
 * change the step size, which is clamped to what the staging slots hold.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/config_store.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "plan/cost_model.h"
#include "plan/plan.h"
#include "transport/connect.h"
#include "plugin/tuner.h"


static const char* funcName(ncclFunc_t f) {
  static const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
                                "Send", "Recv", "AlltoAll", "Scatter", "Gather"};
  return (int)f >= 0 && (int)f <= ncclFuncGather ? names[f] : "?";
}

/* The slowest link decides: a comm spread over hosts pays net costs on its ring. */
static int transportOf(const struct ncclComm* comm) { return comm->nNodes > 1 ? CHR_COST_NET : CHR_COST_SHM; }

/* Estimated microseconds of `algo` for the task, or -1 when Chorus cannot run it (plan/cost_model.c;
 * the constants are the comm's, measured by chorus-perf --calibrate, docs/perf/cost-model.md). */
static float estimate(const struct chrCollTask* t, int algo, size_t bytes) {
  int costAlgo = algo == CHR_ALGO_RING ? CHR_COST_RING : algo == CHR_ALGO_TREE ? CHR_COST_TREE : -1;
  if (costAlgo < 0) return -1.0f;
  return chrCostEstimate(&t->comm->costModel, transportOf(t->comm), costAlgo, t->func, t->comm->nRanks, bytes);
}

ncclResult_t chrPlanAlgos(ncclFunc_t func, unsigned runnable, unsigned* mask) {
  unsigned allowed = 0;
  CHECK(chrAllowedAlgos(func, &allowed));
  *mask = allowed & runnable;
  if (*mask == 0 && (runnable & (1u << CHR_ALGO_RING))) {
    *mask = 1u << CHR_ALGO_RING;
    static _Atomic unsigned said; /* functions already told about, one bit each */
    const unsigned bit = 1u << ((unsigned)func & 31u);
    if (!(atomic_fetch_or(&said, bit) & bit))
      INFO(NCCL_TUNING, "NCCL_ALGO=\"%s\" leaves %s no algorithm it can run; it runs on RING, as NCCL falls back",
           chrParamStr(CHR_P_ALGO), funcName(func));
  }
  return ncclSuccess;
}

/* A v6 tuner may change the step size. Steps live in the staging slots, so the size is clamped to
 * [one page (or the slot, if smaller), the slot] and rounded down to whole elements. */
ncclResult_t chrPlanTunerChunk(struct chrCollTask* t, size_t bytes, size_t slot) {
  size_t chunk = t->chunkElems * t->typeSize;
  CHECK(t->comm->tunerChunkHook(t->comm, t->func, bytes, t->algo, t->proto, t->nChannels, &chunk));
  size_t floor = slot < 4096 ? slot : 4096;
  size_t clamped = chunk < floor ? floor : chunk > slot ? slot : chunk;
  if (clamped != chunk)
    TRACE(NCCL_TUNING, "tuner chunk size %zu bytes clamped to %zu (staging slot %zu)", chunk, clamped, slot);
  t->chunkElems = clamped / t->typeSize;
  if (t->chunkElems == 0) t->chunkElems = 1;
  return ncclSuccess;
}

/* Chorus's model in the form NCCL's tuner ABI hands to a v5+ plugin's init: the per-hop latency of
 * each link kind and algorithm for what Chorus can run (RING and TREE with SIMPLE; baseLatencies 0
 * there; NVLink and PCI both mean shared memory here), -1 in baseLatencies for pairs it cannot run on
 * this communicator, the tree's bus bandwidth as its per-channel bandwidth (one node: shared memory;
 * more: the net), and 0 for the LL/LL128/NVLS bandwidths (Chorus has no such protocols). Edits a
 * plugin makes are not read back. */
void chrPlanTunerConstants(const struct ncclComm* comm, ncclTunerConstants_v6_t* c) {
  memset(c, 0, sizeof(*c));
  int n = comm->nRanks;
  const struct chrCostModel* m = &comm->costModel;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      int runs = n > 1 && p == NCCL_PROTO_SIMPLE && (a == NCCL_ALGO_RING || a == NCCL_ALGO_TREE);
      c->baseLatencies[a][p] = runs ? 0.0 : NCCL_ALGO_PROTO_IGNORE;
      if (!runs) continue;
      int ca = a == NCCL_ALGO_TREE ? CHR_COST_TREE : CHR_COST_RING;
      c->hwLatencies[NCCL_HW_NVLINK][a][p] = m->e[CHR_COST_SHM][ca].latencyUs;
      c->hwLatencies[NCCL_HW_PCI][a][p] = m->e[CHR_COST_SHM][ca].latencyUs;
      c->hwLatencies[NCCL_HW_NET][a][p] = m->e[CHR_COST_NET][ca].latencyUs;
    }
  for (int cc = 0; cc < NCCL_NUM_COMPCAPS; cc++) {
    c->perChMaxTreeBws[cc][NCCL_TUNING_SCALE_1NODE] = m->e[CHR_COST_SHM][CHR_COST_TREE].busGBs;
    c->perChMaxTreeBws[cc][NCCL_TUNING_SCALE_2NODES] = m->e[CHR_COST_NET][CHR_COST_TREE].busGBs;
    c->perChMaxTreeBws[cc][NCCL_TUNING_SCALE_4NODES] = m->e[CHR_COST_NET][CHR_COST_TREE].busGBs;
  }
}

/* The choice for a host collective of `bytes` on 2+ ranks: algorithm, protocol, channels, step. */
static ncclResult_t chooseHost(struct chrCollTask* t, size_t bytes, size_t slot) {
  struct ncclComm* comm = t->comm;
  int n = comm->nRanks;
  unsigned algos = 0, protos = 0, runnableAlgos = 0;
  float est[CHR_NUM_ALGOS];
  for (int a = 0; a < CHR_NUM_ALGOS; a++) {
    est[a] = estimate(t, a, bytes);
    if (est[a] >= 0.0f) runnableAlgos |= 1u << a;
  }
  CHECK(chrPlanAlgos(t->func, runnableAlgos, &algos));
  CHECK(chrAllowedProtos(t->func, &protos));
  float table[CHR_NUM_ALGOS][CHR_NUM_PROTOS];
  int runnable = runnableAlgos != 0;
  for (int a = 0; a < CHR_NUM_ALGOS; a++)
    for (int p = 0; p < CHR_NUM_PROTOS; p++) {
      /* The host executor has one protocol: whole slots with completion counters (SIMPLE). */
      float us = p == CHR_PROTO_SIMPLE ? est[a] : -1.0f;
      if (!(algos & (1u << a)) || !(protos & (1u << p))) us = -1.0f;
      table[a][p] = us;
    }
  float model[CHR_NUM_ALGOS][CHR_NUM_PROTOS]; /* the estimates, whatever a tuner writes over them */
  memcpy(model, table, sizeof(model));
  int nChannels = 0;
  if (comm->tunerHook) CHECK(comm->tunerHook(comm, t->func, bytes, &table[0][0], CHR_NUM_ALGOS, CHR_NUM_PROTOS, &nChannels));
  int bestA = -1, bestP = -1;
  for (int a = 0; a < CHR_NUM_ALGOS; a++)
    for (int p = 0; p < CHR_NUM_PROTOS; p++)
      if (table[a][p] >= 0.0f && (bestA < 0 || table[a][p] < table[bestA][bestP])) { bestA = a; bestP = p; }
  if (bestA < 0)
    return chrFail(ncclInvalidUsage, "%s: NCCL_ALGO=\"%s\" NCCL_PROTO=\"%s\" leave no algorithm Chorus can run on %d ranks "
                   "(%s; host buffers use protocol SIMPLE)", funcName(t->func), chrParamStr(CHR_P_ALGO),
                   chrParamStr(CHR_P_PROTO), n,
                   runnable ? (t->func == ncclFuncAllReduce ? "all-reduce runs as RING or TREE" : "this runs as RING")
                            : "no algorithm");
  t->algo = bestA;
  t->proto = bestP;
  if (bestA == CHR_ALGO_TREE) {
    /* The double binary tree always has its four lanes (plan/works.c); a tuner's count does not apply.
     * Its lanes are point-to-point connections, whose steps are smaller. */
    t->nChannels = CHR_TREE_LANES;
    slot = chrTransportStepSize(1);
    t->chunkElems = slot / t->typeSize;
    if (nChannels > 0) TRACE(NCCL_TUNING, "tree: the tuner's %d channels do not apply (4 lanes)", nChannels);
  } else {
    /* Host buffers: one thread drives every channel, so more channels add connections and steps,
     * not parallelism; the default is NCCL_MIN_NCHANNELS (1). NCCL_MIN_NCHANNELS or a tuner raises
     * it (capped by NCCL_MAX_NCHANNELS). */
    t->nChannels = nChannels > 0 ? nChannels : comm->minChannels;
    if (t->nChannels > comm->nChannels) t->nChannels = comm->nChannels;
  }
  if (comm->tunerChunkHook) CHECK(chrPlanTunerChunk(t, bytes, slot));
  /* Two ranks: a small all-reduce costs its hops, and one exchange is one hop (hostdev/work.h). */
  t->pairExchange = t->func == ncclFuncAllReduce && n == 2 && bestA == CHR_ALGO_RING &&
                    bytes <= (size_t)chrParamInt(CHR_P_PAIR_MAX_BYTES);
  t->estimatedUs = model[bestA][bestP];
  comm->lastAlgo = chrAlgoName(bestA);
  comm->lastProto = chrProtoName(bestP);
  TRACE(NCCL_COLL | NCCL_TUNING, "%s count %zu type %d -> %s/%s, %d channels, chunk %zu elems, est %.1f us",
        funcName(t->func), t->count, (int)t->type, chrAlgoName(bestA), chrProtoName(bestP), t->nChannels, t->chunkElems,
        t->estimatedUs);
  return ncclSuccess;
}

/* The last choice of this thread, reused for a call with the same inputs: the choice depends only on
 * the call's kind and size, the communicator's size, hosts, channels and cost model, and the settings
 * (the configuration store, replaced when they are reloaded). Never with a tuner: a plugin may answer
 * differently each time. */
struct planMemo {
  int valid;
  const void* store;
  int func, nRanks, nNodes, minChannels, nChannels;
  size_t bytes, typeSize;
  struct chrCostModel costModel;
  int algo, proto, taskChannels, pairExchange; /* the choice */
  size_t chunkElems;
  float estimatedUs;
};
static __thread struct planMemo memo;

static int memoFits(const struct chrCollTask* t, size_t bytes) {
  const struct ncclComm* comm = t->comm;
  return memo.valid && !comm->tunerHook && !comm->tunerChunkHook && memo.func == (int)t->func && memo.bytes == bytes &&
         memo.typeSize == t->typeSize && memo.nRanks == comm->nRanks && memo.nNodes == comm->nNodes &&
         memo.minChannels == comm->minChannels && memo.nChannels == comm->nChannels &&
         memo.store == (const void*)chrConfigCurrent() &&
         memcmp(&memo.costModel, &comm->costModel, sizeof(memo.costModel)) == 0;
}

static void memoKeep(const struct chrCollTask* t, size_t bytes) {
  const struct ncclComm* comm = t->comm;
  memo = (struct planMemo){1, (const void*)chrConfigCurrent(), (int)t->func, comm->nRanks, comm->nNodes,
                           comm->minChannels, comm->nChannels, bytes, t->typeSize, comm->costModel, t->algo, t->proto,
                           t->nChannels, t->pairExchange, t->chunkElems, t->estimatedUs};
}

ncclResult_t chrPlanTask(struct chrCollTask* t) {
  if (t->noop) return ncclSuccess;
  if (t->onDevice) return chrPlanDevTask(t);
  struct ncclComm* comm = t->comm;
  const int n = comm->nRanks;
  const int p2p = t->func == ncclFuncSend || t->func == ncclFuncRecv;
  size_t slot = chrTransportStepSize(p2p);
  t->chunkElems = slot / t->typeSize;
  size_t bytes = t->count * t->typeSize;
  if (t->func == ncclFuncAllGather || t->func == ncclFuncReduceScatter) bytes *= (size_t)n;

  if (t->func == ncclFuncSend || t->func == ncclFuncRecv) {
    int transport = t->root == comm->rank ? CHR_COST_SHM : transportOf(comm);
    t->algo = CHR_ALGO_UNDEF;
    t->proto = CHR_PROTO_SIMPLE;
    t->nChannels = 1;
    t->estimatedUs = chrCostTransfer(&comm->costModel, transport, bytes);
    return chrPlanWorks(t);
  }
  if (n == 1) {
    t->algo = CHR_ALGO_UNDEF;
    t->proto = CHR_PROTO_SIMPLE;
    t->nChannels = 1;
    t->estimatedUs = (float)bytes / 5e3f; /* one local pass */
    return chrPlanWorks(t);
  }

  if (memoFits(t, bytes)) {
    t->algo = memo.algo;
    t->proto = memo.proto;
    t->nChannels = memo.taskChannels;
    t->pairExchange = memo.pairExchange;
    t->chunkElems = memo.chunkElems;
    t->estimatedUs = memo.estimatedUs;
    comm->lastAlgo = chrAlgoName(t->algo);
    comm->lastProto = chrProtoName(t->proto);
  } else {
    CHECK(chooseHost(t, bytes, slot));
    memoKeep(t, bytes);
  }
  return chrPlanWorks(t);
}
