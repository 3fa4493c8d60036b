/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_ipc.c: the IPC mode of a rank's device state (dev_ipc.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bootstrap/bootstrap.h"
#include "commstate/comm.h"
#include "cuda/dev_ipc.h"
#include "transport/dev_net.h"
#include "cuda/net_staging.h"
#include "plugin/net_plugin.h"
#include "transport/net_devs.h"
#include "util/idle.h"
#include "log/check.h"
#include "log/log.h"

#define WATCH_PERIOD_NS (100ull * 1000000ull)
#define WATCH_GRACE_NS (1000ull * 1000000ull) /* a peer gone this long while our work still runs */

struct chrDevIpc {
  struct chrDevIpc* next;   /* the watch list (under watchLock) */
  struct ncclComm* comm;
  unsigned char* connected; /* nRanks */
  _Atomic int failed;
  int watched;
  uint64_t goneSince;       /* watchdog only: when a peer was first seen gone with work in flight */
  int gonePeer;
  struct chrDevNet* net;    /* connections to ranks on other hosts (dev_net.h), made at the first */
};

static int sameHost(const struct ncclComm* comm, int r) {
  return comm->peers[r].hostHash == comm->peers[comm->rank].hostHash;
}

static pthread_mutex_t watchLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrDevIpc* watchList;
static int watchdogRunning;
static int watchStopping;   /* the process is exiting: no more CUDA calls from the watchdog */
static int atexitDone;

static void stopWatchdog(void) {
  pthread_mutex_lock(&watchLock);
  watchStopping = 1;
  pthread_mutex_unlock(&watchLock);
}

static int blobTag(const struct ncclComm* comm) { return CHR_DEV_TAG_BLOB + (int)(comm->devGeneration & 0xffffu); }

int chrDevIpcFailed(const struct chrDevIpc* ipc) { return ipc != NULL && atomic_load(&ipc->failed); }

void chrDevIpcKick(struct chrDevIpc* ipc) {
  if (ipc) chrDevNetKick(ipc->net);
}

ncclResult_t chrDevIpcDrain(struct ncclComm* comm, const char* func) {
  return comm->dev && comm->dev->ipc ? chrDevNetDrain(comm->dev->ipc->net, func) : ncclSuccess;
}

ncclResult_t chrDevIpcAttach(struct ncclComm* comm, struct chrDevRankState* st, const struct chrDevLib* lib) {
  const int n = comm->nRanks, me = comm->rank;
  struct chrDevIpc* x = calloc(1, sizeof(*x));
  if (x != NULL) x->connected = calloc((size_t)n, 1);
  if (x == NULL || x->connected == NULL) {
    if (x) free(x);
    return chrFail(ncclSystemError, "comm %p rank %d: out of memory for its GPU connections", (void*)comm, me);
  }
  x->comm = comm;
  struct chrDevRankConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.rank = me;
  cfg.nRanks = n;
  cfg.nChannels = st->shape.nChannels;
  cfg.p2pConns = st->shape.p2pLanes;
  cfg.p2pStepBytes = st->shape.p2pStepBytes;
  cfg.copyEngine = st->shape.copyEngine;
  cfg.ceWaitUs = st->shape.ceWaitUs;
  cfg.ceShareFd = st->shape.ceShareFd;
  cfg.cePull = st->shape.cePull;
  cfg.stepBytes = st->shape.stepBytes;
  cfg.llLines = st->shape.llLines;
  cfg.ringOrder = comm->ringOrder;
  cfg.cudaDev = comm->cudaDev;
  ncclResult_t res = lib->rankCreate(&cfg, &st->rank);
  if (res != ncclSuccess) {
    res = chrFail(res, "comm %p rank %d: creating its GPU state on device %d failed: %s", (void*)comm, me,
                  comm->cudaDev, lib->lastError());
    goto fail_free;
  }
  struct chrDevRankBlob blob;
  res = lib->rankExport(st->rank, &blob);
  if (res == ncclSuccess) res = lib->rankConnect(st->rank, 1, &me, &blob);
  if (res != ncclSuccess) {
    res = chrFail(res, "comm %p rank %d: exporting its GPU memory (CUDA IPC) failed: %s", (void*)comm, me,
                  lib->lastError());
    goto fail_destroy_rank;
  }
  x->connected[me] = 1;
  /* Sends are queued by the peer's bootstrap until it asks: no rank waits for another here. Ranks
   * on other hosts connect through the net instead (dev_net.h). */
  for (int r = 0; r < n; r++) {
    if (r == me || !sameHost(comm, r)) continue;
    CHECK_GOTO(chrBootstrapSend(comm->bootstrap, r, blobTag(comm), &blob, sizeof(blob)), res, fail_destroy_rank);
  }
  int local = 0;
  for (int r = 0; r < n; r++) local += r != me && sameHost(comm, r);
  INFO(NCCL_INIT, "comm %p rank %d: GPU state on device %d (%d channels, %zu KiB SIMPLE and %d KiB LL slots), exported "
       "to %d peers through CUDA IPC, %d on other hosts", (void*)comm, me, comm->cudaDev, cfg.nChannels,
       cfg.stepBytes >> 10, cfg.llLines * 8 / 1024, local, n - 1 - local);
  st->ipc = x;
  return ncclSuccess;
fail_destroy_rank:
  lib->rankDestroy(st->rank);
  st->rank = NULL;
fail_free:
  free(x->connected);
  free(x);
  return res;
}

/* The proxy found a link broken: the rank's kernels must not wait for it forever. */
static void netFailed(void* arg) {
  struct ncclComm* comm = arg;
  struct chrDevIpc* x = comm->dev->ipc;
  atomic_store(&x->failed, 1);
  chrDevLibGet()->rankSetAbort(comm->dev->rank, 1);
  chrCommSetAsyncError(comm, ncclRemoteError);
}

/* The GPUDirect bit `bit` of the device key k's link from sendRank to recvRank takes (as the proxy
 * picks it: keys from `ringKeys` on are point-to-point lanes), when that plugin device takes
 * NCCL_PTR_CUDA memory; else 0. */
static unsigned gdrOf(const struct ncclComm* comm, int k, int ringKeys, int sendRank, int recvRank, unsigned bit) {
  const struct chrNetDevs* devs = chrNetDevsOfLink(&comm->transport, sendRank, recvRank);
  const int dev = chrNetDevFor(devs, k, k >= ringKeys, sendRank, recvRank);
  ncclNetProperties_v12_t props;
  if (!(chrNetDevGdr(devs, dev) & bit) || chrNetGetProperties(comm->net, dev, &props) != ncclSuccess ||
      !(props.ptrSupport & NCCL_PTR_CUDA))
    return 0;
  return bit;
}

/* Which ends to `peer` keep their slots in GPU memory (GPUDirect RDMA), by key
 * (chrDevRankNetConnect): a ring channel's (or point-to-point lane's) receive end when its NIC may
 * write this GPU's memory, its send end when the NIC it sends through (the peer's rail under
 * NCCL_CROSS_NIC=0) may read it (the topology's rule: transport/net_devs.h), and only through a
 * plugin device that takes NCCL_PTR_CUDA memory. */
static void gdrByKey(const struct ncclComm* comm, int peer, int ringKeys, uint8_t* out, int nKeys) {
  const int me = comm->rank;
  for (int k = 0; k < nKeys; k++)
    out[k] = (uint8_t)((gdrOf(comm, k, ringKeys, peer, me, CHR_NET_GDR_WRITE) ? 1u : 0u) |
                       (gdrOf(comm, k, ringKeys, me, peer, CHR_NET_GDR_READ) ? 2u : 0u));
}

/* The needed peers on other hosts: their ends through the net proxy. */
static ncclResult_t connectRemote(struct ncclComm* comm, const unsigned char* need) {
  struct chrDevRankState* st = comm->dev;
  struct chrDevIpc* x = st->ipc;
  const struct chrDevLib* lib = chrDevLibGet();
  const int n = comm->nRanks;
  int k = 0;
  for (int r = 0; r < n; r++) k += need[r] && !x->connected[r] && !sameHost(comm, r);
  if (k == 0) return ncclSuccess;
  if (x->net == NULL) {
    struct chrDevNetCopier copier;
    CHECK(chrNetStagingCopier(comm->cudaDev, &copier));
    CHECK(chrDevNetCreate(&comm->transport, netFailed, comm, &copier, &x->net));
  }
  const int maxEnds = lib->rankNetEndsMax(st->rank);
  int* peers = calloc((size_t)k, sizeof(int));
  int* nEnds = calloc((size_t)k, sizeof(int));
  struct chrDevNetEnd** ends = calloc((size_t)k, sizeof(*ends));
  struct chrDevNetEnd* all = calloc((size_t)k * (size_t)maxEnds, sizeof(*all));
  uint8_t* gdr = calloc((size_t)maxEnds, 1);
  ncclResult_t res = ncclSuccess;
  if (peers == NULL || nEnds == NULL || ends == NULL || all == NULL || gdr == NULL) {
    res = chrFail(ncclSystemError, "comm %p rank %d: out of memory connecting %d peers on other hosts", (void*)comm,
                  comm->rank, k);
    goto out;
  }
  k = 0;
  for (int r = 0; r < n; r++) {
    if (!need[r] || x->connected[r] || sameHost(comm, r)) continue;
    ends[k] = all + (size_t)k * (size_t)maxEnds;
    gdrByKey(comm, r, st->shape.nChannels, gdr, maxEnds);
    if (lib->rankNetConnect(st->rank, r, gdr, ends[k], maxEnds, &nEnds[k]) != ncclSuccess) {
      res = chrFail(ncclUnhandledCudaError, "comm %p rank %d: GPU ends for rank %d (another host): %s", (void*)comm,
                    comm->rank, r, lib->lastError());
      break;
    }
    peers[k++] = r;
  }
  if (res == ncclSuccess) res = chrDevNetAdd(x->net, st->shape.nChannels, k, peers, ends, nEnds);
  if (res == ncclSuccess)
    for (int i = 0; i < k; i++) x->connected[peers[i]] = 1;
  else if (k > 0) /* the library holds ends no proxy carries: the connections cannot be made again */
    chrCommSetAsyncError(comm, res);
out:
  free(peers);
  free(nEnds);
  free(ends);
  free(all);
  free(gdr);
  return res;
}

ncclResult_t chrDevIpcConnect(struct ncclComm* comm, const unsigned char* need) {
  struct chrDevRankState* st = comm->dev;
  struct chrDevIpc* x = st->ipc;
  const struct chrDevLib* lib = chrDevLibGet();
  const int n = comm->nRanks;
  int k = 0;
  for (int r = 0; r < n; r++) k += need[r] && !x->connected[r] && sameHost(comm, r);
  if (k == 0) return connectRemote(comm, need);
  int* peers = malloc(sizeof(int) * (size_t)k);
  struct chrDevRankBlob* blobs = malloc(sizeof(struct chrDevRankBlob) * (size_t)k);
  ncclResult_t res = ncclSuccess;
  if (peers == NULL || blobs == NULL) {
    res = chrFail(ncclSystemError, "comm %p rank %d: out of memory connecting %d peers", (void*)comm, comm->rank, k);
    goto fail_free;
  }
  k = 0;
  for (int r = 0; r < n; r++) {
    if (!need[r] || x->connected[r] || !sameHost(comm, r)) continue;
    /* The peer's attach sent it; a peer that has not made a GPU call yet is waited for (abort-aware,
     * a dead peer fails at once, CHORUS_TIMEOUT bounds a live one). */
    CHECK_GOTO(chrBootstrapRecv(comm->bootstrap, r, blobTag(comm), &blobs[k], sizeof(blobs[k])), res, fail_free);
    peers[k++] = r;
  }
  res = lib->rankConnect(st->rank, k, peers, blobs);
  if (res != ncclSuccess) {
    res = chrFail(res, "comm %p rank %d: connecting the GPU memory of %d peer(s) (first: rank %d) failed: %s",
                  (void*)comm, comm->rank, k, peers[0], lib->lastError());
    goto fail_free;
  }
  for (int i = 0; i < k; i++) {
    x->connected[peers[i]] = 1;
    INFO(NCCL_INIT, "comm %p rank %d: GPU connections with rank %d (%s)", (void*)comm, comm->rank, peers[i],
         comm->peers[peers[i]].pid == comm->peers[comm->rank].pid ? "same process" : "CUDA IPC");
  }
fail_free:
  free(peers);
  free(blobs);
  return res == ncclSuccess ? connectRemote(comm, need) : res;
}

/* One comm, under watchLock. Probes only while the rank's latest launch runs: a peer that finished
 * its part and left is no error. */
static void watchComm(struct chrDevIpc* x, const struct chrDevLib* lib, uint64_t now) {
  struct ncclComm* comm = x->comm;
  struct chrDevRankState* st = comm->dev;
  if (st == NULL || atomic_load(&x->failed) || comm->abortFlag) return;
  if (!atomic_load(&st->lastRecorded) || lib->eventQuery(comm->cudaDev, st->last) != ncclInProgress) {
    x->goneSince = 0;
    return;
  }
  if (x->goneSince == 0) {
    const int64_t myPid = comm->peers[comm->rank].pid;
    for (int r = 0; r < comm->nRanks; r++) {
      if (r == comm->rank || (comm->peers[r].pid == myPid && sameHost(comm, r))) continue; /* this process is alive */
      if (chrBootstrapCheckPeer(comm->bootstrap, r) != ncclSuccess) {
        x->goneSince = now;
        x->gonePeer = r;
        return;
      }
    }
    return;
  }
  if (now - x->goneSince < WATCH_GRACE_NS) return;
  chrFail(ncclRemoteError, "comm %p rank %d: rank %d (process %lld) is gone while this rank's GPU work was in flight: "
          "its kernels were aborted", (void*)comm, comm->rank, x->gonePeer, (long long)comm->peers[x->gonePeer].pid);
  atomic_store(&x->failed, 1);
  lib->rankSetAbort(st->rank, 1);
  chrCommSetAsyncError(comm, ncclRemoteError);
}

static void* watchdogMain(void* arg) {
  (void)arg;
  const struct chrDevLib* lib = chrDevLibGet();
  for (;;) {
    struct timespec ts = {0, (long)WATCH_PERIOD_NS};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&watchLock);
    if (watchList == NULL || watchStopping) {
      watchdogRunning = 0;
      pthread_mutex_unlock(&watchLock);
      return NULL;
    }
    const uint64_t now = chrNowNs();
    for (struct chrDevIpc* x = watchList; x; x = x->next) watchComm(x, lib, now);
    pthread_mutex_unlock(&watchLock);
  }
}

void chrDevIpcWatch(struct ncclComm* comm) {
  struct chrDevIpc* x = comm->dev->ipc;
  pthread_mutex_lock(&watchLock);
  x->next = watchList;
  watchList = x;
  x->watched = 1;
  /* Registered after the CUDA runtime's own exit handlers, so it runs before them: a comm never
   * destroyed must not have the watchdog query CUDA while the runtime is torn down. */
  if (!atexitDone) atexitDone = atexit(stopWatchdog) == 0;
  if (!watchdogRunning && !watchStopping) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, watchdogMain, NULL) == 0) watchdogRunning = 1;
    else WARN("comm %p: cannot start the GPU watchdog thread: a peer process that dies during GPU work will not be "
              "noticed until ncclCommAbort", (void*)comm);
    pthread_attr_destroy(&attr);
  }
  pthread_mutex_unlock(&watchLock);
}

void chrDevIpcAbort(struct ncclComm* comm, const struct chrDevLib* lib) {
  pthread_mutex_lock(&watchLock);
  for (struct chrDevIpc* x = watchList; x; x = x->next) {
    struct ncclComm* c = x->comm;
    if (c != comm && (c->commHash != comm->commHash || c->nRanks != comm->nRanks)) continue;
    atomic_store(&x->failed, 1);
    if (c->dev && c->dev->rank) lib->rankSetAbort(c->dev->rank, 1);
  }
  pthread_mutex_unlock(&watchLock);
}

void chrDevIpcDetach(struct ncclComm* comm) {
  struct chrDevIpc* x = comm->dev ? comm->dev->ipc : NULL;
  if (x == NULL) return;
  pthread_mutex_lock(&watchLock);
  if (x->watched)
    for (struct chrDevIpc** p = &watchList; *p; p = &(*p)->next)
      if (*p == x) {
        *p = x->next;
        break;
      }
  pthread_mutex_unlock(&watchLock);
  chrDevNetDestroy(x->net); /* its proxy reads the ends, which the library's rank frees after this */
  free(x->connected);
  free(x);
  comm->dev->ipc = NULL;
}
