/*
 * test_allreduce: ncclAllReduce on host buffers with N ranks as N processes (tools/launch.c).
 *
 *   test_allreduce <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]
 *
 * Every datatype x every op (sum prod max min avg, premulsum with a host-immediate and with a
 * "device" scalar) x sizes 0, 1, 1031 and --medium bytes, in place and out of place; plus two large
 * cases (float sum, int8 sum, --big bytes) and genuinely random float32/float64 sums.
 *
 * Data is random per rank from a seed. Each rank regenerates every rank's data and reduces it with
 * its own code (float formats decoded/encoded by tools/perf/numeric.c, never by the library):
 * - integers: any values (two's-complement wrap is exact in any order), except avg whose sum must
 *   not wrap; compared bit for bit;
 * - floats: small integers (sum, avg, premulsum) or signed powers of two (prod) bounded so that
 *   every partial result is exact in the type, so the order of reduction does not matter and the
 *   result is compared bit for bit; max/min on random finite values, bit for bit; avg within a
 *   bound (see avgTolerance); the random float case within a bound (see randomCase).
 * Out of place, the send buffer must be unchanged; in both modes the elements after `count` must be.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "numeric.h"

#define GUARD 16          /* elements after the end that must stay untouched */
#define SENTINEL 0x5Au    /* fill byte of output and guard regions */
#define MAX_REPORTS 5     /* mismatches printed per case */

typedef enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, OP_PREMUL_IMM, OP_PREMUL_DEV, NUM_OPCASES } opCase;
static const char* opNames[NUM_OPCASES] = {"sum", "prod", "max", "min", "avg", "premulsum(host)", "premulsum(device)"};

typedef struct {
  int nhosts;
  size_t medium, big;
  int timeoutSec;
} testArgs;

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
  int failures;
} rankState;

/* Fast paths for the 1- and 2-byte float types, which only cache numeric.c's conversions:
 * decoding by a table per type, and encoding of the integers a case produces by a table per case. */
static double* decodeTables[ncclNumTypes];

static int buildDecodeTables(void) {
  for (int type = 0; type < ncclNumTypes; type++) {
    const chrNumType* t = chrNumTypeInfo((ncclDataType_t)type);
    if (!t->isFloat || t->size > 2) continue;
    size_t n = (size_t)1 << (8 * t->size);
    decodeTables[type] = malloc(n * sizeof(double));
    if (!decodeTables[type]) return 1;
    for (size_t b = 0; b < n; b++) decodeTables[type][b] = chrNumDecode((ncclDataType_t)type, b);
  }
  return 0;
}

/* One case: datatype, op, count, and the value distribution derived from them. */
typedef struct {
  ncclDataType_t type;
  const chrNumType* t;
  opCase op;
  size_t count;
  uint64_t seed;
  int nranks;
  int64_t amp;   /* floats (sum-like ops): |value| <= amp */
  int active;    /* floats (sum-like ops): ranks per element holding a non-zero value */
  uint64_t* intBits;  /* small floats: encodings of the integers in [-intRange, intRange] */
  int64_t intRange;
  uint64_t prodBits[6]; /* encodings of the prod factors */
  int extendShift;      /* integers: 64 - bits of the type, for sign or zero extension */
} testCase;

static const double prodFactors[6] = {-2, -1, -0.5, 0.5, 1, 2};

static double decodeFast(const testCase* c, uint64_t bits) {
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

static uint64_t encodeFast(const testCase* c, double v) {
  if (c->intBits && fabs(v) <= (double)c->intRange && (double)(int64_t)v == v)
    return c->intBits[(int64_t)v + c->intRange];
  return chrNumEncode(c->type, v);
}

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* seed is itself a mix64 output; (rank, i) pairs are distinct below 2^44 elements, and mix64 is a
 * bijection, so one round gives independent-looking values per (seed, rank, i). */
static uint64_t rnd(uint64_t seed, int rank, size_t i) {
  return mix64(seed ^ ((uint64_t)(unsigned)rank << 44) ^ (uint64_t)i);
}

/* A value in [0, range) from the high 32 bits of h (multiply-shift: no division; range < 2^32). */
static uint64_t below(uint64_t h, uint64_t range) { return ((h >> 32) * range) >> 32; }


static int isPremul(opCase op) { return op == OP_PREMUL_IMM || op == OP_PREMUL_DEV; }

/* The premulsum scalar of a rank: any value for integers (products wrap exactly); 1..3 for floats. */
static int64_t scalarOf(const testCase* c, int rank) {
  return c->t->isFloat ? 1 + rank % 3 : 3 + 7 * (int64_t)rank;
}

static void caseInit(testCase* c, ncclDataType_t type, opCase op, size_t count, int nranks, uint64_t seed) {
  memset(c, 0, sizeof(*c));
  c->type = type;
  c->t = chrNumTypeInfo(type);
  c->op = op;
  c->count = count;
  c->nranks = nranks;
  c->seed = seed;
  c->active = nranks;
  c->extendShift = 64 - 8 * c->t->size;
  if (c->t->isFloat && (op == OP_SUM || op == OP_AVG || isPremul(op))) {
    /* Partial sums must stay within the exact-integer range L: at most `active` ranks per element
     * contribute values of magnitude <= amp times a scalar <= 3, and active*amp*3 <= L. */
    int64_t limit = c->t->exactInt, smax = isPremul(op) ? 3 : 1;
    int64_t amp = limit / ((int64_t)nranks * smax);
    if (amp > 1000) amp = 1000;
    if (amp < 1) amp = 1;
    int64_t active = limit / (amp * smax);
    c->amp = amp;
    c->active = (int)(active < nranks ? active : nranks);
  }
  if (c->t->isFloat) {
    for (int f = 0; f < 6; f++) c->prodBits[f] = chrNumEncode(type, prodFactors[f]);
    if (c->t->size <= 2 && (c->intBits = malloc(sizeof(uint64_t) * (size_t)(2 * c->t->exactInt + 1))) != NULL) {
      c->intRange = c->t->exactInt;
      for (int64_t v = -c->intRange; v <= c->intRange; v++) c->intBits[v + c->intRange] = chrNumEncode(type, (double)v);
    }
  }
}

static void caseFree(testCase* c) {
  free(c->intBits);
  c->intBits = NULL;
}

/* --- data generation ---------------------------------------------------------------------------- */

/* Integers, as a sign- or zero-extended 64-bit pattern. */
static uint64_t genInt(const testCase* c, int rank, size_t i) {
  uint64_t h = rnd(c->seed, rank, i);
  if (c->op != OP_AVG) {
    /* The type's bits, sign- or zero-extended (the same as chrNumDecodeInt, inlined: hot loop). */
    if (c->extendShift == 0) return h;
    return c->t->isSigned ? (uint64_t)((int64_t)(h << c->extendShift) >> c->extendShift)
                          : (h << c->extendShift) >> c->extendShift;
  }
  /* avg: |v| <= max/n, so the sum of n values cannot wrap. */
  uint64_t n = (uint64_t)c->nranks;
  if (c->t->isSigned) {
    uint64_t lim = (uint64_t)c->t->exactInt / n;
    return (uint64_t)((int64_t)(h % (2 * lim + 1)) - (int64_t)lim);
  }
  uint64_t typeMax = c->t->size == 8 ? UINT64_MAX : (((uint64_t)1) << (c->t->size * 8)) - 1;
  uint64_t lim = typeMax / n;
  return lim == UINT64_MAX ? h : h % (lim + 1);
}

/* Floats, as an exact double value representable in the type, and its encoding. */
static double genFloat(const testCase* c, int rank, size_t i, uint64_t* bits, int needBits) {
  uint64_t h = rnd(c->seed, rank, i);
  switch (c->op) {
    case OP_PROD: {
      /* Signed powers of two with |v| in [1/2, 2]: over 8 ranks |product| is in [2^-8, 2^8], exact
       * in every type (e4m3's smallest subnormal is 2^-9, its largest value 448). */
      int f = (int)below(h, 6);
      *bits = c->prodBits[f];
      return prodFactors[f];
    }
    case OP_MAX:
    case OP_MIN:
      /* Random bit patterns: every exponent, subnormals included; no NaN, infinity or zero (the sign
       * of a zero result of max(+0,-0) is not specified). */
      for (;;) {
        uint64_t b = c->t->size == 8 ? h : h & ((((uint64_t)1) << (c->t->size * 8)) - 1);
        double v = decodeFast(c, b);
        if (isfinite(v) && v != 0) {
          *bits = b;
          return v;
        }
        h = mix64(h);
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

static uint64_t genBits(const testCase* c, int rank, size_t i) {
  uint64_t bits;
  if (c->t->isFloat) {
    genFloat(c, rank, i, &bits, 1);
    return bits;
  }
  return chrNumEncodeInt(c->type, (int64_t)genInt(c, rank, i));
}

/* --- reference ---------------------------------------------------------------------------------- */

typedef struct {
  void* expect;    /* expected elements, in the type (count elements) */
  double* exact;   /* avg on floats: the exact average */
  double* absSum;  /* avg on floats: sum of |x| over ranks */
} reference;

static int intLess(const testCase* c, uint64_t a, uint64_t b) {
  return c->t->isSigned ? (int64_t)a < (int64_t)b : a < b;
}

static void computeReference(const testCase* c, reference* ref) {
  const int n = c->nranks;
  for (size_t i = 0; i < c->count; i++) {
    if (!c->t->isFloat) {
      uint64_t acc = genInt(c, 0, i);
      if (isPremul(c->op)) acc *= (uint64_t)scalarOf(c, 0);
      for (int r = 1; r < n; r++) {
        uint64_t v = genInt(c, r, i);
        switch (c->op) {
          case OP_SUM: case OP_AVG: acc += v; break;
          case OP_PROD: acc *= v; break;
          case OP_MAX: if (intLess(c, acc, v)) acc = v; break;
          case OP_MIN: if (intLess(c, v, acc)) acc = v; break;
          default: acc += v * (uint64_t)scalarOf(c, r); break;
        }
      }
      /* avg: the sum did not wrap (see genInt); the division is C's, toward zero. */
      if (c->op == OP_AVG) acc = c->t->isSigned ? (uint64_t)((int64_t)acc / n) : acc / (uint64_t)n;
      chrNumStore(ref->expect, i, c->t->size, chrNumEncodeInt(c->type, (int64_t)acc));
      continue;
    }
    uint64_t bits, bestBits;
    const int needBits = c->op == OP_MAX || c->op == OP_MIN;
    double acc = genFloat(c, 0, i, &bestBits, needBits), absSum = fabs(acc);
    if (isPremul(c->op)) acc *= (double)scalarOf(c, 0);
    for (int r = 1; r < n; r++) {
      double v = genFloat(c, r, i, &bits, needBits);
      switch (c->op) {
        case OP_SUM: case OP_AVG: acc += v; absSum += fabs(v); break;
        case OP_PROD: acc *= v; break;
        case OP_MAX: if (v > acc) { acc = v; bestBits = bits; } break;
        case OP_MIN: if (v < acc) { acc = v; bestBits = bits; } break;
        default: acc += v * (double)scalarOf(c, r); break;
      }
    }
    if (c->op == OP_AVG) {
      ref->exact[i] = acc / n;
      ref->absSum[i] = absSum;
    }
    /* Exact by construction (not used for avg); max/min keep the winner's own bits. */
    chrNumStore(ref->expect, i, c->t->size, (c->op == OP_MAX || c->op == OP_MIN) ? bestBits : encodeFast(c, acc));
  }
}

/* avg on a float type: the library computes sum(x * (1/n)). 1/n rounds (unit roundoff u), each
 * product rounds (u), and each of the n-1 additions rounds (u, relative to a partial sum bounded by
 * sum|x|/n); so |result - exact| <= (n+1) u sum|x| / n to first order. We allow (n+2) u sum|x| / n,
 * plus n times the smallest subnormal for products below the normal range (fp8). */
static double avgTolerance(const testCase* c, double absSum) {
  int bias = (1 << (c->t->expBits - 1)) - 1;
  double tiny = ldexp(1.0, 1 - bias - c->t->mantBits);
  return (c->nranks + 2) * c->t->unitRoundoff * absSum / c->nranks + c->nranks * tiny;
}

/* --- the plan: every case and its reference, computed once, before the ranks are forked ---------- */

/* The reference of a case is the same on every rank; computing it once in the launching process
 * (which has not touched the library yet) and sharing it with the forked ranks copy-on-write saves
 * n-1 of n identical computations, which on 2 cores decides whether 8 ranks fit in a minute. */
typedef struct {
  testCase c;
  reference ref;
} plannedCase;

static plannedCase* plan;
static int nplanned;

static int planCases(int nranks, size_t medium) {
  plan = calloc(4 * ncclNumTypes * NUM_OPCASES, sizeof(plannedCase));
  if (!plan) return 1;
  for (int sizeIdx = 0; sizeIdx < 4; sizeIdx++) {
    for (int type = 0; type < ncclNumTypes; type++) {
      const chrNumType* t = chrNumTypeInfo((ncclDataType_t)type);
      size_t counts[4] = {0, 1, 1031, medium / (size_t)t->size};
      for (int op = 0; op < NUM_OPCASES; op++) {
        plannedCase* p = &plan[nplanned++];
        caseInit(&p->c, (ncclDataType_t)type, (opCase)op, counts[sizeIdx], nranks,
                 mix64(((uint64_t)sizeIdx << 32) ^ ((uint64_t)type << 16) ^ (uint64_t)op));
        size_t n = p->c.count ? p->c.count : 1;
        p->ref.expect = malloc(n * (size_t)t->size);
        if (t->isFloat && op == OP_AVG) {
          p->ref.exact = malloc(n * sizeof(double));
          p->ref.absSum = malloc(n * sizeof(double));
          if (!p->ref.exact || !p->ref.absSum) return 1;
        }
        if (!p->ref.expect) return 1;
        computeReference(&p->c, &p->ref);
      }
    }
  }
  return 0;
}

static void freePlan(void) {
  for (int i = 0; i < nplanned; i++) {
    caseFree(&plan[i].c);
    free(plan[i].ref.expect);
    free(plan[i].ref.exact);
    free(plan[i].ref.absSum);
  }
  free(plan);
}

/* --- running one case --------------------------------------------------------------------------- */

static void reportMismatch(rankState* st, const testCase* c, const char* mode, const char* what, size_t i,
                           uint64_t got, uint64_t want, int* reports) {
  if ((*reports)++ >= MAX_REPORTS) return;
  fprintf(stderr,
          "rank %d/%d: allreduce %s %s count %zu %s: %s element %zu: got 0x%llx (%.9g), expected 0x%llx (%.9g)\n",
          st->rank, st->nranks, c->t->name, opNames[c->op], c->count, mode, what, i, (unsigned long long)got,
          chrNumDecode(c->type, got), (unsigned long long)want, chrNumDecode(c->type, want));
}

static int checkGuard(rankState* st, const testCase* c, const char* mode, const unsigned char* buf, int* reports) {
  const unsigned char* g = buf + c->count * (size_t)c->t->size;
  for (size_t b = 0; b < GUARD * (size_t)c->t->size; b++) {
    if (g[b] != SENTINEL) {
      reportMismatch(st, c, mode, "guard byte after the end", b, g[b], SENTINEL, reports);
      return 1;
    }
  }
  return 0;
}

static int checkResult(rankState* st, const testCase* c, const reference* ref, const char* mode, const void* out) {
  int bad = 0, reports = 0;
  int exactCase = !(c->t->isFloat && c->op == OP_AVG);
  if (exactCase && memcmp(out, ref->expect, c->count * (size_t)c->t->size) == 0)
    return checkGuard(st, c, mode, out, &reports); /* the common case, without the element loop */
  for (size_t i = 0; i < c->count; i++) {
    uint64_t got = chrNumLoad(out, i, c->t->size);
    int ok;
    if (c->t->isFloat && c->op == OP_AVG) {
      double v = decodeFast(c, got);
      ok = fabs(v - ref->exact[i]) <= avgTolerance(c, ref->absSum[i]);
      if (!ok) reportMismatch(st, c, mode, "result (avg bound)", i, got, chrNumEncode(c->type, ref->exact[i]), &reports);
    } else {
      uint64_t want = chrNumLoad(ref->expect, i, c->t->size);
      ok = got == want;
      if (!ok) reportMismatch(st, c, mode, "result", i, got, want, &reports);
    }
    bad += !ok;
  }
  bad += checkGuard(st, c, mode, out, &reports);
  return bad;
}

static int ncclFailed(rankState* st, const char* what, ncclResult_t res) {
  const char* last = ncclGetLastError(st->comm);
  fprintf(stderr, "rank %d/%d: %s failed: %s: %s\n", st->rank, st->nranks, what, ncclGetErrorString(res),
          last ? last : "");
  return 1;
}

/* Creates the op of a case. For the "device" scalar, *scalar is what the library must read when the
 * collective runs: it is set after creation, to show that it was not read earlier. For the
 * host-immediate scalar, the memory is overwritten right after creation, to show it was copied. */
static ncclResult_t createOp(rankState* st, const testCase* c, uint64_t* scalar, ncclRedOp_t* op) {
  static const ncclRedOp_t builtin[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  if (!isPremul(c->op)) {
    *op = builtin[c->op];
    return ncclSuccess;
  }
  uint64_t want = chrNumEncodeInt(c->type, scalarOf(c, st->rank));
  uint64_t decoy = chrNumEncodeInt(c->type, 5);
  *scalar = c->op == OP_PREMUL_IMM ? want : decoy;
  ncclResult_t res = ncclRedOpCreatePreMulSum(op, scalar, c->type,
                                              c->op == OP_PREMUL_IMM ? ncclScalarHostImmediate : ncclScalarDevice,
                                              st->comm);
  if (res != ncclSuccess) return res;
  *scalar = c->op == OP_PREMUL_IMM ? decoy : want;
  return ncclSuccess;
}

/* Runs one case out of place and in place; returns non-zero only on an NCCL error (mismatches are
 * counted in st->failures, and the ranks carry on so that they stay in step). */
static int runCase(rankState* st, const testCase* c, const reference* refp) {
  const size_t ts = (size_t)c->t->size;
  const size_t bytes = (c->count + GUARD) * ts;
  unsigned char* orig = malloc(bytes);
  unsigned char* send = malloc(bytes);
  unsigned char* recv = malloc(bytes);
  const reference ref = *refp;
  int rc = 1, reports = 0, bad = 0;
  if (!orig || !send || !recv) {
    fprintf(stderr, "rank %d: out of memory\n", st->rank);
    goto done;
  }
  memset(orig, SENTINEL, bytes);
  for (size_t i = 0; i < c->count; i++) chrNumStore(orig, i, (int)ts, genBits(c, st->rank, i));
  uint64_t scalar = 0;
  ncclRedOp_t op;
  ncclResult_t res = createOp(st, c, &scalar, &op);
  if (res != ncclSuccess) {
    rc = ncclFailed(st, "ncclRedOpCreatePreMulSum", res);
    goto done;
  }
  char what[160];
  snprintf(what, sizeof(what), "ncclAllReduce(%s, %s, count %zu)", c->t->name, opNames[c->op], c->count);

  /* Out of place: the result, its guard, and an unchanged send buffer (guard included). */
  memcpy(send, orig, bytes);
  memset(recv, SENTINEL, bytes);
  res = ncclAllReduce(send, recv, c->count, c->type, op, st->comm, NULL);
  if (res != ncclSuccess) {
    rc = ncclFailed(st, what, res);
    goto destroy_op;
  }
  bad += checkResult(st, c, &ref, "out-of-place", recv);
  if (memcmp(send, orig, bytes) != 0) {
    for (size_t i = 0; i < c->count + GUARD; i++) {
      uint64_t got = chrNumLoad(send, i, (int)ts), want = chrNumLoad(orig, i, (int)ts);
      if (got != want) reportMismatch(st, c, "out-of-place", "send buffer changed at", i, got, want, &reports);
    }
    bad++;
  }

  /* In place. */
  memcpy(recv, orig, bytes);
  res = ncclAllReduce(recv, recv, c->count, c->type, op, st->comm, NULL);
  if (res != ncclSuccess) {
    rc = ncclFailed(st, what, res);
    goto destroy_op;
  }
  bad += checkResult(st, c, &ref, "in-place", recv);
  if (bad) st->failures++;
  rc = 0;
destroy_op:
  if (isPremul(c->op)) {
    res = ncclRedOpDestroy(op, st->comm);
    if (res != ncclSuccess && rc == 0) rc = ncclFailed(st, "ncclRedOpDestroy", res);
  }
done:
  free(orig);
  free(send);
  free(recv);
  return rc;
}

/* --- large cases, with a reference in closed form ----------------------------------------------- */

/* Rank r holds base(i) + r * step(i); the sum over ranks is n*base + step*n(n-1)/2. float: base in
 * [-512, 511], step in [-4, 4], so every partial sum is an integer below 2^13, exact in float. int8:
 * full range, wrapping; the sum is computed modulo 256, as the type does. */
static int bigCase(rankState* st, ncclDataType_t type, size_t bytes, int inPlace, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  size_t count = bytes / (size_t)t->size;
  const int64_t n = st->nranks, tri = n * (n - 1) / 2;
  char* send = malloc(count * (size_t)t->size + 1);
  char* recv = inPlace ? send : malloc(count * (size_t)t->size + 1);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: out of memory for %zu bytes\n", st->rank, bytes);
    free(send);
    if (!inPlace) free(recv);
    return 1;
  }
  for (size_t i = 0; i < count; i++) {
    uint64_t h = mix64(seed ^ i);
    int64_t base = type == ncclFloat32 ? (int64_t)(h & 1023) - 512 : (int64_t)(h & 255);
    int64_t step = type == ncclFloat32 ? (int64_t)((h >> 10) % 9) - 4 : (int64_t)((h >> 8) & 255);
    int64_t v = base + st->rank * step;
    if (type == ncclFloat32) ((float*)send)[i] = (float)v;
    else ((int8_t*)send)[i] = (int8_t)(uint8_t)v;
  }
  if (!inPlace) memset(recv, SENTINEL, count * (size_t)t->size);
  char what[96];
  snprintf(what, sizeof(what), "ncclAllReduce(%s, sum, count %zu, %s)", t->name, count, inPlace ? "in-place" : "out-of-place");
  ncclResult_t res = ncclAllReduce(send, recv, count, type, ncclSum, st->comm, NULL);
  if (res != ncclSuccess) {
    free(send);
    if (!inPlace) free(recv);
    return ncclFailed(st, what, res);
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t h = mix64(seed ^ i);
    int ok;
    if (type == ncclFloat32) {
      int64_t base = (int64_t)(h & 1023) - 512, step = (int64_t)((h >> 10) % 9) - 4;
      ok = ((float*)recv)[i] == (float)(n * base + step * tri);
    } else {
      int64_t base = (int64_t)(h & 255), step = (int64_t)((h >> 8) & 255);
      ok = ((uint8_t*)recv)[i] == (uint8_t)(n * base + step * tri);
    }
    if (!ok && bad++ < MAX_REPORTS)
      fprintf(stderr, "rank %d/%d: %s: element %zu wrong\n", st->rank, st->nranks, what, i);
  }
  if (bad) st->failures++;
  free(send);
  if (!inPlace) free(recv);
  return 0;
}

/* --- genuinely random floats -------------------------------------------------------------------- */

/* Values uniform in [-1, 1). The ring order is unknown, so the result is checked against the sum
 * computed in long double with the classic bound for recursive summation in any order:
 * |fl(sum) - sum| <= (n-1) u sum|x| (to first order, u = unit roundoff of the type), with 1% slack
 * for the second-order term and the reference's own (much smaller) error. A library that adds in a
 * wider type and rounds once is well inside this bound; with one rank the result must be exact. */
static int randomCase(rankState* st, ncclDataType_t type, size_t count, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const int n = st->nranks;
  char* send = malloc(count * (size_t)t->size);
  char* recv = malloc(count * (size_t)t->size);
  if (!send || !recv) {
    free(send);
    free(recv);
    return 1;
  }
  for (size_t i = 0; i < count; i++) {
    double v = (double)(rnd(seed, st->rank, i) >> 11) * 0x1p-52 - 1.0; /* 53 random bits */
    if (type == ncclFloat32) ((float*)send)[i] = (float)v;
    else ((double*)send)[i] = v;
  }
  char what[96];
  snprintf(what, sizeof(what), "ncclAllReduce(%s random, sum, count %zu)", t->name, count);
  ncclResult_t res = ncclAllReduce(send, recv, count, type, ncclSum, st->comm, NULL);
  if (res != ncclSuccess) {
    free(send);
    free(recv);
    return ncclFailed(st, what, res);
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    long double sum = 0, absSum = 0;
    for (int r = 0; r < n; r++) {
      double v = (double)(rnd(seed, r, i) >> 11) * 0x1p-52 - 1.0;
      if (type == ncclFloat32) v = (float)v;
      sum += v;
      absSum += fabsl((long double)v);
    }
    double got = type == ncclFloat32 ? ((float*)recv)[i] : ((double*)recv)[i];
    long double tol = (n - 1) * (long double)t->unitRoundoff * absSum * 1.01L;
    if (!(fabsl((long double)got - sum) <= tol) && bad++ < MAX_REPORTS)
      fprintf(stderr, "rank %d/%d: %s: element %zu: got %.17g, exact %.17Lg, bound %.3Lg\n", st->rank, n, what, i, got,
              sum, tol);
  }
  if (bad) st->failures++;
  free(send);
  free(recv);
  return 0;
}

/* --- the rank ------------------------------------------------------------------------------------ */

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const testArgs* a = arg;
  rankState st = {rank, nranks, NULL, 0};
  ncclResult_t res = ncclCommInitRank(&st.comm, nranks, *id, rank);
  if (res != ncclSuccess) return ncclFailed(&st, "ncclCommInitRank", res);
  int count = -1, me = -1;
  if (ncclCommCount(st.comm, &count) != ncclSuccess || count != nranks ||
      ncclCommUserRank(st.comm, &me) != ncclSuccess || me != rank) {
    fprintf(stderr, "rank %d: ncclCommCount/UserRank say %d/%d, expected %d/%d\n", rank, count, me, nranks, rank);
    st.failures++;
  }

  for (int i = 0; i < nplanned; i++)
    if (runCase(&st, &plan[i].c, &plan[i].ref)) goto fail;
  if (a->big > 0) {
    if (bigCase(&st, ncclFloat32, a->big, 0, 0xb16f)) goto fail;
    if (bigCase(&st, ncclInt8, a->big, 1, 0xb168)) goto fail;
  }
  if (randomCase(&st, ncclFloat32, 1031, 0xf32) || randomCase(&st, ncclFloat64, 1031, 0xf64) ||
      randomCase(&st, ncclFloat32, 65536 + 7, 0xf32f)) goto fail;

  res = ncclCommDestroy(st.comm);
  if (res != ncclSuccess) return ncclFailed(&st, "ncclCommDestroy", res);
  if (st.failures) fprintf(stderr, "rank %d/%d: %d case(s) with wrong results\n", rank, nranks, st.failures);
  return st.failures ? 2 : 0;
fail:
  ncclCommAbort(st.comm);
  return 1;
}

static size_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]\n", argv[0]);
    return 2;
  }
  int nranks = atoi(argv[1]);
  testArgs a = {1, 1 << 20, 64u << 20, 100};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--hosts") == 0) a.nhosts = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--medium") == 0) a.medium = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--big") == 0) a.big = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--timeout") == 0) a.timeoutSec = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (nranks < 1 || a.nhosts < 1) {
    fprintf(stderr, "%s: bad nranks/hosts\n", argv[0]);
    return 2;
  }
  if (buildDecodeTables() || planCases(nranks, a.medium)) {
    fprintf(stderr, "%s: out of memory while computing the references\n", argv[0]);
    return 1;
  }
  int rc = chrLaunchRanks(nranks, a.nhosts, a.timeoutSec, rankMain, &a);
  freePlan();
  return rc;
}
