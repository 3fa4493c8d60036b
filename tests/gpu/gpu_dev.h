/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_dev.h: what the GPU tests share: the "no CUDA device" skip, CUDA error checks, and waiting
 * for every rank's stream with a deadline (a hang is reported, then the ranks are aborted, never
 * waited for forever).
 */
#ifndef CHORUS_TESTS_GPU_DEV_H_
#define CHORUS_TESTS_GPU_DEV_H_

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include "hostdev/dev_api.h"

#define CT_SKIP 77 /* ctest SKIP_RETURN_CODE */

#define CT_CUDA(call)                                                                                     \
  do {                                                                                                    \
    cudaError_t e_ = (call);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

#define CT_DEV(call)                                                                                      \
  do {                                                                                                    \
    ncclResult_t r_ = (call);                                                                             \
    if (r_ != ncclSuccess) {                                                                              \
      fprintf(stderr, "%s:%d: %s: error %d: %s\n", __FILE__, __LINE__, #call, (int)r_, chrDevLastError()); \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

/* Sets CUDA_DEVICE_MAX_CONNECTIONS (unless set) so every rank's stream gets a hardware queue of its
 * own; call before any CUDA call (chrTestRequireGpu does). */
void chrTestUseManyQueues(void);

/* Exits with CT_SKIP ("no CUDA device") when there is no usable GPU; prints the device otherwise. */
void chrTestRequireGpu(const char* prog);

/* Waits until every stream is idle. 0: done; 1: still busy after timeoutMs (nothing aborted); 2: a
 * CUDA error (a kernel fault; printed). */
int chrTestWaitStreams(cudaStream_t* streams, int n, int timeoutMs);

/* Monotonic seconds. */
double chrTestNow(void);

#endif /* CHORUS_TESTS_GPU_DEV_H_ */
