/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rank.cu: one rank's device state (hostdev/dev_api.h: chrDevRank): create, export, connect, destroy.
 *
 * Connection indices. A rank has nConns = nChannels + p2pConns * nRanks connection indices in each
 * direction: ring channel c is index c (sending to the ring successor, receiving from the
 * predecessor), point-to-point index k with peer p is nChannels + k * nRanks + p. The connection from
 * rank s to rank d is received by d at d's index for s and sent by s at s's index for d, so:
 *   FIFO and tail: in d's arena, received-connection block (ring: c; p2p: nChannels + k * n + s)
 *   head:          in s's arena, sent-connection word      (ring: c; p2p: nChannels + k * n + d)
 * The sender writes data and tail into the receiver's memory and polls its own head; the receiver
 * polls its own tail and writes the head into the sender's memory (NCCL's write mode).
 *
 * Arena: [head words, 128 bytes each][received blocks: 256-byte control (tail at +0), SIMPLE slots,
 * LL slots; the ring blocks first, then the point-to-point ones, whose SIMPLE slots are p2pStepBytes
 * (a large send runs over several p2p indices at once, so each needs less in flight)], all zero at the start: positions, heads and tails 0, LL flags 0 (no step's flag, step + 1,
 * is 0).
 *
 * Same process or not is decided by the blob's process id AND a random token of the process (two
 * containers may reuse a pid; a forked child keeps the token but not the pid).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "device/copy_engine/ce_kernels.h"
#include "device/copy_engine/ce_sends.h"
#include "device/launch/graph_works.h"
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_scope.h"

#define CHR_DEV_BLOB_MAGIC 0x42444843u /* "CHDB" */
#define CHR_DEV_BLOB_VERSION 3

struct chrDevBlobData {
  uint32_t magic, version;
  int32_t rank, nRanks, nChannels, p2pConns, llLines, cudaDev;
  uint64_t stepBytes, p2pStepBytes, arenaBytes, ringHash;
  uint64_t pid, procToken;
  uint64_t serial; /* the rank's number in its process (names the copy-engine mailboxes, ce_sends.cu) */
  uint64_t base; /* the arena's address in the exporting process */
  uint32_t hasIpc; /* 0: CUDA IPC unavailable there (ranks of that process can still connect) */
  uint32_t pad;
  cudaIpcMemHandle_t ipc;
};
static_assert(sizeof(struct chrDevBlobData) <= CHR_DEV_BLOB_BYTES, "the blob outgrew CHR_DEV_BLOB_BYTES");

static uint64_t procToken;
static pthread_once_t tokenOnce = PTHREAD_ONCE_INIT;
static uint64_t rankSerials; /* ranks made by this process */

static void makeProcToken(void) {
  uint64_t t = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &t, sizeof t) != (ssize_t)sizeof t) t = 0;
    close(fd);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  t ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_sec;
  procToken = t ? t : 1;
}

uint64_t chrDevProcToken(void) {
  pthread_once(&tokenOnce, makeProcToken);
  return procToken;
}

static uint64_t hashInts(const int* v, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < n; i++) {
    h ^= (uint64_t)(uint32_t)v[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

ncclResult_t chrDevCheckRankConfig(const struct chrDevRankConfig* cfg) {
  if (cfg->nRanks < 1 || cfg->nRanks > 1024) return chrDevFail(ncclInvalidArgument, "group of %d ranks (1..1024)", cfg->nRanks);
  if (cfg->rank < 0 || cfg->rank >= cfg->nRanks)
    return chrDevFail(ncclInvalidArgument, "rank %d of %d", cfg->rank, cfg->nRanks);
  if (cfg->nChannels < 1 || cfg->nChannels > CHR_DEV_MAX_CHANNELS)
    return chrDevFail(ncclInvalidArgument, "%d channels (1..%d)", cfg->nChannels, CHR_DEV_MAX_CHANNELS);
  if (cfg->p2pConns < 0 || cfg->p2pConns > CHR_DEV_P2P_CONNS)
    return chrDevFail(ncclInvalidArgument, "%d point-to-point connection indices (0..%d)", cfg->p2pConns, CHR_DEV_P2P_CONNS);
  if (cfg->stepBytes == 0 || cfg->stepBytes % 16 || cfg->stepBytes > ((size_t)1 << 30))
    return chrDevFail(ncclInvalidArgument, "SIMPLE slot of %zu bytes (a multiple of 16, at most 1 GiB)", cfg->stepBytes);
  if (cfg->p2pStepBytes % 16 || cfg->p2pStepBytes > ((size_t)1 << 30))
    return chrDevFail(ncclInvalidArgument, "point-to-point SIMPLE slot of %zu bytes (0, or a multiple of 16, at most 1 GiB)",
                      cfg->p2pStepBytes);
  if (cfg->llLines < 0 || cfg->llLines > (1 << 20))
    return chrDevFail(ncclInvalidArgument, "LL slot of %d lines (0..%d)", cfg->llLines, 1 << 20);
  if (cfg->cudaDev < 0) return chrDevFail(ncclInvalidArgument, "CUDA device %d", cfg->cudaDev);
  if (cfg->ringOrder == NULL) return chrDevFail(ncclInvalidArgument, "no ring order");
  char* seen = (char*)calloc((size_t)cfg->nRanks, 1);
  if (seen == NULL) return chrDevFail(ncclSystemError, "out of memory");
  for (int i = 0; i < cfg->nRanks; i++) {
    int r = cfg->ringOrder[i];
    if (r < 0 || r >= cfg->nRanks || seen[r]) {
      free(seen);
      return chrDevFail(ncclInvalidArgument, "ring order is not a permutation of 0..%d (position %d holds %d)",
                        cfg->nRanks - 1, i, r);
    }
    seen[r] = 1;
  }
  free(seen);
  return ncclSuccess;
}

static int p2pIndex(const struct chrDevRank* rk, int k, int peer) { return rk->cfg.nChannels + k * rk->cfg.nRanks + peer; }

/* A received connection's block: ring blocks, then point-to-point blocks (of another size). */
static size_t slotBytesOf(const struct chrDevRank* rk, int idx) {
  return idx < rk->cfg.nChannels ? rk->cfg.stepBytes : rk->cfg.p2pStepBytes;
}
static size_t blockOffset(const struct chrDevRank* rk, int idx) {
  const size_t nRing = (size_t)rk->cfg.nChannels;
  if ((size_t)idx < nRing) return rk->recvBase + (size_t)idx * rk->ringConnBytes;
  return rk->recvBase + nRing * rk->ringConnBytes + ((size_t)idx - nRing) * rk->p2pConnBytes;
}
static size_t blockBytes(const struct chrDevRankConfig* cfg, size_t slotBytes) {
  return CHR_DEV_CTRL_BYTES + CHR_DEV_ALIGN(CHR_DEV_STEPS * slotBytes) +
         CHR_DEV_ALIGN((size_t)CHR_DEV_STEPS * (size_t)cfg->llLines * sizeof(union chrDevLLLine));
}

/* A connection end: FIFO and tail in recvArena's block recvIdx, head in sendArena's word sendIdx. */
static struct chrDevConn makeEnd(const struct chrDevRank* rk, char* recvArena, int recvIdx, char* sendArena, int sendIdx,
                                 int peer) {
  char* blk = recvArena + blockOffset(rk, recvIdx);
  const size_t slotBytes = slotBytesOf(rk, recvIdx);
  struct chrDevConn c;
  memset(&c, 0, sizeof c);
  c.tail = (uint64_t*)blk;
  c.head = (uint64_t*)(sendArena + (size_t)sendIdx * CHR_DEV_HEAD_BYTES);
  c.buff = blk + CHR_DEV_CTRL_BYTES;
  c.ll = rk->cfg.llLines > 0
             ? (union chrDevLLLine*)(blk + CHR_DEV_CTRL_BYTES + CHR_DEV_ALIGN(CHR_DEV_STEPS * slotBytes))
             : NULL;
  c.stepBytes = slotBytes;
  c.llLines = (uint32_t)rk->cfg.llLines;
  c.peer = peer;
  return c;
}

static struct chrDevConn unconnectedEnd(void) {
  struct chrDevConn c;
  memset(&c, 0, sizeof c);
  c.peer = -1;
  return c;
}

#define imgChannels chrDevImgChannels
#define imgP2p chrDevImgP2p

extern "C" ncclResult_t chrDevRankDestroy(struct chrDevRank* rk) {
  if (rk == NULL) return ncclSuccess;
  chrDevSaved saved = {};
  chrDevEnter(rk->cfg.cudaDev, &saved); /* a failure leaves the calls below failing harmlessly */
  chrCeDestroy(rk); /* its copies may use the peers' memory: before that is closed */
  chrDevNetEndsFree(rk);
  if (rk->peerBase)
    for (int p = 0; p < rk->cfg.nRanks; p++)
      if (rk->peerOpened[p] && rk->peerBase[p]) cudaIpcCloseMemHandle(rk->peerBase[p]);
  for (int s = 0; s < CHR_DEV_WORK_SLOTS; s++)
    if (rk->slotDone[s]) cudaEventDestroy(rk->slotDone[s]);
  if (rk->workArea) cudaFreeHost(rk->workArea);
  if (rk->meta) cudaFree(rk->meta);
  if (rk->flags) cudaFreeHost((void*)rk->flags);
  if (rk->arena) cudaFree(rk->arena);
  if (rk->copies) cudaStreamDestroy(rk->copies);
  if (rk->side) cudaStreamDestroy(rk->side);
  if (rk->fork) cudaEventDestroy(rk->fork);
  if (rk->join) cudaEventDestroy(rk->join);
  free(rk->img);
  free(rk->peerBase);
  free(rk->netBlock);
  free(rk->netGpuBlock);
  free(rk->peerOpened);
  free(rk->peerId);
  free(rk->ringOrder);
  free(rk->ringPos);
  free(rk->p2pOwner);
  free(rk);
  chrDevGraphWorksTrim(); /* storage of destroyed graphs, any rank's */
  chrDevLeave(&saved);
  return ncclSuccess;
}

/* The device comm's image: every end unconnected. */
static void buildImage(struct chrDevRank* rk) {
  const int n = rk->cfg.nRanks;
  char* dev = (char*)rk->meta;
  struct chrDevComm* comm = (struct chrDevComm*)rk->img;
  comm->rank = rk->cfg.rank;
  comm->nRanks = n;
  comm->nChannels = rk->cfg.nChannels;
  comm->p2pConns = rk->cfg.p2pConns;
  comm->ringOrder = (const int*)(dev + rk->offOrder);
  comm->abortFlag = rk->flagsDev;
  comm->error = rk->flagsDev + 1;
  comm->channels = (struct chrDevChannel*)(dev + rk->offChannels);
  const size_t nEnds = (size_t)rk->cfg.p2pConns * (size_t)n * 2;
  comm->p2p = nEnds ? (struct chrDevConn*)(dev + rk->offP2p) : NULL;
  struct chrDevChannel* ch = imgChannels(rk);
  for (int c = 0; c < rk->cfg.nChannels; c++) ch[c].ring[0] = ch[c].ring[1] = unconnectedEnd();
  struct chrDevConn* ends = imgP2p(rk);
  for (size_t e = 0; e < nEnds; e++) ends[e] = unconnectedEnd();
  memcpy(rk->img + rk->offOrder, rk->ringOrder, (size_t)n * sizeof(int));
  rk->comm = (struct chrDevComm*)dev;
}

extern "C" ncclResult_t chrDevRankCreate(const struct chrDevRankConfig* cfg, struct chrDevRank** out) {
  if (cfg == NULL || out == NULL) return chrDevFail(ncclInvalidArgument, "chrDevRankCreate: NULL argument");
  *out = NULL;
  ncclResult_t res = chrDevCheckRankConfig(cfg);
  if (res != ncclSuccess) return res;
  pthread_once(&tokenOnce, makeProcToken);
  const int n = cfg->nRanks;
  chrDevSaved saved = {};
  struct chrDevRank* rk = (struct chrDevRank*)calloc(1, sizeof *rk);
  if (rk == NULL) return chrDevFail(ncclSystemError, "out of memory");
  rk->cfg = *cfg;
  if (rk->cfg.p2pStepBytes == 0) rk->cfg.p2pStepBytes = cfg->stepBytes;
  rk->ringOrder = (int*)malloc((size_t)n * sizeof(int));
  rk->ringPos = (int*)malloc((size_t)n * sizeof(int));
  rk->peerBase = (char**)calloc((size_t)n, sizeof(char*));
  rk->netBlock = (char**)calloc((size_t)n, sizeof(char*));
  rk->netGpuBlock = (char**)calloc((size_t)n, sizeof(char*));
  rk->peerOpened = (unsigned char*)calloc((size_t)n, 1);
  rk->peerId = (struct chrDevPeerId*)calloc((size_t)n, sizeof(struct chrDevPeerId));
  rk->serial = __atomic_add_fetch(&rankSerials, 1, __ATOMIC_RELAXED);
  rk->p2pOwner = (signed char*)malloc((size_t)rk->cfg.p2pConns * (size_t)n * 2 + 1);
  if (rk->ringOrder == NULL || rk->ringPos == NULL || rk->peerBase == NULL || rk->netBlock == NULL || rk->netGpuBlock == NULL || rk->peerOpened == NULL ||
      rk->peerId == NULL || rk->p2pOwner == NULL) {
    res = chrDevFail(ncclSystemError, "out of memory for rank %d of %d", cfg->rank, n);
    goto fail_destroy;
  }
  memcpy(rk->ringOrder, cfg->ringOrder, (size_t)n * sizeof(int));
  rk->cfg.ringOrder = rk->ringOrder;
  for (int i = 0; i < n; i++) rk->ringPos[rk->ringOrder[i]] = i;
  {
    const int pos = rk->ringPos[cfg->rank];
    rk->next = rk->ringOrder[(pos + 1) % n];
    rk->prev = rk->ringOrder[(pos + n - 1) % n];
  }
  rk->ringHash = hashInts(rk->ringOrder, n);
  rk->nConns = cfg->nChannels + cfg->p2pConns * n;
  rk->ringConnBytes = blockBytes(cfg, rk->cfg.stepBytes);
  rk->p2pConnBytes = blockBytes(cfg, rk->cfg.p2pStepBytes);
  rk->recvBase = CHR_DEV_ALIGN((size_t)rk->nConns * CHR_DEV_HEAD_BYTES);
  /* After the connections: a signal word per peer (signals.cu), written only by that peer. */
  rk->sigOff = blockOffset(rk, rk->nConns);
  rk->arenaBytes = rk->sigOff + CHR_DEV_ALIGN((size_t)n * sizeof(uint64_t));
  rk->offChannels = CHR_DEV_ALIGN(sizeof(struct chrDevComm));
  rk->offP2p = rk->offChannels + CHR_DEV_ALIGN((size_t)cfg->nChannels * sizeof(struct chrDevChannel));
  rk->offOrder = rk->offP2p + CHR_DEV_ALIGN((size_t)cfg->p2pConns * (size_t)n * 2 * sizeof(struct chrDevConn));
  rk->metaBytes = rk->offOrder + (size_t)n * sizeof(int);
  rk->img = (char*)calloc(1, rk->metaBytes);
  if (rk->img == NULL) {
    res = chrDevFail(ncclSystemError, "out of memory for rank %d's device comm", cfg->rank);
    goto fail_destroy;
  }

  CHR_DEV_CUDA_GOTO(chrDevEnter(cfg->cudaDev, &saved), res, fail_destroy);
  res = chrDevLoadKernels(); /* before any kernel of this rank can run */
  if (res == ncclSuccess && cfg->copyEngine) res = chrCeLoadKernels(); /* the same for the copy engine's wait and copy */
  if (res != ncclSuccess) goto fail_destroy;
  /* A private stream: it neither waits for nor delays the user's streams. */
  CHR_DEV_CUDA_GOTO(cudaStreamCreateWithFlags(&rk->copies, cudaStreamNonBlocking), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaStreamCreateWithFlags(&rk->side, cudaStreamNonBlocking), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaEventCreateWithFlags(&rk->fork, cudaEventDisableTiming), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaEventCreateWithFlags(&rk->join, cudaEventDisableTiming), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaMalloc((void**)&rk->arena, rk->arenaBytes), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaMemsetAsync(rk->arena, 0, rk->arenaBytes, rk->copies), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaHostAlloc((void**)&rk->flags, 64, cudaHostAllocMapped), res, fail_destroy);
  memset((void*)rk->flags, 0, 64);
  CHR_DEV_CUDA_GOTO(cudaHostGetDevicePointer((void**)&rk->flagsDev, (void*)rk->flags, 0), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaMalloc(&rk->meta, rk->metaBytes), res, fail_destroy);
  buildImage(rk);
  CHR_DEV_CUDA_GOTO(cudaMemcpyAsync(rk->meta, rk->img, rk->metaBytes, cudaMemcpyHostToDevice, rk->copies), res,
                    fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaHostAlloc((void**)&rk->workArea, (size_t)CHR_DEV_WORK_SLOTS * CHR_DEV_WORK_SLOT_BYTES,
                                  cudaHostAllocMapped | cudaHostAllocWriteCombined),
                    res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaHostGetDevicePointer((void**)&rk->workAreaDev, rk->workArea, 0), res, fail_destroy);
  for (int s = 0; s < CHR_DEV_WORK_SLOTS; s++)
    CHR_DEV_CUDA_GOTO(cudaEventCreateWithFlags(&rk->slotDone[s], cudaEventDisableTiming), res, fail_destroy);
  /* The zeroed arena and the image are in place before anyone can see the rank. */
  CHR_DEV_CUDA_GOTO(cudaStreamSynchronize(rk->copies), res, fail_destroy);
  chrDevLeave(&saved);
  *out = rk;
  return ncclSuccess;

fail_destroy:
  if (rk->copies) cudaStreamSynchronize(rk->copies);
  chrDevRankDestroy(rk);
  chrDevLeave(&saved);
  return res;
}

extern "C" ncclResult_t chrDevRankExport(struct chrDevRank* rk, struct chrDevRankBlob* blob) {
  if (rk == NULL || blob == NULL) return chrDevFail(ncclInvalidArgument, "chrDevRankExport: NULL argument");
  struct chrDevBlobData d;
  memset(&d, 0, sizeof d);
  d.magic = CHR_DEV_BLOB_MAGIC;
  d.version = CHR_DEV_BLOB_VERSION;
  d.rank = rk->cfg.rank;
  d.nRanks = rk->cfg.nRanks;
  d.nChannels = rk->cfg.nChannels;
  d.p2pConns = rk->cfg.p2pConns;
  d.llLines = rk->cfg.llLines;
  d.cudaDev = rk->cfg.cudaDev;
  d.stepBytes = rk->cfg.stepBytes;
  d.p2pStepBytes = rk->cfg.p2pStepBytes;
  d.arenaBytes = rk->arenaBytes;
  d.ringHash = rk->ringHash;
  d.pid = (uint64_t)getpid();
  d.procToken = procToken;
  d.serial = rk->serial;
  d.base = (uint64_t)(uintptr_t)rk->arena;
  ncclResult_t res = ncclSuccess;
  chrDevSaved saved = {};
  CHR_DEV_CUDA_GOTO(chrDevEnter(rk->cfg.cudaDev, &saved), res, fail);
  {
    /* Without IPC (a platform that lacks it) the rank still serves peers of its own process. */
    cudaError_t e = cudaIpcGetMemHandle(&d.ipc, rk->arena);
    d.hasIpc = e == cudaSuccess;
    if (e != cudaSuccess) {
      cudaGetLastError();
      memset(&d.ipc, 0, sizeof d.ipc);
    }
  }
  memset(blob, 0, sizeof *blob);
  memcpy(blob->bytes, &d, sizeof d);
fail:
  chrDevLeave(&saved);
  return res;
}

static int sameProcess(const struct chrDevBlobData* d) {
  return d->pid == (uint64_t)getpid() && d->procToken == procToken;
}

/* Every field of a peer's blob, before anything is done with it. */
static ncclResult_t checkBlob(const struct chrDevRank* rk, int peer, const struct chrDevBlobData* d) {
  const int me = rk->cfg.rank;
  if (d->magic != CHR_DEV_BLOB_MAGIC || d->version != CHR_DEV_BLOB_VERSION)
    return chrDevFail(ncclRemoteError, "rank %d: the device blob of rank %d is not one (magic 0x%x, version %u)", me, peer,
                      d->magic, d->version);
  if (d->rank != peer || d->nRanks != rk->cfg.nRanks)
    return chrDevFail(ncclRemoteError, "rank %d: the device blob for rank %d says rank %d of %d (expected of %d)", me, peer,
                      d->rank, d->nRanks, rk->cfg.nRanks);
  if (d->nChannels != rk->cfg.nChannels || d->p2pConns != rk->cfg.p2pConns || d->llLines != rk->cfg.llLines ||
      d->stepBytes != (uint64_t)rk->cfg.stepBytes || d->p2pStepBytes != (uint64_t)rk->cfg.p2pStepBytes)
    return chrDevFail(ncclInvalidUsage,
                      "rank %d: rank %d's GPU connections have another shape (%d channels, %d p2p indices, %llu-byte "
                      "SIMPLE (%llu p2p) and %d-line LL slots; here %d, %d, %zu (%zu), %d): the ranks' settings differ",
                      me, peer, d->nChannels, d->p2pConns, (unsigned long long)d->stepBytes,
                      (unsigned long long)d->p2pStepBytes, d->llLines, rk->cfg.nChannels, rk->cfg.p2pConns,
                      rk->cfg.stepBytes, rk->cfg.p2pStepBytes, rk->cfg.llLines);
  if (d->ringHash != rk->ringHash)
    return chrDevFail(ncclInvalidUsage, "rank %d: rank %d has another ring order", me, peer);
  if (d->arenaBytes != (uint64_t)rk->arenaBytes || d->base == 0 || d->base % 256 != 0)
    return chrDevFail(ncclRemoteError, "rank %d: rank %d's arena (%llu bytes at 0x%llx) is not the expected %zu bytes", me,
                      peer, (unsigned long long)d->arenaBytes, (unsigned long long)d->base, rk->arenaBytes);
  if (d->cudaDev < 0) return chrDevFail(ncclRemoteError, "rank %d: rank %d says CUDA device %d", me, peer, d->cudaDev);
  if (sameProcess(d)) {
    /* Our own address space: the address must be a device allocation on the device the blob names. */
    cudaPointerAttributes attr;
    memset(&attr, 0, sizeof attr);
    cudaError_t e = cudaPointerGetAttributes(&attr, (const void*)(uintptr_t)d->base);
    if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice || attr.device != d->cudaDev) {
      cudaGetLastError();
      return chrDevFail(ncclRemoteError, "rank %d: rank %d's arena 0x%llx is not device memory of GPU %d in this process",
                        me, peer, (unsigned long long)d->base, d->cudaDev);
    }
  }
  return ncclSuccess;
}

/* The peer's arena in this process: its own address (same process; peer access when the GPUs differ)
 * or the IPC handle opened. Device ordinals mean something only within one process, so for another
 * process the driver decides (lazy peer access) and a failure says the GPUs may lack peer access. */
static ncclResult_t mapPeer(struct chrDevRank* rk, int peer, const struct chrDevBlobData* d, char** base, int* opened) {
  *base = NULL;
  *opened = 0;
  if (sameProcess(d)) {
    if (d->cudaDev != rk->cfg.cudaDev) {
      int can = 0;
      cudaError_t e = cudaDeviceCanAccessPeer(&can, rk->cfg.cudaDev, d->cudaDev);
      if (e != cudaSuccess || !can)
        return chrDevFail(ncclInvalidUsage, "rank %d on GPU %d cannot reach rank %d on GPU %d: no peer access between them",
                          rk->cfg.rank, rk->cfg.cudaDev, peer, d->cudaDev);
      e = cudaDeviceEnablePeerAccess(d->cudaDev, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError(); /* not sticky, but leave nothing behind for the next call's check */
      } else if (e != cudaSuccess) {
        return chrDevFail(ncclUnhandledCudaError, "rank %d: enabling peer access from GPU %d to GPU %d: %s", rk->cfg.rank,
                          rk->cfg.cudaDev, d->cudaDev, cudaGetErrorString(e));
      }
    }
    *base = (char*)(uintptr_t)d->base;
    return ncclSuccess;
  }
  if (!d->hasIpc)
    return chrDevFail(ncclInvalidUsage, "rank %d: rank %d is in another process (%llu) but could not export its GPU memory "
                      "(CUDA IPC unavailable there)", rk->cfg.rank, peer, (unsigned long long)d->pid);
  void* p = NULL;
  cudaError_t e = cudaIpcOpenMemHandle(&p, d->ipc, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return chrDevFail(ncclUnhandledCudaError,
                      "rank %d (GPU %d): opening rank %d's GPU memory (process %llu, its GPU %d) with CUDA IPC failed: %s "
                      "(%s); the ranks need one host and GPUs with peer access", rk->cfg.rank, rk->cfg.cudaDev, peer,
                      (unsigned long long)d->pid, d->cudaDev, cudaGetErrorString(e), cudaGetErrorName(e));
  }
  *base = (char*)p;
  *opened = 1;
  return ncclSuccess;
}

/* The ends that lead to `peer`, in the image; each one's offset in the device comm goes to offs. */
static int fillEnds(struct chrDevRank* rk, int peer, char* peerArena, size_t* offs) {
  const int n = rk->cfg.nRanks, me = rk->cfg.rank;
  char* mine = rk->arena;
  int k = 0;
  struct chrDevChannel* ch = imgChannels(rk);
  for (int c = 0; c < rk->cfg.nChannels; c++) {
    if (peer == rk->next) {
      ch[c].ring[CHR_RING_SEND] = makeEnd(rk, peerArena, c, mine, c, peer);
      offs[k++] = (size_t)((char*)&ch[c].ring[CHR_RING_SEND] - rk->img);
    }
    if (peer == rk->prev) {
      ch[c].ring[CHR_RING_RECV] = makeEnd(rk, mine, c, peerArena, c, peer);
      offs[k++] = (size_t)((char*)&ch[c].ring[CHR_RING_RECV] - rk->img);
    }
  }
  struct chrDevConn* ends = imgP2p(rk);
  for (int q = 0; q < rk->cfg.p2pConns; q++) {
    struct chrDevConn* s = &ends[CHR_DEV_P2P_INDEX(n, q, peer, 1)];
    struct chrDevConn* r = &ends[CHR_DEV_P2P_INDEX(n, q, peer, 0)];
    *s = makeEnd(rk, peerArena, p2pIndex(rk, q, me), mine, p2pIndex(rk, q, peer), peer);
    *r = makeEnd(rk, mine, p2pIndex(rk, q, peer), peerArena, p2pIndex(rk, q, me), peer);
    offs[k++] = (size_t)((char*)s - rk->img);
    offs[k++] = (size_t)((char*)r - rk->img);
  }
  return k;
}

static void clearEnds(struct chrDevRank* rk, int peer) {
  const int n = rk->cfg.nRanks;
  struct chrDevChannel* ch = imgChannels(rk);
  for (int c = 0; c < rk->cfg.nChannels; c++) {
    if (peer == rk->next) ch[c].ring[CHR_RING_SEND] = unconnectedEnd();
    if (peer == rk->prev) ch[c].ring[CHR_RING_RECV] = unconnectedEnd();
  }
  struct chrDevConn* ends = imgP2p(rk);
  for (int q = 0; q < rk->cfg.p2pConns; q++) {
    ends[CHR_DEV_P2P_INDEX(n, q, peer, 1)] = unconnectedEnd();
    ends[CHR_DEV_P2P_INDEX(n, q, peer, 0)] = unconnectedEnd();
  }
}

extern "C" ncclResult_t chrDevRankConnect(struct chrDevRank* rk, int nPeers, const int* peers,
                                          const struct chrDevRankBlob* blobs) {
  if (rk == NULL || (nPeers > 0 && (peers == NULL || blobs == NULL)) || nPeers < 0)
    return chrDevFail(ncclInvalidArgument, "chrDevRankConnect: bad arguments");
  if (nPeers == 0) return ncclSuccess;
  const int n = rk->cfg.nRanks;
  ncclResult_t res = ncclSuccess;
  chrDevSaved saved = {};
  int mapped = 0;
  const size_t maxEnds = (size_t)2 * rk->cfg.nChannels + (size_t)2 * rk->cfg.p2pConns;
  size_t* offs = (size_t*)malloc(maxEnds * sizeof(size_t));
  unsigned char* inCall = (unsigned char*)calloc((size_t)n, 1);
  if (offs == NULL || inCall == NULL) {
    free(offs);
    free(inCall);
    return chrDevFail(ncclSystemError, "out of memory connecting %d peers", nPeers);
  }
  for (int i = 0; i < nPeers; i++) {
    const int p = peers[i];
    if (p < 0 || p >= n) {
      res = chrDevFail(ncclInvalidArgument, "rank %d: connecting rank %d of %d", rk->cfg.rank, p, n);
      goto fail_free;
    }
    if (chrDevPeerReachable(rk, p) || inCall[p]) {
      res = chrDevFail(ncclInvalidUsage, "rank %d: rank %d is connected already", rk->cfg.rank, p);
      goto fail_free;
    }
    inCall[p] = 1;
    struct chrDevBlobData d;
    memcpy(&d, blobs[i].bytes, sizeof d);
    res = checkBlob(rk, p, &d);
    if (res != ncclSuccess) goto fail_free;
  }
  CHR_DEV_CUDA_GOTO(chrDevEnter(rk->cfg.cudaDev, &saved), res, fail_free);
  for (; mapped < nPeers; mapped++) {
    struct chrDevBlobData d;
    memcpy(&d, blobs[mapped].bytes, sizeof d);
    char* base = NULL;
    int opened = 0;
    res = mapPeer(rk, peers[mapped], &d, &base, &opened);
    if (res != ncclSuccess) goto fail_unmap;
    rk->peerBase[peers[mapped]] = base;
    rk->peerOpened[peers[mapped]] = (unsigned char)opened;
    rk->peerId[peers[mapped]] = (struct chrDevPeerId){d.procToken, d.serial, d.pid, sameProcess(&d), 1};
  }
  /* Only the new ends are written: a running kernel of this rank may be storing its positions in the
   * others. No kernel can have used these (the launcher refuses links to unconnected peers). */
  for (int i = 0; i < nPeers; i++) {
    const int k = fillEnds(rk, peers[i], rk->peerBase[peers[i]], offs);
    res = chrDevPushImage(rk, offs, k);
    if (res != ncclSuccess) goto fail_unmap;
  }
  chrDevLeave(&saved);
  free(offs);
  free(inCall);
  return ncclSuccess;

fail_unmap:
  cudaStreamSynchronize(rk->copies);
  for (int i = 0; i < mapped; i++) {
    const int p = peers[i];
    clearEnds(rk, p);
    if (rk->peerOpened[p]) cudaIpcCloseMemHandle(rk->peerBase[p]);
    rk->peerBase[p] = NULL;
    rk->peerOpened[p] = 0;
    rk->peerId[p].known = 0;
  }
fail_free:
  chrDevLeave(&saved);
  free(offs);
  free(inCall);
  return res;
}

/* Connection ends are written one by one: a running kernel of the rank owns the others' positions. */
ncclResult_t chrDevPushImage(struct chrDevRank* rk, const size_t* offs, int n) {
  ncclResult_t res = ncclSuccess;
  for (int e = 0; e < n; e++)
    CHR_DEV_CUDA_GOTO(cudaMemcpyAsync((char*)rk->meta + offs[e], rk->img + offs[e], sizeof(struct chrDevConn),
                                      cudaMemcpyHostToDevice, rk->copies),
                      res, fail);
  CHR_DEV_CUDA_GOTO(cudaStreamSynchronize(rk->copies), res, fail);
fail:
  return res;
}

extern "C" int chrDevRankConnected(const struct chrDevRank* rk, int peer) {
  if (rk == NULL || peer < 0 || peer >= rk->cfg.nRanks) return 0;
  return chrDevPeerReachable(rk, peer);
}

extern "C" void chrDevRankSetAbort(struct chrDevRank* rk, uint32_t value) {
  if (rk == NULL) return;
  rk->flags[0] = value;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (value) chrCeAbort(rk); /* streams parked on a copy-engine mailbox go on */
}

extern "C" uint32_t chrDevRankKernelError(const struct chrDevRank* rk) { return rk ? rk->flags[1] : 0; }

extern "C" void chrDevRankCeStats(struct chrDevRank* rk, struct chrDevCeStats* out) { chrCeStats(rk, out); }

extern "C" uint64_t chrDevRankDeviceBytes(const struct chrDevRank* rk) {
  return rk == NULL ? 0 : (uint64_t)(rk->arenaBytes + rk->metaBytes + chrCeDeviceBytes(rk));
}
