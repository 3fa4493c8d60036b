/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * float_convert.h: conversions between float and the small floating types (IEEE half, bfloat16,
 * float8 e4m3 and e5m2), written with integer bit operations and selects only, so that a loop
 * calling them element by element auto-vectorises (no tables, no branches, no libm).
 *
 * Rules (the same on every host, and what the tests in tests/unit/test_reduce*.c check bit by bit):
 * - Decoding (type -> float) is exact for every code, subnormals included. NaN codes give a quiet
 *   float NaN of the same sign; infinities give infinities.
 * - Encoding (float -> type) rounds to nearest, ties to even, subnormals included.
 *   half, bfloat16: overflow gives +-infinity (IEEE); NaN gives a quiet NaN of the same sign.
 *   float8 (both kinds): "satfinite", as CUDA's __NV_SATFINITE: any value whose magnitude is above the
 *   largest finite value, +-infinity included, becomes +-max finite (e4m3 448, e5m2 57344); NaN gives
 *   NaN (code 0x7f, with the input's sign bit). So an e5m2 infinity does not survive an encode.
 * - Assumes the default floating-point environment (round to nearest, no flush-to-zero / denormals-
 *   are-zero); the subnormal paths use one float addition.
 *
 * Formats: half s.eeeee.mmmmmmmmmm bias 15; bfloat16 = the top 16 bits of a float; e4m3 s.eeee.mmm
 * bias 7, no infinities, only 0x7f/0xff are NaN, max 448 (0x7e); e5m2 s.eeeee.mm bias 15, IEEE-like
 * (0x7c inf, 0x7d..0x7f NaN), max 57344 (0x7b).
 */
#ifndef CHORUS_EXEC_FLOAT_CONVERT_H_
#define CHORUS_EXEC_FLOAT_CONVERT_H_

#include <stdint.h>
#include <string.h>

static inline uint32_t chrF32Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float chrF32FromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- IEEE half ---- */

static inline float chrHalfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;     /* exponent+mantissa, aligned to float's fields */
  uint32_t normal = em + ((127u - 15u) << 23);      /* re-bias the exponent */
  uint32_t special = em + ((255u - 31u) << 23);     /* exponent 31 -> 255: inf, NaN (payload kept) */
  /* Subnormal: m * 2^-24, exact as an int->float conversion times a power of two. */
  uint32_t sub = chrF32Bits((float)(int32_t)(h & 0x3ffu) * 0x1p-24f);
  uint32_t r = em >= (0x7c00u << 13) ? special : normal;
  r = em < (0x0400u << 13) ? sub : r;
  /* A signalling NaN payload would stay signalling; make it quiet like a hardware conversion. */
  r = em > (0x7c00u << 13) ? (r | 0x00400000u) : r;
  return chrF32FromBits(r | sign);
}

static inline uint16_t chrFloatToHalf(float f) {
  uint32_t u = chrF32Bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  /* Subnormal results (|f| < 2^-14): adding 0.5 (whose ulp is 2^-24, half's subnormal step) lets the
   * float adder round to a multiple of 2^-24 with ties to even; the low bits are then the code. A
   * round-up to 2^-14 gives 0x400, the smallest normal, which is also right. */
  uint32_t sub = chrF32Bits(chrF32FromBits(a) + 0.5f) - chrF32Bits(0.5f);
  /* Normal results: round the 23-bit mantissa to 10 bits (add 0xfff plus the lowest kept bit: ties to
   * even), then re-bias. A carry out of the mantissa bumps the exponent, up to 0x7c00 = inf. */
  uint32_t odd = (a >> 13) & 1u;
  uint32_t norm = (a + 0xfffu + odd - ((127u - 15u) << 23)) >> 13;
  uint32_t r = a < (113u << 23) ? sub : norm;
  r = a >= (143u << 23) ? 0x7c00u : r; /* |f| >= 65536: inf (65520..65536 already round to inf) */
  r = a > 0x7f800000u ? 0x7e00u : r;   /* NaN */
  return (uint16_t)(r | sign);
}

/* ---- bfloat16 ---- */

static inline float chrBf16ToFloat(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  u = ((u & 0x7fffffffu) > 0x7f800000u) ? (u | 0x00400000u) : u; /* quiet a signalling NaN */
  return chrF32FromBits(u);
}

static inline uint16_t chrFloatToBf16(float f) {
  uint32_t u = chrF32Bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; /* ties to even; overflow -> inf */
  uint32_t nan = (u >> 16) | 0x0040u;
  return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? nan : rounded);
}

/* ---- float8 ---- */

static inline float chrFp8e4m3ToFloat(uint8_t x) {
  uint32_t sign = (uint32_t)(x & 0x80u) << 24;
  uint32_t em = x & 0x7fu;
  uint32_t normal = (em << 20) + ((127u - 7u) << 23);
  uint32_t sub = chrF32Bits((float)(int32_t)em * 0x1p-9f); /* e == 0: m * 2^-9 */
  uint32_t r = em < 8u ? sub : normal;
  r = em == 0x7fu ? 0x7fc00000u : r;
  return chrF32FromBits(r | sign);
}

static inline float chrFp8e5m2ToFloat(uint8_t x) {
  /* e5m2 is exactly the top byte of an IEEE half. */
  return chrHalfToFloat((uint16_t)((uint16_t)x << 8));
}

/* Shared float -> float8 encoder. M: mantissa bits, B: bias, maxCode: largest finite code (without
 * sign). Constant arguments fold when inlined. */
static inline uint8_t chrFloatToFp8(float f, uint32_t M, uint32_t B, uint32_t maxCode) {
  uint32_t u = chrF32Bits(f);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & 0x7fffffffu;
  uint32_t minNormalBits = (127u + 1u - B) << 23;            /* 2^(1-B) */
  /* Subnormal step q = 2^(1-B-M); a float of value q*2^23 has ulp q, so adding it rounds |f| to a
   * multiple of q (ties to even) and the low bits are the code (see chrFloatToHalf). */
  uint32_t magicBits = (127u + 1u - B - M + 23u) << 23;
  uint32_t sub = chrF32Bits(chrF32FromBits(a) + chrF32FromBits(magicBits)) - magicBits;
  uint32_t shift = 23u - M;
  uint32_t odd = (a >> shift) & 1u;
  uint32_t norm = ((a + ((1u << (shift - 1u)) - 1u) + odd) >> shift) - ((127u - B) << M);
  uint32_t r = a < minNormalBits ? sub : norm;
  r = r > maxCode ? maxCode : r; /* satfinite; +-inf and NaN land here too */
  /* NaN: maxCode -> 0x7f. Written as arithmetic, not a third select, which GCC would turn into
   * branches that its vectoriser then refuses. */
  r += (uint32_t)(a > 0x7f800000u) * (0x7fu - maxCode);
  return (uint8_t)(r | sign);
}

static inline uint8_t chrFloatToFp8e4m3(float f) { return chrFloatToFp8(f, 3u, 7u, 0x7eu); }
static inline uint8_t chrFloatToFp8e5m2(float f) { return chrFloatToFp8(f, 2u, 15u, 0x7bu); }

#endif /* CHORUS_EXEC_FLOAT_CONVERT_H_ */
