/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_verbs.h: what the verbs stand-in (mock_verbs.c) tells a test about itself. The test copy of
 * the plugin exports these two functions (and only it: the real plugin has no such symbols), so a
 * test reaches them with dlsym on the plugin it loaded.
 */
#ifndef CHORUS_NET_IB_MOCK_VERBS_H_
#define CHORUS_NET_IB_MOCK_VERBS_H_

#include <stddef.h>
#include <stdint.h>

/* How a registration was made: ibv_reg_mr (host memory, or GPU memory through a peer-memory driver)
 * or ibv_reg_dmabuf_mr. In the mock both are plain host memory. */
enum { MOCK_MR_NONE = 0, MOCK_MR_PLAIN = 1, MOCK_MR_DMABUF = 2 };

typedef struct {
  uint64_t reads;          /* RDMA reads carried out (bytes copied) */
  uint64_t readErrors;     /* RDMA reads that completed with an error */
  uint64_t lastReadAddr;   /* the last read carried out: remote address, length, first bytes */
  uint32_t lastReadLen;
  uint8_t lastReadData[8];
  int liveQps;             /* QPs that exist now */
  int loopbackQps;         /* of them, connected to themselves */
  int liveMrs;             /* registrations that exist now */
} mockVerbsStats;

typedef void (*mockVerbsGetStats_t)(mockVerbsStats* out);
/* The newest registration starting at addr and covering len bytes: its MOCK_MR_* kind (NONE when
 * there is none) and its access flags in *access. */
typedef int (*mockVerbsMrAt_t)(const void* addr, size_t len, int* access);

#endif /* CHORUS_NET_IB_MOCK_VERBS_H_ */
