/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush.c: iflush, which makes a receive into GPU memory visible to the GPU before the core lets a
 * kernel read it.
 *
 * The NIC's RDMA writes into GPU memory are posted PCIe writes; a completion says the NIC took them,
 * not that they reached the GPU. A read through the same NIC of that GPU memory cannot pass them, so
 * once an RDMA read of one received byte completes, every byte written before it is in place. The
 * read goes over the recv comm's flush QP, which is connected to itself (qp.c), from the last
 * non-empty GPU buffer of the receive into a host word. One read per flushed receive; its request
 * completes in test() like any other, and a failed read fails the comm (data.c).
 *
 * No read, NULL request: host memory (the CPU sees DMA to it coherently), nothing received, or no
 * flush QP (NCCL_GDR_FLUSH_DISABLE=1). The core decides whether to call at all (forceFlush is 0).
 */
#include <string.h>

#include "ib_plugin.h"

ncclResult_t ibIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  ibComm* c = recvComm;
  if (c == NULL || request == NULL || c->isSend) return ncclInternalError;
  *request = NULL;
  if (n < 1 || n > IB_MAX_REQUESTS || data == NULL || sizes == NULL || mhandles == NULL) {
    IB_WARN("iflush: %d buffers (arrays %p %p %p)", n, (void*)data, (void*)sizes, (void*)mhandles);
    return ncclInternalError;
  }
  if (c->broken) return c->broken;
  int last = -1;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      IB_WARN("iflush: buffer %d has a negative size (%d)", i, sizes[i]);
      return ncclInternalError;
    }
    if (sizes[i] == 0) continue;
    const ibMr* m = mhandles[i];
    ncclResult_t res = ibCheckMr(c, m, data[i], (size_t)sizes[i], "iflush");
    if (res != ncclSuccess) return res;
    if (m->type == NCCL_PTR_CUDA) last = i;
  }
  if (last < 0 || c->flushQp == NULL) return ncclSuccess;
  /* A NULL request would tell the core the flush is done, so a full pool is an error, not a retry;
   * the core keeps far fewer receives in flight than the pool holds. */
  int idx = ibReqAlloc(&c->pool);
  if (idx < 0) {
    IB_WARN("iflush on %s: all %d requests of the comm are in flight", ibDevs[c->dev].fullName, IB_MAX_REQUESTS);
    return ncclInternalError;
  }
  ibRequest* r = &c->reqs[idx];
  memset(r, 0, sizeof(*r));
  r->comm = c;
  r->isFlush = 1;
  r->idx = idx;
  r->pending = 1;
  const ibMr* m = mhandles[last];
  struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)c->flushBuf, .length = 1, .lkey = c->flushMr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = IB_WRID(IB_WR_FLUSH, idx);
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)data[last] + (uint64_t)sizes[last] - 1; /* the last byte received */
  wr.wr.rdma.rkey = m->mr->rkey;
  int rc = ibv_post_send(c->flushQp, &wr, &bad);
  if (rc != 0) {
    ibReqFree(&c->pool, idx);
    IB_WARN("posting a flush read on %s failed: %s", ibDevs[c->dev].fullName, strerror(rc));
    return ibCommFail(c, ncclSystemError);
  }
  *request = r;
  return ncclSuccess;
}
