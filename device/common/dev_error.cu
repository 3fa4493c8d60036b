/* SPDX-License-Identifier: BSD-3-Clause */
/* dev_error.cu: the device library's per-thread last error (dev_error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "device/common/dev_error.h"
#include "hostdev/dev_api.h"

static __thread char chrDevLastErrorText[1024];

ncclResult_t chrDevFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...) {
  const char* base = strrchr(file, '/');
  int n = snprintf(chrDevLastErrorText, sizeof chrDevLastErrorText, "%s:%d ", base ? base + 1 : file, line);
  if (n < 0 || n >= (int)sizeof chrDevLastErrorText) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(chrDevLastErrorText + n, sizeof chrDevLastErrorText - (size_t)n, fmt, ap);
  va_end(ap);
  return res;
}

extern "C" const char* chrDevLastError(void) { return chrDevLastErrorText; }
