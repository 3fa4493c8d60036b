/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_reduce.cuh: the element arithmetic of the kernels, one struct per (type, op), written to give
 * the host's chrReduce/chrReducePost results bit for bit (core/exec/reduce.h is the spec):
 * - integers wrap (unsigned arithmetic), max/min compare signed types as signed;
 * - float/double: one IEEE operation at a time, never fused (the _rn intrinsics on the device);
 * - half/bf16/fp8: decoded to float, computed in float, encoded once per reduction step
 *   (dev_float.h, the host's own bit operations); half and bf16 partial sums in the kernels' pack
 *   helpers add two elements per instruction with the same bits (chrDevHalfSum, below); PreMulSum computes b*s in float and adds it to a
 *   in float before the one encoding, as the host does;
 * - max/min return an operand's bits and propagate NaN: (a != a || a > b) ? a : b, a being the
 *   running value (the received data) and b the new term, as in the host's src0/src1;
 * - SumPostDiv divides with C integer division at the final step.
 *
 * A step computes  v = recv[0] OP ... OP recv[k-1] OP pre(local)  as the host executor does:
 *   red(a, b)     a OP b for partial sums (PreMulSum and SumPostDiv sum here)
 *   redPre(a, b)  a OP pre(b), the local term joining received data
 *   pre(b)        pre(b) alone (a step with no receive)
 *   post(x)       the final step's division (SumPostDiv), identity otherwise
 * Everything is __host__ __device__: tests/gpu runs these same functions on the CPU against chrReduce.
 */
#ifndef CHORUS_DEVICE_DEV_REDUCE_CUH_
#define CHORUS_DEVICE_DEV_REDUCE_CUH_

#include <stdint.h>
#include <string.h>
#include "device/kernels/dev_float.h"
#include "device/kernels/dev_work.h"
#include "nccl.h"

enum { CHR_DEV_KIND_INT, CHR_DEV_KIND_UINT, CHR_DEV_KIND_FLOAT, CHR_DEV_KIND_DOUBLE, CHR_DEV_KIND_SMALL };

/* Storage type S, unsigned twin U (integers), kind; for small floats, dec/enc. */
template <int TY> struct chrDevType;
#define CHR_DEV_INT_TYPE(TY, S_, U_, KIND)  \
  template <> struct chrDevType<TY> {       \
    typedef S_ S;                           \
    typedef U_ U;                           \
    static const int kind = KIND;           \
  };
CHR_DEV_INT_TYPE(ncclInt8, int8_t, uint8_t, CHR_DEV_KIND_INT)
CHR_DEV_INT_TYPE(ncclUint8, uint8_t, uint8_t, CHR_DEV_KIND_UINT)
CHR_DEV_INT_TYPE(ncclInt32, int32_t, uint32_t, CHR_DEV_KIND_INT)
CHR_DEV_INT_TYPE(ncclUint32, uint32_t, uint32_t, CHR_DEV_KIND_UINT)
CHR_DEV_INT_TYPE(ncclInt64, int64_t, uint64_t, CHR_DEV_KIND_INT)
CHR_DEV_INT_TYPE(ncclUint64, uint64_t, uint64_t, CHR_DEV_KIND_UINT)
CHR_DEV_INT_TYPE(ncclFloat32, float, uint32_t, CHR_DEV_KIND_FLOAT)
CHR_DEV_INT_TYPE(ncclFloat64, double, uint64_t, CHR_DEV_KIND_DOUBLE)
#undef CHR_DEV_INT_TYPE

#define CHR_DEV_SMALL_TYPE(TY, S_, DEC, ENC)               \
  template <> struct chrDevType<TY> {                      \
    typedef S_ S;                                          \
    typedef S_ U;                                          \
    static const int kind = CHR_DEV_KIND_SMALL;            \
    static CHR_HD float dec(S_ x) { return DEC(x); }       \
    static CHR_HD S_ enc(float f) { return ENC(f); }       \
  };
CHR_DEV_SMALL_TYPE(ncclFloat16, uint16_t, chrDevHalfToFloat, chrDevFloatToHalf)
CHR_DEV_SMALL_TYPE(ncclBfloat16, uint16_t, chrDevBf16ToFloat, chrDevFloatToBf16)
CHR_DEV_SMALL_TYPE(ncclFloat8e4m3, uint8_t, chrDevFp8e4m3ToFloat, chrDevFloatToFp8e4m3)
CHR_DEV_SMALL_TYPE(ncclFloat8e5m2, uint8_t, chrDevFp8e5m2ToFloat, chrDevFloatToFp8e5m2)
#undef CHR_DEV_SMALL_TYPE

template <int TY, int OP>
struct chrDevRed {
  typedef chrDevType<TY> Ty;
  typedef typename Ty::S S;
  typedef typename Ty::U U;
  static const int kind = Ty::kind;
  static const int op = OP;
  static const int type = TY;

  S scalar;        /* PreMulSum: the scalar as an element */
  float scalarF;   /* ... decoded, for small floats */
  uint64_t divisor;

  /* opArg bytes: PreMulSum the scalar element (little-endian, low bytes), SumPostDiv the divisor. */
  CHR_HD chrDevRed(S s, uint64_t div) : scalar(s), scalarF(0.0f), divisor(div ? div : 1) {
    if constexpr (kind == CHR_DEV_KIND_SMALL) scalarF = Ty::dec(s);
  }

  CHR_HD S red(S a, S b) const {
    if constexpr (kind == CHR_DEV_KIND_INT || kind == CHR_DEV_KIND_UINT) {
      if constexpr (OP == CHR_DEV_PROD) return (S)(U)((U)a * (U)b);
      else if constexpr (OP == CHR_DEV_MAX) return a > b ? a : b;
      else if constexpr (OP == CHR_DEV_MIN) return a < b ? a : b;
      else return (S)(U)((U)a + (U)b);
    } else if constexpr (kind == CHR_DEV_KIND_FLOAT) {
      if constexpr (OP == CHR_DEV_PROD) return chrDevMulF(a, b);
      else if constexpr (OP == CHR_DEV_MAX) return (a != a || a > b) ? a : b;
      else if constexpr (OP == CHR_DEV_MIN) return (a != a || a < b) ? a : b;
      else return chrDevAddF(a, b);
    } else if constexpr (kind == CHR_DEV_KIND_DOUBLE) {
      if constexpr (OP == CHR_DEV_PROD) return chrDevMulD(a, b);
      else if constexpr (OP == CHR_DEV_MAX) return (a != a || a > b) ? a : b;
      else if constexpr (OP == CHR_DEV_MIN) return (a != a || a < b) ? a : b;
      else return chrDevAddD(a, b);
    } else {
      float fa = Ty::dec(a), fb = Ty::dec(b);
      if constexpr (OP == CHR_DEV_PROD) return Ty::enc(chrDevMulF(fa, fb));
      else if constexpr (OP == CHR_DEV_MAX) return (fa != fa || fa > fb) ? a : b;
      else if constexpr (OP == CHR_DEV_MIN) return (fa != fa || fa < fb) ? a : b;
      else return Ty::enc(chrDevAddF(fa, fb));
    }
  }

  CHR_HD S redPre(S a, S b) const {
    if constexpr (OP != CHR_DEV_PREMULSUM) {
      return red(a, b);
    } else if constexpr (kind == CHR_DEV_KIND_INT || kind == CHR_DEV_KIND_UINT) {
      return (S)(U)((U)a + (U)((U)b * (U)scalar));
    } else if constexpr (kind == CHR_DEV_KIND_FLOAT) {
      return chrDevAddF(a, chrDevMulF(b, scalar));
    } else if constexpr (kind == CHR_DEV_KIND_DOUBLE) {
      return chrDevAddD(a, chrDevMulD(b, scalar));
    } else {
      return Ty::enc(chrDevAddF(Ty::dec(a), chrDevMulF(Ty::dec(b), scalarF)));
    }
  }

  CHR_HD S pre(S b) const {
    if constexpr (OP != CHR_DEV_PREMULSUM) {
      return b;
    } else if constexpr (kind == CHR_DEV_KIND_INT || kind == CHR_DEV_KIND_UINT) {
      return (S)(U)((U)b * (U)scalar);
    } else if constexpr (kind == CHR_DEV_KIND_FLOAT) {
      return chrDevMulF(b, scalar);
    } else if constexpr (kind == CHR_DEV_KIND_DOUBLE) {
      return chrDevMulD(b, scalar);
    } else {
      return Ty::enc(chrDevMulF(Ty::dec(b), scalarF));
    }
  }

  /* The host divides signed values by the divisor as int64 and unsigned ones as uint64 (C division,
   * toward zero); float types divide in float (double for double). */
  CHR_HD S post(S x) const {
    if constexpr (OP != CHR_DEV_SUMPOSTDIV) {
      return x;
    } else if constexpr (kind == CHR_DEV_KIND_INT) {
      const int64_t ds = divisor > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)divisor;
      return (S)((int64_t)x / ds);
    } else if constexpr (kind == CHR_DEV_KIND_UINT) {
      return (S)((uint64_t)x / divisor);
    } else if constexpr (kind == CHR_DEV_KIND_FLOAT) {
      return chrDevDivF(x, (float)divisor);
    } else if constexpr (kind == CHR_DEV_KIND_DOUBLE) {
      return chrDevDivD(x, (double)divisor);
    } else {
      return Ty::enc(chrDevDivF(Ty::dec(x), (float)divisor));
    }
  }
};

/* float16 and bfloat16 partial sums, two elements per instruction (add.rn.f16x2 / add.rn.bf16x2:
 * IEEE, round to nearest even, subnormals kept). They give the bits of red() (decode, one float add,
 * encode) for every pair of non-NaN operands: the float sum of two such numbers is exact unless their
 * exponents differ by more than 13 (half) or 16 (bfloat16), and then the smaller is below an eighth
 * of the larger's ulp in the small type, so both round to the larger; overflow is the same one
 * rounding. A NaN result becomes the NaN red() gives on the device (its float add returns the
 * canonical NaN, which encodes to 0x7e00 as a half and 0x7fff as a bfloat16).
 * tests/gpu/test_gpu_half_sum.cu checks every pair of codes of both types on the GPU against red().
 * The float path decodes a half in about fifteen instructions; this is about three per element,
 * which is what float16 reductions were short of (docs/perf/gpu-2gpu.md). */
template <class R>
struct chrDevHalfSum {
  /* red() is a sum for these ops; redPre() too but for PreMulSum (its b*s is a float product) */
  static const bool red = (R::type == ncclFloat16 || R::type == ncclBfloat16) &&
                          (R::op == CHR_DEV_SUM || R::op == CHR_DEV_PREMULSUM || R::op == CHR_DEV_SUMPOSTDIV);
  static const bool redPre = red && R::op != CHR_DEV_PREMULSUM;
};

#ifdef __CUDACC__
template <int TY>
__device__ __forceinline__ uint32_t chrDevHalf2Sum(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (TY == ncclFloat16) {
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    const uint32_t nan = __vcmpgtu2(r & 0x7fff7fffu, 0x7c007c00u); /* 0xffff per NaN half */
    return (r & ~nan) | (0x7e007e00u & nan);
  } else {
    static_assert(TY == ncclBfloat16, "float16 or bfloat16");
    asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    const uint32_t nan = __vcmpgtu2(r & 0x7fff7fffu, 0x7f807f80u);
    return (r & ~nan) | (0x7fff7fffu & nan);
  }
}
#endif

/* The scalar of a work's opArg (its low bytes), as an element. */
template <typename S>
CHR_HD S chrDevScalarFromArg(uint64_t opArg) {
  S s;
  memcpy(&s, &opArg, sizeof s);
  return s;
}

#endif /* CHORUS_DEVICE_DEV_REDUCE_CUH_ */
