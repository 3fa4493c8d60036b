/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_apiplan.c (gpu.apiplan.n<N>, runs anywhere): the core's side of the GPU path without a GPU.
 * For every case of the public-API GPU test (nccl_cases.c), each rank's calls become tasks as the API
 * layer makes them (device buffers), the device planner plans them (plan/plan_dev.c), the launch
 * builder makes the launches (exec/dev_launch.c: collectives by channel; a send or receive over lanes, lane k's
 * sends on channel 2k and receives on 2k + 1, in round order), and the plans of all ranks run through the reference simulation
 * (gpu_sim.c: 8-slot connections, channels strictly in order, deadlocks detected) on host memory;
 * the outputs must match the test's reference. Also: the partition of a group's tasks into host and
 * device tasks. CHORUS_TEST_NET=1 (gpu.apiplan.net.*): the comms are marked as spanning hosts
 * (comm->devNet), so the plans take the shape of ranks connected through the net proxy (2 channels,
 * one lane, 2 MiB ring slots) and must be SIMPLE everywhere, sends and receives included, with no
 * copy-engine work; the simulation checks their outputs as for any plan. The copy-engine checks (gpu.apiplan.cesend.*, gpu.apiplan.ceallreduce.*) are in
 * apiplan_engine.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/algo_select.h"
#include "device/kernels/dev_work.h"
#include "exec/dev_exec.h"
#include "exec/dev_launch.h"
#include "exec/reduce.h"
#include "apiplan_engine.h"
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
static long transferEngineWorks;   /* sends and receives between ranks on the copy engine */
static long pairWorks;             /* 2-rank all-reduces in one exchange (CHR_PAT_PAIR_ALLREDUCE) */
static long simplePairWorks;       /* ... of them SIMPLE (CHORUS_GPU_PAIR_MAX_BYTES) */
static const char* pairMaxEnv;     /* CHORUS_GPU_PAIR_MAX_BYTES as the test runs with it, or NULL */

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

/* CHORUS_TEST_NET: every task SIMPLE (the proxy carries no LL). */
static int netMode;
static long netTasks;

static int checkNet(const char* name, int rank, const struct chrCollTask* t) {
  if (!netMode || t->comm->nRanks == 1) return 0;
  if (t->proto != CHR_PROTO_SIMPLE) {
    fprintf(stderr, "FAIL %s: rank %d: func %d planned %s on a comm that spans hosts (SIMPLE only)\n", name, rank,
            (int)t->func, chrProtoName(t->proto));
    return 1;
  }
  netTasks++;
  return 0;
}

static int checkDefaultRule(const char* name, int rank, const struct chrCollTask* t) {
  static const char* const overrides[] = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_TUNER_PLUGIN", "CHORUS_GPU_LL_MAX_BYTES",
                                          "CHORUS_GPU_TREE_MAX_BYTES", "CHORUS_TEST_NET"};
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

/* The launcher's cuts (device/kernels/dev_work.h chrDevLaunchCut, as device/launch/launch.cu walks them): every
 * launch holds whole calls, and every call that reduces runs in the kernel of its type and op. A
 * call split over two launches can deadlock on the GPU (its tree down pass in the first launch waits
 * for its up pass in the second), which the simulation, running the plan as one, cannot see. */
static int checkLaunchCuts(const char* name, int rank, const struct chrDevLaunch* p, int* launches, int* workLaunch) {
  int base[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], launchOf[NC_MAX_OPS * 4];
  for (int i = 0; i < NC_MAX_OPS * 4; i++) launchOf[i] = -1;
  for (int c = 0, sum = 0; c < p->nChannels; c++) {
    base[c] = sum;
    sum += p->nWorks[c];
    end[c] = sum;
  }
  for (int launch = 0;; launch++) {
    int key = -1, took = 0, take[CHR_DEV_MAX_CHANNELS];
    chrDevLaunchNext(p->works, base, end, p->nChannels, take, &key);
    for (int c = 0; c < p->nChannels; c++)
      for (int stop = base[c] + take[c]; base[c] < stop; base[c]++, took++) {
        const struct chrWork* w = &p->works[base[c]];
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
  for (int c = 0; c < p->nChannels; c++)
    if (base[c] < end[c]) {
      fprintf(stderr, "FAIL %s: rank %d: channel %d has works no launch takes\n", name, rank, c);
      return 1;
    }
  return 0;
}

/* A launch planned under graph capture holds no copy-engine transfer (a host mailbox cannot be
 * replayed) and says it is captured, which the launcher trusts. */
static int checkCaptured(const char* name, int rank, const struct chrDevLaunchPlan* p) {
  if (p->p2p.nCeSends == 0 && p->coll.capturing && p->p2p.capturing) return 0;
  fprintf(stderr, "FAIL %s: rank %d: a launch planned under capture holds %d copy-engine transfers, capturing %d/%d\n",
          name, rank, p->p2p.nCeSends, p->coll.capturing, p->p2p.capturing);
  return 1;
}

static int* collLaunch[MAX_RANKS]; /* per rank: the kernel each collective work runs in */

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
      } else if (checkTuned(c->name, r, t) || checkDefaultRule(c->name, r, t) || checkNet(c->name, r, t)) {
        return 1;
      }
    if (chrDevBuildLaunch(comms[r], head, 0, &plans[r]) != ncclSuccess) {
      fprintf(stderr, "FAIL %s: rank %d: launch: %s\n", c->name, r, ncclGetLastError(NULL));
      return 1;
    }
    int bcastCopies = 0; /* the launch's first copies, the broadcasts' */
    if (apiEngineCheckPlan(c->name, r, head, &plans[r], 0, &bcastCopies)) return 1;
    if (apiEngineOn()) { /* the same calls captured into a graph: every transfer on the kernels */
      struct chrDevLaunchPlan captured;
      if (chrDevBuildLaunch(comms[r], head, 1, &captured) != ncclSuccess) {
        fprintf(stderr, "FAIL %s: rank %d: launch (capturing): %s\n", c->name, r, ncclGetLastError(NULL));
        return 1;
      }
      int capturedCopies = 0;
      const int bad = apiEngineCheckPlan(c->name, r, head, &captured, 1, &capturedCopies) ||
                      checkCaptured(c->name, r, &captured);
      chrDevFreeLaunch(&captured);
      if (bad) return 1;
    }
    int launches = 0, total = 0;
    for (int ch = 0; ch < plans[r].coll.nChannels; ch++) total += plans[r].coll.nWorks[ch];
    free(collLaunch[r]);
    collLaunch[r] = calloc((size_t)(total ? total : 1), sizeof(int));
    if (collLaunch[r] == NULL) return 1;
    if (checkLaunchCuts(c->name, r, &plans[r].coll, &launches, collLaunch[r])) return 1;
    if (launches > 1) splitPlans++;
    const struct chrDevLaunch* pl = &plans[r].p2p;
    transferEngineWorks += pl->nCeSends;
    selfCopyWorks += pl->nCopies - bcastCopies; /* the broadcasts' engine copies left out */
    engineWorks += pl->nCopies - bcastCopies;
    for (int ch = 0, at = 0; ch < pl->nChannels; at += pl->nWorks[ch], ch++)
      for (int i = at; i < at + pl->nWorks[ch]; i++) {
        selfCopyWorks += pl->works[i].pattern == CHR_PAT_LOCAL;
        if ((i - at < pl->nCut[ch]) != (pl->works[i].pattern == CHR_PAT_LOCAL)) {
          fprintf(stderr, "FAIL %s: rank %d: channel %d of the point-to-point launch: work %d (pattern %d), %d cut by call "
                  "(its copies to itself, ahead of its transfers)\n", c->name, r, ch, i - at, pl->works[i].pattern,
                  pl->nCut[ch]);
          return 1;
        }
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
        lanedWorks += chrWorkIsTransfer(wk) && wk->links[0].conn > 0;
        if (chrDevWorkIsCopy(wk) && wk->pattern != CHR_PAT_LOCAL && (wk->op != CHR_DEV_SUM || wk->opArg != 0)) {
          fprintf(stderr, "FAIL %s: rank %d: pattern %d only copies but carries op %d\n", c->name, r, wk->pattern, wk->op);
          return 1;
        }
        size_t cap = wk->proto == 0 ? 4096 * 8 : netMode ? 2048 * 1024 : 512 * 1024; /* across hosts: 2 MiB slots */
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
    colls[r] = (struct chrSimRank){plans[r].coll.works, plans[r].coll.nWorks, plans[r].coll.nChannels, collLaunch[r]};
  }
  char err[512];
  int bad = 0;
  static struct chrWork* p2pFlat[MAX_RANKS];
  static int p2pWorks[MAX_RANKS][CHR_DEV_MAX_CHANNELS];
  for (int r = 0; r < n && !bad; r++) {
    const int channels = chrSimFlattenLaunch(&plans[r].p2p, &p2pFlat[r], p2pWorks[r]);
    if (channels < 0) bad = 1;
    else p2p[r] = (struct chrSimRank){p2pFlat[r], p2pWorks[r], channels, NULL};
  }
  if (!bad && (chrSimRun(n, comms[0]->ringOrder, colls, regions, 3 * n, err, sizeof(err)) != 0 ||
               chrSimRun(n, comms[0]->ringOrder, p2p, regions, 3 * n, err, sizeof(err)) != 0)) {
    fprintf(stderr, "FAIL n=%d %s: simulation: %s\n", n, c->name, err);
    bad = 1;
  }
  for (int r = 0; r < n; r++) {
    free(p2pFlat[r]);
    p2pFlat[r] = NULL;
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

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  if (n < 1 || n > MAX_RANKS) return 2;
  pairMaxEnv = getenv("CHORUS_GPU_PAIR_MAX_BYTES");
  apiEngineInit();
  ncclComm_t comms[MAX_RANKS];
  /* Every rank on device 0, as on the one-GPU machine: the device shape (channels from the SM count)
   * must be the same for all ranks, which it is only when they share one device. */
  int devs[MAX_RANKS] = {0};
  if (ncclCommInitAll(comms, n, devs) != ncclSuccess) {
    fprintf(stderr, "FAIL: ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  netMode = getenv("CHORUS_TEST_NET") != NULL;
  for (int r = 0; r < n; r++) comms[r]->devNet = netMode;
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
  int nAr = 0;
  const struct ncCase* arCases = apiEngineAllReduceCases(n, &nAr);
  for (int i = 0; i < nAr && failures < 10; i++) failures += runCase(n, comms, sendA, recvA, scalars, &arCases[i]);
  count += nAr;
  failures += apiEngineClassScenario(comms, n);
  for (int r = 0; r < n; r++) {
    ncclCommDestroy(comms[r]);
    free(sendA[r]);
    free(collLaunch[r]);
    free(recvA[r]);
  }
  /* The paths this test is run for must have been taken: sends over several lanes (the cases hold
   * sends of MBs), and the tree when NCCL_ALGO leaves the all-reduce only the tree. */
  const char* algo = getenv("NCCL_ALGO");
  if (netMode && (netTasks == 0 || transferEngineWorks > 0)) {
    fprintf(stderr, "FAIL: CHORUS_TEST_NET: %ld tasks checked SIMPLE, %ld copy-engine transfers (none expected)\n",
            netTasks, transferEngineWorks);
    failures++;
  }
  if (lanedWorks == 0 && !netMode) { /* across hosts a comm has one lane */
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
  if (n >= 3 && !algo && !netMode && !getenv("NCCL_TUNER_PLUGIN") && !(treeMax && atoi(treeMax) == 0) &&
      treeWorks == 0) {
    fprintf(stderr, "FAIL: no small all-reduce on %d ranks was planned on the tree\n", n);
    failures++;
  }
  /* Default settings on 2 ranks: the small all-reduces exchange once (LL). */
  const char* proto = getenv("NCCL_PROTO");
  if (n == 2 && !algo && !proto && !netMode && !getenv("NCCL_TUNER_PLUGIN") && pairWorks == 0) {
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
  failures += apiEngineVerdict(n);
  if (splitPlans == 0) {
    fprintf(stderr, "FAIL: no plan needed several launches (the cases mix reductions in one group)\n");
    failures++;
  }
  if (failures == 0)
    printf("gpu.apiplan n=%d: %d cases planned, launched and simulated (%ld tree works, widest tree %d lanes, %ld pair "
           "all-reduce works (%ld SIMPLE), %ld works on p2p lanes > 0, %ld local copies to self (%ld on the copy engine), "
           "%ld rank plans in several launches, %ld collectives checked against the default rule, %s)\n", n, count,
           treeWorks, widestTree, pairWorks, simplePairWorks, lanedWorks, selfCopyWorks, engineWorks, splitPlans, ruleTasks,
           apiEngineSummary());
  return failures ? 1 : 0;
}
