/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.cu: chrDevRankLaunch (hostdev/dev_api.h). The core plans a launch whole (struct chrDevLaunch,
 * core/exec/dev_launch.c); here it is checked, cut into kernels by reduction, and each kernel gets its
 * works in kernel arguments (up to CHR_DEV_INLINE_WORKS) or in a host-mapped slot.
 *
 * Cutting. Kernels are instantiated per (type, op); works that only copy run in any kernel. Each
 * kernel holds whole calls on every channel (chrDevLaunchNext, device/kernels/dev_work.h): the kernel of the
 * earliest call that reduces, and every call before the first one that needs another kernel (a
 * call's works wait for each other across channels, so a launch cut inside a call could wait for a
 * later launch forever). Sends and receives (past nCut[c] on each channel) all go into the LAST
 * kernel: a send and its receive (on another channel, or another rank whose group listed its calls
 * in another order) must run in kernels that are resident at the same time.
 *
 * Copy-engine works never reach the kernels. A rank's large copy to itself runs as cudaMemcpyAsync
 * on the rank's side stream, forked from the launch's stream before its kernels and joined back
 * after them, so the copy and the kernels run at the same time (graph capture records the fork and
 * join as its own dependencies). A large send or receive to another rank runs through ce_sends.cu:
 * its ready word is queued before the kernels and its post and done wait after them (never under
 * capture: a host mailbox cannot be replayed).
 *
 * Under CUDA graph capture a kernel whose works do not fit in the arguments gets graph-owned storage
 * (graph_works.h) instead of a slot: the graph keeps the arguments, and a slot's later contents
 * would be read by every replay.
 */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "device/common/dev_time.h"
#include "device/copy_engine/ce_sends.h"
#include "device/kernels/dev_args.h"
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_scope.h"
#include "device/kernels/dev_table.h"
#include "device/launch/graph_works.h"
#include "device/launch/kernel_launch.h"
#include "device/launch/local_copy.h"
#include "device/launch/work_check.h"
#include "hostdev/algo_ids.h" /* CHR_PROTO_LL */

static_assert(sizeof(struct chrDevKernelArgs) <= CHR_DEV_ARGS_BYTES, "kernel arguments over their bound");
static_assert(CHR_DEV_INLINE_WORKS >= 8, "too few works fit in the kernel arguments");

#define CHR_DEV_SLOT_WORKS ((int)(CHR_DEV_WORK_SLOT_BYTES / sizeof(struct chrWork)))
#define CHR_DEV_SLOT_WAIT_NS (60ull * 1000000000ull)

static const void* kernelTable[ncclNumTypes][CHR_DEV_NUM_OPS + 1];
static cudaKernel_t kernelHandles[ncclNumTypes][CHR_DEV_NUM_OPS + 1]; /* for chrDevLaunchArgs */
static pthread_once_t kernelTableOnce = PTHREAD_ONCE_INIT;

static void fillKernelTable(void) {
  chrDevKernelRow<0>(kernelTable[0]);
  chrDevKernelRow<1>(kernelTable[1]);
  chrDevKernelRow<2>(kernelTable[2]);
  chrDevKernelRow<3>(kernelTable[3]);
  chrDevKernelRow<4>(kernelTable[4]);
  chrDevKernelRow<5>(kernelTable[5]);
  chrDevKernelRow<6>(kernelTable[6]);
  chrDevKernelRow<7>(kernelTable[7]);
  chrDevKernelRow<8>(kernelTable[8]);
  chrDevKernelRow<9>(kernelTable[9]);
  chrDevKernelRow<10>(kernelTable[10]);
  chrDevKernelRow<11>(kernelTable[11]);
  /* Signed sums, products and PreMulSums wrap like the unsigned ones (kernels_inst.cuh). */
  const int twins[3][2] = {{ncclInt8, ncclUint8}, {ncclInt32, ncclUint32}, {ncclInt64, ncclUint64}};
  const int shared[3] = {CHR_DEV_SUM, CHR_DEV_PROD, CHR_DEV_PREMULSUM};
  for (int t = 0; t < 3; t++)
    for (int o = 0; o < 3; o++) kernelTable[twins[t][0]][shared[o]] = kernelTable[twins[t][1]][shared[o]];
  for (int t = 0; t < ncclNumTypes; t++)
    for (int o = 0; o <= CHR_DEV_NUM_OPS; o++) kernelHandles[t][o] = chrDevKernelHandle(kernelTable[t][o]);
}

static pthread_mutex_t loadLock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t loadedDevices; /* bit d: device d's kernels are loaded (devices 64 and up: every time) */

ncclResult_t chrDevLoadKernels(void) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return chrDevFail(ncclUnhandledCudaError, "cudaGetDevice: %s", cudaGetErrorString(e));
  pthread_once(&kernelTableOnce, fillKernelTable);
  const uint64_t bit = dev < 64 ? 1ull << dev : 0;
  pthread_mutex_lock(&loadLock);
  ncclResult_t res = ncclSuccess;
  if (bit == 0 || !(loadedDevices & bit)) {
    for (int t = 0; t < ncclNumTypes && res == ncclSuccess; t++)
      for (int o = 0; o <= CHR_DEV_NUM_OPS && res == ncclSuccess; o++) {
        if (kernelTable[t][o] == NULL) continue;
        cudaFuncAttributes attr;
        e = cudaFuncGetAttributes(&attr, kernelTable[t][o]); /* loads the kernel's module on this device */
        if (e != cudaSuccess)
          res = chrDevFail(ncclUnhandledCudaError, "loading the kernels on GPU %d: %s", dev, cudaGetErrorString(e));
      }
    if (res == ncclSuccess && (e = chrDevLoadLocalCopy()) != cudaSuccess)
      res = chrDevFail(ncclUnhandledCudaError, "loading the local copy kernel on GPU %d: %s", dev, cudaGetErrorString(e));
    if (res == ncclSuccess) loadedDevices |= bit;
  }
  pthread_mutex_unlock(&loadLock);
  return res;
}

/* The kernel of a launch key (-1: the copy kernel), and its handle. */
static const void* kernelOf(int key, cudaKernel_t* handle) {
  const int t = key < 0 ? ncclUint8 : key / (CHR_DEV_NUM_OPS + 1);
  const int o = key < 0 ? CHR_DEV_COPY : key % (CHR_DEV_NUM_OPS + 1);
  *handle = kernelHandles[t][o];
  return kernelTable[t][o];
}

/* A host-mapped slot for `count` works, free once the launch that last used it has finished. The
 * wait can only be long when many large plans are queued on the rank's stream. */
static ncclResult_t takeSlot(struct chrDevRank* rk, int count, int* slotOut) {
  const int rank = rk->cfg.rank;
  if (count > CHR_DEV_SLOT_WORKS)
    return chrDevFail(ncclInvalidUsage, "rank %d: one launch of %d works, at most %d", rank, count, CHR_DEV_SLOT_WORKS);
  const int s = rk->nextSlot;
  if (rk->slotUsed[s]) {
    const uint64_t start = chrDevNowNs();
    for (;;) {
      cudaError_t e = cudaEventQuery(rk->slotDone[s]);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady)
        return chrDevFail(ncclUnhandledCudaError, "rank %d: waiting for a work slot: %s", rank, cudaGetErrorString(e));
      if (rk->flags[0]) return chrDevFail(ncclRemoteError, "rank %d: aborted while waiting for a work slot", rank);
      if (chrDevNowNs() - start > CHR_DEV_SLOT_WAIT_NS)
        return chrDevFail(ncclInternalError, "rank %d: no work slot free for 60 s (%d large plans queued)", rank,
                          CHR_DEV_WORK_SLOTS);
      sched_yield();
    }
  }
  rk->nextSlot = (s + 1) % CHR_DEV_WORK_SLOTS;
  *slotOut = s;
  return ncclSuccess;
}

/* The copies on the rank's side stream, after what the launch's stream holds so far. */
static ncclResult_t forkEngineCopies(struct chrDevRank* rk, const struct chrWork* copies, int n, cudaStream_t stream) {
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaEventRecord(rk->fork, stream), res, fail);
  CHR_DEV_CUDA_GOTO(cudaStreamWaitEvent(rk->side, rk->fork, 0), res, fail);
  for (int i = 0; i < n; i++) {
    const struct chrWork* w = &copies[i];
    const size_t bytes = (size_t)(w->len * (uint64_t)w->typeSize);
    if (w->sendbuff == w->recvbuff || bytes == 0) continue; /* in place */
    CHR_DEV_CUDA_GOTO(chrDevLocalCopy((void*)(uintptr_t)w->recvbuff, (const void*)(uintptr_t)w->sendbuff, bytes, rk->side),
                      res, fail);
  }
  CHR_DEV_CUDA_GOTO(cudaEventRecord(rk->join, rk->side), res, fail);
fail:
  return res;
}

/* Threads per CTA for a launch of these works. A launch whose works are all LL and whose steps are
 * shorter than CHR_DEV_THREADS lines (one line a thread per trip) starts only the warps its steps
 * use: a small all-reduce's CTA then meets its barriers with a few warps instead of 32. Every loop
 * of the kernel strides by blockDim, so any multiple of the warp is right. CHR_DEV_FIT_THREADS=0 (a
 * build define) launches CHR_DEV_THREADS always. */
#ifndef CHR_DEV_FIT_THREADS
#define CHR_DEV_FIT_THREADS 1
#endif
static unsigned threadsFor(const struct chrWork* works, int total) {
  if (!CHR_DEV_FIT_THREADS) return CHR_DEV_THREADS;
  uint64_t lines = 0;
  for (int i = 0; i < total; i++) {
    const struct chrWork* w = &works[i];
    if (w->proto != CHR_PROTO_LL) return CHR_DEV_THREADS;
    const uint64_t step = w->chunkElems > 0 && w->chunkElems < w->len ? w->chunkElems : w->len;
    const uint64_t l = (step * w->typeSize + CHR_DEV_LL_LINE_DATA - 1) / CHR_DEV_LL_LINE_DATA;
    if (l >= CHR_DEV_THREADS) return CHR_DEV_THREADS;
    if (l > lines) lines = l;
  }
  const uint64_t warps = (lines + 31) / 32;
  return warps < 2 ? 64 : (unsigned)(warps * 32);
}

/* One kernel: for each channel c, take[c] works starting at works + base[c]. */
static ncclResult_t launchOne(struct chrDevRank* rk, int key, const struct chrWork* works, const int* base,
                              const int* take, int nChannels, int capturing, cudaStream_t stream) {
  ncclResult_t res = ncclSuccess;
  const int rank = rk->cfg.rank;
  struct chrDevKernelArgs args;
  memset(&args, 0, offsetof(struct chrDevKernelArgs, inl));
  args.comm = rk->comm;
  args.nChannels = (uint32_t)nChannels;
  int total = 0;
  for (int c = 0; c < nChannels; c++) {
    args.first[c] = (uint16_t)total;
    total += take[c];
  }
  args.first[nChannels] = (uint16_t)total;
  cudaKernel_t handle = NULL;
  const void* fn = kernelOf(key, &handle);
  if (fn == NULL) return chrDevFail(ncclInternalError, "rank %d: no kernel for key %d", rank, key);
  int slot = -1;
  struct chrWork* dst = args.inl;
  if (total > (int)CHR_DEV_INLINE_WORKS) {
    /* A graph would keep the slot's address and read whatever a later launch wrote there. */
    if (capturing) {
      struct chrWork* dev = NULL;
      res = chrDevGraphWorks(rank, stream, total, &dst, &dev);
      if (res != ncclSuccess) return res;
      args.workBuf = dev;
    } else {
      res = takeSlot(rk, total, &slot);
      if (res != ncclSuccess) return res;
      dst = rk->workArea + (size_t)slot * CHR_DEV_SLOT_WORKS;
      args.workBuf = rk->workAreaDev + (size_t)slot * CHR_DEV_SLOT_WORKS;
    }
  }
  for (int c = 0, k = 0; c < nChannels; c++)
    for (int i = 0; i < take[c]; i++) dst[k++] = works[base[c] + i];
  /* The slot is write-combined host memory: drain the CPU's buffers before the GPU reads it. */
  if (args.workBuf != NULL) __atomic_thread_fence(__ATOMIC_SEQ_CST);
  res = chrDevLaunchArgs(fn, handle, (unsigned)nChannels, threadsFor(dst, total), stream, &args,
                         offsetof(struct chrDevKernelArgs, inl) + (args.workBuf ? 0 : sizeof(struct chrWork) * (size_t)total),
                         sizeof(args));
  if (res != ncclSuccess) goto fail;
  if (slot >= 0) {
    CHR_DEV_CUDA_GOTO(cudaEventRecord(rk->slotDone[slot], stream), res, fail);
    rk->slotUsed[slot] = 1;
  }
fail:
  return res;
}

extern "C" ncclResult_t chrDevRankLaunch(struct chrDevRank* rk, const struct chrDevLaunch* launch, cudaStream_t stream) {
  if (rk == NULL || launch == NULL) return chrDevFail(ncclInvalidArgument, "chrDevRankLaunch: NULL argument");
  ncclResult_t res = chrDevCheckLaunch(rk, launch);
  if (res != ncclSuccess) return res;
  pthread_once(&kernelTableOnce, fillKernelTable);

  CHR_DEV_SCOPE(rk->cfg.cudaDev);
  const int nChannels = launch->nChannels;
  int base[CHR_DEV_MAX_CHANNELS], cutEnd[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], take[CHR_DEV_MAX_CHANNELS];
  for (int c = 0, total = 0; c < nChannels; c++) {
    base[c] = total;
    cutEnd[c] = total + launch->nCut[c];
    total += launch->nWorks[c];
    end[c] = total;
  }
  int forked = 0;
  /* every ready word before anything of the launch waits */
  if (launch->nCeSends > 0) {
    res = chrCeSignal(rk, launch->ceSends, launch->nCeSends, stream);
    if (res != ncclSuccess) goto fail;
  }
  if (launch->nCopies > 0) {
    forked = 1; /* joined below whatever happens: a capture must not end with the side stream forked */
    res = forkEngineCopies(rk, launch->copies, launch->nCopies, stream);
    if (res != ncclSuccess) goto fail;
  }
  for (;;) {
    int key = -1, any = 0;
    const int cutLeft = chrDevLaunchNext(launch->works, base, cutEnd, nChannels, take, &key);
    /* The last kernel also carries every send and receive. */
    for (int c = 0; c < nChannels; c++) {
      if (!cutLeft) take[c] = end[c] - base[c];
      any |= take[c] > 0;
    }
    if (!any) break;
    res = launchOne(rk, key, launch->works, base, take, nChannels, launch->capturing, stream);
    if (res != ncclSuccess) goto fail;
    for (int c = 0; c < nChannels; c++) base[c] += take[c];
  }
  if (launch->nCeSends > 0) res = chrCePost(rk, launch->ceSends, launch->nCeSends, stream);
fail:
  /* Joined even after a failed launch: a stream left forked would break a capture, and the copies
   * must be done before the stream's later work reads their output. */
  if (forked) {
    cudaError_t e = cudaStreamWaitEvent(stream, rk->join, 0);
    if (e != cudaSuccess && res == ncclSuccess)
      res = chrDevFail(ncclUnhandledCudaError, "rank %d: joining the copy-engine copies: %s", rk->cfg.rank,
                       cudaGetErrorString(e));
  }
  return res;
}

extern "C" int chrDevMaxWorks(void) { return CHR_DEV_SLOT_WORKS; }
