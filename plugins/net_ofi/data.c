/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.c: isend / irecv / iflush / test of the libfabric net plugin.
 *
 * Message k of a connection travels with the tag (receiver's id, k) and the isend's tag as remote CQ
 * data; receive k is posted for exactly that tag. So messages match receives in FIFO order whatever
 * order the provider delivers them in, and two connections never see each other's messages.
 *
 * A grouped receive (n > 1 buffers) takes the next n messages, each into the buffer posted with its
 * tag. The receiver cannot know which of the n messages carries which tag before it arrives, so each
 * lands in a bounce buffer of the request slot (as large as the largest posted buffer, registered
 * when the provider needs it) and is copied to its buffer when its completion shows the tag. Plain
 * receives (n = 1) go straight into the caller's buffer.
 *
 * Requests are taken from the comm's pool (the ABI's capacity: 32 receives, 32 x maxRecvs sends) and
 * queued in issue order; each call on the comm hands the provider what it has room for, oldest
 * first. So a provider with a short queue (-FI_EAGAIN) delays a request but never refuses it, and
 * only an exhausted pool gives the core a NULL request.
 *
 * A message longer than its receive is truncated by the provider, which reports FI_ETRUNC: the comm
 * fails with ncclSystemError. A shorter one reports its own length.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ofi_plugin.h"

static void* descOf(ofiMrEntry* e) { return e ? e->desc : NULL; }

static ofiComm* checkComm(void* comm, int isSend, const char* what) {
  ofiComm* c = comm;
  if (c == NULL || c->magic != ofiCommMagic() || c->isSend != isSend) {
    OFI_WARN("%s: %p is not a %s comm of this plugin", what, comm, isSend ? "send" : "receive");
    return NULL;
  }
  return c;
}

/* A free request slot, or NULL when all are in flight (lock held). */
static ofiRequest* freeSlot(ofiComm* c) {
  for (int k = 0; k < c->nReqs; k++) {
    int i = (c->nextReq + k) % c->nReqs;
    if (!c->reqs[i].used) return &c->reqs[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------- posting */

/* Bounce buffer j of a grouped slot, at least cap bytes (lock held). */
static ncclResult_t ensureBounce(ofiDev* d, ofiRequest* r, int j, size_t cap) {
  if (r->b[j].bounce != NULL && r->b[j].bounceLen >= cap) return ncclSuccess;
  if (r->b[j].bounceMr) ofiMrPut(d, r->b[j].bounceMr);
  free(r->b[j].bounce);
  r->b[j].bounceMr = NULL;
  r->b[j].bounceLen = 0;
  size_t len = (cap + 4095) & ~(size_t)4095;
  r->b[j].bounce = aligned_alloc(4096, len ? len : 4096);
  if (r->b[j].bounce == NULL) {
    OFI_WARN("irecv: out of memory for a %zu-byte bounce buffer", len);
    return ncclSystemError;
  }
  r->b[j].bounceLen = len;
  if (ofiMrNeeded(d, NCCL_PTR_HOST)) return ofiMrGet(d, r->b[j].bounce, len, NCCL_PTR_HOST, 0, &r->b[j].bounceMr);
  return ncclSuccess;
}

/* Hand the provider the ops of r it has not got yet; stops quietly when its queue is full (lock held). */
static ncclResult_t postOps(ofiComm* c, ofiRequest* r) {
  ofiDev* d = c->own.dev;
  struct fid_ep* ep = c->own.ep->ep;
  size_t cap = 0;
  for (int i = 0; r->grouped && i < r->n; i++)
    if (r->b[i].capacity > cap) cap = r->b[i].capacity;
  while (r->nPosted < r->n) {
    int j = r->nPosted;
    ofiOp* op = &r->ops[j];
    op->kind = r->kind;
    ssize_t rc;
    const char* what;
    if (r->kind == OP_SEND) {
      uint64_t wireTag = ofiDataTag(c->peerId, r->seq);
      what = "fi_tsend";
      ofiBuf* b = &r->b[0];
      rc = d->maxRecvs > 1
               ? fi_tsenddata(ep, b->data, b->capacity, b->desc, (uint64_t)(uint32_t)b->tag, c->peer, wireTag, &op->ctx)
               : fi_tsend(ep, b->data, b->capacity, b->desc, c->peer, wireTag, &op->ctx);
    } else if (r->kind == OP_RECV) {
      void* buf = r->b[0].data;
      void* desc = r->b[0].desc;
      size_t len = r->b[0].capacity;
      if (r->grouped) {
        ncclResult_t res = ensureBounce(d, r, j, cap);
        if (res != ncclSuccess) return ofiFail(&c->own, res, "irecv: no bounce buffer for a grouped receive");
        buf = r->b[j].bounce, desc = descOf(r->b[j].bounceMr), len = cap;
      }
      what = "fi_trecv";
      rc = fi_trecv(ep, buf, len, desc, FI_ADDR_UNSPEC, ofiDataTag(c->id, r->seq + (uint64_t)j), 0, &op->ctx);
    } else {
      what = "fi_read (flush)"; /* through the comm's endpoint: its completion queue reports it */
      rc = fi_read(ep, d->flushBuf, r->flushLen, descOf(d->flushMr), d->self, r->raddr, r->rkey, &op->ctx);
    }
    ncclResult_t res = ofiPost(&c->own, op, rc, what);
    if (res == ncclInProgress) return ncclSuccess;
    if (res != ncclSuccess) return res;
    r->nPosted++;
  }
  return ncclSuccess;
}

/* Post queued requests in issue order, as far as the provider takes them (lock held). */
static ncclResult_t postPending(ofiComm* c) {
  while (c->pendHead != c->pendTail && !c->own.failed) {
    ofiRequest* r = c->pending[c->pendHead % (uint64_t)c->nReqs];
    ncclResult_t res = postOps(c, r);
    if (res != ncclSuccess) return res;
    if (r->nPosted < r->n) break;
    c->pendHead++;
  }
  return (ncclResult_t)c->own.failed;
}

/* A comm with requests still waiting goes on its endpoint's list, which every progress call works
 * through (lock held). */
static void listPending(ofiComm* c) {
  ofiEp* e = c->own.ep;
  if (c->inPendingList || c->pendHead == c->pendTail || c->own.failed) return;
  c->inPendingList = 1;
  c->nextPending = e->pendingComms;
  e->pendingComms = c;
}

void ofiForgetPending(ofiComm* c) {
  if (!c->inPendingList) return;
  for (ofiComm** l = &c->own.ep->pendingComms; *l; l = &(*l)->nextPending)
    if (*l == c) {
      *l = c->nextPending;
      break;
    }
  c->inPendingList = 0;
}

void ofiPostPendingAll(ofiEp* e) {
  ofiComm** l = &e->pendingComms;
  while (*l != NULL) {
    ofiComm* c = *l;
    if (!c->own.failed && !c->own.closing) (void)postPending(c); /* a failure stays in the comm */
    if (c->pendHead == c->pendTail || c->own.failed || c->own.closing) {
      *l = c->nextPending;
      c->inPendingList = 0;
    } else {
      l = &c->nextPending;
    }
  }
}

/* The filled slot r becomes a request of the core: queued, then posted as far as possible (lock held). */
static ncclResult_t issue(ofiComm* c, ofiRequest* r) {
  r->used = 1;
  r->nPosted = 0;
  r->nDone = 0;
  c->nextReq = (int)(r - c->reqs + 1) % c->nReqs;
  if (c->busy++ == 0) { /* the probe clock starts with the first request */
    c->lastProgressNs = ofiNowNs();
    __atomic_store_n(&c->checkedNs, c->lastProgressNs, __ATOMIC_RELAXED);
  }
  ofiEpBusy(c->own.ep, 1);
  c->pending[c->pendTail++ % (uint64_t)c->nReqs] = r; /* at most nReqs slots are in use: never overflows */
  ncclResult_t res = postPending(c);
  listPending(c);
  return res;
}

/* ---------------------------------------------------------------- completions */

/* A message of a grouped receive arrived in its bounce buffer: copy it to the buffer of its tag. */
static void placeGrouped(ofiComm* c, ofiRequest* r, ofiOp* op) {
  int tag = (int)(uint32_t)op->data;
  int i = 0;
  while (i < r->n && ((r->filled & (1u << i)) || r->b[i].tag != tag)) i++;
  uint64_t msg = r->seq + (uint64_t)op->index;
  if (i == r->n) {
    ofiFail(&c->own, ncclInvalidUsage,
            "message %llu has tag %d, which no unfilled buffer of the posted %d-buffer receive expects",
            (unsigned long long)msg, tag, r->n);
    return;
  }
  if (op->len > r->b[i].capacity) {
    ofiFail(&c->own, ncclSystemError,
            "message %llu: the peer sends %zu bytes but the posted receive buffer %d (tag %d) holds only %zu",
            (unsigned long long)msg, op->len, i, tag, r->b[i].capacity);
    return;
  }
  if (op->len > 0) memcpy(r->b[i].data, r->b[op->index].bounce, op->len);
  r->b[i].size = op->len;
  r->filled |= 1u << i;
}

/* A send, receive or flush op of a live comm completed successfully (lock held). */
void ofiOnData(ofiOp* op) {
  ofiRequest* r = op->req;
  ofiComm* c = r->comm;
  c->lastProgressNs = ofiNowNs();
  if (r->kind == OP_RECV && !r->grouped) r->b[0].size = op->len;
  if (r->kind == OP_RECV && r->grouped) placeGrouped(c, r, op);
  __atomic_store_n(&r->nDone, r->nDone + 1, __ATOMIC_RELEASE); /* test() looks without the lock */
}

/* ---------------------------------------------------------------- isend */

ncclResult_t ofiIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  ofiComm* c = checkComm(sendComm, 1, "isend");
  if (c == NULL || request == NULL || (data == NULL && size > 0)) {
    OFI_WARN("isend: bad arguments (comm %p, data %p, size %zu)", sendComm, data, size);
    return ncclInternalError;
  }
  *request = NULL;
  ofiMrHandle* mh = ofiMrCheck(mhandle, "isend");
  if (mhandle != NULL && mh == NULL) return ncclInternalError;
  ofiDev* d = c->own.dev;
  if (size > 0 && (mh == NULL || mh->entry == NULL) && ofiMrNeeded(d, mh ? mh->type : NCCL_PTR_HOST)) {
    OFI_WARN("isend: %zu bytes at %p without a registration, which %s needs (mr_mode 0x%llx)", size, data, d->name,
             (unsigned long long)d->mrMode);
    return ncclInternalError;
  }
  ofiEp* e = c->own.ep;
  ofiEpLock(e);
  ofiProgress(e);
  ncclResult_t res = (ncclResult_t)c->own.failed;
  ofiRequest* r = res == ncclSuccess ? freeSlot(c) : NULL; /* none free: NULL request, the core retries */
  if (r != NULL) {
    r->kind = OP_SEND;
    r->n = 1;
    r->grouped = 0;
    r->seq = c->seq++;
    r->b[0].data = data;
    r->b[0].desc = mh && mh->entry ? mh->entry->desc : NULL;
    r->b[0].capacity = size;
    r->b[0].tag = tag;
    r->b[0].size = size;
    res = issue(c, r);
    if (res == ncclSuccess) *request = r;
  }
  if (res == ncclSuccess) res = postPending(c);
  if (res == ncclSuccess) res = ofiPingCheck(c);
  ofiEpUnlock(e);
  return res;
}

/* ---------------------------------------------------------------- irecv */

ncclResult_t ofiIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                      void** request) {
  ofiComm* c = checkComm(recvComm, 0, "irecv");
  if (c == NULL || request == NULL || data == NULL || sizes == NULL) {
    OFI_WARN("irecv: bad arguments");
    return ncclInternalError;
  }
  ofiDev* d = c->own.dev;
  if (n < 1 || n > d->maxRecvs || (n > 1 && tags == NULL)) {
    OFI_WARN("irecv: %d buffers in one request (maxRecvs is %d)%s", n, d->maxRecvs, n > 1 ? ", or no tags" : "");
    return ncclInternalError;
  }
  void* desc[OFI_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    if (data[i] == NULL && sizes[i] > 0) {
      OFI_WARN("irecv: NULL buffer %d of %zu bytes", i, sizes[i]);
      return ncclInternalError;
    }
    ofiMrHandle* mh = ofiMrCheck(mhandles ? mhandles[i] : NULL, "irecv");
    if (mhandles != NULL && mhandles[i] != NULL && mh == NULL) return ncclInternalError;
    int type = mh ? mh->type : NCCL_PTR_HOST;
    if (n > 1 && type != NCCL_PTR_HOST) {
      OFI_WARN("irecv: grouped receives go through host bounce buffers; buffer %d is not host memory", i);
      return ncclInternalError;
    }
    if (n == 1 && sizes[i] > 0 && (mh == NULL || mh->entry == NULL) && ofiMrNeeded(d, type)) {
      OFI_WARN("irecv: %zu bytes at %p without a registration, which %s needs (mr_mode 0x%llx)", sizes[i], data[i],
               d->name, (unsigned long long)d->mrMode);
      return ncclInternalError;
    }
    desc[i] = mh && mh->entry ? mh->entry->desc : NULL;
  }
  /* NCCL_NET_OPTIONAL_RECV_COMPLETION in *request needs nothing special: requests always complete. */
  *request = NULL;
  ofiEp* e = c->own.ep;
  ofiEpLock(e);
  ofiProgress(e);
  ncclResult_t res = (ncclResult_t)c->own.failed;
  ofiRequest* r = res == ncclSuccess ? freeSlot(c) : NULL;
  if (r != NULL) {
    r->kind = OP_RECV;
    r->n = n;
    r->grouped = n > 1;
    r->filled = 0;
    r->seq = c->seq;
    c->seq += (uint64_t)n;
    for (int i = 0; i < n; i++) {
      r->b[i].data = data[i];
      r->b[i].desc = desc[i];
      r->b[i].capacity = sizes[i];
      r->b[i].tag = tags ? tags[i] : 0;
      r->b[i].size = 0;
    }
    res = issue(c, r);
    if (res == ncclSuccess) *request = r;
  }
  if (res == ncclSuccess) res = postPending(c);
  if (res == ncclSuccess) res = ofiPingCheck(c);
  ofiEpUnlock(e);
  return res;
}

/* ---------------------------------------------------------------- iflush */

ncclResult_t ofiIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  ofiComm* c = checkComm(recvComm, 0, "iflush");
  if (c == NULL || request == NULL || n < 1 || n > OFI_MAX_RECVS || data == NULL || sizes == NULL) {
    OFI_WARN("iflush: bad arguments (n %d)", n);
    return ncclInternalError;
  }
  *request = NULL;
  ofiDev* d = c->own.dev;
  /* Bytes written into GPU memory by the NIC may still be on their way when the completion arrives; a
   * read through the NIC from the same memory pushes them out (PCIe ordering). Host memory needs
   * nothing, except when CHORUS_OFI_FORCE_FLUSH asks for the read anyway (tests, odd platforms). */
  int idx = -1;
  ofiMrHandle* mh = NULL;
  for (int i = 0; i < n && idx < 0; i++) {
    ofiMrHandle* m = ofiMrCheck(mhandles ? mhandles[i] : NULL, "iflush");
    if (mhandles != NULL && mhandles[i] != NULL && m == NULL) return ncclInternalError;
    if (m != NULL && m->entry != NULL && sizes[i] > 0 && (m->type == NCCL_PTR_CUDA || ofiConf.forceFlush))
      idx = i, mh = m;
  }
  if (idx < 0 || !d->rma) return ncclSuccess; /* NULL request: nothing to flush */
  ofiEp* e = c->own.ep;
  ofiEpLock(e);
  ofiProgress(e);
  ncclResult_t res = (ncclResult_t)c->own.failed;
  ofiRequest* r = res == ncclSuccess ? freeSlot(c) : NULL;
  if (r != NULL) {
    ofiMrEntry* reg = mh->entry;
    r->kind = OP_FLUSH;
    r->n = 1;
    r->grouped = 0;
    r->raddr = (d->mrMode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)data[idx] : (uint64_t)((uintptr_t)data[idx] - reg->base);
    r->rkey = reg->key;
    r->flushLen = sizes[idx] < 4 ? (size_t)sizes[idx] : 4;
    r->b[0].size = 0;
    res = issue(c, r);
    if (res == ncclSuccess) *request = r;
  } else if (res == ncclSuccess) {
    /* A NULL request would tell the core the flush is done. */
    res = ofiFail(&c->own, ncclInternalError, "iflush: all %d requests of the comm are in flight", c->nReqs);
  }
  ofiEpUnlock(e);
  return res;
}

/* ---------------------------------------------------------------- test */

ncclResult_t ofiTest(void* request, int* done, int* sizes) {
  ofiRequest* r = request;
  if (r == NULL || done == NULL || !r->used || r->comm == NULL || r->comm->magic != ofiCommMagic()) {
    OFI_WARN("test: invalid or already completed request %p", request);
    return ncclInternalError;
  }
  ofiComm* c = r->comm;
  ofiEp* e = c->own.ep;
  *done = 0;
  /* With a progress thread the bytes move without us: a request not done yet needs no lock, and a
   * busy lock (the thread inside the provider) is no reason to wait; unless the comm's liveness
   * check is overdue (half the probe interval), which only a caller holding the lock runs: a thread
   * that kept the lock whenever we tried must not hide a vanished peer. */
  if (e->threadOn && __atomic_load_n(&r->nDone, __ATOMIC_ACQUIRE) < r->n &&
      !__atomic_load_n(&c->own.failed, __ATOMIC_ACQUIRE)) {
    if (pthread_mutex_trylock(e->lock) != 0) {
      const int64_t since = ofiNowNs() - __atomic_load_n(&c->checkedNs, __ATOMIC_RELAXED);
      if (ofiConf.pingMs <= 0 || since < ofiConf.pingMs * 500000LL) return ncclSuccess;
      ofiEpLock(e);
    }
  } else {
    ofiEpLock(e);
  }
  ofiProgress(e);
  ncclResult_t res = postPending(c);
  listPending(c);
  if (res == ncclSuccess) res = ofiPingCheck(c);
  if (res == ncclSuccess && r->nDone == r->n) {
    for (int i = 0; sizes != NULL && i < r->n; i++) sizes[i] = r->b[i].size > INT_MAX ? INT_MAX : (int)r->b[i].size;
    r->used = 0;
    c->busy--;
    ofiEpBusy(e, -1);
    *done = 1;
  }
  ofiEpUnlock(e);
  return res;
}
