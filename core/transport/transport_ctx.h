/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport_ctx.h: what the transports see of their communicator.
 *
 * The links (shm_link.c, net_link.c), their connection (connect.c, net_connect.c), the choice of a
 * link's net device (net_devs.c) and the GPU path's proxy (dev_net.c) take this context in place of
 * struct ncclComm: the rank and rank count, the peers' info, the bootstrap that carries their
 * handles, the net plugin with this rank's devices, and the abort flag. They sit below the
 * communicator's object (struct ncclComm) and never include its header.
 *
 * The communicator holds one by value (comm->transport), which its init fills (comm/init.c) as the
 * parts are made: the bootstrap and the peers, the hosts, the net plugin; none of these changes
 * afterwards. What does change over the comm's life (the abort flag, the devices the topology
 * reorders, the device generation) is read through pointers into the comm, so the context never
 * holds a stale copy. A test may fill one by hand with just what the calls it makes read.
 */
#ifndef CHORUS_TRANSPORT_CTX_H_
#define CHORUS_TRANSPORT_CTX_H_

#include <stdint.h>

/* Ring channels of a communicator at most. A link's channel number at or above it belongs to a
 * point-to-point connection (exec/links.h, CHR_P2P_CHANNEL), whose net device also depends on the
 * two ranks (net_devs.h). */
#define CHR_MAX_CHANNELS 32

struct chrBootstrap;  /* bootstrap/bootstrap.h */
struct chrPeerInfo;   /* bootstrap/peer_info.h */
struct chrNet;        /* plugin/net_plugin.h */
struct chrNetDevs;    /* plugin/net_dev_list.h */
struct chrNetRails;

struct chrTransportCtx {
  const void* owner;                  /* the communicator, only to name it in messages ("comm %p") */
  int rank, nRanks;
  struct chrBootstrap* bootstrap;     /* the handles, segment names and acknowledgements of connecting */
  const struct chrPeerInfo* peers;    /* nRanks: a peer's host id (messages), its GPU's bus id (its rail) */
  const int* nodeOfRank;              /* host index per rank (a peer on this host: shm); NULL: unknown */
  struct chrNet* net;                 /* the net plugin; NULL while no link of this rank needs one */
  const struct chrNetDevs* netDevs;   /* the plugin devices this rank's links use */
  const struct chrNetRails* netRails; /* NCCL_CROSS_NIC=0: the devices to send through, by the peer's GPU */
  const volatile uint32_t* abortFlag; /* nonzero once the comm is aborted: waits give up (never NULL) */
  const uint32_t* devGeneration;      /* the comm's device states made so far: the GPU proxy's handle tags */
};

#endif /* CHORUS_TRANSPORT_CTX_H_ */
