/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_cases.h: the cases of the public-API GPU test (test_gpu_nccl.c): what each rank calls, its
 * input data, and the host reference its output must match.
 *
 * Data are small integers (in every type, float8 included), chosen per op so that every partial
 * result is exact in the type: sums, products, max, min, integer averages and PreMulSum by 2 (float
 * types) or 3 (integer types) are then the same bits whatever order the ring reduces in, and the
 * reference is exact. The one exception is the average of float types on a rank count that is not a
 * power of two (a PreMulSum by a rounded 1/n): checked within a tolerance.
 *
 * This file knows nothing of the library but nccl.h's enums.
 */
#ifndef CHORUS_TESTS_GPU_NCCL_CASES_H_
#define CHORUS_TESTS_GPU_NCCL_CASES_H_

#include <stddef.h>
#include <stdint.h>

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, OP_PREMUL_HOST, OP_PREMUL_DEV, OP_COUNT };
enum { F_ALLREDUCE, F_REDUCESCATTER, F_ALLGATHER, F_BROADCAST, F_REDUCE, F_RING, F_PAIRS, F_ALLTOALL, F_COUNT };

#define NC_GUARD 64                    /* poisoned bytes on each side of an output */
#define NC_POISON 0xa5
#define NC_ARENA (24u << 20)           /* bytes of each rank's send and receive arenas */
#define NC_MAX_OPS 8

/* One call of every rank (a case is a group of these). */
struct ncOp {
  int func, type, op, root, inPlace;
  int stream;         /* which of the rank's streams */
  size_t count;       /* the API's count (per rank block for reduce-scatter, all-gather, pairs, all-to-all) */
  size_t sendOff;     /* byte offsets in the rank's arenas */
  size_t recvOff;
  uint64_t seed;
};

struct ncCase {
  int nOps;
  struct ncOp ops[NC_MAX_OPS];
  char name[128];
};

/* Where rank r's input and output live for an op (bytes from the arena starts). inRecvArena: the input
 * is in the receive arena (in place). region*: the receive-arena bytes poisoned before the call and
 * checked after (guards outside, output elements inside). */
struct ncLayout {
  size_t inElems, inOff;
  int inRecvArena;
  size_t outElems, outOff;     /* outElems 0: this rank has no output (reduce, not root) */
  size_t regionOff, regionBytes;
};

int ncTypeSize(int type);
const char* ncTypeName(int type);
const char* ncOpName(int op);
const char* ncFuncName(int func);
int ncTypeIsFloat(int type);

void ncLayoutOf(const struct ncOp* o, int nRanks, int rank, struct ncLayout* l);

/* The PreMulSum scalar of a type (its bytes, little-endian in the low bytes) and its value. */
uint64_t ncScalarBits(int type);

/* Rank r's input, element idx, written at dst (typed). */
void ncFillInput(const struct ncOp* o, int nRanks, int rank, void* dst, size_t elems);

/* Checks rank r's downloaded region (regionBytes bytes, from regionOff) against the reference.
 * Returns 0, or -1 with a message in msg. */
int ncCheck(const struct ncOp* o, int nRanks, int rank, const unsigned char* region, char* msg, size_t cap);

/* F_PAIRS: the order in which rank r issues its 2n calls: entry e < n is the send to rank e, entry
 * e >= n the receive from rank e - n (a shuffle of the rank's own). */
void ncPairsOrder(const struct ncOp* o, int nRanks, int rank, int* order);

/* The case list for n ranks; *count cases (static storage). quick: a smaller list (threads mode). */
const struct ncCase* ncCases(int nRanks, int quick, int* count);

/* Builds one case from ops (layout offsets assigned). */
void ncMakeCase(struct ncCase* c, const struct ncOp* ops, int nOps, int nRanks);

#endif /* CHORUS_TESTS_GPU_NCCL_CASES_H_ */
