/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_connect.c: making plugin comms with peers, many at once (net_connect.h).
 */
#include <string.h>
#include "bootstrap/bootstrap.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "transport/net_connect.h"
#include "transport/transport_ctx.h"
#include "util/idle.h"

#define PEER_CHECK_NS 100000000ull

/* The handles: every receive end's out first, then every send end's in (the bootstrap's sends never
 * wait for the peer, so by the time a rank waits it owes nothing). */
static ncclResult_t exchangeHandles(const struct chrTransportCtx* ctx, struct chrNetEndReq* reqs, int n) {
  for (int i = 0; i < n; i++) {
    if (reqs[i].isSend) continue;
    memset(reqs[i].handle, 0, sizeof(reqs[i].handle));
    CHECK(chrNetListen(ctx->net, reqs[i].dev, reqs[i].handle, &reqs[i].listen));
    CHECK(chrBootstrapSend(ctx->bootstrap, reqs[i].peer, reqs[i].tag, reqs[i].handle, sizeof(reqs[i].handle)));
  }
  for (int i = 0; i < n; i++)
    if (reqs[i].isSend)
      CHECK(chrBootstrapRecv(ctx->bootstrap, reqs[i].peer, reqs[i].tag, reqs[i].handle, sizeof(reqs[i].handle)));
  return ncclSuccess;
}

/* One pass of connects and accepts; *left: ends not up yet, *waitPeer: the peer of one of them. */
static ncclResult_t connectPass(const struct chrTransportCtx* ctx, struct chrNetEndReq* reqs, int n, int* left,
                                int* waitPeer) {
  *left = 0;
  for (int i = 0; i < n; i++) {
    if (reqs[i].comm) continue;
    if (reqs[i].isSend) CHECK(chrNetConnect(ctx->net, reqs[i].dev, reqs[i].handle, &reqs[i].comm, NULL));
    else CHECK(chrNetAccept(ctx->net, reqs[i].listen, &reqs[i].comm, NULL));
    if (reqs[i].comm == NULL) {
      (*left)++;
      *waitPeer = reqs[i].peer;
    }
  }
  return ncclSuccess;
}

/* A peer that died after sending its handle never connects: ask the bootstrap about every pending
 * peer (each once per pass: a dead one must not wait behind a slow one). */
static ncclResult_t checkPending(const struct chrTransportCtx* ctx, const struct chrNetEndReq* reqs, int n) {
  for (int i = 0; i < n; i++) {
    if (reqs[i].comm) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = reqs[j].comm == NULL && reqs[j].peer == reqs[i].peer;
    if (!seen) CHECK(chrBootstrapCheckPeer(ctx->bootstrap, reqs[i].peer));
  }
  return ncclSuccess;
}

ncclResult_t chrNetConnectAll(const struct chrTransportCtx* ctx, struct chrNetEndReq* reqs, int n, const char* what) {
  if (ctx->net == NULL) return chrFail(ncclInternalError, "%s: comm %p has no net plugin open", what, ctx->owner);
  for (int i = 0; i < n; i++) reqs[i].comm = reqs[i].listen = NULL;
  const int64_t timeoutSec = chrParamInt(CHR_P_TIMEOUT); /* 0: a slow peer is waited for, as NCCL does */
  const uint64_t start = chrNowNs();
  uint64_t lastPeerCheck = start;
  ncclResult_t res = exchangeHandles(ctx, reqs, n);
  while (res == ncclSuccess) {
    int left = 0, waitPeer = -1;
    if ((res = connectPass(ctx, reqs, n, &left, &waitPeer)) != ncclSuccess || left == 0) break;
    if (*ctx->abortFlag) {
      res = chrFail(ncclRemoteError, "%s: comm %p rank %d: communicator aborted", what, ctx->owner, ctx->rank);
      break;
    }
    const uint64_t now = chrNowNs();
    if (timeoutSec > 0 && now - start > (uint64_t)timeoutSec * 1000000000ull) {
      res = chrFail(ncclTimeout, "%s: comm %p rank %d: rank %d not connected within %lld s (CHORUS_TIMEOUT)", what,
                    ctx->owner, ctx->rank, waitPeer, (long long)timeoutSec);
      break;
    }
    if (now - lastPeerCheck > PEER_CHECK_NS) {
      lastPeerCheck = now;
      res = checkPending(ctx, reqs, n);
      if (res != ncclSuccess) break;
    }
    chrIdleWait(now - start);
  }
  for (int i = 0; i < n; i++) {
    if (reqs[i].listen) chrNetCloseListen(ctx->net, reqs[i].listen);
    reqs[i].listen = NULL;
    if (res != ncclSuccess && reqs[i].comm) {
      if (reqs[i].isSend) chrNetCloseSend(ctx->net, reqs[i].comm);
      else chrNetCloseRecv(ctx->net, reqs[i].comm);
      reqs[i].comm = NULL;
    }
  }
  return res;
}
