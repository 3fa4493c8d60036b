/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mix.h: the 64-bit finaliser the tests hash their data with (a bijection, so distinct keys give
 * distinct, independent-looking words). Each test derives its bytes from (rank, step, index) keys
 * through it, so every rank can recompute any other's data without sending it.
 */
#ifndef CHORUS_TESTS_TEST_MIX_H_
#define CHORUS_TESTS_TEST_MIX_H_

#include <stdint.h>

static inline uint64_t chrTestFinalMix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

#endif /* CHORUS_TESTS_TEST_MIX_H_ */
