/* SPDX-License-Identifier: BSD-3-Clause */
/* net_link.h: state of a link through the net plugin (transport/net_link.c). */
#ifndef CHORUS_NET_LINK_H_
#define CHORUS_NET_LINK_H_

#include "transport/transport.h"

struct chrNet;

struct chrNetLink {
  struct chrNet* net;
  void* comm;    /* plugin send or recv comm */
  void* mhandle; /* registration of `buffer` */
  char* buffer;  /* CHR_STEPS slots */
  int ownsBuffer; /* 0: the caller's memory (not freed here) */
  int tag;       /* our rank: NCCL passes the sender's rank as the tag */
  void* req[CHR_STEPS];
  size_t bytes[CHR_STEPS];
  void* user[CHR_STEPS];   /* a direct step's user memory in place of the slot (NULL: the slot) */
  void* userMh[CHR_STEPS]; /* and its registration */
  int pending[CHR_STEPS]; /* the plugin returned a NULL request: post again from test */
};

/* Wrap a connected plugin comm (made on plugin device `dev`) into a link with registered slots:
 * `slots` (CHR_STEPS * stepSize bytes, page-aligned, kept by the caller until the link is closed)
 * or, when NULL, its own. On failure netComm is closed. */
ncclResult_t chrNetLinkCreate(struct ncclComm* comm, int channel, int peer, int isSend, int dev, void* netComm,
                              size_t stepSize, char* slots, struct chrLink** out);

#endif
