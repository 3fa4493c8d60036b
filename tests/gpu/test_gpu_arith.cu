/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_arith.cu (gpu.arith): the kernels' element arithmetic (device/kernels/dev_reduce.cuh and
 * device/kernels/dev_float.h, the same source the kernels compile) run on the CPU against the host's
 * reference (core/exec/reduce.c, float_convert.h), so its bits are checked on any machine:
 *  - every half and bfloat16 code and every float8 code decoded, and millions of floats encoded
 *    (random bits, every exponent, rounding ties, overflow, NaN), identical bits;
 *  - every type x op: red, redPre, pre and post over random data salted with special values against
 *    chrReduce / chrReducePost (identical bits; any NaN equals any NaN for floating types).
 * Host-only code: nvcc compiles it for the CPU, no GPU is touched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device/kernels/dev_reduce.cuh"

extern "C" {
#include "exec/float_convert.h"
#include "exec/reduce.h"
#include "gpu_data.h"
}

static int failures = 0;

#define EXPECT_BITS(what, i, got, want)                                                                     \
  do {                                                                                                      \
    if ((got) != (want)) {                                                                                  \
      if (failures++ < 20)                                                                                  \
        fprintf(stderr, "FAIL %s: input 0x%llx gives 0x%llx, host 0x%llx\n", what, (unsigned long long)(i), \
                (unsigned long long)(got), (unsigned long long)(want));                                     \
    }                                                                                                       \
  } while (0)

static void checkConversions(uint64_t* rng) {
  for (uint32_t h = 0; h < 65536; h++) {
    EXPECT_BITS("half decode", h, chrDevF32Bits(chrDevHalfToFloat((uint16_t)h)), chrF32Bits(chrHalfToFloat((uint16_t)h)));
    EXPECT_BITS("bf16 decode", h, chrDevF32Bits(chrDevBf16ToFloat((uint16_t)h)), chrF32Bits(chrBf16ToFloat((uint16_t)h)));
  }
  for (uint32_t x = 0; x < 256; x++) {
    EXPECT_BITS("e4m3 decode", x, chrDevF32Bits(chrDevFp8e4m3ToFloat((uint8_t)x)), chrF32Bits(chrFp8e4m3ToFloat((uint8_t)x)));
    EXPECT_BITS("e5m2 decode", x, chrDevF32Bits(chrDevFp8e5m2ToFloat((uint8_t)x)), chrF32Bits(chrFp8e5m2ToFloat((uint8_t)x)));
  }
  /* Encoding: random bits (every exponent), values near each small type's range, exact ties. */
  for (int i = 0; i < 4000000; i++) {
    uint64_t r = chrTestRand(rng);
    uint32_t u = (uint32_t)r;
    switch (i % 4) {
      case 1: u = (u & 0x807fffffu) | ((uint32_t)(100 + (r >> 40) % 60) << 23); break; /* 2^-27 .. 2^32 */
      case 2: u = (u & 0x80000000u) | ((uint32_t)(100 + (r >> 40) % 60) << 23) | (((uint32_t)(r >> 50) & 0xfu) << 9) | 0x100u; break;
      case 3: u = (u & 0xffffe000u) | 0x1000u; break; /* a half tie */
      default: break;
    }
    float f = chrDevF32FromBits(u);
    EXPECT_BITS("half encode", u, chrDevFloatToHalf(f), chrFloatToHalf(f));
    EXPECT_BITS("bf16 encode", u, chrDevFloatToBf16(f), chrFloatToBf16(f));
    EXPECT_BITS("e4m3 encode", u, chrDevFloatToFp8e4m3(f), chrFloatToFp8e4m3(f));
    EXPECT_BITS("e5m2 encode", u, chrDevFloatToFp8e5m2(f), chrFloatToFp8e5m2(f));
  }
}

#define N 8192

template <int TY, int OP>
static void checkOp(uint64_t* rng) {
  typedef chrDevRed<TY, OP> R;
  typedef typename R::S S;
  static S a[N], b[N], got[N], want[N];
  chrTestFill(a, TY, N, rng, 1);
  chrTestFill(b, TY, N, rng, 1);
  const uint64_t scalarBits = chrTestScalar(TY, rng);
  const uint64_t divisor = 1 + chrTestRand(rng) % 9;
  const R r(chrDevScalarFromArg<S>(scalarBits), divisor);
  chrRedOp op, opNoPre;
  memset(&op, 0, sizeof op);
  op.type = (ncclDataType_t)TY;
  op.kind = (chrRedKind)OP;
  memcpy(op.scalar.bytes, &scalarBits, sizeof(S));
  op.divisor = divisor;
  opNoPre = op;
  if (OP == CHR_DEV_PREMULSUM) opNoPre.kind = chrRedSum;
  char what[96];
  const char* names[] = {"sum", "prod", "max", "min", "premulsum", "sumpostdiv"};
  struct {
    const char* name;
    int which;
  } parts[] = {{"red", 0}, {"redPre", 1}, {"pre", 2}, {"post", 3}};
  for (auto& part : parts) {
    for (int i = 0; i < N; i++) {
      switch (part.which) {
        case 0: got[i] = r.red(a[i], b[i]); break;
        case 1: got[i] = r.redPre(a[i], b[i]); break;
        case 2: got[i] = r.pre(b[i]); break;
        default: got[i] = r.post(a[i]); break;
      }
    }
    switch (part.which) {
      case 0: chrReduce(&opNoPre, want, NULL, a, b, N); break;
      case 1: chrReduce(&op, want, NULL, a, b, N); break;
      case 2: chrReduce(&op, want, NULL, NULL, b, N); break;
      default:
        if (OP == CHR_DEV_SUMPOSTDIV) chrReducePost(&op, want, a, N);
        else memcpy(want, a, sizeof a);
        break;
    }
    int64_t bad = chrTestCompare(got, want, TY, N);
    if (bad >= 0) {
      char g[64], w[64], x[64], y[64];
      chrTestFormat(&got[bad], TY, g, sizeof g);
      chrTestFormat(&want[bad], TY, w, sizeof w);
      chrTestFormat(&a[bad], TY, x, sizeof x);
      chrTestFormat(&b[bad], TY, y, sizeof y);
      snprintf(what, sizeof what, "%s %s %s", chrTestTypeName(TY), names[OP], part.name);
      if (failures++ < 20)
        fprintf(stderr, "FAIL %s: element %lld: a=%s b=%s gives %s, host %s\n", what, (long long)bad, x, y, g, w);
    }
  }
}

template <int TY>
static void checkType(uint64_t* rng) {
  checkOp<TY, CHR_DEV_SUM>(rng);
  checkOp<TY, CHR_DEV_PROD>(rng);
  checkOp<TY, CHR_DEV_MAX>(rng);
  checkOp<TY, CHR_DEV_MIN>(rng);
  checkOp<TY, CHR_DEV_PREMULSUM>(rng);
  checkOp<TY, CHR_DEV_SUMPOSTDIV>(rng);
}

int main(void) {
  uint64_t rng = 0x5eed;
  checkConversions(&rng);
  for (int round = 0; round < 8; round++) {
    checkType<ncclInt8>(&rng);
    checkType<ncclUint8>(&rng);
    checkType<ncclInt32>(&rng);
    checkType<ncclUint32>(&rng);
    checkType<ncclInt64>(&rng);
    checkType<ncclUint64>(&rng);
    checkType<ncclFloat16>(&rng);
    checkType<ncclFloat32>(&rng);
    checkType<ncclFloat64>(&rng);
    checkType<ncclBfloat16>(&rng);
    checkType<ncclFloat8e4m3>(&rng);
    checkType<ncclFloat8e5m2>(&rng);
  }
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  return 0;
}
