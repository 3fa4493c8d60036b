/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_net.h: the GPU path's connections to ranks on other hosts: the net proxy.
 *
 * A kernel cannot reach a GPU on another host, so each such connection end lives in host-mapped
 * memory of its own rank (device/launch/net_ends.cu) and the rank's proxy threads stand in for the far
 * end (CHORUS_GPU_NET_PROXY_THREADS, by default one per NIC the rank uses and at least 2: ring channel
 * c's ends go to thread c mod threads, a lane's by lane and peer, so the channels' and peers'
 * transfers, and the net plugin's work on them, run side by side, a thread per NIC), through links of
 * the net plugin (transport/net_link.c) whose slots are those same ends:
 *   send end:    the kernel fills slot s, writes its size, then tail = s + 1; the proxy posts the
 *                slot to the plugin (isend) and, once the plugin is done with it, sets head = s + 1,
 *                which gives the kernel the slot back;
 *   receive end: the proxy keeps a receive posted in every slot the kernel has freed (up to head +
 *                8) for the steps the kernel's current work will take (need, which the kernel
 *                writes at the start of each work: never receives posted ahead for steps that may
 *                not come, so a peer that destroys its comm after its last step is no error);
 *                when one completes it writes the size received, then tail = s + 1; the kernel
 *                checks the size against its own step and reads the slot.
 * Slots in GPU memory (GPUDirect RDMA) are the plugin's to read and write; a receive is published
 * once the plugin's flush of it is done. Where the plugin refuses GPU memory, that end's link has
 * host slots and the proxy copies each step between them and the GPU slots (chrDevNetCopier).
 * The proxy knows nothing of plans: it follows the words, so CUDA graph replays need nothing from
 * the host. It runs while the rank's state exists; idle, it backs off to sleeping (a launch wakes
 * it sooner, chrDevNetKick). A plugin error (the peer is gone, the link cut, while a step is under
 * way) marks the state failed and calls the owner's onFail, which aborts the rank's kernels.
 *
 * Connecting is lazy and per peer (the first plan that names one) and cannot deadlock however the
 * ranks' plans name their peers: first every new receive end listens and sends its handle to its
 * peer over the bootstrap (which never waits), then every send end receives its peer's handle,
 * then all connects and accepts are driven together.
 */
#ifndef CHORUS_TRANSPORT_DEV_NET_H_
#define CHORUS_TRANSPORT_DEV_NET_H_

#include "hostdev/dev_api.h" /* struct chrDevNetEnd */
#include "nccl.h"

struct chrTransportCtx; /* transport/transport_ctx.h */
struct chrDevNet;

/* Proxy threads per rank at most (CHORUS_GPU_NET_PROXY_THREADS). */
#define CHR_DEV_NET_MAX_THREADS 16

/* Bootstrap tags of the handles: + (generation & 0xff) << 8 + the end's key. */
#define CHR_DEV_NET_TAG 0x70000

/* How the proxy moves a step between an end's GPU slots and host slots, for an end whose plugin
 * refused to register its GPU memory (the link stages through host memory then: net_link.h).
 * copy(arg, thread, dst, src, bytes) returns once the bytes are there; thread is the proxy thread's
 * index (below CHR_DEV_NET_MAX_THREADS), so each thread may keep its own stream. destroy(arg), when
 * set, runs once the proxy threads are stopped. */
struct chrDevNetCopier {
  ncclResult_t (*copy)(void* arg, int thread, void* dst, const void* src, size_t bytes);
  void (*destroy)(void* arg);
  void* arg;
};

/* Makes the (idle) proxy state of a rank, which keeps ctx (its comm's: it outlives the proxy).
 * onFail(arg) runs once, on the proxy thread, when the rank's connections fail. copier (copied; NULL: GPU slots a plugin refuses fail the connection) is the
 * proxy's from now on, destroyed with it, or here on failure. */
ncclResult_t chrDevNetCreate(const struct chrTransportCtx* ctx, void (*onFail)(void* arg), void* arg,
                             const struct chrDevNetCopier* copier, struct chrDevNet** out);

/* Connects ends[i][0 .. nEnds[i]) to peers[i] (each peer's ends as chrDevRankNetConnect listed them,
 * the peer doing the same for this rank) and hands them to the proxy, which starts with the first.
 * Keys below ringKeys are ring channels, the others point-to-point lanes (spread over the NICs and
 * proxy threads by peer).
 * Blocks until every link is up (abort-aware; a dead peer fails at once, CHORUS_TIMEOUT bounds a
 * slow one). On failure no link of the call is left. */
ncclResult_t chrDevNetAdd(struct chrDevNet* net, int ringKeys, int nPeers, const int* peers,
                          struct chrDevNetEnd* const* ends, const int* nEnds);

/* A launch that may use the ends was queued: the proxy polls at once rather than after its nap. */
void chrDevNetKick(struct chrDevNet* net);

/* 1 once a link failed. */
int chrDevNetFailed(const struct chrDevNet* net);

/* Waits until the proxy has carried every step the kernels published on the send ends: a kernel ends
 * with up to 8 steps per end still in this host's memory, which only the proxy can deliver, so a
 * finalize or destroy that stopped it then would lose the peer's data (NCCL's finalize flushes its
 * proxy too). Fails when a link fails, the comm is aborted, or CHORUS_TIMEOUT passes. NULL is fine. */
ncclResult_t chrDevNetDrain(struct chrDevNet* net, const char* func);

/* Stops the proxy and closes every link (the ends' memory stays with the device library). No kernel
 * may still use the ends. NULL is fine. */
void chrDevNetDestroy(struct chrDevNet* net);

#endif /* CHORUS_TRANSPORT_DEV_NET_H_ */
