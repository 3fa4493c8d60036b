/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_connect.h: making plugin comms with peers, many at once, for the host links (connect.c) and the
 * GPU path's proxy ends (transport/dev_net.c) alike.
 */
#ifndef CHORUS_NET_CONNECT_H_
#define CHORUS_NET_CONNECT_H_

#include "plugin/net.h" /* NCCL_NET_HANDLE_MAXSIZE */

struct chrTransportCtx; /* transport/transport_ctx.h */

/* One plugin comm to make with `peer` through plugin device `dev`: a receive end listens and sends
 * its handle to the peer over the bootstrap with `tag`; a send end receives the peer's handle with
 * the same tag and connects. `comm` is the result. */
struct chrNetEndReq {
  int peer;
  int isSend;
  int dev;
  int tag;
  void* comm;
  void* listen; /* internal */
  char handle[NCCL_NET_HANDLE_MAXSIZE];
};

/* Makes every request's comm: first every receive end listens and sends its handle, then every send
 * end receives its peer's handle, then the connects and accepts are driven together until all are
 * up. No rank waits before it has sent all it owes, so ranks that list their ends in any order
 * cannot deadlock. Each pass checks the abort flag, every 100 ms the liveness of the peers still
 * pending (a dead one fails at once), and CHORUS_TIMEOUT when set. `what` begins each error message
 * ("connecting channel 3"). On failure every comm made is closed and the comms are NULL. */
ncclResult_t chrNetConnectAll(const struct chrTransportCtx* ctx, struct chrNetEndReq* reqs, int n, const char* what);

#endif /* CHORUS_NET_CONNECT_H_ */
