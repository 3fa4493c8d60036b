/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fifo.c: the receiver-posted flow-control FIFO (ib_logic.h). The receiver makes one entry per
 * receive and RDMA-writes it into the sender's array; the sender reads its own array. The entry is
 * written by the NIC while the sender may be reading it: `seq` is checked first, the rest is copied
 * after a barrier, and `seq` checked again so a torn copy is never used.
 */
#include <string.h>

#include "ib_logic.h"

void ibFifoMake(uint64_t recvSeq, uint64_t addr, uint64_t size, uint32_t rkey, int tag, ibFifoEntry* e, int* slot) {
  e->addr = addr;
  e->size = size;
  e->rkey = rkey;
  e->tag = tag;
  e->seq = recvSeq + 1;
  *slot = (int)(recvSeq % IB_FIFO_DEPTH);
}

int ibFifoCheck(const volatile ibFifoEntry* fifo, uint64_t sendSeq, size_t sendSize, int sendTag, ibFifoEntry* out) {
  const volatile ibFifoEntry* s = &fifo[sendSeq % IB_FIFO_DEPTH];
  uint64_t want = sendSeq + 1;
  uint64_t seq = s->seq;
  if (seq == 0 || seq < want) return IB_FIFO_NOT_YET; /* empty, or an older round not yet overwritten */
  if (seq != want) return IB_FIFO_CORRUPT;            /* the receiver cannot be a whole FIFO ahead */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  out->addr = s->addr;
  out->size = s->size;
  out->rkey = s->rkey;
  out->tag = s->tag;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  out->seq = s->seq;
  if (out->seq != want) return IB_FIFO_CORRUPT; /* changed under us: only a misbehaving peer does that */
  if (out->tag != sendTag) return IB_FIFO_BAD_TAG;
  if (out->size < sendSize) return IB_FIFO_TOO_SMALL;
  return IB_FIFO_READY;
}

void ibFifoRelease(volatile ibFifoEntry* fifo, uint64_t sendSeq) {
  volatile ibFifoEntry* s = &fifo[sendSeq % IB_FIFO_DEPTH];
  s->seq = 0;
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
