/* SPDX-License-Identifier: BSD-3-Clause */
/* args.c: strict parsing of the tools' command-line values (args.h). */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "chorus.h"

int chrArgSize(const char* s, size_t* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno != 0 || !(v >= 0)) return -1; /* !(v >= 0) also refuses NaN */
  switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0' || v > 1e18) return -1;
  *out = (size_t)v;
  return 0;
}

int chrArgInt(const char* s, long lo, long hi, int* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

int chrArgDouble(const char* s, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int chrArgU64(const char* s, uint64_t* out) {
  const char* p = s;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '-' || *p == '+') return -1; /* strtoull would take "-1" as the largest value */
  char* end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 0);
  if (end == p || *end != '\0' || errno != 0) return -1;
  *out = (uint64_t)v;
  return 0;
}

void chrArgPrintVersion(const char* tool) {
  printf("chorus-%s %d.%d.%d\n", tool, CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH);
}
