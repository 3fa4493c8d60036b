/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_expect.h: EXPECT for the unit tests that count their failures and go on (the reduction tests):
 * a failed condition prints its place and message, the first 30 of them, and counts in `failures`,
 * which main turns into the exit status.
 */
#ifndef CHORUS_TESTS_UNIT_TEST_EXPECT_H_
#define CHORUS_TESTS_UNIT_TEST_EXPECT_H_

#include <stdio.h>

static int failures = 0;
#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      if (failures++ < 30) {                               \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);    \
        fprintf(stderr, __VA_ARGS__);                      \
        fprintf(stderr, "\n");                             \
      }                                                    \
    }                                                      \
  } while (0)

#endif /* CHORUS_TESTS_UNIT_TEST_EXPECT_H_ */
