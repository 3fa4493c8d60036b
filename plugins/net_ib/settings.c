/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.c: integer settings from the environment (ib_logic.h). Plugins read their own settings with
 * getenv, as NCCL plugins do (the core exports its INI sections into the environment first). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ib_logic.h"

int ibEnvInt(const char* name, long lo, long hi, long def, long* out, char* err, size_t errLen) {
  const char* v = getenv(name);
  *out = def;
  if (v == NULL || *v == '\0') return 0;
  char* end = NULL;
  errno = 0;
  long x = strtol(v, &end, 0);
  while (end && (*end == ' ' || *end == '\t')) end++;
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    if (err && errLen) snprintf(err, errLen, "%s=\"%s\" is not a whole number in %ld..%ld", name, v, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}
