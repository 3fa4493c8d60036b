/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tuner_loader.c: conformance tests of the tuner plugin loader, the v2..v5 adapters, the call
 * wrappers and the planner's use of a tuner, driven by the test tuners (testtuner_plugin.c). One
 * scenario per process; the ctest entry (tests/plugins/tuner.cmake) sets NCCL_TUNER_PLUGIN and the
 * rest of the environment.
 *
 *   test_tuner_loader abi <N>        round trip through a vN tuner, checking what it received
 *   test_tuner_loader open [checks]  one chrTunerOpen, then checks:
 *        net=1           open the net plugin (NCCL_NET_PLUGIN) first and hand it to the tuner loader
 *        rc=<int>        expected result (default 0)
 *        null=1          expect no tuner
 *        pick=<s>        name of the tuner expected     version=<N>  its ABI version
 *        again=1         open and close a second time (repeat failures must not WARN again)
 *        err=<s> log=<s> nolog=<s> warns=<N>   as in test_net_loader
 *   test_tuner_loader plan [knobs] [checks]   the planner on a fake 1-host communicator of rank 0:
 *        nranks=<N> (default 4)  func=<allreduce|allgather|...>  count=<elements, float>
 *        force=<ALGO/PROTO>  channels=<N>  forbid=1  fail=1  chunk=<bytes>  failchunk=1   the tuner's answer
 *        calls=<N>      plan the task N times (default 1)
 *        rc=<int>  expect=<ALGO/PROTO>  nch=<N>  chunkelems=<N>  nbytes=<N>
 *        usable=<ALGO/PROTO,...>   exactly these entries of the table the tuner saw were >= 0
 *        err=<s> log=<s> nolog=<s> warns=<N>
 *   test_tuner_loader describe out=<s> ...   chrTunerDescribe output contains each s
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commstate/comm.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "plan/cost_model.h"
#include "plan/plan.h"
#include "plugin/net_plugin.h"
#include "plugin/tuner_plugin.h"
#include "loader_check.h"
#include "testtuner_stats.h"

#define IDX(a, p) ((a) * NCCL_NUM_PROTOCOLS + (p))

/* ---- helpers ------------------------------------------------------------------------------------ */

static struct testTunerStats* statsOf(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  EXPECT(h != NULL, "plugin %s is not loaded: %s", path, dlerror());
  testTunerStatsFn fn = (testTunerStatsFn)dlsym(h, "testTunerStats");
  EXPECT(fn != NULL, "no testTunerStats in %s", path);
  dlclose(h); /* drops only the reference taken here */
  return fn();
}

static int parsePair(const char* s, int* algo, int* proto) {
  const char* slash = strchr(s, '/');
  if (slash == NULL) return -1;
  *algo = *proto = -1;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    if (strncasecmp(s, chrAlgoName(a), (size_t)(slash - s)) == 0 && chrAlgoName(a)[slash - s] == '\0') *algo = a;
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
    if (strcasecmp(slash + 1, chrProtoName(p)) == 0) *proto = p;
  return *algo >= 0 && *proto >= 0 ? 0 : -1;
}

/* ---- abi round trip ----------------------------------------------------------------------------- */

static void fillInfo(struct chrTunerCommInfo* info, uint64_t hash) {
  memset(info, 0, sizeof(*info));
  info->commHash = hash;
  info->nRanks = 8;
  info->nNodes = 2;
  info->nvlDomain = (ncclNvlDomainInfo_v6_t){2, 3, 5};
  info->constants.baseLatencies[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 0.5;
  info->constants.baseLatencies[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = NCCL_ALGO_PROTO_IGNORE;
  info->constants.hwLatencies[NCCL_HW_NET][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 10.0;
  info->constants.hwLatencies[NCCL_HW_NVLINK][NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 2.0;
  info->constants.perChMaxTreeBws[NCCL_HOPPER_COMPCAP_IDX][NCCL_TUNING_SCALE_1NODE] = 4.0;
  info->constants.perChMaxTreeBws[NCCL_HOPPER_COMPCAP_IDX][NCCL_TUNING_SCALE_2NODES] = 1.2;
}

/* A table as the planner makes it: -1 everywhere but a few entries. */
static void fillTable(float* t, int withCollnet) {
  for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++) t[i] = -1.0f;
  t[IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE)] = 20.0f;
  t[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)] = 30.0f;
  if (withCollnet) {
    t[IDX(NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE)] = 50.0f;
    t[IDX(NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE)] = 60.0f;
  }
}

static void checkArrived(struct testTunerStats* st, int v, const float* sent) {
  EXPECT(st->lastCollType == ncclFuncAllGather && st->lastNBytes == 12345 && st->lastNumPipeOps == 3,
         "getCollInfo got coll %d nBytes %lld numPipeOps %d", st->lastCollType, st->lastNBytes, st->lastNumPipeOps);
  EXPECT(st->lastNChannelsIn == 0, "nChannels entered as %d, not 0", st->lastNChannelsIn);
  EXPECT(st->lastRegBuff == (v >= 4 ? 1 : -1), "regBuff %d", st->lastRegBuff);
  if (v >= 3) {
    EXPECT(st->lastNumAlgo == 7 && st->lastNumProto == 3, "table %dx%d", st->lastNumAlgo, st->lastNumProto);
    for (int i = 0; i < 21; i++)
      EXPECT(st->lastTable[i] == sent[i], "table entry %d (algo %d proto %d) arrived as %g, sent %g", i, i / 3, i % 3,
             st->lastTable[i], sent[i]);
  } else {
    EXPECT(st->lastAlgoIn == -1 && st->lastProtoIn == -1, "v2 choice entered as %d/%d", st->lastAlgoIn,
           st->lastProtoIn);
  }
}

static int runAbi(int v) {
  struct chrTunerCommInfo info;
  fillInfo(&info, 0xabc123ull);
  struct chrTuner* t = NULL;
  OK(chrTunerOpen(&info, &t));
  EXPECT(t != NULL, "no tuner");
  char name[16];
  snprintf(name, sizeof(name), "testv%d", v);
  EXPECT(t->version == v && strcmp(t->name, name) == 0, "got %s v%d", t->name, t->version);
  struct testTunerStats* st = statsOf(t->path);
  EXPECT(st->version == v, "the stats belong to a v%d plugin", st->version);
  EXPECT(st->initCalls == 1 && st->lastNRanks == 8 && st->lastNNodes == 2 && st->loggerGiven,
         "init calls %d nRanks %lld nNodes %lld logger %d", st->initCalls, st->lastNRanks, st->lastNNodes,
         st->loggerGiven);
  if (v >= 5) {
    EXPECT(st->lastCommId == 0xabc123ull, "commId %llx", (unsigned long long)st->lastCommId);
    EXPECT(st->nvlDomains == 2 && st->nvlMin == 3 && st->nvlMax == 5, "nvl %d %d %d", st->nvlDomains, st->nvlMin,
           st->nvlMax);
    EXPECT(st->baseLatRingSimple == 0.5 && st->baseLatNvlsSimple == -1.0 && st->hwLatNetRingSimple == 10.0 &&
               st->hwLatNvlinkTreeSimple == 2.0 && st->treeBw1Node == 4.0 && st->treeBw2Nodes == 1.2,
           "constants garbled");
    EXPECT(info.constants.baseLatencies[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] == 1e6, "the plugin's edit was not seen");
  } else {
    EXPECT(st->lastCommId == 0, "v%d cannot get a commId", v);
  }
  EXPECT(chrTunerLibRefs(t) == 1, "refs %d", chrTunerLibRefs(t));

  /* 1: the plugin defers; the table and the channel count stay as they are. */
  float table[21], sent[21];
  fillTable(table, 1);
  memcpy(sent, table, sizeof(sent));
  int nch = 77;
  OK(chrTunerGetCollInfo(t, ncclFuncAllGather, 12345, 3, table, 7, 3, 1, &nch));
  checkArrived(st, v, sent);
  EXPECT(memcmp(table, sent, sizeof(table)) == 0 && nch == 0, "deferring changed the table or nChannels %d", nch);
  if (v == 2) EXPECT(st->lastCollNetSupport == 1 && st->lastNvlsSupport == 1, "v2 support flags %d %d",
                     st->lastCollNetSupport, st->lastNvlsSupport);

  /* 2: a choice: its entry becomes 0 (v2 through the adapter), the rest stays; channels pass. */
  fillTable(table, 0);
  memcpy(sent, table, sizeof(sent));
  st->forceAlgo = NCCL_ALGO_RING;
  st->forceProto = NCCL_PROTO_SIMPLE;
  st->setChannels = 3;
  OK(chrTunerGetCollInfo(t, ncclFuncAllGather, 12345, 3, table, 7, 3, 1, &nch));
  checkArrived(st, v, sent);
  if (v == 2) EXPECT(st->lastCollNetSupport == 0 && st->lastNvlsSupport == 0, "v2 support flags %d %d",
                     st->lastCollNetSupport, st->lastNvlsSupport);
  sent[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)] = 0.0f;
  EXPECT(memcmp(table, sent, sizeof(table)) == 0, "ring/simple %g, tree/simple %g",
         table[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)], table[IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE)]);
  EXPECT(nch == 3, "nChannels %d", nch);

  /* 3: a choice that cannot run (LL is -1). v2's adapter refuses it (one WARN), a table-editing
   * plugin writes it, and the planner refuses it (tested by the plan scenarios). */
  st->forceProto = NCCL_PROTO_LL;
  st->setChannels = 0;
  for (int round = 0; round < 2; round++) {
    fillTable(table, 0);
    memcpy(sent, table, sizeof(sent));
    OK(chrTunerGetCollInfo(t, ncclFuncAllGather, 12345, 3, table, 7, 3, 1, &nch));
    if (v != 2) sent[IDX(NCCL_ALGO_RING, NCCL_PROTO_LL)] = 0.0f;
    EXPECT(memcmp(table, sent, sizeof(table)) == 0, "round %d: ring/LL is %g", round,
           table[IDX(NCCL_ALGO_RING, NCCL_PROTO_LL)]);
  }
  st->forceAlgo = st->forceProto = -1;

  /* 4: an error is passed on with the last error set, and not logged by the wrapper. */
  st->failGetCollInfo = 1;
  EXPECT(chrTunerGetCollInfo(t, ncclFuncAllReduce, 8, 1, table, 7, 3, 0, &nch) == ncclInternalError,
         "the plugin's error was not passed on");
  EXPECT(strstr(chrThreadLastError(), "getCollInfo returned error 3"), "last error: %s", chrThreadLastError());
  st->failGetCollInfo = 0;
  EXPECT(chrTunerGetCollInfo(t, ncclFuncAllReduce, 8, 1, table, 6, 3, 0, &nch) == ncclInternalError,
         "a 6x3 table must be refused");

  /* 5: getChunkSize: v6 only. */
  size_t chunk = 65536;
  st->chunkOut = 8192;
  OK(chrTunerGetChunkSize(t, ncclFuncAllReduce, 4096, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, &chunk));
  if (v == 6) {
    EXPECT(chunk == 8192 && st->getChunkSizeCalls == 1, "chunk %zu calls %d", chunk, st->getChunkSizeCalls);
    EXPECT(st->chunkCollType == ncclFuncAllReduce && st->chunkNBytes == 4096 && st->chunkAlgo == NCCL_ALGO_RING &&
               st->chunkProto == NCCL_PROTO_SIMPLE && st->chunkNChannels == 2 && st->chunkIn == 65536,
           "getChunkSize got coll %d bytes %lld algo %d proto %d nch %d in %lld", st->chunkCollType, st->chunkNBytes,
           st->chunkAlgo, st->chunkProto, st->chunkNChannels, st->chunkIn);
  } else {
    EXPECT(chunk == 65536 && st->getChunkSizeCalls == 0, "v%d has no getChunkSize: chunk %zu", v, chunk);
  }

  /* A context per communicator, one library for all of them, every init finalized. */
  const char* path = t->path;
  struct chrTuner* second = NULL;
  fillInfo(&info, 0x2ull);
  OK(chrTunerOpen(&info, &second));
  EXPECT(second != NULL && second->ctx != t->ctx, "a second comm must get its own context");
  EXPECT(st->initCalls == 2 && st->liveContexts == 2 && chrTunerLibRefs(t) == 2, "init calls %d live %d refs %d",
         st->initCalls, st->liveContexts, chrTunerLibRefs(t));
  OK(chrTunerClose(t));
  EXPECT(chrTunerLibRefs(second) == 1, "refs after one close %d", chrTunerLibRefs(second));
  OK(chrTunerClose(second));
  EXPECT(st->finalizeCalls == 2 && st->liveContexts == 0 && st->badContexts == 0, "finalize %d live %d bad %d",
         st->finalizeCalls, st->liveContexts, st->badContexts);
  fillInfo(&info, 0x3ull);
  OK(chrTunerOpen(&info, &t));
  EXPECT(statsOf(t->path) == st && st->initCalls == 3, "the library was loaded again, or init calls %d",
         st->initCalls);
  OK(chrTunerClose(t));

  char* log = readLog();
  EXPECT(countLines(log, "TUNER/Plugin: loaded tuner plugin", name) == 1, "expected one INFO load line:\n%s", log);
  char abi[16];
  snprintf(abi, sizeof(abi), "(ABI v%d)", v);
  EXPECT(countLines(log, "TUNER/Plugin: loaded tuner plugin", abi) == 1, "load line without %s:\n%s", abi, log);
  EXPECT(countLines(log, "TUNER/Plugin: loaded tuner plugin", path) == 1, "load line without the path:\n%s", log);
  EXPECT(countLines(log, "uses tuner plugin", name) == 3, "expected one INFO line per comm:\n%s", log);
  /* The 6x3 table is the core's own mistake, reported where it is found; v2 adds its refusal. */
  EXPECT(countLines(log, "NCCL WARN", NULL) == (v == 2 ? 2 : 1), "unexpected WARN count:\n%s", log);
  EXPECT(countLines(log, "NCCL WARN", "cost table of 6x3") == 1, "the bad table was not reported:\n%s", log);
  if (v == 2) EXPECT(countLines(log, "NCCL WARN", "chose algorithm 1 (RING) protocol 0 (LL) for collective 2, which cannot run") == 1,
                     "the v2 refusal must be logged once:\n%s", log);
  free(log);
  return 0;
}

/* ---- open scenarios ----------------------------------------------------------------------------- */

static int runOpen(int argc, char** argv) {
  int wantRc = 0, wantNull = 0, again = 0, version = -1, useNet = 0;
  const char *pick = NULL, *v;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "rc"))) wantRc = atoi(v);
    else if ((v = argValue(argv[i], "pick"))) pick = v;
    else if ((v = argValue(argv[i], "version"))) version = atoi(v);
    else if ((v = argValue(argv[i], "null"))) wantNull = atoi(v);
    else if ((v = argValue(argv[i], "again"))) again = atoi(v);
    else if ((v = argValue(argv[i], "net"))) useNet = atoi(v);
  }
  struct chrNet* net = NULL;
  if (useNet) {
    OK(chrNetOpen(0x77ull, NULL, -1, &net));
    EXPECT(net != NULL, "no net plugin");
  }
  for (int round = 0; round < (again ? 2 : 1); round++) {
    struct chrTunerCommInfo info;
    fillInfo(&info, 0x77ull + (uint64_t)round);
    info.net = net;
    struct chrTuner* t = (struct chrTuner*)1;
    ncclResult_t rc = chrTunerOpen(&info, &t);
    EXPECT((int)rc == wantRc, "chrTunerOpen returned %d, expected %d (last error: %s)", (int)rc, wantRc,
           chrThreadLastError());
    EXPECT(rc == ncclSuccess || t == NULL, "a failed open left a tuner");
    if (rc != ncclSuccess) continue;
    if (wantNull) {
      EXPECT(t == NULL, "expected no tuner, got %s", t ? t->name : "");
      continue;
    }
    EXPECT(t != NULL, "no tuner");
    if (pick) EXPECT(strcmp(t->name, pick) == 0, "picked %s, expected %s", t->name, pick);
    if (version >= 0) EXPECT(t->version == version, "version %d, expected %d", t->version, version);
    OK(chrTunerClose(t));
  }
  if (net) OK(chrNetClose(net));
  checkLog(argc, argv);
  return 0;
}

/* ---- the planner with a tuner ------------------------------------------------------------------- */

static ncclFunc_t funcByName(const char* s) {
  static const char* names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  for (int f = 0; f < 5; f++)
    if (strcasecmp(s, names[f]) == 0) return (ncclFunc_t)f;
  EXPECT(0, "unknown func %s", s);
  return ncclFuncAllReduce;
}

/* Rank 0 of an nRanks communicator on one host, with what the planner reads. */
static struct ncclComm* fakeComm(int nRanks) {
  struct ncclComm* comm = calloc(1, sizeof(*comm));
  EXPECT(comm != NULL, "out of memory");
  comm->magic = CHR_COMM_MAGIC;
  comm->rank = 0;
  comm->nRanks = nRanks;
  comm->nNodes = 1;
  comm->commHash = 0x5eedull;
  comm->nodeOfRank = calloc((size_t)nRanks, sizeof(int));
  comm->ringOrder = calloc((size_t)nRanks, sizeof(int));
  EXPECT(comm->nodeOfRank && comm->ringOrder, "out of memory");
  for (int r = 0; r < nRanks; r++) comm->ringOrder[r] = r;
  comm->nChannels = 4;
  comm->minChannels = 1;
  OK(chrCostModelRead(&comm->costModel)); /* as init does */
  for (int c = 0; c < comm->nChannels; c++) {
    comm->channels[c].id = c;
    comm->channels[c].ringNext = 1 % nRanks;
    comm->channels[c].ringPrev = nRanks - 1;
  }
  return comm;
}

static int runPlan(int argc, char** argv) {
  int nRanks = 4, calls = 1, wantRc = 0, wantCh = -1, forceA = -1, forceP = -1, expA = -1, expP = -1;
  long long count = 1000, wantChunkElems = -1, wantBytes = -1;
  ncclFunc_t func = ncclFuncAllReduce;
  const char *usable = NULL, *v;
  struct chrTuner* probe = NULL;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "nranks"))) nRanks = atoi(v);
    else if ((v = argValue(argv[i], "func"))) func = funcByName(v);
    else if ((v = argValue(argv[i], "count"))) count = atoll(v);
    else if ((v = argValue(argv[i], "calls"))) calls = atoi(v);
    else if ((v = argValue(argv[i], "rc"))) wantRc = atoi(v);
    else if ((v = argValue(argv[i], "nch"))) wantCh = atoi(v);
    else if ((v = argValue(argv[i], "chunkelems"))) wantChunkElems = atoll(v);
    else if ((v = argValue(argv[i], "nbytes"))) wantBytes = atoll(v);
    else if ((v = argValue(argv[i], "usable"))) usable = v;
    else if ((v = argValue(argv[i], "force"))) EXPECT(parsePair(v, &forceA, &forceP) == 0, "force=%s", v);
    else if ((v = argValue(argv[i], "expect"))) EXPECT(parsePair(v, &expA, &expP) == 0, "expect=%s", v);
  }
  struct ncclComm* comm = fakeComm(nRanks);
  OK(chrPlanTunerAttach(comm));
  probe = comm->tuner;
  EXPECT(probe != NULL && comm->tunerHook != NULL, "no tuner attached (NCCL_TUNER_PLUGIN=%s)",
         getenv("NCCL_TUNER_PLUGIN") ? getenv("NCCL_TUNER_PLUGIN") : "");
  struct testTunerStats* st = statsOf(probe->path);
  EXPECT(st->lastNRanks == nRanks && st->lastNNodes == 1, "init got nRanks %lld nNodes %lld", st->lastNRanks,
         st->lastNNodes);
  if (probe->version >= 5)
    EXPECT(st->lastCommId == 0x5eedull && st->nvlDomains == 1 && st->nvlMin == nRanks && st->nvlMax == nRanks &&
               st->baseLatRingSimple == 0.0 && st->baseLatNvlsSimple == -1.0 && st->hwLatNvlinkTreeSimple > 0.0 &&
               st->treeBw1Node > 0.0,
           "init got commId %llx domains %d/%d/%d, constants ring %g nvls %g", (unsigned long long)st->lastCommId,
           st->nvlDomains, st->nvlMin, st->nvlMax, st->baseLatRingSimple, st->baseLatNvlsSimple);
  st->forceAlgo = forceA;
  st->forceProto = forceP;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "channels"))) st->setChannels = atoi(v);
    else if ((v = argValue(argv[i], "forbid"))) st->forbidAll = atoi(v);
    else if ((v = argValue(argv[i], "fail"))) st->failGetCollInfo = atoi(v);
    else if ((v = argValue(argv[i], "chunk"))) st->chunkOut = atoll(v);
    else if ((v = argValue(argv[i], "failchunk"))) st->failChunk = atoi(v);
  }

  ncclResult_t rc = ncclSuccess;
  struct chrCollTask t;
  for (int c = 0; c < calls && rc == ncclSuccess; c++) {
    memset(&t, 0, sizeof(t));
    t.comm = comm;
    t.func = func;
    t.count = (size_t)count;
    t.type = ncclFloat;
    t.typeSize = 4;
    t.userOp = ncclSum;
    t.root = 0;
    t.sendbuff = t.recvbuff = (void*)0x1000;
    rc = chrPlanTask(&t);
    if (rc == ncclSuccess && c + 1 < calls) free(t.works);
  }
  EXPECT((int)rc == wantRc, "chrPlanTask returned %d, expected %d (last error: %s)", (int)rc, wantRc,
         chrThreadLastError());
  EXPECT(st->getCollInfoCalls == calls, "getCollInfo called %d times for %d plans", st->getCollInfoCalls, calls);
  EXPECT(st->lastCollType == (int)func && st->lastNumPipeOps == 1 && st->lastNChannelsIn == 0,
         "getCollInfo got coll %d numPipeOps %d nChannels %d", st->lastCollType, st->lastNumPipeOps,
         st->lastNChannelsIn);
  if (probe->version >= 4) EXPECT(st->lastRegBuff == 0, "regBuff %d", st->lastRegBuff);
  long long bytes = count * 4 * (func == ncclFuncAllGather || func == ncclFuncReduceScatter ? nRanks : 1);
  EXPECT(st->lastNBytes == bytes, "nBytes %lld, expected %lld", st->lastNBytes, bytes);
  if (wantBytes >= 0) EXPECT(st->lastNBytes == wantBytes, "nBytes %lld, expected %lld", st->lastNBytes, wantBytes);
  if (usable != NULL && probe->version >= 3) {
    float want[21];
    for (int i = 0; i < 21; i++) want[i] = -1.0f;
    char* list = strdup(usable);
    for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      int a, p;
      EXPECT(parsePair(tok, &a, &p) == 0, "usable=%s", tok);
      want[IDX(a, p)] = 1.0f;
    }
    free(list);
    for (int i = 0; i < 21; i++)
      EXPECT((want[i] >= 0.0f) == (st->lastTable[i] >= 0.0f) && (st->lastTable[i] >= 0.0f || st->lastTable[i] == -1.0f),
             "table entry %s/%s arrived as %g", chrAlgoName(i / 3), chrProtoName(i % 3), st->lastTable[i]);
  }
  if (rc == ncclSuccess) {
    if (expA >= 0) EXPECT(t.algo == expA && t.proto == expP, "planned %s/%s, expected %s/%s", chrAlgoName(t.algo),
                          chrProtoName(t.proto), chrAlgoName(expA), chrProtoName(expP));
    if (wantCh >= 0) EXPECT(t.nChannels == wantCh, "planned %d channels, expected %d", t.nChannels, wantCh);
    if (wantChunkElems >= 0) EXPECT((long long)t.chunkElems == wantChunkElems, "chunk %zu elements, expected %lld",
                                    t.chunkElems, wantChunkElems);
    EXPECT(t.estimatedUs > 0.0f, "the estimate %g is not the model's", t.estimatedUs);
    if (probe->version == 6 && st->getChunkSizeCalls > 0)
      EXPECT(st->chunkAlgo == t.algo && st->chunkProto == t.proto && st->chunkNChannels == t.nChannels,
             "getChunkSize got %d/%d/%d, the plan is %d/%d/%d", st->chunkAlgo, st->chunkProto, st->chunkNChannels,
             t.algo, t.proto, t.nChannels);
    free(t.works);
  }
  OK(chrPlanTunerDetach(comm));
  EXPECT(st->finalizeCalls == 1 && st->liveContexts == 0 && st->badContexts == 0, "finalize %d live %d bad %d",
         st->finalizeCalls, st->liveContexts, st->badContexts);
  free(comm->nodeOfRank);
  free(comm->ringOrder);
  free(comm);
  checkLog(argc, argv);
  return 0;
}

static int runDescribe(int argc, char** argv) {
  char* text = NULL;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  chrTunerDescribe(out);
  fclose(out);
  const char* v;
  for (int i = 2; i < argc; i++)
    if ((v = argValue(argv[i], "out"))) EXPECT(strstr(text, v), "description lacks '%s':\n%s", v, text);
  free(text);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "abi") == 0) return runAbi(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "open") == 0) return runOpen(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "plan") == 0) return runPlan(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "describe") == 0) return runDescribe(argc, argv);
  fprintf(stderr, "usage: %s abi <N> | open [checks] | plan [knobs] [checks] | describe [out=...]\n", argv[0]);
  return 2;
}
