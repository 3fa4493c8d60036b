/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_buffers.cu: the buffers of copy-engine sends (ce_buffers.h).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "device/copy_engine/ce_buffers.h"
#include "device/common/dev_time.h"
#include "device/common/driver_entry.h"

#define STAGE_ALIGN 256

static __typeof__(&cuPointerGetAttributes) pointerAttributes;
static __typeof__(&cuMemGetAddressRange) addressRange;
static pthread_once_t resolveOnce = PTHREAD_ONCE_INIT;

static void resolve(void) {
  *(void**)&pointerAttributes = chrDevDriverEntry("cuPointerGetAttributes");
  *(void**)&addressRange = chrDevDriverEntry("cuMemGetAddressRange");
}

int chrCeBuffersSupported(void) {
  pthread_once(&resolveOnce, resolve);
  return pointerAttributes != NULL && addressRange != NULL;
}

/* The allocation holding [ptr, ptr + bytes) as CUDA IPC shares it: 1 with its handle and the offset.
 * Memory that CUDA IPC refuses (cuMemCreate's, a stream-ordered pool's) is told apart by one
 * attribute query rather than by a failing cudaIpcGetMemHandle on every call. */
int chrCeExportRange(uint64_t ptr, uint64_t bytes, cudaIpcMemHandle_t* handle, uint64_t* offset) {
  CUdeviceptr base = 0;
  size_t size = 0;
  int capable = 0;
  CUpointer_attribute asked = CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE;
  void* answer = &capable;
  if (pointerAttributes(1, &asked, &answer, (CUdeviceptr)ptr) != CUDA_SUCCESS || !capable ||
      addressRange(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS || ptr - base + bytes > size ||
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
    st->held += grow;
  }
  char* r = st->base + st->used;
  st->used += need;
  return r;
}

/* The post's start, for a receive or a send: an address within one process (or nothing to share),
 * else the allocation's CUDA IPC handle and offset. 1 when that describes the buffer. */
static int describeDirect(uint64_t ptr, uint64_t bytes, int sameProcess, struct chrCePostData* d) {
  memset(d, 0, sizeof *d);
  d->bytes = bytes;
  d->ptr = ptr;
  d->ok = 1;
  if (sameProcess || bytes == 0) return 1;
  d->way = CHR_CE_BY_IPC;
  return chrCeExportRange(ptr, bytes, &d->u.handle, &d->offset);
}

void chrCeDescribeBuffer(uint64_t ptr, uint64_t bytes, int sameProcess, pid_t senderPid, struct chrCeExports* x,
                         struct chrCeStaging* st, struct chrCePostData* d, char** staged) {
  *staged = NULL;
  if (describeDirect(ptr, bytes, sameProcess, d)) return;
  if (x != NULL && chrCeVmmExport(x, ptr, bytes, senderPid, &d->u.vmm, &d->offset)) {
    d->way = CHR_CE_BY_FD;
    return;
  }
  char* region = stageRegion(st, bytes);
  if (region == NULL || !chrCeExportRange((uint64_t)(uintptr_t)region, bytes, &d->u.handle, &d->offset)) {
    d->ok = 0;
    return;
  }
  *staged = region;
}

void chrCeDescribeSource(uint64_t ptr, uint64_t bytes, int sameProcess, struct chrCePostData* d) {
  if (!describeDirect(ptr, bytes, sameProcess, d)) d->ok = 0;
}

void chrCeStagingFree(struct chrCeStaging* st) {
  if (st->base) cudaFree(st->base);
  for (int i = 0; i < st->nRetired; i++) cudaFree(st->retired[i]);
  free(st->retired);
  cudaGetLastError();
  memset(st, 0, sizeof *st);
}

static int samePosted(const struct chrCeOpened* e, const struct chrCePostData* d) {
  if (e->way != d->way) return 0;
  if (d->way == CHR_CE_BY_FD) return e->serial == d->u.vmm.serial;
  return memcmp(&e->handle, &d->u.handle, sizeof d->u.handle) == 0;
}

static void closeOpened(struct chrCeOpened* e) {
  if (e->way == CHR_CE_BY_FD) chrCeVmmUnmap(e->base, e->span);
  else cudaIpcCloseMemHandle(e->base);
}

char* chrCePeerBuffer(struct chrCeOpenedSet* s, const struct chrCePostData* d, uint64_t peerToken, int dev,
                      uint64_t kernelK, chrCeQuiesceFn q, void* arg) {
  if (d->way == CHR_CE_BY_PTR) return (char*)(uintptr_t)d->ptr;
  if (d->way != CHR_CE_BY_IPC && d->way != CHR_CE_BY_FD) return NULL;
  if (d->way == CHR_CE_BY_FD && (d->offset > d->u.vmm.span || d->bytes > d->u.vmm.span - d->offset))
    return NULL; /* a post whose buffer overruns its chunks */
  for (int i = 0; i < s->n; i++)
    if (samePosted(&s->e[i], d)) {
      if (kernelK) s->e[i].lastKernelK = kernelK;
      return s->e[i].base + d->offset;
    }
  if (s->n == CHR_CE_MAX_OPENED) {
    if (!q(arg, s->e[0].lastKernelK)) return NULL;
    closeOpened(&s->e[0]);
    memmove(&s->e[0], &s->e[1], sizeof(s->e[0]) * (CHR_CE_MAX_OPENED - 1));
    s->n--;
  }
  struct chrCeOpened* e = &s->e[s->n];
  memset(e, 0, sizeof *e);
  e->way = d->way;
  const uint64_t t0 = chrDevNowNs();
  if (d->way == CHR_CE_BY_FD) {
    if (chrCeVmmImport(peerToken, &d->u.vmm, dev, &e->base) != NULL) return NULL;
    e->serial = d->u.vmm.serial;
    e->span = d->u.vmm.span;
  } else {
    void* p = NULL;
    if (cudaIpcOpenMemHandle(&p, d->u.handle, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
      cudaGetLastError();
      return NULL;
    }
    e->handle = d->u.handle;
    e->base = (char*)p;
  }
  e->lastKernelK = kernelK;
  s->n++;
  s->opens++;
  s->openNs += chrDevNowNs() - t0;
  return e->base + d->offset;
}

void chrCeCloseAll(struct chrCeOpenedSet* s) {
  for (int i = 0; i < s->n; i++) closeOpened(&s->e[i]);
  cudaGetLastError();
  s->n = 0;
}
