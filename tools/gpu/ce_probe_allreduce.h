/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_probe_allreduce.h: chorus-ce-probe's --allreduce prototype (ce_probe_allreduce.cu), a 2-rank
 * float all-reduce whose transfers run on the copy engines, measured beside the same run's pushes.
 * The probe's main file hands it the rank's buffers, the peer's (opened) and two words per rank in
 * host memory that both GPUs see.
 */
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

typedef CUresult (*chrProbeValueFn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

/* How the reduce-scatter half gets the peer's input (the gather half is always an engine push). */
enum chrProbeArMode {
  CHR_PROBE_AR_PULL = 0,   /* the engine pulls the peer's chunk into local scratch; the SMs add it */
  CHR_PROBE_AR_READ = 1,   /* the SMs read the peer's chunk over NVLink while adding */
  CHR_PROBE_AR_DIRECT = 2, /* one kernel: reads the peer's half, writes the sum here and into the peer */
  CHR_PROBE_AR_PUSH = 3,   /* the peer's engine pushes its chunk into scratch slots here (after this rank's
                              output, in the same allocation); the SMs add it; no GPU pulls */
};

struct chrProbeAr {
  int rank;                    /* 0 or 1; the peer is 1 - rank */
  cudaStream_t stream;         /* the call's stream: the reductions, and the two exchanges */
  float* x;                    /* this rank's input and output, `max` bytes each */
  float* y;
  const float* peerX;          /* the peer's, opened in this process */
  float* peerY;
  uint64_t room;               /* bytes in x's and y's allocations (PUSH's slots follow y's `bytes`) */
  CUdeviceptr word[2][4];      /* [rank][0: in the call, 1: done with the peer's buffers, 2: PUSH's chunks pushed
                                  into the peer's slots, 3: PUSH's chunks taken from this rank's slots], host memory */
  chrProbeValueFn waitValue;   /* cuStreamWaitValue64_v2 */
  chrProbeValueFn writeValue;  /* cuStreamWriteValue64_v2 */
  void (*barrier)(void);       /* both ranks' hosts meet */
  int ctas;                    /* the reduction kernels' CTAs */
};

/* Times `iters` all-reduces of `bytes` (after one warm-up) in `mode`, the reduce-scatter cut into
 * chunks of `chunk` bytes, and checks every element of this rank's output; prints
 * rank<r>_ar_<mode>_<chunk>_<bytes> lines. *k numbers the exchanges (both ranks pass the same).
 * Returns the wrong elements. */
unsigned long long chrProbeAllReduce(struct chrProbeAr* a, int mode, uint64_t bytes, uint64_t chunk, int iters,
                                     uint64_t* k);
