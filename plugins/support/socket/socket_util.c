/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_util.c: error text, the optional logger, and monotonic deadlines for the socket utilities.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "socket/socket_internal.h"

ncclDebugLogger_t chrSockLoggerFn = NULL;

void chrSockSetLogger(ncclDebugLogger_t logger) { chrSockLoggerFn = logger; }

ncclResult_t chrSockSetErr(chrSockErr* err, ncclResult_t res, const char* fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->sysErrno = 0;
  }
  return res;
}

ncclResult_t chrSockSetErrno(chrSockErr* err, ncclResult_t res, int sysErrno, const char* fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->sysErrno = sysErrno;
  }
  return res;
}

int64_t chrSockNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t chrSockDeadlineMs(int64_t ms) {
  if (ms < 0) return CHR_SOCK_FOREVER;
  if (ms > INT64_MAX / 2000000LL) return CHR_SOCK_FOREVER; /* absurdly long: treat as forever */
  return chrSockNowNs() + ms * 1000000LL;
}

int64_t chrSockDeadlineSec(int64_t seconds) {
  if (seconds <= 0) return CHR_SOCK_FOREVER;
  if (seconds > INT64_MAX / 2000000000LL) return CHR_SOCK_FOREVER;
  return chrSockNowNs() + seconds * 1000000000LL;
}
