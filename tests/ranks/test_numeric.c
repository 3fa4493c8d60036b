/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_numeric: the conversions that the rank tests and chorus-perf use as their reference
 * (tools/perf/numeric.c), checked against independent ones: the compiler's _Float16 for fp16, RNE on
 * float bits for bf16, and for the fp8 formats a round trip of every bit pattern plus known values.
 * No library involved.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "numeric.h"

static int failures;
#define EXPECT(cond, ...)                  \
  do {                                     \
    if (!(cond) && failures++ < 10) {      \
      fprintf(stderr, __VA_ARGS__);        \
      fputc('\n', stderr);                 \
    }                                      \
  } while (0)

static uint64_t state = 88172645463325252ull;
static uint64_t next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

int main(void) {
  for (int i = 0; i < 1000000; i++) {
    double d = ldexp((double)(int64_t)next() / 9.3e18, (int)(next() % 44) - 30);
    if (i % 3 == 0) d = (double)(int)(next() % 5000) - 2500 + 0.5 * (double)(next() % 2); /* ties */
#if defined(__FLT16_MAX__)
    _Float16 h = (_Float16)d;
    uint16_t hb;
    memcpy(&hb, &h, 2);
    EXPECT(chrNumEncode(ncclFloat16, d) == hb, "half(%a): 0x%llx, compiler 0x%x", d,
           (unsigned long long)chrNumEncode(ncclFloat16, d), hb);
    EXPECT(chrNumDecode(ncclFloat16, hb) == (double)h, "half decode 0x%x", hb);
#endif
    float f = (float)d;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    uint16_t bb = (uint16_t)((fb + 0x7fffu + ((fb >> 16) & 1u)) >> 16);
    EXPECT(chrNumEncode(ncclBfloat16, (double)f) == bb, "bf16(%a): 0x%llx, expected 0x%x", (double)f,
           (unsigned long long)chrNumEncode(ncclBfloat16, (double)f), bb);
  }
  for (int t = 0; t < ncclNumTypes; t++) {
    const chrNumType* ti = chrNumTypeInfo((ncclDataType_t)t);
    if (!ti->isFloat || ti->size > 2) continue;
    for (uint64_t b = 0; b < ((uint64_t)1 << (8 * ti->size)); b++) {
      double v = chrNumDecode((ncclDataType_t)t, b);
      if (!isnan(v)) EXPECT(chrNumEncode((ncclDataType_t)t, v) == b, "%s round trip 0x%llx", ti->name, (unsigned long long)b);
    }
  }
  /* Known fp8 facts (OCP FP8): e4m3 max 448 = 0x7e, 0x7f is NaN, smallest subnormal 2^-9;
   * e5m2 max 57344 = 0x7b, 0x7c is infinity, smallest subnormal 2^-16. */
  EXPECT(chrNumDecode(ncclFloat8e4m3, 0x7e) == 448 && isnan(chrNumDecode(ncclFloat8e4m3, 0x7f)), "e4m3 top");
  EXPECT(chrNumDecode(ncclFloat8e4m3, 0x01) == ldexp(1, -9), "e4m3 subnormal");
  EXPECT(chrNumEncode(ncclFloat8e4m3, 464) == 0x7e, "e4m3 tie at the top rounds to even 448");
  EXPECT(chrNumDecode(ncclFloat8e5m2, 0x7b) == 57344 && isinf(chrNumDecode(ncclFloat8e5m2, 0x7c)), "e5m2 top");
  EXPECT(chrNumDecode(ncclFloat8e5m2, 0x01) == ldexp(1, -16), "e5m2 subnormal");
  EXPECT(chrNumEncode(ncclFloat8e5m2, 61440) == 0x7c, "e5m2 overflow to infinity");
  EXPECT(chrNumEncode(ncclFloat8e4m3, ldexp(3, -10)) == 0x02, "e4m3 subnormal tie to even");
  EXPECT(chrNumEncodeInt(ncclInt8, -129) == 0x7f && chrNumDecodeInt(ncclInt8, 0x80) == -128, "int8 wrap");
  EXPECT(chrNumDecodeInt(ncclUint32, 0xffffffffu) == 0xffffffffll, "uint32 zero extension");
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures != 0;
}
