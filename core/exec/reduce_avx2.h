/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_avx2.h: the float16 and bfloat16 arithmetic of chrReduce with AVX2 (and F16C) vectors
 * (reduce_avx2.c), where the compiler can build it; reduce.c calls it for every op when
 * chrReduceAvx2Usable() says the CPU has AVX2 and F16C, and finishes the rest itself. The same bits as reduce.c's portable
 * loops.
 */
#ifndef CHORUS_EXEC_REDUCE_AVX2_H_
#define CHORUS_EXEC_REDUCE_AVX2_H_

#include <stddef.h>
#include "exec/reduce.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CHR_NO_AVX2_PATH)
#define CHR_HAVE_AVX2_PATH 1
/* 1 when this CPU has AVX2 and F16C (asked once). */
int chrReduceAvx2Usable(void);
/* chrReduce for ncclFloat16 or ncclBfloat16 (sum, product, max, min, PreMulSum) over the first
 * count / 8 * 8 elements; returns how many it did (0 for a copy: no src0 and not PreMulSum). The
 * caller does the rest. */
size_t chrReduceAvx2(const chrRedOp* op, void* dst0, void* dst1, const void* src0, const void* src1, size_t count);
#else
#define CHR_HAVE_AVX2_PATH 0
#endif

#endif /* CHORUS_EXEC_REDUCE_AVX2_H_ */
