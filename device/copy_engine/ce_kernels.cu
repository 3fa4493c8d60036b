/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_kernels.cu: the kernel of copy-engine sends (ce_kernels.h).
 */
#include "device/copy_engine/ce_kernels.h"
#include "device/copy_engine/ce_timing.cuh"
#include "device/common/dev_error.h"
#include "hostdev/ce_mailbox.h"

/* Build switches (CUDA_DEFINES), for an A/B on a GPU. */
#ifndef CHR_CE_COPY_THREADS
#define CHR_CE_COPY_THREADS 512
#endif
#ifndef CHR_CE_COPY_UNROLL
#define CHR_CE_COPY_UNROLL 4 /* 16-byte loads in flight per thread: 32 KiB per CTA at 512 threads */
#endif
#define COPY_THREADS CHR_CE_COPY_THREADS
#define COPY_UNROLL CHR_CE_COPY_UNROLL
#define POLL_NS 500
#define SHARE_POLL_NS 100 /* device memory the first CTA writes: cheap to read often */

/* A mailbox word: host memory that the host or the peer's GPU writes. Plain volatile reads: the
 * stronger loads (ld.relaxed.sys, ld.global.cv, ld.mmio.relaxed.sys) waited no less
 * (docs/perf/gpu-2gpu.md); what made kernel copies wait was many CTAs polling one word (copyShare). */
__device__ static __forceinline__ unsigned long long peek(const volatile unsigned long long* p) { return *p; }
__device__ static __forceinline__ unsigned int peek32(const volatile unsigned int* p) { return *p; }

/* The waits' CTA: one thread polls every word until it reaches its number. */
__device__ static void waitAll(const struct chrCeGroupArgs* a) {
  if (threadIdx.x != 0) return;
  const unsigned long long t0 = chrCeClockWaitsStart();
  for (int i = 0; i < a->nWaits; i++)
    while (peek(a->word[i]) < a->k[i]) {
      if (peek32(a->abortFlag)) return;
      __nanosleep(POLL_NS);
    }
  if (a->nWaits > 0) chrCeClockWaitsEnd(t0, a->k[0]);
}

/* Bytes [lo, hi) of src to dst: 16 bytes at a time when both are aligned so, else byte by byte. */
__device__ static void copyPart(char* dst, const char* src, unsigned long long lo, unsigned long long hi) {
  if ((((uintptr_t)dst | (uintptr_t)src | lo) & 15) == 0) {
    const uint4* s = (const uint4*)(src + lo);
    uint4* d = (uint4*)(dst + lo);
    const unsigned long long n = (hi - lo) / 16;
    for (unsigned long long base = 0; base < n; base += (unsigned long long)COPY_THREADS * COPY_UNROLL) {
      uint4 v[COPY_UNROLL];
#pragma unroll
      for (int u = 0; u < COPY_UNROLL; u++) {
        const unsigned long long i = base + (unsigned long long)u * COPY_THREADS + threadIdx.x;
        if (i < n) v[u] = __ldcs(s + i);
      }
#pragma unroll
      for (int u = 0; u < COPY_UNROLL; u++) {
        const unsigned long long i = base + (unsigned long long)u * COPY_THREADS + threadIdx.x;
        if (i < n) d[i] = v[u];
      }
    }
    lo += n * 16;
  }
  for (unsigned long long i = lo + threadIdx.x; i < hi; i += COPY_THREADS) dst[i] = src[i];
}

/* Thread 0: waits until transfer j is published and its receiver ready, then reads the publish as a
 * seqlock (the agent writes dstPtr, then dstK): a pull frees the slot before this kernel looks, so
 * the slot's next transfer may be published already, and dstK past k means j was pulled. Returns
 * the buffer, CHR_CE_DST_PULLED, or 0 (copy nothing); *quit on an abort. */
__device__ static unsigned long long published(const struct chrCeGroupArgs* a, const struct chrCeCopyJob* j, int* quit,
                                                struct chrCeClock* clk) {
  for (;;) {
    while (peek(j->dstK) < j->k || peek(j->ready) < j->k) {
      if (peek32(a->abortFlag)) {
        *quit = 1;
        return 0;
      }
      if (CHR_CE_TIMING) chrCeClockPoll(clk, peek(j->dstK) >= j->k, peek(j->ready) >= j->k);
      __nanosleep(POLL_NS);
    }
    const unsigned long long seen = peek(j->dstK);
    __threadfence_system();
    const unsigned long long ptr = peek(j->dstPtr);
    __threadfence_system();
    if (peek(j->dstK) == seen) return seen > j->k ? CHR_CE_DST_PULLED : ptr;
  }
}

/* One CTA's share of copy j: once the buffer is published and the receiver ready; the last CTA of
 * the copy to finish sets the receiver's done word. A pulled transfer: the first CTA waits for the
 * pull's done word (the send buffer is read until then), the others leave.
 * Only the copy's first CTA polls the mailbox in host memory and hands what it read to the others
 * through the slot's chrCeCopySync in device memory: with every CTA polling the same host word, each
 * copy saw its publish far later than one poller does (docs/perf/gpu-2gpu.md). The
 * others wait on their first CTA, which the GPU starts before them (blocks start in index order, as
 * single-pass scans rely on too), and each leaves on an abort. */
__device__ static void copyShare(const struct chrCeGroupArgs* a, const struct chrCeCopyJob* j, int part) {
  __shared__ char* dst;
  __shared__ int quit;
  struct chrCeClock clk;
  chrCeClockStart(&clk);
  if (threadIdx.x == 0) {
    quit = 0;
    unsigned long long p = 0;
    volatile struct chrCeCopySync* sync = j->sync;
    if (part == 0) {
      p = published(a, j, &quit, &clk);
      sync->dst = p;
      sync->quit = (unsigned)quit;
      __threadfence();
      sync->seenK = j->k;
    } else {
      for (unsigned n = 1; sync->seenK != j->k; n++) {
        if ((n & 63) == 0 && peek32(a->abortFlag)) {
          quit = 1;
          break;
        }
        __nanosleep(SHARE_POLL_NS);
      }
      __threadfence();
      if (!quit) {
        p = sync->dst;
        quit = (int)sync->quit;
      }
    }
    if (p == CHR_CE_DST_PULLED) {
      while (part == 0 && peek(j->senderDone) < j->k && !peek32(a->abortFlag)) __nanosleep(POLL_NS);
      quit = 1;
    }
    dst = quit ? NULL : (char*)(uintptr_t)p;
    chrCeClockSeen(&clk);
  }
  __syncthreads();
  if (quit) return; /* the abort writes every done word; a pull writes its own */
  if (dst != NULL) {
    /* this CTA's share, in 16-byte units so that every share but the last starts aligned */
    const unsigned long long units = (j->bytes + 15) / 16, per = (units + a->ctasPerJob - 1) / a->ctasPerJob;
    unsigned long long lo = per * 16 * (unsigned long long)part, hi = lo + per * 16;
    if (hi > j->bytes) hi = j->bytes;
    if (lo < hi) copyPart(dst, j->src, lo, hi);
  }
  __threadfence_system(); /* this thread's stores reach the peer before the done word below */
  __syncthreads();
  if (threadIdx.x == 0) chrCeClockShareDone(&clk, j->k, part);
  if (threadIdx.x == 0 && atomicAdd(&j->sync->finished, 1u) == (unsigned)a->ctasPerJob - 1) {
    j->sync->finished = 0; /* every CTA of the copy has counted: ready for the slot's next one */
    chrCeClockCopyEnd();
    __threadfence_system();
    *(volatile unsigned long long*)j->done = j->k;
  }
}

__global__ void __launch_bounds__(COPY_THREADS) ceGroupKernel(const __grid_constant__ struct chrCeGroupArgs a) {
  const int job = (int)(blockIdx.x / a.ctasPerJob);
  if (job < a.nJobs) copyShare(&a, &a.job[job], (int)(blockIdx.x % a.ctasPerJob));
  else waitAll(&a);
}

ncclResult_t chrCeLoadKernels(void) {
  cudaFuncAttributes attr;
  const cudaError_t e = cudaFuncGetAttributes(&attr, ceGroupKernel); /* loads its module on this device */
  if (e != cudaSuccess)
    return chrDevFail(ncclUnhandledCudaError, "loading the copy-engine kernel: %s", cudaGetErrorString(e));
  return ncclSuccess;
}

cudaError_t chrCeLaunchGroup(const struct chrCeGroupArgs* a, cudaStream_t stream) {
  if (a->nJobs == 0 && a->nWaits == 0) return cudaSuccess;
  const int blocks = a->nJobs * a->ctasPerJob + (a->nWaits > 0 ? 1 : 0);
  ceGroupKernel<<<blocks, COPY_THREADS, 0, stream>>>(*a);
  return cudaGetLastError();
}
