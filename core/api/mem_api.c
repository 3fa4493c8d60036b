/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem_api.c: ncclMemAlloc / ncclMemFree. GPU memory on the calling thread's current device, through
 * the device library (cuda/device_lib.h); without a GPU path they fail with a clear error. The
 * allocations are remembered, so ncclMemFree refuses a pointer it did not hand out (freeing a
 * cudaMalloc'd or already freed buffer would otherwise release memory someone else still owns).
 */
#include <pthread.h>
#include <stdlib.h>
#include "api/api.h"
#include "cuda/cuda_driver.h"
#include "cuda/device_lib.h"
#include "log/check.h"
#include "log/log.h"

static pthread_mutex_t memLock = PTHREAD_MUTEX_INITIALIZER;
static void** live; /* the pointers ncclMemAlloc returned and ncclMemFree has not taken back */
static size_t nLive, capLive;

static int remember(void* p) {
  pthread_mutex_lock(&memLock);
  int ok = 1;
  if (nLive == capLive) {
    size_t cap = capLive ? 2 * capLive : 64;
    void** grown = realloc(live, cap * sizeof(*live));
    if (grown == NULL) ok = 0;
    else live = grown, capLive = cap;
  }
  if (ok) live[nLive++] = p;
  pthread_mutex_unlock(&memLock);
  return ok;
}

/* Takes p out of the set; 0 when it was not there. */
static int forget(void* p) {
  pthread_mutex_lock(&memLock);
  int found = 0;
  for (size_t i = 0; i < nLive && !found; i++)
    if (live[i] == p) {
      live[i] = live[--nLive];
      found = 1;
    }
  pthread_mutex_unlock(&memLock);
  return found;
}

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (ptr == NULL) return chrFail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  *ptr = NULL;
  if (size == 0) return chrFail(ncclInvalidArgument, "ncclMemAlloc: size is 0");
  const struct chrDevLib* lib = chrDevLibGet();
  if (lib == NULL)
    return chrFail(ncclInvalidUsage, "ncclMemAlloc: no GPU path here (no CUDA driver or no %s; NCCL_DEBUG=INFO says "
                   "which)", CHR_DEVICE_LIB_NAME);
  const int dev = chrCudaCurrentDevice();
  void* p = NULL;
  ncclResult_t res = lib->memAlloc(dev < 0 ? 0 : dev, &p, size);
  if (res != ncclSuccess)
    return chrFail(res, "ncclMemAlloc: %zu bytes on GPU %d: %s", size, dev, lib->lastError());
  if (!remember(p)) {
    lib->memFree(p);
    return chrFail(ncclSystemError, "ncclMemAlloc: out of host memory to track the allocation");
  }
  *ptr = p;
  TRACE(NCCL_ALLOC, "ncclMemAlloc: %zu bytes at %p on GPU %d", size, p, dev);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr == NULL) return ncclSuccess; /* as free(NULL) */
  if (!forget(ptr))
    return chrFail(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc (or is freed already)", ptr);
  const struct chrDevLib* lib = chrDevLibGet(); /* loaded: the allocation came from it */
  ncclResult_t res = lib->memFree(ptr);
  if (res != ncclSuccess) return chrFail(res, "ncclMemFree: %p: %s", ptr, lib->lastError());
  return ncclSuccess;
}
