/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_colls.c (gpu.colls.n<N>): N ranks sharing one GPU in one process (a device group, each
 * rank its own stream) run plans built like the planner's (gpu_plan.c) and every result must equal,
 * bit for bit, the reference simulation of the same plan with the host's arithmetic (gpu_sim.c);
 * floating NaNs match any NaN. Whole buffers are compared, so writes outside the outputs fail too.
 *
 * Covered: ring all-reduce, tree all-reduce, reduce-scatter, all-gather, broadcast and reduce (each
 * root), all-to-all over point-to-point links (self included), local (1 rank); every type and op
 * (PreMulSum by value and by device pointer, SumPostDiv on integers); sizes 0, 1, odd and a few MB;
 * in and out of place; SIMPLE and LL; buffers aligned, element-aligned and misaligned; small chunks
 * (many steps, slots wrapping); several calls of mixed types in one plan (one launch cut into
 * several kernels). Step positions persist over all of it: the group lives for the whole run.
 *
 * Usage: test_gpu_colls <nRanks> [--quick] [--seed S] [--sim-only]. Exits 77 without a GPU.
 * --sim-only runs every case through the simulation alone (no GPU): it checks the case list itself
 * (plans fit, nothing deadlocks), and runs anywhere as gpu.cases.n<N>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/reduce.h"
#include "gpu_case.h"
#include "gpu_data.h"
#include "gpu_dev.h"
#include "config/algo_select.h"

#define REGION_BYTES (12u << 20)
#define STEP_BYTES (64u << 10)
#define LL_LINES 256
#define CASE_TIMEOUT_MS 20000

struct run {
  int n;
  struct chrDevGroup* group;
  cudaStream_t streams[CT_MAX_RANKS];
  char* devA[CT_MAX_RANKS];
  char* devB[CT_MAX_RANKS];
  uint64_t* devScalar;
  char* back;
  int ringOrder[CT_MAX_RANKS];
  uint64_t rng, seed;
  int cases, failures;
  int simOnly; /* no GPU: the simulation alone, with host addresses (checks the case list itself) */
};

static struct chrTestCase tc;

static void runCase(struct run* R) {
  char name[1024], err[512];
  tc.nRanks = R->n;
  memcpy(tc.ringOrder, R->ringOrder, sizeof tc.ringOrder);
  chrTestCaseName(&tc, name, sizeof name);
  const uint64_t seed = R->seed++;
  if (chrTestCaseInit(&tc, seed)) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  if (tc.bytesA > REGION_BYTES || tc.bytesB > REGION_BYTES) {
    fprintf(stderr, "test bug: %s needs %zu/%zu bytes\n", name, tc.bytesA, tc.bytesB);
    exit(1);
  }
  tc.scalarBits = chrTestScalar(tc.calls[0].type, &R->rng);
  if (R->simOnly) {
    for (int r = 0; r < R->n; r++) {
      tc.devA[r] = (uint64_t)(uintptr_t)tc.simA[r];
      tc.devB[r] = (uint64_t)(uintptr_t)tc.simB[r];
    }
    tc.devScalar = (uint64_t)(uintptr_t)&tc.scalarBits;
    if (chrTestCaseBuild(&tc) || chrTestCaseSimulate(&tc, err, sizeof err)) {
      fprintf(stderr, "test bug: %s: %s\n", name, err);
      exit(1);
    }
    R->cases++;
    chrTestCaseFree(&tc);
    return;
  }
  for (int r = 0; r < R->n; r++) {
    tc.devA[r] = (uint64_t)(uintptr_t)R->devA[r];
    tc.devB[r] = (uint64_t)(uintptr_t)R->devB[r];
    CT_CUDA(cudaMemcpy(R->devA[r], tc.initA[r], tc.bytesA, cudaMemcpyHostToDevice));
    CT_CUDA(cudaMemcpy(R->devB[r], tc.initB[r], tc.bytesB, cudaMemcpyHostToDevice));
  }
  tc.devScalar = (uint64_t)(uintptr_t)R->devScalar;
  CT_CUDA(cudaMemcpy(R->devScalar, &tc.scalarBits, sizeof tc.scalarBits, cudaMemcpyHostToDevice));
  if (chrTestCaseBuild(&tc)) {
    fprintf(stderr, "test bug: plan of %s does not fit\n", name);
    exit(1);
  }
  for (int r = 0; r < R->n; r++) {
    ncclResult_t res = chrDevLaunch(R->group, r, tc.flat[r], tc.nWorks[r], tc.plans[r].nChannels, R->streams[r]);
    if (res != ncclSuccess) {
      fprintf(stderr, "FAIL %s: launch of rank %d: %s\n", name, r, chrDevLastError());
      chrDevSetAbort(R->group, -1, 1); /* the ranks launched so far wait for this one */
      chrTestWaitStreams(R->streams, R->n, 5000);
      exit(1);
    }
  }
  /* The CPU computes the reference while the GPU runs. */
  int simFailed = chrTestCaseSimulate(&tc, err, sizeof err);
  int waited = chrTestWaitStreams(R->streams, R->n, CASE_TIMEOUT_MS);
  if (waited == 2) {
    fprintf(stderr, "FAIL %s (seed %llu): CUDA error while running\n", name, (unsigned long long)seed);
    exit(1);
  }
  if (waited) {
    fprintf(stderr, "FAIL %s (seed %llu): no completion after %d ms; aborting the ranks\n", name,
            (unsigned long long)seed, CASE_TIMEOUT_MS);
    chrDevSetAbort(R->group, -1, 1);
    if (chrTestWaitStreams(R->streams, R->n, 5000)) fprintf(stderr, "the kernels ignore the abort flag\n");
    exit(1);
  }
  R->cases++;
  if (simFailed) {
    fprintf(stderr, "test bug: simulation of %s: %s\n", name, err);
    exit(1);
  }
  int bad = 0;
  for (int r = 0; r < R->n && !bad; r++) {
    if (chrDevKernelError(R->group, r)) {
      fprintf(stderr, "FAIL %s: rank %d's kernel reported error %u\n", name, r, chrDevKernelError(R->group, r));
      exit(1);
    }
    for (int region = 0; region < 2 && !bad; region++) {
      const size_t bytes = region ? tc.bytesB : tc.bytesA;
      CT_CUDA(cudaMemcpy(R->back, region ? R->devB[r] : R->devA[r], bytes, cudaMemcpyDeviceToHost));
      if (chrTestCaseCheck(&tc, r, region, R->back, err, sizeof err) >= 0) {
        if (R->failures < 30) fprintf(stderr, "FAIL %s (seed %llu): %s\n", name, (unsigned long long)seed, err);
        bad = 1;
      }
    }
  }
  R->failures += bad;
  chrTestCaseFree(&tc);
}

static int isIntType(int type) { return type <= ncclUint64; }

/* A single-call case. */
static struct chrTestCall* newCall(int func, int type, int op, uint64_t count, int inPlace, int proto) {
  memset(&tc, 0, sizeof tc);
  tc.nCalls = 1;
  struct chrTestCall* c = &tc.calls[0];
  c->func = func;
  c->type = type;
  c->typeSize = chrTestTypeSize(type);
  c->op = op;
  c->count = count;
  c->inPlace = inPlace;
  c->proto = proto;
  c->nChannels = 3;
  c->chunkElems = (proto == CHR_PROTO_LL ? LL_LINES * 8u : STEP_BYTES) / (uint64_t)c->typeSize;
  return c;
}

/* Count for about `bytes` of data in the largest buffer of the call. */
static uint64_t countFor(int func, int n, int typeSize, size_t bytes) {
  uint64_t c = bytes / (size_t)typeSize;
  if (func == CT_REDUCESCATTER || func == CT_ALLGATHER || func == CT_ALLTOALL) c /= (uint64_t)n;
  return c;
}

static void variety(struct run* R, struct chrTestCall* c) {
  uint64_t r = chrTestRand(&R->rng);
  c->root = (int)(r % (uint64_t)R->n);
  c->nChannels = 1 + (int)((r >> 8) % 3);
  /* Odd chunks: many steps, slots wrapping, steps starting at any alignment (small calls only). */
  if ((r >> 16) % 4 == 0 && c->proto == CHR_PROTO_SIMPLE && c->count < 100000) c->chunkElems = 61 + (r >> 20) % 3000;
  /* Alignment of the user buffers: 16-byte (vector path), element (scalar), or byte (bytewise). */
  switch ((r >> 40) % 6) {
    case 0: tc.misalign = c->typeSize; break;
    case 1: tc.misalign = c->typeSize > 1 ? 1 : 0; break;
    default: tc.misalign = 0; break;
  }
}

static int funcReduces(int func) {
  return func == CT_AR_RING || func == CT_AR_TREE || func == CT_AR_PAIR || func == CT_REDUCESCATTER || func == CT_REDUCE ||
         func == CT_LOCAL;
}

static int funcRuns(int func, int n) {
  if (func == CT_LOCAL) return n == 1;
  if (func == CT_AR_TREE) return n > 1;
  if (func == CT_AR_PAIR) return n == 2;
  return n > 1 || func == CT_ALLTOALL;
}

static void setOp(struct run* R, struct chrTestCall* c, int opIndex) {
  /* opIndex: 0..3 sum prod max min, 4 PreMulSum by value, 5 PreMulSum by pointer, 6 SumPostDiv. */
  c->op = opIndex <= 3 ? opIndex : opIndex <= 5 ? chrRedPreMulSum : chrRedSumPostDiv;
  c->scalarPtr = opIndex == 5;
  c->opArg = opIndex == 4 ? chrTestScalar(c->type, &R->rng) : opIndex == 6 ? (uint64_t)R->n : 0;
}

static void runAll(struct run* R, int quick) {
  const int n = R->n;
  const uint64_t small[] = {0, 1, 1237};
  /* Every function x type x op at small and odd sizes, in and out of place, SIMPLE. */
  for (int func = 0; func < CT_NUM_FUNCS; func++) {
    if (!funcRuns(func, n)) continue;
    for (int type = 0; type < 12; type++) {
      const int nOps = funcReduces(func) ? (isIntType(type) ? 7 : 6) : 1;
      for (int o = 0; o < nOps; o++)
        for (int s = 0; s < 3; s++)
          for (int inPlace = 0; inPlace < 2; inPlace++) {
            if (func == CT_ALLTOALL && inPlace) continue;
            if (quick && (s == 0 || inPlace)) continue;
            uint64_t count = small[s] ? small[s] + chrTestRand(&R->rng) % 64 : 0;
            struct chrTestCall* c = newCall(func, type, 0, count, inPlace, CHR_PROTO_SIMPLE);
            setOp(R, c, o);
            variety(R, c);
            runCase(R);
          }
    }
  }
  /* Every root of broadcast and reduce. */
  for (int root = 0; root < n && n > 1; root++)
    for (int func = CT_BROADCAST; func <= CT_REDUCE; func++) {
      struct chrTestCall* c = newCall(func, ncclFloat32, chrRedSum, 100000 + chrTestRand(&R->rng) % 1000, root & 1,
                                      CHR_PROTO_SIMPLE);
      c->root = root;
      runCase(R);
    }
  /* LL: every function and type, sum (and PreMulSum for reductions), up to several LL steps. */
  for (int func = 0; func < CT_NUM_FUNCS; func++) {
    if (!funcRuns(func, n)) continue;
    for (int type = 0; type < 12; type++)
      for (int o = 0; o < (funcReduces(func) ? 2 : 1); o++)
        for (int inPlace = 0; inPlace < 2; inPlace++) {
          if (func == CT_ALLTOALL && inPlace) continue;
          uint64_t count = 1 + chrTestRand(&R->rng) % (quick ? 3000 : 30000) / (uint64_t)chrTestTypeSize(type);
          struct chrTestCall* c = newCall(func, type, 0, count, inPlace, CHR_PROTO_LL);
          setOp(R, c, o ? 4 : 0);
          variety(R, c);
          runCase(R);
        }
  }
  /* A few MB, a subset of types and ops, every function. */
  const int bigTypeOps[][2] = {{ncclFloat32, 0}, {ncclFloat16, 4}, {ncclInt32, 6}, {ncclBfloat16, 2},
                               {ncclFloat8e4m3, 0}, {ncclFloat64, 1}, {ncclUint8, 5}, {ncclInt64, 3}};
  const int nBig = quick ? 2 : (int)(sizeof bigTypeOps / sizeof bigTypeOps[0]);
  for (int func = 0; func < CT_NUM_FUNCS; func++) {
    if (!funcRuns(func, n)) continue;
    for (int k = 0; k < nBig; k++)
      for (int inPlace = 0; inPlace < 2; inPlace++) {
        if (func == CT_ALLTOALL && inPlace) continue;
        const int type = funcReduces(func) ? bigTypeOps[k][0] : bigTypeOps[k][0];
        uint64_t count = countFor(func, n, chrTestTypeSize(type), (3u << 20) + chrTestRand(&R->rng) % 4096);
        struct chrTestCall* c = newCall(func, type, 0, count, inPlace, CHR_PROTO_SIMPLE);
        if (funcReduces(func)) setOp(R, c, isIntType(type) || bigTypeOps[k][1] != 6 ? bigTypeOps[k][1] : 0);
        variety(R, c);
        runCase(R);
      }
  }
  /* Several calls of mixed types and ops in one plan: the launcher cuts it into several kernels. */
  for (int g = 0; g < (quick ? 4 : 40); g++) {
    memset(&tc, 0, sizeof tc);
    tc.nCalls = 2 + (int)(chrTestRand(&R->rng) % (CT_MAX_CALLS - 1));
    for (int k = 0; k < tc.nCalls; k++) {
      struct chrTestCall* c = &tc.calls[k];
      do c->func = (int)(chrTestRand(&R->rng) % CT_NUM_FUNCS);
      while (!funcRuns(c->func, n) || c->func == CT_AR_TREE); /* tree lanes use every channel */
      c->type = (int)(chrTestRand(&R->rng) % 12);
      c->typeSize = chrTestTypeSize(c->type);
      c->proto = chrTestRand(&R->rng) % 3 ? CHR_PROTO_SIMPLE : CHR_PROTO_LL;
      c->count = 1 + chrTestRand(&R->rng) % 5000;
      c->inPlace = c->func != CT_ALLTOALL && (chrTestRand(&R->rng) & 1);
      c->nChannels = 2;
      c->root = (int)(chrTestRand(&R->rng) % (uint64_t)n);
      c->chunkElems = (c->proto == CHR_PROTO_LL ? LL_LINES * 8u : STEP_BYTES) / (uint64_t)c->typeSize;
      if (funcReduces(c->func)) setOp(R, c, (int)(chrTestRand(&R->rng) % (isIntType(c->type) ? 7 : 6)));
      if (c->scalarPtr) c->type = tc.calls[0].type, c->typeSize = chrTestTypeSize(c->type); /* one device scalar */
      if (c->scalarPtr) c->chunkElems = (c->proto == CHR_PROTO_LL ? LL_LINES * 8u : STEP_BYTES) / (uint64_t)c->typeSize;
    }
    runCase(R);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <nRanks> [--quick] [--seed S] [--sim-only]\n", argv[0]);
    return 2;
  }
  struct run R;
  memset(&R, 0, sizeof R);
  R.n = atoi(argv[1]);
  int quick = 0;
  uint64_t seed = 1;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--sim-only")) R.simOnly = 1;
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
  }
  if (R.n < 1 || R.n > CT_MAX_RANKS) {
    fprintf(stderr, "1 to %d ranks\n", CT_MAX_RANKS);
    return 2;
  }
  if (!R.simOnly) chrTestRequireGpu(argv[0]);
  const double t0 = chrTestNow();
  R.rng = seed * 7919 + (uint64_t)R.n;
  R.seed = seed << 32;
  for (int i = 0; i < R.n; i++) R.ringOrder[i] = i;
  for (int i = R.n - 1; i > 0; i--) { /* a shuffled ring: ring position != rank */
    int j = (int)(chrTestRand(&R.rng) % (uint64_t)(i + 1)), t = R.ringOrder[i];
    R.ringOrder[i] = R.ringOrder[j];
    R.ringOrder[j] = t;
  }
  if (R.simOnly) {
    runAll(&R, quick);
    printf("gpu.colls n=%d (simulation only): %d cases, %.1f s\n", R.n, R.cases, chrTestNow() - t0);
    return 0;
  }
  struct chrDevGroupConfig cfg = {R.n, 4, 2, STEP_BYTES, LL_LINES, R.ringOrder, 0};
  CT_DEV(chrDevGroupCreate(&cfg, &R.group));
  for (int r = 0; r < R.n; r++) {
    CT_CUDA(cudaStreamCreateWithFlags(&R.streams[r], cudaStreamNonBlocking));
    CT_CUDA(cudaMalloc((void**)&R.devA[r], REGION_BYTES));
    CT_CUDA(cudaMalloc((void**)&R.devB[r], REGION_BYTES));
  }
  CT_CUDA(cudaMalloc((void**)&R.devScalar, 64));
  R.back = (char*)malloc(REGION_BYTES);
  runAll(&R, quick);
  printf("gpu.colls n=%d: %d cases, %d failed, %.1f s (seed %llu)\n", R.n, R.cases, R.failures, chrTestNow() - t0,
         (unsigned long long)seed);
  for (int r = 0; r < R.n; r++) {
    cudaStreamDestroy(R.streams[r]);
    cudaFree(R.devA[r]);
    cudaFree(R.devB[r]);
  }
  cudaFree(R.devScalar);
  CT_DEV(chrDevGroupDestroy(R.group));
  free(R.back);
  return R.failures ? 1 : 0;
}
