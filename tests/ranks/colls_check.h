/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls_check.h: what test_colls.c and colls_p2p.c share: the arguments, the per-rank state, buffers
 * with sentinel guards before and after them, and the checks that compare results with the
 * references of colls_data.h, printing the first few mismatches of a case.
 */
#ifndef CHORUS_TESTS_COLLS_CHECK_H_
#define CHORUS_TESTS_COLLS_CHECK_H_

#include <stddef.h>
#include <stdint.h>
#include "colls_data.h"
#include "nccl.h"

#define GUARD 16       /* sentinel elements before and after every buffer */
#define SENTINEL 0x5Au /* fill byte of outputs and guards */
#define MAX_REPORTS 5  /* mismatches printed per case */
#define NUM_SIZES 4    /* 0, 1, 1031, medium */

typedef struct {
  const char* coll;
  int nhosts;
  size_t medium, big;
  int timeoutSec;
} chrTestArgs;

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
  const chrTestArgs* a;
  int failures;   /* cases with a wrong result */
  int reports;    /* mismatches printed for the current case */
  char desc[192]; /* the current case, for messages */
} chrTestRank;

typedef struct {
  unsigned char* alloc; /* GUARD + elems + GUARD elements, all SENTINEL at first */
  unsigned char* p;     /* the first of the elems */
  unsigned char* snap;  /* a copy of alloc, taken by chrTestSnapshot() */
  size_t elems, ts, bytes;
} chrTestBuf;

static inline unsigned char* chrTestAt(const chrTestBuf* b, size_t elem) { return b->p + elem * b->ts; }

/* An NCCL error ends the rank (the comm is aborted and buffers are left to the exit); wrong results
 * are counted and the ranks carry on, so that they stay in step. */
#define NCCL_OK(call)                                                   \
  do {                                                                  \
    ncclResult_t res_ = (call);                                         \
    if (res_ != ncclSuccess) return chrTestNcclFailed(st, #call, res_); \
  } while (0)
#define ALLOC_OK(expr)  \
  do {                  \
    if (expr) return 1; \
  } while (0)

/* Buffers: chrTestBufInit allocates GUARD + elems + GUARD elements filled with SENTINEL (returns 1
 * when out of memory); chrTestSnapshot copies the whole allocation for chrTestCheckUnchanged. */
int chrTestBufInit(chrTestBuf* b, size_t elems, size_t ts);
void chrTestBufFree(chrTestBuf* b);
int chrTestSnapshot(chrTestBuf* b);

/* Names the current case in messages and resets its count of printed mismatches. */
void chrTestSetCase(chrTestRank* st, const char* fmt, ...);
void chrTestReport(chrTestRank* st, const char* what, long long i, uint64_t got, uint64_t want);

/* Checks: each returns non-zero when it found a problem (and printed the first few). */
int chrTestCheckGuards(chrTestRank* st, const char* what, const chrTestBuf* b);
int chrTestCheckUnchanged(chrTestRank* st, const char* what, const chrTestBuf* b);
int chrTestCheckCopy(chrTestRank* st, const char* what, const unsigned char* out, size_t n, int ts, uint64_t seed,
                     int srcRank, size_t srcOff);
int chrTestCheckReduced(chrTestRank* st, const char* what, const chrTestCase* c, const chrTestRef* ref, size_t refOff,
                        const unsigned char* out, size_t n);
int chrTestNcclFailed(chrTestRank* st, const char* call, ncclResult_t res);
void chrTestEndCase(chrTestRank* st, int bad);

/* Element count of size index s (0, 1, 1031, then --medium bytes split in `blocks` blocks), and the
 * data seed of a case. */
size_t chrTestCountOf(const chrTestArgs* a, int s, size_t ts, int blocks);
uint64_t chrTestSeedOf(int coll, int s, int type, int op);

/* The send/recv scenarios (colls_p2p.c). */
int chrTestRunSendRecv(chrTestRank* st);

#endif /* CHORUS_TESTS_COLLS_CHECK_H_ */
