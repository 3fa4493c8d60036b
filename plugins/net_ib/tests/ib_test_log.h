/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_test_log.h: what the IB plugin's tests share: a logger that keeps the plugin's lines, and FAIL,
 * which prints them after the failure. Include once per test program.
 */
#ifndef CHORUS_IB_TEST_LOG_H_
#define CHORUS_IB_TEST_LOG_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "plugin/net.h"

static char logText[1 << 16];
static size_t logLen;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  if (logLen + 512 >= sizeof(logText)) return;
  logLen += (size_t)snprintf(logText + logLen, sizeof(logText) - logLen, "%s ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
  va_list ap;
  va_start(ap, fmt);
  logLen += (size_t)vsnprintf(logText + logLen, sizeof(logText) - logLen, fmt, ap);
  va_end(ap);
  logText[logLen++] = '\n';
  logText[logLen] = '\0';
}

#define FAIL(...)                                          \
  do {                                                     \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
    fprintf(stderr, __VA_ARGS__);                          \
    fprintf(stderr, "\n--- plugin log ---\n%s", logText); \
    exit(1);                                               \
  } while (0)

#endif /* CHORUS_IB_TEST_LOG_H_ */
