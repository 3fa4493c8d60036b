/* SPDX-License-Identifier: BSD-3-Clause */
/* fake_stats.h: what fake_v12.c records of the calls it gets (read by test_net_common.c). */
#ifndef CHORUS_NET_COMMON_FAKE_STATS_H_
#define CHORUS_NET_COMMON_FAKE_STATS_H_

#include <stddef.h>
#include <stdint.h>

struct fakeStats {
  int inits;                /* v12 init calls */
  uint64_t lastCommId;
  int lastTrafficClass;
  void* lastProf;           /* profiler callback given to the last init */
  void* lastCtxSeen;        /* ctx given to the last listen / connect */
  size_t lastSendSize;
  void* lastSendPhandle;
  int lastRecvN;
  size_t lastRecvSizes[8];
  void* lastRecvPhandles;   /* the phandles array pointer irecv got */
  void* requestOnEntry;     /* *request when irecv was entered */
  int vdevNdevs;            /* last makeVDevice request */
  int vdevDevs[8];
  int attrMaxPeers;         /* last setNetAttr sendCommAttr.maxConcurrentPeers */
  uint32_t attrProto;
};

#endif
