/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls_data.h: data and independent references for the rank tests of the collectives
 * (test_allreduce.c, test_colls.c). The reducing data is chosen so that every partial result of the
 * reduction is exact in the type, whatever order the library reduces in, so results compare bit for
 * bit (floats decoded/encoded by tools/perf/numeric.c, never by the library); avg on floats, whose
 * 1/n rounds, is checked within a stated bound. The copying collectives move random bit patterns
 * (NaNs and all) that must arrive bit for bit.
 */
#ifndef CHORUS_TESTS_COLLS_DATA_H_
#define CHORUS_TESTS_COLLS_DATA_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"
#include "numeric.h"

typedef enum {
  CHR_TOP_SUM,
  CHR_TOP_PROD,
  CHR_TOP_MAX,
  CHR_TOP_MIN,
  CHR_TOP_AVG,
  CHR_TOP_PREMUL_IMM,
  CHR_TOP_PREMUL_DEV,
  CHR_TOP_COUNT
} chrTestOp;
extern const char* const chrTestOpNames[CHR_TOP_COUNT];

/* One reducing case: datatype, op, number of elements each rank contributes, and the value
 * distribution derived from them. */
typedef struct {
  ncclDataType_t type;
  const chrNumType* t;
  chrTestOp op;
  size_t count;
  uint64_t seed;
  int nranks;
  int64_t amp;       /* floats (sum-like ops): |value| <= amp */
  int active;        /* floats (sum-like ops): ranks per element holding a non-zero value */
  uint64_t* intBits; /* small floats: encodings of the integers in [-intRange, intRange] */
  int64_t intRange;
  uint64_t prodBits[6]; /* encodings of the prod factors */
  int extendShift;      /* integers: 64 - bits of the type */
} chrTestCase;

/* The expected reduction of `count` elements (plus, for avg on floats, what its bound needs). */
typedef struct {
  void* expect;
  double* exact;
  double* absSum;
} chrTestRef;

uint64_t chrTestMix64(uint64_t x);
/* Independent-looking 64 random bits per (seed, rank, i), i < 2^44. */
uint64_t chrTestRnd(uint64_t seed, int rank, size_t i);

/* Decoding tables of the 1- and 2-byte float types (a cache of numeric.c). Call once, before use. */
int chrTestBuildTables(void);

int chrTestCaseInit(chrTestCase* c, ncclDataType_t type, chrTestOp op, size_t count, int nranks, uint64_t seed);
void chrTestCaseFree(chrTestCase* c);
/* Element i of rank `rank`'s contribution, as the type's bit pattern. */
uint64_t chrTestGenBits(const chrTestCase* c, int rank, size_t i);
/* The premulsum scalar of a rank. */
int64_t chrTestScalarOf(const chrTestCase* c, int rank);
int chrTestIsPremul(chrTestOp op);
/* The op of a case on `comm` (a built-in one, or a premulsum created with the rank's scalar, to be
 * destroyed by the caller). *scalar must stay alive until the op is destroyed: for the "device"
 * scalar it is set only after creation (the library must read it when the collective runs); the
 * host-immediate one is overwritten after creation (the library must have copied it). */
ncclResult_t chrTestCreateOp(ncclComm_t comm, int rank, const chrTestCase* c, uint64_t* scalar, ncclRedOp_t* op);
/* Allocates and computes the reference of every element of the case. Returns 0, or 1 when out of memory. */
int chrTestRefCompute(const chrTestCase* c, chrTestRef* ref);
void chrTestRefFree(chrTestRef* ref);
/* Element i of a result: 1 when it matches the reference (bit for bit, or within the avg bound). */
int chrTestRefMatches(const chrTestCase* c, const chrTestRef* ref, size_t i, uint64_t got);

/* Random bits for the copying collectives: element i of rank `rank`'s data, truncated to `size`. */
static inline uint64_t chrTestCopyBits(int size, uint64_t seed, int rank, size_t i) {
  uint64_t h = chrTestRnd(seed, rank, i);
  return size == 8 ? h : h & ((((uint64_t)1) << (8 * size)) - 1);
}
/* Fills n elements with chrTestCopyBits(size, seed, rank, offset + i). */
void chrTestFillCopy(void* buf, size_t n, int size, uint64_t seed, int rank, size_t offset);

#endif /* CHORUS_TESTS_COLLS_DATA_H_ */
