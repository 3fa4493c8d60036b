/* SPDX-License-Identifier: BSD-3-Clause */
/* env.c: integer and string settings from the environment (plugin_support.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_support.h"

int chrPluginEnvLong(const char* name, long lo, long hi, long def, long* out, char* err, size_t errLen) {
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

int chrPluginEnvStr(const char* name, char* out, size_t len) {
  const char* s = getenv(name);
  out[0] = '\0';
  if (s == NULL) return 0;
  if (strlen(s) >= len) return -1;
  strcpy(out, s);
  return 0;
}
