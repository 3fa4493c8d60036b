/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_internal.h: wire formats and state shared by the bootstrap's files.
 *   bootstrap_id.c    the unique id, picking the bootstrap interface
 *   bootstrap_root.c  the root: collects hellos, hands out the table
 *   bootstrap_init.c  a rank's side of the rendezvous
 *   bootstrap_p2p.c   point-to-point messages between ranks
 *   bootstrap_coll.c  allgather and barrier on top of p2p
 *
 * Every struct here goes on the wire as is (same byte order on all ranks; padding zeroed).
 * Every field read from the network is validated before use.
 */
#ifndef CHORUS_BOOTSTRAP_INTERNAL_H_
#define CHORUS_BOOTSTRAP_INTERNAL_H_

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include "bootstrap/bootstrap.h"
#include "socket/socket.h"

/* ---- the unique id (inside ncclUniqueId.internal) ---- */
#define CHR_BS_ID_MAGIC 0x43485242u /* "CHRB" */
#define CHR_BS_ID_VERSION 1
#define CHR_BS_ID_FLAG_COMM_ID 0x1 /* made from NCCL_COMM_ID: rank 0 starts the root */

struct chrBsId {
  uint32_t magic;
  uint16_t version;
  uint16_t flags;
  uint64_t secret;
  chrSockAddr root;
};

/* ---- rank -> root: hello, followed by infoSize bytes of info ---- */
#define CHR_BS_HELLO_MAGIC 0x43484c4fu /* "CHLO" */
#define CHR_BS_WIRE_VERSION 1

struct chrBsHello {
  uint32_t magic;
  uint32_t version;
  uint64_t secret;
  int32_t rank;
  int32_t nranks;
  uint32_t infoSize;
  uint32_t reserved;
  chrSockAddr listenAddr;
};

/* ---- root -> rank: reply header, followed by payloadSize bytes ---- */
#define CHR_BS_REPLY_MAGIC 0x43525059u /* "CRPY" */
enum {
  CHR_BS_REPLY_TABLE = 1,  /* payload: nranks chrSockAddr, then nranks * infoSize bytes of info */
  CHR_BS_REPLY_REJECT = 2, /* payload: reason text (no NUL); this rank's hello was refused */
  CHR_BS_REPLY_ABORT = 3   /* payload: reason text; init failed for everyone; `result` says how */
};
#define CHR_BS_MAX_TEXT 1024

struct chrBsReply {
  uint32_t magic;
  uint32_t type;
  int32_t nranks;
  uint32_t infoSize;
  int32_t result; /* ncclResult_t for REJECT/ABORT */
  uint32_t reserved;
  uint64_t payloadSize;
};

/* ---- rank -> rank: p2p message header, followed by size bytes ---- */
#define CHR_BS_MSG_MAGIC 0x434d5347u /* "CMSG" */

struct chrBsMsgHdr {
  uint32_t magic;
  int32_t src;
  uint64_t secret;
  int32_t tag;
  uint32_t reserved;
  uint64_t size;
};

/* Reserved tags (user tags are >= 0). */
#define CHR_BS_TAG_ALLGATHER (-1)
#define CHR_BS_TAG_BARRIER_BASE (-100) /* round k uses BASE - k */

/* ---- root ---- */

/* Start a root listening on `addr` (port 0: ephemeral) in a detached thread. *bound gets the address
 * to put in the id. timeoutSec: how long the root waits for the last rank after the first hello.
 * A bind that fails with EADDRINUSE is retried until bindDeadlineNs (0: no retry). */
ncclResult_t chrBsRootStart(const chrSockAddr* addr, uint64_t secret, int64_t timeoutSec, int64_t bindDeadlineNs,
                            chrSockAddr* bound);

/* ---- id ---- */
ncclResult_t chrBsIdDecode(const ncclUniqueId* id, struct chrBsId* out);
/* The address this rank listens on for p2p, given the root's address. */
ncclResult_t chrBsPickListenAddr(const chrSockAddr* root, chrSockAddr* out);
/* Hand chrLog to the socket utilities (idempotent). */
void chrBsUseCoreLogger(void);
/* The secret a rank presents and a root expects for an id's secret: the id's own, keyed by
 * CHORUS_COMM_SECRET when that is set (so the id alone, or an NCCL_COMM_ID address, no longer
 * admits a process that does not know it). */
uint64_t chrBsJoinSecret(uint64_t idSecret);
/* Constant-time equality of two secrets. */
int chrBsSecretEqual(uint64_t a, uint64_t b);

/* ---- p2p state ---- */

/* A message that arrived for a (peer, tag) nobody asked for yet. */
struct chrBsQueued {
  struct chrBsQueued* next;
  int src;
  int tag;
  uint64_t size;
  char* data;
};

/* An incoming connection from a peer (sender side connects; connections are one-way). */
struct chrBsInConn {
  int fd;
  int src; /* -1 until the first header names it */
  int64_t acceptedNs; /* at the connection limit, the oldest one that never named a rank goes */
  struct chrBsMsgHdr hdr;
  size_t hdrOff;
  char* data;
  size_t dataOff;
};

struct chrBootstrap {
  int rank;
  int nranks;
  uint64_t secret;
  volatile uint32_t* abortFlag;
  int64_t timeoutSec; /* CHORUS_TIMEOUT */
  int listenFd;
  chrSockAddr* peerAddrs; /* nranks listen addresses */

  pthread_mutex_t sendLock; /* guards sendFds */
  int* sendFds;             /* per peer, -1 until first send */

  int locksReady; /* the two mutexes are initialized */

  pthread_mutex_t recvLock; /* guards everything below */
  struct chrBsInConn* in;
  int nIn, inCap;
  struct pollfd* pfds; /* scratch for polling listenFd + in[] (+ one send fd) */
  int pfdCap;
  struct chrBsQueued* queueHead;
  struct chrBsQueued* queueTail;
  char* peerClosed; /* per peer: its connection to us reached EOF */
};

/* p2p internals used by init and close. */
ncclResult_t chrBsP2pSetup(struct chrBootstrap* bs);
void chrBsP2pFree(struct chrBootstrap* bs);

#endif /* CHORUS_BOOTSTRAP_INTERNAL_H_ */
