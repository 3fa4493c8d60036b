/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_float.h: the small floating types (half, bfloat16, float8 e4m3/e5m2) decoded to float and
 * encoded back, for the kernels, with the SAME integer bit operations as the host's
 * core/exec/float_convert.h, so device and host round, saturate and quiet NaNs identically (bit for
 * bit, NaN payloads included; CHR_DEV_HW_CONVERT below, on by default, drops a decoded half NaN's
 * payload on the device, which no kernel result depends on). The rules are those of float_convert.h: exact decoding, encoding to
 * nearest-even with subnormals, half/bf16 overflow to inf, float8 "satfinite".
 *
 * Compiles as C (static inline) and as CUDA (__host__ __device__), so tests/gpu checks these very
 * functions against the host ones on the CPU, where no GPU is needed. Float arithmetic goes through
 * chrDevAddF/chrDevMulF: on the device these are the _rn intrinsics, which the compiler never
 * contracts into an FMA whatever the flags.
 */
#ifndef CHORUS_DEVICE_DEV_FLOAT_H_
#define CHORUS_DEVICE_DEV_FLOAT_H_

#include <stdint.h>
#include <string.h>
#include "hostdev/work.h" /* CHR_HD */

CHR_HD float chrDevAddF(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

CHR_HD float chrDevMulF(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

CHR_HD float chrDevDivF(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

CHR_HD double chrDevAddD(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

CHR_HD double chrDevMulD(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

CHR_HD double chrDevDivD(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

CHR_HD uint32_t chrDevF32Bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

CHR_HD float chrDevF32FromBits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* ---- IEEE half ---- */

/* CHR_DEV_HW_CONVERT (default 1; 0 builds the integer conversions everywhere): on the device,
 * halves convert with the GPU's cvt instructions (not bfloat16: its integer encode is five
 * instructions already, and cvt raised its kernels' spills, product 24 -> 60 bytes). Encoding gives the integer version's bits
 * for every float (a NaN gets its NaN by a select, no branch: a branch to the integer code kept both
 * live and tripled the kernels' spills). Decoding a NaN half gives a NaN without the integer
 * version's payload; no kernel result depends on it, as the kernels only compare a decoded value
 * (max, min: the result is the operand's own bits) or feed it to a float operation, which returns the
 * canonical NaN anyway. gpu.halfsum checks every half code and every float on a GPU. About one
 * instruction instead of fifteen for a half's decode, which every float16 op but the packed sums
 * pays (PreMulSum, which ncclAvg is, max, min, product); float16 averages are markedly faster with it
 * (docs/perf/gpu-2gpu.md). */
#ifndef CHR_DEV_HW_CONVERT
#define CHR_DEV_HW_CONVERT 1
#endif
#if CHR_DEV_HW_CONVERT && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define CHR_DEV_HW_CVT 1
#else
#define CHR_DEV_HW_CVT 0
#endif

CHR_HD float chrDevHalfToFloatSoft(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
  uint32_t normal = em + ((127u - 15u) << 23);
  uint32_t special = em + ((255u - 31u) << 23);
  /* Subnormal: m * 2^-24, exact (an integer below 2^10 times a power of two). */
  uint32_t sub = chrDevF32Bits(chrDevMulF((float)(int32_t)(h & 0x3ffu), 0x1p-24f));
  uint32_t r = em >= (0x7c00u << 13) ? special : normal;
  r = em < (0x0400u << 13) ? sub : r;
  r = em > (0x7c00u << 13) ? (r | 0x00400000u) : r; /* quiet a signalling NaN */
  return chrDevF32FromBits(r | sign);
}

CHR_HD float chrDevHalfToFloat(uint16_t h) {
#if CHR_DEV_HW_CVT
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return chrDevHalfToFloatSoft(h);
#endif
}

CHR_HD uint16_t chrDevFloatToHalfSoft(float f) {
  uint32_t u = chrDevF32Bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  /* Below 2^-14 the float adder rounds |f| + 0.5 to a multiple of 2^-24 (ties to even): the low bits
   * are the subnormal code. */
  uint32_t sub = chrDevF32Bits(chrDevAddF(chrDevF32FromBits(a), 0.5f)) - chrDevF32Bits(0.5f);
  uint32_t odd = (a >> 13) & 1u;
  uint32_t norm = (a + 0xfffu + odd - ((127u - 15u) << 23)) >> 13;
  uint32_t r = a < (113u << 23) ? sub : norm;
  r = a >= (143u << 23) ? 0x7c00u : r;
  r = a > 0x7f800000u ? 0x7e00u : r;
  return (uint16_t)(r | sign);
}

CHR_HD uint16_t chrDevFloatToHalf(float f) {
#if CHR_DEV_HW_CVT
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  const uint16_t nan = (uint16_t)(((chrDevF32Bits(f) >> 16) & 0x8000u) | 0x7e00u);
  return f != f ? nan : h;
#else
  return chrDevFloatToHalfSoft(f);
#endif
}

/* ---- bfloat16 ---- */

CHR_HD float chrDevBf16ToFloat(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  u = ((u & 0x7fffffffu) > 0x7f800000u) ? (u | 0x00400000u) : u;
  return chrDevF32FromBits(u);
}

CHR_HD uint16_t chrDevFloatToBf16(float f) {
  uint32_t u = chrDevF32Bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x0040u;
  return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? nan : rounded);
}

/* ---- float8 ---- */

CHR_HD float chrDevFp8e4m3ToFloat(uint8_t x) {
  uint32_t sign = (uint32_t)(x & 0x80u) << 24;
  uint32_t em = x & 0x7fu;
  uint32_t normal = (em << 20) + ((127u - 7u) << 23);
  uint32_t sub = chrDevF32Bits(chrDevMulF((float)(int32_t)em, 0x1p-9f));
  uint32_t r = em < 8u ? sub : normal;
  r = em == 0x7fu ? 0x7fc00000u : r;
  return chrDevF32FromBits(r | sign);
}

CHR_HD float chrDevFp8e5m2ToFloat(uint8_t x) { return chrDevHalfToFloat((uint16_t)((uint16_t)x << 8)); }

/* M mantissa bits, B bias, maxCode the largest finite code without sign. */
CHR_HD uint8_t chrDevFloatToFp8(float f, uint32_t M, uint32_t B, uint32_t maxCode) {
  uint32_t u = chrDevF32Bits(f);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & 0x7fffffffu;
  uint32_t minNormalBits = (127u + 1u - B) << 23;
  uint32_t magicBits = (127u + 1u - B - M + 23u) << 23;
  uint32_t sub = chrDevF32Bits(chrDevAddF(chrDevF32FromBits(a), chrDevF32FromBits(magicBits))) - magicBits;
  uint32_t shift = 23u - M;
  uint32_t odd = (a >> shift) & 1u;
  uint32_t norm = ((a + ((1u << (shift - 1u)) - 1u) + odd) >> shift) - ((127u - B) << M);
  uint32_t r = a < minNormalBits ? sub : norm;
  r = r > maxCode ? maxCode : r;
  r += (uint32_t)(a > 0x7f800000u) * (0x7fu - maxCode);
  return (uint8_t)(r | sign);
}

CHR_HD uint8_t chrDevFloatToFp8e4m3(float f) { return chrDevFloatToFp8(f, 3u, 7u, 0x7eu); }
CHR_HD uint8_t chrDevFloatToFp8e5m2(float f) { return chrDevFloatToFp8(f, 2u, 15u, 0x7bu); }

#endif /* CHORUS_DEVICE_DEV_FLOAT_H_ */
