/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_op.h: how a reduction is encoded, for the host executor (exec/reduce.h) and the kernels
 * (a work's op is a chrRedKind, hostdev/work.h). The arithmetic each kind does is specified in
 * exec/reduce.h; the kernels match it bit for bit.
 */
#ifndef CHORUS_HOSTDEV_REDUCE_OP_H_
#define CHORUS_HOSTDEV_REDUCE_OP_H_

#include <stdint.h>
#include "nccl.h"

typedef enum { chrRedSum, chrRedProd, chrRedMax, chrRedMin, chrRedPreMulSum, chrRedSumPostDiv } chrRedKind;
#define CHR_RED_KINDS (chrRedSumPostDiv + 1) /* the kinds above */

typedef struct {
  ncclDataType_t type;
  chrRedKind kind;
  /* chrRedPreMulSum: the scalar, stored as a value of `type` (its bytes in .bytes, the rest zero), and
     as double (the exact value of that stored element).
     chrRedSumPostDiv: the divisor (nranks) in .divisor (>= 1). */
  union { uint8_t bytes[8]; } scalar;
  double scalarAsDouble;
  uint64_t divisor;
} chrRedOp;

#endif /* CHORUS_HOSTDEV_REDUCE_OP_H_ */
