/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_staging.c: the proxy's copies for ends staged through host memory (net_staging.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "cuda/cuda_driver.h"
#include "cuda/net_staging.h"
#include "log/check.h"
#include "log/log.h"

struct staging {
  int cudaDev;
  pthread_mutex_t lock; /* the context, retained by the first copy of any thread */
  int retained;
  chrCuDevice device;
  chrCuContext ctx;
  chrCuStream streams[CHR_DEV_NET_MAX_THREADS]; /* each proxy thread's; NULL until its first copy */
};

static ncclResult_t cuFailed(const struct staging* s, const char* call, chrCuResult r) {
  return chrFail(ncclUnhandledCudaError, "GPU %d: %s returned CUDA error %d", s->cudaDev, call, r);
}

static ncclResult_t retainContext(struct staging* s, const struct chrCudaDriver* d) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&s->lock);
  if (!s->retained) {
    chrCuResult r = d->cuDeviceGet(&s->device, s->cudaDev);
    if (r == CHR_CUDA_SUCCESS) r = d->cuDevicePrimaryCtxRetain(&s->ctx, s->device);
    if (r == CHR_CUDA_SUCCESS) s->retained = 1;
    else res = cuFailed(s, "cuDevicePrimaryCtxRetain", r);
  }
  pthread_mutex_unlock(&s->lock);
  return res;
}

static ncclResult_t stagingCopy(void* arg, int thread, void* dst, const void* src, size_t bytes) {
  struct staging* s = arg;
  const struct chrCudaDriver* d = chrCudaDriverGet();
  if (d == NULL || !d->cuDeviceGet || !d->cuDevicePrimaryCtxRetain || !d->cuCtxSetCurrent || !d->cuStreamCreate ||
      !d->cuMemcpyAsync || !d->cuStreamSynchronize)
    return chrFail(ncclUnhandledCudaError, "GPU %d: the CUDA driver lacks what staging through host memory needs",
                   s->cudaDev);
  if (thread < 0 || thread >= CHR_DEV_NET_MAX_THREADS)
    return chrFail(ncclInternalError, "staging copy from proxy thread %d", thread);
  CHECK(retainContext(s, d));
  chrCuResult r = d->cuCtxSetCurrent(s->ctx);
  if (r != CHR_CUDA_SUCCESS) return cuFailed(s, "cuCtxSetCurrent", r);
  if (s->streams[thread] == NULL) {
    r = d->cuStreamCreate(&s->streams[thread], CHR_CU_STREAM_NON_BLOCKING);
    if (r != CHR_CUDA_SUCCESS) return cuFailed(s, "cuStreamCreate", r);
  }
  r = d->cuMemcpyAsync((chrCuDevicePtr)(uintptr_t)dst, (chrCuDevicePtr)(uintptr_t)src, bytes, s->streams[thread]);
  if (r != CHR_CUDA_SUCCESS) return cuFailed(s, "cuMemcpyAsync", r);
  r = d->cuStreamSynchronize(s->streams[thread]);
  return r == CHR_CUDA_SUCCESS ? ncclSuccess : cuFailed(s, "cuStreamSynchronize", r);
}

static void stagingDestroy(void* arg) {
  struct staging* s = arg;
  const struct chrCudaDriver* d = chrCudaDriverGet();
  if (s->retained && d != NULL) { /* on the caller's thread: its current context is put back */
    chrCuContext saved = NULL;
    const int restore = d->cuCtxGetCurrent != NULL && d->cuCtxGetCurrent(&saved) == CHR_CUDA_SUCCESS;
    if (d->cuCtxSetCurrent(s->ctx) == CHR_CUDA_SUCCESS && d->cuStreamDestroy)
      for (int t = 0; t < CHR_DEV_NET_MAX_THREADS; t++)
        if (s->streams[t]) d->cuStreamDestroy(s->streams[t]);
    if (restore) d->cuCtxSetCurrent(saved);
    if (d->cuDevicePrimaryCtxRelease) d->cuDevicePrimaryCtxRelease(s->device);
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
}

ncclResult_t chrNetStagingCopier(int cudaDev, struct chrDevNetCopier* out) {
  struct staging* s = calloc(1, sizeof(*s));
  if (s == NULL) return chrFail(ncclSystemError, "out of memory for a staging copier");
  s->cudaDev = cudaDev;
  pthread_mutex_init(&s->lock, NULL);
  *out = (struct chrDevNetCopier){.copy = stagingCopy, .destroy = stagingDestroy, .arg = s};
  return ncclSuccess;
}
