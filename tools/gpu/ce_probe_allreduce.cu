/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_probe_allreduce.cu: chorus-ce-probe --allreduce, a prototype of a 2-rank all-reduce whose bytes
 * cross NVLink on the copy engines (docs/perf/gpu-2gpu.md, Next 00ad). n1 (twelfth session) found
 * that the SMs and the engine pushing at once move no more than the engine alone (about 390 GB/s
 * each way, against the SMs' 345-365), so the one way past the kernels' 340-350 GB/s at 8 GB seemed
 * to be the engine carrying both halves and the SMs only adding, locally. n2 and n3 measured every
 * mode below slower than the library's ring kernels (PULL 325-337 GB/s at 32 MiB chunks, READ
 * 314-324, PUSH 288-335, DIRECT 327-344, the ring 330-351): kept as the record of why not.
 *
 * Rank r owns half r of the output. Per call: both ranks' streams meet (each writes its "in the call"
 * word, then waits for the peer's: both inputs are ready, both outputs free); then, chunk by chunk
 * of half r, the peer's input reaches this GPU (PULL: an engine copy into a scratch slot on a pull
 * stream; READ: the adding kernel loads it over NVLink), the SMs add it to this rank's input into
 * this rank's output (on the call's stream), and an engine copy on a push stream writes that sum
 * into the peer's output. Only local events order the three streams; the ranks meet twice a call
 * (the second time once each has stopped touching the other's buffers). DIRECT is one kernel
 * that reads the peer's half and writes the sum to both outputs: the SMs alone, without slots.
 * PUSH keeps each GPU's engine to pushes (one GPU that pushes and pulls at once moves about half
 * the link each way, pushpull_onegpu): the peer's push stream copies its chunk into a slot here and
 * then writes its "pushed" word; this rank's stream waits for that word, adds, and writes its
 * "taken" word, which the peer's push stream waits for before it refills the slot. Those two words
 * are the only cross-GPU waits per chunk; both count chunks from the probe's start.
 */
#include "ce_probe_allreduce.h"

#include <stdio.h>
#include <stdlib.h>

#define AR_CK(call)                                                                                 \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "chorus-ce-probe --allreduce rank %d: %s: %s\n", a->rank, #call,              \
              cudaGetErrorString(e_));                                                              \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

enum { AR_SLOTS = 4, AR_MAX_CHUNKS = 256 };

static __device__ float arValue(uint64_t i, int rank) { return (float)((i * 7u + (uint64_t)rank * 13u) % 1021u); }

__global__ void arFill(float* x, uint64_t n, int rank) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    x[i] = arValue(i, rank);
}

/* Every element must be the sum of both ranks' inputs (small integers: exact in float). */
__global__ void arCheck(const float* y, uint64_t n, unsigned long long* wrong) {
  unsigned long long w = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    w += y[i] != arValue(i, 0) + arValue(i, 1);
  if (w) atomicAdd(wrong, w);
}

/* y = a + b, and y2 too when given; four packs of 16 bytes in flight per thread (b may be remote). */
__global__ void arSum(float4* y, float4* y2, const float4* a, const float4* b, uint64_t n) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4 u[4], v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
      u[j] = a[i + j * stride];
      v[j] = b[i + j * stride];
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const float4 s = make_float4(u[j].x + v[j].x, u[j].y + v[j].y, u[j].z + v[j].z, u[j].w + v[j].w);
      y[i + j * stride] = s;
      if (y2) y2[i + j * stride] = s;
    }
  }
  for (; i < n; i += stride) {
    const float4 u = a[i], v = b[i];
    const float4 s = make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w);
    y[i] = s;
    if (y2) y2[i] = s;
  }
}

struct arStreams {
  cudaStream_t pull, push;
  cudaEvent_t start, pulled[AR_SLOTS], added[AR_SLOTS], pullEnd, pushEnd;
  float* scratch[AR_SLOTS];
};

static __thread uint64_t gPushSeq; /* PUSH: chunks queued so far (both ranks cut alike) */

static void streamValueOn(struct chrProbeAr* a, cudaStream_t st, chrProbeValueFn fn, CUdeviceptr word, uint64_t v,
                          const char* what) {
  const unsigned flags = fn == a->waitValue ? CU_STREAM_WAIT_VALUE_GEQ : 0;
  if (fn((CUstream)st, word, v, flags) != CUDA_SUCCESS) {
    fprintf(stderr, "chorus-ce-probe --allreduce rank %d: stream %s word failed\n", a->rank, what);
    exit(1);
  }
}
static void streamValue(struct chrProbeAr* a, chrProbeValueFn fn, CUdeviceptr word, uint64_t v, const char* what) {
  streamValueOn(a, a->stream, fn, word, v, what);
}

/* One all-reduce, queued; k is its exchange number. */
static void queueOne(struct chrProbeAr* a, struct arStreams* s, int mode, uint64_t bytes, uint64_t chunk, uint64_t k) {
  const int r = a->rank, p = 1 - r;
  const uint64_t half = bytes / 2 / sizeof(float); /* elements */
  const uint64_t mine = (uint64_t)r * half;
  streamValue(a, a->writeValue, a->word[r][0], k, "in-the-call");
  streamValue(a, a->waitValue, a->word[p][0], k, "in-the-call");
  if (mode == CHR_PROBE_AR_DIRECT) {
    arSum<<<a->ctas, 512, 0, a->stream>>>((float4*)(a->y + mine), (float4*)(a->peerY + mine),
                                          (const float4*)(a->x + mine), (const float4*)(a->peerX + mine), half / 4);
    AR_CK(cudaGetLastError());
  } else {
    AR_CK(cudaEventRecord(s->start, a->stream));
    AR_CK(cudaStreamWaitEvent(s->pull, s->start, 0));
    AR_CK(cudaStreamWaitEvent(s->push, s->start, 0));
    const uint64_t each = chunk / sizeof(float);
    for (uint64_t i = 0, off = 0; off < half; i++, off += each) {
      const int slot = (int)(i % AR_SLOTS);
      const uint64_t len = half - off < each ? half - off : each;
      const float* other = a->peerX + mine + off;
      if (mode == CHR_PROBE_AR_PUSH) { /* slots by the chunk's number since the start: both ranks agree */
        const uint64_t q = ++gPushSeq, at = (q % AR_SLOTS) * each, theirs = (uint64_t)p * half;
        if (q > AR_SLOTS) streamValueOn(a, s->pull, a->waitValue, a->word[p][3], q - AR_SLOTS, "taken");
        AR_CK(cudaMemcpyAsync(a->peerY + 2 * half + at, a->x + theirs + off, len * sizeof(float),
                              cudaMemcpyDeviceToDevice, s->pull));
        streamValueOn(a, s->pull, a->writeValue, a->word[r][2], q, "pushed");
        streamValue(a, a->waitValue, a->word[p][2], q, "pushed");
        other = a->y + 2 * half + at;
      }
      if (mode == CHR_PROBE_AR_PULL) {
        if (i >= AR_SLOTS) AR_CK(cudaStreamWaitEvent(s->pull, s->added[slot], 0)); /* the slot's last sum is done */
        AR_CK(cudaMemcpyAsync(s->scratch[slot], other, len * sizeof(float), cudaMemcpyDeviceToDevice, s->pull));
        AR_CK(cudaEventRecord(s->pulled[slot], s->pull));
        AR_CK(cudaStreamWaitEvent(a->stream, s->pulled[slot], 0));
        other = s->scratch[slot];
      }
      arSum<<<a->ctas, 512, 0, a->stream>>>((float4*)(a->y + mine + off), NULL, (const float4*)(a->x + mine + off),
                                            (const float4*)other, len / 4);
      AR_CK(cudaGetLastError());
      if (mode == CHR_PROBE_AR_PUSH) streamValue(a, a->writeValue, a->word[r][3], gPushSeq, "taken");
      AR_CK(cudaEventRecord(s->added[slot], a->stream));
      AR_CK(cudaStreamWaitEvent(s->push, s->added[slot], 0));
      AR_CK(cudaMemcpyAsync(a->peerY + mine + off, a->y + mine + off, len * sizeof(float), cudaMemcpyDeviceToDevice,
                            s->push));
    }
    AR_CK(cudaEventRecord(s->pullEnd, s->pull));
    AR_CK(cudaEventRecord(s->pushEnd, s->push));
    AR_CK(cudaStreamWaitEvent(a->stream, s->pullEnd, 0));
    AR_CK(cudaStreamWaitEvent(a->stream, s->pushEnd, 0));
  }
  streamValue(a, a->writeValue, a->word[r][1], k, "done");
  streamValue(a, a->waitValue, a->word[p][1], k, "done");
}

static const char* modeName(int mode) {
  return mode == CHR_PROBE_AR_PULL ? "pull" : mode == CHR_PROBE_AR_READ ? "read" : mode == CHR_PROBE_AR_PUSH ? "push" : "direct";
}

unsigned long long chrProbeAllReduce(struct chrProbeAr* a, int mode, uint64_t bytes, uint64_t chunk, int iters,
                                     uint64_t* k) {
  const uint64_t n = bytes / sizeof(float), half = bytes / 2;
  if (chunk < half / AR_MAX_CHUNKS) chunk = half / AR_MAX_CHUNKS; /* the host keeps ahead of the GPU */
  chunk = (chunk + 15) / 16 * 16;
  if (chunk > half) chunk = half;
  if (mode == CHR_PROBE_AR_PUSH && bytes + AR_SLOTS * chunk > a->room) {
    if (a->rank == 0) printf("ar_push_%llu skipped: the slots do not fit after the output\n", (unsigned long long)bytes);
    return 0;
  }
  struct arStreams s = {};
  AR_CK(cudaStreamCreateWithFlags(&s.pull, cudaStreamNonBlocking));
  AR_CK(cudaStreamCreateWithFlags(&s.push, cudaStreamNonBlocking));
  cudaEvent_t* evs[] = {&s.start, &s.pullEnd, &s.pushEnd};
  for (cudaEvent_t* e : evs) AR_CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  for (int i = 0; i < AR_SLOTS; i++) {
    AR_CK(cudaEventCreateWithFlags(&s.pulled[i], cudaEventDisableTiming));
    AR_CK(cudaEventCreateWithFlags(&s.added[i], cudaEventDisableTiming));
    if (mode == CHR_PROBE_AR_PULL) AR_CK(cudaMalloc(&s.scratch[i], chunk));
  }
  arFill<<<264, 512, 0, a->stream>>>(a->x, n, a->rank);
  AR_CK(cudaMemsetAsync(a->y, 0, bytes, a->stream));
  AR_CK(cudaStreamSynchronize(a->stream));
  a->barrier();
  queueOne(a, &s, mode, bytes, chunk, ++*k); /* warm-up */
  AR_CK(cudaStreamSynchronize(a->stream));
  a->barrier();
  double t = 0;
  {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < iters; i++) queueOne(a, &s, mode, bytes, chunk, ++*k);
    AR_CK(cudaStreamSynchronize(a->stream));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t = ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / iters;
  }
  a->barrier(); /* the peer's pushes into this output are over (its stream passed "done") */
  unsigned long long* wrong = NULL;
  unsigned long long w = 0;
  AR_CK(cudaMalloc(&wrong, sizeof(*wrong)));
  AR_CK(cudaMemsetAsync(wrong, 0, sizeof(*wrong), a->stream));
  arCheck<<<264, 512, 0, a->stream>>>(a->y, n, wrong);
  AR_CK(cudaMemcpyAsync(&w, wrong, sizeof(w), cudaMemcpyDeviceToHost, a->stream));
  AR_CK(cudaStreamSynchronize(a->stream));
  AR_CK(cudaFree(wrong));
  printf("rank%d_ar_%s_%llu_%llu %.1f us %.2f GB/s\n", a->rank, modeName(mode), (unsigned long long)chunk,
         (unsigned long long)bytes, t, bytes / t / 1e3);
  printf("rank%d_ar_wrong_%llu %llu elements\n", a->rank, (unsigned long long)bytes, w);
  a->barrier();
  for (int i = 0; i < AR_SLOTS; i++) {
    cudaEventDestroy(s.pulled[i]);
    cudaEventDestroy(s.added[i]);
    if (s.scratch[i]) cudaFree(s.scratch[i]);
  }
  for (cudaEvent_t* e : evs) cudaEventDestroy(*e);
  cudaStreamDestroy(s.pull);
  cudaStreamDestroy(s.push);
  return w;
}
