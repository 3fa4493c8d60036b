/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * endpoint.c: one device's endpoints (fabric, domain, address vector, then per endpoint the endpoint
 * and its completion queue), the completion loop that finishes posted operations, the progress
 * threads (CHORUS_OFI_PROGRESS_THREADS), and the bookkeeping every owner of operations (comm, listen
 * comm) shares: ops in flight, the first failure, and freeing only once the provider has given back
 * every operation that points into the owner.
 *
 * Everything here runs with the endpoint's lock held except ofiDevOpen, ofiEpLock/Unlock and the
 * progress thread's loop, which take it.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ofi_plugin.h"

#define OFI_CQ_BATCH 16

static void closeFid(struct fid* f) {
  if (f != NULL) fi_close(f);
}

static void stopThread(ofiEp* e) {
  if (!e->threadOn) return;
  pthread_mutex_lock(e->lock);
  e->stop = 1;
  pthread_cond_signal(&e->wake);
  pthread_mutex_unlock(e->lock);
  pthread_join(e->thread, NULL);
  e->threadOn = 0;
}

/* Undo a partial open (device lock held). */
static void devClose(ofiDev* d) {
  for (int i = 0; i < OFI_MAX_EPS; i++) stopThread(&d->eps[i]);
  if (d->flushMr != NULL) ofiMrPut(d, d->flushMr);
  d->flushMr = NULL;
  free(d->flushBuf);
  d->flushBuf = NULL;
  for (int i = 0; i < OFI_MAX_EPS; i++) {
    ofiEp* e = &d->eps[i];
    closeFid(e->ep ? &e->ep->fid : NULL);
    closeFid(e->cq ? &e->cq->fid : NULL);
    e->ep = NULL, e->cq = NULL;
  }
  closeFid(d->av ? &d->av->fid : NULL);
  closeFid(d->domain ? &d->domain->fid : NULL);
  closeFid(d->fabric ? &d->fabric->fid : NULL);
  d->av = NULL, d->domain = NULL, d->fabric = NULL;
  d->nEps = 0;
  d->open = 0;
}

ncclResult_t ofiAvInsert(ofiDev* d, const void* addr, size_t len, fi_addr_t* out, char* err, size_t errLen) {
  (void)len; /* the provider knows its address length; the caller checked it against ours */
  int rc = fi_av_insert(d->av, addr, 1, out, 0, NULL);
  if (rc != 1) {
    snprintf(err, errLen, "fi_av_insert: %s", rc < 0 ? fi_strerror(-rc) : "address not inserted");
    return ncclSystemError;
  }
  return ncclSuccess;
}

#define DEV_TRY(call, what)                                                                            \
  do {                                                                                                 \
    int rc_ = (call);                                                                                  \
    if (rc_ != 0) {                                                                                    \
      OFI_WARN("device %s (%s): %s failed: %s", d->name, d->info->fabric_attr->prov_name, what,        \
               fi_strerror(rc_ < 0 ? -rc_ : rc_));                                                     \
      goto fail_close;                                                                                 \
    }                                                                                                  \
  } while (0)

static void* progressMain(void* arg);

/* Endpoint i with its own completion queue, bound to the shared address vector (device lock held). */
static int openEp(ofiDev* d, int i) {
  ofiEp* e = &d->eps[i];
  struct fi_cq_attr cqAttr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  DEV_TRY(fi_cq_open(d->domain, &cqAttr, &e->cq, NULL), "fi_cq_open");
  DEV_TRY(fi_endpoint(d->domain, d->info, &e->ep, NULL), "fi_endpoint");
  d->nEps = i + 1;
  DEV_TRY(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  DEV_TRY(fi_ep_bind(e->ep, &d->av->fid, 0), "fi_ep_bind(av)");
  DEV_TRY(fi_enable(e->ep), "fi_enable");
  size_t len = sizeof(e->addr);
  DEV_TRY(fi_getname(&e->ep->fid, e->addr, &len), "fi_getname");
  if (i > 0 && len != d->addrLen) {
    OFI_WARN("device %s: endpoint %d has a %zu-byte address, endpoint 0 a %zu-byte one", d->name, i, len, d->addrLen);
    return -1;
  }
  d->addrLen = len;
  return 0;
fail_close:
  return -1;
}

static ncclResult_t devOpenLocked(ofiDev* d) {
  if (d->open && d->pid == getpid()) return ncclSuccess;
  if (d->open) {
    /* Opened by the process we were forked from: its objects (and threads) are not ours. */
    OFI_INFO(NCCL_NET, "device %s: opening new endpoints in this process (pid %d, parent's was %d)", d->name,
             (int)getpid(), (int)d->pid);
    d->open = 0;
    d->nEps = 0;
    d->av = NULL, d->domain = NULL, d->fabric = NULL;
    d->mrs = NULL, d->flushBuf = NULL, d->flushMr = NULL;
    pthread_mutex_init(&d->mrLock, NULL); /* a thread of the parent may have held it at the fork */
  }
  for (int i = 0; i < OFI_MAX_EPS; i++) {
    ofiEp* e = &d->eps[i];
    memset(e, 0, sizeof(*e));
    e->dev = d;
    e->index = i;
    e->lock = d->threads ? &e->ownLock : &d->lock;
    pthread_mutex_init(&e->ownLock, NULL);
    pthread_cond_init(&e->wake, NULL);
  }
  struct fi_info* info = d->info;
  DEV_TRY(fi_fabric(info->fabric_attr, &d->fabric, NULL), "fi_fabric");
  DEV_TRY(fi_domain(d->fabric, info, &d->domain, NULL), "fi_domain");
  struct fi_av_attr avAttr = {.type = info->domain_attr->av_type != FI_AV_UNSPEC ? info->domain_attr->av_type
                                                                                  : FI_AV_TABLE};
  DEV_TRY(fi_av_open(d->domain, &avAttr, &d->av, NULL), "fi_av_open");
  /* A registration bound to an endpoint (FI_MR_ENDPOINT) serves that endpoint only: one then. */
  int want = d->wantEps;
  if (want > 1 && (d->mrMode & FI_MR_ENDPOINT)) {
    OFI_INFO(NCCL_NET, "device %s: one endpoint, not %d (the provider binds registrations to an endpoint)", d->name,
             want);
    want = 1;
  }
  for (int i = 0; i < want; i++)
    if (openEp(d, i) != 0) goto fail_close;
  char err[OFI_ERR_LEN];
  if (ofiAvInsert(d, d->eps[0].addr, d->addrLen, &d->self, err, sizeof(err)) != ncclSuccess) {
    OFI_WARN("device %s: own address: %s", d->name, err);
    goto fail_close;
  }
  d->pid = getpid();
  d->open = 1;
  if (d->rma) { /* flush reads land here; registered once */
    d->flushBuf = aligned_alloc(4096, 4096);
    if (d->flushBuf == NULL || ofiMrGet(d, d->flushBuf, 4096, NCCL_PTR_HOST, FI_READ | FI_WRITE, &d->flushMr) != ncclSuccess) {
      OFI_WARN("device %s: cannot set up the flush buffer", d->name);
      goto fail_close;
    }
  }
  for (int i = 0; d->threads && i < d->nEps; i++) {
    int rc = pthread_create(&d->eps[i].thread, NULL, progressMain, &d->eps[i]);
    if (rc != 0) {
      OFI_WARN("device %s: cannot start the progress thread of endpoint %d: %s", d->name, i, strerror(rc));
      goto fail_close;
    }
    d->eps[i].threadOn = 1;
  }
  if (d->nextId == 0) chrPluginRandom(&d->nextId, sizeof(d->nextId)); /* ids of one process do not restart at 1 */
  if (d->nextKey == 0) chrPluginRandom(&d->nextKey, sizeof(d->nextKey));
  OFI_INFO(NCCL_NET, "device %s: %d endpoint%s open (%s, %zu-byte address, mr_mode 0x%llx)%s", d->name, d->nEps,
           d->nEps > 1 ? "s" : "", d->info->fabric_attr->prov_name, d->addrLen, (unsigned long long)d->mrMode,
           d->threads ? ", a progress thread each" : "");
  return ncclSuccess;
fail_close:
  devClose(d);
  return ncclSystemError;
}

ncclResult_t ofiDevOpen(ofiDev* d) {
  pthread_mutex_lock(&d->lock);
  ncclResult_t res = devOpenLocked(d);
  pthread_mutex_unlock(&d->lock);
  return res;
}

ofiEp* ofiDevPickEp(ofiDev* d) {
  return &d->eps[__atomic_fetch_add(&d->nextEp, 1, __ATOMIC_RELAXED) % (unsigned)d->nEps];
}

uint32_t ofiDevNewId(ofiDev* d) {
  uint32_t id;
  do {
    id = __atomic_fetch_add(&d->nextId, 1, __ATOMIC_RELAXED) & OFI_ID_MAX;
  } while (id == 0);
  return id;
}

/* An entry point waits for the lock; a progress thread that sees it waiting steps aside. */
void ofiEpLock(ofiEp* e) {
  __atomic_add_fetch(&e->waiters, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(e->lock);
  __atomic_sub_fetch(&e->waiters, 1, __ATOMIC_RELAXED);
}

void ofiEpUnlock(ofiEp* e) { pthread_mutex_unlock(e->lock); }

void ofiEpBusy(ofiEp* e, int delta) {
  const int was = e->busy;
  e->busy += delta;
  if (was == 0 && e->busy > 0 && e->threadOn) pthread_cond_signal(&e->wake);
}

ncclResult_t ofiFail(ofiOwner* o, ncclResult_t res, const char* fmt, ...) {
  if (o->failed) return (ncclResult_t)o->failed;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->failMsg, sizeof(o->failMsg), fmt, ap);
  va_end(ap);
  __atomic_store_n(&o->failed, (int)res, __ATOMIC_RELEASE); /* test() looks without the lock */
  OFI_WARN("%s", o->failMsg);
  return res;
}

ncclResult_t ofiPost(ofiOwner* o, ofiOp* op, ssize_t rc, const char* what) {
  if (rc == 0) {
    op->posted = 1;
    op->done = 0;
    o->inflight++;
    return ncclSuccess;
  }
  if (rc == -FI_EAGAIN) return ncclInProgress; /* queue full: the caller retries later */
  return ofiFail(o, ncclSystemError, "device %s: %s failed: %s", o->dev->name, what, fi_strerror((int)-rc));
}

/* Errors that mean the other side is gone or unreachable. */
static int remoteErrno(int e) {
  /* FI_ECANCELED: only close cancels our ops; a provider that cancels one has lost the connection. */
  return e == FI_ECANCELED || e == FI_ECONNREFUSED || e == FI_ECONNRESET || e == FI_ECONNABORTED || e == FI_ENOTCONN ||
         e == FI_EHOSTUNREACH || e == FI_ETIMEDOUT || e == FI_ESHUTDOWN || e == EPIPE || e == FI_EADDRNOTAVAIL;
}

static void unlinkZombie(ofiEp* e, ofiOwner* o) {
  for (ofiOwner** l = &e->zombies; *l; l = &(*l)->nextZombie)
    if (*l == o) {
      *l = o->nextZombie;
      return;
    }
}

/* An op is back from the provider: account for it, then hand it to whoever understands it. */
static void finishOp(ofiEp* e, ofiOp* op, int ok) {
  ofiOwner* o = op->owner;
  op->posted = 0;
  op->done = 1;
  o->inflight--;
  if (o->closing) {
    if (o->closing == 2 && o->inflight == 0) { /* a zombie: nothing refers to it any more */
      unlinkZombie(e, o);
      o->freeFn(o);
    }
    return;
  }
  switch (op->kind) {
    case OP_SEND:
    case OP_RECV:
    case OP_FLUSH: if (ok) ofiOnData(op); break;
    case OP_CONNECT_RECV: if (ok) ofiOnConnectRecv(op); break;
    case OP_PING_SEND:
    case OP_PING_RECV: ofiOnPing(op, ok); break;
    default: break; /* OP_CONNECT_SEND: connect() looks at done/failed itself */
  }
}

static const char* opName(int kind) {
  switch (kind) {
    case OP_SEND: return "send";
    case OP_RECV: return "receive";
    case OP_CONNECT_SEND: return "connect message";
    case OP_CONNECT_RECV: return "wait for a connect message";
    case OP_PING_SEND: return "probe of the peer";
    case OP_PING_RECV: return "probe receive";
    case OP_FLUSH: return "flush read";
    default: return "operation";
  }
}

static void handleError(ofiEp* e) {
  ofiDev* d = e->dev;
  struct fi_cq_err_entry err;
  memset(&err, 0, sizeof(err));
  ssize_t rc = fi_cq_readerr(e->cq, &err, 0);
  if (rc < 0) {
    if (rc != -FI_EAGAIN) OFI_WARN("device %s: fi_cq_readerr: %s", d->name, fi_strerror((int)-rc));
    return;
  }
  ofiOp* op = err.op_context;
  if (op == NULL) {
    OFI_WARN("device %s: completion error without an operation: %s", d->name, fi_strerror(err.err));
    return;
  }
  ofiOwner* o = op->owner;
  if (o->closing) { /* cancelled by close, or failing after it: nobody is waiting */
    finishOp(e, op, 0);
    return;
  }
  char prov[160];
  const char* provText = fi_cq_strerror(e->cq, err.prov_errno, err.err_data, prov, sizeof(prov));
  if (err.err == FI_ETRUNC && (op->kind == OP_RECV)) {
    ofiFail(o, ncclSystemError,
            "device %s: a message is %zu bytes longer than the posted receive of %zu bytes (%s; provider: %s)", d->name,
            err.olen, err.len, fi_strerror(err.err), provText ? provText : "");
  } else {
    ofiFail(o, remoteErrno(err.err) ? ncclRemoteError : ncclSystemError, "device %s: %s failed: %s (provider: %s)",
            d->name, opName(op->kind), fi_strerror(err.err), provText ? provText : "");
  }
  op->len = 0;
  finishOp(e, op, 0);
}

/* Completions of one endpoint; how many ops they finished. */
static int readCompletions(ofiEp* e) {
  int finished = 0;
  for (int rounds = 0; rounds < 64; rounds++) {
    struct fi_cq_tagged_entry ent[OFI_CQ_BATCH];
    ssize_t n = fi_cq_read(e->cq, ent, OFI_CQ_BATCH);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      handleError(e);
      finished++;
      continue;
    }
    if (n < 0) {
      OFI_WARN("device %s: fi_cq_read: %s", e->dev->name, fi_strerror((int)-n));
      break;
    }
    for (ssize_t i = 0; i < n; i++) {
      ofiOp* op = ent[i].op_context;
      if (op == NULL) continue;
      op->len = ent[i].len;
      op->data = ent[i].data;
      finishOp(e, op, 1);
    }
    finished += (int)n;
    if (n < OFI_CQ_BATCH) break;
  }
  return finished;
}

/* One round on one endpoint: completions, then what waits. Completions made room: hand over what
 * waits on every comm of the endpoint, not only the one being called (a core may poll only its
 * receives while its sends wait in our queue). */
static int progressEp(ofiEp* e) {
  int n = readCompletions(e);
  if (e->pendingComms != NULL) ofiPostPendingAll(e);
  return n;
}

void ofiProgress(ofiEp* e) {
  ofiDev* d = e->dev;
  if (!d->open) return;
  if (d->threads) {
    progressEp(e);
    return;
  }
  /* One lock for the device: every endpoint moves on every call, so no comm waits for another's. */
  for (int i = 0; i < d->nEps; i++) progressEp(&d->eps[i]);
}

/* The progress thread of an endpoint: reads its completion queue (where a provider with manual
 * progress moves the bytes) while the core has requests on it; sleeps otherwise, waking every
 * millisecond for the provider's connection handshakes and the peers' probes. Between rounds it lets
 * a waiting entry point take the lock, and yields the CPU when a round finished nothing. */
static void* progressMain(void* arg) {
  ofiEp* e = arg;
  pthread_mutex_lock(e->lock);
  while (!e->stop) {
    if (e->busy == 0 && e->pendingComms == NULL) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 1000000;
      if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&e->wake, e->lock, &until);
      if (e->stop) break;
    }
    const int n = progressEp(e);
    pthread_mutex_unlock(e->lock);
    if (n == 0 || __atomic_load_n(&e->waiters, __ATOMIC_RELAXED) > 0) sched_yield();
    pthread_mutex_lock(e->lock);
  }
  pthread_mutex_unlock(e->lock);
  return NULL;
}

/* At unload or exit an endpoint's lock may be held for good: by the very thread running exit (a
 * provider library's SIGSEGV handler that calls exit inside one of our calls, as libinfinipath's
 * does) or by a thread that will never run again. Waiting for it would hang the process instead of
 * ending it, so the wait is bounded, and a thread whose lock cannot be had is left to the exit. */
#define OFI_EXIT_LOCK_WAIT_MS 2000

void ofiStopThreads(void) {
  const int64_t until = ofiNowNs() + OFI_EXIT_LOCK_WAIT_MS * 1000000LL;
  for (int d = 0; d < ofiNDevs; d++) {
    if (!ofiDevs[d].open || ofiDevs[d].pid != getpid()) continue;
    for (int i = 0; i < OFI_MAX_EPS; i++) {
      ofiEp* e = &ofiDevs[d].eps[i];
      if (!e->threadOn) continue;
      int locked = 0;
      while (!(locked = pthread_mutex_trylock(e->lock) == 0) && ofiNowNs() < until) usleep(1000);
      if (!locked) continue; /* nothing logged: the logger's own lock may be the one held */
      pthread_mutex_unlock(e->lock);
      stopThread(e);
    }
  }
}

void ofiOwnerRelease(ofiOwner* o) {
  ofiEp* e = o->ep;
  o->closing = 1; /* completions of its ops are only counted from now on */
  if (o->inflight > 0) {
    /* Cancelled operations come back through the CQ; wait a little for them, then leave the owner
     * for ofiProgress to free when the last one is back (its memory must outlive every op). */
    int64_t end = ofiNowNs() + ofiConf.closeWaitMs * 1000000LL;
    while (o->inflight > 0 && ofiNowNs() < end) {
      ofiProgress(e);
      if (o->inflight == 0) break;
      ofiEpUnlock(e);
      sched_yield();
      ofiEpLock(e);
    }
    if (o->inflight > 0) {
      OFI_INFO(NCCL_NET, "device %s: %d operation(s) still with the provider at close; freed when they complete",
               o->dev->name, o->inflight);
      o->closing = 2;
      o->nextZombie = e->zombies;
      e->zombies = o;
      return;
    }
  }
  o->freeFn(o);
}
