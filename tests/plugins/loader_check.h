/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loader_check.h: what the plugin loader tests (test_net_loader, test_tuner_loader,
 * test_profiler_loader) check with: EXPECT/OK, the library's log file (NCCL_DEBUG_FILE) and the
 * common key=value checks on it and on the last error.
 */
#ifndef CHORUS_TESTS_LOADER_CHECK_H_
#define CHORUS_TESTS_LOADER_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#include "log/log.h"

#define EXPECT(cond, ...)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

#define OK(call)                                                                                  \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    EXPECT(r_ == ncclSuccess, "%s returned %d (last error: %s)", #call, (int)r_, chrThreadLastError()); \
  } while (0)

/* The whole log file named by NCCL_DEBUG_FILE ("" when it does not exist yet); free it. */
char* readLog(void);

/* Lines of text that contain a (and b, when not NULL). */
int countLines(const char* text, const char* a, const char* b);

/* The value of "key=value" in arg, or NULL when arg is not about key. */
const char* argValue(const char* arg, const char* key);

/* The common checks of argv[2..argc): err=<s> (the last error contains s), log=<s> / nolog=<s>
 * (the log does / does not contain s), warns=<N> (exactly N WARN lines). */
void checkLog(int argc, char** argv);

#endif /* CHORUS_TESTS_LOADER_CHECK_H_ */
