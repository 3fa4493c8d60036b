/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connect.h: connecting links, one send link and one recv link at a time, or a batch of net links
 * at once (transport/connect.c). exec/links.c uses these per ring channel, per point-to-point pair
 * and per batch of point-to-point rounds; callers connecting other patterns can use them too. The shm variant is chrShmConnectPair (transport/shm_link.h).
 */
#ifndef CHORUS_CONNECT_H_
#define CHORUS_CONNECT_H_

#include "transport/transport.h"

struct chrTransportCtx; /* transport/transport_ctx.h */

/* Which transport a link between this rank and `peer` uses: &chrShmTransportOps for a peer on the same
 * host (unless NCCL_SHM_DISABLE=1 or CHORUS_TRANSPORT=net), else &chrNetTransportOps. Fails on a bad
 * CHORUS_TRANSPORT value and on CHORUS_TRANSPORT=shm for a peer on another host. Every rank decides
 * the same way for the same pair (from nodeOfRank and the parameters, which must agree). */
ncclResult_t chrTransportPick(const struct chrTransportCtx* ctx, int peer, const struct chrTransportOps** ops);

/* Whether any link of this rank would use the net transport (chrTransportPick over every peer):
 * the net plugin is needed only then. Fails as chrTransportPick does on a bad setting. */
ncclResult_t chrTransportNeedsNet(const struct chrTransportCtx* ctx, int* needNet);

/* One link end to connect: a send link to `peer`, or a receive link from it. */
struct chrLinkEnd {
  int peer;
  int isSend;
};

/* Connect through the net plugin the n links ends[] on `channel`, all at once (transport/net_connect.c:
 * every handle sent before anything waits), out[i] the link of ends[i]. Collective with every peer
 * named, each naming its matching end in the same call. On failure nothing is left (out all NULL). */
ncclResult_t chrNetConnectLinks(const struct chrTransportCtx* ctx, int channel, const struct chrLinkEnd* ends, int n,
                                size_t stepSize, struct chrLink** out);

/* Connect a send link to sendPeer and a recv link from recvPeer (either may be -1) on `channel`,
 * each through the transport chrTransportPick chooses. Collective with those two peers. */
ncclResult_t chrTransportConnectPeers(const struct chrTransportCtx* ctx, int channel, int sendPeer, int recvPeer,
                                      size_t stepSize, struct chrLink** send, struct chrLink** recv);

/* Bytes per slot (whole pages, at least one page per slot): of a ring link, from NCCL_BUFFSIZE; of a
 * point-to-point link (p2p = 1), from CHORUS_P2P_BUFFSIZE. A rank may hold a point-to-point link to
 * every peer, so those are smaller, as NCCL's p2p chunks are. */
size_t chrTransportStepSize(int p2p);

#endif
