/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_data.h: test data. Random elements of every type, floating types salted with the values that
 * decide bit-exactness (NaN, infinities, signed zeros, subnormals, values that round or saturate),
 * and the comparison the GPU results must pass: identical bits, except that any NaN equals any NaN
 * for floating types (reduce.h leaves NaN payloads unspecified for sums and products, and IEEE
 * hardware does not carry payloads alike).
 */
#ifndef CHORUS_TESTS_GPU_DATA_H_
#define CHORUS_TESTS_GPU_DATA_H_

#include <stddef.h>
#include <stdint.h>

/* xorshift64*: reproducible from the seed printed with every failure. */
uint64_t chrTestRand(uint64_t* state);

/* Element size of an ncclDataType_t (0 if invalid); "int8" ... names. */
int chrTestTypeSize(int type);
const char* chrTestTypeName(int type);
int chrTestTypeIsFloat(int type);

/* count random elements of `type` at p. specials: salt floating types with special values. */
void chrTestFill(void* p, int type, size_t count, uint64_t* rng, int specials);

/* Random bytes (poison for outputs). */
void chrTestFillBytes(void* p, size_t bytes, uint64_t* rng);

/* A scalar for PreMulSum: a random element of `type` of moderate size, bytes in *bits. */
uint64_t chrTestScalar(int type, uint64_t* rng);

/* Index of the first element that differs (NaN == NaN for floats), or -1. */
int64_t chrTestCompare(const void* got, const void* want, int type, size_t count);

/* One element as text (value and bits), for messages. */
void chrTestFormat(const void* p, int type, char* buf, size_t len);

#endif /* CHORUS_TESTS_GPU_DATA_H_ */
