/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_sends.cu: copy-engine sends between ranks (ce_sends.h says how they run).
 *
 * Per rank, per peer and class (links[0].conn: 0 for sends and receives, 1 for transfers the planner
 * makes of collectives, numbered apart because NCCL lets two ranks interleave their collectives and
 * their sends differently): an outgoing pair (this rank sends: the copy stream, the queue of sends
 * whose receiver's buffer is yet to be published, the agent thread, the receivers' allocations
 * opened by CUDA IPC or mapped by file descriptor, the launch kernel's per-slot sync words) and an
 * incoming one (this rank receives: its exports by file descriptor, ce_vmm.h, and its staging
 * buffer, ce_buffers.h). Each pair's mailbox is a shared-memory segment
 * (ce_segment.h) named after both ends' process tokens and rank serials and the class.
 */
#include <cuda.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "hostdev/ce_mailbox.h"
#include "device/copy_engine/ce_buffers.h"
#include "device/copy_engine/ce_kernels.h"
#include "device/copy_engine/ce_segment.h"
#include "device/copy_engine/ce_sends.h"
#include "device/common/stream_values.h"
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_time.h"
#include "device/common/driver_entry.h"

#define AGENT_NAP_NS 100000000L
#define AGENT_POLL_NS 20000L
#define CLASSES CHR_WORK_CLASSES /* links[0].conn: CHR_WORK_CLASS_P2P, CHR_WORK_CLASS_COLL (hostdev/work.h) */
/* The launch kernel: CTAs shared by its copies, but at least COPY_CTAS_MIN each (build switches, so
 * that a run can compare settings with CUDA_DEFINES; docs/perf/gpu-2gpu.md has the ones tried). */
#ifndef CHR_CE_COPY_CTAS
#define CHR_CE_COPY_CTAS 64
#endif
#define COPY_CTAS CHR_CE_COPY_CTAS
#define COPY_CTAS_MIN 8

/* ---- stream memory operations on the mailboxes (stream_values.h) ---- */

static ncclResult_t streamWait(cudaStream_t s, const char* word, uint64_t v, int rank) {
  return chrDevStreamWaitGeq(s, word, v, rank, "a copy-engine mailbox");
}

static ncclResult_t streamWrite(cudaStream_t s, const char* word, uint64_t v, int rank) {
  return chrDevStreamWrite(s, (void*)word, v, rank, "a copy-engine mailbox");
}

/* ---- per rank ---- */

struct cePending {
  uint64_t k, bytes;
  const void* src;
};

struct cePair {
  struct chrCeMap* map;   /* NULL until first used */
  uint64_t k;          /* transfers numbered */
};

/* This rank's sends to one peer. */
struct ceOut {
  struct cePair pair;
  struct chrDevRank* rk;
  int peer;
  pthread_mutex_t lock; /* the queue, the opened buffers */
  struct cePending queue[CHR_CE_SLOTS]; /* kernel-copied sends whose receiver's buffer is not yet published */
  uint64_t head, tail;
  cudaStream_t copy;
  struct chrCeCopySync* syncs; /* per slot, for the copy kernel (device memory) */
  struct chrCeOpenedSet opened;
  pthread_t agent;
  int agentRunning;
  int quit;
};

/* This rank's receives from one peer. */
struct ceIn {
  struct cePair pair;
  struct chrCeExports exports; /* receive buffers CUDA IPC cannot share, by file descriptor (ce_vmm.h) */
  struct chrCeStaging staging; /* the rest of those */
  cudaStream_t copy;           /* pulls (cePull): created at the first */
  struct chrCeOpenedSet opened; /* the senders' buffers opened to pull from (only the rank's calls use it) */
};

/* One engine work of a launch, between chrCeSignal and the end of chrCePost. */
struct ceItem {
  uint64_t k;
  char* staged;        /* a receive's staging region, copied out after its wait; NULL: none */
  int byKernel;        /* a send the launch's kernel copies (else the copy engine, or a receive) */
  const char* pullSrc; /* a receive this rank pulls: the sender's buffer in this process; NULL: none */
};

#if CHR_CE_TIMING
/* CHR_CE_TIMING builds: how often a call or a publish came after the GPU had finished the pair's
 * transfer before (so the GPU may be waiting on the host), printed at the end (chrCeDestroy). */
#define LATE_LOG 1024
struct ceLate {
  uint64_t calls[2], lateCalls[2]; /* per role: posts, and posts whose transfer before was done */
  uint64_t published, latePublished;
  uint64_t postLog[2][LATE_LOG][2], pubLog[LATE_LOG][2]; /* transfer, CLOCK_REALTIME ns */
};
/* One post or publish of transfer k: logged with the wall clock, and counted late when the pair's
 * transfer before had already ended. */
static void noteLate(uint64_t* count, uint64_t (*log)[2], uint64_t* late, struct chrCeMailbox* mb, uint64_t k) {
  const uint64_t at = __atomic_fetch_add(count, 1, __ATOMIC_RELAXED) % LATE_LOG;
  log[at][0] = k;
  log[at][1] = chrDevRealNs();
  if (k > 1 && __atomic_load_n(chrCeDone(mb, CHR_CE_RECV, k - 1), __ATOMIC_ACQUIRE) >= k - 1)
    __atomic_add_fetch(late, 1, __ATOMIC_RELAXED);
}
/* The counts, then every logged post and publish, to stderr (when the rank's engine state ends). */
static void printLate(const struct ceLate* l, int rank) {
  fprintf(stderr, "chorus ce late rank %d: sends posted %llu (%llu after the transfer before was done), receives "
          "posted %llu (%llu), kernel copies published %llu (%llu)\n", rank,
          (unsigned long long)l->calls[CHR_CE_SEND], (unsigned long long)l->lateCalls[CHR_CE_SEND],
          (unsigned long long)l->calls[CHR_CE_RECV], (unsigned long long)l->lateCalls[CHR_CE_RECV],
          (unsigned long long)l->published, (unsigned long long)l->latePublished);
  for (int role = 0; role < 2; role++)
    for (uint64_t i = 0; i < l->calls[role] && i < LATE_LOG; i++)
      fprintf(stderr, "chorus ce host rank %d %s k %llu at %llu\n", rank, role == CHR_CE_SEND ? "sendpost" : "recvpost",
              (unsigned long long)l->postLog[role][i][0], (unsigned long long)l->postLog[role][i][1]);
  for (uint64_t i = 0; i < l->published && i < LATE_LOG; i++)
    fprintf(stderr, "chorus ce host rank %d publish k %llu at %llu\n", rank, (unsigned long long)l->pubLog[i][0],
            (unsigned long long)l->pubLog[i][1]);
}
#endif

struct chrCeRank {
#if CHR_CE_TIMING
  struct ceLate late;
#endif
  struct ceOut* out;   /* nRanks * CLASSES, [peer * CLASSES + class] */
  struct ceIn* in;     /* nRanks * CLASSES */
  struct ceItem* items;
  int itemsCap;
  int aborted;
  struct chrDevCeStats counts; /* the send and receive counts (the rest is summed over the pairs); from the rank's calls */
};

static char* word(const struct chrCeMap* m, const uint64_t* hostWord) {
  return m->dev + ((const char*)hostWord - (const char*)m->seg);
}

static ncclResult_t ensureState(struct chrDevRank* rk) {
  if (rk->ce) return ncclSuccess;
  if (!rk->cfg.copyEngine) /* its kernels were not loaded at create (a lazy load could wait forever) */
    return chrDevFail(ncclInternalError, "rank %d: a copy-engine send on a rank made without copyEngine", rk->cfg.rank);
  if (!chrDevStreamValuesSupported() || !chrCeBuffersSupported())
    return chrDevFail(ncclInvalidUsage, "rank %d: copy-engine sends need the driver's stream memory operations "
                      "(cuStreamWaitValue64), not found; unset CHORUS_GPU_CE_*MIN_BYTES", rk->cfg.rank);
  const int n = rk->cfg.nRanks;
  struct chrCeRank* ce = (struct chrCeRank*)calloc(1, sizeof *ce);
  if (ce) ce->out = (struct ceOut*)calloc((size_t)n * CLASSES, sizeof *ce->out);
  if (ce) ce->in = (struct ceIn*)calloc((size_t)n * CLASSES, sizeof *ce->in);
  if (!ce || !ce->out || !ce->in) {
    if (ce) {
      free(ce->out);
      free(ce->in);
      free(ce);
    }
    return chrDevFail(ncclSystemError, "rank %d: out of memory for copy-engine sends", rk->cfg.rank);
  }
  for (int i = 0; i < n * CLASSES; i++) {
    ce->out[i].rk = rk;
    ce->out[i].peer = i / CLASSES;
    pthread_mutex_init(&ce->out[i].lock, NULL);
  }
  rk->ce = ce;
  return ncclSuccess;
}

/* The mailbox of the transfers of class cls from rank `from` to rank `to`, one of which is this rank. */
static ncclResult_t openPair(struct chrDevRank* rk, struct cePair* pair, int from, int to, int cls) {
  if (pair->map) return ncclSuccess;
  const int peer = from == rk->cfg.rank ? to : from;
  const struct chrDevPeerId* id = &rk->peerId[peer];
  if (!id->known)
    return chrDevFail(ncclInternalError, "rank %d: a copy-engine send with rank %d, which is not connected", rk->cfg.rank,
                      peer);
  const uint64_t mineToken = chrDevProcToken(), mineSerial = rk->serial;
  const int iSend = from == rk->cfg.rank;
  char name[96];
  snprintf(name, sizeof name, "/chorus-ce-%016llx-%llx-%016llx-%llx-%d",
           (unsigned long long)(iSend ? mineToken : id->token), (unsigned long long)(iSend ? mineSerial : id->serial),
           (unsigned long long)(iSend ? id->token : mineToken), (unsigned long long)(iSend ? id->serial : mineSerial), cls);
  return chrCeMapSegment(name, &pair->map);
}

static void raiseError(struct chrDevRank* rk) {
  uint32_t none = CHR_DEV_ERR_NONE;
  __atomic_compare_exchange_n((uint32_t*)&rk->flags[1], &none, (uint32_t)CHR_DEV_ERR_ENGINE, 0, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
}

/* Before an opened buffer is closed (chrCeQuiesceFn): the copies that may write into it are over
 * (the copy stream's, and the launch kernel's last transfer into it). 0 when the rank aborted. */
static int quiesce(void* arg, uint64_t lastKernelK) {
  struct ceOut* o = (struct ceOut*)arg;
  if (cudaStreamSynchronize(o->copy) != cudaSuccess) return 0;
  if (lastKernelK == 0) return 1;
  const uint64_t* done = chrCeDone(&o->pair.map->seg->box, CHR_CE_RECV, lastKernelK);
  while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < lastKernelK) {
    if (o->rk->flags[0]) return 0;
    sched_yield();
  }
  return 1;
}

/* The receiver's buffer in this process (ce_buffers.h). Under o->lock. */
static char* peerBuffer(struct ceOut* o, const struct chrCePostData* d, uint64_t kernelK) {
  return chrCePeerBuffer(&o->opened, d, o->rk->peerId[o->peer].token, o->rk->cfg.cudaDev, kernelK, quiesce, o);
}

/* 1 when the receiver's post d fits transfer s. */
static int fits(const struct ceOut* o, const struct chrCePostData* d, uint64_t bytes) {
  return !o->rk->ce->aborted && d->ok && d->bytes == bytes;
}

/* 1 when the slot's transfer before k is over (its copy reads the slot's published buffer, and done
 * words only grow per slot). */
static int slotDone(struct chrCeMailbox* mb, uint64_t k) {
  return k <= CHR_CE_SLOTS || __atomic_load_n(chrCeDone(mb, CHR_CE_RECV, k), __ATOMIC_ACQUIRE) >= k - CHR_CE_SLOTS;
}

/* A send whose receiver has not posted: waits up to rk->cfg.ceWaitUs for its post (then *theirs
 * holds it) and returns 1, or 0 (the kernel copies it: its agent publishes the buffer). The wait is
 * bounded, so a receiver that posts much later (or after a host exchange with this rank) costs this
 * call that long and no more. */
static int awaitPost(struct chrDevRank* rk, struct chrCeMailbox* mb, uint64_t k, struct chrCePost* theirs) {
  const uint64_t end = chrDevNowNs() + (uint64_t)rk->cfg.ceWaitUs * 1000u;
  for (;;) {
    if (chrCeOtherPosted(mb, CHR_CE_SEND, k, theirs)) return 1;
    if (rk->flags[0] || chrDevNowNs() >= end) return 0;
    sched_yield();
  }
}

/* The engine copy of transfer k on `stream` (a pair's copy stream, queued after the launch's kernel,
 * never from an agent: ce_sends.h): both ready words, the copy, then both done words, the peer's
 * (peerRole) first. ok = 0, or a step that cannot be queued: the done words are written from here
 * instead and the rank's error word is raised, so no stream waits forever. */
static void engineCopy(struct chrDevRank* rk, cudaStream_t stream, struct chrCeMap* m, uint64_t k, void* dst,
                       const void* src, uint64_t bytes, int peerRole, int ok) {
  struct chrCeMailbox* mb = &m->seg->box;
  const int rank = rk->cfg.rank;
  if (ok && bytes > 0) {
    ok = streamWait(stream, word(m, &mb->ready[CHR_CE_SEND][0]), k, rank) == ncclSuccess &&
         streamWait(stream, word(m, &mb->ready[CHR_CE_RECV][0]), k, rank) == ncclSuccess &&
         cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream) == cudaSuccess;
    cudaGetLastError();
  }
  if (ok)
    ok = streamWrite(stream, word(m, (const uint64_t*)chrCeDone(mb, peerRole, k)), k, rank) == ncclSuccess &&
         streamWrite(stream, word(m, (const uint64_t*)chrCeDone(mb, 1 - peerRole, k)), k, rank) == ncclSuccess;
  if (!ok && !__atomic_load_n(&rk->ce->aborted, __ATOMIC_ACQUIRE)) { /* (an abort has written them all) */
    raiseError(rk);
    __atomic_store_n(chrCeDone(mb, peerRole, k), k, __ATOMIC_RELEASE);
    __atomic_store_n(chrCeDone(mb, 1 - peerRole, k), k, __ATOMIC_RELEASE);
  }
}

/* A send whose receiver posted first, from the sender's call, queued after the launch's kernel: the
 * copy stream waits for both ready words, copies, writes both done words. When it cannot, the done
 * words are written from here and the error word is raised. */
static void issueOne(struct ceOut* o, const struct cePending* s, const struct chrCePostData* d) {
  char* dst = NULL;
  pthread_mutex_lock(&o->lock);
  const int fit = fits(o, d, s->bytes);
  if (fit) dst = peerBuffer(o, d, 0);
  pthread_mutex_unlock(&o->lock);
  engineCopy(o->rk, o->copy, o->pair.map, s->k, dst, s->src, s->bytes, CHR_CE_RECV, fit && dst != NULL);
  chrCeRelease(&o->pair.map->seg->box, s->k);
}

/* Before a sender's buffer opened for pulls is closed: the pulls that read it are over. */
static int quiesceIn(void* arg, uint64_t lastKernelK) {
  (void)lastKernelK;
  struct ceIn* in = (struct ceIn*)arg;
  return in->copy == NULL || cudaStreamSynchronize(in->copy) == cudaSuccess;
}

/* A receive of `bytes` whose sender posted first (*theirs, its send buffer as chrCeDescribeSource
 * put it): the sender's buffer opened in this process by CUDA IPC, for this rank to pull, or NULL
 * (its sender's kernel copies it: a buffer CUDA IPC cannot share, one that cannot be opened here,
 * or a sender in this process when CHORUS_GPU_CE_PULL is 1; such a sender posts its buffer's
 * address, which this process reaches). */
static const char* pullSource(struct chrDevRank* rk, struct ceIn* in, int peer, const struct chrCePost* theirs,
                              uint64_t bytes) {
  struct chrCePostData sd;
  memcpy(&sd, theirs->bytes, sizeof sd);
  const struct chrDevPeerId* from = &rk->peerId[peer];
  const int reachable = from->same ? rk->cfg.cePull == 2 && sd.way == CHR_CE_BY_PTR : sd.way == CHR_CE_BY_IPC;
  if (!sd.ok || sd.bytes != bytes || !reachable) return NULL;
  return chrCePeerBuffer(&in->opened, &sd, from->token, rk->cfg.cudaDev, 0, quiesceIn, in);
}

/* A receive this rank pulls (its sender called first and is told so by this rank's post, so its
 * kernel copies nothing and waits for done[SEND]): queued after the launch's kernel, as a sender's
 * engine copy is, on the pair's copy stream: both ready words, the copy, both done words. When it
 * cannot, the done words are written from here and the error word is raised. */
static void issuePull(struct chrDevRank* rk, struct ceIn* in, uint64_t k, void* dst, const char* src, uint64_t bytes) {
  const int ok = in->copy != NULL || cudaStreamCreateWithFlags(&in->copy, cudaStreamNonBlocking) == cudaSuccess;
  cudaGetLastError();
  engineCopy(rk, in->copy, in->pair.map, k, dst, src, bytes, CHR_CE_SEND, ok);
}

/* Publishes, in transfer order, the buffer of every kernel-copied send whose receiver has posted and
 * whose slot's transfer before is over, and releases its slot. Host work only: nothing here queues
 * GPU work (ce_sends.h says why), and nothing waits under the lock, which the user's calls take.
 * Returns 1 when a head waits for the slot's transfer before (the agent then polls). From the
 * sender's call and from the agent. */
static int publishReady(struct ceOut* o) {
  int blocked = 0;
  pthread_mutex_lock(&o->lock);
  struct chrCeMailbox* mb = &o->pair.map->seg->box;
  while (o->head != o->tail) {
    const struct cePending* s = &o->queue[o->head % CHR_CE_SLOTS];
    struct chrCePost theirs;
    if (!chrCeOtherPosted(mb, CHR_CE_SEND, s->k, &theirs)) break;
    if (!slotDone(mb, s->k) && !__atomic_load_n(&o->rk->ce->aborted, __ATOMIC_ACQUIRE)) {
      blocked = 1;
      break;
    }
    struct chrCePostData d;
    memcpy(&d, theirs.bytes, sizeof d);
    uint64_t dst = 0;
    if (fits(o, &d, s->bytes))
      dst = d.way == CHR_CE_PULLED ? CHR_CE_DST_PULLED : (uint64_t)(uintptr_t)peerBuffer(o, &d, s->k);
    if (dst == 0 && s->bytes > 0 && !__atomic_load_n(&o->rk->ce->aborted, __ATOMIC_ACQUIRE)) raiseError(o->rk);
#if CHR_CE_TIMING
    noteLate(&o->rk->ce->late.published, o->rk->ce->late.pubLog, &o->rk->ce->late.latePublished, mb, s->k);
#endif
    chrCePublishDst(mb, s->k, dst);
    chrCeRelease(mb, s->k);
    o->head++;
  }
  pthread_mutex_unlock(&o->lock);
  return blocked;
}

static void* agentMain(void* arg) {
  struct ceOut* o = (struct ceOut*)arg;
  cudaSetDevice(o->rk->cfg.cudaDev); /* the current device is per thread (CUDA IPC opens on it) */
  uint32_t* bell = &o->pair.map->seg->bell;
  for (;;) {
    const uint32_t seen = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
    const int blocked = publishReady(o);
    if (__atomic_load_n(&o->quit, __ATOMIC_ACQUIRE)) return NULL;
    if (blocked) { /* a slot's transfer before is still copying: poll until it ends */
      const struct timespec poll = {0, AGENT_POLL_NS};
      nanosleep(&poll, NULL);
      continue;
    }
    /* Shared futex (both processes map the word); the nap bounds a missed wake-up and the quit. */
    const struct timespec nap = {0, AGENT_NAP_NS};
    syscall(SYS_futex, bell, FUTEX_WAIT, seen, &nap, NULL, 0);
  }
}

static void ringBell(struct chrCeMap* m) {
  __atomic_add_fetch(&m->seg->bell, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &m->seg->bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static ncclResult_t startOut(struct chrDevRank* rk, struct ceOut* o) {
  if (o->agentRunning) return ncclSuccess;
  ncclResult_t res = ncclSuccess;
  if (o->copy == NULL) CHR_DEV_CUDA_GOTO(cudaStreamCreateWithFlags(&o->copy, cudaStreamNonBlocking), res, fail);
  if (o->syncs == NULL) {
    CHR_DEV_CUDA_GOTO(cudaMalloc((void**)&o->syncs, sizeof(struct chrCeCopySync) * CHR_CE_SLOTS), res, fail);
    CHR_DEV_CUDA_GOTO(cudaMemset(o->syncs, 0, sizeof(struct chrCeCopySync) * CHR_CE_SLOTS), res, fail);
  }
  if (pthread_create(&o->agent, NULL, agentMain, o) != 0)
    return chrDevFail(ncclSystemError, "rank %d: cannot start the copy-engine agent for rank %d", rk->cfg.rank, o->peer);
  o->agentRunning = 1;
fail:
  return res;
}

/* A work's index into out / in (its peer and class), and its role. */
static int pairIndex(const struct chrWork* w, int* role) {
  *role = w->pattern == CHR_PAT_P2P_SEND ? CHR_CE_SEND : CHR_CE_RECV;
  return w->links[0].peer * CLASSES + w->links[0].conn;
}

static struct cePair* pairOf(struct chrDevRank* rk, const struct chrWork* w, int* role) {
  const int i = pairIndex(w, role);
  return *role == CHR_CE_SEND ? &rk->ce->out[i].pair : &rk->ce->in[i].pair;
}

static uint64_t bytesOf(const struct chrWork* w) { return w->len * (uint64_t)w->typeSize; }

ncclResult_t chrCeSignal(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream) {
  ncclResult_t res = ensureState(rk);
  if (res != ncclSuccess) return res;
  struct chrCeRank* ce = rk->ce;
  if (n > ce->itemsCap) {
    struct ceItem* grown = (struct ceItem*)realloc(ce->items, sizeof(struct ceItem) * (size_t)n);
    if (grown == NULL) return chrDevFail(ncclSystemError, "rank %d: out of memory for %d engine sends", rk->cfg.rank, n);
    ce->items = grown;
    ce->itemsCap = n;
  }
  const int me = rk->cfg.rank;
  for (int i = 0; i < n; i++) {
    const struct chrWork* w = &works[i];
    const int peer = w->links[0].peer, cls = w->links[0].conn;
    if (peer < 0 || peer >= rk->cfg.nRanks || peer == me || cls >= CLASSES)
      return chrDevFail(ncclInternalError, "rank %d: an engine transfer with rank %d, class %d", me, peer, cls);
    int role;
    struct cePair* pair = pairOf(rk, w, &role);
    res = openPair(rk, pair, role == CHR_CE_SEND ? me : peer, role == CHR_CE_SEND ? peer : me, cls);
    if (res != ncclSuccess) return res;
    if (role == CHR_CE_SEND) {
      res = startOut(rk, &ce->out[peer * CLASSES + cls]);
      if (res != ncclSuccess) return res;
    }
    const uint64_t k = ++pair->k;
    ce->items[i].k = k;
    struct chrCeMailbox* mb = &pair->map->seg->box;
    /* Free once transfer k - CHR_CE_SLOTS is issued or published: only an end that many transfers
     * ahead waits. */
    while (!chrCeSlotFree(mb, k)) {
      if (rk->flags[0]) return chrDevFail(ncclRemoteError, "rank %d: aborted waiting for a copy-engine mailbox slot", me);
      sched_yield();
    }
    res = streamWrite(stream, word(pair->map, &mb->ready[role][0]), k, me);
    if (res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

/* The kernel's copy of a send, transfer k of out pair o. */
static struct chrCeCopyJob copyJob(struct ceOut* o, const struct chrWork* w, uint64_t k) {
  struct chrCeMap* m = o->pair.map;
  struct chrCeMailbox* mb = &m->seg->box;
  const int slot = (int)(k % CHR_CE_SLOTS);
  struct chrCeCopyJob j;
  j.src = (const char*)(uintptr_t)w->sendbuff;
  j.bytes = bytesOf(w);
  j.k = k;
  j.dstK = (const volatile unsigned long long*)word(m, &mb->dstK[slot]);
  j.dstPtr = (const volatile unsigned long long*)word(m, &mb->dstPtr[slot]);
  j.ready = (const volatile unsigned long long*)word(m, &mb->ready[CHR_CE_RECV][0]);
  j.done = (unsigned long long*)word(m, chrCeDone(mb, CHR_CE_RECV, k));
  j.senderDone = (const volatile unsigned long long*)word(m, chrCeDone(mb, CHR_CE_SEND, k));
  j.sync = o->syncs + slot;
  return j;
}

static ncclResult_t launchBatch(struct chrDevRank* rk, struct chrCeGroupArgs* a, const struct chrWork* works,
                               int from, int to, cudaStream_t stream) {
  struct chrCeRank* ce = rk->ce;
  cudaError_t e = chrCeLaunchGroup(a, stream);
  a->nJobs = a->nWaits = 0;
  if (e != cudaSuccess)
    return chrDevFail(ncclUnhandledCudaError, "rank %d: launching the copy-engine kernel: %s", rk->cfg.rank,
                      cudaGetErrorString(e));
  for (int j = from; j < to; j++) /* the batch's staged receives, copied out after their waits */
    if (ce->items[j].staged) {
      const struct chrWork* w = &works[j];
      e = cudaMemcpyAsync((void*)(uintptr_t)w->recvbuff, ce->items[j].staged, bytesOf(w), cudaMemcpyDeviceToDevice,
                          stream);
      if (e != cudaSuccess)
        return chrDevFail(ncclUnhandledCudaError, "rank %d: copying a staged receive out: %s", rk->cfg.rank,
                          cudaGetErrorString(e));
    }
  return ncclSuccess;
}

/* Queues the launch's kernel: the copies of the sends by kernel, the waits for the rest. More than a
 * kernel holds go in several, one after another (then one may wait behind another). */
static ncclResult_t launchGroup(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream) {
  struct chrCeRank* ce = rk->ce;
  struct chrCeGroupArgs a;
  memset(&a, 0, sizeof a);
  a.abortFlag = (const volatile unsigned int*)rk->flagsDev;
  int jobs = 0;
  for (int i = 0; i < n; i++) jobs += ce->items[i].byKernel;
  const int perKernel = jobs < CHR_CE_GROUP_JOBS ? jobs : CHR_CE_GROUP_JOBS;
  a.ctasPerJob = perKernel > 0 && COPY_CTAS / perKernel > COPY_CTAS_MIN ? COPY_CTAS / perKernel : COPY_CTAS_MIN;
  int from = 0;
  for (int i = 0; i < n; i++) {
    int role;
    const int at = pairIndex(&works[i], &role);
    if (ce->items[i].byKernel) {
      a.job[a.nJobs++] = copyJob(&ce->out[at], &works[i], ce->items[i].k);
    } else {
      struct cePair* pair = pairOf(rk, &works[i], &role);
      a.word[a.nWaits] = (const volatile unsigned long long*)word(pair->map, chrCeDone(&pair->map->seg->box, role, ce->items[i].k));
      a.k[a.nWaits++] = ce->items[i].k;
    }
    if (a.nJobs == CHR_CE_GROUP_JOBS || a.nWaits == CHR_CE_GROUP_WAITS) {
      const ncclResult_t res = launchBatch(rk, &a, works, from, i + 1, stream);
      if (res != ncclSuccess) return res;
      from = i + 1;
    }
  }
  return launchBatch(rk, &a, works, from, n, stream);
}

ncclResult_t chrCePost(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream) {
  struct chrCeRank* ce = rk->ce;
  const int me = rk->cfg.rank;
  ncclResult_t res = ncclSuccess;
  int engine = -1; /* the launch's one send on the copy engine, if any */
  struct chrCePostData engineData;
  for (int i = 0; i < n; i++) { /* staging regions are per launch */
    int role;
    const int at = pairIndex(&works[i], &role);
    if (role == CHR_CE_RECV) ce->in[at].staging.used = 0;
  }
  for (int i = 0; i < n; i++) {
    const struct chrWork* w = &works[i];
    int role;
    const int at = pairIndex(w, &role);
    struct cePair* pair = pairOf(rk, w, &role);
    struct chrCeMailbox* mb = &pair->map->seg->box;
    struct ceItem* it = &ce->items[i];
    struct chrCePost mine, theirs;
    memset(&mine, 0, sizeof mine);
    struct chrCePostData d;
    it->staged = NULL;
    it->byKernel = 0;
    it->pullSrc = NULL;
    const int peer = w->links[0].peer;
    if (role == CHR_CE_RECV) {
      /* Its sender called first: pull it, when this launch has no engine copy yet (one GPU driving
       * two copies at once moves each at half the rate) and the sender's buffer can be opened. */
      if (engine < 0 && rk->cfg.cePull && bytesOf(w) > 0 && chrCeOtherPosted(mb, CHR_CE_RECV, it->k, &theirs) &&
          (it->pullSrc = pullSource(rk, &ce->in[at], peer, &theirs, bytesOf(w))) != NULL) {
        memset(&d, 0, sizeof d);
        d.ok = 1;
        d.way = CHR_CE_PULLED;
        d.bytes = bytesOf(w);
        d.ptr = w->recvbuff;
        engine = i;
        __atomic_add_fetch(&ce->counts.recvsPulled, 1, __ATOMIC_RELAXED);
      } else {
        const struct chrDevPeerId* from = &rk->peerId[peer];
        chrCeDescribeBuffer(w->recvbuff, bytesOf(w), from->same, (pid_t)from->pid,
                            rk->cfg.ceShareFd ? &ce->in[at].exports : NULL, &ce->in[at].staging, &d, &it->staged);
        if (d.ok && d.bytes > 0) __atomic_add_fetch(it->staged ? &ce->counts.recvsStaged
                                     : d.way == CHR_CE_BY_FD ? &ce->counts.recvsByFd : &ce->counts.recvsDirect,
                                     1, __ATOMIC_RELAXED);
      }
      memcpy(mine.bytes, &d, sizeof d);
    } else if (rk->cfg.cePull && (rk->cfg.cePull == 2 || !rk->peerId[peer].same) &&
               !chrCeOtherPosted(mb, CHR_CE_SEND, it->k, &theirs)) {
      /* so that a receiver that comes second may pull it (one that posted already will not) */
      chrCeDescribeSource(w->sendbuff, bytesOf(w), rk->peerId[peer].same, &d);
      memcpy(mine.bytes, &d, sizeof d);
    }
#if CHR_CE_TIMING
    noteLate(&ce->late.calls[role], ce->late.postLog[role], &ce->late.lateCalls[role], mb, it->k);
#endif
    int first = chrCePost(mb, role, it->k, &mine, &theirs);
    if (role == CHR_CE_RECV) {
      if (!first) ringBell(pair->map); /* the sender came first: its agent publishes this buffer (or the pull's mark) */
      if (!d.ok && res == ncclSuccess)
        res = chrDevFail(ncclSystemError, "rank %d: receive buffer %p from rank %d (%llu bytes) cannot be shared with "
                         "CUDA IPC or a file descriptor for a copy-engine send, nor a staging buffer be allocated for it (GPU memory "
                         "full?); CHORUS_GPU_CE_*MIN_BYTES=0 turn copy-engine transfers off",
                         me, (void*)(uintptr_t)w->recvbuff, w->links[0].peer, (unsigned long long)d.bytes);
      continue;
    }
    struct ceOut* o = &ce->out[at];
    struct cePending s = {it->k, bytesOf(w), (const void*)(uintptr_t)w->sendbuff};
    /* A receiver that posts during the wait may have found this post and chosen to pull: this send
     * then stays first (its kernel finds the pull's mark); pushing into a pulled receive would fail. */
    if (first && engine < 0 && rk->cfg.ceWaitUs > 0 && awaitPost(rk, mb, it->k, &theirs)) {
      struct chrCePostData td;
      memcpy(&td, theirs.bytes, sizeof td);
      if (td.way != CHR_CE_PULLED) first = 0;
    }
    if (!first && engine < 0 && slotDone(mb, it->k)) { /* the copy engine, after the kernel */
      memcpy(&engineData, theirs.bytes, sizeof engineData);
      engine = i;
      __atomic_add_fetch(&ce->counts.sendsByEngine, 1, __ATOMIC_RELAXED);
      continue;
    }
    /* The kernel copies it once the agent (or this or a later call) publishes the buffer. */
    it->byKernel = 1;
    __atomic_add_fetch(&ce->counts.sendsByKernel, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&o->lock);
    o->queue[o->tail % CHR_CE_SLOTS] = s;
    o->tail++;
    pthread_mutex_unlock(&o->lock);
    if (publishReady(o)) ringBell(o->pair.map); /* blocked on the slot's transfer before: the agent polls */
  }
  const ncclResult_t r = launchGroup(rk, works, n, stream);
  if (engine >= 0) { /* its wait for the peer must sit behind every other transfer of the launch */
    const struct chrWork* w = &works[engine];
    int role;
    const int at = pairIndex(w, &role);
    if (ce->items[engine].pullSrc) {
      issuePull(rk, &ce->in[at], ce->items[engine].k, (void*)(uintptr_t)w->recvbuff, ce->items[engine].pullSrc,
                bytesOf(w));
    } else {
      const struct cePending s = {ce->items[engine].k, bytesOf(w), (const void*)(uintptr_t)w->sendbuff};
      issueOne(&ce->out[at], &s, &engineData);
    }
  }
  return res != ncclSuccess ? res : r;
}

/* Writes the words this rank's own streams and copy streams wait on, past any transfer number: its
 * user streams' done words (every slot) and, for its copy streams, both ready words of its sends.
 * Published buffers are left as they are: a first send's kernel sees the abort flag and leaves. */
static void releaseWaits(struct chrCeRank* ce, int n) {
  const uint64_t all = ~0ull;
  for (int p = 0; p < n; p++) {
    if (ce->out[p].pair.map) {
      struct chrCeMailbox* mb = &ce->out[p].pair.map->seg->box;
      for (int slot = 0; slot < CHR_CE_SLOTS; slot++) __atomic_store_n(&mb->done[CHR_CE_SEND][slot], all, __ATOMIC_RELEASE);
      __atomic_store_n(&mb->ready[CHR_CE_SEND][0], all, __ATOMIC_RELEASE);
      __atomic_store_n(&mb->ready[CHR_CE_RECV][0], all, __ATOMIC_RELEASE);
    }
    if (ce->in[p].pair.map) { /* its user streams' done words, and both ready words for its pulls' copy stream */
      struct chrCeMailbox* mb = &ce->in[p].pair.map->seg->box;
      for (int slot = 0; slot < CHR_CE_SLOTS; slot++) __atomic_store_n(&mb->done[CHR_CE_RECV][slot], all, __ATOMIC_RELEASE);
      if (ce->in[p].copy) {
        __atomic_store_n(&mb->ready[CHR_CE_SEND][0], all, __ATOMIC_RELEASE);
        __atomic_store_n(&mb->ready[CHR_CE_RECV][0], all, __ATOMIC_RELEASE);
      }
    }
  }
}

void chrCeAbort(struct chrDevRank* rk) {
  struct chrCeRank* ce = rk->ce;
  if (ce == NULL) return;
  __atomic_store_n(&ce->aborted, 1, __ATOMIC_SEQ_CST);
  const int n = rk->cfg.nRanks * CLASSES;
  releaseWaits(ce, n);
  for (int p = 0; p < n; p++)
    if (ce->out[p].pair.map) ringBell(ce->out[p].pair.map); /* the agent publishes nothing more */
  /* Copies already queued now run and then write their done words, smaller than the ones just
   * written: give them a second (a copy stream parked on a word a live peer rewrote is left), then
   * write again. */
  const uint64_t end = chrDevNowNs() + 1000000000ull;
  for (int p = 0; p < 2 * n; p++) {
    cudaStream_t s = p < n ? ce->out[p].copy : ce->in[p - n].copy;
    while (s && cudaStreamQuery(s) == cudaErrorNotReady && chrDevNowNs() < end) sched_yield();
  }
  cudaGetLastError();
  releaseWaits(ce, n);
}

size_t chrCeDeviceBytes(const struct chrDevRank* rk) {
  const struct chrCeRank* ce = rk->ce;
  if (ce == NULL) return 0;
  size_t bytes = 0;
  for (int p = 0; p < rk->cfg.nRanks * CLASSES; p++) {
    bytes += ce->in[p].staging.held;
    if (ce->out[p].syncs != NULL) bytes += sizeof(struct chrCeCopySync) * CHR_CE_SLOTS;
  }
  return bytes;
}

void chrCeStats(struct chrDevRank* rk, struct chrDevCeStats* out) {
  memset(out, 0, sizeof *out);
  struct chrCeRank* ce = rk->ce;
  if (ce == NULL) return;
  out->sendsByEngine = __atomic_load_n(&ce->counts.sendsByEngine, __ATOMIC_RELAXED);
  out->sendsByKernel = __atomic_load_n(&ce->counts.sendsByKernel, __ATOMIC_RELAXED);
  out->recvsDirect = __atomic_load_n(&ce->counts.recvsDirect, __ATOMIC_RELAXED);
  out->recvsByFd = __atomic_load_n(&ce->counts.recvsByFd, __ATOMIC_RELAXED);
  out->recvsStaged = __atomic_load_n(&ce->counts.recvsStaged, __ATOMIC_RELAXED);
  out->recvsPulled = __atomic_load_n(&ce->counts.recvsPulled, __ATOMIC_RELAXED);
  for (int p = 0; p < rk->cfg.nRanks * CLASSES; p++) {
    struct ceOut* o = &ce->out[p];
    pthread_mutex_lock(&o->lock); /* the agent opens under it */
    out->opened += o->opened.opens;
    out->openNs += o->opened.openNs;
    pthread_mutex_unlock(&o->lock);
    out->opened += ce->in[p].opened.opens; /* senders' buffers, for pulls: opened in the rank's own calls */
    out->openNs += ce->in[p].opened.openNs;
    out->exported += ce->in[p].exports.made; /* made in the rank's own calls */
    out->exportNs += ce->in[p].exports.madeNs;
  }
}

void chrCeDestroy(struct chrDevRank* rk) {
  struct chrCeRank* ce = rk->ce;
  if (ce == NULL) return;
  chrCeTimingPrint(rk->cfg.rank); /* (a build switch's: nothing by default) */
#if CHR_CE_TIMING
  printLate(&ce->late, rk->cfg.rank);
#endif
  for (int p = 0; p < rk->cfg.nRanks * CLASSES; p++) {
    struct ceOut* o = &ce->out[p];
    if (o->agentRunning) {
      __atomic_store_n(&o->quit, 1, __ATOMIC_RELEASE);
      ringBell(o->pair.map);
      pthread_join(o->agent, NULL);
    }
    if (o->copy) {
      if (!ce->aborted) cudaStreamSynchronize(o->copy);
      cudaStreamDestroy(o->copy);
    }
    if (o->syncs) cudaFree(o->syncs); /* the rank's streams are done with its kernels (destroy's contract) */
    chrCeCloseAll(&o->opened);
    pthread_mutex_destroy(&o->lock);
    chrCeUnmapSegment(o->pair.map);
    struct ceIn* in = &ce->in[p];
    if (in->copy) {
      if (!ce->aborted) cudaStreamSynchronize(in->copy);
      cudaStreamDestroy(in->copy);
    }
    chrCeCloseAll(&in->opened);
    chrCeUnmapSegment(in->pair.map);
    chrCeStagingFree(&in->staging); /* the rank's streams are done with it (destroy's contract) */
    chrCeExportsFree(&in->exports);
  }
  free(ce->out);
  free(ce->in);
  free(ce->items);
  free(ce);
  rk->ce = NULL;
}
