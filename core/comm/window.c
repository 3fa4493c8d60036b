/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * window.c: the collective registration of windows and their lifetime (comm/window.h).
 *
 * NCCL's rules, as its documentation states them: every rank registers (a collective call), and the
 * buffers are the same size on every rank. Chorus checks both, and that the flags agree, on the
 * allgathered table. Collectives on window buffers take the same paths as on any other buffer. The
 * window also keeps every rank's range, for the one-sided calls that address a peer's window (not
 * built yet: ncclPutSignal and its kin fail with ncclInvalidUsage).
 */
#include <pthread.h>
#include <stdlib.h>
#include "bootstrap/bootstrap.h"
#include "comm/window.h"
#include "commstate/comm.h"
#include "cuda/cuda_driver.h"
#include "cuda/device_lib.h"
#include "log/check.h"
#include "log/log.h"

#define WINDOW_MAGIC 0x57494e44u       /* "WIND": a live window */
#define WINDOW_ENTRY_MAGIC 0x57454e54u /* "WENT": an allgathered entry */
#define KNOWN_FLAGS (NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING)

struct windowEntry { /* allgathered, one per rank */
  uint32_t magic;
  uint32_t seq;
  int32_t rank;
  int32_t flags;
  uint64_t base;
  uint64_t size;
  int32_t onDevice;
  int32_t pad;
  struct chrDevRange shared; /* GPU memory, ranks in several processes: the range as CUDA IPC shares it */
};

ncclResult_t chrWindowCheckArgs(const void* buff, size_t size, int flags) {
  if (buff == NULL) return chrFail(ncclInvalidArgument, "ncclCommWindowRegister: buff is NULL");
  if (size == 0) return chrFail(ncclInvalidArgument, "ncclCommWindowRegister: size is 0");
  if (flags & ~KNOWN_FLAGS)
    return chrFail(ncclInvalidArgument,
                   "ncclCommWindowRegister: unknown flags 0x%x (NCCL_WIN_COLL_SYMMETRIC 0x%x, NCCL_WIN_STRICT_ORDERING 0x%x)",
                   (unsigned)(flags & ~KNOWN_FLAGS), NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_STRICT_ORDERING);
  return ncclSuccess;
}

/* Every rank runs the same checks over the same table in the same order: the same verdict everywhere. */
static ncclResult_t checkEntries(const struct windowEntry* all, int n, uint32_t seq) {
  for (int r = 0; r < n; r++) {
    const struct windowEntry* e = &all[r];
    if (e->magic != WINDOW_ENTRY_MAGIC || e->rank != r)
      return chrFail(ncclRemoteError, "ncclCommWindowRegister: rank %d sent a malformed entry (magic 0x%x, rank %d)", r,
                     e->magic, e->rank);
    if (e->seq != seq)
      return chrFail(ncclInvalidUsage,
                     "ncclCommWindowRegister: rank %d is at its window registration #%u of this communicator, this "
                     "rank at #%u (every rank must register every window)",
                     r, e->seq, seq);
    if (e->flags != all[0].flags)
      return chrFail(ncclInvalidUsage, "ncclCommWindowRegister: rank %d passed flags 0x%x, rank 0 0x%x (they must agree)",
                     r, (unsigned)e->flags, (unsigned)all[0].flags);
    if (e->size != all[0].size)
      return chrFail(ncclInvalidUsage,
                     "ncclCommWindowRegister: rank %d registers %llu bytes, rank 0 %llu (every rank must register the "
                     "same size)",
                     r, (unsigned long long)e->size, (unsigned long long)all[0].size);
  }
  return ncclSuccess;
}

ncclResult_t chrWindowExchange(struct ncclComm* comm, void* buff, size_t size, int flags, uint32_t seq,
                               ncclWindow_t* out) {
  const int n = comm->nRanks;
  struct windowEntry* all = calloc((size_t)n, sizeof(*all));
  struct ncclWindow_vidmem* win = calloc(1, sizeof(*win));
  struct chrWindowRange* ranges = calloc((size_t)n, sizeof(*ranges));
  ncclResult_t res = ncclSuccess;
  if (all == NULL || win == NULL || ranges == NULL) {
    res = chrFail(ncclSystemError, "ncclCommWindowRegister: out of memory for a window of %d ranks", n);
    goto fail;
  }
  struct windowEntry* mine = &all[comm->rank];
  mine->magic = WINDOW_ENTRY_MAGIC;
  mine->seq = seq;
  mine->rank = comm->rank;
  mine->flags = flags;
  mine->base = (uint64_t)(uintptr_t)buff;
  mine->size = size;
  mine->onDevice = chrCudaPtrIsDevice(buff);
  /* CUDA IPC shares memory within one host only: across hosts, windows are registered, not shared. */
  const int share = comm->devIpc && !comm->devNet;
  const struct chrDevLib* lib = mine->onDevice && share ? chrDevLibGet() : NULL;
  if (lib != NULL && lib->exportRange(comm->cudaDev, buff, size, &mine->shared) != ncclSuccess)
    mine->shared.ok = 0; /* puts to it will say so */
  CHECK_GOTO(chrBootstrapAllGather(comm->bootstrap, all, sizeof(*all)), res, fail);
  CHECK_GOTO(checkEntries(all, n, seq), res, fail);
  if (share) {
    win->shared = calloc((size_t)n, sizeof(*win->shared));
    win->opened = calloc((size_t)n, sizeof(*win->opened));
    if (win->shared == NULL || win->opened == NULL) {
      res = chrFail(ncclSystemError, "ncclCommWindowRegister: out of memory for a window of %d ranks", n);
      goto fail;
    }
  }
  for (int r = 0; r < n; r++) {
    ranges[r].base = all[r].base;
    ranges[r].size = all[r].size;
    ranges[r].onDevice = all[r].onDevice;
    if (win->shared) win->shared[r] = all[r].shared;
  }
  win->magic = WINDOW_MAGIC;
  win->comm = comm;
  win->buff = buff;
  win->size = size;
  win->flags = flags;
  win->seq = seq;
  win->ranges = ranges;
  pthread_mutex_lock(&comm->lock);
  win->next = comm->windows;
  comm->windows = win;
  pthread_mutex_unlock(&comm->lock);
  free(all);
  *out = win;
  INFO(NCCL_INIT, "comm %p rank %d window #%u: %p, %zu bytes, flags 0x%x", (void*)comm, comm->rank, seq, buff, size,
       (unsigned)flags);
  return ncclSuccess;
fail:
  free(ranges);
  if (win) {
    free(win->shared);
    free(win->opened);
  }
  free(win);
  free(all);
  return res;
}

ncclResult_t chrWindowPeerAddress(struct ncclComm* comm, struct ncclWindow_vidmem* win, int peer, size_t offset,
                                  void** out) {
  const struct chrWindowRange* r = &win->ranges[peer];
  if (!r->onDevice)
    return chrFail(ncclInvalidUsage, "rank %d's window #%u is not GPU memory: one-sided calls need GPU windows", peer,
                   win->seq);
  if (comm->peers[peer].pid == comm->peers[comm->rank].pid) {
    *out = (void*)(uintptr_t)(r->base + offset);
    return ncclSuccess;
  }
  if (win->shared == NULL || !win->shared[peer].ok)
    return chrFail(ncclInvalidUsage,
                   "rank %d's window #%u cannot be shared through CUDA IPC (cuMem memory, such as PyTorch's expandable "
                   "segments): one-sided calls to it are not supported yet",
                   peer, win->seq);
  if (win->opened[peer] == NULL) {
    const struct chrDevLib* lib = chrDevLibGet();
    if (lib == NULL || lib->openRange(comm->cudaDev, &win->shared[peer], &win->opened[peer]) != ncclSuccess)
      return chrFail(ncclUnhandledCudaError, "opening rank %d's window #%u: %s", peer, win->seq,
                     lib ? lib->lastError() : "no GPU path");
  }
  *out = (char*)win->opened[peer] + win->shared[peer].offset + offset;
  return ncclSuccess;
}

struct ncclWindow_vidmem* chrWindowFind(struct ncclComm* comm, ncclWindow_t win) {
  struct ncclWindow_vidmem* found = NULL;
  pthread_mutex_lock(&comm->lock);
  for (struct ncclWindow_vidmem* w = comm->windows; w != NULL && found == NULL; w = w->next)
    if (w == win) found = w;
  pthread_mutex_unlock(&comm->lock);
  return found;
}

static void freeWindow(struct ncclWindow_vidmem* win) {
  win->magic = 0;
  const struct chrDevLib* lib = win->opened ? chrDevLibGet() : NULL;
  for (int r = 0; lib != NULL && r < win->comm->nRanks; r++)
    if (win->opened[r]) lib->closeRange(win->comm->cudaDev, win->opened[r]);
  free(win->opened);
  free(win->shared);
  free(win->ranges);
  free(win);
}

ncclResult_t chrWindowRelease(struct ncclComm* comm, ncclWindow_t win) {
  struct ncclWindow_vidmem* found = NULL;
  pthread_mutex_lock(&comm->lock);
  for (struct ncclWindow_vidmem** link = &comm->windows; *link != NULL; link = &(*link)->next)
    if (*link == win) {
      found = win;
      *link = win->next;
      break;
    }
  pthread_mutex_unlock(&comm->lock);
  if (found == NULL)
    return chrFail(ncclInvalidArgument, "ncclCommWindowDeregister: %p is not a window registered on communicator %p",
                   (void*)win, (void*)comm);
  freeWindow(found);
  return ncclSuccess;
}

void chrWindowFreeAll(struct ncclComm* comm) {
  struct ncclWindow_vidmem* w = comm->windows;
  comm->windows = NULL;
  while (w != NULL) {
    struct ncclWindow_vidmem* next = w->next;
    freeWindow(w);
    w = next;
  }
}
