/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_ends.cu: a rank's connection ends to a peer on another host (hostdev/dev_api.h: chrDevRankNetConnect).
 *
 * The peer's memory cannot be mapped, so each end's FIFO and control words live in this rank's own
 * host-mapped memory (one cudaHostAlloc per peer), and the core's proxy (core/transport/dev_net.c) plays
 * the far end through the net plugin: on a send end it sends each slot the kernel published (tail,
 * with the step's size in sizes[slot]) and advances head once the plugin is done with the slot; on a
 * receive end it receives into every slot the kernel has freed (head) and advances tail, after
 * writing the size it received. The kernel runs its usual SIMPLE steps on them (dev_kernel.cuh).
 *
 * Which ends: the ring's send end on every channel when the peer is the ring's next rank, its
 * receive end when it is the previous one, and both ends of every point-to-point index. Each gets a
 * key both ranks compute alike (ring channel c: c; point-to-point index q: nChannels + q), by which
 * the core pairs a send end with the peer's receive end.
 *
 * Layout of an end: a 4 KiB control page (tail at +0, head at +64, sizes at +128, need at +192), then CHR_DEV_STEPS
 * slots, so slots start on a page (the net plugin registers them). GPUDirect RDMA: an end whose key
 * the core marks (gdrByKey: bit 0 the receive end, bit 1 the send end) has its slots in GPU memory
 * instead, in one device allocation per peer, which the plugin registers as NCCL_PTR_CUDA and reads
 * or writes directly; its control page stays host-mapped, since the proxy reads and writes the words.
 */
#include <stdlib.h>
#include <string.h>
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_scope.h"

#define NET_CTRL_BYTES 4096
#define NET_HEAD_OFF 64
#define NET_SIZES_OFF 128
#define NET_NEED_OFF 192

static size_t endBytes(size_t slotBytes) { return NET_CTRL_BYTES + CHR_DEV_STEPS * slotBytes; }

/* Slots in GPU memory for an end with key `key` (gdrByKey, see above). */
static int gpuSlots(const uint8_t* gdrByKey, int key, int isSend) {
  return gdrByKey != NULL && (gdrByKey[key] & (isSend ? 2 : 1)) != 0;
}

static size_t hostBytes(const struct chrDevNetEnd* e) { return e->gpuSlots ? NET_CTRL_BYTES : endBytes(e->slotBytes); }

void chrDevNetEndsFree(struct chrDevRank* rk) {
  if (rk->netBlock == NULL) return;
  for (int p = 0; p < rk->cfg.nRanks; p++) {
    if (rk->netBlock[p]) {
      cudaFreeHost(rk->netBlock[p]);
      rk->netBlock[p] = NULL;
    }
    if (rk->netGpuBlock && rk->netGpuBlock[p]) {
      cudaFree(rk->netGpuBlock[p]);
      rk->netGpuBlock[p] = NULL;
    }
  }
}

extern "C" int chrDevRankNetEndsMax(const struct chrDevRank* rk) {
  return rk == NULL ? 0 : 2 * rk->cfg.nChannels + 2 * rk->cfg.p2pConns;
}

extern "C" ncclResult_t chrDevRankNetConnect(struct chrDevRank* rk, int peer, const uint8_t* gdrByKey,
                                             struct chrDevNetEnd* ends, int maxEnds, int* nEnds) {
  if (rk == NULL || ends == NULL || nEnds == NULL)
    return chrDevFail(ncclInvalidArgument, "chrDevRankNetConnect: NULL argument");
  *nEnds = 0;
  const int n = rk->cfg.nRanks, me = rk->cfg.rank, nCh = rk->cfg.nChannels, nP2p = rk->cfg.p2pConns;
  if (peer < 0 || peer >= n || peer == me)
    return chrDevFail(ncclInvalidArgument, "rank %d: a net connection with rank %d of %d", me, peer, n);
  if (chrDevPeerReachable(rk, peer)) return chrDevFail(ncclInvalidUsage, "rank %d: rank %d is connected already", me, peer);
  if (maxEnds < chrDevRankNetEndsMax(rk))
    return chrDevFail(ncclInvalidArgument, "rank %d: room for %d net ends, %d needed", me, maxEnds, chrDevRankNetEndsMax(rk));

  /* The ends, in key order (both ranks list them alike), before anything is allocated. */
  int k = 0;
  for (int c = 0; c < nCh; c++) {
    if (peer == rk->next) ends[k++] = (struct chrDevNetEnd){1, c, NULL, rk->cfg.stepBytes, NULL, NULL, NULL, NULL, 0};
    if (peer == rk->prev) ends[k++] = (struct chrDevNetEnd){0, c, NULL, rk->cfg.stepBytes, NULL, NULL, NULL, NULL, 0};
  }
  for (int q = 0; q < nP2p; q++) {
    ends[k++] = (struct chrDevNetEnd){1, nCh + q, NULL, rk->cfg.p2pStepBytes, NULL, NULL, NULL, NULL, 0};
    ends[k++] = (struct chrDevNetEnd){0, nCh + q, NULL, rk->cfg.p2pStepBytes, NULL, NULL, NULL, NULL, 0};
  }
  size_t total = 0, gpuTotal = 0;
  for (int e = 0; e < k; e++) {
    ends[e].gpuSlots = gpuSlots(gdrByKey, ends[e].key, ends[e].isSend);
    total += hostBytes(&ends[e]);
    if (ends[e].gpuSlots) gpuTotal += (size_t)CHR_DEV_STEPS * ends[e].slotBytes;
  }

  ncclResult_t res = ncclSuccess;
  chrDevSaved saved = {};
  char* block = NULL;
  char* blockDev = NULL;
  char* gpuBlock = NULL;
  size_t* offs = (size_t*)malloc(sizeof(size_t) * (size_t)(k > 0 ? k : 1));
  if (offs == NULL) return chrDevFail(ncclSystemError, "out of memory");
  CHR_DEV_CUDA_GOTO(chrDevEnter(rk->cfg.cudaDev, &saved), res, fail);
  /* Not write-combined: the proxy's net plugin reads the send slots with the CPU. */
  CHR_DEV_CUDA_GOTO(cudaHostAlloc((void**)&block, total, cudaHostAllocMapped | cudaHostAllocPortable), res, fail);
  memset(block, 0, total);
  CHR_DEV_CUDA_GOTO(cudaHostGetDevicePointer((void**)&blockDev, block, 0), res, fail);
  /* Not cleared: a step's data is written before it is read, and a memset on the legacy stream would
   * wait for this rank's kernels, which may be waiting for this very connection. */
  if (gpuTotal > 0) CHR_DEV_CUDA_GOTO(cudaMalloc((void**)&gpuBlock, gpuTotal), res, fail);
  {
    struct chrDevChannel* ch = chrDevImgChannels(rk);
    struct chrDevConn* p2p = chrDevImgP2p(rk);
    size_t off = 0, gpuOff = 0;
    for (int e = 0; e < k; e++) {
      struct chrDevNetEnd* x = &ends[e];
      char* host = block + off;
      char* dev = blockDev + off;
      x->tail = (uint64_t*)host;
      x->head = (uint64_t*)(host + NET_HEAD_OFF);
      x->sizes = (uint64_t*)(host + NET_SIZES_OFF);
      x->need = (uint64_t*)(host + NET_NEED_OFF);
      char* slots = x->gpuSlots ? gpuBlock + gpuOff : dev + NET_CTRL_BYTES; /* as the kernel sees them */
      x->slots = x->gpuSlots ? slots : host + NET_CTRL_BYTES;
      struct chrDevConn c;
      memset(&c, 0, sizeof c);
      c.tail = (uint64_t*)dev;
      c.head = (uint64_t*)(dev + NET_HEAD_OFF);
      c.sizes = (uint64_t*)(dev + NET_SIZES_OFF);
      c.need = x->isSend ? NULL : (uint64_t*)(dev + NET_NEED_OFF);
      c.buff = slots;
      c.ll = NULL; /* SIMPLE only (work_check.cu refuses LL works with a net peer) */
      c.stepBytes = x->slotBytes;
      c.peer = peer;
      struct chrDevConn* slot = x->key < nCh ? &ch[x->key].ring[x->isSend ? CHR_RING_SEND : CHR_RING_RECV]
                                             : &p2p[CHR_DEV_P2P_INDEX(n, x->key - nCh, peer, x->isSend)];
      *slot = c;
      offs[e] = (size_t)((char*)slot - rk->img);
      off += hostBytes(x);
      if (x->gpuSlots) gpuOff += (size_t)CHR_DEV_STEPS * x->slotBytes;
    }
  }
  res = chrDevPushImage(rk, offs, k);
  if (res != ncclSuccess) goto fail;
  rk->netBlock[peer] = block;
  rk->netGpuBlock[peer] = gpuBlock;
  *nEnds = k;
  chrDevLeave(&saved);
  free(offs);
  return ncclSuccess;
fail:
  /* The image entries may have reached the device: no work can name the peer (not reachable). */
  if (block) cudaFreeHost(block);
  if (gpuBlock) cudaFree(gpuBlock);
  chrDevLeave(&saved);
  free(offs);
  return res;
}
