/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cost_model.c: the planner reads its cost model from the [cost_model] section (CHORUS_COST_*).
 * Usage: test_cost_model <case>
 *   read      every key of an INI section arrives in the model; the environment beats the file
 *   estimate  random models, rank counts (2..16, one host and several) and sizes: the planner's choice
 *             and estimate equal the cheapest of the model's formulas, computed here on their own
 *   flip      a size where the defaults choose RING chooses TREE once the section makes the ring slow
 *   invalid   values that are not positive numbers fail communicator init with a message naming them
 *   unknown   an unknown key in [cost_model] is warned about with the closest known name
 *   docs FILE the compiled-in defaults are the calibration run kept in docs/perf/cost-model.md (its
 *             section "The run behind the defaults"): each key there once, with the default's text
 */
#include <math.h>

#include "commstate/comm.h"
#include "config/algo_select.h"
#include "config_test_util.h"
#include "log/log.h"
#include "nccl.h"
#include "plan/cost_model.h"
#include "plan/plan.h"

#define OK(call)                                                                                  \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    EXPECT(r_ == ncclSuccess, "%s returned %d (last error: %s)", #call, (int)r_, chrThreadLastError()); \
  } while (0)

static const char* const keyOf[CHR_COST_TRANSPORTS][CHR_COST_ALGOS][2] = {
    {{"CHORUS_COST_SHM_RING_SIMPLE_LATENCY_US", "CHORUS_COST_SHM_RING_SIMPLE_BANDWIDTH_GBS"},
     {"CHORUS_COST_SHM_TREE_SIMPLE_LATENCY_US", "CHORUS_COST_SHM_TREE_SIMPLE_BANDWIDTH_GBS"}},
    {{"CHORUS_COST_NET_RING_SIMPLE_LATENCY_US", "CHORUS_COST_NET_RING_SIMPLE_BANDWIDTH_GBS"},
     {"CHORUS_COST_NET_TREE_SIMPLE_LATENCY_US", "CHORUS_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS"}},
};

static uint64_t rng = 0x636f73746d6f64ull;
static double uniform(double lo, double hi) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Writes `values` (the model's 8 numbers, [t][a][latency, bandwidth]) as a [cost_model] section in
 * short-key form for the shm entries and full names for the net ones (both are accepted), and loads it. */
static void loadSection(double values[CHR_COST_TRANSPORTS][CHR_COST_ALGOS][2]) {
  char text[4096];
  size_t o = (size_t)snprintf(text, sizeof(text), "[cost_model]\n");
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++)
      for (int k = 0; k < 2; k++) {
        const char* key = keyOf[t][a][k];
        if (t == CHR_COST_SHM) key += strlen("CHORUS_"); /* short form: cost_shm_..., any case */
        o += (size_t)snprintf(text + o, sizeof(text) - o, "%s = %.9g\n", key, values[t][a][k]);
      }
  for (char* p = text; *p; p++)
    if (strncmp(p, "COST_SHM", 8) == 0) memcpy(p, "cost_shm", 8);
  writeTestFile("cost.ini", text);
  char path[512];
  testPath(path, sizeof(path), "cost.ini");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
}

/* Rank 0 of an n-rank communicator over `nodes` hosts, with what the planner reads (as init makes it). */
static struct ncclComm* fakeComm(int n, int nodes) {
  struct ncclComm* comm = calloc(1, sizeof(*comm));
  EXPECT(comm != NULL, "out of memory");
  comm->magic = CHR_COMM_MAGIC;
  comm->nRanks = n;
  comm->nNodes = nodes;
  comm->nodeOfRank = calloc((size_t)n, sizeof(int));
  comm->ringOrder = calloc((size_t)n, sizeof(int));
  EXPECT(comm->nodeOfRank && comm->ringOrder, "out of memory");
  for (int r = 0; r < n; r++) {
    comm->ringOrder[r] = r;
    comm->nodeOfRank[r] = r % nodes;
  }
  comm->nChannels = 2;
  comm->minChannels = 1;
  for (int c = 0; c < comm->nChannels; c++) {
    comm->channels[c].id = c;
    comm->channels[c].ringNext = 1 % n;
    comm->channels[c].ringPrev = n - 1;
  }
  OK(chrCostModelRead(&comm->costModel));
  return comm;
}

static void freeComm(struct ncclComm* comm) {
  free(comm->nodeOfRank);
  free(comm->ringOrder);
  free(comm);
}

/* Plans one float task; returns the algorithm (CHR_ALGO_*) and its estimate. */
static int plan(struct ncclComm* comm, ncclFunc_t func, size_t count, float* estimate) {
  struct chrCollTask t;
  memset(&t, 0, sizeof(t));
  t.comm = comm;
  t.func = func;
  t.count = count;
  t.type = ncclFloat;
  t.typeSize = 4;
  t.userOp = ncclSum;
  t.sendbuff = t.recvbuff = (void*)0x1000;
  OK(chrPlanTask(&t));
  free(t.works);
  *estimate = t.estimatedUs;
  return t.algo;
}

/* The model's all-reduce time, written out here from its definition (docs/perf/cost-model.md). */
static double referenceAllReduce(double latencyUs, double busGBs, int algo, int n, double bytes) {
  int depth = 0;
  while ((1 << depth) < n) depth++;
  double hops = algo == CHR_ALGO_TREE ? 2.0 * depth : 2.0 * (n - 1);
  return hops * latencyUs + 2.0 * (n - 1) / n * bytes / (busGBs * 1e3);
}

static void caseRead(void) {
  double v[CHR_COST_TRANSPORTS][CHR_COST_ALGOS][2];
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      v[t][a][0] = 0.5 + t * 10 + a;    /* all eight distinct, so a swapped key shows */
      v[t][a][1] = 1.25 + t * 3 + a * 0.5;
    }
  loadSection(v);
  OK(chrConfigValidate());
  EXPECT_STR(chrConfigProblems(), "");
  struct chrCostModel m;
  OK(chrCostModelRead(&m));
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      EXPECT(m.e[t][a].latencyUs == (float)v[t][a][0], "%s = %g, file says %g", keyOf[t][a][0], m.e[t][a].latencyUs,
             v[t][a][0]);
      EXPECT(m.e[t][a].busGBs == (float)v[t][a][1], "%s = %g, file says %g", keyOf[t][a][1], m.e[t][a].busGBs,
             v[t][a][1]);
    }
  /* The environment is stronger than the file. */
  setenv("CHORUS_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS", "42.5", 1);
  chrConfigReload();
  OK(chrCostModelRead(&m));
  EXPECT(m.e[CHR_COST_NET][CHR_COST_TREE].busGBs == 42.5f, "env gave %g", m.e[CHR_COST_NET][CHR_COST_TREE].busGBs);
  EXPECT(m.e[CHR_COST_NET][CHR_COST_TREE].latencyUs == (float)v[1][1][0], "file value lost");
  unsetenv("CHORUS_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS");
}

static void caseEstimate(void) {
  for (int round = 0; round < 40; round++) {
    double v[CHR_COST_TRANSPORTS][CHR_COST_ALGOS][2];
    for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
      for (int a = 0; a < CHR_COST_ALGOS; a++) {
        v[t][a][0] = exp(uniform(log(0.05), log(200)));  /* latency per hop */
        v[t][a][1] = exp(uniform(log(0.05), log(100)));  /* bus bandwidth */
      }
    loadSection(v);
    OK(chrConfigValidate());
    int n = 2 + (int)uniform(0, 15);
    int nodes = round % 2 ? (n > 2 ? 2 : n) : 1;
    int t = nodes > 1 ? CHR_COST_NET : CHR_COST_SHM;
    struct ncclComm* comm = fakeComm(n, nodes);
    for (int s = 0; s < 8; s++) {
      size_t count = (size_t)exp(uniform(0, log(64e6)));
      double bytes = (double)count * 4;
      double ring = referenceAllReduce(v[t][0][0], v[t][0][1], CHR_ALGO_RING, n, bytes);
      double tree = referenceAllReduce(v[t][1][0], v[t][1][1], CHR_ALGO_TREE, n, bytes);
      if (fabs(ring - tree) < 1e-3 * (ring + tree)) continue; /* too close to call in float */
      float est = 0;
      int algo = plan(comm, ncclFuncAllReduce, count, &est);
      int want = tree < ring ? CHR_ALGO_TREE : CHR_ALGO_RING;
      double wantUs = tree < ring ? tree : ring;
      EXPECT(algo == want, "n %d nodes %d %.0f bytes: planned %s, model says ring %g us, tree %g us", n, nodes, bytes,
             chrAlgoName(algo), ring, tree);
      EXPECT(fabs(est - wantUs) <= 1e-4 * wantUs, "n %d %.0f bytes: estimate %g us, reference %g us", n, bytes, est,
             wantUs);
      /* All-gather runs as a ring: (n-1) hops, bus factor (n-1)/n of n x count elements. */
      algo = plan(comm, ncclFuncAllGather, count, &est);
      double ag = (n - 1) * v[t][0][0] + (double)(n - 1) / n * bytes * n / (v[t][0][1] * 1e3);
      EXPECT(algo == CHR_ALGO_RING && fabs(est - ag) <= 1e-4 * ag, "all-gather: %s %g us, reference %g us",
             chrAlgoName(algo), est, ag);
    }
    freeComm(comm);
  }
}

static void caseFlip(void) {
  /* With the defaults, a large all-reduce on 4 ranks of one host is a ring (the tree pays more hops
   * less, but has the lower bus bandwidth); pick the first size where that holds. */
  struct ncclComm* comm = fakeComm(4, 1);
  size_t count = 0;
  float est = 0;
  for (size_t c = 256; c <= (64u << 20) && count == 0; c *= 2)
    if (plan(comm, ncclFuncAllReduce, c, &est) == CHR_ALGO_RING) count = c;
  freeComm(comm);
  EXPECT(count > 0, "the defaults never choose RING for an all-reduce on 4 ranks");
  if (count == 0) return;
  /* Now the section makes the shm ring a thousand times worse: the same size becomes a tree. */
  writeTestFile("slow-ring.ini", "; ring made expensive\n[cost_model]\n"
                                 "CHORUS_COST_SHM_RING_SIMPLE_LATENCY_US = 5000\n"
                                 "cost_shm_ring_simple_bandwidth_gbs = 0.001\n");
  char path[512];
  testPath(path, sizeof(path), "slow-ring.ini");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  OK(chrConfigValidate());
  comm = fakeComm(4, 1);
  int algo = plan(comm, ncclFuncAllReduce, count, &est);
  EXPECT(algo == CHR_ALGO_TREE, "%zu floats: %s with the ring made expensive", count, chrAlgoName(algo));
  /* A collective only the ring runs still runs, at the ring's (now high) cost. */
  algo = plan(comm, ncclFuncBroadcast, count, &est);
  EXPECT(algo == CHR_ALGO_RING && est > 3 * 5000, "broadcast: %s, %g us", chrAlgoName(algo), est);
  freeComm(comm);
  /* The net entries were not in the file: still the defaults, untouched by the shm ones. */
  struct chrCostModel m;
  OK(chrCostModelRead(&m));
  float netRingDefault = (float)atof(chrParamDefault(CHR_P_COST_NET_RING_SIMPLE_LATENCY_US));
  EXPECT(m.e[CHR_COST_NET][CHR_COST_RING].latencyUs == netRingDefault, "net ring latency %g",
         m.e[CHR_COST_NET][CHR_COST_RING].latencyUs);
}

/* The planner reuses its last choice for a call like it (plan.c): only while nothing the choice
 * depends on changed: the settings, the communicator's cost model and size. */
static void caseRepeat(void) {
  struct ncclComm* comm = fakeComm(4, 1);
  size_t count = 0;
  float est = 0;
  for (size_t c = 256; c <= (64u << 20) && count == 0; c *= 2)
    if (plan(comm, ncclFuncAllReduce, c, &est) == CHR_ALGO_RING) count = c;
  EXPECT(count > 0, "the defaults never choose RING for an all-reduce on 4 ranks");
  for (int i = 0; i < 3; i++)
    EXPECT(plan(comm, ncclFuncAllReduce, count, &est) == CHR_ALGO_RING, "call %d: not RING again", i);
  setenv("NCCL_ALGO", "Tree", 1);
  chrConfigReload();
  int algo = plan(comm, ncclFuncAllReduce, count, &est);
  EXPECT(algo == CHR_ALGO_TREE, "NCCL_ALGO=Tree after a reload: %s", chrAlgoName(algo));
  unsetenv("NCCL_ALGO");
  chrConfigReload();
  algo = plan(comm, ncclFuncAllReduce, count, &est);
  EXPECT(algo == CHR_ALGO_RING, "NCCL_ALGO unset again: %s", chrAlgoName(algo));
  /* Another model (as another communicator's) gets its own choice. */
  comm->costModel.e[CHR_COST_SHM][CHR_COST_RING].latencyUs = 5000;
  comm->costModel.e[CHR_COST_SHM][CHR_COST_RING].busGBs = 0.001f;
  algo = plan(comm, ncclFuncAllReduce, count, &est);
  EXPECT(algo == CHR_ALGO_TREE, "ring made expensive in the comm's model: %s", chrAlgoName(algo));
  freeComm(comm);
}

/* A one-rank communicator through the public API: init is where a bad setting must fail. */
static ncclResult_t initOneRank(void) {
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return res;
  ncclComm_t comm = NULL;
  res = ncclCommInitRank(&comm, 1, id, 0);
  if (res == ncclSuccess) ncclCommDestroy(comm);
  return res;
}

static void caseInvalid(void) {
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  EXPECT(initOneRank() == ncclSuccess, "init with the defaults: %s", chrThreadLastError());
  static const char* const bad[] = {"0", "-1", "fast", "nan", "inf", "1e7", "", "2.5x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char text[256];
    int line = 3;
    snprintf(text, sizeof(text), "[cost_model]\nCHORUS_COST_SHM_RING_SIMPLE_LATENCY_US = 1.5\n"
                                 "CHORUS_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS = %s\n", bad[i]);
    writeTestFile("bad.ini", text);
    char path[512], want[700];
    testPath(path, sizeof(path), "bad.ini");
    setenv("CHORUS_CONF", path, 1);
    chrConfigReload();
    ncclResult_t res = initOneRank();
    EXPECT(res == ncclInvalidUsage, "value '%s': init returned %d", bad[i], (int)res);
    const char* last = ncclGetLastError(NULL);
    snprintf(want, sizeof(want), "%s:%d: CHORUS_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS='%s' is not valid", path, line,
             bad[i]);
    EXPECT(last && strstr(last, want) && strstr(last, "above 0"), "value '%s': last error '%s', expected '%s'", bad[i],
           last ? last : "(null)", want);
  }
  /* The same from the environment. */
  unsetenv("CHORUS_CONF");
  setenv("CHORUS_COST_SHM_TREE_SIMPLE_LATENCY_US", "-3", 1);
  chrConfigReload();
  EXPECT(initOneRank() == ncclInvalidUsage, "a negative latency from the environment was accepted");
  const char* last = ncclGetLastError(NULL);
  EXPECT(last && strstr(last, "environment: CHORUS_COST_SHM_TREE_SIMPLE_LATENCY_US='-3' is not valid"),
         "last error '%s'", last ? last : "(null)");
  unsetenv("CHORUS_COST_SHM_TREE_SIMPLE_LATENCY_US");
  chrConfigReload();
  EXPECT(initOneRank() == ncclSuccess, "init after the bad value is gone: %s", chrThreadLastError());
}

static void caseUnknown(void) {
  writeTestFile("typo.ini", "[cost_model]\ncost_shm_ring_simple_latency = 3\n");
  char path[512];
  testPath(path, sizeof(path), "typo.ini");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  const char* problems = chrConfigProblems();
  EXPECT(strstr(problems, "unknown key 'cost_shm_ring_simple_latency' in section [cost_model]") &&
             strstr(problems, "closest known name: COST_SHM_RING_SIMPLE_LATENCY_US"),
         "problems: %s", problems);
  OK(chrConfigValidate()); /* a warning, not an error */
  struct chrCostModel m;
  OK(chrCostModelRead(&m));
  float shmRingDefault = (float)atof(chrParamDefault(CHR_P_COST_SHM_RING_SIMPLE_LATENCY_US));
  EXPECT(m.e[CHR_COST_SHM][CHR_COST_RING].latencyUs == shmRingDefault, "a misspelt key changed the model");
}

static void caseDocs(const char* docPath) {
  char* text = readWholeFile(docPath);
  EXPECT(text != NULL, "cannot read %s", docPath);
  if (!text) return;
  const char* section = strstr(text, "\n## The run behind the defaults\n");
  EXPECT(section != NULL, "%s has no section '## The run behind the defaults'", docPath);
  if (section) {
    const char* end = strstr(section + 1, "\n## ");
    size_t len = end ? (size_t)(end - section) : strlen(section);
    for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
      for (int a = 0; a < CHR_COST_ALGOS; a++)
        for (int k = 0; k < 2; k++) {
          char want[160];
          snprintf(want, sizeof(want), "\n%s = ", keyOf[t][a][k]);
          int seen = 0;
          for (const char* p = section; (p = strstr(p, want)) && p < section + len; p++) {
            seen++;
            const char* v = p + strlen(want);
            size_t vlen = strcspn(v, " \n");
            const char* def = chrParamDefault((chrParamId)chrParamLookup(keyOf[t][a][k]));
            EXPECT(vlen == strlen(def) && strncmp(v, def, vlen) == 0, "%s: the run says %.*s, params.def %s",
                   keyOf[t][a][k], (int)vlen, v, def);
          }
          EXPECT(seen == 1, "%s appears %d times in the run behind the defaults", keyOf[t][a][k], seen);
        }
  }
  free(text);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "docs") == 0) {
    isolateConfig();
    caseDocs(argv[2]);
    return finishTest();
  }
  if (argc != 2) {
    fprintf(stderr, "usage: %s read|estimate|flip|repeat|invalid|unknown | docs FILE\n", argv[0]);
    return 2;
  }
  isolateConfig();
  if (strcmp(argv[1], "read") == 0) caseRead();
  else if (strcmp(argv[1], "estimate") == 0) caseEstimate();
  else if (strcmp(argv[1], "flip") == 0) caseFlip();
  else if (strcmp(argv[1], "repeat") == 0) caseRepeat();
  else if (strcmp(argv[1], "invalid") == 0) caseInvalid();
  else if (strcmp(argv[1], "unknown") == 0) caseUnknown();
  else {
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  return finishTest();
}
