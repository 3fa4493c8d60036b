/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdrtest_check.h: the checks the gdrtest NIC's own tests share (test_gdrtest_host.c here,
 * tests/gpu/test_gdr_testnic.c): CHECK(cond, fmt...) fails the program with the file:line and the
 * message; NET(call) checks a plugin call returned ncclSuccess.
 */
#ifndef CHORUS_GDRTEST_CHECK_H_
#define CHORUS_GDRTEST_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      exit(1);                                             \
    }                                                      \
  } while (0)
#define NET(call) CHECK((call) == ncclSuccess, "%s failed", #call)

#endif /* CHORUS_GDRTEST_CHECK_H_ */
