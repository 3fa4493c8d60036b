/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hca_filter.c: NCCL_IB_HCA, in NCCL's syntax (ib_logic.h): "mlx5" takes every device whose name
 * starts with mlx5, "=mlx5_1" only mlx5_1, "mlx5_0:1,mlx5_1:2" given ports, "^mlx5_3" all but
 * devices starting with mlx5_3, "^=mlx5_3:1" all but port 1 of mlx5_3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib_logic.h"

static int fail(char* err, size_t errLen, const char* what, const char* spec) {
  if (err && errLen) snprintf(err, errLen, "NCCL_IB_HCA=\"%s\": %s", spec, what);
  return -1;
}

int ibHcaParse(const char* spec, ibHcaFilter* f, char* err, size_t errLen) {
  memset(f, 0, sizeof(*f));
  if (spec == NULL) return 0;
  const char* p = spec;
  while (*p == ' ') p++;
  for (int k = 0; k < 2; k++) { /* '^' and '=' in either order, each at most once */
    if (*p == '^' && !f->exclude) {
      f->exclude = 1;
      p++;
    } else if (*p == '=' && !f->exact) {
      f->exact = 1;
      p++;
    }
  }
  if (*p == '\0') {
    if (f->exclude || f->exact) return fail(err, errLen, "no device names after the prefix", spec);
    return 0;
  }
  while (1) {
    const char* end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    /* trim spaces around the entry */
    while (len > 0 && *p == ' ') p++, len--;
    while (len > 0 && p[len - 1] == ' ') len--;
    if (len == 0) return fail(err, errLen, "empty device name", spec);
    if (f->nEntries == IB_HCA_MAX_ENTRIES) return fail(err, errLen, "too many entries", spec);
    const char* colon = memchr(p, ':', len);
    size_t nameLen = colon ? (size_t)(colon - p) : len;
    if (nameLen == 0) return fail(err, errLen, "empty device name", spec);
    if (nameLen >= IB_HCA_NAME_MAX) return fail(err, errLen, "device name too long", spec);
    memcpy(f->entries[f->nEntries].name, p, nameLen);
    f->entries[f->nEntries].name[nameLen] = '\0';
    f->entries[f->nEntries].port = -1;
    if (colon) {
      size_t portLen = len - nameLen - 1;
      char buf[8];
      if (portLen == 0 || portLen >= sizeof(buf)) return fail(err, errLen, "port is not a number in 1..255", spec);
      memcpy(buf, colon + 1, portLen);
      buf[portLen] = '\0';
      char* stop = NULL;
      long port = strtol(buf, &stop, 10);
      if (*stop != '\0' || port < 1 || port > 255) return fail(err, errLen, "port is not a number in 1..255", spec);
      f->entries[f->nEntries].port = (int)port;
    }
    f->nEntries++;
    if (end == NULL) break;
    p = end + 1;
  }
  return 0;
}

static int entryMatches(const ibHcaFilter* f, int i, const char* name, int port) {
  const char* want = f->entries[i].name;
  int nameOk = f->exact ? strcmp(want, name) == 0 : strncmp(want, name, strlen(want)) == 0;
  return nameOk && (f->entries[i].port == -1 || f->entries[i].port == port);
}

int ibHcaMatch(const ibHcaFilter* f, const char* name, int port) {
  if (f->nEntries == 0) return 1;
  int listed = 0;
  for (int i = 0; i < f->nEntries && !listed; i++) listed = entryMatches(f, i, name, port);
  return f->exclude ? !listed : listed;
}
