/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_gdr_cuda.c: the gdrtest NIC's use of the CUDA driver (testnet_gdr_cuda.h): the few calls a
 * NIC that copies between GPU memory and pinned mirrors needs (values as in CUDA's cuda.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testnet_gdr_cuda.h"


typedef int gdrCuResult;
typedef unsigned long long gdrCuDevicePtr;
typedef void* gdrCuContext;
typedef void* gdrCuStream;
#define GDR_CUDA_SUCCESS 0
#define GDR_CU_POINTER_ATTRIBUTE_CONTEXT 1
#define GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define GDR_CU_MEMORYTYPE_DEVICE 2
#define GDR_CU_STREAM_NON_BLOCKING 0x1
#define GDR_CU_MEMHOSTALLOC_PORTABLE 0x1

static struct {
  gdrCuResult (*cuInit)(unsigned int flags);
  gdrCuResult (*cuGetErrorString)(gdrCuResult error, const char** text);
  gdrCuResult (*cuPointerGetAttribute)(void* data, int attribute, gdrCuDevicePtr ptr);
  gdrCuResult (*cuCtxGetCurrent)(gdrCuContext* ctx);
  gdrCuResult (*cuCtxPushCurrent)(gdrCuContext ctx);
  gdrCuResult (*cuCtxPopCurrent)(gdrCuContext* ctx);
  gdrCuResult (*cuMemHostAlloc)(void** p, size_t bytes, unsigned int flags);
  gdrCuResult (*cuMemFreeHost)(void* p);
  gdrCuResult (*cuStreamCreate)(gdrCuStream* stream, unsigned int flags);
  gdrCuResult (*cuStreamDestroy)(gdrCuStream stream);
  gdrCuResult (*cuStreamSynchronize)(gdrCuStream stream);
  gdrCuResult (*cuMemcpyDtoHAsync)(void* dst, gdrCuDevicePtr src, size_t bytes, gdrCuStream stream);
  gdrCuResult (*cuMemcpyHtoDAsync)(gdrCuDevicePtr dst, const void* src, size_t bytes, gdrCuStream stream);
} cu;
static int cudaLoaded;          /* written once, under cudaOnce */
static char cudaMissing[256];   /* why there is no driver */
static pthread_once_t cudaOnce = PTHREAD_ONCE_INIT;

static void loadCuda(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(cudaMissing, sizeof(cudaMissing), "cannot load libcuda.so.1: %s", dlerror());
    return;
  }
  /* Versioned names where the driver has several (cuda.h maps the plain names to these). */
  const struct { const char* name; void* slot; } syms[] = {
      {"cuInit", &cu.cuInit}, {"cuGetErrorString", &cu.cuGetErrorString},
      {"cuPointerGetAttribute", &cu.cuPointerGetAttribute}, {"cuCtxGetCurrent", &cu.cuCtxGetCurrent},
      {"cuCtxPushCurrent_v2", &cu.cuCtxPushCurrent}, {"cuCtxPopCurrent_v2", &cu.cuCtxPopCurrent},
      {"cuMemHostAlloc", &cu.cuMemHostAlloc}, {"cuMemFreeHost", &cu.cuMemFreeHost},
      {"cuStreamCreate", &cu.cuStreamCreate}, {"cuStreamDestroy_v2", &cu.cuStreamDestroy},
      {"cuStreamSynchronize", &cu.cuStreamSynchronize}, {"cuMemcpyDtoHAsync_v2", &cu.cuMemcpyDtoHAsync},
      {"cuMemcpyHtoDAsync_v2", &cu.cuMemcpyHtoDAsync},
  };
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    void* sym = dlsym(lib, syms[i].name);
    if (sym == NULL) {
      snprintf(cudaMissing, sizeof(cudaMissing), "libcuda.so.1 has no %s", syms[i].name);
      return; /* the library stays loaded: unloading a driver is not safe */
    }
    memcpy(syms[i].slot, &sym, sizeof(sym)); /* ISO C has no object -> function pointer cast */
  }
  gdrCuResult r = cu.cuInit(0);
  if (r != GDR_CUDA_SUCCESS) {
    snprintf(cudaMissing, sizeof(cudaMissing), "cuInit(0) returned %d", r);
    return;
  }
  cudaLoaded = 1;
}

int gdrCudaUsable(const char** why) {
  pthread_once(&cudaOnce, loadCuda);
  *why = cudaMissing;
  return cudaLoaded;
}

static ncclResult_t cuCheck(gdrCuResult r, const char* what) {
  if (r == GDR_CUDA_SUCCESS) return ncclSuccess;
  const char* text = NULL;
  if (cu.cuGetErrorString == NULL || cu.cuGetErrorString(r, &text) != GDR_CUDA_SUCCESS || text == NULL)
    text = "unknown CUDA error";
  GDR_WARN("%s failed: CUDA error %d (%s)", what, r, text);
  return ncclUnhandledCudaError;
}

/* The caller's current context is kept: each use of a region's context is a push and a pop. */
static ncclResult_t pushContext(gdrCuContext context) { return cuCheck(cu.cuCtxPushCurrent(context), "cuCtxPushCurrent"); }
static void popContext(void) {
  gdrCuContext popped = NULL;
  (void)cuCheck(cu.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
}

/* ---- contexts: one non-blocking stream each, kept while a CUDA registration uses it -------------- */

struct gdrCtx {
  gdrCuContext context;
  gdrCuStream stream; /* CU_STREAM_NON_BLOCKING: never ordered after the legacy stream's kernels */
  int regions;        /* CUDA registrations using it; the last one's deregMr destroys the stream */
  struct gdrCtx* next;
};
static pthread_mutex_t ctxLock = PTHREAD_MUTEX_INITIALIZER;
static struct gdrCtx* ctxList; /* under ctxLock */

static ncclResult_t ctxCreate(gdrCuContext context, struct gdrCtx** out) {
  struct gdrCtx* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    GDR_WARN("out of memory");
    return ncclSystemError;
  }
  ncclResult_t res = pushContext(context);
  if (res == ncclSuccess) {
    res = cuCheck(cu.cuStreamCreate(&c->stream, GDR_CU_STREAM_NON_BLOCKING), "cuStreamCreate(CU_STREAM_NON_BLOCKING)");
    popContext();
  }
  if (res != ncclSuccess) {
    free(c);
    return res;
  }
  c->context = context;
  c->next = ctxList;
  ctxList = c;
  *out = c;
  return ncclSuccess;
}

ncclResult_t gdrCtxAcquire(void* context, struct gdrCtx** out) {
  pthread_mutex_lock(&ctxLock);
  struct gdrCtx* c = ctxList;
  while (c != NULL && c->context != context) c = c->next;
  ncclResult_t res = c != NULL ? ncclSuccess : ctxCreate(context, &c);
  if (res == ncclSuccess) {
    c->regions++;
    *out = c;
  }
  pthread_mutex_unlock(&ctxLock);
  return res;
}

void gdrCtxRelease(struct gdrCtx* c) {
  pthread_mutex_lock(&ctxLock);
  if (--c->regions == 0) {
    struct gdrCtx** link = &ctxList;
    while (*link != c) link = &(*link)->next;
    *link = c->next;
    if (pushContext(c->context) == ncclSuccess) {
      (void)cuCheck(cu.cuStreamDestroy(c->stream), "cuStreamDestroy");
      popContext();
    }
    free(c);
  }
  pthread_mutex_unlock(&ctxLock);
}

ncclResult_t gdrCopyAndWait(struct gdrCtx* c, int toDevice, void* device, void* host, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  if (c == NULL) { /* TESTNET_GDR_HOST_AS_CUDA: the "device" memory is host memory */
    memcpy(toDevice ? device : host, toDevice ? host : device, bytes);
    return ncclSuccess;
  }
  ncclResult_t res = pushContext(c->context);
  if (res != ncclSuccess) return res;
  gdrCuDevicePtr dptr = (gdrCuDevicePtr)(uintptr_t)device;
  gdrCuResult r = toDevice ? cu.cuMemcpyHtoDAsync(dptr, host, bytes, c->stream)
                           : cu.cuMemcpyDtoHAsync(host, dptr, bytes, c->stream);
  if (r == GDR_CUDA_SUCCESS) r = cu.cuStreamSynchronize(c->stream);
  popContext();
  return cuCheck(r, toDevice ? "copy mirror -> device" : "copy device -> mirror");
}

/* [data, data + size) is device memory inside one allocation; *context is the context it belongs to
 * (for memory of no context, such as cuMemMap'd memory, the caller's current one). */
ncclResult_t gdrCudaDeviceRegion(void* data, size_t size, void** context) {
  gdrCuDevicePtr p = (gdrCuDevicePtr)(uintptr_t)data;
  unsigned int memType = 0;
  gdrCuResult r = cu.cuPointerGetAttribute(&memType, GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
  if (r != GDR_CUDA_SUCCESS || memType != GDR_CU_MEMORYTYPE_DEVICE) {
    GDR_WARN("regMr(NCCL_PTR_CUDA): %p is not device memory (%s %u)", data,
             r != GDR_CUDA_SUCCESS ? "unknown to the CUDA driver, error" : "memory type", r != GDR_CUDA_SUCCESS ? (unsigned)r : memType);
    return ncclInvalidArgument;
  }
  gdrCuDevicePtr start = 0;
  size_t length = 0;
  ncclResult_t res = cuCheck(cu.cuPointerGetAttribute(&start, GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p),
                             "cuPointerGetAttribute(RANGE_START_ADDR)");
  if (res == ncclSuccess)
    res = cuCheck(cu.cuPointerGetAttribute(&length, GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), "cuPointerGetAttribute(RANGE_SIZE)");
  if (res != ncclSuccess) return res;
  if (p < start || p - start > length || size > length - (p - start)) {
    GDR_WARN("regMr(NCCL_PTR_CUDA): [%p, +%zu) runs past its allocation [0x%llx, +%zu)", data, size, start, length);
    return ncclInvalidArgument;
  }
  *context = NULL;
  res = cuCheck(cu.cuPointerGetAttribute(context, GDR_CU_POINTER_ATTRIBUTE_CONTEXT, p), "cuPointerGetAttribute(CONTEXT)");
  if (res == ncclSuccess && *context == NULL) res = cuCheck(cu.cuCtxGetCurrent(context), "cuCtxGetCurrent");
  if (res == ncclSuccess && *context == NULL) {
    GDR_WARN("regMr(NCCL_PTR_CUDA): %p belongs to no CUDA context, and the calling thread has none", data);
    return ncclInvalidArgument;
  }
  return res;
}

ncclResult_t gdrCudaHostAlloc(struct gdrCtx* c, size_t bytes, void** out) {
  ncclResult_t res = pushContext(c->context);
  if (res != ncclSuccess) return res;
  void* p = NULL;
  res = cuCheck(cu.cuMemHostAlloc(&p, bytes > 0 ? bytes : 1, GDR_CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  popContext();
  *out = p;
  return res;
}

void gdrCudaHostFree(struct gdrCtx* c, void* p) {
  if (pushContext(c->context) != ncclSuccess) return;
  (void)cuCheck(cu.cuMemFreeHost(p), "cuMemFreeHost");
  popContext();
}
