/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_net.c: the proxy that carries a rank's GPU connections to other hosts (dev_net.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "transport/dev_net.h"
#include "transport/net_connect.h"
#include "transport/net_link.h"
#include "transport/net_devs.h"
#include "transport/transport_ctx.h"
#include "util/idle.h"

/* Idle longer than this (no step moved, no launch), the proxy naps a millisecond at a time instead
 * of chrIdleWait's 100 µs: a comm that sits unused costs next to nothing, and a launch wakes it. */
#define PROXY_DROWSY_NS (100ull * 1000000ull)

struct proxyEnd {
  struct chrDevNetEnd end; /* host addresses of the words; of the slots too unless end.gpuSlots */
  int peer;
  struct chrLink* link;
  uint64_t posted, done;   /* steps handed to the plugin, steps it finished */
  void* flush;             /* GPU-memory receive end: the plugin's flush of step `done`, not finished yet */
  uint64_t flushes;        /* flushes the plugin was asked for (logged when the proxy ends) */
  int staged;              /* GPU slots the plugin refused: the link's host slots, copied to and from */
  int noFlush;             /* GPU-memory receive end whose GPU orders the NIC's writes: no flush */
  int thread;              /* the proxy thread that drives it (endRoute) */
};

/* One proxy thread and the ends it drives. */
struct proxyThread {
  struct chrDevNet* net;
  int index;
  pthread_mutex_t lock; /* ends, nEnds, cap: chrDevNetAdd appends while the thread runs */
  struct proxyEnd* ends;
  int nEnds, cap;
  pthread_t thread;
  int running;
};

struct chrDevNet {
  const struct chrTransportCtx* ctx; /* its comm's view: rank, peers, bootstrap, net plugin, abort flag */
  void (*onFail)(void* arg);
  void* failArg;
  struct chrDevNetCopier copier; /* copy NULL: none */
  int warnedStaged;              /* the one WARN of ends staged through host memory is out */
  int nThreads;
  struct proxyThread threads[CHR_DEV_NET_MAX_THREADS];
  _Atomic int stop;
  _Atomic int failed;
  _Atomic uint64_t kicks;
};

ncclResult_t chrDevNetCreate(const struct chrTransportCtx* ctx, void (*onFail)(void* arg), void* arg,
                             const struct chrDevNetCopier* copier, struct chrDevNet** out) {
  struct chrDevNet* net = calloc(1, sizeof(*net));
  if (net == NULL) {
    if (copier && copier->destroy) copier->destroy(copier->arg);
    return chrFail(ncclSystemError, "comm %p rank %d: out of memory for its net proxy", ctx->owner, ctx->rank);
  }
  net->ctx = ctx;
  net->onFail = onFail;
  net->failArg = arg;
  if (copier) net->copier = *copier;
  /* Auto (0): a thread per NIC, at least 2. An end of key k goes through NIC dev[k mod NICs]
   * (chrNetDevFor) and to thread k mod threads, so with as many threads as NICs each thread drives
   * one NIC, and no NIC's traffic waits behind another's. */
  const int nics = ctx->netDevs->n > 0 ? ctx->netDevs->n : 1;
  net->nThreads = (int)chrParamInt(CHR_P_GPU_NET_PROXY_THREADS);
  if (net->nThreads == 0) net->nThreads = nics < 2 ? 2 : nics;
  if (net->nThreads > CHR_DEV_NET_MAX_THREADS) net->nThreads = CHR_DEV_NET_MAX_THREADS;
  for (int t = 0; t < net->nThreads; t++) {
    net->threads[t].net = net;
    net->threads[t].index = t;
    pthread_mutex_init(&net->threads[t].lock, NULL);
  }
  *out = net;
  return ncclSuccess;
}

int chrDevNetFailed(const struct chrDevNet* net) { return net != NULL && atomic_load(&net->failed); }

void chrDevNetKick(struct chrDevNet* net) {
  if (net) atomic_fetch_add_explicit(&net->kicks, 1, memory_order_relaxed);
}

/* A staged end's step `slot` of `bytes`, between the GPU slots and the link's host slots. */
static ncclResult_t copyStep(struct proxyThread* pt, struct proxyEnd* e, int slot, uint64_t bytes) {
  if (bytes == 0) return ncclSuccess;
  char* gpu = e->end.slots + (size_t)slot * e->end.slotBytes;
  char* host = e->link->slots[slot];
  const struct chrDevNetCopier* c = &pt->net->copier;
  ncclResult_t res = e->end.isSend ? c->copy(c->arg, pt->index, host, gpu, (size_t)bytes)
                                   : c->copy(c->arg, pt->index, gpu, host, (size_t)bytes);
  if (res != ncclSuccess)
    return chrFail(res, "GPU net end %s rank %d: staging %llu bytes through host memory: %s",
                   e->end.isSend ? "to" : "from", e->peer, (unsigned long long)bytes, chrThreadLastError());
  return ncclSuccess;
}

/* Send end: post what the kernel published, give back what the plugin finished. */
static ncclResult_t progressSend(struct proxyThread* pt, struct proxyEnd* e, int* moved) {
  const uint64_t tail = __atomic_load_n(e->end.tail, __ATOMIC_ACQUIRE);
  if (tail > e->done + CHR_STEPS)
    return chrFail(ncclInternalError, "GPU net end to rank %d: the kernel published step %llu with only %llu returned",
                   e->peer, (unsigned long long)tail, (unsigned long long)e->done);
  while (e->posted < tail) {
    const int slot = (int)(e->posted % CHR_STEPS);
    const uint64_t bytes = e->end.sizes[slot];
    if (bytes > e->end.slotBytes)
      return chrFail(ncclInternalError, "GPU net end to rank %d: step %llu of %llu bytes in a slot of %llu", e->peer,
                     (unsigned long long)e->posted, (unsigned long long)bytes, (unsigned long long)e->end.slotBytes);
    if (e->staged) CHECK(copyStep(pt, e, slot, bytes));
    CHECK(e->link->ops->post(e->link, slot, (size_t)bytes));
    e->posted++;
    *moved = 1;
  }
  while (e->done < e->posted) {
    int done = 0;
    CHECK(e->link->ops->test(e->link, (int)(e->done % CHR_STEPS), &done, NULL));
    if (!done) break;
    __atomic_store_n(e->end.head, ++e->done, __ATOMIC_RELEASE);
    *moved = 1;
  }
  return ncclSuccess;
}

static void publishRecv(struct proxyEnd* e, int* moved) {
  __atomic_store_n(e->end.tail, ++e->done, __ATOMIC_RELEASE);
  *moved = 1;
}

/* Receive end: a finished receive gets its size, then tail (slots in GPU memory: once the plugin's
 * flush of the step is done, where the GPU needs one: chrTopoNeedFlush, the plugin's forceFlush;
 * staged: once copied to them); then a receive in every slot the kernel freed, for steps its works
 * will take (need): never ahead of them, so a peer that closes its comm after its last step leaves
 * no receive of ours waiting. */
static ncclResult_t progressRecv(struct proxyThread* pt, struct proxyEnd* e, int* moved) {
  const uint64_t head = __atomic_load_n(e->end.head, __ATOMIC_ACQUIRE);
  const uint64_t need = __atomic_load_n(e->end.need, __ATOMIC_ACQUIRE);
  if (head > e->done)
    return chrFail(ncclInternalError, "GPU net end from rank %d: the kernel freed step %llu, only %llu arrived", e->peer,
                   (unsigned long long)head, (unsigned long long)e->done);
  while (e->done < e->posted) {
    const int slot = (int)(e->done % CHR_STEPS);
    if (e->flush != NULL) { /* GPUDirect: the step is published once the plugin's flush is done */
      int flushed = 0;
      CHECK(chrNetLinkFlushTest(e->link, e->flush, &flushed));
      if (!flushed) break;
      e->flush = NULL;
      publishRecv(e, moved);
      continue;
    }
    int done = 0;
    size_t bytes = 0;
    CHECK(e->link->ops->test(e->link, slot, &done, &bytes));
    if (!done) break;
    if (bytes > e->end.slotBytes) /* the plugin let more in than the slot holds: nothing to trust */
      return chrFail(ncclRemoteError, "GPU net end from rank %d: %zu bytes received into a slot of %llu", e->peer, bytes,
                     (unsigned long long)e->end.slotBytes);
    e->end.sizes[slot] = bytes;
    if (e->staged) {
      CHECK(copyStep(pt, e, slot, bytes));
    } else if (e->end.gpuSlots && !e->noFlush) {
      CHECK(chrNetLinkFlush(e->link, slot, bytes, &e->flush));
      e->flushes += e->flush != NULL;
      if (e->flush != NULL) continue;
    }
    publishRecv(e, moved);
  }
  while (e->posted < head + CHR_STEPS && e->posted < need) {
    CHECK(e->link->ops->post(e->link, (int)(e->posted % CHR_STEPS), 0));
    e->posted++;
    *moved = 1;
  }
  return ncclSuccess;
}

static void failProxy(struct chrDevNet* net, int peer) {
  WARN("comm %p rank %d: the net proxy of its GPU connections failed (rank %d: %s): its kernels are aborted",
       net->ctx->owner, net->ctx->rank, peer, chrThreadLastError());
  atomic_store(&net->failed, 1);
  if (net->onFail) net->onFail(net->failArg);
}

static void* proxyMain(void* arg) {
  struct proxyThread* pt = arg;
  struct chrDevNet* net = pt->net;
  uint64_t idleSince = chrNowNs(), kicks = atomic_load(&net->kicks);
  while (!atomic_load(&net->stop)) {
    int moved = 0;
    if (!atomic_load(&net->failed)) {
      pthread_mutex_lock(&pt->lock);
      for (int i = 0; i < pt->nEnds; i++) {
        struct proxyEnd* e = &pt->ends[i];
        if ((e->end.isSend ? progressSend(pt, e, &moved) : progressRecv(pt, e, &moved)) != ncclSuccess) {
          if (!atomic_exchange(&net->failed, 1)) failProxy(net, e->peer);
          break;
        }
      }
      pthread_mutex_unlock(&pt->lock);
    }
    const uint64_t now = chrNowNs(), k = atomic_load_explicit(&net->kicks, memory_order_relaxed);
    if (moved || k != kicks) {
      idleSince = now;
      kicks = k;
      continue;
    }
    if (now - idleSince < PROXY_DROWSY_NS && !atomic_load(&net->failed)) {
      chrIdleWait(now - idleSince);
    } else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

/* An end's route: its NIC is the rank's devices[route mod NICs] (chrNetDevFor) and its proxy thread
 * route mod threads. A ring channel's route is its key (the same NIC at both ends and on every host:
 * transport/net_devs.h); a point-to-point lane's adds both ranks, as the host links' do, so a rank's
 * peers spread over its NICs and the threads, and the two ends of a lane still agree. With as many
 * threads as NICs (the default) each thread drives one NIC. */
static unsigned endRoute(int key, int ringKeys, int me, int peer) {
  return key < ringKeys ? (unsigned)key : (unsigned)key + (unsigned)me + (unsigned)peer;
}

/* Thread t's share of ends[0 .. n). */
static int shareOf(const struct chrDevNet* net, int t, const struct proxyEnd* ends, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += ends[i].thread == t;
  return k;
}

/* Room for `more` ends in thread t's list, and the thread running: everything that can fail, done
 * before any end is listed, so a failure leaves no end of the call with the proxy. */
static ncclResult_t readyThread(struct chrDevNet* net, int t, int more) {
  struct proxyThread* pt = &net->threads[t];
  const struct chrTransportCtx* ctx = net->ctx;
  pthread_mutex_lock(&pt->lock);
  int ok = 1;
  if (pt->nEnds + more > pt->cap) {
    int cap = pt->cap ? pt->cap : 16;
    while (cap < pt->nEnds + more) cap *= 2;
    struct proxyEnd* list = realloc(pt->ends, sizeof(*list) * (size_t)cap);
    ok = list != NULL;
    if (ok) {
      pt->ends = list;
      pt->cap = cap;
    }
  }
  pthread_mutex_unlock(&pt->lock);
  if (!ok)
    return chrFail(ncclSystemError, "comm %p rank %d: out of memory for its GPU net ends", ctx->owner, ctx->rank);
  if (!pt->running) {
    if (pthread_create(&pt->thread, NULL, proxyMain, pt) != 0)
      return chrFail(ncclSystemError, "comm %p rank %d: cannot start a net proxy thread of its GPU connections",
                     ctx->owner, ctx->rank);
    pt->running = 1;
  }
  return ncclSuccess;
}

/* Lists thread t's share of ends[0 .. n) (room was made by readyThread); their links are the
 * thread's now (closed by chrDevNetDestroy) and cleared in ends[]. */
static void listEnds(struct chrDevNet* net, int t, struct proxyEnd* ends, int n) {
  struct proxyThread* pt = &net->threads[t];
  pthread_mutex_lock(&pt->lock);
  for (int i = 0; i < n; i++) {
    if (ends[i].thread != t) continue;
    pt->ends[pt->nEnds++] = ends[i];
    ends[i].link = NULL;
  }
  pthread_mutex_unlock(&pt->lock);
}

static int endTag(const struct chrTransportCtx* ctx, const struct proxyEnd* e) {
  return CHR_DEV_NET_TAG + (int)((*ctx->devGeneration & 0xffu) << 8) + e->end.key;
}

ncclResult_t chrDevNetAdd(struct chrDevNet* net, int ringKeys, int nPeers, const int* peers,
                          struct chrDevNetEnd* const* ends, const int* nEnds) {
  const struct chrTransportCtx* ctx = net->ctx;
  if (ctx->net == NULL) return chrFail(ncclInternalError, "comm %p rank %d: no net plugin open", ctx->owner, ctx->rank);
  int n = 0;
  for (int i = 0; i < nPeers; i++) n += nEnds[i];
  if (n == 0) return ncclSuccess;
  struct proxyEnd* fresh = calloc((size_t)n, sizeof(*fresh));
  struct chrNetEndReq* p = calloc((size_t)n, sizeof(*p));
  ncclResult_t res = ncclSuccess;
  if (fresh == NULL || p == NULL) {
    res = chrFail(ncclSystemError, "comm %p rank %d: out of memory for %d GPU net ends", ctx->owner, ctx->rank, n);
    goto out;
  }
  for (int i = 0, k = 0; i < nPeers; i++)
    for (int j = 0; j < nEnds[i]; j++, k++) {
      fresh[k].end = ends[i][j];
      fresh[k].peer = peers[i];
      p[k].peer = peers[i];
      p[k].isSend = fresh[k].end.isSend;
      p[k].tag = endTag(ctx, &fresh[k]);
      const int key = fresh[k].end.key, lane = key >= ringKeys;
      const int from = fresh[k].end.isSend ? ctx->rank : peers[i], to = fresh[k].end.isSend ? peers[i] : ctx->rank;
      p[k].dev = chrNetDevFor(chrNetDevsOfLink(ctx, from, to), key, lane, from, to);
      fresh[k].thread = (int)(endRoute(key, ringKeys, ctx->rank, peers[i]) % (unsigned)net->nThreads);
    }
  CHECK_GOTO(chrNetConnectAll(ctx, p, n, "connecting GPU ends to other hosts"), res, out);
  int made = 0;
  for (; made < n; made++) {
    struct proxyEnd* e = &fresh[made];
    res = chrNetLinkCreate(ctx, e->end.key, e->peer, e->end.isSend, p[made].dev, p[made].comm, (size_t)e->end.slotBytes,
                           e->end.slots, e->end.gpuSlots ? NCCL_PTR_CUDA : NCCL_PTR_HOST, &e->link);
    p[made].comm = NULL; /* the link owns it now, or closed it */
    if (res != ncclSuccess) break;
    const char* why = chrNetLinkStagedWhy(e->link);
    if (why == NULL) {
      ncclNetProperties_v12_t props;
      e->noFlush = !e->end.isSend && e->end.gpuSlots &&
                   (chrNetDevGdr(ctx->netDevs, p[made].dev) & CHR_NET_GDR_NOFLUSH) &&
                   chrNetGetProperties(ctx->net, p[made].dev, &props) == ncclSuccess && !props.forceFlush;
      continue;
    }
    if (net->copier.copy == NULL) {
      res = chrFail(ncclInternalError, "comm %p rank %d: GPU net end %s rank %d: %s, and no copier to stage through "
                    "host memory", ctx->owner, ctx->rank, e->end.isSend ? "to" : "from", e->peer, why);
      break;
    }
    e->staged = 1;
    if (!net->warnedStaged) {
      net->warnedStaged = 1;
      WARN("comm %p rank %d: %s; its GPU connections to other hosts through it stage through host memory (no "
           "GPUDirect RDMA)", ctx->owner, ctx->rank, why);
    }
  }
  if (res != ncclSuccess) {
    for (int i = 0; i < n; i++) {
      if (fresh[i].link) fresh[i].link->ops->close(fresh[i].link);
      if (p[i].comm) {
        if (fresh[i].end.isSend) chrNetCloseSend(ctx->net, p[i].comm);
        else chrNetCloseRecv(ctx->net, p[i].comm);
      }
    }
    goto out;
  }
  for (int t = 0; t < net->nThreads && res == ncclSuccess; t++) {
    const int k = shareOf(net, t, fresh, n);
    if (k > 0) res = readyThread(net, t, k);
  }
  if (res != ncclSuccess) {
    for (int i = 0; i < n; i++)
      if (fresh[i].link) fresh[i].link->ops->close(fresh[i].link);
    goto out;
  }
  for (int t = 0; t < net->nThreads; t++) listEnds(net, t, fresh, n);
  for (int i = 0, k = 0; i < nPeers; i++) {
    int gpu = 0, staged = 0;
    for (int j = 0; j < nEnds[i]; j++, k++) {
      gpu += fresh[k].end.gpuSlots && !fresh[k].staged;
      staged += fresh[k].staged;
    }
    INFO(NCCL_INIT | NCCL_NET, "comm %p rank %d: GPU connections with rank %d (another host) through the net plugin: %d "
         "ends carried by the proxy, %d of them with their slots in GPU memory (GPUDirect RDMA), %d staged through "
         "host memory by the proxy (the plugin refused their GPU memory)", ctx->owner, ctx->rank, peers[i], nEnds[i],
         gpu, staged);
  }
out:
  free(fresh);
  free(p);
  return res;
}

/* The peer of a send end whose published steps the plugin has not all finished, or -1. */
static int sendsLeft(struct chrDevNet* net) {
  int peer = -1;
  for (int t = 0; t < net->nThreads && peer < 0; t++) {
    struct proxyThread* pt = &net->threads[t];
    pthread_mutex_lock(&pt->lock);
    for (int i = 0; i < pt->nEnds && peer < 0; i++) {
      const struct proxyEnd* e = &pt->ends[i];
      if (e->end.isSend && e->done < __atomic_load_n(e->end.tail, __ATOMIC_ACQUIRE)) peer = e->peer;
    }
    pthread_mutex_unlock(&pt->lock);
  }
  return peer;
}

ncclResult_t chrDevNetDrain(struct chrDevNet* net, const char* func) {
  if (net == NULL) return ncclSuccess;
  const struct chrTransportCtx* ctx = net->ctx;
  const uint64_t timeoutNs = (uint64_t)chrParamInt(CHR_P_TIMEOUT) * 1000000000ull, start = chrNowNs();
  int warned = 0;
  for (;;) {
    if (atomic_load(&net->failed))
      return chrFail(ncclRemoteError, "%s: comm %p rank %d: its net proxy failed before its last GPU sends to other "
                     "hosts were delivered", func, ctx->owner, ctx->rank);
    const int peer = sendsLeft(net);
    if (peer < 0) return ncclSuccess;
    if (*ctx->abortFlag)
      return chrFail(ncclRemoteError, "%s: comm %p rank %d: aborted with GPU sends to rank %d not delivered", func,
                     ctx->owner, ctx->rank, peer);
    const uint64_t now = chrNowNs();
    if (timeoutNs && now - start > timeoutNs)
      return chrFail(ncclTimeout, "%s: comm %p rank %d: rank %d did not take its last GPU steps within %llu s "
                     "(CHORUS_TIMEOUT)", func, ctx->owner, ctx->rank, peer,
                     (unsigned long long)(timeoutNs / 1000000000ull));
    if (!warned && now - start > 10000000000ull) {
      warned = 1;
      WARN("%s: comm %p rank %d: still waiting after 10 s for rank %d (another host) to take the last GPU steps sent "
           "to it", func, ctx->owner, ctx->rank, peer);
    }
    chrDevNetKick(net); /* keeps the proxy from napping while it has steps to send */
    chrIdleWait(now - start);
  }
}

void chrDevNetDestroy(struct chrDevNet* net) {
  if (net == NULL) return;
  atomic_store(&net->stop, 1);
  for (int t = 0; t < net->nThreads; t++) {
    struct proxyThread* pt = &net->threads[t];
    if (pt->running) pthread_join(pt->thread, NULL);
    for (int i = 0; i < pt->nEnds; i++) {
      const struct proxyEnd* e = &pt->ends[i];
      if (e->end.gpuSlots)
        INFO(NCCL_NET, "comm %p rank %d: GPU-memory end %s rank %d (key %d): %llu steps, %s, %llu plugin flushes%s",
             net->ctx->owner, net->ctx->rank, e->end.isSend ? "to" : "from", e->peer, e->end.key,
             (unsigned long long)e->done, e->staged ? "staged through host memory" : "GPUDirect RDMA",
             (unsigned long long)e->flushes, e->noFlush ? " (none needed: the GPU orders the NIC's writes)" : "");
      e->link->ops->close(e->link);
    }
    free(pt->ends);
    pthread_mutex_destroy(&pt->lock);
  }
  if (net->copier.destroy) net->copier.destroy(net->copier.arg);
  free(net);
}
