/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tuner_chorus.c: the reference tuner through its exported tables, as a core would use it
 * (dlopen + dlsym, no Chorus code linked in).
 *
 *   test_tuner_chorus <libnccl-tuner-chorus.so> <case>
 *   cases: parse, errors, match, impossible, v2, chunk
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner.h"

#define EXPECT(cond, ...)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\nlog:\n%s", logText);                           \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

#define IDX(a, p) ((a) * NCCL_NUM_PROTOCOLS + (p))

static char logText[1 << 16];
static int logWarns;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  size_t used = strlen(logText);
  if (level == NCCL_LOG_WARN) logWarns++;
  snprintf(logText + used, sizeof(logText) - used, "%s ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
  used = strlen(logText);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(logText + used, sizeof(logText) - used, fmt, ap);
  va_end(ap);
  used = strlen(logText);
  snprintf(logText + used, sizeof(logText) - used, "\n");
}

static void clearLog(void) {
  logText[0] = '\0';
  logWarns = 0;
}

static const ncclTuner_v6_t* v6;
static const ncclTuner_v2_t* v2;

static void setRules(const char* r1, const char* r2, const char* r3) {
  const char* rules[3] = {r1, r2, r3};
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof(name), "TUNER_RULE_%d", i + 1);
    if (rules[i]) setenv(name, rules[i], 1);
    else unsetenv(name);
  }
}

/* Chorus-like constants: only RING and TREE with SIMPLE can run. */
static void chorusConstants(ncclTunerConstants_v6_t* k) {
  memset(k, 0, sizeof(*k));
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      k->baseLatencies[a][p] = (p == NCCL_PROTO_SIMPLE && (a == NCCL_ALGO_RING || a == NCCL_ALGO_TREE)) ? 0.0 : -1.0;
}

static void* initV6(size_t nRanks, size_t nNodes, ncclResult_t want) {
  ncclTunerConstants_v6_t k;
  chorusConstants(&k);
  ncclNvlDomainInfo_v6_t nvl = {1, (int)nRanks, (int)nRanks};
  void* ctx = NULL;
  ncclResult_t res = v6->init(&ctx, 0x1234, nRanks, nNodes, logger, &nvl, &k);
  EXPECT(res == want, "init returned %d, expected %d", (int)res, (int)want);
  EXPECT((ctx != NULL) == (want == ncclSuccess), "context %p", ctx);
  return ctx;
}

/* A Chorus-like table: TREE/SIMPLE (all-reduce only) and RING/SIMPLE can run. */
static void chorusTable(float* t, ncclFunc_t coll) {
  for (int i = 0; i < 21; i++) t[i] = -1.0f;
  t[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)] = 10.0f;
  if (coll == ncclFuncAllReduce) t[IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE)] = 20.0f;
}

/* The pair the table now selects (smallest >= 0, ties to the first), as "ALGO/PROTO" indexes. */
static int chosen(const float* t) {
  int best = -1;
  for (int i = 0; i < 21; i++)
    if (t[i] >= 0.0f && (best < 0 || t[i] < t[best])) best = i;
  return best;
}

static int call(void* ctx, ncclFunc_t coll, size_t bytes, int* nch) {
  float t[21];
  chorusTable(t, coll);
  *nch = 0;
  EXPECT(v6->getCollInfo(ctx, coll, bytes, 1, (float**)t, 7, 3, 0, nch) == ncclSuccess, "getCollInfo failed");
  return chosen(t);
}

static int caseParse(void) {
  setRules("allreduce,allgather 0-64K ranks=2-8 nodes=1 -> tree simple 2", "* 1M- -> ring * 3 chunk=128K",
           " Broadcast   *   ->   RING   SIMPLE ");
  void* ctx = initV6(4, 1, ncclSuccess);
  EXPECT(strstr(logText, "3 of 3 rules apply"), "rules not all kept");
  /* Rule 1 names TREE for AllGather: said at init, once, naming the rule. */
  EXPECT(logWarns == 1 && strstr(logText, "TUNER_RULE_1") && strstr(logText, "TREE cannot run AllGather"),
         "init warnings");
  EXPECT(v6->finalize(ctx) == ncclSuccess, "finalize");
  /* The same rules on 16 ranks: rule 1 does not apply. */
  clearLog();
  ctx = initV6(16, 1, ncclSuccess);
  EXPECT(strstr(logText, "2 of 3 rules apply") && logWarns == 0, "ranks filter");
  v6->finalize(ctx);
  return 0;
}

static int caseErrors(void) {
  static const char* bad[][2] = {
      {"allredcue -> ring", "unknown collective 'allredcue'"},
      {"allreduce -> rign", "unknown algorithm 'rign'"},
      {"allreduce -> ring fast", "'fast' is not a protocol"},
      {"allreduce ring simple", "no '->'"},
      {"allreduce 64K-1K -> ring", "'64K-1K' is neither a size range"},
      {"allreduce ranks=x -> ring", "bad ranks range 'x'"},
      {"allreduce -> ring simple chunk=0", "bad chunk size '0'"},
      {"allreduce -> ring -> tree", "more than one '->'"},
      {" -> ring", "no collective before '->'"},
      {"allreduce -> ", "no algorithm after '->'"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    clearLog();
    setRules("allreduce -> ring", bad[i][0], NULL);
    initV6(4, 1, ncclInvalidArgument);
    EXPECT(logWarns == 1 && strstr(logText, "TUNER_RULE_2") && strstr(logText, bad[i][1]),
           "rule '%s' should fail with '%s'", bad[i][0], bad[i][1]);
  }
  return 0;
}

static int caseMatch(void) {
  setRules("allreduce 0-1024 -> tree", "allreduce 1025-4K -> ring simple 3", "* -> * * 2");
  void* ctx = initV6(8, 1, ncclSuccess);
  int nch;
  EXPECT(call(ctx, ncclFuncAllReduce, 0, &nch) == IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE) && nch == 0, "0 bytes");
  EXPECT(call(ctx, ncclFuncAllReduce, 1024, &nch) == IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE), "1024 is inclusive");
  EXPECT(call(ctx, ncclFuncAllReduce, 1025, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) && nch == 3, "1025");
  EXPECT(call(ctx, ncclFuncAllReduce, 4096, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) && nch == 3, "4K");
  /* Rule 3 only sets channels: the table's own winner stays. */
  EXPECT(call(ctx, ncclFuncAllReduce, 4097, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) && nch == 2, "4097");
  EXPECT(call(ctx, ncclFuncBroadcast, 10, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) && nch == 2, "broadcast");
  /* Each rule's first decision is said once, at INFO: the line a user looks for. */
  EXPECT(strstr(logText, "TUNER_RULE_1 \"allreduce 0-1024 -> tree\" chose TREE/SIMPLE for AllReduce of 0 bytes") &&
             strstr(logText, "TUNER_RULE_2 \"allreduce 1025-4K -> ring simple 3\" chose RING/SIMPLE, its channels for "
                             "AllReduce of 1025 bytes") &&
             strstr(logText, "TUNER_RULE_3 \"* -> * * 2\" chose (the core's)/(the core's), its channels for AllReduce of "
                             "4097 bytes"),
         "first decisions not logged");
  const char* again = strstr(logText, "chose TREE/SIMPLE for AllReduce of 0 bytes");
  EXPECT(again && !strstr(again + 1, "TUNER_RULE_1 \"allreduce 0-1024 -> tree\" chose"), "rule 1 said twice");
  /* Forcing writes 0.0 at the entry and touches no -1 entry. */
  float t[21];
  chorusTable(t, ncclFuncAllReduce);
  nch = 0;
  v6->getCollInfo(ctx, ncclFuncAllReduce, 100, 1, (float**)t, 7, 3, 0, &nch);
  EXPECT(t[IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE)] == 0.0f && t[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)] == 10.0f,
         "tree %g ring %g", t[IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE)], t[IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE)]);
  for (int i = 0; i < 21; i++)
    if (i != IDX(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE) && i != IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE))
      EXPECT(t[i] == -1.0f, "entry %d became %g", i, t[i]);
  EXPECT(logWarns == 0, "no warnings expected");
  v6->finalize(ctx);
  return 0;
}

static int caseImpossible(void) {
  /* LL is not runnable by Chorus-like constants: said at init. */
  setRules("allreduce -> ring ll", "allgather -> tree", NULL);
  void* ctx = initV6(4, 1, ncclSuccess);
  EXPECT(strstr(logText, "TUNER_RULE_1") && strstr(logText, "cannot run RING/LL"), "constants check");
  EXPECT(strstr(logText, "TUNER_RULE_2") && strstr(logText, "TREE cannot run AllGather"), "collective check");
  EXPECT(logWarns == 2, "%d warnings at init", logWarns);
  /* At run time both defer (the table is left alone), with one WARN per rule. */
  int nch;
  for (int i = 0; i < 3; i++) {
    EXPECT(call(ctx, ncclFuncAllReduce, 100, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE) && nch == 0, "ring/ll");
    EXPECT(call(ctx, ncclFuncAllGather, 100, &nch) == IDX(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), "allgather tree");
  }
  EXPECT(logWarns == 4 && strstr(logText, "matches AllGather of 100 bytes, but TREE/* cannot run"), "%d warnings",
         logWarns);
  v6->finalize(ctx);
  /* On one rank the core marks every pair -1 and never asks: no constants warning then. */
  clearLog();
  setRules("allreduce -> ring ll", NULL, NULL);
  ncclTunerConstants_v6_t k;
  chorusConstants(&k);
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) k.baseLatencies[a][p] = -1.0;
  ncclNvlDomainInfo_v6_t nvl = {1, 1, 1};
  EXPECT(v6->init(&ctx, 0x1, 1, 1, logger, &nvl, &k) == ncclSuccess && logWarns == 0, "one rank: %d warnings",
         logWarns);
  v6->finalize(ctx);
  return 0;
}

static int caseV2(void) {
  setRules("allreduce 0-100 -> tree", "allreduce 101-200 -> ring ll 4", "allreduce -> * simple 5");
  void* ctx = NULL;
  EXPECT(v2->init(4, 1, logger, &ctx) == ncclSuccess && ctx != NULL, "v2 init");
  int a = -1, p = -1, nch = 0;
  EXPECT(v2->getCollInfo(ctx, ncclFuncAllReduce, 50, 0, 0, 1, &a, &p, &nch) == ncclSuccess, "call");
  EXPECT(a == NCCL_ALGO_TREE && p == NCCL_PROTO_SIMPLE && nch == 0, "got %d/%d/%d", a, p, nch);
  a = p = -1;
  v2->getCollInfo(ctx, ncclFuncAllReduce, 150, 0, 0, 1, &a, &p, &nch);
  EXPECT(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL && nch == 4, "got %d/%d/%d", a, p, nch);
  a = p = -1;
  nch = 0;
  v2->getCollInfo(ctx, ncclFuncAllReduce, 500, 0, 0, 1, &a, &p, &nch);
  EXPECT(a == -1 && p == -1 && nch == 5, "a rule without an algorithm cannot choose in v2: got %d/%d/%d", a, p, nch);
  a = p = -1;
  nch = 0;
  v2->getCollInfo(ctx, ncclFuncBroadcast, 50, 0, 0, 1, &a, &p, &nch);
  EXPECT(a == -1 && p == -1 && nch == 0, "no rule for broadcast");
  EXPECT(v2->destroy(ctx) == ncclSuccess, "destroy");
  return 0;
}

static int caseChunk(void) {
  setRules("allreduce 0-1M -> ring simple chunk=64K", "allreduce -> tree", "* -> * chunk=1M");
  void* ctx = initV6(4, 1, ncclSuccess);
  size_t chunk = 4096;
  EXPECT(v6->getChunkSize(ctx, ncclFuncAllReduce, 1000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, &chunk) == ncclSuccess &&
             chunk == 65536, "chunk %zu", chunk);
  chunk = 4096; /* the rule names RING: another algorithm keeps the core's size */
  v6->getChunkSize(ctx, ncclFuncAllReduce, 1000, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4, &chunk);
  EXPECT(chunk == 4096, "chunk %zu for tree", chunk);
  chunk = 4096; /* rule 2 has no chunk */
  v6->getChunkSize(ctx, ncclFuncAllReduce, 2 << 20, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4, &chunk);
  EXPECT(chunk == 4096, "chunk %zu for rule 2", chunk);
  chunk = 4096;
  v6->getChunkSize(ctx, ncclFuncAllGather, 10, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, &chunk);
  EXPECT(chunk == 1 << 20, "chunk %zu for rule 3", chunk);
  v6->finalize(ctx);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <libnccl-tuner-chorus.so> parse|errors|match|impossible|v2|chunk\n", argv[0]);
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  EXPECT(h != NULL, "dlopen: %s", dlerror());
  v6 = dlsym(h, "ncclTunerPlugin_v6");
  v2 = dlsym(h, "ncclTunerPlugin_v2");
  EXPECT(v6 && v2 && v6->getChunkSize, "missing tables");
  EXPECT(strcmp(v6->name, "Chorus") == 0, "name %s", v6->name);
  for (int i = 1; i <= 64; i++) {
    char name[32];
    snprintf(name, sizeof(name), "TUNER_RULE_%d", i);
    unsetenv(name);
  }
  const char* c = argv[2];
  if (strcmp(c, "parse") == 0) return caseParse();
  if (strcmp(c, "errors") == 0) return caseErrors();
  if (strcmp(c, "match") == 0) return caseMatch();
  if (strcmp(c, "impossible") == 0) return caseImpossible();
  if (strcmp(c, "v2") == 0) return caseV2();
  if (strcmp(c, "chunk") == 0) return caseChunk();
  fprintf(stderr, "unknown case %s\n", c);
  return 2;
}
