/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.h: the host-side element-wise reduction used by the host executor for every collective.
 *
 * Types: every ncclDataType_t (int8, uint8, int32, uint32, int64, uint64, half, float, double,
 * bfloat16, float8 e4m3, float8 e5m2). Ops: sum, prod, max, min, pre-multiplied sum, and sum with a
 * final division (integer average).
 *
 * Arithmetic rules (the unit tests check each bit against an independent reference):
 * - half, bfloat16, float8: both operands are decoded exactly to float, the step is computed in float
 *   (for PreMulSum: t = src1*scalar rounded to float, then src0 + t rounded to float) and the result is
 *   rounded back to the type ONCE per chrReduce step, round to nearest, ties to even, subnormals exact.
 *   half/bf16 overflow to +-inf. float8 conversions saturate ("satfinite", as CUDA's __NV_SATFINITE):
 *   a result beyond the largest finite value, +-inf included, becomes +-max finite (e4m3 448,
 *   e5m2 57344). So float8 sums never produce inf; an e5m2 inf operand of a sum or product becomes
 *   max finite, while max/min return operands unchanged (an inf stays inf). See float_convert.h.
 * - float, double: plain IEEE arithmetic in the type, no fused multiply-add (the file is built with
 *   -ffp-contract=off so every host gives the same bits).
 * - NaN: a NaN operand gives NaN for sum, prod and PreMulSum (payload not specified). max/min
 *   PROPAGATE NaN: if either operand is NaN the result is NaN (unlike C's fmax/fmin), so a NaN anywhere
 *   in a reduction shows in the result whatever the order.
 * - max/min return one operand's bits unchanged (no rounding). For operands that compare equal
 *   (+0 and -0) the result is the src1 operand.
 * - Integers: sum and prod wrap modulo 2^bits (computed in unsigned arithmetic, no UB); PreMulSum on
 *   integers multiplies by the scalar with the same wrap-around. max/min compare signed types as
 *   signed and unsigned types as unsigned. SumPostDiv: chrReducePost divides with C integer division
 *   (rounds toward zero) by the divisor. On float types SumPostDiv divides in the type (float math for
 *   half/bf16/fp8), though chrRedOpFromBuiltin never builds it for them.
 * - The default floating-point environment is assumed (round to nearest, no flush-to-zero).
 *
 * Threading: all functions are pure (no global state) and may be called concurrently.
 */
#ifndef CHORUS_EXEC_REDUCE_H_
#define CHORUS_EXEC_REDUCE_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/reduce_op.h" /* chrRedKind, chrRedOp */
#include "nccl.h"

/* Element size in bytes; 0 for an invalid type. */
size_t chrTypeSize(ncclDataType_t type);

/* The name nccl-tests prints: "int8" "uint8" "int32" "uint32" "int64" "uint64" "half" "float" "double"
   "bfloat16" "f8e4m3" "f8e5m2"; "invalid" for anything else (never NULL). */
const char* chrTypeName(ncclDataType_t type);

/* Translate a builtin op for n ranks. sum/prod/max/min map one to one. ncclAvg on float types
   (half/bf16/fp8/float/double) becomes PreMulSum with scalar 1/n computed in double, rounded to float
   (except for double), then rounded to the type (nearest even); on integer types it becomes
   SumPostDiv with divisor n. Errors (ncclInvalidArgument, logged): invalid type, op not one of the five
   builtins (dynamic PreMulSum ops are the caller's business), nranks < 1, out == NULL. */
ncclResult_t chrRedOpFromBuiltin(ncclRedOp_t op, ncclDataType_t type, int nranks, chrRedOp* out);

/* PreMulSum from a user scalar (host copy of one element of `type`). Errors as above, or scalar NULL. */
ncclResult_t chrRedOpPreMulSum(ncclDataType_t type, const void* scalar, chrRedOp* out);

/* The one reduction step. For i in [0,count):
     v = (src0 == NULL) ? pre(src1[i]) : src0[i] OP pre(src1[i])
   where pre(x) = x * scalar for PreMulSum and x otherwise; OP is + for Sum/PreMulSum/SumPostDiv.
   The result is stored to dst0[i] and, if dst1 != NULL, also to dst1[i] (one pass, two outputs).
   dst0/dst1 may alias src0 or src1 exactly (in place), never partially overlap. Pointers need no
   alignment (any byte address works). count 0 does nothing. `op` must come from chrRedOpFromBuiltin or
   chrRedOpPreMulSum (not checked here: this is the hot path). */
void chrReduce(const chrRedOp* op, void* dst0, void* dst1, const void* src0, const void* src1, size_t count);

/* Final step: SumPostDiv divides by the divisor (C integer division, rounding toward zero); other
   kinds copy (or do nothing if dst == src). dst and src alias exactly or not at all. */
void chrReducePost(const chrRedOp* op, void* dst, const void* src, size_t count);

#endif /* CHORUS_EXEC_REDUCE_H_ */
