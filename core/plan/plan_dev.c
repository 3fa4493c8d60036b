/*
 * plan_dev.c: planning a task whose buffers are GPU memory (the device path, cuda/dev_state.h).
 *
 * The works are the host's (plan/works.c, the same step programs), with the device group's shape:
 * - the ring, or, for an all-reduce when NCCL_ALGO leaves out RING, the double binary tree: its
 *   lanes use p2p connection indices 0 and 1 (the first two point-to-point lanes, so their slot
 *   size; collectives and sends launch as separate kernels, and every rank uses a connection in the
 *   same order, so the two kinds of use never interleave); four CTAs, for latency, not bandwidth;
 * - LL for small operations (up to CHORUS_GPU_LL_MAX_BYTES, when NCCL_PROTO allows it), SIMPLE otherwise,
 *   with the step the group's slots hold (LL: llLines * 8 bytes; SIMPLE: NCCL_BUFFSIZE / 8);
 * - as many channels as the data fills (LL: one per DEV_LL_BYTES_PER_CHANNEL; SIMPLE: one per
 *   CHORUS_GPU_SIMPLE_BYTES_PER_CHANNEL), up to the group's count;
 * - a send or receive over as many lanes as it fills (one per DEV_P2P_BYTES_PER_LANE, up to the
 *   shape's p2pLanes; the count alone decides, so both ends agree): lane k is p2p connection index k
 *   and carries share k of the elements; the launch runs lane k's sends on channel 2k and its
 *   receives on 2k + 1 (dev_exec.c): a device channel runs its works strictly in order, so a receive
 *   queued behind a send that waits for its peer would never run.
 * A tuner plugin is not consulted for device tasks yet.
 */
#include "comm/comm.h"
#include "config/param.h"
#include "cuda/dev_state.h"
#include "log/check.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "plan/plan.h"

/* The LL threshold and SIMPLE's bytes per channel: CHORUS_GPU_LL_MAX_BYTES and
 * CHORUS_GPU_SIMPLE_BYTES_PER_CHANNEL (256 KB each by default; on 2 H100s over NVLink, 512 KB - 1 MB
 * ran on 2-4 channels at 25 us, docs/perf/gpu-2gpu.md, so these are the first to sweep). */
#define DEV_LL_BYTES_PER_CHANNEL (16u << 10)
#define DEV_P2P_LL_MAX_BYTES (64u << 10)
#define DEV_P2P_BYTES_PER_LANE (64u << 10)

/* A rough estimate for ncclGroupSimulateEnd: 10 us per hop, 100 GB/s. */
static float devEstimateUs(int hops, size_t bytes) { return 10.0f * (float)hops + (float)bytes / 1e5f; }

/* A send or receive: as many lanes as the count fills (both ends compute the same). */
static ncclResult_t planP2p(struct chrCollTask* t, const struct chrDevShape* shape, size_t bytes) {
  t->algo = CHR_ALGO_UNDEF;
  size_t lanes = t->proto == CHR_PROTO_LL ? 1 : (bytes + DEV_P2P_BYTES_PER_LANE - 1) / DEV_P2P_BYTES_PER_LANE;
  t->nChannels = lanes < 1 ? 1 : lanes > (size_t)shape->p2pLanes ? shape->p2pLanes : (int)lanes;
  t->estimatedUs = devEstimateUs(1, bytes);
  t->comm->lastAlgo = "P2P";
  t->comm->lastProto = chrProtoName(t->proto);
  return chrPlanWorks(t);
}

/* An all-reduce on the double binary tree: its four lanes over p2p connection indices 0 and 1. */
static ncclResult_t planTree(struct chrCollTask* t, const struct chrDevShape* shape, size_t bytes) {
  const int n = t->comm->nRanks;
  t->algo = CHR_ALGO_TREE;
  t->nChannels = CHR_TREE_LANES;
  if (t->proto == CHR_PROTO_SIMPLE) t->chunkElems = shape->p2pStepBytes / t->typeSize;
  int depth = 0;
  while ((1 << depth) < n) depth++;
  t->estimatedUs = devEstimateUs(2 * depth, bytes);
  t->comm->lastAlgo = chrAlgoName(t->algo);
  t->comm->lastProto = chrProtoName(t->proto);
  TRACE(NCCL_COLL | NCCL_TUNING, "GPU all-reduce count %zu type %d -> TREE/%s, chunk %zu elems", t->count, (int)t->type,
        chrProtoName(t->proto), t->chunkElems);
  return chrPlanWorks(t);
}

ncclResult_t chrPlanDevTask(struct chrCollTask* t) {
  struct ncclComm* comm = t->comm;
  int n = comm->nRanks;
  struct chrDevShape shape;
  chrDevCommShape(comm, &shape);
  size_t bytes = t->count * t->typeSize;
  if (t->func == ncclFuncAllGather || t->func == ncclFuncReduceScatter) bytes *= (size_t)n;
  int isP2p = t->func == ncclFuncSend || t->func == ncclFuncRecv;

  unsigned protos = 0;
  CHECK(chrAllowedProtos(t->func, &protos));
  int ll = (protos & (1u << CHR_PROTO_LL)) != 0, simple = (protos & (1u << CHR_PROTO_SIMPLE)) != 0;
  if (!ll && !simple)
    return chrFail(ncclInvalidUsage, "NCCL_PROTO=\"%s\" leaves no protocol for GPU buffers (they run LL or SIMPLE)",
                   chrParamStr(CHR_P_PROTO));
  size_t llMax = isP2p ? DEV_P2P_LL_MAX_BYTES : (size_t)chrParamInt(CHR_P_GPU_LL_MAX_BYTES);
  t->proto = ll && (!simple || bytes <= llMax) ? CHR_PROTO_LL : CHR_PROTO_SIMPLE;
  size_t simpleStep = isP2p ? shape.p2pStepBytes : shape.stepBytes;
  size_t stepBytes = t->proto == CHR_PROTO_LL ? (size_t)shape.llLines * 8 : simpleStep;
  t->chunkElems = stepBytes / t->typeSize;
  if (t->chunkElems == 0) t->chunkElems = 1;
  t->chanBase = 0;

  if (isP2p) return planP2p(t, &shape, bytes);
  if (n == 1) {
    t->algo = CHR_ALGO_UNDEF;
    t->proto = CHR_PROTO_SIMPLE;
    t->nChannels = 1;
    t->estimatedUs = devEstimateUs(0, bytes);
    return chrPlanWorks(t);
  }
  unsigned algos = 0;
  CHECK(chrAllowedAlgos(t->func, &algos));
  const int tree = t->func == ncclFuncAllReduce && (algos & (1u << CHR_ALGO_TREE)) && shape.p2pLanes >= 2;
  if (!(algos & (1u << CHR_ALGO_RING)) && !tree)
    return chrFail(ncclInvalidUsage, "NCCL_ALGO=\"%s\" excludes RING, which GPU buffers run on (and TREE, for an "
                   "all-reduce on at most 16 ranks) (%d ranks)", chrParamStr(CHR_P_ALGO), n);
  if (!(algos & (1u << CHR_ALGO_RING))) return planTree(t, &shape, bytes);
  t->algo = CHR_ALGO_RING;
  size_t perChannel = t->proto == CHR_PROTO_LL ? DEV_LL_BYTES_PER_CHANNEL
                                               : (size_t)chrParamInt(CHR_P_GPU_SIMPLE_BYTES_PER_CHANNEL);
  size_t want = (bytes + perChannel - 1) / perChannel;
  t->nChannels = want < 1 ? 1 : want > (size_t)shape.nChannels ? shape.nChannels : (int)want;
  t->estimatedUs = devEstimateUs(t->func == ncclFuncAllReduce ? 2 * (n - 1) : n - 1, bytes);
  comm->lastAlgo = chrAlgoName(t->algo);
  comm->lastProto = chrProtoName(t->proto);
  TRACE(NCCL_COLL | NCCL_TUNING, "GPU func %d count %zu type %d -> RING/%s, %d channels, chunk %zu elems",
        (int)t->func, t->count, (int)t->type, chrProtoName(t->proto), t->nChannels, t->chunkElems);
  return chrPlanWorks(t);
}
