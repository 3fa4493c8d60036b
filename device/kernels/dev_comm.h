/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_comm.h: what a kernel needs to know about a communicator, as plain structs that C (the host
 * launcher, the core later) and CUDA (the kernels) both read. Everything here lives in device memory
 * except the abort and error words, which are host-mapped so the host sees them without a sync.
 *
 * Connections. A connection is one direction between two ranks: a FIFO of CHR_DEV_STEPS slots in the
 * receiver's memory, filled by the sender, drained by the receiver. Each end holds a chrDevConn that
 * points at the same FIFO and control words:
 *   tail  (with the receiver) the sender's count of published SIMPLE steps; written after a
 *         system-scope fence, so the data of step s is visible once tail > s.
 *   head  (with the sender) the receiver's count of consumed steps; the sender may write step s
 *         only while s < head + CHR_DEV_STEPS (8 slots of credit).
 *   step  this end's position, 64-bit and monotonic: steps walked on the connection so far. Both ends
 *         walk the same sequence (the step programs of hostdev/work.h agree on it), the kernel writes
 *         the position back after every work, so the next operation continues where this one ended
 *         and nothing is ever reset. slot = step % CHR_DEV_STEPS.
 * SIMPLE steps move whole slots of stepBytes bytes and publish tail; LL steps (small messages) put 8
 * data bytes and two copies of the flag (uint32)(step + 1) in every 16-byte line, so the receiver
 * polls the data itself and no tail or fence is needed. Both protocols share the step sequence and
 * the head credit, so a link may mix them from one work to the next.
 *
 * A net end (a peer on another host, core/transport/dev_net.c) has its FIFO and control words in
 * host-mapped memory of its own rank, and a proxy thread stands in for the peer: it sends a
 * published slot through the net plugin and then advances head, or receives into a free slot and
 * then advances tail. Only SIMPLE runs there (no LL slots: ll is NULL).
 *
 * Links of a work (struct chrWorkLink) name connections: a ring link of the work's channel
 * (channels[c].ring[CHR_RING_SEND or CHR_RING_RECV]), or a point-to-point link of the comm,
 * p2p[(conn * nRanks + peer) * 2 + isSend]. Point-to-point links are per comm, not per channel, as on
 * the host executor (tree lanes send on one channel and receive on another over the same link), so
 * one launch may use a p2p end from one channel only (the launcher checks).
 */
#ifndef CHORUS_DEVICE_DEV_COMM_H_
#define CHORUS_DEVICE_DEV_COMM_H_

#include <stdint.h>
#include "hostdev/dev_consts.h" /* CHR_DEV_STEPS, CHR_DEV_ERR_* */

#define CHR_DEV_LL_LINE_DATA 8   /* payload bytes of one LL line */

/* One LL line: two 8-byte halves, each a 4-byte data word and its flag, so an 8-byte store carries
 * data and flag together and a reader that sees both flags has both data words. */
union chrDevLLLine {
  struct {
    uint32_t data1, flag1, data2, flag2;
  } w;
  uint64_t v[2];
};

struct chrDevConn {
  char* buff;               /* SIMPLE: CHR_DEV_STEPS slots of stepBytes (receiver's memory) */
  union chrDevLLLine* ll;   /* LL: CHR_DEV_STEPS slots of llLines lines (receiver's memory) */
  uint64_t* tail;           /* receiver-side word: SIMPLE steps published by the sender */
  uint64_t* head;           /* sender-side word: steps consumed by the receiver */
  uint64_t* sizes;          /* net ends only (else NULL): CHR_DEV_STEPS words, the bytes of the SIMPLE step in
                               each slot; the sender's kernel writes it before tail, the proxy that
                               carries the step over the net plugin writes it at the receiver before
                               tail, and the receiving kernel checks it against its own step */
  uint64_t* need;           /* net receive ends only (else NULL): the position the kernel will have reached
                               once its current work is done, written at the start of each work, so the
                               proxy receives exactly the steps that will be taken */
  uint64_t step;            /* this end's position; the kernel stores it back after each work */
  uint64_t stepBytes;
  uint32_t llLines;
  int32_t peer;             /* -1: not connected */
};

struct chrDevChannel {
  struct chrDevConn ring[2]; /* CHR_RING_SEND (to the next rank), CHR_RING_RECV (from the previous) */
};

struct chrDevComm {
  int32_t rank, nRanks;
  int32_t nChannels;         /* entries of channels[] */
  int32_t p2pConns;          /* connection indices in p2p[] (0: none) */
  const int* ringOrder;      /* nRanks entries: the user rank at each ring position */
  volatile uint32_t* abortFlag; /* host-mapped; non-zero: every wait loop exits, the kernel returns */
  volatile uint32_t* error;     /* host-mapped; CHR_DEV_ERR_* */
  struct chrDevChannel* channels;
  struct chrDevConn* p2p;    /* p2pConns * nRanks * 2 ends, or NULL */
};

/* The p2p end of (conn, peer, isSend). */
#define CHR_DEV_P2P_INDEX(nRanks, conn, peer, isSend) ((((conn) * (nRanks)) + (peer)) * 2 + ((isSend) ? 1 : 0))

#endif /* CHORUS_DEVICE_DEV_COMM_H_ */
