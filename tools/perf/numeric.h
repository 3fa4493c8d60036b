/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * numeric.h: NCCL datatypes as seen from outside the library: names, sizes, and our own conversions
 * between double/int64 and each type's bit pattern (fp16, bf16, fp8 e4m3/e5m2 included). Used by
 * chorus-perf's data check and by the rank tests' references, never by the library, so a bug in the
 * library's conversions cannot hide behind an identical bug here.
 */
#ifndef CHORUS_TOOLS_NUMERIC_H_
#define CHORUS_TOOLS_NUMERIC_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

typedef struct {
  const char* name;    /* nccl-tests spelling: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2 */
  ncclDataType_t type;
  int size;            /* bytes */
  int isFloat;
  int isSigned;        /* integers only */
  int expBits, mantBits; /* floats only */
  int finiteOnly;      /* e4m3 ("fn"): no infinities, one NaN pattern per sign, max 448 */
  int64_t exactInt;    /* floats: every integer in [-exactInt, exactInt] is representable; ints: the largest value */
  double unitRoundoff; /* floats: 2^-(mantBits+1) */
} chrNumType;

/* NULL for a value outside [0, ncclNumTypes). */
const chrNumType* chrNumTypeInfo(ncclDataType_t type);
/* Accepts the nccl-tests names plus common aliases (char, int, fp16, float16, float32, fp32, float64,
 * fp64, bf16, e4m3, e5m2, fp8e4m3, fp8e5m2). Returns 0 and sets *type on success, -1 otherwise. */
int chrNumTypeFromName(const char* name, ncclDataType_t* type);

/* Bit patterns of one element, in the low bytes of a uint64_t (host byte order). */
uint64_t chrNumLoad(const void* buf, size_t index, int size);
void chrNumStore(void* buf, size_t index, int size, uint64_t bits);

/* Floats: round-to-nearest-even; overflow gives infinity (or NaN for e4m3). Integers: the value
 * rounded toward zero, then truncated to the type's width (two's complement wrap). */
uint64_t chrNumEncode(ncclDataType_t type, double value);
/* Integers: exact, wrap to the width. Floats: the integer converted (exact for |v| <= exactInt). */
uint64_t chrNumEncodeInt(ncclDataType_t type, int64_t value);
/* Floats: exact value (NaN/inf as such). Integers: the value, sign- or zero-extended. */
double chrNumDecode(ncclDataType_t type, uint64_t bits);
/* Integers only: the value as int64 (uint64 values above INT64_MAX wrap, compare with care). */
int64_t chrNumDecodeInt(ncclDataType_t type, uint64_t bits);

#endif /* CHORUS_TOOLS_NUMERIC_H_ */
