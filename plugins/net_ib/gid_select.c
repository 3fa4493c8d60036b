/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gid_select.c: which GID a RoCE port uses (rules in ib_logic.h). IB ports route by LID and use GID
 * index 0 only as a source GID; the caller does not ask here for them.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ib_logic.h"

int ibGidIsZero(const uint8_t raw[16]) {
  for (int i = 0; i < 16; i++)
    if (raw[i]) return 0;
  return 1;
}

/* ::ffff:a.b.c.d */
int ibGidIsV4Mapped(const uint8_t raw[16]) {
  for (int i = 0; i < 10; i++)
    if (raw[i]) return 0;
  return raw[10] == 0xff && raw[11] == 0xff;
}

/* fe80::/10 */
int ibGidIsLinkLocal(const uint8_t raw[16]) { return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80; }

static int err(char* e, size_t n, const char* fmt, int v) {
  if (e && n) snprintf(e, n, fmt, v);
  return -1;
}

/* Position of the first entry of `type` that `accept` takes, or -1. */
static int findFirst(const ibGidEntry* g, int n, int type, int (*accept)(const uint8_t*)) {
  for (int i = 0; i < n; i++)
    if ((type < 0 || g[i].type == type) && !ibGidIsZero(g[i].raw) && accept(g[i].raw)) return i;
  return -1;
}

static int isV4(const uint8_t* raw) { return ibGidIsV4Mapped(raw); }
static int isGlobalV6(const uint8_t* raw) { return !ibGidIsV4Mapped(raw) && !ibGidIsLinkLocal(raw); }
static int any(const uint8_t* raw) {
  (void)raw;
  return 1;
}

int ibGidChoose(const ibGidEntry* g, int n, int requested, int family, char* e, size_t errLen) {
  if (g == NULL || n <= 0) return err(e, errLen, "the port has no GID table (%d entries)", n);
  if (requested >= 0) {
    for (int i = 0; i < n; i++)
      if (g[i].index == requested) {
        if (ibGidIsZero(g[i].raw)) return err(e, errLen, "NCCL_IB_GID_INDEX=%d names an empty GID entry", requested);
        return i;
      }
    return err(e, errLen, "NCCL_IB_GID_INDEX=%d is outside the port's GID table", requested);
  }
  int pick = -1;
  if (family == AF_INET || family == AF_UNSPEC) pick = findFirst(g, n, IB_GID_TYPE_ROCE_V2, isV4);
  if (pick < 0 && (family == AF_INET6 || family == AF_UNSPEC)) pick = findFirst(g, n, IB_GID_TYPE_ROCE_V2, isGlobalV6);
  if (pick < 0) pick = findFirst(g, n, IB_GID_TYPE_ROCE_V2, any);
  if (pick < 0) pick = findFirst(g, n, IB_GID_TYPE_ROCE_V1, any);
  if (pick < 0) pick = findFirst(g, n, -1, any);
  if (pick < 0) return err(e, errLen, "no usable (non-zero) GID among %d entries", n);
  return pick;
}
