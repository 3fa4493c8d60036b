/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_logic.h: the parts of the IB net plugin that are plain C, with no verbs call in them, so they are
 * unit-tested on machines without RDMA hardware (tests/test_net_ib_logic.c):
 *   - NCCL_IB_HCA parsing and matching          (hca_filter.c)
 *   - GID choice for RoCE, LIDs for IB          (gid_select.c)
 *   - the listen handle and the connection info exchanged at connect, from untrusted bytes (wire.c)
 *   - the receiver-posted flow-control FIFO     (fifo.c)
 *   - the request pool                          (reqpool.c)
 *   - whether a peer-memory driver is loaded    (peermem.c)
 * Everything here is hidden inside libnccl-net-ib.so.
 */
#ifndef CHORUS_NET_IB_LOGIC_H_
#define CHORUS_NET_IB_LOGIC_H_

#include <stddef.h>
#include <stdint.h>
#include "socket/socket.h"

#define IB_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- NCCL_IB_HCA (hca_filter.c) */

#define IB_HCA_MAX_ENTRIES 32
#define IB_HCA_NAME_MAX 64

/* A parsed NCCL_IB_HCA value. Syntax (NCCL's): an optional leading '^' (the list names devices to
 * leave out), then an optional '=' (names match exactly, not as prefixes; "=^" is read as "^="
 * too), then comma-separated entries "name" or "name:port". An empty or unset value takes every
 * device and port. */
typedef struct {
  int exclude;  /* '^' */
  int exact;    /* '=' */
  int nEntries; /* 0 = no filter */
  struct {
    char name[IB_HCA_NAME_MAX];
    int port; /* -1: any port */
  } entries[IB_HCA_MAX_ENTRIES];
} ibHcaFilter;

/* Returns 0, or -1 with a reason in err (errLen bytes) for a malformed value: an empty name, a port
 * that is not a number in 1..255, a name longer than IB_HCA_NAME_MAX-1, more than IB_HCA_MAX_ENTRIES
 * entries. spec may be NULL (no filter). */
IB_HIDDEN int ibHcaParse(const char* spec, ibHcaFilter* f, char* err, size_t errLen);
/* 1 if device `name`, port `port` is to be used under filter f. */
IB_HIDDEN int ibHcaMatch(const ibHcaFilter* f, const char* name, int port);

/* ---------------------------------------------------------------- GID choice (gid_select.c) */

enum { IB_GID_TYPE_IB = 0, IB_GID_TYPE_ROCE_V1 = 1, IB_GID_TYPE_ROCE_V2 = 2 };

typedef struct {
  int index;          /* index in the port's GID table */
  int type;           /* IB_GID_TYPE_* */
  uint8_t raw[16];    /* the GID */
} ibGidEntry;

/* Which GID a RoCE port uses. requested: NCCL_IB_GID_INDEX (-1 = choose); family: AF_INET,
 * AF_INET6 or AF_UNSPEC (NCCL_IB_ADDR_FAMILY). Choice when not requested: a RoCE v2 GID of the
 * wanted family (IPv4-mapped for AF_INET; a global, not link-local, IPv6 for AF_INET6; either for
 * AF_UNSPEC, IPv4 first), then any non-zero RoCE v2 GID, then any non-zero RoCE v1 GID, then any
 * non-zero GID. A requested index must name a non-zero entry of the table. Returns the chosen
 * entry's position in `entries`, or -1 with a reason in err. */
IB_HIDDEN int ibGidChoose(const ibGidEntry* entries, int n, int requested, int family, char* err, size_t errLen);
IB_HIDDEN int ibGidIsZero(const uint8_t raw[16]);
IB_HIDDEN int ibGidIsV4Mapped(const uint8_t raw[16]);
IB_HIDDEN int ibGidIsLinkLocal(const uint8_t raw[16]);

/* ---------------------------------------------------------------- wire formats (wire.c) */

#define IB_MAX_QPS 16 /* NCCL_IB_QPS_PER_CONNECTION upper bound */
#define IB_HANDLE_MAGIC 0x4348524942484e31ULL /* "CHRIBHN1" */
#define IB_INFO_MAGIC 0x4348524942494e31ULL   /* "CHRIBIN1" */
#define IB_WIRE_VERSION 1
enum { IB_LINK_IB = 1, IB_LINK_ETHERNET = 2 };

/* What listen() writes into the core's handle buffer: where to connect, and a random nonce the
 * connecting side echoes so the listener can tell its own peer from a stray connection. */
typedef struct {
  chrSockAddr addr;
  uint64_t nonce;
} ibHandle;

/* What each side sends the other over the TCP socket after connecting (both directions). */
typedef struct {
  uint64_t nonce;      /* the listen handle's nonce */
  uint32_t nQps;       /* 1..IB_MAX_QPS; both sides must agree */
  uint32_t linkLayer;  /* IB_LINK_* */
  uint32_t lid;        /* IB: the port's LID (16 bits) */
  uint32_t mtu;        /* verbs MTU enum: 1 (256 B) .. 5 (4096 B) */
  uint32_t gidIndex;   /* RoCE: the GID index used (informational) */
  uint8_t gid[16];     /* RoCE: the GID used */
  uint32_t qpn[IB_MAX_QPS]; /* 24-bit QP numbers */
  uint32_t psn[IB_MAX_QPS]; /* 24-bit starting packet sequence numbers */
  uint64_t fifoAddr;   /* sender side only: where the receiver writes FIFO entries */
  uint32_t fifoRkey;
  uint32_t fifoDepth;  /* entries in that FIFO (IB_FIFO_DEPTH) */
} ibConnInfo;

#define IB_HANDLE_BYTES 64   /* encoded handle, <= NCCL_NET_HANDLE_MAXSIZE */
#define IB_INFO_BYTES 200    /* encoded connection info, fixed size */

/* Encoders write exactly IB_HANDLE_BYTES / IB_INFO_BYTES bytes (little-endian, explicit layout). */
IB_HIDDEN void ibHandleEncode(const ibHandle* h, uint8_t out[IB_HANDLE_BYTES]);
IB_HIDDEN void ibInfoEncode(const ibConnInfo* info, uint8_t out[IB_INFO_BYTES]);
/* Decoders check everything (magic, version, family, port, ranges) and return 0, or -1 with a reason
 * in err. `in` is untrusted. */
IB_HIDDEN int ibHandleDecode(const uint8_t in[IB_HANDLE_BYTES], ibHandle* h, char* err, size_t errLen);
IB_HIDDEN int ibInfoDecode(const uint8_t in[IB_INFO_BYTES], ibConnInfo* info, char* err, size_t errLen);

/* ---------------------------------------------------------------- flow-control FIFO (fifo.c) */

/* The receiver owns no buffer space on the sender: for every irecv it RDMA-writes one entry into the
 * sender's FIFO (slot = receive sequence number mod depth) saying where the data may land. A send
 * waits until the entry of its own sequence number is there, checks it, and writes the data with
 * RDMA write-with-immediate into exactly that buffer: data never lands where no receive was posted.
 * `seq` is written last and is the entry's sequence number + 1, so a slot still holding an older
 * round (or zeros) reads as "not yet". */
#define IB_FIFO_DEPTH 32 /* NCCL_NET_MAX_REQUESTS receives in flight per connection */
typedef struct {
  uint64_t addr; /* receive buffer */
  uint64_t size; /* its size */
  uint32_t rkey; /* its remote key */
  int32_t tag;   /* the sender rank the receive expects */
  uint64_t seq;  /* receive sequence number + 1; written last */
} ibFifoEntry;

enum {
  IB_FIFO_READY = 0,     /* entry present and usable */
  IB_FIFO_NOT_YET = 1,   /* the receiver has not posted this receive yet */
  IB_FIFO_TOO_SMALL = -1,/* the posted buffer is smaller than the send */
  IB_FIFO_BAD_TAG = -2,  /* the receive expects another sender */
  IB_FIFO_CORRUPT = -3,  /* a sequence number from the future: the peer is broken or hostile */
};

/* Receiver: the entry for its receive number recvSeq (0, 1, 2...) and the slot it goes to. */
IB_HIDDEN void ibFifoMake(uint64_t recvSeq, uint64_t addr, uint64_t size, uint32_t rkey, int tag, ibFifoEntry* e,
                          int* slot);
/* Sender: look at the slot of send number sendSeq in its own FIFO (written remotely). On READY,
 * *out is a stable copy. */
IB_HIDDEN int ibFifoCheck(const volatile ibFifoEntry* fifo, uint64_t sendSeq, size_t sendSize, int sendTag,
                          ibFifoEntry* out);
/* After a send has taken its entry: clear the slot so a stale copy is never taken twice. */
IB_HIDDEN void ibFifoRelease(volatile ibFifoEntry* fifo, uint64_t sendSeq);

/* ---------------------------------------------------------------- request pool (reqpool.c) */

#define IB_MAX_REQUESTS 32 /* NCCL_NET_MAX_REQUESTS per comm (maxRecvs is 1) */
typedef struct {
  uint32_t used; /* bit i: request i is handed out */
} ibReqPool;
/* Lowest free index, or -1 when all IB_MAX_REQUESTS are in use. */
IB_HIDDEN int ibReqAlloc(ibReqPool* p);
/* Returns 0, or -1 if idx is out of range or not in use (double free). */
IB_HIDDEN int ibReqFree(ibReqPool* p, int idx);
IB_HIDDEN int ibReqInUse(const ibReqPool* p);

/* ---------------------------------------------------------------- peer memory (peermem.c) */

/* Whether a peer-memory driver lets ibv_reg_mr pin GPU memory (GPUDirect RDMA without dma-buf): the
 * files NCCL looks for, the nv_peer_mem module's two entries under /sys/kernel/mm/memory_peers and
 * the nvidia_peermem module's version file. root is prepended to each (NULL or "": the real root),
 * so tests can lay out a fake tree. Returns 1 and the path found in which (whichLen bytes, may be
 * NULL), or 0 when none exists (a path longer than PATH_MAX counts as absent). */
IB_HIDDEN int ibPeerMemFind(const char* root, char* which, size_t whichLen);

#endif /* CHORUS_NET_IB_LOGIC_H_ */
