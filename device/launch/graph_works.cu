/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph_works.cu: graph-owned work storage (graph_works.h).
 *
 * A buffer handed to a graph comes back through the user object's destructor, which CUDA calls on
 * an internal thread once the graph and its instantiations are destroyed and their launches have
 * finished. The destructor may not call CUDA, so it only queues the buffer on a free list; the next
 * captured launch that needs one reuses it, and a rank's destroy frees what is queued.
 */
#include <pthread.h>
#include <stdlib.h>
#include "device/common/dev_error.h"
#include "device/launch/graph_works.h"

struct graphBuf {
  struct graphBuf* next;
  struct chrWork* host; /* pinned, portable and mapped: any rank's GPU may read it */
  int capacity;         /* works */
};

static pthread_mutex_t freeLock = PTHREAD_MUTEX_INITIALIZER;
static struct graphBuf* freeList; /* given back by their graphs, ready for reuse */

static void CUDART_CB giveBack(void* p) {
  struct graphBuf* b = (struct graphBuf*)p;
  pthread_mutex_lock(&freeLock);
  b->next = freeList;
  freeList = b;
  pthread_mutex_unlock(&freeLock);
}

/* The smallest queued buffer that holds `count` works, taken off the list; NULL if none does. */
static struct graphBuf* reuse(int count) {
  pthread_mutex_lock(&freeLock);
  struct graphBuf** best = NULL;
  for (struct graphBuf** p = &freeList; *p; p = &(*p)->next)
    if ((*p)->capacity >= count && (best == NULL || (*p)->capacity < (*best)->capacity)) best = p;
  struct graphBuf* b = NULL;
  if (best) {
    b = *best;
    *best = b->next;
  }
  pthread_mutex_unlock(&freeLock);
  return b;
}

/* A buffer for `count` works and its address on the current GPU. Runs with the thread's capture
 * mode relaxed (the caller's): an allocation in the middle of a global-mode capture would end it. */
static ncclResult_t takeBuffer(int rank, int count, struct graphBuf** out, struct chrWork** dev) {
  struct graphBuf* b = reuse(count);
  cudaError_t e = cudaSuccess;
  if (b == NULL) {
    b = (struct graphBuf*)calloc(1, sizeof(*b));
    if (b == NULL) return chrDevFail(ncclSystemError, "rank %d: no memory for a captured launch's works", rank);
    b->capacity = (count + 63) & ~63;
    e = cudaHostAlloc((void**)&b->host, sizeof(struct chrWork) * (size_t)b->capacity,
                      cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
      free(b);
      return chrDevFail(ncclUnhandledCudaError, "rank %d: allocating %d works for a captured launch: %s", rank, count,
                        cudaGetErrorString(e));
    }
  }
  e = cudaHostGetDevicePointer((void**)dev, b->host, 0);
  if (e != cudaSuccess) {
    giveBack(b);
    return chrDevFail(ncclUnhandledCudaError, "rank %d: the device address of a captured launch's works: %s", rank,
                      cudaGetErrorString(e));
  }
  *out = b;
  return ncclSuccess;
}

ncclResult_t chrDevGraphWorks(int rank, cudaStream_t stream, int count, struct chrWork** host, struct chrWork** dev) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = NULL;
  cudaError_t e = cudaStreamGetCaptureInfo(stream, &status, NULL, &graph);
  if (e != cudaSuccess)
    return chrDevFail(ncclUnhandledCudaError, "rank %d: cudaStreamGetCaptureInfo: %s", rank, cudaGetErrorString(e));
  if (status != cudaStreamCaptureStatusActive || graph == NULL)
    return chrDevFail(ncclInvalidUsage, "rank %d: the stream's capture is not active (status %d)", rank, (int)status);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  e = cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess)
    return chrDevFail(ncclUnhandledCudaError, "rank %d: relaxing the capture mode: %s", rank, cudaGetErrorString(e));
  struct graphBuf* b = NULL;
  ncclResult_t res = takeBuffer(rank, count, &b, dev);
  cudaThreadExchangeStreamCaptureMode(&mode); /* back to the caller's */
  if (res != ncclSuccess) return res;
  /* The graph takes our one reference: the buffer comes back through giveBack once the graph and
   * every instantiation of it are destroyed and their launches have finished. */
  cudaUserObject_t obj = NULL;
  e = cudaUserObjectCreate(&obj, b, giveBack, 1, cudaUserObjectNoDestructorSync);
  if (e == cudaSuccess) e = cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove);
  if (e != cudaSuccess) {
    if (obj) cudaUserObjectRelease(obj, 1); /* its destructor queues the buffer */
    else giveBack(b);
    return chrDevFail(ncclUnhandledCudaError, "rank %d: handing a captured launch's works to the graph: %s", rank,
                      cudaGetErrorString(e));
  }
  *host = b->host;
  return ncclSuccess;
}

void chrDevGraphWorksTrim(void) {
  pthread_mutex_lock(&freeLock);
  struct graphBuf* b = freeList;
  freeList = NULL;
  pthread_mutex_unlock(&freeLock);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed; /* as for the allocation */
  const int relaxed = b != NULL && cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  while (b) {
    struct graphBuf* next = b->next;
    cudaFreeHost(b->host);
    free(b);
    b = next;
  }
  if (relaxed) cudaThreadExchangeStreamCaptureMode(&mode);
}
