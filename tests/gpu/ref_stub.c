/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ref_stub.c: the tests link the host reduction (core/exec/reduce.c) without the rest of the core,
 * so that they build where the core cannot (CHORUS_DEVICE_ONLY); reduce.c reports argument errors
 * through chrFailAt, which here just prints.
 */
#include <stdarg.h>
#include <stdio.h>
#include "log/log.h"

ncclResult_t chrFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return res;
}
