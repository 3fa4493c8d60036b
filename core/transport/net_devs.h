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
 * count plus the point-to-point index) as a ring channel.
 *
 * A rank with a GPU then orders its list by the topology (chrNetDevsFromTopo): entry c is the NIC
 * NCCL gives the GPU for channel c, and the list is as long as the NICs the GPU cycles over, so ring
 * channel c leaves each host on its GPU's nearest NIC. Without a GPU, or when the topology does not
 * say, the list stays in plugin order, and hosts are expected to list their devices in the same
 * order, as NCCL expects of rail-optimised fabrics.
 */
#ifndef CHORUS_NET_DEVS_H_
#define CHORUS_NET_DEVS_H_

#include <stdint.h>
#include "nccl.h"
#include "plugin/net_dev_list.h" /* struct chrNetDevs */

struct chrNet;
struct chrTopoSystem;

/* The devices rank `rank` uses of the open plugin `net`, by NCCL_NETDEVS_POLICY (logged at INFO). */
ncclResult_t chrNetDevsChoose(struct chrNet* net, int rank, struct chrNetDevs* out);

/* Orders the devices of the GPU whose bus id is `gpuBusId` (the int64 form of chrCudaDeviceBusId)
 * by topology `sys`: out->dev[c] = the plugin device of chrTopoNetForChannel(sys, gpu, c) for c below
 * the number of NICs the GPU cycles over (its netsPerGpu, by the model's NCCL_NETDEVS_POLICY). Logs
 * the bus id and the NIC per channel at INFO and returns 1; or leaves *out unchanged, says why in one
 * INFO line and returns 0: no GPU with that bus id, no NET reached, a NET whose dev is not one of the
 * plugin's `nPluginDevs` devices. */
int chrNetDevsFromTopo(const struct chrTopoSystem* sys, int64_t gpuBusId, int nPluginDevs, struct chrNetDevs* out);

/* NCCL_CROSS_NIC=0: for every GPU of `sys`, its devices per channel as chrNetDevsFromTopo orders
 * them, with the GPUDirect bits of this rank's GPU (bus id gpuBusId) toward them (one INFO line
 * each). Returns the GPUs listed; 0 when this rank's GPU is not in the topology. */
int chrNetRailsFromTopo(const struct chrTopoSystem* sys, int64_t gpuBusId, int nPluginDevs, struct chrNetRails* out);

/* The devices a link to a peer whose GPU has bus id peerBusId sends through: the rails' list for
 * that address, or `own` when there is none. */
const struct chrNetDevs* chrNetDevsToward(const struct chrNetDevs* own, const struct chrNetRails* rails,
                                          int64_t peerBusId);

/* The devices the link from sendRank to recvRank picks from: the devices of ctx's rank, or, when it
 * sends under NCCL_CROSS_NIC=0, the receiver's rail (chrNetDevsToward). */
struct chrTransportCtx; /* transport/transport_ctx.h */
const struct chrNetDevs* chrNetDevsOfLink(const struct chrTransportCtx* ctx, int sendRank, int recvRank);

/* The plugin device of the link on `channel` from sendRank to recvRank; p2p: a point-to-point
 * connection, else a ring channel. */
int chrNetDevFor(const struct chrNetDevs* devs, int channel, int p2p, int sendRank, int recvRank);
/* The GPUDirect bits (CHR_NET_GDR_*) of plugin device `dev`; 0 when it is not in the list. */
unsigned chrNetDevGdr(const struct chrNetDevs* devs, int dev);

#endif /* CHORUS_NET_DEVS_H_ */
