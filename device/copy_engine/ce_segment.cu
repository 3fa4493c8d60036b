/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_segment.cu: the copy-engine mailboxes' shared-memory pages (ce_segment.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include "device/copy_engine/ce_segment.h"
#include "device/common/dev_error.h"

static_assert(sizeof(struct chrCeSegment) <= CHR_CE_SEGMENT_BYTES, "a mailbox segment outgrew its page");

static pthread_mutex_t mapLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrCeMap* maps;

ncclResult_t chrCeMapSegment(const char* name, struct chrCeMap** out) {
  pthread_mutex_lock(&mapLock);
  ncclResult_t res = ncclSuccess;
  struct chrCeMap* m = maps;
  while (m && strcmp(m->name, name) != 0) m = m->next;
  if (m) {
    m->refs++;
  } else {
    void* p = MAP_FAILED;
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    m = (struct chrCeMap*)calloc(1, sizeof *m);
    if (fd < 0 || m == NULL) {
      res = chrDevFail(ncclSystemError, "copy-engine mailbox %s: %s", name, fd < 0 ? strerror(errno) : "out of memory");
      goto fail;
    }
    /* Both ends may create it; each sets the same size, and new pages read as zero. */
    if (ftruncate(fd, CHR_CE_SEGMENT_BYTES) != 0 ||
        (p = mmap(NULL, CHR_CE_SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
      res = chrDevFail(ncclSystemError, "copy-engine mailbox %s: %s", name, strerror(errno));
      goto fail;
    }
    close(fd);
    fd = -1;
    {
      cudaError_t e = cudaHostRegister(p, CHR_CE_SEGMENT_BYTES, cudaHostRegisterPortable | cudaHostRegisterMapped);
      if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)&m->dev, p, 0);
      if (e != cudaSuccess) {
        cudaGetLastError();
        res = chrDevFail(ncclUnhandledCudaError, "registering copy-engine mailbox %s with CUDA: %s", name,
                         cudaGetErrorString(e));
        cudaHostUnregister(p);
        cudaGetLastError();
        goto fail;
      }
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    m->seg = (struct chrCeSegment*)p;
    m->refs = 1;
    m->next = maps;
    maps = m;
    goto done;
  fail:
    if (p != MAP_FAILED) munmap(p, CHR_CE_SEGMENT_BYTES);
    if (fd >= 0) close(fd);
    free(m);
    m = NULL;
  }
done:
  pthread_mutex_unlock(&mapLock);
  if (m) {
    /* this end has it: the second end of the pair removes the name */
    if (__atomic_add_fetch(&m->seg->ends, 1, __ATOMIC_ACQ_REL) == 2) shm_unlink(name);
  }
  *out = m;
  return res;
}

void chrCeUnmapSegment(struct chrCeMap* m) {
  if (m == NULL) return;
  pthread_mutex_lock(&mapLock);
  if (--m->refs == 0) {
    struct chrCeMap** at = &maps;
    while (*at != m) at = &(*at)->next;
    *at = m->next;
    /* A pair whose other end never mapped it leaves the name behind: remove it (a later open
     * by that end would find an empty mailbox and wait, as it would for a rank that is gone). */
    if (__atomic_load_n(&m->seg->ends, __ATOMIC_ACQUIRE) < 2) shm_unlink(m->name);
    cudaHostUnregister(m->seg);
    cudaGetLastError();
    munmap(m->seg, CHR_CE_SEGMENT_BYTES);
    free(m);
  }
  pthread_mutex_unlock(&mapLock);
}

