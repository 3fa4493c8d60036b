/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce_ref.h: an independent reference for the small float formats, used by the
 * test_reduce*.c unit tests. Written from the format definitions only (bit fields, ldexp, nearest
 * search over the code table), sharing no code with core/exec/float_convert.h.
 */
#ifndef CHORUS_TEST_REDUCE_REF_H_
#define CHORUS_TEST_REDUCE_REF_H_

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  const char* name;
  int ebits, mbits, bias;
  int satfinite; /* overflow (and inf input) -> max finite, instead of inf */
  int e4m3;      /* no infinities; only the all-ones code (per sign) is NaN */
  /* Filled by refFmtInit: */
  uint32_t maxFinite;  /* largest positive finite code */
  double* table;       /* value of each positive finite code 0..maxFinite (increasing) */
} RefFmt;

static RefFmt refHalf = {"half", 5, 10, 15, 0, 0, 0, NULL};
static RefFmt refBf16 = {"bfloat16", 8, 7, 127, 0, 0, 0, NULL};
static RefFmt refE4m3 = {"f8e4m3", 4, 3, 7, 1, 1, 0, NULL};
static RefFmt refE5m2 = {"f8e5m2", 5, 2, 15, 1, 0, 0, NULL};

static inline int refBits(const RefFmt* f) { return 1 + f->ebits + f->mbits; }
static inline uint32_t refSignBit(const RefFmt* f) { return 1u << (refBits(f) - 1); }
static inline uint32_t refExpMax(const RefFmt* f) { return (1u << f->ebits) - 1; }
static inline uint32_t refInfCode(const RefFmt* f) { return refExpMax(f) << f->mbits; } /* IEEE-like only */
static inline uint32_t refNanCode(const RefFmt* f) {
  return f->e4m3 ? 0x7fu : (refInfCode(f) | (1u << (f->mbits - 1)));
}

/* Value of a code from its fields: (-1)^s * 2^(e-bias) * 1.m, or 2^(1-bias) * 0.m when e == 0. */
static double refDecode(const RefFmt* f, uint32_t code) {
  uint32_t s = (code >> (refBits(f) - 1)) & 1u;
  uint32_t e = (code >> f->mbits) & refExpMax(f);
  uint32_t m = code & ((1u << f->mbits) - 1u);
  double v;
  if (f->e4m3) {
    if (e == refExpMax(f) && m == (1u << f->mbits) - 1u) return NAN;
  } else if (e == refExpMax(f)) {
    if (m != 0) return NAN;
    return s ? -INFINITY : INFINITY;
  }
  if (e == 0) v = ldexp((double)m, 1 - f->bias - f->mbits);
  else v = ldexp((double)((1u << f->mbits) | m), (int)e - f->bias - f->mbits);
  return s ? -v : v;
}

static void refFmtInit(RefFmt* f) {
  if (f->table) return;
  f->maxFinite = f->e4m3 ? 0x7eu : refInfCode(f) - 1u;
  f->table = (double*)malloc(sizeof(double) * (f->maxFinite + 1));
  for (uint32_t c = 0; c <= f->maxFinite; c++) f->table[c] = refDecode(f, c);
}

/* Of two candidate codes at equal distance, the even one (mantissa lsb 0) wins. */
static uint32_t refPick(double ax, uint32_t lo, double vlo, uint32_t hi, double vhi) {
  double dlo = ax - vlo, dhi = vhi - ax;
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) ? hi : lo;
}

/* Nearest code to x, ties to even; NaN -> a NaN code; overflow per the format's rule. Binary search
 * over the (increasing) positive table. */
static uint32_t refEncode(const RefFmt* f, double x) {
  if (isnan(x)) return refNanCode(f);
  uint32_t sign = signbit(x) ? refSignBit(f) : 0u;
  double ax = fabs(x);
  uint32_t last = f->maxFinite;
  uint32_t code;
  if (ax >= f->table[last]) {
    if (f->satfinite) code = last;
    else if (isinf(ax)) code = refInfCode(f);
    else code = refPick(ax, last, f->table[last], refInfCode(f), ldexp(1.0, (int)refExpMax(f) - f->bias));
  } else {
    uint32_t lo = 0, hi = last; /* table[lo] <= ax < table[hi] */
    while (hi - lo > 1) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (f->table[mid] <= ax) lo = mid;
      else hi = mid;
    }
    code = refPick(ax, lo, f->table[lo], hi, f->table[hi]);
  }
  return code | sign;
}

/* The same by an exhaustive scan over every finite code (and inf where it is a candidate), used to
 * cross-check refEncode itself on a sample. */
__attribute__((unused)) static uint32_t refEncodeLinear(const RefFmt* f, double x) {
  if (isnan(x)) return refNanCode(f);
  uint32_t sign = signbit(x) ? refSignBit(f) : 0u;
  double ax = fabs(x);
  if (isinf(ax)) return (f->satfinite ? f->maxFinite : refInfCode(f)) | sign;
  uint32_t best = 0;
  double bestD = INFINITY;
  uint32_t ncand = f->maxFinite + 1 + (f->satfinite ? 0 : 1);
  for (uint32_t c = 0; c < ncand; c++) {
    double v = c <= f->maxFinite ? f->table[c] : ldexp(1.0, (int)refExpMax(f) - f->bias);
    double d = fabs(v - ax);
    if (d < bestD || (d == bestD && (c & 1u) == 0)) {
      bestD = d;
      best = c;
    }
  }
  return best | sign;
}

#endif /* CHORUS_TEST_REDUCE_REF_H_ */
