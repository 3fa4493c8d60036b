/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connect.c: connecting links a pair at a time (a send link and a receive link on one channel), or
 * net links a batch at a time, for the ring and point-to-point links that exec/links.c connects
 * lazily, the first time a plan needs them.
 *
 * Each link picks its transport by peer: shm to a rank on the same host, net otherwise (see
 * chrTransportPick). A channel connects in two phases that every rank runs in the same order, shm
 * first, then net. Within each phase a rank only sends before it waits (shm: the receiver's segment
 * name, then the sender's acknowledgement; net: the listen handle, then the non-blocking connect and
 * accept loop), so no wait can close a cycle around the ring.
 *
 * Net: the receiving side listens and sends its handle to its predecessor over the bootstrap; the
 * sending side receives the handle from its successor and connects (transport/net_connect.c, which
 * drives both until done, abort-aware, a dead peer an error at once, CHORUS_TIMEOUT when set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/peer_info.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "transport/connect.h"
#include "transport/net_connect.h"
#include "transport/net_devs.h"
#include "transport/net_link.h"
#include "transport/shm_link.h"
#include "transport/transport_ctx.h"

#define TAG_RING_CONNECT 0x10000

size_t chrTransportStepSize(int p2p) {
  int64_t buff = chrParamInt(p2p ? CHR_P_P2P_BUFFSIZE : CHR_P_BUFFSIZE);
  if (buff < CHR_STEPS * 4096) buff = CHR_STEPS * 4096;
  size_t step = (size_t)buff / CHR_STEPS;
  return step & ~(size_t)4095; /* whole pages */
}

ncclResult_t chrTransportPick(const struct chrTransportCtx* ctx, int peer, const struct chrTransportOps** ops) {
  const char* mode = chrParamStr(CHR_P_TRANSPORT);
  int sameHost = ctx->nodeOfRank != NULL && ctx->nodeOfRank[peer] == ctx->nodeOfRank[ctx->rank];
  if (mode[0] == '\0' || strcmp(mode, "auto") == 0) {
    *ops = sameHost && chrParamInt(CHR_P_SHM_DISABLE) == 0 ? &chrShmTransportOps : &chrNetTransportOps;
  } else if (strcmp(mode, "net") == 0) {
    *ops = &chrNetTransportOps;
  } else if (strcmp(mode, "shm") == 0) {
    if (chrParamInt(CHR_P_SHM_DISABLE) != 0)
      return chrFail(ncclInvalidUsage, "CHORUS_TRANSPORT=shm contradicts NCCL_SHM_DISABLE=1");
    if (!sameHost)
      return chrFail(ncclInvalidUsage, "CHORUS_TRANSPORT=shm, but rank %d (host %s) and rank %d (host %s) are on different hosts",
                     ctx->rank, ctx->peers[ctx->rank].hostId, peer, ctx->peers[peer].hostId);
    *ops = &chrShmTransportOps;
  } else {
    return chrFail(ncclInvalidArgument, "CHORUS_TRANSPORT=%s: expected auto, net or shm", mode);
  }
  return ncclSuccess;
}

ncclResult_t chrTransportNeedsNet(const struct chrTransportCtx* ctx, int* needNet) {
  *needNet = 0;
  for (int peer = 0; peer < ctx->nRanks && !*needNet; peer++) {
    if (peer == ctx->rank) continue;
    const struct chrTransportOps* ops = NULL;
    CHECK(chrTransportPick(ctx, peer, &ops));
    *needNet = ops == &chrNetTransportOps;
  }
  return ncclSuccess;
}

/* Ring channels are below CHR_MAX_CHANNELS; point-to-point connections above (net_devs.h). */
static int netDevFor(const struct chrTransportCtx* ctx, int channel, int sendRank, int recvRank) {
  return chrNetDevFor(chrNetDevsOfLink(ctx, sendRank, recvRank), channel, channel >= CHR_MAX_CHANNELS, sendRank,
                      recvRank);
}

ncclResult_t chrNetConnectLinks(const struct chrTransportCtx* ctx, int channel, const struct chrLinkEnd* ends, int n,
                                size_t stepSize, struct chrLink** out) {
  if (n <= 0) return ncclSuccess;
  struct chrNetEndReq few[2];
  struct chrNetEndReq* reqs = n <= 2 ? few : calloc((size_t)n, sizeof(*reqs));
  if (reqs == NULL) return chrFail(ncclSystemError, "out of memory connecting %d links on channel %d", n, channel);
  for (int i = 0; i < n; i++) {
    const int send = ends[i].isSend;
    reqs[i] = (struct chrNetEndReq){.peer = ends[i].peer, .isSend = send, .tag = TAG_RING_CONNECT + channel,
                                    .dev = send ? netDevFor(ctx, channel, ctx->rank, ends[i].peer)
                                                : netDevFor(ctx, channel, ends[i].peer, ctx->rank)};
    out[i] = NULL;
  }
  char what[48];
  snprintf(what, sizeof(what), "connecting channel %d", channel);
  ncclResult_t res = chrNetConnectAll(ctx, reqs, n, what);
  for (int i = 0; i < n && res == ncclSuccess; i++) {
    res = chrNetLinkCreate(ctx, channel, reqs[i].peer, reqs[i].isSend, reqs[i].dev, reqs[i].comm, stepSize, NULL,
                           NCCL_PTR_HOST, &out[i]);
    reqs[i].comm = NULL; /* the link owns the plugin comm now, or closed it */
  }
  if (res != ncclSuccess) { /* chrNetConnectAll closed its comms itself when it failed */
    for (int i = 0; i < n; i++) {
      if (reqs[i].comm != NULL) {
        if (reqs[i].isSend) chrNetCloseSend(ctx->net, reqs[i].comm);
        else chrNetCloseRecv(ctx->net, reqs[i].comm);
      }
      if (out[i] != NULL) out[i]->ops->close(out[i]);
      out[i] = NULL;
    }
  }
  if (reqs != few) free(reqs);
  return res;
}

/* A send link to sendPeer and a recv link from recvPeer (either may be -1 with a NULL out pointer). */
static ncclResult_t netConnectPair(const struct chrTransportCtx* ctx, int channel, int sendPeer, int recvPeer,
                                   size_t stepSize, struct chrLink** send, struct chrLink** recv) {
  struct chrLinkEnd ends[2];
  struct chrLink* links[2] = {NULL, NULL};
  int n = 0;
  if (sendPeer >= 0) ends[n++] = (struct chrLinkEnd){.peer = sendPeer, .isSend = 1};
  if (recvPeer >= 0) ends[n++] = (struct chrLinkEnd){.peer = recvPeer, .isSend = 0};
  CHECK(chrNetConnectLinks(ctx, channel, ends, n, stepSize, links));
  for (int i = 0; i < n; i++) {
    if (ends[i].isSend && send) *send = links[i];
    if (!ends[i].isSend && recv) *recv = links[i];
  }
  return ncclSuccess;
}

ncclResult_t chrTransportConnectPeers(const struct chrTransportCtx* ctx, int channel, int sendPeer, int recvPeer,
                                      size_t step, struct chrLink** sendOut, struct chrLink** recvOut) {
  const struct chrTransportOps* sendOps = NULL;
  const struct chrTransportOps* recvOps = NULL;
  struct chrLink* send = NULL;
  struct chrLink* recv = NULL;
  ncclResult_t res = ncclSuccess;
  if (sendPeer >= 0) CHECK(chrTransportPick(ctx, sendPeer, &sendOps));
  if (recvPeer >= 0) CHECK(chrTransportPick(ctx, recvPeer, &recvOps));
  int sendShm = sendOps == &chrShmTransportOps, recvShm = recvOps == &chrShmTransportOps;
  int sendNet = sendOps == &chrNetTransportOps, recvNet = recvOps == &chrNetTransportOps;

  /* Both ends of a pair pick the same transport, and every rank connects shm before net, so the
   * bootstrap exchanges of the two phases pair up. */
  if (sendShm || recvShm)
    CHECK(chrShmConnectPair(ctx, channel, sendShm ? sendPeer : -1, recvShm ? recvPeer : -1, step,
                            sendShm ? &send : NULL, recvShm ? &recv : NULL));
  if (sendNet || recvNet)
    CHECK_GOTO(netConnectPair(ctx, channel, sendNet ? sendPeer : -1, recvNet ? recvPeer : -1, step,
                              sendNet ? &send : NULL, recvNet ? &recv : NULL), res, fail_close_shm);
  if (sendOut) *sendOut = send;
  if (recvOut) *recvOut = recv;
  INFO(NCCL_INIT | (sendShm || recvShm ? NCCL_SHM : 0) | (sendNet || recvNet ? NCCL_NET : 0),
       "channel %02d: rank %d -> %d via %s -> %d via %s, %d x %zu B slots", channel, recvPeer, ctx->rank,
       recvOps ? recvOps->name : "-", sendPeer, sendOps ? sendOps->name : "-", CHR_STEPS, step);
  return ncclSuccess;

fail_close_shm:
  if (send) send->ops->close(send);
  if (recv) recv->ops->close(recv);
  return res;
}
