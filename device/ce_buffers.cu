/*
 * ce_buffers.cu: the buffers of copy-engine sends (ce_buffers.h).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "device/ce_buffers.h"
#include "device/driver_entry.h"

#define STAGE_ALIGN 256

typedef CUresult (*rangeFn)(CUdeviceptr*, size_t*, CUdeviceptr);
static rangeFn addressRange;
static pthread_once_t resolveOnce = PTHREAD_ONCE_INIT;

static void resolve(void) { addressRange = (rangeFn)chrDevDriverEntry("cuMemGetAddressRange"); }

int chrCeBuffersSupported(void) {
  pthread_once(&resolveOnce, resolve);
  return addressRange != NULL;
}

/* The allocation holding [ptr, ptr + bytes) as CUDA IPC shares it: 1 with its handle and the offset. */
static int exportRange(uint64_t ptr, uint64_t bytes, cudaIpcMemHandle_t* handle, uint64_t* offset) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (addressRange(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS || ptr - base + bytes > size ||
      cudaIpcGetMemHandle(handle, (void*)(uintptr_t)base) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  *offset = ptr - base;
  return 1;
}

/* A region of the staging buffer for one receive of this launch; NULL when none can be had. */
static char* stageRegion(struct chrCeStaging* st, uint64_t bytes) {
  const size_t need = (size_t)((bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN);
  if (st->base == NULL || st->used + need > st->bytes) {
    const size_t grow = st->bytes * 2 > need ? st->bytes * 2 : need;
    char** kept = (char**)realloc(st->retired, sizeof(char*) * (size_t)(st->nRetired + 1));
    if (kept == NULL) return NULL;
    st->retired = kept;
    char* p = NULL;
    if (cudaMalloc((void**)&p, grow) != cudaSuccess) {
      cudaGetLastError();
      return NULL;
    }
    if (st->base) st->retired[st->nRetired++] = st->base; /* this launch's earlier regions live on */
    st->base = p;
    st->bytes = grow;
    st->used = 0;
  }
  char* r = st->base + st->used;
  st->used += need;
  return r;
}

void chrCeDescribeBuffer(uint64_t ptr, uint64_t bytes, int sameProcess, struct chrCeStaging* st,
                         struct chrCePostData* d, char** staged) {
  memset(d, 0, sizeof *d);
  *staged = NULL;
  d->bytes = bytes;
  d->ptr = ptr;
  d->ok = 1;
  if (sameProcess || bytes == 0) return;
  d->viaIpc = 1;
  if (exportRange(ptr, bytes, &d->handle, &d->offset)) return;
  char* region = stageRegion(st, bytes);
  if (region == NULL || !exportRange((uint64_t)(uintptr_t)region, bytes, &d->handle, &d->offset)) {
    d->ok = 0;
    return;
  }
  *staged = region;
}

void chrCeStagingFree(struct chrCeStaging* st) {
  if (st->base) cudaFree(st->base);
  for (int i = 0; i < st->nRetired; i++) cudaFree(st->retired[i]);
  free(st->retired);
  cudaGetLastError();
  memset(st, 0, sizeof *st);
}

char* chrCePeerBuffer(struct chrCeOpenedSet* s, const struct chrCePostData* d, uint64_t kernelK, chrCeQuiesceFn q,
                      void* arg) {
  if (!d->viaIpc) return (char*)(uintptr_t)d->ptr;
  for (int i = 0; i < s->n; i++)
    if (memcmp(&s->e[i].handle, &d->handle, sizeof d->handle) == 0) {
      if (kernelK) s->e[i].lastKernelK = kernelK;
      return s->e[i].base + d->offset;
    }
  if (s->n == CHR_CE_MAX_OPENED) {
    if (!q(arg, s->e[0].lastKernelK)) return NULL;
    cudaIpcCloseMemHandle(s->e[0].base);
    memmove(&s->e[0], &s->e[1], sizeof(s->e[0]) * (CHR_CE_MAX_OPENED - 1));
    s->n--;
  }
  void* p = NULL;
  if (cudaIpcOpenMemHandle(&p, d->handle, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  s->e[s->n].handle = d->handle;
  s->e[s->n].base = (char*)p;
  s->e[s->n].lastKernelK = kernelK;
  s->n++;
  return (char*)p + d->offset;
}

void chrCeCloseAll(struct chrCeOpenedSet* s) {
  for (int i = 0; i < s->n; i++) cudaIpcCloseMemHandle(s->e[i].base);
  cudaGetLastError();
  s->n = 0;
}
