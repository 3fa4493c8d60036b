/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.c: isend, irecv, test: the receiver-posted flow control of ib_logic.h over verbs (iflush, whose
 * requests test() completes too, is in flush.c).
 *
 * irecv posts one receive work request per QP (each will take one RDMA write-with-immediate), then
 * RDMA-writes the FIFO entry for this receive into the sender's FIFO. isend waits (returns a NULL
 * request, the core retries) until the entry of its own sequence number is there, checks it (the
 * receive is large enough, expects this sender's tag), and writes its data straight into that
 * receive buffer: split over the QPs, each piece an RDMA write-with-immediate whose immediate is the
 * piece's length. A receive is complete when every QP delivered its piece; its size is the sum.
 * Sends and receives complete in order on every QP, so the n-th completion of a QP belongs to the
 * n-th transfer.
 *
 * A dead peer: RC completions fail after NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT, and a send waiting for
 * a FIFO entry (or a receive waiting for data) would wait forever, so whenever a call finds nothing
 * to do it also checks, at most every 100 ms, whether the peer closed the setup socket (the kernel
 * closes it when the process dies): that is ncclRemoteError, never a hang.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ib_plugin.h"

#define PROBE_INTERVAL_NS (100LL * 1000 * 1000)
#define IB_PLUGIN_ID ((int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER))

/* Net profiler events (profiler_net_ib.h layout): one per request that came with a profiler parent,
 * opened when it is posted and closed when test() sees it done. Profiling never fails a transfer, so
 * the callback's result is not acted on. */
static void profStart(ibComm* c, ibRequest* r, void* phandle, int opcode, size_t length) {
  r->phandle = phandle;
  r->eHandle = NULL;
  if (c->prof == NULL || phandle == NULL) return;
  memset(&r->pdescr, 0, sizeof(r->pdescr));
  r->pdescr.type = ncclProfileQp;
  r->pdescr.qp.device = c->dev;
  r->pdescr.qp.wr_id = IB_WRID(r->isSend ? IB_WR_SEND : IB_WR_RECV, r->idx);
  r->pdescr.qp.opcode = opcode;
  r->pdescr.qp.qpNum = (int)c->qps[0]->qp_num;
  r->pdescr.qp.length = length;
  (void)c->prof(&r->eHandle, ncclProfilerNetEventStart, phandle, IB_PLUGIN_ID, &r->pdescr);
}

static void profStop(ibComm* c, ibRequest* r) {
  if (c->prof == NULL || r->phandle == NULL) return;
  (void)c->prof(&r->eHandle, ncclProfilerNetEventStop, r->phandle, IB_PLUGIN_ID, &r->pdescr);
  r->phandle = NULL;
}

ncclResult_t ibCommFail(ibComm* c, ncclResult_t res) {
  if (c->broken == ncclSuccess) c->broken = res;
  return res;
}

ncclResult_t ibCheckPeer(ibComm* c) {
  int64_t now = chrSockNowNs();
  if (now - c->lastProbeNs < PROBE_INTERVAL_NS) return ncclSuccess;
  c->lastProbeNs = now;
  if (chrSockPeerClosed(c->fd)) {
    IB_WARN("%s comm on %s: the peer closed its connection (its process exited or died)", c->isSend ? "send" : "recv",
            ibDevs[c->dev].fullName);
    return ibCommFail(c, ncclRemoteError);
  }
  return ncclSuccess;
}

static const char* wrKindName(int kind) {
  return kind == IB_WR_SEND    ? "data write"
         : kind == IB_WR_FIFO  ? "FIFO write"
         : kind == IB_WR_RECV  ? "receive"
         : kind == IB_WR_FLUSH ? "flush read"
                               : "?";
}

static int qpIndex(const ibComm* c, uint32_t qpNum) {
  for (int q = 0; q < c->nQps; q++)
    if (c->qps[q]->qp_num == qpNum) return q;
  return -1;
}

/* One completion; errors say what failed and why, in verbs' words. */
static ncclResult_t onCompletion(ibComm* c, const struct ibv_wc* wc) {
  int kind = IB_WRID_KIND(wc->wr_id), idx = IB_WRID_IDX(wc->wr_id);
  if (wc->status != IBV_WC_SUCCESS) {
    int remote = wc->status == IBV_WC_RETRY_EXC_ERR || wc->status == IBV_WC_RNR_RETRY_EXC_ERR ||
                 wc->status == IBV_WC_REM_ACCESS_ERR || wc->status == IBV_WC_REM_INV_REQ_ERR ||
                 wc->status == IBV_WC_REM_OP_ERR || wc->status == IBV_WC_REM_ABORT_ERR;
    /* The flush QP reads this process's own memory: its failures are never the peer's. */
    int flush = kind == IB_WR_FLUSH;
    IB_WARN("%s on %s, QP %u: completion error: %s (status %d, vendor error 0x%x)%s", wrKindName(kind),
            ibDevs[c->dev].fullName, wc->qp_num, ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err,
            flush ? "; reading back received GPU memory failed (NCCL_GDR_FLUSH_DISABLE=1 turns the flush off)"
            : wc->status == IBV_WC_RETRY_EXC_ERR ? "; the peer is unreachable or gone (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT)"
                                                 : "");
    return ibCommFail(c, remote && !flush ? ncclRemoteError : ncclSystemError);
  }
  if (kind == IB_WR_FIFO) {
    if (idx < 0 || idx >= IB_FIFO_DEPTH) goto bad_id;
    c->stagingBusy[idx] = 0;
    return ncclSuccess;
  }
  if (idx < 0 || idx >= IB_MAX_REQUESTS || !(c->pool.used & (1u << idx))) goto bad_id;
  ibRequest* r = &c->reqs[idx];
  if (kind == IB_WR_SEND && c->isSend) {
    r->pending--;
    return ncclSuccess;
  }
  if (kind == IB_WR_FLUSH && !c->isSend && r->isFlush && c->flushQp && wc->qp_num == c->flushQp->qp_num) {
    r->pending--;
    return ncclSuccess;
  }
  if (kind == IB_WR_RECV && !c->isSend && !r->isFlush) {
    int q = qpIndex(c, wc->qp_num);
    if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM) || q < 0) {
      IB_WARN("recv comm on %s: a receive completed by opcode %d (flags 0x%x), not by a write with immediate",
              ibDevs[c->dev].fullName, (int)wc->opcode, (unsigned)wc->wc_flags);
      return ibCommFail(c, ncclRemoteError);
    }
    c->recvArrived[q]++;
    r->size += ntohl(wc->imm_data);
    r->pending--;
    return ncclSuccess;
  }
bad_id:
  IB_WARN("%s comm on %s: completion with an unknown work request id 0x%llx", c->isSend ? "send" : "recv",
          ibDevs[c->dev].fullName, (unsigned long long)wc->wr_id);
  return ibCommFail(c, ncclInternalError);
}

static ncclResult_t pollCq(ibComm* c) {
  struct ibv_wc wcs[16];
  for (;;) {
    int n = ibv_poll_cq(c->cq, 16, wcs);
    if (n < 0) {
      IB_WARN("ibv_poll_cq on %s failed (%d)", ibDevs[c->dev].fullName, n);
      return ibCommFail(c, ncclSystemError);
    }
    for (int i = 0; i < n; i++) {
      ncclResult_t res = onCompletion(c, &wcs[i]);
      if (res != ncclSuccess) return res;
    }
    if (n < 16) return ncclSuccess;
  }
}

/* The registration must be this plugin's, on this comm's device, and cover the bytes moved. An empty
 * transfer needs no registration (its RDMA write touches no memory). */
ncclResult_t ibCheckMr(const ibComm* c, const ibMr* m, const void* data, size_t size, const char* who) {
  if (m == NULL && size == 0) return ncclSuccess;
  if (m == NULL || m->magic != IB_MR_MAGIC || m->dev != c->dev) {
    IB_WARN("%s: %p is not a registration made on %s", who, (const void*)m, ibDevs[c->dev].fullName);
    return ncclInternalError;
  }
  if (size == 0) return ncclSuccess;
  uintptr_t lo = (uintptr_t)m->mr->addr, p = (uintptr_t)data;
  if (p < lo || size > m->mr->length || p - lo > m->mr->length - size) {
    IB_WARN("%s: %zu bytes at %p lie outside their registration (%zu bytes at %p)", who, size, data, m->mr->length,
            m->mr->addr);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ibIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  ibComm* c = sendComm;
  if (c == NULL || request == NULL || !c->isSend) return ncclInternalError;
  *request = NULL;
  if (c->broken) return c->broken;
  if (size > (size_t)MAX_NET_SIZE) {
    IB_WARN("isend of %zu bytes: larger than maxP2pBytes (%lld)", size, (long long)MAX_NET_SIZE);
    return ncclInvalidArgument;
  }
  ibMr* m = mhandle;
  ncclResult_t res = ibCheckMr(c, m, data, size, "isend");
  if (res != ncclSuccess) return res;
  if (ibReqInUse(&c->pool) == IB_MAX_REQUESTS) return pollCq(c); /* full: the core retries */
  ibFifoEntry e;
  int st = ibFifoCheck(c->fifo, c->sendSeq, size, tag, &e);
  if (st == IB_FIFO_NOT_YET) {
    res = pollCq(c);
    return res != ncclSuccess ? res : ibCheckPeer(c);
  }
  if (st == IB_FIFO_TOO_SMALL) {
    IB_WARN("send #%llu of %zu bytes (tag %d) on %s matches a receive of only %llu bytes", (unsigned long long)c->sendSeq,
            size, tag, ibDevs[c->dev].fullName, (unsigned long long)e.size);
    return ibCommFail(c, ncclInvalidUsage);
  }
  if (st == IB_FIFO_BAD_TAG) {
    IB_WARN("send #%llu with tag %d on %s matches a receive that expects tag %d", (unsigned long long)c->sendSeq, tag,
            ibDevs[c->dev].fullName, e.tag);
    return ibCommFail(c, ncclInvalidUsage);
  }
  if (st != IB_FIFO_READY) {
    IB_WARN("send #%llu on %s: the peer wrote a FIFO entry out of sequence", (unsigned long long)c->sendSeq,
            ibDevs[c->dev].fullName);
    return ibCommFail(c, ncclRemoteError);
  }
  int idx = ibReqAlloc(&c->pool);
  ibRequest* r = &c->reqs[idx];
  memset(r, 0, sizeof(*r));
  r->comm = c;
  r->isSend = 1;
  r->idx = idx;
  r->size = size;
  r->pending = c->nQps;
  ibFifoRelease(c->fifo, c->sendSeq); /* before the data goes: the receiver may reuse the slot after it */
  size_t chunk = (size + (size_t)c->nQps - 1) / (size_t)c->nQps;
  chunk = (chunk + 127) & ~(size_t)127; /* whole cache lines per QP */
  for (int q = 0; q < c->nQps; q++) {
    size_t off = (size_t)q * chunk;
    size_t len = off < size ? (size - off < chunk ? size - off : chunk) : 0;
    if (off > size) off = size;
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)data + off, .length = (uint32_t)len, .lkey = m ? m->mr->lkey : 0};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = IB_WRID(IB_WR_SEND, idx);
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl((uint32_t)len);
    wr.sg_list = len ? &sge : NULL;
    wr.num_sge = len ? 1 : 0;
    wr.wr.rdma.remote_addr = e.addr + off;
    wr.wr.rdma.rkey = e.rkey;
    int rc = ibv_post_send(c->qps[q], &wr, &bad);
    if (rc != 0) {
      IB_WARN("posting a data write on %s failed: %s", ibDevs[c->dev].fullName, strerror(rc));
      return ibCommFail(c, ncclSystemError);
    }
  }
  c->sendSeq++;
  profStart(c, r, phandle, IBV_WR_RDMA_WRITE_WITH_IMM, size);
  *request = r;
  return ncclSuccess;
}

ncclResult_t ibIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                     void** request) {
  ibComm* c = recvComm;
  if (c == NULL || request == NULL || c->isSend) return ncclInternalError;
  /* *request may carry NCCL_NET_OPTIONAL_RECV_COMPLETION: every receive here completes normally. */
  *request = NULL;
  if (n != 1 || data == NULL || sizes == NULL || tags == NULL || mhandles == NULL) {
    IB_WARN("irecv: %d buffers (arrays %p %p %p %p); this plugin takes exactly 1 (maxRecvs)", n, (void*)data,
            (void*)sizes, (void*)tags, (void*)mhandles);
    return ncclInternalError;
  }
  if (c->broken) return c->broken;
  ibMr* m = mhandles[0];
  ncclResult_t res = ibCheckMr(c, m, data[0], sizes[0], "irecv");
  if (res != ncclSuccess) return res;
  int slot = (int)(c->recvSeq % IB_FIFO_DEPTH);
  uint64_t arrived = c->recvArrived[0];
  for (int q = 1; q < c->nQps; q++)
    if (c->recvArrived[q] < arrived) arrived = c->recvArrived[q];
  /* Room: a free request, a free staging entry, and the sender done with the FIFO slot (the receive
   * that used it last has its data). Otherwise the core retries. */
  if (ibReqInUse(&c->pool) == IB_MAX_REQUESTS || c->stagingBusy[slot] || c->recvSeq - arrived >= IB_FIFO_DEPTH) {
    res = pollCq(c);
    return res != ncclSuccess ? res : ibCheckPeer(c);
  }
  int idx = ibReqAlloc(&c->pool);
  ibRequest* r = &c->reqs[idx];
  memset(r, 0, sizeof(*r));
  r->comm = c;
  r->idx = idx;
  r->capacity = sizes[0];
  r->pending = c->nQps;
  for (int q = 0; q < c->nQps; q++) {
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = IB_WRID(IB_WR_RECV, idx);
    int rc = ibv_post_recv(c->qps[q], &wr, &bad);
    if (rc != 0) {
      IB_WARN("posting a receive on %s failed: %s", ibDevs[c->dev].fullName, strerror(rc));
      return ibCommFail(c, ncclSystemError);
    }
  }
  int slot2;
  ibFifoMake(c->recvSeq, (uint64_t)(uintptr_t)data[0], sizes[0], m ? m->mr->rkey : 0, tags[0], &c->staging[slot], &slot2);
  c->stagingBusy[slot] = 1;
  struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)&c->staging[slot], .length = sizeof(ibFifoEntry),
                        .lkey = c->stagingMr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = IB_WRID(IB_WR_FIFO, slot);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = c->remFifoAddr + (uint64_t)slot * sizeof(ibFifoEntry);
  wr.wr.rdma.rkey = c->remFifoRkey;
  int rc = ibv_post_send(c->qps[0], &wr, &bad);
  if (rc != 0) {
    IB_WARN("posting a FIFO write on %s failed: %s", ibDevs[c->dev].fullName, strerror(rc));
    return ibCommFail(c, ncclSystemError);
  }
  c->recvSeq++;
  profStart(c, r, phandles ? phandles[0] : NULL, IBV_WR_RDMA_WRITE, sizes[0]);
  *request = r;
  return ncclSuccess;
}

ncclResult_t ibTest(void* request, int* done, int* sizes) {
  ibRequest* r = request;
  if (r == NULL || done == NULL) return ncclInternalError;
  *done = 0;
  ibComm* c = r->comm;
  if (c == NULL || r->idx < 0 || r->idx >= IB_MAX_REQUESTS || r != &c->reqs[r->idx] ||
      !(c->pool.used & (1u << r->idx))) {
    IB_WARN("test: %p is not a live request of this plugin", request);
    return ncclInternalError;
  }
  ncclResult_t res = pollCq(c);
  if (res != ncclSuccess) return res;
  if (r->pending > 0) return c->broken ? c->broken : ibCheckPeer(c); /* a failed comm never completes it */
  if (!r->isSend && !r->isFlush && r->size > r->capacity) {
    IB_WARN("recv comm on %s: %zu bytes arrived for a receive of %zu", ibDevs[c->dev].fullName, r->size, r->capacity);
    return ibCommFail(c, ncclRemoteError);
  }
  *done = 1;
  if (sizes && !r->isFlush) sizes[0] = (int)r->size; /* a flush moves no data of the caller's */
  r->pdescr.qp.length = r->size;
  profStop(c, r);
  ibReqFree(&c->pool, r->idx);
  return ncclSuccess;
}
