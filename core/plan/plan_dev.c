/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_dev.c: planning a task whose buffers are GPU memory (the device path, cuda/dev_state.h).
 *
 * The works are the host's (plan/works.c, the same step programs), with the device group's shape:
 * - the ring, or, for an all-reduce, the double binary tree: when it is small (up to
 *   CHORUS_GPU_TREE_MAX_BYTES) on 3 or more ranks, where the tree's 2 log2(n) hops beat the ring's
 *   2(n-1), when NCCL_ALGO leaves out RING, or when a tuner picks it. Its copies (four lanes, four
 *   CTAs each: plan/works.c) use the point-to-point lanes' connection indices, two per copy, so
 *   their slot size; collectives and sends launch as separate kernels, and every rank uses a
 *   connection in the same order, so the two kinds of use never interleave. As many copies as the
 *   data fills (one per 4 channels' worth, as for the ring), up to half the lanes;
 * - LL for small operations (up to CHORUS_GPU_LL_MAX_BYTES, times nRanks/2 for an all-reduce, when NCCL_PROTO
 *   allows it), SIMPLE otherwise,
 *   with the step the group's slots hold (LL: llLines * 8 bytes; SIMPLE: the slot, CHORUS_GPU_BUFFSIZE / 8,
 *   or less for the ring when a channel's data would run in fewer than CHORUS_GPU_RING_LOOPS loops);
 * - as many channels as the data fills (LL: one per DEV_LL_BYTES_PER_CHANNEL; SIMPLE: one per
 *   CHORUS_GPU_SIMPLE_BYTES_PER_CHANNEL), up to the group's count;
 * - a send or receive over as many lanes as it fills (one per CHORUS_GPU_P2P_BYTES_PER_LANE, up to the
 *   shape's p2pLanes; the count alone decides, so both ends agree): lane k is p2p connection index k
 *   and carries share k of the elements; the launch runs lane k's sends on channel 2k and its
 *   receives on 2k + 1 (dev_launch.c): a device channel runs its works strictly in order, so a receive
 *   queued behind a send that waits for its peer would never run.
 * - a tuner plugin, when one is loaded, sees the collectives' cost table (devCostTable) and may pick
 *   the algorithm and protocol, the ring's channel count and (v6) the step size, as for host buffers
 *   (plan/tuner_hook.c refuses what cannot run). Sends and receives are not tuned, as in NCCL.
 */
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/dev_state.h"
#include "log/check.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "plan/plan.h"

/* The defaults of CHORUS_GPU_LL_MAX_BYTES, CHORUS_GPU_SIMPLE_BYTES_PER_CHANNEL and
 * CHORUS_GPU_TREE_MAX_BYTES, and LL's growth with the rank count, come from the sweeps in
 * docs/perf/gpu-2gpu.md ("Planner knobs") and docs/perf/gpu-scaling.md. */
/* LL: 8 KiB per channel, so that a channel's step is one line per thread of the CTA (1024 threads
 * of 8 payload bytes); with two lines per thread, each thread reads its second line only after its
 * first, which made small all-reduces slower (docs/perf/gpu-2gpu.md). */
#define DEV_LL_BYTES_PER_CHANNEL (8u << 10)

/* A rough estimate for ncclGroupSimulateEnd: 10 us per hop, 100 GB/s. */
static float devEstimateUs(int hops, size_t bytes) { return 10.0f * (float)hops + (float)bytes / 1e5f; }

/* A send or receive: as many lanes as the count fills (both ends compute the same), one per
 * CHORUS_GPU_P2P_BYTES_PER_LANE up to DEV_P2P_DENSE_LANES lanes and one per twice that beyond, since
 * each lane costs two CTAs and, with a rank's copies to itself, four works to plan, check and pass.
 * An LL send (up to CHORUS_GPU_P2P_LL_MAX_BYTES) takes one lane per
 * CHORUS_GPU_P2P_LL_BYTES_PER_LANE (one LL step). The measurements behind both rules are in
 * docs/perf/gpu-2gpu.md ("Why, and what would close it"). */
#define DEV_P2P_DENSE_LANES 8
static ncclResult_t planP2p(struct chrCollTask* t, const struct chrDevShape* shape, size_t bytes) {
  t->algo = CHR_ALGO_UNDEF;
  const int ll = t->proto == CHR_PROTO_LL;
  const size_t perLane = (size_t)chrParamInt(ll ? CHR_P_GPU_P2P_LL_BYTES_PER_LANE : CHR_P_GPU_P2P_BYTES_PER_LANE);
  size_t lanes = (bytes + perLane - 1) / perLane;
  if (!ll && lanes > DEV_P2P_DENSE_LANES) {
    lanes = (bytes + 2 * perLane - 1) / (2 * perLane);
    if (lanes < DEV_P2P_DENSE_LANES) lanes = DEV_P2P_DENSE_LANES;
  }
  t->nChannels = lanes < 1 ? 1 : lanes > (size_t)shape->p2pLanes ? shape->p2pLanes : (int)lanes;
  t->estimatedUs = devEstimateUs(1, bytes);
  t->comm->lastAlgo = "P2P";
  t->comm->lastProto = chrProtoName(t->proto);
  return chrPlanWorks(t);
}

/* Hops of a call's critical path: the ring's (2(n-1) for an all-reduce, n-1 otherwise), or twice
 * the depth of the double binary tree. */
static int devHops(ncclFunc_t func, int algo, int n) {
  if (algo == CHR_ALGO_TREE) {
    int depth = 0;
    while ((1 << depth) < n) depth++;
    return 2 * depth;
  }
  return func == ncclFuncAllReduce ? 2 * (n - 1) : n - 1;
}

/* The step a protocol moves through the connection slots the algorithm uses: LL lines, or a
 * SIMPLE slot (the tree's lanes are point-to-point connections, whose slots are smaller). */
static size_t devSlotBytes(const struct chrDevShape* shape, int algo, int proto) {
  if (proto == CHR_PROTO_LL) return (size_t)shape->llLines * 8;
  return algo == CHR_ALGO_TREE ? shape->p2pStepBytes : shape->stepBytes;
}

/* The cost table a tuner plugin sees, in its ABI's layout: -1 for what GPU buffers cannot run
 * (algorithms other than the ring and, for an all-reduce with two point-to-point lanes, the tree;
 * protocols other than LL and SIMPLE) and for what NCCL_ALGO / NCCL_PROTO remove (protos: the
 * allowed mask). Chorus's own choice is a rule, not a model: the ring (the tree for a small all-reduce
 * on 3+ ranks, or when NCCL_ALGO leaves it no ring), and the protocol chrPlanDevTask already picked (ruleP). It gets the rough
 * estimate; the other runnable pairs, which the rule turned down, twice theirs. So without a tuner
 * the rule decides, and a tuner that prefers another pair marks it cheaper (NCCL's example tuner
 * writes 0). */
static ncclResult_t devCostTable(const struct chrCollTask* t, const struct chrDevShape* shape, size_t bytes,
                                 unsigned protos, int ruleP, float table[CHR_NUM_ALGOS][CHR_NUM_PROTOS]) {
  const int n = t->comm->nRanks;
  unsigned algos = 0;
  const int treeRuns = t->func == ncclFuncAllReduce && shape->p2pLanes >= 2;
  CHECK(chrPlanAlgos(t->func, (1u << CHR_ALGO_RING) | (treeRuns ? 1u << CHR_ALGO_TREE : 0u), &algos));
  const int ring = (algos & (1u << CHR_ALGO_RING)) != 0, tree = (algos & (1u << CHR_ALGO_TREE)) != 0;
  const int smallTree = n >= 3 && bytes <= (size_t)chrParamInt(CHR_P_GPU_TREE_MAX_BYTES);
  const int ruleA = ring && !(tree && smallTree) ? CHR_ALGO_RING : CHR_ALGO_TREE;
  for (int a = 0; a < CHR_NUM_ALGOS; a++)
    for (int p = 0; p < CHR_NUM_PROTOS; p++) {
      const int runs = (a == CHR_ALGO_RING && ring) || (a == CHR_ALGO_TREE && tree);
      const int proto = (p == CHR_PROTO_LL || p == CHR_PROTO_SIMPLE) && (protos & (1u << p));
      float us = devEstimateUs(devHops(t->func, a, n), bytes);
      table[a][p] = !runs || !proto ? -1.0f : a == ruleA && p == ruleP ? us : 2.0f * us;
    }
  return ncclSuccess;
}

/* A SIMPLE ring step is a whole slot at most; smaller when a channel's data would otherwise take
 * fewer than CHORUS_GPU_RING_LOOPS loops, so that one rank's next step overlaps its peers' current
 * ones (in one loop, every step but the first waits for the previous rank's), but not below
 * DEV_RING_MIN_CHUNK: each step costs a CTA two barriers and a system-scope fence, which is why the
 * default is 1 loop, whole slots (docs/perf/gpu-2gpu.md, "Planner knobs"). */
#define DEV_RING_MIN_CHUNK (64u << 10)
static void ringPipeline(struct chrCollTask* t, size_t bytes) {
  const int n = t->comm->nRanks;
  const int chain = t->func == ncclFuncBroadcast || t->func == ncclFuncReduce; /* a loop is one chunk */
  const uint64_t perLoop = bytes / (uint64_t)t->nChannels / (uint64_t)(chain ? 1 : n);
  const uint64_t loops = (uint64_t)chrParamInt(CHR_P_GPU_RING_LOOPS);
  uint64_t chunk = chrRoundUp(chrDivUp(perLoop, loops), CHR_ALIGN_BYTES);
  if (chunk < DEV_RING_MIN_CHUNK) chunk = DEV_RING_MIN_CHUNK;
  if (chunk / t->typeSize < t->chunkElems) t->chunkElems = chunk / t->typeSize;
}

/* Lanes of a tree all-reduce: CHR_TREE_LANES per copy of the double binary tree, one copy per
 * 4 channels' worth of data (bytes per channel as for the ring), at most half the point-to-point
 * lanes (two connection indices per copy) and the channels the group has. */
static int treeLanes(const struct chrDevShape* shape, size_t bytes, size_t perChannel) {
  size_t copies = bytes / (perChannel * CHR_TREE_LANES);
  size_t most = (size_t)shape->p2pLanes / 2;
  if (most > (size_t)shape->nChannels / CHR_TREE_LANES) most = (size_t)shape->nChannels / CHR_TREE_LANES;
  if (copies > most) copies = most;
  return CHR_TREE_LANES * (copies < 1 ? 1 : (int)copies);
}

/* A collective on 2+ ranks: the cost table through the tuner (if one is loaded), the cheapest pair;
 * the tuner's channel count for the ring (the tree's lanes follow the data) and its step size
 * (v6), within the slots. */
static ncclResult_t planColl(struct chrCollTask* t, const struct chrDevShape* shape, size_t bytes, unsigned protos) {
  struct ncclComm* comm = t->comm;
  float table[CHR_NUM_ALGOS][CHR_NUM_PROTOS];
  CHECK(devCostTable(t, shape, bytes, protos, t->proto, table));
  int tunerChannels = 0;
  if (comm->tunerHook)
    CHECK(comm->tunerHook(comm, t->func, bytes, &table[0][0], CHR_NUM_ALGOS, CHR_NUM_PROTOS, &tunerChannels));
  int bestA = -1, bestP = -1;
  for (int a = 0; a < CHR_NUM_ALGOS; a++)
    for (int p = 0; p < CHR_NUM_PROTOS; p++)
      if (table[a][p] >= 0.0f && (bestA < 0 || table[a][p] < table[bestA][bestP])) {
        bestA = a;
        bestP = p;
      }
  if (bestA < 0) return chrFail(ncclInternalError, "GPU planner: no runnable algorithm left after the tuner");
  t->algo = bestA;
  t->proto = bestP;
  t->chunkElems = devSlotBytes(shape, bestA, bestP) / t->typeSize;
  if (t->chunkElems == 0) t->chunkElems = 1;
  const size_t perChannel = bestP == CHR_PROTO_LL ? DEV_LL_BYTES_PER_CHANNEL
                                                 : (size_t)chrParamInt(CHR_P_GPU_SIMPLE_BYTES_PER_CHANNEL);
  if (bestA == CHR_ALGO_TREE) {
    t->nChannels = treeLanes(shape, bytes, perChannel);
    if (tunerChannels > 0) TRACE(NCCL_TUNING, "tree: the tuner's %d channels do not apply (lanes follow the data)", tunerChannels);
  } else if (tunerChannels > 0) {
    t->nChannels = tunerChannels > shape->nChannels ? shape->nChannels : tunerChannels;
  } else {
    size_t want = (bytes + perChannel - 1) / perChannel;
    t->nChannels = want < 1 ? 1 : want > (size_t)shape->nChannels ? shape->nChannels : (int)want;
  }
  if (bestP == CHR_PROTO_SIMPLE && bestA == CHR_ALGO_RING) ringPipeline(t, bytes);
  if (comm->tunerChunkHook) {
    CHECK(chrPlanTunerChunk(t, bytes, devSlotBytes(shape, bestA, bestP)));
    /* Whole 64-byte units where the step allows: the kernels' 16-byte packs stay aligned. */
    size_t chunk = t->chunkElems * t->typeSize;
    if (chunk >= CHR_ALIGN_BYTES && chunk % CHR_ALIGN_BYTES) t->chunkElems = (chunk / CHR_ALIGN_BYTES * CHR_ALIGN_BYTES) / t->typeSize;
  }
  /* An all-reduce on 2 ranks: one exchange instead of the ring's two hops (hostdev/work.h
   * CHR_PAT_PAIR_ALLREDUCE, written by plan/works.c); always for LL, where the hops' latency is the
   * cost, and for SIMPLE up to CHORUS_GPU_PAIR_MAX_BYTES (default 0: the ring). */
  t->pairExchange = t->func == ncclFuncAllReduce && comm->nRanks == 2 && bestA == CHR_ALGO_RING &&
                    (bestP == CHR_PROTO_LL || bytes <= (size_t)chrParamInt(CHR_P_GPU_PAIR_MAX_BYTES));
  t->estimatedUs = devEstimateUs(devHops(t->func, bestA, comm->nRanks), bytes);
  comm->lastAlgo = chrAlgoName(bestA);
  comm->lastProto = chrProtoName(bestP);
  TRACE(NCCL_COLL | NCCL_TUNING, "GPU func %d count %zu type %d -> %s/%s, %d channels, chunk %zu elems",
        (int)t->func, t->count, (int)t->type, chrAlgoName(bestA), chrProtoName(bestP), t->nChannels, t->chunkElems);
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
  /* Steps to ranks on other hosts go through the net proxy, which carries SIMPLE slots only. */
  if (t->comm->devNet) {
    if (!simple && n > 1)
      return chrFail(ncclInvalidUsage, "NCCL_PROTO=\"%s\" leaves only LL, which GPU buffers of a communicator that spans "
                     "hosts do not run (SIMPLE only)", chrParamStr(CHR_P_PROTO));
    ll = 0;
  }
  /* An all-reduce's LL bound grows with the rank count: its ring makes 2(n-1) steps of 1/n of the
   * data, each of which costs SIMPLE a pair of barriers and a fence, so LL stays the faster
   * protocol to larger calls. The other collectives gained nothing from it (docs/perf/gpu-scaling.md). */
  size_t llMax = (size_t)chrParamInt(isP2p ? CHR_P_GPU_P2P_LL_MAX_BYTES : CHR_P_GPU_LL_MAX_BYTES);
  if (t->func == ncclFuncAllReduce && n > 2) llMax = llMax * (size_t)n / 2;
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
  return planColl(t, &shape, bytes, protos);
}
