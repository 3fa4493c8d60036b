/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connection.c: listen / connect / accept / close of the libfabric net plugin, and the probe that
 * turns a dead peer into an error.
 *
 * Connections share the device's endpoints (each end uses one, taken in turn); what makes one is a
 * pair of ids. listen() takes a fresh id of its device and posts a receive for a connect message
 * tagged with it on its endpoint; the handle carries that id, a random nonce and that endpoint's
 * address. connect() inserts the address into the address vector,
 * takes an id of its own (for probes back to it) and sends the connect message {magic, nonce, its
 * id, its address}; it returns the send comm once the provider reports that message delivered.
 * accept() returns the receive comm once a connect message with the right magic and nonce arrived;
 * any other message to that tag is dropped and the receive posted again. Both calls return success
 * with a NULL comm until then (the ABI's non-blocking contract). The connect state lives in a list
 * keyed by (ctx, dev, nonce, listen id), never in the handle bytes, which come from the network.
 *
 * Probes: a comm with requests in flight that has seen no completion for CHORUS_OFI_PING_MS sends an
 * 8-byte message to the peer's probe tag. A live peer's endpoint takes it at once (every comm keeps a
 * receive posted there), even when the peer's process is busy or stopped. A dead peer makes the
 * provider fail the send (connection refused or reset) or, as ofi_rxm does, retry the connection
 * forever: a probe not taken within CHORUS_OFI_PEER_TIMEOUT_MS fails the comm with ncclRemoteError,
 * instead of leaving a receive waiting forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ofi_plugin.h"

#define OFI_LISTEN_MAGIC 0x4f4c534eu
#define OFI_COMM_MAGIC 0x4f434f4du

typedef struct {
  ofiOwner own;
  uint32_t magic;
  int accepted;     /* the connection was handed out (one per listen comm) */
  int got;          /* a valid connect message is in msg */
  ofiHandle h;
  ofiOp op;
  ofiConnectMsg msg;
  ofiMrEntry* mr;   /* registration of this struct (msg) when the provider needs one */
  ncclProfilerCallback_t prof;
} ofiListenComm;

typedef struct ofiConnecting {
  struct ofiConnecting* next;
  void* ctx;
  int dev;
  uint64_t nonce;
  uint32_t listenId;
  ofiComm* comm;
} ofiConnecting;

static pthread_mutex_t ofiConnLock = PTHREAD_MUTEX_INITIALIZER;
static ofiConnecting* ofiConnList = NULL;

static void* descOf(ofiMrEntry* e) { return e ? e->desc : NULL; }
static void cancelAndRelease(ofiComm* c);

/* ---------------------------------------------------------------- comms */

uint32_t ofiCommMagic(void) { return OFI_COMM_MAGIC; }

static void freeStorage(ofiComm* c) {
  free(c->pending);
  free(c->reqs);
  free(c->bufStore);
  free(c->opStore);
}

void ofiCommFree(ofiOwner* o) {
  ofiComm* c = (ofiComm*)o;
  ofiDev* d = o->dev;
  ofiEpBusy(o->ep, -c->busy); /* requests the core never saw done */
  for (int k = 0; c->bufStore && k < c->nReqs * c->perReq; k++) {
    if (c->bufStore[k].bounceMr) ofiMrPut(d, c->bufStore[k].bounceMr);
    free(c->bufStore[k].bounce);
  }
  if (c->ctrlMr) ofiMrPut(d, c->ctrlMr);
  c->magic = 0;
  freeStorage(c);
  free(c);
}

static ofiComm* commAlloc(ofiEp* e, int isSend) {
  ofiComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->magic = OFI_COMM_MAGIC;
  c->own.dev = e->dev;
  c->own.ep = e;
  c->own.freeFn = ofiCommFree;
  c->isSend = isSend;
  /* A send has one buffer, a receive up to OFI_MAX_RECVS: sized apart, a send comm's 256 requests
   * take a fifth of the memory they would with receive-sized slots. */
  c->nReqs = isSend ? OFI_SEND_REQUESTS : OFI_RECV_REQUESTS;
  c->perReq = isSend ? 1 : OFI_MAX_RECVS;
  size_t nBufs = (size_t)c->nReqs * (size_t)c->perReq;
  c->reqs = calloc((size_t)c->nReqs, sizeof(*c->reqs));
  c->pending = calloc((size_t)c->nReqs, sizeof(*c->pending));
  c->bufStore = calloc(nBufs, sizeof(*c->bufStore));
  c->opStore = calloc(nBufs, sizeof(*c->opStore));
  if (c->reqs == NULL || c->pending == NULL || c->bufStore == NULL || c->opStore == NULL) {
    freeStorage(c);
    free(c);
    return NULL;
  }
  for (int i = 0; i < c->nReqs; i++) {
    ofiRequest* r = &c->reqs[i];
    r->comm = c;
    r->b = &c->bufStore[(size_t)i * (size_t)c->perReq];
    r->ops = &c->opStore[(size_t)i * (size_t)c->perReq];
    for (int j = 0; j < c->perReq; j++) {
      r->ops[j].owner = &c->own;
      r->ops[j].req = r;
      r->ops[j].index = j;
    }
  }
  c->pingSend = (ofiOp){.kind = OP_PING_SEND, .owner = &c->own};
  c->pingRecv = (ofiOp){.kind = OP_PING_RECV, .owner = &c->own};
  c->connectOp = (ofiOp){.kind = OP_CONNECT_SEND, .owner = &c->own};
  c->lastProgressNs = ofiNowNs();
  return c;
}

/* Register the comm's own control buffers (probe and connect message) when the provider needs it. */
static ncclResult_t commRegisterCtrl(ofiComm* c) {
  ofiDev* d = c->own.dev;
  if (!ofiMrNeeded(d, NCCL_PTR_HOST)) return ncclSuccess;
  return ofiMrGet(d, c, sizeof(*c), NCCL_PTR_HOST, FI_SEND | FI_RECV, &c->ctrlMr);
}

static ncclResult_t postPingRecv(ofiComm* c) {
  ssize_t rc = fi_trecv(c->own.ep->ep, &c->pingIn, sizeof(c->pingIn), descOf(c->ctrlMr), FI_ADDR_UNSPEC,
                        ofiCtrlTag(OFI_CTRL_PING, c->id), 0, &c->pingRecv.ctx);
  ncclResult_t res = ofiPost(&c->own, &c->pingRecv, rc, "posting the probe receive");
  if (res == ncclInProgress) res = ncclSuccess; /* posted again at the next progress of this comm */
  return res;
}

void ofiOnPing(ofiOp* op, int ok) {
  ofiComm* c = (ofiComm*)op->owner;
  if (op->kind == OP_PING_RECV && ok) (void)postPingRecv(c); /* a probe from the peer: absorb the next one */
  if (op->kind == OP_PING_SEND && ok) { /* the peer's endpoint took it: alive */
    c->probing = 0;
    c->lastProgressNs = ofiNowNs();
  }
  /* A failed probe send has already failed the comm (endpoint.c). */
}

ncclResult_t ofiPingCheck(ofiComm* c) {
  if (ofiConf.pingMs <= 0 || c->busy == 0 || c->own.failed) return ncclSuccess;
  ofiDev* d = c->own.dev;
  if (!c->pingRecv.posted) (void)postPingRecv(c);
  int64_t now = ofiNowNs();
  __atomic_store_n(&c->checkedNs, now, __ATOMIC_RELAXED);
  if (!c->probing) {
    if (now - c->lastProgressNs < ofiConf.pingMs * 1000000LL) return ncclSuccess;
    c->probing = 1;
    c->pingSentNs = now;
    c->pingOut++;
  }
  /* A live peer's endpoint takes a small message at once, even when its process is stuck. A
   * provider that cannot reach the peer fails the send, or (ofi_rxm) keeps refusing it (EAGAIN) or
   * keeps it queued while it retries the connection: the probe's age tells. */
  if (ofiConf.peerTimeoutMs > 0 && now - c->pingSentNs > ofiConf.peerTimeoutMs * 1000000LL)
    return ofiFail(&c->own, ncclRemoteError,
                   "device %s: the peer of connection %u has not taken a probe in %lld ms (%s): it is gone or "
                   "unreachable (CHORUS_OFI_PEER_TIMEOUT_MS)",
                   d->name, c->id, (long long)ofiConf.peerTimeoutMs,
                   c->pingSend.posted ? "the probe was sent and never completed"
                                      : "the provider refused to send it all along, as it does while it cannot reach "
                                        "the peer or while the endpoint's send queue stays full");
  if (c->pingSend.posted) return ncclSuccess;
  ssize_t rc = fi_tsend(c->own.ep->ep, &c->pingOut, sizeof(c->pingOut), descOf(c->ctrlMr), c->peer,
                        ofiCtrlTag(OFI_CTRL_PING, c->peerId), &c->pingSend.ctx);
  ncclResult_t res = ofiPost(&c->own, &c->pingSend, rc, "sending a probe to the peer");
  return res == ncclInProgress ? ncclSuccess : res; /* refused for now: tried again at the next call */
}

/* ---------------------------------------------------------------- listen */

static void listenFree(ofiOwner* o) {
  ofiListenComm* lc = (ofiListenComm*)o;
  if (lc->mr) ofiMrPut(o->dev, lc->mr);
  lc->magic = 0;
  free(lc);
}

static ncclResult_t postConnectRecv(ofiListenComm* lc) {
  lc->op = (ofiOp){.kind = OP_CONNECT_RECV, .owner = &lc->own};
  ssize_t rc = fi_trecv(lc->own.ep->ep, &lc->msg, sizeof(lc->msg), descOf(lc->mr), FI_ADDR_UNSPEC,
                        ofiCtrlTag(OFI_CTRL_CONNECT, lc->h.listenId), 0, &lc->op.ctx);
  ncclResult_t res = ofiPost(&lc->own, &lc->op, rc, "posting the connect receive");
  return res; /* ncclInProgress: accept() posts it */
}

ncclResult_t ofiListen(void* ctx, int dev, void* handle, void** listenComm) {
  if (handle == NULL || listenComm == NULL) return ncclInternalError;
  *listenComm = NULL;
  if (dev < 0 || dev >= ofiNDevs) {
    OFI_WARN("listen: device %d out of range [0,%d)", dev, ofiNDevs);
    return ncclInternalError;
  }
  ofiDev* d = &ofiDevs[dev];
  ncclResult_t res = ofiDevOpen(d);
  if (res != ncclSuccess) return res;
  ofiListenComm* lc = calloc(1, sizeof(*lc));
  if (lc == NULL) {
    OFI_WARN("listen: out of memory");
    return ncclSystemError;
  }
  ofiEp* e = ofiDevPickEp(d); /* the handle names it; the accepted comm uses it */
  lc->magic = OFI_LISTEN_MAGIC;
  lc->own.dev = d;
  lc->own.ep = e;
  lc->own.freeFn = listenFree;
  lc->prof = ctx ? ((ofiCtx*)ctx)->prof : NULL;
  if (d->addrLen > OFI_MAX_ADDR) {
    OFI_WARN("listen: the endpoint address of %s is %zu bytes, more than a handle holds (%d)", d->name, d->addrLen,
             OFI_MAX_ADDR);
    free(lc);
    return ncclInternalError;
  }
  lc->h.magic = OFI_HANDLE_MAGIC;
  chrPluginRandom(&lc->h.nonce, sizeof(lc->h.nonce));
  lc->h.listenId = ofiDevNewId(d);
  lc->h.addrLen = (uint32_t)d->addrLen;
  memcpy(lc->h.addr, e->addr, d->addrLen);
  ofiEpLock(e);
  if (ofiMrNeeded(d, NCCL_PTR_HOST)) res = ofiMrGet(d, lc, sizeof(*lc), NCCL_PTR_HOST, FI_RECV, &lc->mr);
  if (res == ncclSuccess) {
    res = postConnectRecv(lc);
    if (res == ncclInProgress) res = ncclSuccess;
  }
  if (res != ncclSuccess) {
    ofiOwnerRelease(&lc->own);
    ofiEpUnlock(e);
    return res;
  }
  ofiEpUnlock(e);
  _Static_assert(sizeof(ofiHandle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &lc->h, sizeof(lc->h));
  *listenComm = lc;
  return ncclSuccess;
}

ncclResult_t ofiCloseListen(void* listenComm) {
  ofiListenComm* lc = listenComm;
  if (lc == NULL) return ncclSuccess;
  if (lc->magic != OFI_LISTEN_MAGIC) return ncclInternalError;
  ofiEp* e = lc->own.ep;
  ofiEpLock(e);
  if (lc->op.posted) fi_cancel(&e->ep->fid, &lc->op.ctx);
  ofiOwnerRelease(&lc->own);
  ofiEpUnlock(e);
  return ncclSuccess;
}

/* ---------------------------------------------------------------- accept */

/* A message arrived on a listen comm's connect tag (lock held): keep it if it is ours. */
void ofiOnConnectRecv(ofiOp* op) {
  ofiListenComm* lc = (ofiListenComm*)op->owner;
  const ofiConnectMsg* m = &lc->msg;
  const char* why = NULL;
  if (op->len != sizeof(*m)) why = "wrong length";
  else if (m->magic != OFI_CONNECT_MAGIC) why = "bad magic";
  else if (m->nonce != lc->h.nonce) why = "wrong nonce (meant for another connection)";
  else if (m->addrLen == 0 || m->addrLen != lc->own.dev->addrLen) why = "bad address length";
  else if (m->senderId == 0 || m->senderId > OFI_ID_MAX) why = "bad sender id";
  if (why == NULL) {
    lc->got = 1;
    return;
  }
  OFI_INFO(NCCL_NET, "ignoring a connect message to listen id %u on %s: %s", lc->h.listenId, lc->own.dev->name, why);
  ncclResult_t res = postConnectRecv(lc);
  if (res != ncclSuccess && res != ncclInProgress) return; /* the listen comm has failed */
}

ncclResult_t ofiAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  ofiListenComm* lc = listenComm;
  if (recvComm == NULL || lc == NULL || lc->magic != OFI_LISTEN_MAGIC) return ncclInternalError;
  *recvComm = NULL;
  if (lc->accepted) {
    OFI_WARN("accept called again on a listen comm whose connection was already accepted");
    return ncclInternalError;
  }
  ofiDev* d = lc->own.dev;
  ofiEp* e = lc->own.ep;
  ofiEpLock(e);
  ofiProgress(e);
  ncclResult_t res = (ncclResult_t)lc->own.failed;
  if (res == ncclSuccess && !lc->got && !lc->op.posted) { /* the provider was busy when we tried */
    res = postConnectRecv(lc);
    if (res == ncclInProgress) res = ncclSuccess;
  }
  if (res != ncclSuccess || !lc->got) {
    ofiEpUnlock(e);
    return res;
  }
  ofiComm* c = commAlloc(e, 0);
  if (c == NULL) {
    ofiEpUnlock(e);
    OFI_WARN("accept: out of memory");
    return ncclSystemError;
  }
  char err[OFI_ERR_LEN];
  c->id = lc->h.listenId;
  c->peerId = lc->msg.senderId;
  c->prof = lc->prof;
  res = ofiAvInsert(d, lc->msg.addr, lc->msg.addrLen, &c->peer, err, sizeof(err));
  if (res != ncclSuccess) OFI_WARN("accept on %s: the sender's address: %s", d->name, err);
  if (res == ncclSuccess) res = commRegisterCtrl(c);
  if (res == ncclSuccess) res = postPingRecv(c);
  if (res != ncclSuccess) {
    ofiOwnerRelease(&c->own);
    ofiEpUnlock(e);
    return res;
  }
  lc->accepted = 1;
  ofiEpUnlock(e);
  *recvComm = c;
  return ncclSuccess;
}

/* ---------------------------------------------------------------- connect */

static ncclResult_t validateHandle(const ofiDev* d, const ofiHandle* h) {
  if (h->magic != OFI_HANDLE_MAGIC) {
    OFI_WARN("connect: the handle is not from this plugin (bad magic 0x%llx)", (unsigned long long)h->magic);
    return ncclInternalError;
  }
  if (h->addrLen == 0 || h->addrLen > OFI_MAX_ADDR || h->addrLen != d->addrLen) {
    OFI_WARN("connect: the handle's address is %u bytes; device %s uses %zu-byte addresses", h->addrLen, d->name,
             d->addrLen);
    return ncclInternalError;
  }
  if (h->listenId == 0 || h->listenId > OFI_ID_MAX) {
    OFI_WARN("connect: the handle's listen id %u is out of range", h->listenId);
    return ncclInternalError;
  }
  return ncclSuccess;
}

/* Start a connection on endpoint e (its lock held): address, comm, connect message. */
static ncclResult_t startConnect(ofiEp* e, void* ctx, const ofiHandle* h, ofiComm** out) {
  ofiDev* d = e->dev;
  ofiComm* c = commAlloc(e, 1);
  if (c == NULL) {
    OFI_WARN("connect: out of memory");
    return ncclSystemError;
  }
  char err[OFI_ERR_LEN];
  ncclResult_t res = ofiAvInsert(d, h->addr, h->addrLen, &c->peer, err, sizeof(err));
  if (res != ncclSuccess) OFI_WARN("connect on %s: the listener's address: %s", d->name, err);
  c->id = ofiDevNewId(d);
  c->peerId = h->listenId;
  c->prof = ctx ? ((ofiCtx*)ctx)->prof : NULL;
  c->connectMsg = (ofiConnectMsg){.magic = OFI_CONNECT_MAGIC, .nonce = h->nonce, .senderId = c->id,
                                  .addrLen = (uint32_t)d->addrLen};
  memcpy(c->connectMsg.addr, e->addr, d->addrLen);
  if (res == ncclSuccess) res = commRegisterCtrl(c);
  if (res == ncclSuccess) res = postPingRecv(c);
  if (res != ncclSuccess) {
    ofiOwnerRelease(&c->own);
    return res;
  }
  *out = c;
  return ncclSuccess;
}

ncclResult_t ofiConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  if (handle == NULL || sendComm == NULL) return ncclInternalError;
  *sendComm = NULL;
  if (dev < 0 || dev >= ofiNDevs) {
    OFI_WARN("connect: device %d out of range [0,%d)", dev, ofiNDevs);
    return ncclInternalError;
  }
  ofiDev* d = &ofiDevs[dev];
  ncclResult_t res = ofiDevOpen(d);
  if (res != ncclSuccess) return res;
  ofiHandle h;
  memcpy(&h, handle, sizeof(h));
  res = validateHandle(d, &h);
  if (res != ncclSuccess) return res;
  /* One thread drives a connection's connect calls; the list finds its state between them. */
  pthread_mutex_lock(&ofiConnLock);
  ofiConnecting* st = ofiConnList;
  while (st && !(st->ctx == ctx && st->dev == dev && st->nonce == h.nonce && st->listenId == h.listenId)) st = st->next;
  pthread_mutex_unlock(&ofiConnLock);
  if (st == NULL) {
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
      OFI_WARN("connect: out of memory");
      return ncclSystemError;
    }
    ofiEp* e = ofiDevPickEp(d);
    ofiEpLock(e);
    res = startConnect(e, ctx, &h, &st->comm);
    ofiEpUnlock(e);
    if (res != ncclSuccess) {
      free(st);
      return res;
    }
    *st = (ofiConnecting){.ctx = ctx, .dev = dev, .nonce = h.nonce, .listenId = h.listenId, .comm = st->comm};
    pthread_mutex_lock(&ofiConnLock);
    st->next = ofiConnList;
    ofiConnList = st;
    pthread_mutex_unlock(&ofiConnLock);
  }

  ofiComm* c = st->comm;
  ofiEp* e = c->own.ep;
  ofiEpLock(e);
  ofiProgress(e);
  res = (ncclResult_t)c->own.failed;
  if (res == ncclSuccess && !c->connectOp.posted && !c->connectOp.done) {
    ssize_t rc = fi_tsend(e->ep, &c->connectMsg, sizeof(c->connectMsg), descOf(c->ctrlMr), c->peer,
                          ofiCtrlTag(OFI_CTRL_CONNECT, c->peerId), &c->connectOp.ctx);
    res = ofiPost(&c->own, &c->connectOp, rc, "sending the connect message");
    if (res == ncclInProgress) res = ncclSuccess; /* sent at the next call */
  }
  int finished = res != ncclSuccess || c->connectOp.done;
  if (finished) {
    pthread_mutex_lock(&ofiConnLock);
    for (ofiConnecting** l = &ofiConnList; *l; l = &(*l)->next)
      if (*l == st) {
        *l = st->next;
        break;
      }
    pthread_mutex_unlock(&ofiConnLock);
    free(st);
    if (res != ncclSuccess) {
      cancelAndRelease(c);
    } else {
      *sendComm = c;
    }
  }
  ofiEpUnlock(e);
  return res;
}

/* Drop unfinished connects made through ctx (the core gave up on them). */
void ofiConnectForget(void* ctx) {
  for (;;) {
    pthread_mutex_lock(&ofiConnLock);
    ofiConnecting** l = &ofiConnList;
    while (*l && (*l)->ctx != ctx) l = &(*l)->next;
    ofiConnecting* st = *l;
    if (st != NULL) *l = st->next;
    pthread_mutex_unlock(&ofiConnLock);
    if (st == NULL) return;
    ofiEp* e = st->comm->own.ep;
    ofiEpLock(e);
    cancelAndRelease(st->comm);
    ofiEpUnlock(e);
    free(st);
  }
}

/* ---------------------------------------------------------------- close */

/* Cancel what can be cancelled and let the comm go once the provider is done with it (lock held).
 * Receives can be cancelled; sends finish (or fail) on their own and are waited for. */
static void cancelAndRelease(ofiComm* c) {
  ofiForgetPending(c);
  for (int i = 0; i < c->nReqs; i++)
    for (int j = 0; j < c->perReq; j++)
      if (c->reqs[i].ops[j].posted && c->reqs[i].ops[j].kind == OP_RECV)
        fi_cancel(&c->own.ep->ep->fid, &c->reqs[i].ops[j].ctx);
  if (c->pingRecv.posted) fi_cancel(&c->own.ep->ep->fid, &c->pingRecv.ctx);
  ofiOwnerRelease(&c->own);
}

static ncclResult_t closeComm(void* comm, int isSend) {
  ofiComm* c = comm;
  if (c == NULL) return ncclSuccess;
  if (c->magic != OFI_COMM_MAGIC || c->isSend != isSend) {
    OFI_WARN("close%s: %p is not a %s comm of this plugin", isSend ? "Send" : "Recv", comm, isSend ? "send" : "receive");
    return ncclInternalError;
  }
  ofiEp* e = c->own.ep;
  ofiEpLock(e);
  cancelAndRelease(c);
  ofiEpUnlock(e);
  return ncclSuccess;
}

ncclResult_t ofiCloseSend(void* sendComm) { return closeComm(sendComm, 1); }
ncclResult_t ofiCloseRecv(void* recvComm) { return closeComm(recvComm, 0); }
