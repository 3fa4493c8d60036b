/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce_convert: the small-float conversions of core/exec/float_convert.h against the
 * independent reference in test_reduce_ref.h.
 *  - decode: every code of half, bfloat16, e4m3, e5m2 (exact value, sign of zero, NaN-ness);
 *  - encode: for every code, the exact midpoints to both neighbours and the floats just below and
 *    above them (ties to even, subnormal and overflow boundaries), every float of the small formats'
 *    subnormal ranges, plus a dense stride over all 2^32 float bit patterns.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "exec/float_convert.h"
#include "test_reduce_ref.h"

#include "test_expect.h"

typedef struct {
  RefFmt* ref;
  float (*dec)(uint32_t);
  uint32_t (*enc)(float);
} Conv;

static float decHalf(uint32_t c) { return chrHalfToFloat((uint16_t)c); }
static float decBf16(uint32_t c) { return chrBf16ToFloat((uint16_t)c); }
static float decE4m3(uint32_t c) { return chrFp8e4m3ToFloat((uint8_t)c); }
static float decE5m2(uint32_t c) { return chrFp8e5m2ToFloat((uint8_t)c); }
static uint32_t encHalf(float f) { return chrFloatToHalf(f); }
static uint32_t encBf16(float f) { return chrFloatToBf16(f); }
static uint32_t encE4m3(float f) { return chrFloatToFp8e4m3(f); }
static uint32_t encE5m2(float f) { return chrFloatToFp8e5m2(f); }

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float ffrom(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void checkDecodeAll(const Conv* c) {
  uint32_t n = 1u << refBits(c->ref);
  for (uint32_t code = 0; code < n; code++) {
    double want = refDecode(c->ref, code);
    float got = c->dec(code);
    if (isnan(want)) {
      EXPECT(isnan(got), "%s decode 0x%x: got %g, want NaN", c->ref->name, code, got);
    } else {
      /* Every code is exactly a float; compare bits so the sign of zero counts. */
      EXPECT((double)(float)want == want, "%s ref value not a float", c->ref->name);
      EXPECT(fbits(got) == fbits((float)want), "%s decode 0x%x: got %a, want %a", c->ref->name, code,
             (double)got, want);
    }
  }
}

static void checkEncodeOne(const Conv* c, float f) {
  uint32_t want = refEncode(c->ref, (double)f);
  uint32_t got = c->enc(f);
  if (isnan(refDecode(c->ref, want))) {
    EXPECT(isnan(refDecode(c->ref, got)), "%s encode %a: got 0x%x, want NaN", c->ref->name, (double)f, got);
  } else {
    EXPECT(got == want, "%s encode %a (0x%08x): got 0x%x, want 0x%x", c->ref->name, (double)f, fbits(f), got,
           want);
  }
}

static void checkEncodeBoundaries(const Conv* c) {
  RefFmt* r = c->ref;
  for (uint32_t code = 0; code <= r->maxFinite; code++) {
    for (int s = 0; s < 2; s++) {
      double v = r->table[code] * (s ? -1.0 : 1.0);
      float fv = (float)v;
      checkEncodeOne(c, fv);
      checkEncodeOne(c, nextafterf(fv, INFINITY));
      checkEncodeOne(c, nextafterf(fv, -INFINITY));
      /* Midpoint to the next code up (or to 2^(emax+1-bias) past the top): exact in float, since
       * every small format has far fewer mantissa bits than float. */
      double up = code < r->maxFinite ? r->table[code + 1] : ldexp(1.0, (int)refExpMax(r) - r->bias);
      double mid = (r->table[code] + up) / 2 * (s ? -1.0 : 1.0);
      float fm = (float)mid;
      EXPECT((double)fm == mid, "%s midpoint not a float", r->name);
      checkEncodeOne(c, fm);
      checkEncodeOne(c, nextafterf(fm, INFINITY));
      checkEncodeOne(c, nextafterf(fm, -INFINITY));
    }
  }
  /* Every float below the smallest normal of the format (covers its whole subnormal range and the
   * float subnormals), in a fine stride, both signs. */
  double minNormal = ldexp(1.0, 1 - r->bias);
  uint32_t top = fbits((float)minNormal);
  uint32_t step = top / 400000u + 1u;
  for (uint32_t u = 0; u <= top; u += step) {
    checkEncodeOne(c, ffrom(u));
    checkEncodeOne(c, ffrom(u | 0x80000000u));
  }
  /* Specials. */
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 3.4028235e38f, -3.4028235e38f,
                            1e-45f, 1.17549435e-38f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) checkEncodeOne(c, specials[i]);
}

/* A dense sample of all float bit patterns: a stride of ~1700 visits 2.5 M floats, both signs, every
 * exponent, NaNs and infinities. */
static void checkEncodeStride(const Conv* c) {
  const uint32_t stride = 1709u; /* odd and prime: low mantissa bits vary too */
  for (uint64_t u = 0; u <= 0xffffffffull; u += stride) checkEncodeOne(c, ffrom((uint32_t)u));
}

/* The reference's binary search must agree with an exhaustive scan. */
static void checkReferenceItself(RefFmt* r) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int n = r->mbits > 3 ? 300 : 3000; /* the scan is over 2^bits codes */
  for (int i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v = ldexp((double)(int32_t)(x & 0xffffff) / (1 << 20), (int)((x >> 32) % 80) - 40);
    EXPECT(refEncode(r, v) == refEncodeLinear(r, v), "%s reference disagrees on %a", r->name, v);
  }
  for (uint32_t code = 0; code <= r->maxFinite; code += (r->maxFinite / 200) + 1)
    EXPECT(refEncode(r, r->table[code]) == code, "%s ref roundtrip 0x%x", r->name, code);
}

int main(void) {
  refFmtInit(&refHalf);
  refFmtInit(&refBf16);
  refFmtInit(&refE4m3);
  refFmtInit(&refE5m2);
  /* Facts from the format definitions. */
  EXPECT(refE4m3.table[refE4m3.maxFinite] == 448.0, "e4m3 max");
  EXPECT(refE5m2.table[refE5m2.maxFinite] == 57344.0, "e5m2 max");
  EXPECT(refHalf.table[refHalf.maxFinite] == 65504.0, "half max");

  const Conv convs[] = {
      {&refHalf, decHalf, encHalf},
      {&refBf16, decBf16, encBf16},
      {&refE4m3, decE4m3, encE4m3},
      {&refE5m2, decE5m2, encE5m2},
  };
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
    checkReferenceItself(convs[i].ref);
    checkDecodeAll(&convs[i]);
    checkEncodeBoundaries(&convs[i]);
    checkEncodeStride(&convs[i]);
  }
  /* Spot values stated in reduce.h / float_convert.h. */
  EXPECT(chrFloatToFp8e4m3(1000.0f) == 0x7e && chrFloatToFp8e4m3(-INFINITY) == 0xfe, "e4m3 satfinite");
  EXPECT(chrFloatToFp8e5m2(1e6f) == 0x7b && chrFloatToFp8e5m2(INFINITY) == 0x7b, "e5m2 satfinite");
  EXPECT(chrFloatToHalf(65520.0f) == 0x7c00 && chrFloatToHalf(65519.996f) == 0x7bff, "half overflow");
  EXPECT(chrFloatToBf16(3.4028235e38f) == 0x7f80, "bf16 overflow");
  EXPECT(isnan(chrFp8e4m3ToFloat(0xff)) && chrFp8e4m3ToFloat(0x7e) == 448.0f, "e4m3 decode");

  if (failures) {
    fprintf(stderr, "test_reduce_convert: %d failures\n", failures);
    return 1;
  }
  return 0;
}
