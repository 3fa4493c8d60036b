/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce_avx2: chrReduce's float16 and bfloat16 results where the AVX2 path
 * (core/exec/reduce_avx2.c) takes the whole groups of 8 elements, against the portable conversions (float_convert.h: decode, one float operation, encode), bit
 * for bit (a NaN result must be the one float_convert.h encodes; which NaN's payload and sign when
 * both operands are NaN is the CPU's choice, so there any NaN passes), for both types:
 *  - every code plus -0 (every decode and its re-encode), times 1, and scaled;
 *  - every pair of a set of special codes (zeros, subnormals, the normal range's edges, the largest
 *    finite, ties just below overflow, inf, NaNs) and 4M random pairs, for sum, product, max, min
 *    and PreMulSum (with several scalars); max and min must return the very operand reduce.h says,
 *    NaNs included;
 *  - the call shapes: without src0 (a copy, or the scaled copy of PreMulSum), with dst1, in place,
 *    every count from 0 to 40 (the 8-wide loop's tail), unaligned buffers.
 * SKIP (77) where the CPU has no AVX2 or F16C, or the build has no such path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec/float_convert.h"
#include "exec/reduce.h"
#include "exec/reduce_avx2.h"

#include "test_expect.h"

#if CHR_HAVE_AVX2_PATH
static int half; /* the type of this pass: float16 (1) or bfloat16 (0) */
static float dec(uint16_t x) { return half ? chrHalfToFloat(x) : chrBf16ToFloat(x); }
static uint16_t enc(float f) { return half ? chrFloatToHalf(f) : chrFloatToBf16(f); }
static int isNan(uint16_t h) { return (h & 0x7fffu) > (half ? 0x7c00u : 0x7f80u); }

/* What the portable loop gives for one element. */
static uint16_t want(chrRedKind kind, float s, const uint16_t* a, uint16_t b) {
  const float y = dec(b);
  if (!a) return kind == chrRedPreMulSum ? enc(y * s) : b;
  const float x = dec(*a);
  switch (kind) {
    case chrRedMax: return (x != x || x > y) ? *a : b;
    case chrRedMin: return (x != x || x < y) ? *a : b;
    case chrRedProd: return enc(x * y);
    case chrRedPreMulSum: return enc(x + y * s);
    default: return enc(x + y);
  }
}

static chrRedKind checking; /* the op of the check in progress: max and min must match exactly */
static int same(uint16_t got, uint16_t w, int bothNan) {
  if (bothNan && checking != chrRedMax && checking != chrRedMin) return isNan(got) && isNan(w);
  return got == w;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint16_t next16(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint16_t)(rng >> 24);
}

/* count pairs a[i], b[i] through chrReduce and the portable expressions. */
static void checkPairs(const chrRedOp* op, const uint16_t* a, const uint16_t* b, size_t count, const char* what) {
  checking = op->kind;
  uint16_t* d = malloc(count * 2 + 2);
  chrReduce(op, d, NULL, a, b, count);
  uint16_t sBits;
  memcpy(&sBits, op->scalar.bytes, 2);
  const float s = dec(sBits);
  for (size_t i = 0; i < count; i++) {
    const uint16_t w = want(op->kind, s, a ? &a[i] : NULL, b[i]);
    EXPECT(same(d[i], w, a && isNan(a[i]) && isNan(b[i])), "%s %s kind %d: 0x%04x, 0x%04x gives 0x%04x, portable 0x%04x",
           half ? "float16" : "bfloat16", what, (int)op->kind, a ? a[i] : 0, b[i], d[i], w);
  }
  free(d);
}

static chrRedOp opOf(chrRedKind kind, uint16_t scalar) {
  chrRedOp op;
  memset(&op, 0, sizeof(op));
  op.type = half ? ncclFloat16 : ncclBfloat16;
  op.kind = kind;
  memcpy(op.scalar.bytes, &scalar, 2);
  return op;
}

static void checkType(void) {
  const chrRedKind kinds[] = {chrRedSum, chrRedProd, chrRedPreMulSum, chrRedMax, chrRedMin};
  /* 0.5, about 1/3, about 0.1, the smallest subnormal, the largest finite, -1 */
  const uint16_t halfScalars[] = {0x3800, 0x3555, 0x2e66, 0x0001, 0x7bff, 0xbc00};
  const uint16_t bfScalars[] = {0x3f00, 0x3eab, 0x3dcd, 0x0001, 0x7f7f, 0xbf80};
  const uint16_t* scalars = half ? halfScalars : bfScalars;
  const size_t nScalars = 6;

  /* every code, with -0 (x + -0 = x), times 1, and scaled */
  size_t n = 65536;
  uint16_t* all = malloc(n * 2);
  uint16_t* negZero = malloc(n * 2);
  uint16_t* one = malloc(n * 2);
  for (size_t i = 0; i < n; i++) {
    all[i] = (uint16_t)i;
    negZero[i] = 0x8000;
    one[i] = half ? 0x3c00 : 0x3f80;
  }
  chrRedOp sum = opOf(chrRedSum, 0), prod = opOf(chrRedProd, 0);
  checkPairs(&sum, all, negZero, n, "every code + -0");
  checkPairs(&prod, all, one, n, "every code * 1");
  for (size_t k = 0; k < nScalars; k++) {
    chrRedOp pm = opOf(chrRedPreMulSum, scalars[k]);
    checkPairs(&pm, NULL, all, n, "every code scaled");
    checkPairs(&pm, negZero, all, n, "-0 + every code scaled");
  }

  /* every pair of special codes */
  const uint16_t halfSpecial[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x0401,
                                  0x3c00, 0xbc00, 0x3c01, 0x3bff, 0x7bfe, 0x7bff, 0xfbff, 0x7800, 0x5bff, 0x6800,
                                  0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfd55, 0x7fff, 0x1400, 0x0200, 0x8200};
  const uint16_t bfSpecial[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x007f, 0x807f, 0x0080, 0x8080, 0x0081,
                                0x3f80, 0xbf80, 0x3f81, 0x3f7f, 0x7f7e, 0x7f7f, 0xff7f, 0x7f00, 0x4b7f, 0x5f00,
                                0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffd5, 0x7fff, 0x0d00, 0x0040, 0x8040};
  const uint16_t* special = half ? halfSpecial : bfSpecial;
  const size_t ns = 30;
  uint16_t* pa = malloc(ns * ns * 2);
  uint16_t* pb = malloc(ns * ns * 2);
  for (size_t i = 0; i < ns; i++)
    for (size_t j = 0; j < ns; j++) {
      pa[i * ns + j] = special[i];
      pb[i * ns + j] = special[j];
    }
  for (size_t k = 0; k < 5; k++) {
    chrRedOp op = opOf(kinds[k], scalars[k]);
    checkPairs(&op, pa, pb, ns * ns, "special pairs");
  }

  /* random pairs */
  size_t nr = 4u << 20;
  uint16_t* ra = malloc(nr * 2);
  uint16_t* rb = malloc(nr * 2);
  for (size_t i = 0; i < nr; i++) {
    ra[i] = next16();
    rb[i] = next16();
  }
  for (size_t k = 0; k < 5; k++) {
    chrRedOp op = opOf(kinds[k], scalars[k]);
    checkPairs(&op, ra, rb, nr, "random pairs");
  }

  /* shapes: dst1, in place, src0 NULL, counts 0..40, unaligned (byte offset 1) */
  unsigned char* raw = malloc(4 * 100 + 8);
  for (size_t count = 0; count <= 40; count++)
    for (size_t k = 0; k < 5; k++) {
      chrRedOp op = opOf(kinds[k], scalars[k]);
      checking = op.kind;
      const float s = dec(scalars[k]);
      uint16_t x[48], y[48], d0[48], d1[48], w[48];
      for (size_t i = 0; i < count; i++) {
        x[i] = next16();
        y[i] = next16();
      }
      for (int withA = 0; withA < 2; withA++) {
        for (size_t i = 0; i < count; i++) w[i] = want(op.kind, s, withA ? &x[i] : NULL, y[i]);
        memset(d0, 0xa5, sizeof(d0));
        memset(d1, 0x5a, sizeof(d1));
        chrReduce(&op, d0, d1, withA ? x : NULL, y, count);
        /* the vectors take every whole group of 8 but in a copy (no src0, not PreMulSum) */
        const size_t wantDone = withA || op.kind == chrRedPreMulSum ? count / 8 * 8 : 0;
        uint16_t scratch[48];
        EXPECT(chrReduceAvx2(&op, scratch, NULL, withA ? x : NULL, y, count) == wantDone,
               "chrReduceAvx2 did not take the whole groups of 8 (count %zu)", count);
        for (size_t i = 0; i < count; i++) {
          const int nn = withA && isNan(x[i]) && isNan(y[i]);
          EXPECT(same(d0[i], w[i], nn) && same(d1[i], w[i], nn), "dst0/dst1 count %zu kind %d element %zu", count,
                 (int)op.kind, i);
        }
        EXPECT(d0[count] == 0xa5a5 && d1[count] == 0x5a5a, "wrote past count %zu", count);
        /* in place: dst0 is src1 */
        uint16_t inPlace[48];
        memcpy(inPlace, y, sizeof(inPlace));
        chrReduce(&op, inPlace, NULL, withA ? x : NULL, inPlace, count);
        for (size_t i = 0; i < count; i++)
          EXPECT(same(inPlace[i], w[i], withA && isNan(x[i]) && isNan(y[i])), "in place count %zu element %zu", count, i);
        /* unaligned: every buffer at an odd address */
        uint16_t* ua = (uint16_t*)(void*)(raw + 1);
        uint16_t* ub = (uint16_t*)(void*)(raw + 1 + 100);
        uint16_t* ud = (uint16_t*)(void*)(raw + 1 + 200);
        memcpy(ua, x, count * 2);
        memcpy(ub, y, count * 2);
        chrReduce(&op, ud, NULL, withA ? ua : NULL, ub, count);
        for (size_t i = 0; i < count; i++) {
          uint16_t g;
          memcpy(&g, (unsigned char*)ud + 2 * i, 2);
          EXPECT(same(g, w[i], withA && isNan(x[i]) && isNan(y[i])), "unaligned count %zu element %zu", count, i);
        }
      }
    }
  free(raw);
  free(all);
  free(negZero);
  free(one);
  free(pa);
  free(pb);
  free(ra);
  free(rb);
}

int main(void) {
  if (!chrReduceAvx2Usable()) {
    printf("SKIP: no AVX2/F16C on this CPU\n");
    return 77;
  }
  for (half = 1; half >= 0; half--) checkType();
  printf("test_reduce_avx2: float16 and bfloat16, %d failures\n", failures);
  return failures ? 1 : 0;
}
#else
int main(void) {
  printf("SKIP: no AVX2 path in this build\n");
  return 77;
}
#endif
