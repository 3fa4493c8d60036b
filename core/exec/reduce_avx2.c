/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_avx2.c: float16 and bfloat16 arithmetic (sum, product, max, min, PreMulSum: ncclAvg) on
 * x86-64 CPUs with AVX2 (and F16C for float16), eight elements at a time. reduce.c's portable loops convert each
 * element with float_convert.h's bit operations, which the compiler vectorises for sums but which
 * held float16 to a fifth of float's speed per byte and bfloat16 PreMulSum to a fifth too; here a
 * half converts in one instruction (vcvtph2ps, vcvtps2ph rounding to nearest even) and a bfloat16 in
 * a few integer ones. reduce.c picks this path at run time (chrReduceAvx2Usable) and runs the last
 * count % 8 elements, and copies, in its own loops.
 *
 * The bits are reduce.c's: decoding is exact (a signalling NaN comes out quiet with its payload, as
 * float_convert.h does), the float operations are the same IEEE operations one at a time (no FMA: a
 * multiply, then an add), encoding rounds to nearest even (half: subnormals and overflow to inf),
 * and a NaN result is encoded as float_convert.h encodes it (half: 0x7e00 with the NaN's sign, where
 * vcvtps2ph would keep part of the payload; bfloat16: the top half with the quiet bit). max and min
 * compare the decoded values and return an operand's own bits, NaN first, as reduce.h says.
 * unit.test_reduce_avx2 compares both paths over every code and random operands.
 */
#include "exec/reduce_avx2.h"

#if CHR_HAVE_AVX2_PATH
#include <immintrin.h>
#include <string.h>
#include "exec/float_convert.h"

typedef uint16_t chrU16v __attribute__((aligned(1), may_alias));

#define CHR_AVX2 __attribute__((target("avx2,f16c")))

CHR_AVX2 static inline __m256 decHalf8(const chrU16v* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}

CHR_AVX2 static inline void encHalf8(chrU16v* p, __m256 x) {
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 sign = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
  const __m256 quiet = _mm256_or_ps(sign, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000))); /* -> 0x7e00 */
  x = _mm256_blendv_ps(x, quiet, nan);
  _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* bfloat16: the float's top half. A NaN gets the quiet bit (chrBf16ToFloat / chrFloatToBf16). */
CHR_AVX2 static inline __m256 decBf8(const chrU16v* p) {
  __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16);
  const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  u = _mm256_or_si256(u, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000)));
  return _mm256_castsi256_ps(u);
}

CHR_AVX2 static inline void encBf8(chrU16v* p, __m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x0040));
  const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan); /* 16-bit values in 32-bit lanes */
  /* pack to 16 bits: packus works per 128-bit half, so put the two halves' results back in order */
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128((__m128i*)p, _mm256_castsi256_si128(packed));
}

CHR_AVX2 static inline __m256 one8(chrRedKind kind, __m256 s, __m256 b) {
  return kind == chrRedPreMulSum ? _mm256_mul_ps(b, s) : b;
}
CHR_AVX2 static inline __m256 two8(chrRedKind kind, __m256 s, __m256 a, __m256 b) {
  switch (kind) {
    case chrRedProd: return _mm256_mul_ps(a, b);
    case chrRedPreMulSum: return _mm256_add_ps(a, _mm256_mul_ps(b, s));
    default: return _mm256_add_ps(a, b);
  }
}

/* max/min: (a != a || a > b) ? a : b (a < b for min) on the decoded values, the chosen operand's bits. */
CHR_AVX2 static inline void select8(chrU16v* p, chrRedKind kind, __m256 x, __m256 y, const chrU16v* a,
                                    const chrU16v* b) {
  const __m256 pick = _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q),
                                   kind == chrRedMax ? _mm256_cmp_ps(x, y, _CMP_GT_OQ) : _mm256_cmp_ps(x, y, _CMP_LT_OQ));
  const __m256i wide = _mm256_castps_si256(pick); /* 0 or -1 per 32-bit lane: packs keeps them 0 / -1 */
  const __m128i mask = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packs_epi32(wide, wide), 0x08));
  const __m128i r = _mm_blendv_epi8(_mm_loadu_si128((const __m128i*)b), _mm_loadu_si128((const __m128i*)a), mask);
  _mm_storeu_si128((__m128i*)p, r);
}

/* The whole groups of 8: `kind` and the type are the same for the whole call, so the branches on them
 * are well predicted (and the compiler unswitches what it can). Without src0 only PreMulSum computes
 * (its ONE(b) is b * s); the others copy src1, which reduce.c's loop does as fast. */
CHR_AVX2 size_t chrReduceAvx2(const chrRedOp* op, void* dst0, void* dst1, const void* src0, const void* src1,
                              size_t count) {
  const chrRedKind kind = op->kind;
  const chrU16v* a = (const chrU16v*)src0;
  if (a == NULL && kind != chrRedPreMulSum) return 0;
  const int half = op->type == ncclFloat16;
  uint16_t sBits;
  memcpy(&sBits, op->scalar.bytes, sizeof sBits);
  const __m256 s8 = _mm256_set1_ps(half ? chrHalfToFloat(sBits) : chrBf16ToFloat(sBits));
  chrU16v* d0 = (chrU16v*)dst0;
  chrU16v* d1 = (chrU16v*)dst1;
  const chrU16v* b = (const chrU16v*)src1;
  const size_t vec = count & ~(size_t)7;
  for (size_t i = 0; i < vec; i += 8) {
    const __m256 y = half ? decHalf8(b + i) : decBf8(b + i);
    if (kind == chrRedMax || kind == chrRedMin) { /* a != NULL here (above) */
      select8(d0 + i, kind, half ? decHalf8(a + i) : decBf8(a + i), y, a + i, b + i);
    } else {
      const __m256 v = a ? two8(kind, s8, half ? decHalf8(a + i) : decBf8(a + i), y) : one8(kind, s8, y);
      if (half) encHalf8(d0 + i, v);
      else encBf8(d0 + i, v);
    }
    if (d1 && d1 != d0) memcpy((void*)(d1 + i), (const void*)(d0 + i), 16);
  }
  return vec;
}

int chrReduceAvx2Usable(void) {
  static int usable = -1; /* asked once; threads that race store the same answer */
  int u = __atomic_load_n(&usable, __ATOMIC_RELAXED);
  if (u < 0) {
    __builtin_cpu_init();
    u = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    __atomic_store_n(&usable, u, __ATOMIC_RELAXED);
  }
  return u;
}
#endif
