/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi_dump.c: prints the ABI facts of whichever nccl.h is first on the include path, one
 * "key value" line each. Built twice: against Chorus's header and, when present, against NVIDIA's;
 * test_abi_compare.sh compares the keys both print.
 */
#include <stddef.h>
#include <stdio.h>
#include "nccl.h"

#define SIZE(t) printf("sizeof.%s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof.%s.%s %zu\n", #t, #f, offsetof(t, f))
#define VAL(v) printf("value.%s %lld\n", #v, (long long)(v))

int main(void) {
  SIZE(ncclUniqueId);
  SIZE(ncclResult_t);
  SIZE(ncclDataType_t);
  SIZE(ncclRedOp_t);
  SIZE(ncclScalarResidence_t);
  VAL(NCCL_UNIQUE_ID_BYTES);
  VAL(NCCL_CONFIG_UNDEF_INT);
  VAL(NCCL_SPLIT_NOCOLOR);
  VAL(NCCL_MAJOR);
  VAL(ncclSuccess); VAL(ncclUnhandledCudaError); VAL(ncclSystemError); VAL(ncclInternalError);
  VAL(ncclInvalidArgument); VAL(ncclInvalidUsage); VAL(ncclRemoteError); VAL(ncclInProgress);
  VAL(ncclInt8); VAL(ncclChar); VAL(ncclUint8); VAL(ncclInt32); VAL(ncclInt); VAL(ncclUint32); VAL(ncclInt64);
  VAL(ncclUint64); VAL(ncclFloat16); VAL(ncclHalf); VAL(ncclFloat32); VAL(ncclFloat); VAL(ncclFloat64);
  VAL(ncclDouble); VAL(ncclBfloat16); VAL(ncclFloat8e4m3); VAL(ncclFloat8e5m2); VAL(ncclNumTypes);
  VAL(ncclSum); VAL(ncclProd); VAL(ncclMax); VAL(ncclMin); VAL(ncclAvg); VAL(ncclNumOps); VAL(ncclMaxRedOp);
  VAL(ncclScalarDevice); VAL(ncclScalarHostImmediate);
  OFF(ncclConfig_t, size); OFF(ncclConfig_t, magic); OFF(ncclConfig_t, version); OFF(ncclConfig_t, blocking);
  OFF(ncclConfig_t, cgaClusterSize); OFF(ncclConfig_t, minCTAs); OFF(ncclConfig_t, maxCTAs);
  OFF(ncclConfig_t, netName); OFF(ncclConfig_t, splitShare); OFF(ncclConfig_t, trafficClass);
  OFF(ncclConfig_t, commName); OFF(ncclConfig_t, collnetEnable); OFF(ncclConfig_t, CTAPolicy);
  OFF(ncclConfig_t, shrinkShare); OFF(ncclConfig_t, nvlsCTAs);
#if NCCL_VERSION_CODE >= 22800
  OFF(ncclConfig_t, nChannelsPerNetPeer); OFF(ncclConfig_t, nvlinkCentricSched);
  VAL(NCCL_CTA_POLICY_EFFICIENCY);
  VAL(NCCL_CTA_POLICY_ZERO);
  VAL(NCCL_WIN_COLL_SYMMETRIC);
#endif
#if NCCL_VERSION_CODE >= 23000
  OFF(ncclConfig_t, graphUsageMode); OFF(ncclConfig_t, numRmaCtx); OFF(ncclConfig_t, maxP2pPeers);
  OFF(ncclConfig_t, graphStreamOrdering);
  SIZE(ncclConfig_t);
  VAL(ncclTimeout);
  VAL(ncclNumResults); /* grew with ncclTimeout, so compare only at the same level */
#endif
  SIZE(ncclSimInfo_t);
  OFF(ncclSimInfo_t, estimatedTime);
  /* The initializer's values, field by field. */
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  printf("init.magic %u\ninit.blocking %d\ninit.maxCTAs %d\ninit.netName %p\n", c.magic, c.blocking, c.maxCTAs,
         (void*)c.netName);
  return 0;
}
