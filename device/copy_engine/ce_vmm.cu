/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_vmm.cu: receive buffers shared by file descriptor (ce_vmm.h).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "device/copy_engine/ce_vmm.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_time.h"
#include "device/memory/fd_pass.h"
#include "device/memory/vmm_driver.h"

#define FETCH_MS 10000 /* per step of a fetch; the server is a thread of its own in the receiver */
#define CHUNK_BITS 16

/* ---- driver entry points ---- */

static struct chrVmmDriver drv;
static int drvFound;
static pthread_once_t resolveOnce = PTHREAD_ONCE_INIT;

static void resolve(void) { drvFound = chrVmmDriverResolve(&drv); }

static int driverReady(void) {
  pthread_once(&resolveOnce, resolve);
  return drvFound;
}

/* ---- the process's descriptor server, shared by every export set that offers on it ---- */

static pthread_mutex_t serverLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrFdServer* server;
static int serverUsers;
static uint64_t exportSerials; /* under serverLock */

static void serverName(uint64_t token, char* name, size_t n) {
  snprintf(name, n, "chorus-fd-%016llx", (unsigned long long)token);
}

static uint64_t keyOf(uint64_t serial, uint32_t chunk) { return serial << CHUNK_BITS | chunk; }

/* Takes a reference on the server (started by the first), once per set; 0 when it cannot run. */
static int holdServer(struct chrCeExports* x) {
  if (x->serverHeld) return 1;
  pthread_mutex_lock(&serverLock);
  if (server == NULL) {
    char name[CHR_FD_NAME_MAX];
    serverName(chrDevProcToken(), name, sizeof name);
    if (chrFdServerStart(name, &server) != 0) server = NULL;
  }
  if (server) {
    serverUsers++;
    x->serverHeld = 1;
  }
  pthread_mutex_unlock(&serverLock);
  return x->serverHeld;
}

/* ---- the receiver ---- */

/* The chunks of [ptr, ptr + bytes) into *out (malloc'd): their count, 0 when the range is not made
 * of cuMemCreate mappings (or has more chunks than a key holds). cuMemGetAddressRange gives a
 * chunk's own mapping (the pointer attributes' range is the whole reservation for such memory). */
static uint32_t walkChunks(uint64_t ptr, uint64_t bytes, struct chrCeVmmChunk** out) {
  *out = NULL;
  uint32_t n = 0, cap = 0;
  struct chrCeVmmChunk* v = NULL;
  CUpointer_attribute asked = CU_POINTER_ATTRIBUTE_BUFFER_ID;
  for (uint64_t at = ptr; at < ptr + bytes;) {
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long id = 0;
    void* answer = &id;
    if (drv.range(&base, &size, (CUdeviceptr)at) != CUDA_SUCCESS || size == 0 || base > at ||
        drv.attributes(1, &asked, &answer, (CUdeviceptr)at) != CUDA_SUCCESS || n == CHR_CE_VMM_MAX_CHUNKS)
      goto fail;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      struct chrCeVmmChunk* grown = (struct chrCeVmmChunk*)realloc(v, sizeof *v * cap);
      if (grown == NULL) goto fail;
      v = grown;
    }
    v[n++] = (struct chrCeVmmChunk){(uint64_t)base, (uint64_t)size, (uint64_t)id};
    at = (uint64_t)base + size;
  }
  *out = v;
  return n;
fail:
  free(v);
  return 0;
}

/* 1 when e holds a run of chunks equal to c[0..n): a buffer inside a larger one exported
 * before (a smaller tensor of the same segment, a smaller size of a benchmark's sweep) reuses its
 * export, and the sender its mapping. Every chunk of the run was checked by its buffer id just now;
 * the export's other chunks may since have been freed, but the transfer touches only the run. */
static int holdsRun(const struct chrCeVmmExport* e, const struct chrCeVmmChunk* c, uint32_t n) {
  for (uint32_t j = 0; j + n <= e->nChunks; j++)
    if (memcmp(&e->chunks[j], c, sizeof *c) == 0) return memcmp(&e->chunks[j], c, sizeof *c * n) == 0;
  return 0;
}

static void withdraw(struct chrCeVmmExport* e, uint32_t offered) {
  pthread_mutex_lock(&serverLock);
  for (uint32_t i = 0; i < offered; i++) chrFdServerWithdraw(server, keyOf(e->serial, i));
  pthread_mutex_unlock(&serverLock);
  free(e->chunks);
  e->chunks = NULL;
  e->nChunks = 0;
}

/* A descriptor for the allocation behind a chunk; -1 when it was not made with the POSIX descriptor
 * handle type (or the driver refuses). */
static int exportChunk(const struct chrCeVmmChunk* c) {
  CUmemGenericAllocationHandle h;
  if (drv.retain(&h, (void*)(uintptr_t)c->base) != CUDA_SUCCESS) return -1;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  int fd = -1;
  if (drv.props(&prop, h) != CUDA_SUCCESS || !(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
      drv.exportFd(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS)
    fd = -1;
  drv.release(h); /* the descriptor refers to the allocation on its own */
  return fd;
}

/* A new export of the n chunks (taken over) for process peerPid into a slot of x: its entry, or
 * NULL (chunks freed). Every chunk is exported before the server starts, so memory that cannot be
 * shared this way starts nothing. */
static struct chrCeVmmExport* newExport(struct chrCeExports* x, struct chrCeVmmChunk* chunks, uint32_t n, pid_t peerPid) {
  int* fds = (int*)malloc(sizeof(int) * n);
  uint32_t got = 0;
  while (fds != NULL && got < n && (fds[got] = exportChunk(&chunks[got])) >= 0) got++;
  struct chrCeVmmExport* e = NULL;
  /* A sender in another network or PID namespace could not fetch: staged instead (fd_pass.h). */
  if (got == n && chrFdPeerReachable(peerPid) && holdServer(x)) {
    pthread_mutex_lock(&serverLock);
    int ok = chrFdServerAllow(server, peerPid) == 0;
    const uint64_t serial = ++exportSerials;
    uint32_t offered = 0;
    while (ok && offered < n && chrFdServerOffer(server, keyOf(serial, offered), fds[offered], chunks[offered].size) == 0)
      offered++;
    pthread_mutex_unlock(&serverLock);
    int at = x->n;
    if (offered == n && x->n == CHR_CE_MAX_EXPORTED) { /* the least recently posted goes (ce_vmm.h) */
      at = 0;
      for (int i = 1; i < x->n; i++)
        if (x->e[i].lastUse < x->e[at].lastUse) at = i;
      withdraw(&x->e[at], x->e[at].nChunks);
    } else if (offered == n) {
      x->n++;
    }
    struct chrCeVmmExport made = {serial, 0, chunks, n};
    if (offered == n) {
      x->e[at] = made;
      e = &x->e[at];
      chunks = NULL;
    } else {
      withdraw(&made, offered);
      chunks = NULL;
    }
  }
  for (uint32_t i = 0; i < got; i++) close(fds[i]); /* the server keeps its own duplicates */
  free(fds);
  free(chunks);
  return e;
}

int chrCeVmmExport(struct chrCeExports* x, uint64_t ptr, uint64_t bytes, pid_t peerPid, struct chrCeVmmRef* ref,
                   uint64_t* offset) {
  if (bytes == 0 || !driverReady()) return 0;
  struct chrCeVmmChunk* chunks = NULL;
  const uint32_t n = walkChunks(ptr, bytes, &chunks);
  if (n == 0) return 0;
  struct chrCeVmmExport* e = NULL;
  for (int i = 0; i < x->n && e == NULL; i++)
    if (holdsRun(&x->e[i], chunks, n)) e = &x->e[i];
  if (e != NULL) {
    free(chunks);
  } else {
    const uint64_t t0 = chrDevNowNs();
    if ((e = newExport(x, chunks, n, peerPid)) == NULL) return 0;
    x->made++;
    x->madeNs += chrDevNowNs() - t0;
  }
  e->lastUse = ++x->clock;
  uint64_t span = 0;
  for (uint32_t i = 0; i < e->nChunks; i++) span += e->chunks[i].size;
  *ref = (struct chrCeVmmRef){e->serial, span, e->nChunks, 0};
  *offset = ptr - e->chunks[0].base; /* an export's chunks lie side by side (walkChunks), as the sender maps them */
  return 1;
}

void chrCeExportsFree(struct chrCeExports* x) {
  for (int i = 0; i < x->n; i++) withdraw(&x->e[i], x->e[i].nChunks);
  x->n = 0;
  if (!x->serverHeld) return;
  pthread_mutex_lock(&serverLock);
  if (--serverUsers == 0) {
    chrFdServerStop(server);
    server = NULL;
  }
  pthread_mutex_unlock(&serverLock);
  x->serverHeld = 0;
}

/* ---- the sender ---- */

void chrCeVmmUnmap(char* base, uint64_t span) {
  if (base != NULL && driverReady()) chrVmmUnmapRange(&drv, (CUdeviceptr)(uintptr_t)base, span);
}

const char* chrCeVmmImport(uint64_t peerToken, const struct chrCeVmmRef* ref, int dev, char** base) {
  *base = NULL;
  if (!driverReady()) return "the driver lacks the virtual memory functions";
  if (ref->nChunks == 0 || ref->nChunks > CHR_CE_VMM_MAX_CHUNKS || ref->span == 0)
    return "a post describing no chunks";
  char name[CHR_FD_NAME_MAX];
  serverName(peerToken, name, sizeof name);
  CUdeviceptr va = 0;
  if (drv.reserve(&va, ref->span, 0, 0, 0) != CUDA_SUCCESS) return "cuMemAddressReserve";
  const char* failed = NULL;
  uint64_t off = 0;
  for (uint32_t i = 0; i < ref->nChunks && failed == NULL; i++) {
    int fd = -1;
    uint64_t size = 0;
    CUmemGenericAllocationHandle h;
    if (chrFdFetch(name, keyOf(ref->serial, i), FETCH_MS, &fd, &size) != 0) {
      failed = "fetching a chunk's descriptor from the receiver's process (fd_pass.h)";
      break;
    }
    if (size == 0 || size > ref->span - off) failed = "a chunk larger than the posted buffer";
    else if (drv.importFd(&h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS)
      failed = "cuMemImportFromShareableHandle";
    close(fd);
    if (failed) break;
    const CUresult r = drv.map(va + off, size, 0, h, 0);
    drv.release(h); /* the mapping keeps the chunk */
    if (r != CUDA_SUCCESS) failed = "cuMemMap";
    else off += size;
  }
  if (failed == NULL && off != ref->span) failed = "chunks that do not add up to the posted buffer";
  if (failed == NULL) {
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (drv.access(va, ref->span, &desc, 1) != CUDA_SUCCESS) failed = "cuMemSetAccess";
  }
  if (failed) {
    chrVmmUnmapRange(&drv, va, ref->span); /* the chunks mapped so far, and the range */
    return failed;
  }
  *base = (char*)(uintptr_t)va;
  return NULL;
}
