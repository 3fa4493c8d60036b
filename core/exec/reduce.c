/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.c: host element-wise reductions (see reduce.h for the arithmetic rules).
 *
 * Speed: every (type, op) pair gets its own simple counted loop, instantiated four times (with or
 * without src0, with or without dst1) so that nothing is decided per element; the compiler
 * auto-vectorises them (this file is built with -O3, see core/CMakeLists.txt). Small float types are
 * converted with the branch-free bit tricks of float_convert.h, which vectorise too. On x86-64 an AVX2
 * variant is chosen at load time (CHR_MULTIVERSION below).
 *
 * Aliasing: dst may be exactly src (in place). We do not use `restrict` (that would make the in-place
 * call undefined behaviour); `#pragma GCC ivdep` instead tells the vectoriser there is no dependence
 * between iterations, which is true for exact aliasing and for disjoint buffers alike.
 *
 * Alignment: elements are accessed through 1-byte-aligned typedefs, so any byte address is valid
 * (the vectoriser then uses unaligned vector loads/stores, which cost nothing on current x86/Arm).
 */
#include "exec/reduce.h"

#include <string.h>
#include "exec/float_convert.h"
#include "exec/reduce_avx2.h"
#include "log/log.h"

/* Under-aligned, alias-anything element types for loads and stores. */
typedef int8_t chrI8;
typedef uint8_t chrU8;
typedef int32_t chrI32 __attribute__((aligned(1), may_alias));
typedef uint32_t chrU32 __attribute__((aligned(1), may_alias));
typedef int64_t chrI64 __attribute__((aligned(1), may_alias));
typedef uint64_t chrU64 __attribute__((aligned(1), may_alias));
typedef uint16_t chrU16 __attribute__((aligned(1), may_alias));
typedef float chrF32 __attribute__((aligned(1), may_alias));
typedef double chrF64 __attribute__((aligned(1), may_alias));

#if defined(__GNUC__) && !defined(__clang__)
#define CHR_IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define CHR_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define CHR_IVDEP
#endif

/* The four loop shapes. ONE(b) is the result when src0 is NULL, TWO(a, b) otherwise; ST is the storage
 * type. Locals `a` and `b` hold the loaded elements. */
#define CHR_LOOPS(ST, ONE, TWO)                                                        \
  do {                                                                                 \
    ST* d0_ = (ST*)dst0;                                                               \
    ST* d1_ = (ST*)dst1;                                                               \
    const ST* a_ = (const ST*)src0;                                                    \
    const ST* b_ = (const ST*)src1;                                                    \
    if (a_ == NULL && d1_ == NULL) {                                                   \
      CHR_IVDEP for (size_t i = 0; i < count; i++) {                                   \
        ST b = b_[i];                                                                  \
        d0_[i] = (ONE);                                                                \
      }                                                                                \
    } else if (a_ == NULL) {                                                           \
      CHR_IVDEP for (size_t i = 0; i < count; i++) {                                   \
        ST b = b_[i];                                                                  \
        ST v = (ONE);                                                                  \
        d0_[i] = v;                                                                    \
        d1_[i] = v;                                                                    \
      }                                                                                \
    } else if (d1_ == NULL) {                                                          \
      CHR_IVDEP for (size_t i = 0; i < count; i++) {                                   \
        ST a = a_[i], b = b_[i];                                                       \
        d0_[i] = (TWO);                                                                \
      }                                                                                \
    } else {                                                                           \
      CHR_IVDEP for (size_t i = 0; i < count; i++) {                                   \
        ST a = a_[i], b = b_[i];                                                       \
        ST v = (TWO);                                                                  \
        d0_[i] = v;                                                                    \
        d1_[i] = v;                                                                    \
      }                                                                                \
    }                                                                                  \
  } while (0)

#define CHR_REDUCE_ARGS \
  const chrRedOp *op, void *dst0, void *dst1, const void *src0, const void *src1, size_t count

/* On x86-64 each per-type function is also built for x86-64-v3 (AVX2, 8 floats per vector, blends)
 * and the loader picks the variant the CPU supports (GCC ifunc). The baseline (SSE2) loops are
 * memory-bound for float/int already; the small-float conversions gain most from AVX2.
 * FMA is in v3 but -ffp-contract=off keeps it out of our arithmetic, so both variants give the same
 * bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(CHR_NO_TARGET_CLONES)
#define CHR_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CHR_MULTIVERSION
#endif

/* Integers: wrap-around arithmetic in the unsigned type U (the conversion back to a signed T is
 * modulo 2^bits in GCC/Clang). The uint8 product promotes to int but 255*255 cannot overflow it. */
#define CHR_DEFINE_INT(NAME, T, U)                                                          \
  CHR_MULTIVERSION static void NAME(CHR_REDUCE_ARGS) {                                                       \
    T s;                                                                                    \
    memcpy(&s, op->scalar.bytes, sizeof s);                                                 \
    const U us = (U)s;                                                                      \
    (void)us;                                                                               \
    switch (op->kind) {                                                                     \
      case chrRedSum:                                                                       \
      case chrRedSumPostDiv: CHR_LOOPS(T, b, (T)(U)((U)a + (U)b)); break;                   \
      case chrRedProd: CHR_LOOPS(T, b, (T)(U)((U)a * (U)b)); break;                         \
      case chrRedMax: CHR_LOOPS(T, b, a > b ? a : b); break;                                \
      case chrRedMin: CHR_LOOPS(T, b, a < b ? a : b); break;                                \
      case chrRedPreMulSum:                                                                 \
        CHR_LOOPS(T, (T)(U)((U)b * us), (T)(U)((U)a + (U)((U)b * us)));                     \
        break;                                                                              \
    }                                                                                       \
  }

CHR_DEFINE_INT(chrReduceI8, chrI8, uint8_t)
CHR_DEFINE_INT(chrReduceU8, chrU8, uint8_t)
CHR_DEFINE_INT(chrReduceI32, chrI32, uint32_t)
CHR_DEFINE_INT(chrReduceU32, chrU32, uint32_t)
CHR_DEFINE_INT(chrReduceI64, chrI64, uint64_t)
CHR_DEFINE_INT(chrReduceU64, chrU64, uint64_t)

/* float and double: IEEE arithmetic in the type. max/min propagate NaN: a NaN `a` is returned by the
 * first test, a NaN `b` because both comparisons with it are false. */
#define CHR_DEFINE_FP(NAME, T, ST)                                                          \
  CHR_MULTIVERSION static void NAME(CHR_REDUCE_ARGS) {                                                       \
    T s;                                                                                    \
    memcpy(&s, op->scalar.bytes, sizeof s);                                                 \
    switch (op->kind) {                                                                     \
      case chrRedSum:                                                                       \
      case chrRedSumPostDiv: CHR_LOOPS(ST, b, a + b); break;                                \
      case chrRedProd: CHR_LOOPS(ST, b, a * b); break;                                      \
      case chrRedMax: CHR_LOOPS(ST, b, (a != a || a > b) ? a : b); break;                   \
      case chrRedMin: CHR_LOOPS(ST, b, (a != a || a < b) ? a : b); break;                   \
      case chrRedPreMulSum: CHR_LOOPS(ST, b * s, a + b * s); break;                         \
    }                                                                                       \
  }

CHR_DEFINE_FP(chrReduceF32, float, chrF32)
CHR_DEFINE_FP(chrReduceF64, double, chrF64)

/* Small float types: decode to float, compute, encode once. max/min compare the decoded values and
 * return the chosen operand's original bits. */
#define CHR_DEFINE_SMALL(NAME, ST, DEC, ENC)                                                \
  CHR_MULTIVERSION static void NAME(CHR_REDUCE_ARGS) {                                                       \
    ST sBits;                                                                               \
    memcpy(&sBits, op->scalar.bytes, sizeof sBits);                                         \
    const float s = DEC(sBits);                                                             \
    switch (op->kind) {                                                                     \
      case chrRedSum:                                                                       \
      case chrRedSumPostDiv: CHR_LOOPS(ST, b, ENC(DEC(a) + DEC(b))); break;                 \
      case chrRedProd: CHR_LOOPS(ST, b, ENC(DEC(a) * DEC(b))); break;                       \
      case chrRedMax:                                                                       \
        CHR_LOOPS(ST, b, (DEC(a) != DEC(a) || DEC(a) > DEC(b)) ? a : b);                    \
        break;                                                                              \
      case chrRedMin:                                                                       \
        CHR_LOOPS(ST, b, (DEC(a) != DEC(a) || DEC(a) < DEC(b)) ? a : b);                    \
        break;                                                                              \
      case chrRedPreMulSum: CHR_LOOPS(ST, ENC(DEC(b) * s), ENC(DEC(a) + DEC(b) * s)); break; \
    }                                                                                       \
  }

CHR_DEFINE_SMALL(chrReduceF16, chrU16, chrHalfToFloat, chrFloatToHalf)
CHR_DEFINE_SMALL(chrReduceBf16, chrU16, chrBf16ToFloat, chrFloatToBf16)
CHR_DEFINE_SMALL(chrReduceE4m3, chrU8, chrFp8e4m3ToFloat, chrFloatToFp8e4m3)
CHR_DEFINE_SMALL(chrReduceE5m2, chrU8, chrFp8e5m2ToFloat, chrFloatToFp8e5m2)

void chrReduce(const chrRedOp* op, void* dst0, void* dst1, const void* src0, const void* src1, size_t count) {
  if (count == 0) return;
#if CHR_HAVE_AVX2_PATH
  /* float16 and bfloat16: whole groups of 8 in AVX2 vectors (reduce_avx2.c), the rest below */
  if ((op->type == ncclFloat16 || op->type == ncclBfloat16) && chrReduceAvx2Usable()) {
    const size_t done = chrReduceAvx2(op, dst0, dst1, src0, src1, count);
    if (done == count) return;
    dst0 = (char*)dst0 + 2 * done;
    if (dst1) dst1 = (char*)dst1 + 2 * done;
    if (src0) src0 = (const char*)src0 + 2 * done;
    src1 = (const char*)src1 + 2 * done;
    count -= done;
  }
#endif
  switch (op->type) {
    case ncclInt8: chrReduceI8(op, dst0, dst1, src0, src1, count); break;
    case ncclUint8: chrReduceU8(op, dst0, dst1, src0, src1, count); break;
    case ncclInt32: chrReduceI32(op, dst0, dst1, src0, src1, count); break;
    case ncclUint32: chrReduceU32(op, dst0, dst1, src0, src1, count); break;
    case ncclInt64: chrReduceI64(op, dst0, dst1, src0, src1, count); break;
    case ncclUint64: chrReduceU64(op, dst0, dst1, src0, src1, count); break;
    case ncclFloat16: chrReduceF16(op, dst0, dst1, src0, src1, count); break;
    case ncclFloat32: chrReduceF32(op, dst0, dst1, src0, src1, count); break;
    case ncclFloat64: chrReduceF64(op, dst0, dst1, src0, src1, count); break;
    case ncclBfloat16: chrReduceBf16(op, dst0, dst1, src0, src1, count); break;
    case ncclFloat8e4m3: chrReduceE4m3(op, dst0, dst1, src0, src1, count); break;
    case ncclFloat8e5m2: chrReduceE5m2(op, dst0, dst1, src0, src1, count); break;
    default: break; /* rejected when the op was built */
  }
}

/* ---- chrReducePost ---- */

#define CHR_POST_LOOP(ST, EXPR)                             \
  do {                                                      \
    ST* d_ = (ST*)dst;                                      \
    const ST* s_ = (const ST*)src;                          \
    CHR_IVDEP for (size_t i = 0; i < count; i++) {          \
      ST x = s_[i];                                         \
      d_[i] = (EXPR);                                       \
    }                                                       \
  } while (0)

void chrReducePost(const chrRedOp* op, void* dst, const void* src, size_t count) {
  if (count == 0) return;
  if (op->kind != chrRedSumPostDiv) {
    if (dst != src) memcpy(dst, src, count * chrTypeSize(op->type));
    return;
  }
  /* Divisors are rank counts: far below 2^31, so they fit every signed type's division below. */
  const uint64_t du = op->divisor ? op->divisor : 1;
  const int64_t ds = du > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)du;
  const float df = (float)du;
  /* Integer division does not vectorise and a 64-bit divide costs ~40 cycles. For values below 2^32
   * and a divisor below 2^14, double division truncated is exact: a quotient k - e with e >= 1/d
   * is never rounded up to k because 1/d is larger than half an ulp of k (k < 2^32). 8-bit values
   * use float, by the same argument (|k| < 2^8: ulp <= 2^-15 < 2/d for d < 2^14). */
  const double dd = (double)du;
  if (du < (1u << 14)) {
    switch (op->type) {
      case ncclInt8: CHR_POST_LOOP(chrI8, (chrI8)(int32_t)((float)x / df)); return;
      case ncclUint8: CHR_POST_LOOP(chrU8, (chrU8)(int32_t)((float)x / df)); return;
      case ncclInt32: CHR_POST_LOOP(chrI32, (chrI32)(int64_t)((double)x / dd)); return;
      case ncclUint32: CHR_POST_LOOP(chrU32, (chrU32)(uint64_t)((double)x / dd)); return;
      default: break;
    }
  }
  switch (op->type) {
    case ncclInt8: CHR_POST_LOOP(chrI8, (chrI8)(x / ds)); break;
    case ncclUint8: CHR_POST_LOOP(chrU8, (chrU8)(x / du)); break;
    case ncclInt32: CHR_POST_LOOP(chrI32, (chrI32)(x / ds)); break;
    case ncclUint32: CHR_POST_LOOP(chrU32, (chrU32)(x / du)); break;
    case ncclInt64: CHR_POST_LOOP(chrI64, x / ds); break;
    case ncclUint64: CHR_POST_LOOP(chrU64, x / du); break;
    case ncclFloat16: CHR_POST_LOOP(chrU16, chrFloatToHalf(chrHalfToFloat(x) / df)); break;
    case ncclFloat32: CHR_POST_LOOP(chrF32, x / df); break;
    case ncclFloat64: CHR_POST_LOOP(chrF64, x / (double)du); break;
    case ncclBfloat16: CHR_POST_LOOP(chrU16, chrFloatToBf16(chrBf16ToFloat(x) / df)); break;
    case ncclFloat8e4m3: CHR_POST_LOOP(chrU8, chrFloatToFp8e4m3(chrFp8e4m3ToFloat(x) / df)); break;
    case ncclFloat8e5m2: CHR_POST_LOOP(chrU8, chrFloatToFp8e5m2(chrFp8e5m2ToFloat(x) / df)); break;
    default: break;
  }
}

/* ---- types and op construction ---- */

size_t chrTypeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

const char* chrTypeName(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "half";
    case ncclFloat32: return "float";
    case ncclFloat64: return "double";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat8e4m3: return "f8e4m3";
    case ncclFloat8e5m2: return "f8e5m2";
    default: return "invalid";
  }
}

static int chrTypeIsFloat(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16 ||
         type == ncclFloat8e4m3 || type == ncclFloat8e5m2;
}

/* The exact value of one stored element, for scalarAsDouble. */
static double chrElementAsDouble(ncclDataType_t type, const uint8_t* p) {
  switch (type) {
    case ncclInt8: return (double)(int8_t)p[0];
    case ncclUint8: return (double)p[0];
    case ncclInt32: { int32_t v; memcpy(&v, p, 4); return (double)v; }
    case ncclUint32: { uint32_t v; memcpy(&v, p, 4); return (double)v; }
    case ncclInt64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case ncclUint64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case ncclFloat16: { uint16_t v; memcpy(&v, p, 2); return chrHalfToFloat(v); }
    case ncclFloat32: { float v; memcpy(&v, p, 4); return v; }
    case ncclFloat64: { double v; memcpy(&v, p, 8); return v; }
    case ncclBfloat16: { uint16_t v; memcpy(&v, p, 2); return chrBf16ToFloat(v); }
    case ncclFloat8e4m3: return chrFp8e4m3ToFloat(p[0]);
    case ncclFloat8e5m2: return chrFp8e5m2ToFloat(p[0]);
    default: return 0.0;
  }
}

ncclResult_t chrRedOpPreMulSum(ncclDataType_t type, const void* scalar, chrRedOp* out) {
  size_t size = chrTypeSize(type);
  if (size == 0) return chrFail(ncclInvalidArgument, "invalid datatype %d for a PreMulSum op", (int)type);
  if (scalar == NULL || out == NULL)
    return chrFail(ncclInvalidArgument, "PreMulSum op: %s is NULL", scalar == NULL ? "scalar" : "out");
  memset(out, 0, sizeof *out);
  out->type = type;
  out->kind = chrRedPreMulSum;
  memcpy(out->scalar.bytes, scalar, size);
  out->scalarAsDouble = chrElementAsDouble(type, out->scalar.bytes);
  out->divisor = 1;
  return ncclSuccess;
}

/* 1/n in the type: computed in double, rounded to float (except for double), then to the type. */
static void chrStoreReciprocal(ncclDataType_t type, int nranks, uint8_t* bytes) {
  double r = 1.0 / (double)nranks;
  float rf = (float)r;
  uint16_t h;
  switch (type) {
    case ncclFloat16: h = chrFloatToHalf(rf); memcpy(bytes, &h, 2); break;
    case ncclBfloat16: h = chrFloatToBf16(rf); memcpy(bytes, &h, 2); break;
    case ncclFloat32: memcpy(bytes, &rf, 4); break;
    case ncclFloat64: memcpy(bytes, &r, 8); break;
    case ncclFloat8e4m3: bytes[0] = chrFloatToFp8e4m3(rf); break;
    case ncclFloat8e5m2: bytes[0] = chrFloatToFp8e5m2(rf); break;
    default: break;
  }
}

ncclResult_t chrRedOpFromBuiltin(ncclRedOp_t op, ncclDataType_t type, int nranks, chrRedOp* out) {
  if (chrTypeSize(type) == 0) return chrFail(ncclInvalidArgument, "invalid datatype %d", (int)type);
  if (out == NULL) return chrFail(ncclInvalidArgument, "reduction op: out is NULL");
  if (nranks < 1) return chrFail(ncclInvalidArgument, "reduction op for %d ranks", nranks);
  memset(out, 0, sizeof *out);
  out->type = type;
  out->divisor = 1;
  switch (op) {
    case ncclSum: out->kind = chrRedSum; break;
    case ncclProd: out->kind = chrRedProd; break;
    case ncclMax: out->kind = chrRedMax; break;
    case ncclMin: out->kind = chrRedMin; break;
    case ncclAvg:
      if (chrTypeIsFloat(type)) {
        out->kind = chrRedPreMulSum;
        chrStoreReciprocal(type, nranks, out->scalar.bytes);
        out->scalarAsDouble = chrElementAsDouble(type, out->scalar.bytes);
      } else {
        out->kind = chrRedSumPostDiv;
        out->divisor = (uint64_t)nranks;
      }
      break;
    default:
      return chrFail(ncclInvalidArgument, "reduction op %d is not a builtin op (sum, prod, max, min, avg)", (int)op);
  }
  return ncclSuccess;
}
