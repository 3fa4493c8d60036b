/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_sim.c (gpu.sim): checks the GPU tests' own machinery without a GPU: the plans gpu_plan.c
 * builds, run through the reference simulation (gpu_sim.c, with the host executor's chrReduce), must
 * give what each function means, computed here directly element by element: integer results
 * exactly (wrap-around, so the order of the terms does not matter), float max/min by value. Every
 * function, ranks 1..8 with shuffled rings, sizes from 0 to many steps, in and out of place.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/float_convert.h"
#include "exec/reduce.h"
#include "gpu_case.h"
#include "gpu_data.h"
#include "nccl.h"
#include "config/algo_select.h"

static int failures = 0;

static uint64_t loadU(const char* p, int type) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)chrTestTypeSize(type));
  return v;
}

static int64_t loadS(const char* p, int type) {
  uint64_t v = loadU(p, type);
  int bits = 8 * chrTestTypeSize(type);
  return bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static double loadF(const char* p, int type) {
  uint64_t u = loadU(p, type);
  float f;
  switch (type) {
    case ncclFloat16: return chrHalfToFloat((uint16_t)u);
    case ncclBfloat16: return chrBf16ToFloat((uint16_t)u);
    case ncclFloat32: memcpy(&f, &u, 4); return f;
    case ncclFloat8e4m3: return chrFp8e4m3ToFloat((uint8_t)u);
    case ncclFloat8e5m2: return chrFp8e5m2ToFloat((uint8_t)u);
    default: { double d; memcpy(&d, &u, 8); return d; }
  }
}

static int isSigned(int type) { return type == ncclInt8 || type == ncclInt32 || type == ncclInt64; }

/* One element of the reduction over all ranks' inputs, direct; integers as bits of the type. */
struct directVal {
  uint64_t u;
  double f;
};

static struct directVal fold(const struct chrTestCall* c, const char* const* in, int n, size_t elem) {
  const int ts = c->typeSize;
  struct directVal v = {0, 0};
  if (chrTestTypeIsFloat(c->type)) {
    for (int r = 0; r < n; r++) {
      double x = loadF(in[r] + elem * (size_t)ts, c->type);
      if (r == 0) v.f = x;
      else if (v.f != v.f) continue; /* NaN propagates */
      else if (x != x) v.f = x;
      else if (c->op == chrRedMax ? x > v.f : x < v.f) v.f = x;
    }
    return v;
  }
  const uint64_t mask = ts == 8 ? ~0ull : ((1ull << (8 * ts)) - 1);
  for (int r = 0; r < n; r++) {
    const char* p = in[r] + elem * (size_t)ts;
    uint64_t x = loadU(p, c->type);
    if (c->op == chrRedPreMulSum) x = x * c->opArg;
    if (r == 0) {
      v.u = x & mask;
      continue;
    }
    switch (c->op) {
      case chrRedProd: v.u = (v.u * x) & mask; break;
      case chrRedMax:
      case chrRedMin: {
        int greater = isSigned(c->type) ? loadS(p, c->type) > loadS((const char*)&v.u, c->type) : (x & mask) > v.u;
        int less = isSigned(c->type) ? loadS(p, c->type) < loadS((const char*)&v.u, c->type) : (x & mask) < v.u;
        if (c->op == chrRedMax ? greater : less) v.u = x & mask;
        break;
      }
      default: v.u = (v.u + x) & mask; break;
    }
  }
  if (c->op == chrRedSumPostDiv) {
    if (isSigned(c->type)) v.u = (uint64_t)(loadS((const char*)&v.u, c->type) / (int64_t)c->opArg) & mask;
    else v.u = v.u / c->opArg;
  }
  return v;
}

static int sameVal(const struct chrTestCall* c, const char* got, struct directVal want) {
  if (chrTestTypeIsFloat(c->type)) {
    double g = loadF(got, c->type);
    return g == want.f || (g != g && want.f != want.f);
  }
  return loadU(got, c->type) == want.u;
}

/* Expected output of rank r: fills `exp` (a copy of its initial region B) and marks compared bytes. */
static void checkCase(struct chrTestCase* tc, const char* name) {
  const struct chrTestCall* c = &tc->calls[0];
  const int n = tc->nRanks, ts = c->typeSize;
  const uint64_t cnt = c->count;
  const char* in[CT_MAX_RANKS];
  for (int r = 0; r < n; r++) in[r] = c->inPlace ? tc->initB[r] + tc->offB[0] : tc->initA[r] + tc->offA[0];
  /* In place, a rank's input sits inside its region B (gpu_plan.c's chrTestAddresses). */
  if (c->inPlace && c->func == CT_ALLGATHER)
    for (int r = 0; r < n; r++) in[r] += cnt * (uint64_t)ts * (uint64_t)r;
  for (int r = 0; r < n; r++) {
    char* exp = (char*)malloc(tc->bytesB);
    memcpy(exp, tc->initB[r], tc->bytesB);
    char* out = tc->simB[r] + tc->offB[0];
    size_t outOff = tc->offB[0];
    if (c->inPlace && c->func == CT_REDUCESCATTER) outOff += cnt * (uint64_t)ts * (uint64_t)r, out += cnt * (uint64_t)ts * (uint64_t)r;
    size_t outElems = 0;
    int bad = 0;
    for (uint64_t i = 0; i < cnt && !bad; i++) {
      switch (c->func) {
        case CT_AR_RING:
        case CT_AR_TREE:
        case CT_AR_PAIR:
        case CT_LOCAL:
          bad = !sameVal(c, out + i * ts, fold(c, in, n, i));
          outElems = cnt;
          break;
        case CT_REDUCESCATTER:
          bad = !sameVal(c, out + i * ts, fold(c, in, n, (size_t)r * cnt + i));
          outElems = cnt;
          break;
        case CT_REDUCE:
          if (r == c->root) bad = !sameVal(c, out + i * ts, fold(c, in, n, i)), outElems = cnt;
          break;
        case CT_BROADCAST:
          bad = memcmp(out + i * ts, in[c->root] + i * ts, (size_t)ts) != 0;
          outElems = cnt;
          break;
        case CT_ALLGATHER:
        case CT_ALLTOALL:
          for (int p = 0; p < n && !bad; p++) {
            const char* src = c->func == CT_ALLGATHER ? in[p] + i * ts : in[p] + ((uint64_t)r * cnt + i) * ts;
            bad = memcmp(out + ((uint64_t)p * cnt + i) * ts, src, (size_t)ts) != 0;
          }
          outElems = cnt * (uint64_t)n;
          break;
      }
      if (bad) {
        fprintf(stderr, "FAIL %s: rank %d element %llu wrong\n", name, r, (unsigned long long)i);
        failures++;
      }
    }
    /* Everything outside the output must be as it was. */
    if (!bad) {
      memcpy(exp + outOff, tc->simB[r] + outOff, outElems * (size_t)ts);
      if (memcmp(exp, tc->simB[r], tc->bytesB) != 0) {
        fprintf(stderr, "FAIL %s: rank %d wrote outside its output\n", name, r);
        failures++;
      }
      if (memcmp(tc->simA[r], tc->initA[r], tc->bytesA) != 0) {
        fprintf(stderr, "FAIL %s: rank %d changed its input region\n", name, r);
        failures++;
      }
    }
    free(exp);
  }
}

static void runCase(struct chrTestCase* tc, uint64_t seed) {
  char name[512], err[512];
  chrTestCaseName(tc, name, sizeof name);
  if (chrTestCaseInit(tc, seed)) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (int r = 0; r < tc->nRanks; r++) {
    tc->devA[r] = (uint64_t)(uintptr_t)tc->simA[r];
    tc->devB[r] = (uint64_t)(uintptr_t)tc->simB[r];
  }
  tc->devScalar = (uint64_t)(uintptr_t)&tc->scalarBits;
  if (chrTestCaseBuild(tc)) {
    fprintf(stderr, "FAIL %s: plan does not fit\n", name);
    failures++;
  } else if (chrTestCaseSimulate(tc, err, sizeof err)) {
    fprintf(stderr, "FAIL %s: simulation: %s\n", name, err);
    failures++;
  } else {
    checkCase(tc, name);
  }
  chrTestCaseFree(tc);
}

int main(void) {
  static struct chrTestCase tc;
  static const int nList[] = {1, 2, 3, 4, 5, 7, 8};
  static const uint64_t counts[] = {0, 1, 7, 1001, 20011};
  static const uint64_t chunks[] = {1, 7, 512};
  struct { int type, op; } typeOps[] = {{ncclInt32, chrRedSum}, {ncclUint8, chrRedProd}, {ncclInt8, chrRedMax},
                                        {ncclInt64, chrRedMin}, {ncclUint32, chrRedPreMulSum}, {ncclInt32, chrRedSumPostDiv},
                                        {ncclFloat32, chrRedMax}, {ncclFloat16, chrRedMin}};
  uint64_t rng = 12345, seed = 1;
  int cases = 0;
  for (size_t ni = 0; ni < sizeof nList / sizeof nList[0]; ni++) {
    const int n = nList[ni];
    for (int func = 0; func < CT_NUM_FUNCS; func++) {
      if ((func == CT_LOCAL) != (n == 1) && func != CT_ALLTOALL) continue;
      if (func == CT_AR_PAIR && n != 2) continue;
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int inPlace = 0; inPlace < 2; inPlace++) {
          if (func == CT_ALLTOALL && inPlace) continue;
          memset(&tc, 0, sizeof tc);
          tc.nRanks = n;
          for (int i = 0; i < n; i++) tc.ringOrder[i] = i;
          for (int i = n - 1; i > 0; i--) { /* a shuffled ring */
            int j = (int)(chrTestRand(&rng) % (uint64_t)(i + 1)), t = tc.ringOrder[i];
            tc.ringOrder[i] = tc.ringOrder[j];
            tc.ringOrder[j] = t;
          }
          tc.nCalls = 1;
          struct chrTestCall* c = &tc.calls[0];
          int to = (int)(chrTestRand(&rng) % (sizeof typeOps / sizeof typeOps[0]));
          c->func = func;
          c->type = typeOps[to].type;
          c->typeSize = chrTestTypeSize(c->type);
          c->op = typeOps[to].op;
          c->opArg = c->op == chrRedPreMulSum ? 3 : c->op == chrRedSumPostDiv ? (uint64_t)n : 0;
          c->proto = CHR_PROTO_SIMPLE;
          c->root = (int)(chrTestRand(&rng) % (uint64_t)n);
          c->inPlace = inPlace;
          c->nChannels = 1 + (int)(chrTestRand(&rng) % 3);
          c->count = counts[ci];
          c->chunkElems = chunks[chrTestRand(&rng) % 3];
          tc.misalign = (int)(chrTestRand(&rng) % 2) * c->typeSize;
          runCase(&tc, seed++);
          cases++;
        }
    }
  }
  if (failures) {
    fprintf(stderr, "%d of %d cases failed\n", failures, cases);
    return 1;
  }
  return 0;
}
