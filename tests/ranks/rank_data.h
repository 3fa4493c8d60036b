/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rank_data.h: what the communicator-lifecycle tests (test_window, test_grow, test_revoke,
 * test_suspend) share: EXPECT, each rank's data for a round (a hash of round, rank and index, so any
 * rank recomputes every other's), and a sum all-reduce checked against the sum made here.
 */
#ifndef CHORUS_TESTS_RANK_DATA_H_
#define CHORUS_TESTS_RANK_DATA_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "nccl.h"
#include "../test_mix.h"

#define EXPECT(cond)                                                                                        \
  do {                                                                                                      \
    if (!(cond)) {                                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, ncclGetLastError(NULL)); \
      return 1;                                                                                             \
    }                                                                                                       \
  } while (0)

/* Small enough that sums over up to 16 ranks are exact in int32. */
static inline int32_t rankValue(unsigned round, int r, size_t i) {
  const uint64_t x = chrTestFinalMix(((uint64_t)round << 40) ^ ((uint64_t)(r + 1) << 32) ^ (uint64_t)i);
  return (int32_t)(x & 0xffff) - 0x8000;
}

static inline void rankFill(int32_t* buf, size_t count, unsigned round, int r) {
  for (size_t i = 0; i < count; i++) buf[i] = rankValue(round, r, i);
}

/* buf holds the sum of the data of members[0..n) (NULL: ranks 0..n-1). */
static inline int rankCheckSum(const int32_t* buf, size_t count, unsigned round, const int* members, int n) {
  for (size_t i = 0; i < count; i++) {
    int32_t want = 0;
    for (int k = 0; k < n; k++) want += rankValue(round, members ? members[k] : k, i);
    EXPECT(buf[i] == want);
  }
  return 0;
}

/* A sum all-reduce of `count` elements in place, this rank contributing the data of `me`. */
static inline int rankAllReduceChecked(ncclComm_t comm, int me, const int* members, int n, unsigned round,
                                       size_t count) {
  int32_t* buf = malloc(count * sizeof(int32_t));
  EXPECT(buf != NULL);
  rankFill(buf, count, round, me);
  EXPECT(ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  const int bad = rankCheckSum(buf, count, round, members, n);
  free(buf);
  return bad;
}

#endif /* CHORUS_TESTS_RANK_DATA_H_ */
