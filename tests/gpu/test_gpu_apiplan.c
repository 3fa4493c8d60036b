/*
 * test_gpu_apiplan.c (gpu.apiplan.n<N>, runs anywhere): the core's side of the GPU path without a GPU.
 * For every case of the public-API GPU test (nccl_cases.c), each rank's calls become tasks as the API
 * layer makes them (device buffers), the device planner plans them (plan/plan_dev.c), the launch
 * builder orders them (exec/dev_exec.c: collectives by channel; a send or receive over lanes, lane k's
 * sends on channel 2k and receives on 2k + 1, in round order), and the plans of all ranks run through the reference simulation
 * (gpu_sim.c: 8-slot connections, channels strictly in order, deadlocks detected) on host memory;
 * the outputs must match the test's reference. Also: the partition of a group's tasks into host and
 * device tasks. With CHORUS_GPU_CE_MIN_BYTES set (gpu.apiplan.cesend.*), the sends to other ranks of
 * that many bytes or more are one engine work per end, first on channel 0 in call order, and the
 * simulation copies them pair by pair; on 2 ranks so are the broadcasts (the root's send, the other
 * rank's receive, in transfer class 1; an engine copy at the root out of place), ahead of the sends
 * and out of the collectives' launch; the plans made as if under graph capture must have none. On 2
 * ranks a scenario of sends and broadcasts that the two ranks group differently checks the classes.
 * With CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES set (gpu.apiplan.ceallreduce.*), a 2-rank SIMPLE ring
 * all-reduce of an even count and that many bytes or more is a reduce-scatter in the collectives'
 * launch (work for work as expected) and its halves' engine send and receive (class 1, with the
 * broadcasts' in call order) on channel 0 of the point-to-point launch, which the simulation runs
 * after the collectives' launch as the stream does; other all-reduces keep their works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/comm.h"
#include "config/algo_select.h"
#include "device/dev_work.h"
#include "exec/dev_exec.h"
#include "exec/reduce.h"
#include "gpu_sim.h"
#include "nccl.h"
#include "nccl_cases.h"
#include "plan/plan.h"

#define MAX_RANKS 8
#define MAX_TASKS (NC_MAX_OPS * 2 * MAX_RANKS)

static struct chrCollTask tasks[MAX_RANKS][MAX_TASKS];
static int nTasks[MAX_RANKS];
static int widestTree; /* most lanes of one tree all-reduce (4 per copy of the double binary tree) */
static long treeWorks, lanedWorks; /* works of the double binary tree; of sends/receives past lane 0 */
static long splitPlans;            /* rank plans the launcher cuts into several launches */
static long selfCopyWorks;         /* a rank's send to itself and receive from itself as local copies */
static long engineWorks;           /* of those, the ones for the copy engine (CHR_WORK_ENGINE) */
static long pairWorks;             /* 2-rank all-reduces in one exchange (CHR_PAT_PAIR_ALLREDUCE) */
static long simplePairWorks;       /* ... of them SIMPLE (CHORUS_GPU_PAIR_MAX_BYTES) */
static const char* pairMaxEnv;     /* CHORUS_GPU_PAIR_MAX_BYTES as the test runs with it, or NULL */
static uint64_t ceMin;             /* CHORUS_GPU_CE_MIN_BYTES as the test runs with it (0: unset or off) */
static long ceSendWorks, ceRecvWorks; /* sends to other ranks / receives from them as engine works */
static long ceMixedPlans;          /* rank plans with an engine work and a lane transfer to one peer, one direction */
static long ceCapturedPlans;       /* rank plans made as under graph capture, checked to have no engine work */
static long ceBcastSends, ceBcastRecvs; /* 2-rank broadcasts as engine transfers (class 1): the root's, the other's */
static long ceBcastCopies;         /* ... the root's engine copies of its own buffer (out of place) */
static long ceClassScenarios;      /* the sends-and-broadcasts-across-groups scenario, run and passed */
static uint64_t ceArMin;           /* CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES as the test runs with it (0: unset or off) */
static long ceArTasks;             /* 2-rank all-reduces planned as a reduce-scatter and an engine all-gather */
static long ceArScatterWorks;      /* ... their reduce-scatter works in the collectives' launch */
static long ceArSends, ceArRecvs;  /* ... their halves' engine sends and receives (class 1) */
static long ceArKept;              /* all-reduces of that size that keep their works (odd count, LL, tree, pair, n != 2) */

static void addTask(int r, ncclComm_t comm, ncclFunc_t func, const void* send, void* recv, size_t count, int type,
                    ncclRedOp_t op, int root) {
  if (nTasks[r] == MAX_TASKS) {
    fprintf(stderr, "test bug: too many tasks\n");
    exit(1);
  }
  struct chrCollTask* t = &tasks[r][nTasks[r]++];
  memset(t, 0, sizeof(*t));
  t->comm = comm;
  t->func = func;
  t->sendbuff = send;
  t->recvbuff = recv;
  t->count = count;
  t->type = (ncclDataType_t)type;
  t->typeSize = chrTypeSize((ncclDataType_t)type);
  t->userOp = op;
  t->root = root;
  t->onDevice = 1;
}

static int failures;

/* With a tuner plugin loaded (gpu.apiplan.tuner.*), what its rule asked for, as the test's
 * environment states it: CHORUS_TEST_EXPECT_ALGO (RING or TREE: every all-reduce),
 * CHORUS_TEST_EXPECT_PROTO (LL or SIMPLE: every collective), CHORUS_TEST_EXPECT_CHANNELS (every ring
 * collective), CHORUS_TEST_EXPECT_CHUNK (bytes per step: every collective). */
static long tunedTasks;

static int checkTuned(const char* name, int rank, const struct chrCollTask* t) {
  if (t->func == ncclFuncSend || t->func == ncclFuncRecv || t->comm->nRanks == 1) return 0;
  const char* algo = getenv("CHORUS_TEST_EXPECT_ALGO");
  const char* proto = getenv("CHORUS_TEST_EXPECT_PROTO");
  const char* channels = getenv("CHORUS_TEST_EXPECT_CHANNELS");
  const char* chunk = getenv("CHORUS_TEST_EXPECT_CHUNK");
  int bad = 0;
  if (algo && t->func == ncclFuncAllReduce && strcmp(chrAlgoName(t->algo), algo) != 0) bad = 1;
  if (proto && strcmp(chrProtoName(t->proto), proto) != 0) bad = 1;
  if (channels && t->algo == CHR_ALGO_RING && t->nChannels != atoi(channels)) bad = 1;
  if (chunk && t->chunkElems * t->typeSize != (size_t)atol(chunk)) bad = 1;
  if (bad) {
    fprintf(stderr, "FAIL %s: rank %d: func %d planned %s/%s, %d channels, %zu-byte steps; the tuner asked for %s/%s, "
            "%s channels, %s-byte steps\n", name, rank, (int)t->func, chrAlgoName(t->algo), chrProtoName(t->proto),
            t->nChannels, t->chunkElems * t->typeSize, algo ? algo : "*", proto ? proto : "*", channels ? channels : "*",
            chunk ? chunk : "*");
    return 1;
  }
  tunedTasks += algo || proto || channels || chunk;
  return 0;
}

/* With every planner setting at its default (no NCCL_ALGO / NCCL_PROTO, tuner or CHORUS_GPU_*
 * override), the rule of plan/plan_dev.c, restated: the tree for all-reduces of up to 512 KiB on 3+
 * ranks, else the ring; LL up to 512 KiB, and for an all-reduce on n > 2 ranks up to 512 KiB x n/2. */
static long ruleTasks;

static int checkDefaultRule(const char* name, int rank, const struct chrCollTask* t) {
  static const char* const overrides[] = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_TUNER_PLUGIN", "CHORUS_GPU_LL_MAX_BYTES",
                                          "CHORUS_GPU_TREE_MAX_BYTES"};
  for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++)
    if (getenv(overrides[i])) return 0;
  const int n = t->comm->nRanks;
  if (t->func == ncclFuncSend || t->func == ncclFuncRecv || n == 1) return 0;
  size_t bytes = t->count * t->typeSize;
  if (t->func == ncclFuncAllGather || t->func == ncclFuncReduceScatter) bytes *= (size_t)n;
  const int allReduce = t->func == ncclFuncAllReduce;
  const size_t llMax = (size_t)512 * 1024 * (allReduce && n > 2 ? (size_t)n : 2) / 2;
  const int tree = allReduce && n >= 3 && bytes <= (size_t)512 * 1024;
  const int wantAlgo = tree ? CHR_ALGO_TREE : CHR_ALGO_RING, wantProto = bytes <= llMax ? CHR_PROTO_LL : CHR_PROTO_SIMPLE;
  if (t->algo != wantAlgo || t->proto != wantProto) {
    fprintf(stderr, "FAIL %s: rank %d: func %d of %zu bytes on %d ranks planned %s/%s, the rule says %s/%s\n", name, rank,
            (int)t->func, bytes, n, chrAlgoName(t->algo), chrProtoName(t->proto), chrAlgoName(wantAlgo),
            chrProtoName(wantProto));
    return 1;
  }
  ruleTasks++;
  return 0;
}

/* The launcher's cuts (device/dev_work.h chrDevLaunchCut, as device/launch.cu walks them): every
 * launch holds whole calls, and every call that reduces runs in the kernel of its type and op. A
 * call split over two launches can deadlock on the GPU (its tree down pass in the first launch waits
 * for its up pass in the second), which the simulation, running the plan as one, cannot see. */
static int checkLaunchCuts(const char* name, int rank, const struct chrDevLaunchPlan* p, int* launches, int* workLaunch) {
  int base[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], launchOf[NC_MAX_OPS * 4];
  for (int i = 0; i < NC_MAX_OPS * 4; i++) launchOf[i] = -1;
  for (int c = 0, sum = 0; c < p->collChannels; c++) {
    base[c] = sum;
    sum += p->nColl[c];
    end[c] = sum;
  }
  for (int launch = 0;; launch++) {
    int key = -1, took = 0, take[CHR_DEV_MAX_CHANNELS];
    chrDevLaunchNext(p->coll, base, end, p->collChannels, take, &key);
    for (int c = 0; c < p->collChannels; c++)
      for (int stop = base[c] + take[c]; base[c] < stop; base[c]++, took++) {
        const struct chrWork* w = &p->coll[base[c]];
        const int k = chrDevKernelKey(w);
        if (w->call < 0 || w->call >= NC_MAX_OPS * 4 || (k >= 0 && k != key) ||
            (launchOf[w->call] >= 0 && launchOf[w->call] != launch)) {
          fprintf(stderr, "FAIL %s: rank %d: call %d (kernel %d) in launch %d (kernel %d), earlier works of it in launch %d\n",
                  name, rank, w->call, k, launch, key, w->call >= 0 && w->call < NC_MAX_OPS * 4 ? launchOf[w->call] : -2);
          return 1;
        }
        launchOf[w->call] = launch;
        workLaunch[base[c]] = launch;
      }
    if (took == 0) {
      *launches = launch;
      break;
    }
  }
  for (int c = 0; c < p->collChannels; c++)
    if (base[c] < end[c]) {
      fprintf(stderr, "FAIL %s: rank %d: channel %d has works no launch takes\n", name, rank, c);
      return 1;
    }
  return 0;
}

static int* collLaunch[MAX_RANKS]; /* per rank: the kernel each collective work runs in */

static int isEngineP2pWork(const struct chrWork* w) {
  return (w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV) && (w->flags & CHR_WORK_ENGINE);
}

/* What dev_exec.c makes an engine work (read from the environment, not the library): a send to
 * another rank or a receive from one of at least CHORUS_GPU_CE_MIN_BYTES, outside graph capture. */
static int wantsEngine(const struct chrCollTask* t, int rank, int capturing) {
  return ceMin > 0 && !capturing && (t->func == ncclFuncSend || t->func == ncclFuncRecv) && t->root != rank &&
         t->count > 0 && (uint64_t)t->count * (uint64_t)t->typeSize >= ceMin;
}

/* ... and a broadcast of two ranks of that size: the root's send and the other rank's receive, in
 * transfer class 1 (the collectives'), with, at the root out of place, an engine copy of its buffer. */
static int wantsEngineBcast(const struct chrCollTask* t, int capturing) {
  return ceMin > 0 && !capturing && t->func == ncclFuncBroadcast && t->comm->nRanks == 2 && t->count > 0 &&
         (uint64_t)t->count * (uint64_t)t->typeSize >= ceMin;
}

/* ... and a 2-rank all-reduce of at least CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES with an even count,
 * planned as SIMPLE ring works (not LL, the tree or the pair exchange): a reduce-scatter on the
 * kernels and its halves crossing on the engine (class 1, numbered with the broadcasts). */
static int wantsEngineAllReduce(const struct chrCollTask* t, int capturing) {
  return ceArMin > 0 && !capturing && t->func == ncclFuncAllReduce && t->comm->nRanks == 2 && t->count > 0 &&
         t->count % 2 == 0 && (uint64_t)t->count * (uint64_t)t->typeSize >= ceArMin && t->algo == CHR_ALGO_RING &&
         t->proto == CHR_PROTO_SIMPLE && !t->pairExchange;
}

/* The reduce-scatter work of channel c of such an all-reduce of rank `rank`, as dev_exec.c must make
 * it from the all-reduce's work: a reduce-scatter of recvcount half = count / 2 over the whole input,
 * into block `rank` of the output, channel c's share of the half; len 0: no work. */
static struct chrWork ceArScatterWork(const struct chrCollTask* t, int rank, int c) {
  const uint64_t half = (uint64_t)t->count / 2;
  struct chrWork w = t->works[c];
  w.pattern = CHR_PAT_RING_REDUCESCATTER;
  w.func = ncclFuncReduceScatter;
  w.count = half;
  w.sendbuff = (uint64_t)(uintptr_t)t->sendbuff;
  w.recvbuff = (uint64_t)(uintptr_t)t->recvbuff + (uint64_t)rank * half * (uint64_t)t->typeSize;
  chrChannelRange(half, t->nChannels, c, chrAlignElems(t->typeSize), &w.start, &w.len);
  return w;
}

/* The engine works that lead channel 0, as dev_exec.c must make them: the broadcasts' and the
 * all-reduces' first (class 1, in call order among the collectives), then the sends' and receives'
 * (class 0), each in call order. */
struct ceExpect {
  const struct chrCollTask* t;
  int isSend, peer, cls, copy; /* copy: the root's engine copy of its own buffer (a local work) */
  int ar;                      /* an all-reduce's half: elements [block * half, +half) of its output */
  uint64_t buf, count;         /* the buffer and elements a transfer moves */
};

static int expectedEngineWorks(const struct chrCollTask* head, int rank, int capturing, struct ceExpect* out, int cap) {
  int k = 0;
  for (const struct chrCollTask* t = head; t; t = t->next) {
    const uint64_t send = (uint64_t)(uintptr_t)t->sendbuff, recv = (uint64_t)(uintptr_t)t->recvbuff;
    if (k + 2 > cap) return -1;
    if (wantsEngineAllReduce(t, capturing)) { /* my half to the peer, then the peer's half from it */
      const uint64_t half = (uint64_t)t->count / 2, bytes = half * (uint64_t)t->typeSize;
      const int peer = 1 - rank;
      out[k++] = (struct ceExpect){t, 1, peer, CHR_WORK_CLASS_COLL, 0, 1, recv + (uint64_t)rank * bytes, half};
      out[k++] = (struct ceExpect){t, 0, peer, CHR_WORK_CLASS_COLL, 0, 1, recv + (uint64_t)peer * bytes, half};
      continue;
    }
    if (!wantsEngineBcast(t, capturing)) continue;
    const int root = t->root == rank;
    out[k++] = (struct ceExpect){t, root, root ? 1 - rank : t->root, CHR_WORK_CLASS_COLL, 0, 0, root ? send : recv,
                                 t->count};
    if (root && t->sendbuff != t->recvbuff) out[k++] = (struct ceExpect){t, 1, rank, CHR_WORK_CLASS_COLL, 1, 0, send, t->count};
  }
  for (const struct chrCollTask* t = head; t; t = t->next) {
    if (!wantsEngine(t, rank, capturing)) continue;
    if (k + 1 > cap) return -1;
    const int isSend = t->func == ncclFuncSend;
    out[k++] = (struct ceExpect){t, isSend, t->root, CHR_WORK_CLASS_P2P, 0, 0,
                                 (uint64_t)(uintptr_t)(isSend ? t->sendbuff : t->recvbuff), t->count};
  }
  return k;
}

static const char* ceWhat(const struct ceExpect* e) {
  if (e->ar) return e->isSend ? "all-reduce's send of its reduced half" : "all-reduce's receive of the peer's half";
  return e->copy ? "root's engine copy of a broadcast" : e->cls == CHR_WORK_CLASS_COLL ? (e->isSend ? "broadcast's send" :
         "broadcast's receive") : e->isSend ? "send" : "receive";
}

/* Whether w is the work e expects. */
static int ceMatches(const struct chrWork* w, const struct ceExpect* e) {
  const struct chrCollTask* t = e->t;
  if (e->copy)
    return w->pattern == CHR_PAT_LOCAL && (w->flags & CHR_WORK_ENGINE) && w->func == ncclFuncSend && w->nLinks == 0 &&
           w->start == 0 && w->len == t->count && w->typeSize == t->typeSize && w->proto == CHR_PROTO_SIMPLE &&
           w->sendbuff == (uint64_t)(uintptr_t)t->sendbuff && w->recvbuff == (uint64_t)(uintptr_t)t->recvbuff;
  return w->pattern == (e->isSend ? CHR_PAT_P2P_SEND : CHR_PAT_P2P_RECV) && w->flags == CHR_WORK_ENGINE &&
         w->func == (e->isSend ? ncclFuncSend : ncclFuncRecv) && w->nLinks == 1 && w->links[0].peer == e->peer &&
         w->links[0].isSend == e->isSend && w->links[0].p2p && w->links[0].conn == e->cls && w->start == 0 &&
         w->len == e->count && w->count == e->count && w->typeSize == t->typeSize && w->chunkElems == w->len &&
         w->proto == CHR_PROTO_SIMPLE && w->op == CHR_DEV_SUM && w->opArg == 0 &&
         (e->isSend ? w->sendbuff : w->recvbuff) == e->buf && (e->isSend ? w->recvbuff : w->sendbuff) == 0;
}

/* The engine works of a rank's plan, against its tasks (head: call order): one per send or receive
 * that wants one, and the works of each broadcast and all-reduce that wants them, none other, all at
 * the head of channel 0, the collectives' first (in their call order), then the sends' (in theirs)
 * (the device library numbers them per peer, direction and class in the order it finds them, and
 * both ends must number alike), each one piece (a whole buffer, or an all-reduce's half) with one
 * link to the peer that names the class. Such a broadcast has no collective work and no call number;
 * such an all-reduce's collective works are its reduce-scatter's: the collectives' launch holds
 * exactly those and the planned works of the other collectives, numbered 0.. in call order. Counts
 * them, and the plans where one goes to a peer that a lane transfer of the same direction goes to as
 * well (sizes mixed in one group); *lead: how many works lead channel 0 so. */
static int checkEngineP2p(const char* name, int rank, const struct chrCollTask* head, const struct chrDevLaunchPlan* p,
                          int capturing, int* lead) {
  struct ceExpect want[MAX_TASKS * 2];
  const int nWant = expectedEngineWorks(head, rank, capturing, want, MAX_TASKS * 2);
  if (nWant < 0) {
    fprintf(stderr, "test bug: too many engine works\n");
    return 1;
  }
  *lead = nWant;
  if (nWant > p->nP2p[0]) {
    fprintf(stderr, "FAIL %s: rank %d: %d engine works expected first on channel 0, which holds %d works%s\n", name, rank,
            nWant, p->nP2p[0], capturing ? " (capturing)" : "");
    return 1;
  }
  for (int k = 0; k < nWant; k++) {
    const struct chrWork* w = &p->p2p[k];
    const struct ceExpect* e = &want[k];
    if (!ceMatches(w, e)) {
      fprintf(stderr, "FAIL %s: rank %d: work %d of channel 0 (pattern %d, flags %d, func %d, %d links, peer %d, class %d, "
              "[%llu, +%llu) of %llu at 0x%llx) is not the %s %s rank %d of %llu elements at 0x%llx (class %d), in call "
              "order\n", name, rank, k, w->pattern, w->flags, w->func, w->nLinks, w->nLinks ? w->links[0].peer : -1,
              w->nLinks ? w->links[0].conn : -1, (unsigned long long)w->start, (unsigned long long)w->len,
              (unsigned long long)w->count,
              (unsigned long long)(w->pattern == CHR_PAT_P2P_RECV ? w->recvbuff : w->sendbuff), ceWhat(e),
              e->copy ? "of" : e->isSend ? "to" : "from", e->peer, (unsigned long long)e->count,
              (unsigned long long)e->buf, e->cls);
      return 1;
    }
    ceSendWorks += !e->copy && e->cls == CHR_WORK_CLASS_P2P && e->isSend;
    ceRecvWorks += !e->copy && e->cls == CHR_WORK_CLASS_P2P && !e->isSend;
    ceBcastSends += !e->copy && !e->ar && e->cls == CHR_WORK_CLASS_COLL && e->isSend;
    ceBcastRecvs += !e->copy && !e->ar && e->cls == CHR_WORK_CLASS_COLL && !e->isSend;
    ceBcastCopies += e->copy;
    ceArSends += e->ar && e->isSend;
    ceArRecvs += e->ar && !e->isSend;
  }
  int mixed = 0, total = 0;
  for (int ch = 0; ch < CHR_DEV_MAX_CHANNELS; ch++) total += p->nP2p[ch];
  for (int i = nWant; i < total; i++) {
    const struct chrWork* w = &p->p2p[i];
    if (isEngineP2pWork(w)) {
      fprintf(stderr, "FAIL %s: rank %d: engine work (%s rank %d, class %d, %llu bytes) past the %d expected first on "
              "channel 0%s\n", name, rank, w->pattern == CHR_PAT_P2P_SEND ? "to" : "from", w->links[0].peer,
              w->links[0].conn, (unsigned long long)(w->len * w->typeSize), nWant, capturing ? " (capturing)" : "");
      return 1;
    }
    if (w->pattern != CHR_PAT_P2P_SEND && w->pattern != CHR_PAT_P2P_RECV) {
      if (w->pattern != CHR_PAT_LOCAL) {
        fprintf(stderr, "FAIL %s: rank %d: pattern %d in the point-to-point launch\n", name, rank, w->pattern);
        return 1;
      }
      continue;
    }
    for (int j = 0; j < nWant && !mixed; j++)
      mixed = !want[j].copy && want[j].cls == CHR_WORK_CLASS_P2P && p->p2p[j].pattern == w->pattern &&
              p->p2p[j].links[0].peer == w->links[0].peer;
  }
  /* The collectives' launch, work for work: on each channel the works of every collective but the
   * engine broadcasts, in call order, their calls numbered 0.. without gaps (both ranks leave out the
   * same calls, so the launcher cuts alike); each the task's planned work, but an engine all-reduce's,
   * which are its reduce-scatter works (ceArScatterWork), and nothing else. */
  int at[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], call = 0; /* channel ch's works: [at, end) */
  for (int ch = 0, sum = 0; ch < CHR_DEV_MAX_CHANNELS; ch++) {
    at[ch] = sum;
    sum += ch < p->collChannels ? p->nColl[ch] : 0;
    end[ch] = sum;
  }
  long scatterWorks = 0, arTasks = 0, kept = 0;
  for (const struct chrCollTask* t = head; t; t = t->next) {
    if (t->func == ncclFuncSend || t->func == ncclFuncRecv || wantsEngineBcast(t, capturing)) continue;
    const int ar = wantsEngineAllReduce(t, capturing);
    arTasks += ar;
    kept += !ar && !capturing && t->func == ncclFuncAllReduce && ceArMin > 0 &&
            (uint64_t)t->count * (uint64_t)t->typeSize >= ceArMin;
    for (int c = 0; c < t->nChannels; c++) {
      struct chrWork want = ar ? ceArScatterWork(t, rank, c) : t->works[c];
      if (want.pattern == CHR_PAT_NONE || want.len == 0) continue;
      want.call = call;
      const int ch = t->chanBase + c;
      const struct chrWork* got = ch < CHR_DEV_MAX_CHANNELS && at[ch] < end[ch] ? &p->coll[at[ch]] : NULL;
      if (got == NULL || memcmp(got, &want, sizeof(want)) != 0) {
        fprintf(stderr, "FAIL %s: rank %d: channel %d of the collectives' launch: %s (pattern %d, call %d, [%llu, +%llu) "
                "of %llu, in 0x%llx, out 0x%llx), expected %s work (pattern %d, call %d, [%llu, +%llu) of %llu, in 0x%llx, "
                "out 0x%llx) of function %d%s\n", name, rank, ch, got ? "a work" : "no work", got ? got->pattern : -1,
                got ? got->call : -1, got ? (unsigned long long)got->start : 0ull, got ? (unsigned long long)got->len : 0ull,
                got ? (unsigned long long)got->count : 0ull, got ? (unsigned long long)got->sendbuff : 0ull,
                got ? (unsigned long long)got->recvbuff : 0ull, ar ? "an engine all-reduce's reduce-scatter" : "the planned",
                want.pattern, want.call, (unsigned long long)want.start, (unsigned long long)want.len,
                (unsigned long long)want.count, (unsigned long long)want.sendbuff, (unsigned long long)want.recvbuff,
                (int)t->func, capturing ? " (capturing)" : "");
        return 1;
      }
      at[ch]++;
      scatterWorks += ar;
    }
    call++;
  }
  for (int ch = 0; ch < p->collChannels; ch++)
    if (at[ch] != end[ch]) {
      fprintf(stderr, "FAIL %s: rank %d: channel %d of the collectives' launch holds %d works past the %d expected%s\n",
              name, rank, ch, end[ch] - at[ch], at[ch] - (end[ch] - p->nColl[ch]), capturing ? " (capturing)" : "");
      return 1;
    }
  ceMixedPlans += mixed;
  ceArScatterWorks += scatterWorks;
  ceArTasks += arTasks;
  ceArKept += kept;
  return 0;
}

/* Transfer classes across groups (CHORUS_GPU_CE_MIN_BYTES of 1 MiB or less, 2 ranks). NCCL orders a
 * rank's collectives among themselves and its point-to-point calls among themselves, not the two
 * together: rank 0 runs group A {send 1 MiB to 1} then group B {broadcast 1 MiB from 0}, rank 1 one
 * group {broadcast from 0, receive 1 MiB from 0}. The device library numbers each rank's engine
 * transfers over the comm's life (per peer, direction and class), so each rank's launches run
 * through the simulation as one plan, works after works (all on channel 0: every transfer is on the
 * engine). With the broadcast's transfer in class 1 the send meets the receive and the broadcast its
 * own; in one class with the send (every conn forced to 0 here, as a planner that forgot the class
 * would make them), rank 1's broadcast output gets the send's bytes, and the check must see it. */
static int ceScenarioRun(ncclComm_t* comms, const struct chrWork* const* works, const int* nWorks, char** bufs,
                         const struct chrSimRegion* regions, int oneClass, char* what, size_t whatLen) {
  enum { MIB = 1 << 20 };
  memset(bufs[0], 0x11, MIB); /* rank 0: the send's input */
  memset(bufs[1], 0x22, MIB); /* rank 0: the broadcast's input */
  memset(bufs[2], NC_POISON, MIB); /* rank 0: the broadcast's output */
  memset(bufs[3], NC_POISON, MIB); /* rank 1: the broadcast's output */
  memset(bufs[4], NC_POISON, MIB); /* rank 1: the receive's output */
  struct chrWork* copy[2] = {NULL, NULL};
  struct chrSimRank ranks[2];
  int ok = 1;
  for (int r = 0; r < 2; r++) {
    copy[r] = malloc(sizeof(struct chrWork) * (size_t)(nWorks[r] ? nWorks[r] : 1));
    if (copy[r] == NULL) ok = 0;
    else memcpy(copy[r], works[r], sizeof(struct chrWork) * (size_t)nWorks[r]);
    for (int i = 0; copy[r] && oneClass && i < nWorks[r]; i++)
      if (isEngineP2pWork(&copy[r][i])) copy[r][i].links[0].conn = CHR_WORK_CLASS_P2P;
    ranks[r] = (struct chrSimRank){copy[r], &nWorks[r], 1, NULL};
  }
  char err[512] = "";
  int res = -1;
  if (ok) res = chrSimRun(2, comms[0]->ringOrder, ranks, regions, 5, err, sizeof(err));
  free(copy[0]);
  free(copy[1]);
  if (!ok) {
    snprintf(what, whatLen, "out of memory");
    return -1;
  }
  if (res != 0) {
    snprintf(what, whatLen, "simulation: %s", err);
    return 1;
  }
  static const struct { int buf; unsigned char want; const char* name; } outs[3] = {
      {2, 0x22, "rank 0's broadcast output"}, {3, 0x22, "rank 1's broadcast output"}, {4, 0x11, "rank 1's receive output"}};
  for (int o = 0; o < 3; o++)
    for (size_t i = 0; i < MIB; i++)
      if ((unsigned char)bufs[outs[o].buf][i] != outs[o].want) {
        snprintf(what, whatLen, "%s holds 0x%02x at byte %zu, expected 0x%02x (the %s's bytes)", outs[o].name,
                 (unsigned char)bufs[outs[o].buf][i], i, outs[o].want, outs[o].want == 0x22 ? "broadcast" : "send");
        return 1;
      }
  return 0;
}

static int checkClassScenario(ncclComm_t* comms) {
  enum { MIB = 1 << 20 };
  char* bufs[5];
  struct chrSimRegion regions[5];
  for (int i = 0; i < 5; i++) {
    bufs[i] = malloc(MIB);
    if (bufs[i] == NULL) return 1;
    regions[i] = (struct chrSimRegion){(uint64_t)(uintptr_t)bufs[i], bufs[i], MIB};
  }
  const size_t count = MIB / 4; /* float32 */
  struct chrCollTask a0, b0, b1, r1;
  struct chrCollTask* all[4] = {&a0, &b0, &b1, &r1};
  const struct {
    ncclComm_t comm;
    ncclFunc_t func;
    const void* send;
    void* recv;
    int root;
  } spec[4] = {{comms[0], ncclFuncSend, bufs[0], NULL, 1},       /* rank 0, group A */
               {comms[0], ncclFuncBroadcast, bufs[1], bufs[2], 0}, /* rank 0, group B */
               {comms[1], ncclFuncBroadcast, bufs[3], bufs[3], 0}, /* rank 1, group A': broadcast, then */
               {comms[1], ncclFuncRecv, NULL, bufs[4], 0}};        /* the receive */
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    struct chrCollTask* t = all[i];
    memset(t, 0, sizeof(*t));
    t->comm = spec[i].comm;
    t->func = spec[i].func;
    t->sendbuff = spec[i].send;
    t->recvbuff = spec[i].recv;
    t->count = count;
    t->type = ncclFloat32;
    t->typeSize = 4;
    t->userOp = ncclSum;
    t->root = spec[i].root;
    t->onDevice = 1;
    if (!bad && chrPlanTask(t) != ncclSuccess) {
      fprintf(stderr, "FAIL ce classes: planning: %s\n", ncclGetLastError(NULL));
      bad = 1;
    }
  }
  b1.next = &r1;
  struct chrCollTask* groups[3] = {&a0, &b0, &b1}; /* rank 0: A, B; rank 1: A' */
  struct chrDevLaunchPlan plans[3];
  int built = 0;
  for (int g = 0; g < 3 && !bad; g++, built++)
    if (chrDevBuildLaunch(groups[g]->comm, groups[g], 0, &plans[g]) != ncclSuccess) {
      fprintf(stderr, "FAIL ce classes: launch of group %d: %s\n", g, ncclGetLastError(NULL));
      bad = 1;
    }
  /* Every work on the engine, on channel 0 of the point-to-point launch; no collective works. */
  for (int g = 0; g < built && !bad; g++) {
    const int rank = groups[g]->comm->rank;
    int lead = 0;
    if (checkEngineP2p("ce classes", rank, groups[g], &plans[g], 0, &lead)) bad = 1;
    else if (plans[g].collChannels != 0 || plans[g].p2pChannels != 1 || plans[g].nP2p[0] != lead) {
      fprintf(stderr, "FAIL ce classes: group %d of rank %d: %d collective channels, %d point-to-point channels, %d works "
              "on channel 0, %d of them engine works (all expected there)\n", g, rank, plans[g].collChannels,
              plans[g].p2pChannels, plans[g].nP2p[0], lead);
      bad = 1;
    }
  }
  struct chrWork* rank0 = NULL;
  if (!bad) {
    const int n0 = plans[0].nP2p[0] + plans[1].nP2p[0];
    rank0 = malloc(sizeof(struct chrWork) * (size_t)n0);
    if (rank0 == NULL) bad = 1;
    else {
      memcpy(rank0, plans[0].p2p, sizeof(struct chrWork) * (size_t)plans[0].nP2p[0]);
      memcpy(rank0 + plans[0].nP2p[0], plans[1].p2p, sizeof(struct chrWork) * (size_t)plans[1].nP2p[0]);
      const struct chrWork* works[2] = {rank0, plans[2].p2p};
      const int nWorks[2] = {n0, plans[2].nP2p[0]};
      char what[512];
      if (ceScenarioRun(comms, works, nWorks, bufs, regions, 0, what, sizeof(what)) != 0) {
        fprintf(stderr, "FAIL ce classes: rank 0 {send to 1}, {broadcast from 0}; rank 1 {broadcast from 0, receive from "
                "0}: %s\n", what);
        bad = 1;
      } else if (ceScenarioRun(comms, works, nWorks, bufs, regions, 1, what, sizeof(what)) != 1) {
        fprintf(stderr, "FAIL ce classes: with the broadcast's transfers in the send's class, the scenario still passed "
                "(the check cannot see a broadcast paired with a send)\n");
        bad = 1;
      } else {
        ceClassScenarios++;
      }
    }
  }
  free(rank0);
  for (int g = 0; g < built; g++) chrDevFreeLaunch(&plans[g]);
  for (int i = 0; i < 4; i++) free(all[i]->works);
  for (int i = 0; i < 5; i++) free(bufs[i]);
  return bad;
}

static int runCase(int n, ncclComm_t* comms, char** sendA, char** recvA, uint64_t* scalars, const struct ncCase* c) {
  struct chrDevLaunchPlan plans[MAX_RANKS];
  ncclRedOp_t redops[MAX_RANKS][NC_MAX_OPS];
  for (int r = 0; r < n; r++) {
    nTasks[r] = 0;
    for (int k = 0; k < c->nOps; k++) {
      const struct ncOp* o = &c->ops[k];
      struct ncLayout l;
      ncLayoutOf(o, n, r, &l);
      memset(recvA[r] + l.regionOff, NC_POISON, l.regionBytes);
      ncFillInput(o, n, r, (l.inRecvArena ? recvA[r] : sendA[r]) + l.inOff, l.inElems);
      static const ncclRedOp_t builtin[OP_PREMUL_HOST] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
      ncclRedOp_t op = ncclSum;
      redops[r][k] = ncclNumOps;
      int reduces = o->func == F_ALLREDUCE || o->func == F_REDUCESCATTER || o->func == F_REDUCE;
      if (o->op < OP_PREMUL_HOST) op = builtin[o->op];
      else if (reduces) {
        scalars[r * NC_MAX_OPS + k] = ncScalarBits(o->type);
        if (ncclRedOpCreatePreMulSum(&op, &scalars[r * NC_MAX_OPS + k], (ncclDataType_t)o->type,
                                     o->op == OP_PREMUL_HOST ? ncclScalarHostImmediate : ncclScalarDevice,
                                     comms[r]) != ncclSuccess) {
          fprintf(stderr, "FAIL: ncclRedOpCreatePreMulSum: %s\n", ncclGetLastError(NULL));
          return 1;
        }
        redops[r][k] = op;
      }
      char* in = (l.inRecvArena ? recvA[r] : sendA[r]) + l.inOff;
      char* out = recvA[r] + l.outOff;
      size_t cnt = o->count, block = cnt * (size_t)ncTypeSize(o->type);
      switch (o->func) {
        case F_ALLREDUCE: addTask(r, comms[r], ncclFuncAllReduce, in, out, cnt, o->type, op, -1); break;
        case F_REDUCESCATTER: addTask(r, comms[r], ncclFuncReduceScatter, in, out, cnt, o->type, op, -1); break;
        case F_ALLGATHER: addTask(r, comms[r], ncclFuncAllGather, in, out, cnt, o->type, ncclSum, -1); break;
        case F_BROADCAST:
          addTask(r, comms[r], ncclFuncBroadcast, r == o->root ? in : out, out, cnt, o->type, ncclSum, o->root);
          break;
        case F_REDUCE: addTask(r, comms[r], ncclFuncReduce, in, out, cnt, o->type, op, o->root); break;
        case F_RING:
          addTask(r, comms[r], ncclFuncRecv, NULL, out, cnt, o->type, ncclSum, (r - 1 + n) % n);
          addTask(r, comms[r], ncclFuncSend, in, NULL, cnt, o->type, ncclSum, (r + 1) % n);
          break;
        case F_PAIRS: {
          int order[2 * MAX_RANKS];
          ncPairsOrder(o, n, r, order);
          for (int i = 0; i < 2 * n; i++) {
            int peer = order[i] % n;
            if (order[i] < n) addTask(r, comms[r], ncclFuncSend, in + (size_t)peer * block, NULL, cnt, o->type, ncclSum, peer);
            else addTask(r, comms[r], ncclFuncRecv, NULL, out + (size_t)peer * block, cnt, o->type, ncclSum, peer);
          }
          break;
        }
        default: /* all-to-all, as the API issues it */
          for (int peer = 0; peer < n; peer++) {
            addTask(r, comms[r], ncclFuncSend, in + (size_t)peer * block, NULL, cnt, o->type, ncclSum, peer);
            addTask(r, comms[r], ncclFuncRecv, NULL, out + (size_t)peer * block, cnt, o->type, ncclSum, peer);
          }
          break;
      }
    }
    /* Calls that move nothing are dropped before planning (dev_exec.c: no-ops). */
    struct chrCollTask* head = NULL;
    for (int i = nTasks[r] - 1; i >= 0; i--)
      if (tasks[r][i].count > 0) {
        tasks[r][i].next = head;
        head = &tasks[r][i];
      }
    for (struct chrCollTask* t = head; t; t = t->next)
      if (chrPlanTask(t) != ncclSuccess) {
        fprintf(stderr, "FAIL %s: rank %d: planning: %s\n", c->name, r, ncclGetLastError(NULL));
        return 1;
      } else if (checkTuned(c->name, r, t) || checkDefaultRule(c->name, r, t)) {
        return 1;
      }
    if (chrDevBuildLaunch(comms[r], head, 0, &plans[r]) != ncclSuccess) {
      fprintf(stderr, "FAIL %s: rank %d: launch: %s\n", c->name, r, ncclGetLastError(NULL));
      return 1;
    }
    int lead = 0; /* engine works leading channel 0 */
    if (checkEngineP2p(c->name, r, head, &plans[r], 0, &lead)) return 1;
    if (ceMin > 0 || ceArMin > 0) { /* the same calls captured into a graph: every transfer on the kernels */
      struct chrDevLaunchPlan captured;
      if (chrDevBuildLaunch(comms[r], head, 1, &captured) != ncclSuccess) {
        fprintf(stderr, "FAIL %s: rank %d: launch (capturing): %s\n", c->name, r, ncclGetLastError(NULL));
        return 1;
      }
      int capturedLead = 0;
      const int bad = checkEngineP2p(c->name, r, head, &captured, 1, &capturedLead);
      chrDevFreeLaunch(&captured);
      if (bad) return 1;
      ceCapturedPlans++;
    }
    int launches = 0, total = 0;
    for (int ch = 0; ch < plans[r].collChannels; ch++) total += plans[r].nColl[ch];
    free(collLaunch[r]);
    collLaunch[r] = calloc((size_t)(total ? total : 1), sizeof(int));
    if (collLaunch[r] == NULL) return 1;
    if (checkLaunchCuts(c->name, r, &plans[r], &launches, collLaunch[r])) return 1;
    if (launches > 1) splitPlans++;
    for (int ch = 0, at = 0; ch < CHR_DEV_MAX_CHANNELS; at += plans[r].nP2p[ch], ch++)
      for (int i = ch == 0 ? lead : at; i < at + plans[r].nP2p[ch]; i++) { /* the broadcasts' engine copies left out */
        const struct chrWork* wk = &plans[r].p2p[i];
        selfCopyWorks += wk->pattern == CHR_PAT_LOCAL;
        engineWorks += wk->pattern == CHR_PAT_LOCAL && (wk->flags & CHR_WORK_ENGINE);
      }
    /* What the launcher checks: ring works within the group's channels, steps within the slots. */
    for (int i = 0; i < nTasks[r]; i++) {
      const struct chrCollTask* t = &tasks[r][i];
      for (int w = 0; t->count > 0 && w < t->nChannels; w++) {
        const struct chrWork* wk = &t->works[w];
        const int isTree = wk->pattern == CHR_PAT_TREE_ROOT || wk->pattern == CHR_PAT_TREE_UP || wk->pattern == CHR_PAT_TREE_DOWN;
        treeWorks += isTree;
        pairWorks += wk->pattern == CHR_PAT_PAIR_ALLREDUCE;
        simplePairWorks += wk->pattern == CHR_PAT_PAIR_ALLREDUCE && wk->proto == CHR_PROTO_SIMPLE;
        /* LL always; SIMPLE up to CHORUS_GPU_PAIR_MAX_BYTES (read from the environment, not the library) */
        const int simplePairOk = pairMaxEnv && (uint64_t)t->count * (uint64_t)t->typeSize <= strtoull(pairMaxEnv, NULL, 0);
        if (wk->pattern == CHR_PAT_PAIR_ALLREDUCE && (n != 2 || (wk->proto != CHR_PROTO_LL && !simplePairOk))) {
          fprintf(stderr, "FAIL %s: rank %d: a pair all-reduce on %d ranks with protocol %d\n", c->name, r, n, wk->proto);
          return 1;
        }
        if (isTree && t->nChannels > widestTree) widestTree = t->nChannels;
        lanedWorks += (wk->pattern == CHR_PAT_P2P_SEND || wk->pattern == CHR_PAT_P2P_RECV) && wk->links[0].conn > 0;
        if (chrDevWorkIsCopy(wk) && wk->pattern != CHR_PAT_LOCAL && (wk->op != CHR_DEV_SUM || wk->opArg != 0)) {
          fprintf(stderr, "FAIL %s: rank %d: pattern %d only copies but carries op %d\n", c->name, r, wk->pattern, wk->op);
          return 1;
        }
        size_t cap = wk->proto == 0 ? 4096 * 8 : 512 * 1024;
        if (wk->len > 0 && wk->nLinks > 0 && (wk->chunkElems == 0 || wk->chunkElems * wk->typeSize > cap)) {
          fprintf(stderr, "FAIL %s: rank %d: steps of %llu elements do not fit the slot\n", c->name, r,
                  (unsigned long long)wk->chunkElems);
          return 1;
        }
      }
    }
  }
  struct chrSimRegion regions[3 * MAX_RANKS];
  for (int r = 0; r < n; r++) {
    regions[3 * r] = (struct chrSimRegion){(uint64_t)(uintptr_t)sendA[r], sendA[r], NC_ARENA};
    regions[3 * r + 1] = (struct chrSimRegion){(uint64_t)(uintptr_t)recvA[r], recvA[r], NC_ARENA};
    regions[3 * r + 2] = (struct chrSimRegion){(uint64_t)(uintptr_t)&scalars[r * NC_MAX_OPS], (char*)&scalars[r * NC_MAX_OPS],
                                               NC_MAX_OPS * sizeof(uint64_t)};
  }
  struct chrSimRank colls[MAX_RANKS], p2p[MAX_RANKS];
  for (int r = 0; r < n; r++) {
    /* The collectives as the launcher runs them: kernel after kernel, cut between calls. */
    colls[r] = (struct chrSimRank){plans[r].coll, plans[r].nColl, plans[r].collChannels, collLaunch[r]};
    p2p[r] = (struct chrSimRank){plans[r].p2p, plans[r].nP2p, plans[r].p2pChannels, NULL};
  }
  char err[512];
  int bad = 0;
  if (chrSimRun(n, comms[0]->ringOrder, colls, regions, 3 * n, err, sizeof(err)) != 0 ||
      chrSimRun(n, comms[0]->ringOrder, p2p, regions, 3 * n, err, sizeof(err)) != 0) {
    fprintf(stderr, "FAIL n=%d %s: simulation: %s\n", n, c->name, err);
    bad = 1;
  }
  for (int r = 0; r < n; r++) {
    for (int k = 0; k < c->nOps && !bad; k++) {
      struct ncLayout l;
      ncLayoutOf(&c->ops[k], n, r, &l);
      char msg[256];
      if (ncCheck(&c->ops[k], n, r, (unsigned char*)recvA[r] + l.regionOff, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "FAIL n=%d %s [op %d]: %s\n", n, c->name, k, msg);
        bad = 1;
      }
    }
    for (int k = 0; k < c->nOps; k++)
      if (redops[r][k] != ncclNumOps) ncclRedOpDestroy(redops[r][k], comms[r]);
    chrDevFreeLaunch(&plans[r]);
    for (int i = 0; i < nTasks[r]; i++) free(tasks[r][i].works);
  }
  return bad;
}

/* Host and device tasks of one comm in one group are refused; calls that move nothing join the
 * device tasks as no-ops; host-only lists are left alone. */
static int checkPartition(ncclComm_t comm) {
  struct chrCollTask a, b, z;
  memset(&a, 0, sizeof(a));
  a.comm = comm;
  a.count = 10;
  b = a;
  z = a;
  z.count = 0;
  a.onDevice = 1;
  struct chrCollTask* list = &a;
  a.next = &z;
  z.next = &b;
  b.next = NULL;
  struct chrCollTask* dev = NULL;
  if (chrDevPartition(&list, &dev) != ncclInvalidUsage) {
    fprintf(stderr, "FAIL: a group with host and device tasks of one comm was accepted\n");
    return 1;
  }
  b.onDevice = 1;
  list = &a;
  a.next = &z;
  z.next = &b;
  b.next = NULL;
  if (chrDevPartition(&list, &dev) != ncclSuccess || list != &a || dev != &a || !z.noop || a.next != &z ||
      z.next != &b) {
    fprintf(stderr, "FAIL: partition of device tasks and a no-op\n");
    return 1;
  }
  a.onDevice = b.onDevice = 0;
  z.noop = 0;
  list = &a;
  a.next = &z;
  z.next = &b;
  b.next = NULL;
  if (chrDevPartition(&list, &dev) != ncclSuccess || list != &a || dev != NULL || z.noop) {
    fprintf(stderr, "FAIL: partition of host tasks\n");
    return 1;
  }
  return 0;
}

/* More all-reduces for CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES: the public-API cases hold few SIMPLE
 * all-reduces of an even count (none in place, no average), so every op in and out of place in
 * several types at 3/4 Mi + 2 elements (SIMPLE on 2 ranks: 768 KiB and more; halves that do not
 * start on a 64-byte boundary), and groups that mix them with a broadcast (class 1 with them when
 * CHORUS_GPU_CE_MIN_BYTES is set too), a reduce-scatter, an odd all-reduce that keeps its works and
 * a send ring, on one stream and on two. *count cases, in static storage. */
static const struct ncCase* ceArCases(int n, int* count) {
  enum { MAX_CE_AR_CASES = 96 };
  static struct ncCase cases[MAX_CE_AR_CASES];
  const size_t MB = 1u << 20, big = 3 * MB / 4 + 2;
  static const int types[] = {ncclFloat32, ncclBfloat16, ncclFloat16, ncclInt32, ncclUint8, ncclFloat8e4m3};
  int k = 0;
  struct ncOp ops[NC_MAX_OPS];
  for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
    for (int o = 0; o < OP_COUNT; o++)
      for (int ip = 0; ip < 2 && k < MAX_CE_AR_CASES; ip++) {
        memset(ops, 0, sizeof(ops));
        ops[0] = (struct ncOp){.func = F_ALLREDUCE, .type = types[ti], .op = o, .inPlace = ip, .count = big,
                               .seed = 0xce000ull + (uint64_t)k * 131};
        ncMakeCase(&cases[k++], ops, 1, n);
      }
  for (int streams = 1; streams <= 2 && k < MAX_CE_AR_CASES; streams++) {
    memset(ops, 0, sizeof(ops));
    ops[0] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_SUM, .inPlace = 1, .count = big};
    ops[1] = (struct ncOp){.func = F_BROADCAST, .type = ncclFloat32, .root = n - 1, .count = MB / 4};
    ops[2] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclBfloat16, .op = OP_AVG, .count = big};
    ops[3] = (struct ncOp){.func = F_REDUCESCATTER, .type = ncclInt32, .op = OP_MAX, .count = MB / 8};
    ops[4] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_PREMUL_HOST, .inPlace = 1, .count = big + 1};
    ops[5] = (struct ncOp){.func = F_RING, .type = ncclInt32, .count = MB / 4};
    ops[6] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_MIN, .count = big};
    for (int i = 0; i < 7; i++) {
      ops[i].stream = streams == 2 ? i % 2 : 0;
      ops[i].seed = 0xce100ull + (uint64_t)k * 131 + (uint64_t)i;
    }
    ncMakeCase(&cases[k++], ops, 7, n);
  }
  *count = k;
  return cases;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  if (n < 1 || n > MAX_RANKS) return 2;
  pairMaxEnv = getenv("CHORUS_GPU_PAIR_MAX_BYTES");
  const char* ceEnv = getenv("CHORUS_GPU_CE_MIN_BYTES");
  ceMin = ceEnv ? strtoull(ceEnv, NULL, 0) : 0;
  const char* ceArEnv = getenv("CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES");
  ceArMin = ceArEnv ? strtoull(ceArEnv, NULL, 0) : 0;
  ncclComm_t comms[MAX_RANKS];
  /* Every rank on device 0, as on the one-GPU machine: the device shape (channels from the SM count)
   * must be the same for all ranks, which it is only when they share one device. */
  int devs[MAX_RANKS] = {0};
  if (ncclCommInitAll(comms, n, devs) != ncclSuccess) {
    fprintf(stderr, "FAIL: ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  char* sendA[MAX_RANKS];
  char* recvA[MAX_RANKS];
  static uint64_t scalars[MAX_RANKS * NC_MAX_OPS];
  for (int r = 0; r < n; r++) {
    sendA[r] = malloc(NC_ARENA);
    recvA[r] = malloc(NC_ARENA);
    if (!sendA[r] || !recvA[r]) return 1;
  }
  failures += checkPartition(comms[0]);
  int count = 0;
  const struct ncCase* cases = ncCases(n, 0, &count);
  for (int i = 0; i < count && failures < 10; i++) failures += runCase(n, comms, sendA, recvA, scalars, &cases[i]);
  if (ceArMin > 0) {
    int nAr = 0;
    const struct ncCase* arCases = ceArCases(n, &nAr);
    for (int i = 0; i < nAr && failures < 10; i++) failures += runCase(n, comms, sendA, recvA, scalars, &arCases[i]);
    count += nAr;
  }
  if (n == 2 && ceMin > 0 && ceMin <= (1u << 20)) failures += checkClassScenario(comms);
  for (int r = 0; r < n; r++) {
    ncclCommDestroy(comms[r]);
    free(sendA[r]);
    free(collLaunch[r]);
    free(recvA[r]);
  }
  /* The paths this test is run for must have been taken: sends over several lanes (the cases hold
   * sends of MBs), and the tree when NCCL_ALGO leaves the all-reduce only the tree. */
  const char* algo = getenv("NCCL_ALGO");
  if (lanedWorks == 0) {
    fprintf(stderr, "FAIL: no send or receive was planned over more than one lane\n");
    failures++;
  }
  if (algo && strstr(algo, "tree") && treeWorks == 0) {
    fprintf(stderr, "FAIL: NCCL_ALGO=%s but no all-reduce was planned on the tree\n", algo);
    failures++;
  }
  /* The all-reduces of MBs fill several copies of the tree (more lanes than one copy's four). */
  if (algo && strstr(algo, "tree") && widestTree <= 4) {
    fprintf(stderr, "FAIL: NCCL_ALGO=%s but no tree all-reduce ran on more than one copy (widest: %d lanes)\n", algo,
            widestTree);
    failures++;
  }
  /* Default settings on 3+ ranks: the small all-reduces take the tree (CHORUS_GPU_TREE_MAX_BYTES). */
  const char* treeMax = getenv("CHORUS_GPU_TREE_MAX_BYTES");
  if (n >= 3 && !algo && !getenv("NCCL_TUNER_PLUGIN") && !(treeMax && atoi(treeMax) == 0) && treeWorks == 0) {
    fprintf(stderr, "FAIL: no small all-reduce on %d ranks was planned on the tree\n", n);
    failures++;
  }
  /* Default settings on 2 ranks: the small all-reduces exchange once (LL). */
  const char* proto = getenv("NCCL_PROTO");
  if (n == 2 && !algo && !proto && !getenv("NCCL_TUNER_PLUGIN") && pairWorks == 0) {
    fprintf(stderr, "FAIL: no small all-reduce on 2 ranks was planned as one exchange\n");
    failures++;
  }
  if (n == 2 && !algo && !proto && pairMaxEnv && strtoull(pairMaxEnv, NULL, 0) >= (1u << 30) && simplePairWorks == 0) {
    fprintf(stderr, "FAIL: CHORUS_GPU_PAIR_MAX_BYTES=%s, but no SIMPLE all-reduce was planned as one exchange\n", pairMaxEnv);
    failures++;
  }
  const int expectsTuning = getenv("CHORUS_TEST_EXPECT_ALGO") || getenv("CHORUS_TEST_EXPECT_PROTO") ||
                            getenv("CHORUS_TEST_EXPECT_CHANNELS") || getenv("CHORUS_TEST_EXPECT_CHUNK");
  if (expectsTuning && tunedTasks == 0) {
    fprintf(stderr, "FAIL: a tuner's choice was expected, but no collective was checked against it\n");
    failures++;
  }
  const char* selfCopy = getenv("CHORUS_GPU_SELF_COPY");
  if (n > 1 && selfCopyWorks == 0 && !(selfCopy && atoi(selfCopy) == 0)) {
    fprintf(stderr, "FAIL: no send to self became a local copy (the cases hold all-to-alls)\n");
    failures++;
  }
  /* CHORUS_GPU_SELF_COPY_ENGINE=1 (one byte): every copy to itself is one copy-engine work. */
  const char* engine = getenv("CHORUS_GPU_SELF_COPY_ENGINE");
  if (engine && atoll(engine) == 1 && (engineWorks == 0 || engineWorks != selfCopyWorks)) {
    fprintf(stderr, "FAIL: %ld of %ld local copies to self are copy-engine works, expected all\n", engineWorks,
            selfCopyWorks);
    failures++;
  }
  /* CHORUS_GPU_CE_MIN_BYTES: the cases hold sends to other ranks of up to MBs, so some must have gone
   * to the copy engine, every send with its receive, and plans made as under capture were checked
   * (none had any); above one byte (gpu.apiplan.cesend.mixed.*), some group must have sent to one
   * peer both through the engine and through the lanes (a small all-to-all and a large ring in one
   * group). */
  if (ceMin > 0 && n > 1 && (ceSendWorks == 0 || ceSendWorks != ceRecvWorks || ceCapturedPlans == 0)) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu, but %ld engine sends and %ld engine receives were planned (%ld "
            "plans checked as captured)\n", (unsigned long long)ceMin, ceSendWorks, ceRecvWorks, ceCapturedPlans);
    failures++;
  }
  /* ... and on 2 ranks the broadcasts too (the cases hold broadcasts of up to MBs, in and out of
   * place), each send with its receive; on more ranks none. With 1 MiB or less, the scenario of
   * sends and broadcasts interleaved differently across groups ran (checkClassScenario). */
  if (ceMin > 0 && n == 2 && (ceBcastSends == 0 || ceBcastSends != ceBcastRecvs || ceBcastCopies == 0)) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu on 2 ranks, but %ld broadcast engine sends, %ld broadcast engine "
            "receives and %ld root copies were planned\n", (unsigned long long)ceMin, ceBcastSends, ceBcastRecvs,
            ceBcastCopies);
    failures++;
  }
  if (n != 2 && ceBcastSends + ceBcastRecvs + ceBcastCopies != 0) {
    fprintf(stderr, "FAIL: %ld broadcast engine works planned on %d ranks (2 only)\n",
            ceBcastSends + ceBcastRecvs + ceBcastCopies, n);
    failures++;
  }
  if (ceMin > 0 && ceMin <= (1u << 20) && n == 2 && ceClassScenarios != 1) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu on 2 ranks, but the transfer-class scenario did not pass\n",
            (unsigned long long)ceMin);
    failures++;
  }
  if (ceMin > 1 && n > 1 && ceMixedPlans == 0) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu, but no plan had an engine work and a lane transfer to one peer\n",
            (unsigned long long)ceMin);
    failures++;
  }
  /* CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES on 2 ranks: the cases hold SIMPLE all-reduces of MBs, so some
   * must have become a reduce-scatter and an engine all-gather (each send with its receive, checked
   * as captured too); on more ranks none. */
  if (ceArMin > 0 && n == 2 &&
      (ceArTasks == 0 || ceArScatterWorks == 0 || ceArSends != ceArTasks || ceArRecvs != ceArTasks || ceCapturedPlans == 0)) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES=%llu on 2 ranks, but %ld all-reduces were planned on the "
            "engine (%ld reduce-scatter works, %ld engine sends, %ld engine receives; %ld plans checked as captured)\n",
            (unsigned long long)ceArMin, ceArTasks, ceArScatterWorks, ceArSends, ceArRecvs, ceCapturedPlans);
    failures++;
  }
  if (n != 2 && ceArTasks + ceArScatterWorks + ceArSends + ceArRecvs != 0) {
    fprintf(stderr, "FAIL: %ld engine all-reduces planned on %d ranks (2 only)\n", ceArTasks, n);
    failures++;
  }
  if (splitPlans == 0) {
    fprintf(stderr, "FAIL: no plan needed several launches (the cases mix reductions in one group)\n");
    failures++;
  }
  if (failures == 0)
    printf("gpu.apiplan n=%d: %d cases planned, launched and simulated (%ld tree works, widest tree %d lanes, %ld pair "
           "all-reduce works (%ld SIMPLE), %ld works on p2p lanes > 0, %ld local copies to self (%ld on the copy engine), "
           "%ld rank plans in several launches, %ld collectives checked against the default rule, %ld engine sends and "
           "%ld engine receives, %ld plans with both an engine work and a lane transfer to one peer, engine broadcasts: "
           "%ld sends, %ld receives, %ld root copies, %ld transfer-class scenarios; engine all-reduces: %ld (%ld reduce-scatter "
           "works, %ld sends, %ld receives), %ld all-reduces of that size kept)\n", n, count, treeWorks, widestTree,
           pairWorks, simplePairWorks, lanedWorks, selfCopyWorks, engineWorks, splitPlans, ruleTasks, ceSendWorks,
           ceRecvWorks, ceMixedPlans, ceBcastSends, ceBcastRecvs, ceBcastCopies, ceClassScenarios, ceArTasks,
           ceArScatterWorks, ceArSends, ceArRecvs, ceArKept);
  return failures ? 1 : 0;
}
