/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_state.c: each rank's device state (dev_state.h): the registry of device groups (group mode),
 * the calls both modes share; the IPC mode's own part is in dev_ipc.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bootstrap/peer_info.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/cuda_driver.h"
#include "cuda/dev_ipc.h"
#include "cuda/dev_state.h"
#include "cuda/device_lib.h"
#include "hostdev/dev_consts.h"
#include "util/idle.h"
#include "log/check.h"
#include "log/log.h"
#include "transport/transport.h"

#define DEV_LL_LINES 4096        /* 32 KiB of LL payload per step */
/* Channels per rank at most: CHORUS_GPU_MAX_CHANNELS, default 64 (each CTA pushes only so much over
 * NVLink, so large calls gain from more channels: docs/perf/gpu-2gpu.md), up to CHR_DEV_MAX_CHANNELS
 * (128). One call's works on every channel fit in the kernel arguments (device/kernels/dev_args.h); a
 * captured launch with more gets graph-owned storage. */
#define DEV_ABORT_GRACE_NS (10ull * 1000000000ull) /* aborted kernels return within ms; give them 10 s */

struct chrDevShared {
  struct chrDevShared* next;
  uint64_t commHash;
  int nRanks, cudaDev;
  int refs;                  /* ranks attached (under registryLock) */
  int leak;                  /* a rank's kernels did not finish: never free the group's memory */
  struct chrDevShape shape;
  struct chrDevGroup* group;
  _Atomic int broken;        /* a rank aborted or timed out: the connections are out of step */
};

static pthread_mutex_t registryLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrDevShared* registry;

static struct chrDevShared* findShared(uint64_t commHash, int nRanks) {
  for (struct chrDevShared* s = registry; s; s = s->next)
    if (s->commHash == commHash && s->nRanks == nRanks) return s;
  return NULL;
}

/* Ring channels. Ranks that share a GPU inside one process wait for each other inside their
 * kernels, so every CTA of theirs must be resident at once: with one 1024-thread CTA per channel,
 * which takes a whole SM's registers, the ranks on one GPU times the channels stay within HALF its
 * SM count, so that the user's own kernels running beside a collective cannot keep one of its CTAs
 * out (2 ranks on an H100: 33). A rank alone on its GPU has no such wait between its own CTAs (each
 * channel's CTA waits only for the same channel on other GPUs, which a late CTA joins whenever it
 * gets an SM), so it may take every SM. Either way CHORUS_GPU_MAX_CHANNELS caps it (64 by default:
 * past that, SMs go to the collective that the user's kernels beside it would want). Ranks of other
 * processes sharing a GPU are time-sliced by the driver, but counting them too keeps one formula for
 * both modes, and every rank computes the same number from the peer infos (the fewest SMs, the most
 * ranks on one GPU). */
static int defaultChannels(const struct ncclComm* comm) {
  int sms = 0, perGpu = 1;
  if (comm->peers != NULL) {
    for (int r = 0; r < comm->nRanks; r++)
      if (r == 0 || comm->peers[r].sms < sms) sms = comm->peers[r].sms;
    struct chrGpuShare share;
    perGpu = chrPeersGpuShare(comm->peers, comm->nRanks, 0, &share) == 0 ? share.largest : comm->nRanks;
    if (perGpu < 1) perGpu = 1;
  } else {
    sms = chrCudaDeviceSMs(comm->cudaDev);
    perGpu = comm->nRanks;
  }
  int ch = sms <= 0 ? 8 : perGpu == 1 ? sms : sms / (2 * perGpu);
  const int cap = (int)chrParamInt(CHR_P_GPU_MAX_CHANNELS);
  if (ch > cap) ch = cap;
  if (comm->config.maxCTAs > 0 && ch > comm->config.maxCTAs) ch = comm->config.maxCTAs;
  if (ch < 1) ch = 1;
  return ch;
}

/* Point-to-point lanes. One CTA moves a send through its slots at a small share of what NVLink
 * carries (docs/perf/gpu-2gpu.md), so a large send splits over lanes, each its own connection index
 * and pair of CTAs. The CTAs stay within the ring channels' budget (2 per lane), and the memory too:
 * every rank receives nRanks * lanes connections, so fewer lanes as the rank count grows (about 64
 * connections, or one per channel past 64: with 64 channels 32 lanes on 2 ranks, 8 on 8). */
static int p2pLanes(int nRanks, int nChannels) {
  int lanes = CHR_DEV_P2P_CONNS;
  if (lanes > nChannels / 2) lanes = nChannels / 2;
  const int budget = nChannels > 64 ? nChannels : 64; /* connections a rank receives, about */
  if (nRanks > 0 && lanes > budget / nRanks) lanes = budget / nRanks;
  return lanes < 1 ? 1 : lanes;
}

/* One of a connection's CHR_STEPS slots of a `buff`-byte buffer, in whole pages. */
static size_t slotBytes(int64_t buff) {
  if (buff < CHR_STEPS * 4096) buff = CHR_STEPS * 4096;
  return ((size_t)buff / CHR_STEPS) & ~(size_t)4095;
}

void chrDevCommShape(const struct ncclComm* comm, struct chrDevShape* shape) {
  if (comm->dev) {
    *shape = comm->dev->shape;
    return;
  }
  /* NCCL_BUFFSIZE set by the user sizes the rings' slots as it does NCCL's; otherwise the GPU's own
   * default (across hosts a larger one of its own, since a ring step there costs a round trip over
   * the net: docs/perf/gpu-net.md). Point-to-point lanes keep half of NCCL_BUFFSIZE's step either way
   * (256 KiB by default: each step ends in a system-scope fence that waits for the step's stores to
   * land over NVLink, so larger steps pay it less often; docs/perf/gpu-2gpu.md has the sizes tried). */
  const int64_t ncclBuff = chrParamInt(CHR_P_BUFFSIZE);
  const int userSet = strcmp(chrParamSource(CHR_P_BUFFSIZE), "default") != 0;
  const size_t ringStep = slotBytes(userSet          ? ncclBuff
                                    : comm->devNet ? chrParamInt(CHR_P_GPU_NET_BUFFSIZE)
                                                   : chrParamInt(CHR_P_GPU_BUFFSIZE));
  shape->stepBytes = ringStep;
  shape->llLines = DEV_LL_LINES;
  shape->nChannels = defaultChannels(comm);
  /* Every channel and lane to another host is a net connection and proxy work. */
  if (comm->devNet && shape->nChannels > (int)chrParamInt(CHR_P_GPU_NET_CHANNELS))
    shape->nChannels = (int)chrParamInt(CHR_P_GPU_NET_CHANNELS);
  shape->p2pLanes = p2pLanes(comm->nRanks, shape->nChannels);
  const size_t p2pStep = slotBytes(ncclBuff) / 2;
  shape->p2pStepBytes = p2pStep < 4096 ? 4096 : p2pStep & ~(size_t)4095;
  shape->copyEngine = chrDevCommEngineAllowed(comm) && (chrParamInt(CHR_P_GPU_CE_MIN_BYTES) > 0 || chrParamInt(CHR_P_GPU_CE_BCAST_MIN_BYTES) > 0 ||
                                        chrParamInt(CHR_P_GPU_CE_ALLREDUCE_MIN_BYTES) > 0);
  shape->ceWaitUs = (int)chrParamInt(CHR_P_GPU_CE_WAIT_US);
  shape->ceShareFd = (int)chrParamInt(CHR_P_GPU_CE_SHARE_FD);
  shape->cePull = (int)chrParamInt(CHR_P_GPU_CE_PULL);
}

int chrDevCommEngineAllowed(const struct ncclComm* comm) { return !comm->devNet; }

static ncclResult_t createShared(struct ncclComm* comm, const struct chrDevLib* lib, struct chrDevShared** out) {
  struct chrDevShared* s = calloc(1, sizeof(*s));
  if (s == NULL) return chrFail(ncclSystemError, "out of memory for the device state of comm %p", (void*)comm);
  s->commHash = comm->commHash;
  s->nRanks = comm->nRanks;
  s->cudaDev = comm->cudaDev;
  chrDevCommShape(comm, &s->shape);
  struct chrDevGroupConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.nRanks = comm->nRanks;
  cfg.nChannels = s->shape.nChannels;
  cfg.p2pConns = s->shape.p2pLanes;
  cfg.p2pStepBytes = s->shape.p2pStepBytes;
  cfg.copyEngine = s->shape.copyEngine;
  cfg.ceWaitUs = s->shape.ceWaitUs;
  cfg.ceShareFd = s->shape.ceShareFd;
  cfg.cePull = s->shape.cePull;
  cfg.stepBytes = s->shape.stepBytes;
  cfg.llLines = s->shape.llLines;
  cfg.ringOrder = comm->ringOrder;
  cfg.cudaDev = comm->cudaDev;
  ncclResult_t res = lib->groupCreate(&cfg, &s->group);
  if (res != ncclSuccess) {
    free(s);
    return chrFail(res, "comm %p: creating the GPU state of %d ranks on device %d failed: %s", (void*)comm,
                   comm->nRanks, comm->cudaDev, lib->lastError());
  }
  INFO(NCCL_INIT, "comm %p: GPU state for %d ranks on device %d: %d channels, %zu KiB SIMPLE and %d KiB LL slots",
       (void*)comm, comm->nRanks, comm->cudaDev, cfg.nChannels, cfg.stepBytes >> 10, cfg.llLines * 8 / 1024);
  s->next = registry;
  registry = s;
  *out = s;
  return ncclSuccess;
}

/* Group mode: the process's group of the comm, made by the first rank. */
static ncclResult_t attachGroup(struct ncclComm* comm, const struct chrDevLib* lib, struct chrDevRankState* st) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&registryLock);
  struct chrDevShared* s = findShared(comm->commHash, comm->nRanks);
  if (s == NULL) res = createShared(comm, lib, &s);
  if (res == ncclSuccess) {
    s->refs++;
    st->shared = s;
    st->shape = s->shape;
    st->rank = lib->groupRank(s->group, comm->rank);
  }
  pthread_mutex_unlock(&registryLock);
  return res;
}

ncclResult_t chrDevCommAttach(struct ncclComm* comm) {
  if (comm->dev) return ncclSuccess;
  const struct chrDevLib* lib = chrDevLibGet();
  if (lib == NULL) return chrFail(ncclInvalidUsage, "comm %p: device buffers, but there is no GPU path", (void*)comm);
  if (!comm->devLocal && !comm->devIpc)
    return chrFail(ncclInvalidUsage, "comm %p: %s", (void*)comm, CHR_DEV_NOT_LOCAL_MSG);
  struct chrDevRankState* st = calloc(1, sizeof(*st));
  if (st == NULL) return chrFail(ncclSystemError, "out of memory for the device state of comm %p", (void*)comm);
  chrDevCommShape(comm, &st->shape);
  ncclResult_t res = lib->eventCreate(comm->cudaDev, &st->last);
  if (res == ncclSuccess) res = lib->eventCreate(comm->cudaDev, &st->join);
  if (res != ncclSuccess) {
    res = chrFail(res, "comm %p: creating events on device %d: %s", (void*)comm, comm->cudaDev, lib->lastError());
    goto fail_free_state;
  }
  res = comm->devLocal ? attachGroup(comm, lib, st) : chrDevIpcAttach(comm, st, lib);
  if (res != ncclSuccess) goto fail_free_state;
  comm->dev = st;
  if (st->ipc) chrDevIpcWatch(comm);
  return ncclSuccess;
fail_free_state:
  if (st->join) lib->eventDestroy(comm->cudaDev, st->join);
  if (st->last) lib->eventDestroy(comm->cudaDev, st->last);
  free(st);
  return res;
}

int chrDevCommConnectsLazily(const struct ncclComm* comm) { return comm->dev != NULL && comm->dev->ipc != NULL; }

ncclResult_t chrDevCommConnect(struct ncclComm* comm, const unsigned char* need) {
  if (!chrDevCommConnectsLazily(comm)) return ncclSuccess; /* a group is connected from the start */
  return chrDevIpcConnect(comm, need);
}

ncclResult_t chrDevCommLaunch(struct ncclComm* comm, const struct chrDevLaunch* launch, cudaStream_t stream) {
  const struct chrDevLib* lib = chrDevLibGet();
  ncclResult_t res = lib->rankLaunch(comm->dev->rank, launch, stream);
  chrDevIpcKick(comm->dev->ipc);
  return res;
}

/* Another rank aborted, timed out or (IPC mode) died: this rank's connections are out of step. */
static int rankBroken(const struct chrDevRankState* st) {
  return st->shared ? atomic_load(&st->shared->broken) : chrDevIpcFailed(st->ipc);
}

static void abortRank(struct ncclComm* comm, const struct chrDevLib* lib);

static const char* kernelErrorText(uint32_t kerr) {
  switch (kerr) {
    case CHR_DEV_ERR_BAD_LINK: return "a work named a link the rank has no connection for";
    case CHR_DEV_ERR_ENGINE:
      return "a copy-engine send could not run: a receive buffer the sender could neither open by CUDA IPC nor map by "
             "file descriptor (CHORUS_GPU_CE_SHARE_FD=0 stages such buffers), sizes that differ between the ends, or a "
             "failed CUDA call";
    case CHR_DEV_ERR_NET_SIZE:
      return "a step received from another host had another size than this rank's step: the ranks disagree on the "
             "call (count, datatype or order of calls)";
    default: return "unknown";
  }
}

ncclResult_t chrDevCommPoll(struct ncclComm* comm) {
  struct chrDevRankState* st = comm->dev;
  if (st == NULL) return ncclSuccess;
  int state = atomic_load(&comm->asyncError);
  if (CHR_IS_ERROR(state)) return (ncclResult_t)state;
  const struct chrDevLib* lib = chrDevLibGet();
  uint32_t kerr = lib->rankKernelError(st->rank);
  if (kerr != 0) {
    /* Only the failing CTA stopped: the rank's other CTAs and the kernels queued behind it would wait
     * on connections now out of step, so they are aborted too. */
    abortRank(comm, lib);
    const ncclResult_t res = kerr == CHR_DEV_ERR_NET_SIZE ? ncclRemoteError : ncclInternalError;
    chrFail(res, "comm %p rank %d: a kernel reported error %u (%s)", (void*)comm, comm->rank, kerr, kernelErrorText(kerr));
    chrCommSetAsyncError(comm, res);
    return res;
  }
  if (rankBroken(st) && !comm->abortFlag && !atomic_load(&comm->revoked)) { /* a revoke breaks it on purpose */
    chrFail(ncclRemoteError, "comm %p rank %d: another rank of this communicator was aborted (or timed out) while "
            "GPU work was in flight; its connections are out of step", (void*)comm, comm->rank);
    chrCommSetAsyncError(comm, ncclRemoteError);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static void breakGroup(struct chrDevShared* s, const struct chrDevLib* lib) {
  atomic_store(&s->broken, 1);
  lib->setAbort(s->group, -1, 1);
}

/* Timeout: abort the kernels of the rank's group (group mode) or of this rank (IPC mode: the peers
 * see it through their watchdogs once this comm is freed). */
static void abortRank(struct ncclComm* comm, const struct chrDevLib* lib) {
  struct chrDevRankState* st = comm->dev;
  if (st->shared) breakGroup(st->shared, lib);
  else chrDevIpcAbort(comm, lib);
}

ncclResult_t chrDevCommWait(struct ncclComm* comm, const char* func) {
  struct chrDevRankState* st = comm->dev;
  if (st == NULL || !atomic_load(&st->lastRecorded)) return ncclSuccess;
  const struct chrDevLib* lib = chrDevLibGet();
  uint64_t timeoutNs = (uint64_t)chrParamInt(CHR_P_TIMEOUT) * 1000000000ull;
  uint64_t start = chrNowNs(), abortSeen = 0;
  for (;;) {
    ncclResult_t q = lib->eventQuery(comm->cudaDev, st->last);
    if (q == ncclSuccess) return ncclSuccess;
    if (q != ncclInProgress)
      return chrFail(q, "%s: comm %p rank %d: waiting for its GPU work: %s", func, (void*)comm, comm->rank,
                     lib->lastError());
    uint64_t now = chrNowNs();
    if (abortSeen == 0 && timeoutNs && now - start > timeoutNs) {
      WARN("%s: comm %p rank %d: GPU work still running after %llu s (CHORUS_TIMEOUT): aborting the communicator's "
           "kernels", func, (void*)comm, comm->rank, (unsigned long long)(timeoutNs / 1000000000ull));
      abortRank(comm, lib);
    }
    if (abortSeen == 0 && lib->rankKernelError(st->rank) != 0) { /* a CTA failed: see chrDevCommPoll */
      abortRank(comm, lib);
      abortSeen = now;
    }
    if (abortSeen == 0 && (comm->abortFlag || rankBroken(st))) abortSeen = now;
    if (abortSeen && now - abortSeen > DEV_ABORT_GRACE_NS)
      return chrFail(ncclInternalError, "%s: comm %p rank %d: aborted GPU work did not finish within %llu s", func,
                     (void*)comm, comm->rank, (unsigned long long)(DEV_ABORT_GRACE_NS / 1000000000ull));
    chrIdleWait(now - start);
  }
}

/* After the rank's GPU work: the net proxy's last sends, unless nothing can be delivered (the peers
 * then give up on this rank as on a dead one). */
static ncclResult_t drainSends(struct ncclComm* comm, const char* func) {
  if (comm->dev == NULL || comm->abortFlag || atomic_load(&comm->revoked) || atomic_load(&comm->asyncError) != ncclSuccess)
    return ncclSuccess;
  CHECK(chrDevCommPoll(comm)); /* a kernel that failed leaves its connections out of step: no drain */
  return chrDevIpcDrain(comm, func);
}

ncclResult_t chrDevCommFlush(struct ncclComm* comm, const char* func) {
  CHECK(chrDevCommWait(comm, func));
  return drainSends(comm, func);
}

void chrDevCommAbort(struct ncclComm* comm) {
  if (!comm->devLocal && !comm->devIpc) return; /* never had GPU state: do not load the device library for nothing */
  const struct chrDevLib* lib = chrDevLibGet();
  if (lib == NULL) return;
  if (comm->devIpc) {
    chrDevIpcAbort(comm, lib);
    return;
  }
  /* Also when this rank never attached: the others may be waiting for it inside their kernels. */
  pthread_mutex_lock(&registryLock);
  struct chrDevShared* s = comm->dev ? comm->dev->shared : findShared(comm->commHash, comm->nRanks);
  if (s) breakGroup(s, lib);
  pthread_mutex_unlock(&registryLock);
}

static void detachGroup(struct ncclComm* comm, const struct chrDevLib* lib, int kernelsDone) {
  struct chrDevShared* s = comm->dev->shared;
  pthread_mutex_lock(&registryLock);
  if (!kernelsDone) s->leak = 1;
  if (--s->refs == 0) {
    for (struct chrDevShared** p = &registry; *p; p = &(*p)->next)
      if (*p == s) {
        *p = s->next;
        break;
      }
    if (!s->leak) {
      ncclResult_t d = lib->groupDestroy(s->group);
      if (d != ncclSuccess) WARN("comm %p: freeing its GPU state failed: %s", (void*)comm, lib->lastError());
    }
    free(s);
  }
  pthread_mutex_unlock(&registryLock);
}

/* Which way the rank's copy-engine transfers went, at INFO (NCCL_DEBUG_SUBSYS=P2P): whether large
 * sends ran on the engine or by kernel, and what sharing the receivers' buffers cost. */
static void logEngineCounts(const struct ncclComm* comm, const struct chrDevLib* lib) {
  const struct chrDevRankState* st = comm->dev;
  if (!st->shape.copyEngine || st->rank == NULL || !chrLogEnabled(NCCL_LOG_INFO, NCCL_P2P)) return;
  struct chrDevCeStats c;
  lib->rankCeStats(st->rank, &c);
  if (c.sendsByEngine + c.sendsByKernel + c.recvsDirect + c.recvsByFd + c.recvsStaged + c.recvsPulled == 0) return;
  INFO(NCCL_P2P, "comm %p rank %d: copy-engine transfers: sends %llu by the engine, %llu by kernel; receives %llu "
       "direct, %llu by file descriptor, %llu staged, %llu pulled; %llu peers' buffers opened (%.3f ms), %llu "
       "exported (%.3f ms)", (void*)comm, comm->rank, (unsigned long long)c.sendsByEngine,
       (unsigned long long)c.sendsByKernel, (unsigned long long)c.recvsDirect, (unsigned long long)c.recvsByFd,
       (unsigned long long)c.recvsStaged, (unsigned long long)c.recvsPulled, (unsigned long long)c.opened,
       c.openNs / 1e6, (unsigned long long)c.exported, c.exportNs / 1e6);
}

uint64_t chrDevCommDeviceBytes(struct ncclComm* comm) {
  const struct chrDevRankState* st = comm->dev;
  if (st == NULL || st->rank == NULL) return 0;
  return chrDevLibGet()->rankDeviceBytes(st->rank);
}

void chrDevCommDetach(struct ncclComm* comm) {
  struct chrDevRankState* st = comm->dev;
  if (st == NULL) return;
  const struct chrDevLib* lib = chrDevLibGet();
  ncclResult_t res = chrDevCommWait(comm, "ncclCommDestroy");
  if (res == ncclSuccess) logEngineCounts(comm, lib);
  if (res == ncclSuccess && drainSends(comm, "ncclCommDestroy") != ncclSuccess) /* kernels done: frees anyway */
    WARN("comm %p rank %d: destroyed without flushing its GPU work: %s", (void*)comm, comm->rank, chrThreadLastError());
  if (res != ncclSuccess) /* kernels of this rank may still run: freeing their memory could fault the GPU */
    WARN("comm %p rank %d: leaving its GPU state allocated (its kernels did not finish)", (void*)comm, comm->rank);
  if (st->shared) {
    detachGroup(comm, lib, res == ncclSuccess);
  } else {
    chrDevIpcDetach(comm); /* the watchdog lets go of the comm first */
    if (res == ncclSuccess && lib->rankDestroy(st->rank) != ncclSuccess)
      WARN("comm %p rank %d: freeing its GPU state failed: %s", (void*)comm, comm->rank, lib->lastError());
  }
  /* Destroying an event whose work is pending is allowed: CUDA releases it once the work is done. */
  lib->eventDestroy(comm->cudaDev, st->last);
  lib->eventDestroy(comm->cudaDev, st->join);
  free(st);
  comm->dev = NULL;
}
