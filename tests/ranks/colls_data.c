/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls_data.c: data generation and references for test_allreduce and test_colls (see colls_data.h),
 * one copy shared by the tests of every reducing collective.
 */
#include "colls_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char* const chrTestOpNames[CHR_TOP_COUNT] = {
    "sum", "prod", "max", "min", "avg", "premulsum(host)", "premulsum(device)"};

static double* decodeTables[ncclNumTypes];
static const double prodFactors[6] = {-2, -1, -0.5, 0.5, 1, 2};

int chrTestBuildTables(void) {
  for (int type = 0; type < ncclNumTypes; type++) {
    const chrNumType* t = chrNumTypeInfo((ncclDataType_t)type);
    if (!t->isFloat || t->size > 2 || decodeTables[type]) continue;
    size_t n = (size_t)1 << (8 * t->size);
    decodeTables[type] = malloc(n * sizeof(double));
    if (!decodeTables[type]) return 1;
    for (size_t b = 0; b < n; b++) decodeTables[type][b] = chrNumDecode((ncclDataType_t)type, b);
  }
  return 0;
}

static double decodeFast(const chrTestCase* c, uint64_t bits) {
  const double* table = decodeTables[c->type];
  if (table) return table[bits];
  if (c->type == ncclFloat32) {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  if (c->type == ncclFloat64) {
    double d;
    memcpy(&d, &bits, 8);
    return d;
  }
  return chrNumDecode(c->type, bits);
}

static uint64_t encodeFast(const chrTestCase* c, double v) {
  if (c->intBits && fabs(v) <= (double)c->intRange && (double)(int64_t)v == v)
    return c->intBits[(int64_t)v + c->intRange];
  return chrNumEncode(c->type, v);
}

uint64_t chrTestMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* seed is itself a mix64 output; (rank, i) pairs are distinct below 2^44 elements, and mix64 is a
 * bijection, so one round gives independent-looking values per (seed, rank, i). */
uint64_t chrTestRnd(uint64_t seed, int rank, size_t i) {
  return chrTestMix64(seed ^ ((uint64_t)(unsigned)rank << 44) ^ (uint64_t)i);
}

/* A value in [0, range) from the high 32 bits of h (range < 2^32). */
static uint64_t below(uint64_t h, uint64_t range) { return ((h >> 32) * range) >> 32; }

int chrTestIsPremul(chrTestOp op) { return op == CHR_TOP_PREMUL_IMM || op == CHR_TOP_PREMUL_DEV; }

/* Any value for integers (products wrap exactly); 1..3 for floats (kept inside the exact range). */
int64_t chrTestScalarOf(const chrTestCase* c, int rank) { return c->t->isFloat ? 1 + rank % 3 : 3 + 7 * (int64_t)rank; }

ncclResult_t chrTestCreateOp(ncclComm_t comm, int rank, const chrTestCase* c, uint64_t* scalar, ncclRedOp_t* op) {
  static const ncclRedOp_t builtin[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  if (!chrTestIsPremul(c->op)) {
    *op = builtin[c->op];
    return ncclSuccess;
  }
  uint64_t want = chrNumEncodeInt(c->type, chrTestScalarOf(c, rank));
  uint64_t decoy = chrNumEncodeInt(c->type, 5);
  int imm = c->op == CHR_TOP_PREMUL_IMM;
  *scalar = imm ? want : decoy;
  ncclResult_t res = ncclRedOpCreatePreMulSum(op, scalar, c->type, imm ? ncclScalarHostImmediate : ncclScalarDevice, comm);
  if (res != ncclSuccess) return res;
  *scalar = imm ? decoy : want;
  return ncclSuccess;
}

int chrTestCaseInit(chrTestCase* c, ncclDataType_t type, chrTestOp op, size_t count, int nranks, uint64_t seed) {
  memset(c, 0, sizeof(*c));
  c->type = type;
  c->t = chrNumTypeInfo(type);
  c->op = op;
  c->count = count;
  c->nranks = nranks;
  c->seed = seed;
  c->active = nranks;
  c->extendShift = 64 - 8 * c->t->size;
  if (c->t->isFloat && (op == CHR_TOP_SUM || op == CHR_TOP_AVG || chrTestIsPremul(op))) {
    /* Partial sums must stay within the exact-integer range L: at most `active` ranks per element
     * contribute values of magnitude <= amp times a scalar <= 3, and active*amp*3 <= L. */
    int64_t limit = c->t->exactInt, smax = chrTestIsPremul(op) ? 3 : 1;
    int64_t amp = limit / ((int64_t)nranks * smax);
    if (amp > 1000) amp = 1000;
    if (amp < 1) amp = 1;
    int64_t active = limit / (amp * smax);
    c->amp = amp;
    c->active = (int)(active < nranks ? active : nranks);
  }
  if (c->t->isFloat) {
    for (int f = 0; f < 6; f++) c->prodBits[f] = chrNumEncode(type, prodFactors[f]);
    if (c->t->size <= 2) {
      c->intBits = malloc(sizeof(uint64_t) * (size_t)(2 * c->t->exactInt + 1));
      if (!c->intBits) return 1;
      c->intRange = c->t->exactInt;
      for (int64_t v = -c->intRange; v <= c->intRange; v++) c->intBits[v + c->intRange] = chrNumEncode(type, (double)v);
    }
  }
  return 0;
}

void chrTestCaseFree(chrTestCase* c) {
  free(c->intBits);
  c->intBits = NULL;
}

/* Integers, as a sign- or zero-extended 64-bit pattern. */
static uint64_t genInt(const chrTestCase* c, int rank, size_t i) {
  uint64_t h = chrTestRnd(c->seed, rank, i);
  if (c->op != CHR_TOP_AVG) {
    if (c->extendShift == 0) return h;
    return c->t->isSigned ? (uint64_t)((int64_t)(h << c->extendShift) >> c->extendShift)
                          : (h << c->extendShift) >> c->extendShift;
  }
  /* avg: |v| <= max/n, so the sum of n values cannot wrap. */
  uint64_t n = (uint64_t)c->nranks;
  if (c->t->isSigned) {
    uint64_t lim = (uint64_t)c->t->exactInt / n;
    /* In [-lim, lim], computed modulo 2^64: with lim = INT64_MAX (64-bit, one rank) the signed
     * subtraction would overflow. */
    return h % (2 * lim + 1) - lim;
  }
  uint64_t typeMax = c->t->size == 8 ? UINT64_MAX : (((uint64_t)1) << (c->t->size * 8)) - 1;
  uint64_t lim = typeMax / n;
  return lim == UINT64_MAX ? h : h % (lim + 1);
}

/* Floats, as an exact double value representable in the type, and its encoding. */
static double genFloat(const chrTestCase* c, int rank, size_t i, uint64_t* bits, int needBits) {
  uint64_t h = chrTestRnd(c->seed, rank, i);
  switch (c->op) {
    case CHR_TOP_PROD: {
      /* Signed powers of two with |v| in [1/2, 2]: over 8 ranks |product| is in [2^-8, 2^8], exact
       * in every type (e4m3's smallest subnormal is 2^-9, its largest value 448). */
      int f = (int)below(h, 6);
      *bits = c->prodBits[f];
      return prodFactors[f];
    }
    case CHR_TOP_MAX:
    case CHR_TOP_MIN:
      /* Random bit patterns: every exponent, subnormals included; no NaN, infinity or zero (the sign
       * of a zero result of max(+0,-0) is not specified). */
      for (;;) {
        uint64_t b = c->t->size == 8 ? h : h & ((((uint64_t)1) << (c->t->size * 8)) - 1);
        double v = decodeFast(c, b);
        if (isfinite(v) && v != 0) {
          *bits = b;
          return v;
        }
        h = chrTestMix64(h);
      }
    default: {
      double v = 0;
      if (c->active >= c->nranks || ((size_t)rank + i) % (size_t)c->nranks < (size_t)c->active)
        v = (double)((int64_t)below(h, (uint64_t)(2 * c->amp + 1)) - c->amp);
      if (needBits) *bits = encodeFast(c, v);
      return v;
    }
  }
}

uint64_t chrTestGenBits(const chrTestCase* c, int rank, size_t i) {
  uint64_t bits;
  if (c->t->isFloat) {
    genFloat(c, rank, i, &bits, 1);
    return bits;
  }
  return chrNumEncodeInt(c->type, (int64_t)genInt(c, rank, i));
}

static int intLess(const chrTestCase* c, uint64_t a, uint64_t b) {
  return c->t->isSigned ? (int64_t)a < (int64_t)b : a < b;
}

int chrTestRefCompute(const chrTestCase* c, chrTestRef* ref) {
  const int n = c->nranks;
  size_t alloc = c->count ? c->count : 1;
  memset(ref, 0, sizeof(*ref));
  ref->expect = malloc(alloc * (size_t)c->t->size);
  if (!ref->expect) return 1;
  if (c->t->isFloat && c->op == CHR_TOP_AVG) {
    ref->exact = malloc(alloc * sizeof(double));
    ref->absSum = malloc(alloc * sizeof(double));
    if (!ref->exact || !ref->absSum) return 1;
  }
  for (size_t i = 0; i < c->count; i++) {
    if (!c->t->isFloat) {
      uint64_t acc = genInt(c, 0, i);
      if (chrTestIsPremul(c->op)) acc *= (uint64_t)chrTestScalarOf(c, 0);
      for (int r = 1; r < n; r++) {
        uint64_t v = genInt(c, r, i);
        switch (c->op) {
          case CHR_TOP_SUM:
          case CHR_TOP_AVG: acc += v; break;
          case CHR_TOP_PROD: acc *= v; break;
          case CHR_TOP_MAX:
            if (intLess(c, acc, v)) acc = v;
            break;
          case CHR_TOP_MIN:
            if (intLess(c, v, acc)) acc = v;
            break;
          default: acc += v * (uint64_t)chrTestScalarOf(c, r); break;
        }
      }
      /* avg: the sum did not wrap (see genInt); the division is C's, toward zero. */
      if (c->op == CHR_TOP_AVG) acc = c->t->isSigned ? (uint64_t)((int64_t)acc / n) : acc / (uint64_t)n;
      chrNumStore(ref->expect, i, c->t->size, chrNumEncodeInt(c->type, (int64_t)acc));
      continue;
    }
    uint64_t bits, bestBits;
    const int needBits = c->op == CHR_TOP_MAX || c->op == CHR_TOP_MIN;
    double acc = genFloat(c, 0, i, &bestBits, needBits), absSum = fabs(acc);
    if (chrTestIsPremul(c->op)) acc *= (double)chrTestScalarOf(c, 0);
    for (int r = 1; r < n; r++) {
      double v = genFloat(c, r, i, &bits, needBits);
      switch (c->op) {
        case CHR_TOP_SUM:
        case CHR_TOP_AVG:
          acc += v;
          absSum += fabs(v);
          break;
        case CHR_TOP_PROD: acc *= v; break;
        case CHR_TOP_MAX:
          if (v > acc) {
            acc = v;
            bestBits = bits;
          }
          break;
        case CHR_TOP_MIN:
          if (v < acc) {
            acc = v;
            bestBits = bits;
          }
          break;
        default: acc += v * (double)chrTestScalarOf(c, r); break;
      }
    }
    if (c->op == CHR_TOP_AVG) {
      ref->exact[i] = acc / n;
      ref->absSum[i] = absSum;
    }
    /* Exact by construction (not used for avg); max/min keep the winner's own bits. */
    chrNumStore(ref->expect, i, c->t->size, needBits ? bestBits : encodeFast(c, acc));
  }
  return 0;
}

void chrTestRefFree(chrTestRef* ref) {
  free(ref->expect);
  free(ref->exact);
  free(ref->absSum);
  memset(ref, 0, sizeof(*ref));
}

/* avg on a float type: the library computes sum(x * (1/n)) (or sum(x) / n). 1/n rounds (unit
 * roundoff u), each product rounds (u), and each of the n-1 additions rounds (u, relative to a partial
 * sum bounded by sum|x|/n); so |result - exact| <= (n+1) u sum|x| / n to first order. We allow
 * (n+2) u sum|x| / n, plus n times the smallest subnormal for products below the normal range (fp8). */
static double avgTolerance(const chrTestCase* c, double absSum) {
  int bias = (1 << (c->t->expBits - 1)) - 1;
  double tiny = ldexp(1.0, 1 - bias - c->t->mantBits);
  return (c->nranks + 2) * c->t->unitRoundoff * absSum / c->nranks + c->nranks * tiny;
}

int chrTestRefMatches(const chrTestCase* c, const chrTestRef* ref, size_t i, uint64_t got) {
  if (c->t->isFloat && c->op == CHR_TOP_AVG)
    return fabs(decodeFast(c, got) - ref->exact[i]) <= avgTolerance(c, ref->absSum[i]);
  return got == chrNumLoad(ref->expect, i, c->t->size);
}

void chrTestFillCopy(void* buf, size_t n, int size, uint64_t seed, int rank, size_t offset) {
  switch (size) {
    case 1:
      for (size_t i = 0; i < n; i++) ((uint8_t*)buf)[i] = (uint8_t)chrTestRnd(seed, rank, offset + i);
      break;
    case 2:
      for (size_t i = 0; i < n; i++) ((uint16_t*)buf)[i] = (uint16_t)chrTestRnd(seed, rank, offset + i);
      break;
    case 4:
      for (size_t i = 0; i < n; i++) ((uint32_t*)buf)[i] = (uint32_t)chrTestRnd(seed, rank, offset + i);
      break;
    default:
      for (size_t i = 0; i < n; i++) ((uint64_t*)buf)[i] = chrTestRnd(seed, rank, offset + i);
      break;
  }
}
