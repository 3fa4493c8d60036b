/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_dev.c: GPU test helpers (gpu_dev.h). */
#include "gpu_dev.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

double chrTestNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void chrTestUseManyQueues(void) {
  /* The ranks' streams must not share a hardware queue: a kernel queued behind another rank's kernel
   * that waits for it would never start. 8 queues is CUDA's default, exactly 8 ranks; ask for the
   * most (read when the context is created, so before any CUDA call). */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
}

void chrTestRequireGpu(const char* prog) {
  chrTestUseManyQueues();
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("%s: SKIP: no CUDA device (%s)\n", prog, e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    exit(CT_SKIP);
  }
  struct cudaDeviceProp prop;
  CT_CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("%s: %s, sm_%d%d, %d SMs\n", prog, prop.name, prop.major, prop.minor, prop.multiProcessorCount);
}

int chrTestWaitStreams(cudaStream_t* streams, int n, int timeoutMs) {
  const double deadline = chrTestNow() + timeoutMs / 1000.0;
  for (;;) {
    int busy = 0;
    for (int i = 0; i < n; i++) {
      cudaError_t e = cudaStreamQuery(streams[i]);
      if (e == cudaErrorNotReady) {
        busy = 1;
        continue;
      }
      if (e != cudaSuccess) {
        fprintf(stderr, "stream %d: %s\n", i, cudaGetErrorString(e));
        return 2;
      }
    }
    if (!busy) return 0;
    if (chrTestNow() > deadline) return 1;
    usleep(50);
  }
}
