/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_dev_list.h: the net plugin's devices a rank's links use, by plugin device index, and whether
 * each can reach the rank's GPU directly.
 *
 * Plain data, here below the communicator so that struct ncclComm (commstate/comm.h) holds the list
 * without including the transports; transport/net_devs.h chooses the devices and picks one per link.
 */
#ifndef CHORUS_PLUGIN_NET_DEV_LIST_H_
#define CHORUS_PLUGIN_NET_DEV_LIST_H_

#include <stdint.h>

#define CHR_NET_MAX_DEVS 32

struct chrNetDevs {
  int dev[CHR_NET_MAX_DEVS]; /* plugin device indices */
  int n;                     /* 0 until chosen: device 0 */
  /* GPUDirect RDMA between this rank's GPU and dev[i], by the topology (topo/topo_nic.h,
   * chrTopoCheckGdr): CHR_NET_GDR_WRITE the NIC may write GPU memory (receives), CHR_NET_GDR_READ it
   * may read it (sends). 0 without a GPU or a topology. */
  unsigned char gdr[CHR_NET_MAX_DEVS];
};
#define CHR_NET_GDR_WRITE 1
#define CHR_NET_GDR_READ 2
#define CHR_NET_GDR_NOFLUSH 4 /* with WRITE: the GPU orders the NIC's writes itself, no flush (chrTopoNeedFlush) */

/* NCCL_CROSS_NIC=0: per GPU of this host (by PCI address), the devices the topology gives that GPU,
 * with the GPUDirect bits of this rank's GPU toward them. A link to a peer on another host sends
 * through the list of the GPU at the peer GPU's address (the same slot on identical hosts), so
 * both of its ends use the same rail. n = 0: not asked, or no topology. */
#define CHR_NET_MAX_RAILS 16
struct chrNetRails {
  int n;
  int64_t busId[CHR_NET_MAX_RAILS]; /* the bus id form of chrCudaDeviceBusId */
  struct chrNetDevs devs[CHR_NET_MAX_RAILS];
};

#endif /* CHORUS_PLUGIN_NET_DEV_LIST_H_ */
