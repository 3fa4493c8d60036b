/* SPDX-License-Identifier: BSD-3-Clause */
/* net_link.h: state of a link through the net plugin (transport/net_link.c). */
#ifndef CHORUS_NET_LINK_H_
#define CHORUS_NET_LINK_H_

#include "transport/transport.h"

struct chrNet;
struct chrTransportCtx; /* transport/transport_ctx.h */

struct chrNetLink {
  struct chrNet* net;
  void* comm;    /* plugin send or recv comm */
  void* mhandle; /* registration of `buffer` */
  char* buffer;  /* CHR_STEPS slots */
  int memType;   /* NCCL_PTR_HOST, or NCCL_PTR_CUDA: buffer is GPU memory (never touched here) */
  int ownsBuffer; /* 0: the caller's memory (not freed here) */
  int tag;       /* our rank: NCCL passes the sender's rank as the tag */
  void* req[CHR_STEPS];
  size_t bytes[CHR_STEPS];
  void* user[CHR_STEPS];   /* a direct step's user memory in place of the slot (NULL: the slot) */
  void* userMh[CHR_STEPS]; /* and its registration */
  int pending[CHR_STEPS]; /* the plugin returned a NULL request: post again from test */
  char stagedWhy[256];    /* the plugin refused the caller's GPU slots: why ("" when not) */
};

/* Wrap a connected plugin comm (made on plugin device `dev`) into a link with registered slots:
 * `slots` (CHR_STEPS * stepSize bytes, page-aligned, kept by the caller until the link is closed, of
 * memory type memType: NCCL_PTR_HOST, or NCCL_PTR_CUDA for GPU memory) or, when NULL, its own (host).
 * GPU slots the plugin refuses to register: the link takes host slots of its own instead, which the
 * caller must copy to and from (chrNetLinkStagedWhy). On failure netComm is closed. */
ncclResult_t chrNetLinkCreate(const struct chrTransportCtx* ctx, int channel, int peer, int isSend, int dev,
                              void* netComm, size_t stepSize, char* slots, int memType, struct chrLink** out);

/* NULL, or why the link stages through host slots of its own (link->slots) in place of the caller's
 * GPU slots: the plugin's refusal, with the plugin device named. */
const char* chrNetLinkStagedWhy(const struct chrLink* link);

/* After a receive of `bytes` into `slot` of a GPU-memory link completed: starts the plugin's flush
 * (iflush), which makes the data the NIC wrote visible to the GPU before the kernel reads it.
 * *request NULL: nothing to wait for (host memory, or a plugin without iflush); else test it with
 * chrNetLinkFlushTest until done. */
ncclResult_t chrNetLinkFlush(struct chrLink* link, int slot, size_t bytes, void** request);
ncclResult_t chrNetLinkFlushTest(struct chrLink* link, void* request, int* done);

#endif
