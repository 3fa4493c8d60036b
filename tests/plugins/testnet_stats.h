/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_stats.h: what the test net plugins record about the calls they get, so the conformance
 * tests can check what an adapter handed to an older ABI. Each test plugin exports one
 * `struct testNetStats* testNetStats(void)` next to its single ncclNetPlugin_vN object.
 */
#ifndef CHORUS_TESTNET_STATS_H_
#define CHORUS_TESTNET_STATS_H_

#include <stdint.h>

#define TESTNET_MAX_RECVS 4

struct testNetStats {
  int version;               /* ABI version the plugin was built for */
  int initCalls;
  int finalizeCalls;
  uint64_t lastCommId;       /* v11+ */
  int initTrafficClass;      /* v11+: config->trafficClass seen by init */
  int connectTrafficClass;   /* v10: config->trafficClass seen by connect */
  int profCallbackGiven;     /* v10+: init got a non-NULL profiler callback */
  int liveObjects;           /* listen/send/recv comms, mhandles and requests not yet released */
  int connectNotYet;         /* connect calls answered with "not yet" */
  long long lastIsendSize;
  int lastIsendTag;
  void* lastIsendPhandle;    /* v10+ */
  int isendCalls;
  void* lastIrecvRequestIn;  /* what *request held when irecv was entered */
  int lastIrecvN;
  long long lastIrecvSizes[TESTNET_MAX_RECVS];
  int lastIrecvTags[TESTNET_MAX_RECVS];
  void* lastIrecvPhandle0;   /* v10+ */
  int irecvCalls;
  int setNetAttrCalls;       /* v11+ */
  uint32_t lastAttrOp;
  int makeVDeviceCalls;      /* v9+ */
  int lastVDeviceNdevs;
  int lastVDeviceDevs[8];
  int regMrCalls;
  int lastRegType;
  int mismatchedHandles;     /* a comm and an mhandle that do not belong together (bad unwrapping) */
};

typedef struct testNetStats* (*testNetStatsFn)(void);

#endif /* CHORUS_TESTNET_STATS_H_ */
