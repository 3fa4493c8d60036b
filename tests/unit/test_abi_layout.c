/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_abi_layout.c: Chorus's nccl.h against the sizes and offsets of NCCL 2.30.7's (LP64).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "nccl.h"

static int failures;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } \
  } while (0)

int main(void) {
  EXPECT(sizeof(ncclUniqueId) == 128);
  EXPECT(sizeof(ncclConfig_t) == 96);
  EXPECT(offsetof(ncclConfig_t, blocking) == 16);
  EXPECT(offsetof(ncclConfig_t, netName) == 32);
  EXPECT(offsetof(ncclConfig_t, splitShare) == 40);
  EXPECT(offsetof(ncclConfig_t, trafficClass) == 44);
  EXPECT(offsetof(ncclConfig_t, commName) == 48);
  EXPECT(offsetof(ncclConfig_t, collnetEnable) == 56);
  EXPECT(offsetof(ncclConfig_t, CTAPolicy) == 60);
  EXPECT(offsetof(ncclConfig_t, shrinkShare) == 64);
  EXPECT(offsetof(ncclConfig_t, nvlsCTAs) == 68);
  EXPECT(offsetof(ncclConfig_t, nChannelsPerNetPeer) == 72);
  EXPECT(offsetof(ncclConfig_t, nvlinkCentricSched) == 76);
  EXPECT(offsetof(ncclConfig_t, graphUsageMode) == 80);
  EXPECT(offsetof(ncclConfig_t, numRmaCtx) == 84);
  EXPECT(offsetof(ncclConfig_t, maxP2pPeers) == 88);
  EXPECT(offsetof(ncclConfig_t, graphStreamOrdering) == 92);
  EXPECT(sizeof(ncclSimInfo_t) == 24);
  EXPECT(offsetof(ncclSimInfo_t, estimatedTime) == 16);
  EXPECT(sizeof(ncclWaitSignalDesc_t) == 16);
  EXPECT(sizeof(ncclRedOp_t) == 4 && sizeof(ncclDataType_t) == 4 && sizeof(ncclResult_t) == 4);
  EXPECT(ncclMaxRedOp == 0x7fffffff);
  EXPECT(NCCL_VERSION(2, 8, 4) == 2804 && NCCL_VERSION(2, 30, 7) == 23007 && NCCL_VERSION_CODE == 23007);
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  EXPECT(c.size == 96 && c.magic == 0xcafebeef && c.version == 23007);
  const int* fields = &c.blocking;
  /* Every int field after the header is UNDEF (netName and commName are NULL). */
  EXPECT(c.blocking == NCCL_CONFIG_UNDEF_INT && c.graphStreamOrdering == NCCL_CONFIG_UNDEF_INT);
  EXPECT(c.netName == NULL && c.commName == NULL && c.splitShare == NCCL_CONFIG_UNDEF_INT);
  (void)fields;
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  EXPECT(s.size == 24 && s.magic == 0x74685283u && s.estimatedTime == -1.0f);
  EXPECT(ncclFloat8e5m2 == 11 && ncclNumTypes == 12 && ncclBfloat16 == 9 && ncclTimeout == 8);
  if (failures) return 1;
  return 0;
}
