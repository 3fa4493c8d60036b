/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_settings.c: NCCL_NET_GDR_LEVEL and NCCL_NETDEVS_POLICY (net_settings.h). Pure functions of the
 * text, so the loader (config_check.c) and the topology (topo_nic.c) agree on every value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/net_settings.h"

static const char* const kLevelNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};

int chrConfigParseGdrLevel(const char* text, int* level, char* why, size_t cap) {
  if (text[0] == '\0') {
    *level = -1;
    return 0;
  }
  for (int i = 0; i <= CHR_GDR_SYS; i++)
    if (strcmp(kLevelNames[i], text) == 0) {
      *level = i;
      return 0;
    }
  static const int kOld[] = {CHR_GDR_LOC, CHR_GDR_PIX, CHR_GDR_PXB, CHR_GDR_PHB, CHR_GDR_SYS};
  int digits = 1;
  for (const char* p = text; *p; p++) digits &= *p >= '0' && *p <= '9';
  if (digits) {
    /* Any run of digits: a long one is simply large, and large means SYS. */
    long v = strlen(text) > 9 ? 4 : strtol(text, NULL, 10);
    *level = kOld[v > 4 ? 4 : v];
    return 0;
  }
  snprintf(why, cap, "is not valid; accepted: LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS, or 0-4 (LOC, PIX, "
                     "PXB, PHB, SYS)");
  return -1;
}

int chrConfigParseNetDevsPolicy(const char* text, int* policy, int* max, char* why, size_t cap) {
  if (text[0] == '\0' || strcasecmp(text, "AUTO") == 0) {
    *policy = CHR_NETDEVS_AUTO;
    *max = 0;
    return 0;
  }
  if (strcasecmp(text, "ALL") == 0) {
    *policy = CHR_NETDEVS_ALL;
    *max = 0;
    return 0;
  }
  if (strncasecmp(text, "MAX:", 4) == 0 && text[4] >= '0' && text[4] <= '9') {
    char* end;
    long n = strtol(text + 4, &end, 10);
    if (*end == '\0' && n >= 1 && n <= CHR_NETDEVS_MAX_N) {
      *policy = CHR_NETDEVS_MAX;
      *max = (int)n;
      return 0;
    }
  }
  snprintf(why, cap, "is not valid; accepted: AUTO, ALL, MAX:N (N from 1 to %d)", CHR_NETDEVS_MAX_N);
  return -1;
}
