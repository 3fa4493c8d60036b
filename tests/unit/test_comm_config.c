/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_comm_config.c: ncclConfig_t is read the way NCCL reads it (comm/config.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "log/log.h"

static int failures;
#define EXPECT(cond)                                                                            \
  do {                                                                                          \
    if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } \
  } while (0)

int main(void) {
  unsetenv("NCCL_NET");
  unsetenv("NCCL_CTA_POLICY");
  ncclConfig_t out;
  /* NULL: all defaults. */
  EXPECT(chrConfigFromUser(NULL, &out) == ncclSuccess);
  EXPECT(out.blocking == 1 && out.maxCTAs == 64 && out.minCTAs == 1 && out.cgaClusterSize == 4);
  EXPECT(out.splitShare == 0 && out.graphUsageMode == 2 && out.numRmaCtx == 1 && out.graphStreamOrdering == 1);
  EXPECT(out.trafficClass == NCCL_CONFIG_UNDEF_INT && out.nvlsCTAs == NCCL_CONFIG_UNDEF_INT);

  /* A current config with values. */
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.blocking = 0;
  c.maxCTAs = 1000; /* capped */
  c.commName = "trainer";
  EXPECT(chrConfigFromUser(&c, &out) == ncclSuccess);
  EXPECT(out.blocking == 0 && out.maxCTAs == 64 && strcmp(out.commName, "trainer") == 0);

  /* Wrong magic. */
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.magic = 0x12345678;
  EXPECT(chrConfigFromUser(&c, &out) == ncclInvalidArgument);
  EXPECT(strstr(chrThreadLastError(), "NCCL_CONFIG_INITIALIZER") != NULL);

  /* Out of range values. */
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.blocking = 2;
  EXPECT(chrConfigFromUser(&c, &out) == ncclInvalidArgument);
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.minCTAs = 8;
  c.maxCTAs = 4;
  EXPECT(chrConfigFromUser(&c, &out) == ncclInvalidArgument);
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.CTAPolicy = 0x10;
  EXPECT(chrConfigFromUser(&c, &out) == ncclInvalidArgument);

  /* A caller built against 2.17 headers: struct ends after netName (40 bytes), and fields newer than
   * its version hold garbage that must be ignored. */
  unsigned char raw[sizeof(ncclConfig_t)];
  memset(raw, 0x5a, sizeof(raw));
  ncclConfig_t* old = (ncclConfig_t*)raw;
  old->size = offsetof(ncclConfig_t, splitShare);
  old->magic = NCCL_API_MAGIC;
  old->version = NCCL_VERSION(2, 17, 1);
  old->blocking = 1;
  old->cgaClusterSize = 2;
  old->minCTAs = 1;
  old->maxCTAs = 8;
  old->netName = NULL;
  EXPECT(chrConfigFromUser(old, &out) == ncclSuccess);
  EXPECT(out.maxCTAs == 8 && out.cgaClusterSize == 2 && out.splitShare == 0 && out.CTAPolicy == 0);
  EXPECT(out.commName == NULL && out.graphUsageMode == 2);

  /* A 2.25 caller with a full-size struct but stale newer fields: reset by version. */
  c = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  c.version = NCCL_VERSION(2, 25, 0);
  c.CTAPolicy = 0x7777; /* would be invalid, but is newer than 2.25: reset */
  c.graphUsageMode = 99;
  EXPECT(chrConfigFromUser(&c, &out) == ncclSuccess);
  EXPECT(out.CTAPolicy == 0 && out.graphUsageMode == 2);

  /* Environment overrides. */
  setenv("NCCL_CTA_POLICY", "1", 1);
  setenv("NCCL_NET", "Socket", 1);
  chrConfigReload();
  EXPECT(chrConfigFromUser(NULL, &out) == ncclSuccess);
  EXPECT(out.CTAPolicy == 1 && out.netName && strcmp(out.netName, "Socket") == 0);

  if (failures) return 1;
  return 0;
}
