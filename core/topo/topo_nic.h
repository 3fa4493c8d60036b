/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_nic.h: which NIC each GPU uses for a channel, and whether GPUDirect RDMA may be used between a
 * GPU and a NET, by NCCL's rules.
 *
 * NIC for channel c: the GPU's local NETs are those of the best (bandwidth, then type) path; the GPUs
 * local to the first of them share them, each taking netsPerGpu of them (NCCL_NETDEVS_POLICY: AUTO =
 * ceil(nets / gpus), ALL, MAX:N); the GPU starts at (its dev mod the local GPUs), bit-mirrored when
 * the NET count is a power of two, and moves on by c mod netsPerGpu.
 * GPUDirect: both the NET and the GPU must allow it (gdr="1"); reading GPU memory (send side) needs
 * NCCL_NET_GDR_READ (default: yes from sm 80, else only with an NVLink peer or a single GPU); and the
 * path (for PXN: the peer GPU's path) must be no worse than NCCL_NET_GDR_LEVEL (default P2C, or PXB
 * with NCCL_NET_GDR_C2C=0; names LOC..SYS or the old numbers 0-4 = LOC, PIX, PXB, PHB, SYS).
 */
#ifndef CHORUS_TOPO_NIC_H_
#define CHORUS_TOPO_NIC_H_

#include "topo/topo_model.h"

/* The NET node that GPU node `gpu` uses for `channel`; -1 when it reaches none. */
int chrTopoNetForChannel(const struct chrTopoSystem* sys, int gpu, int channel);
/* The GPU node that uses NET node `net` first (NCCL's "local GPU" of a NET); -1 when none. */
int chrTopoLocalGpuOfNet(const struct chrTopoSystem* sys, int net);
/* 1 when GPUDirect RDMA may be used between GPU node `gpu` and NET node `net`: read = 1 for the send
 * side (the NIC reads GPU memory), 0 for the receive side (the NIC writes it). */
int chrTopoCheckGdr(const struct chrTopoSystem* sys, int gpu, int net, int read);
/* 1 when a receive that NET node `net` wrote into GPU node `gpu`'s memory must be flushed (the
 * plugin's iflush) before the GPU reads it, as NCCL decides: NCCL_NET_FORCE_FLUSH, a GPU below sm 90,
 * or a GPU whose CPU link is C2C with the NIC PXB or nearer. The plugin's forceFlush is the caller's. */
int chrTopoNeedFlush(const struct chrTopoSystem* sys, int gpu, int net);

/* Setting syntax (ncclInvalidUsage with what is accepted when the text is not valid). */
ncclResult_t chrTopoParseGdrLevel(const char* text, int* level);              /* "" -> -1 */
ncclResult_t chrTopoParseNetDevsPolicy(const char* text, int* policy, int* max); /* "" -> AUTO */

#endif /* CHORUS_TOPO_NIC_H_ */
