/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_devs.h: which of the net plugin's devices (NICs) a link uses.
 *
 * At init a rank lists the plugin's devices it may use (NCCL_NETDEVS_POLICY: AUTO and ALL take every
 * device the plugin offers, which its own settings such as NCCL_SOCKET_IFNAME or NCCL_IB_HCA have
 * already filtered; MAX:N the first N). A link then uses one of them by its channel, computed the same
 * way at both ends and on every host: ring channel c uses device c mod n, so each channel's hops
 * between hosts stay on one rail (the same device index everywhere), and a point-to-point link
 * between ranks s and r on channel id k uses device (k + s + r) mod n, which spreads a rank's peers
 * over the devices. GPU links through the proxy use their key (the ring channel, or the channel
 * count plus the point-to-point index) as a ring channel. Hosts are expected to list their devices in the same order, as NCCL expects of
 * rail-optimised fabrics.
 */
#ifndef CHORUS_NET_DEVS_H_
#define CHORUS_NET_DEVS_H_

#include "nccl.h"

struct chrNet;

#define CHR_NET_MAX_DEVS 32

struct chrNetDevs {
  int dev[CHR_NET_MAX_DEVS]; /* plugin device indices */
  int n;                     /* 0 until chosen: device 0 */
};

/* The devices rank `rank` uses of the open plugin `net`, by NCCL_NETDEVS_POLICY (logged at INFO). */
ncclResult_t chrNetDevsChoose(struct chrNet* net, int rank, struct chrNetDevs* out);

/* The plugin device of the link on `channel` from sendRank to recvRank; p2p: a point-to-point
 * connection, else a ring channel. */
int chrNetDevFor(const struct chrNetDevs* devs, int channel, int p2p, int sendRank, int recvRank);

#endif /* CHORUS_NET_DEVS_H_ */
