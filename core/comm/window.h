/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * window.h: windows (ncclCommWindowRegister), buffers that every rank of a communicator registers
 * together. Each window keeps every rank's range; the comm owns its windows (comm->windows) and frees
 * those left at its end.
 */
#ifndef CHORUS_COMM_WINDOW_H_
#define CHORUS_COMM_WINDOW_H_

#include <stdint.h>
#include "nccl.h"

struct ncclComm;

struct chrDevRange;

struct chrWindowRange { /* one rank's registered buffer */
  uint64_t base;
  uint64_t size;
  int onDevice; /* GPU memory (the one-sided calls need it) */
};

struct ncclWindow_vidmem {
  uint32_t magic;
  struct ncclComm* comm;
  void* buff;                    /* this rank's buffer, as given */
  size_t size;
  int flags;                     /* NCCL_WIN_*, the same on every rank */
  uint32_t seq;                  /* the comm's window number */
  struct chrWindowRange* ranges; /* comm->nRanks entries, by rank */
  /* GPU windows of ranks in other processes (comm->devIpc): each rank's range as CUDA IPC shares it,
   * and where this process opened it (at the first put to it; closed with the window). NULL else. */
  struct chrDevRange* shared;
  void** opened;
  struct ncclWindow_vidmem* next;
};

/* The arguments one rank can check alone: buff not NULL, size > 0, only known flags. */
ncclResult_t chrWindowCheckArgs(const void* buff, size_t size, int flags);
/* The collective part: allgathers every rank's (seq, flags, range) over the comm's bootstrap and checks
 * the table the same way on every rank, so all succeed or all fail with the same reason: the ranks
 * must be at the same window number, with the same flags and the same size. Then *out is the new
 * window, linked into comm->windows. */
ncclResult_t chrWindowExchange(struct ncclComm* comm, void* buff, size_t size, int flags, uint32_t seq,
                               ncclWindow_t* out);
/* Where byte `offset` of rank peer's window is for this process: the peer's own address when it is in
 * this process, else its range opened through CUDA IPC (once per window). ncclInvalidUsage for a
 * window that is not GPU memory, or one CUDA IPC cannot share (cuMem memory). */
ncclResult_t chrWindowPeerAddress(struct ncclComm* comm, struct ncclWindow_vidmem* win, int peer, size_t offset,
                                  void** out);
/* win if it is a window of comm still registered, else NULL (a stale or foreign handle is never read). */
struct ncclWindow_vidmem* chrWindowFind(struct ncclComm* comm, ncclWindow_t win);
/* Unlinks and frees a window of comm; ncclInvalidArgument when win is not one. Local: no peer is told. */
ncclResult_t chrWindowRelease(struct ncclComm* comm, ncclWindow_t win);
/* Frees every window of comm (its end). */
void chrWindowFreeAll(struct ncclComm* comm);

#endif /* CHORUS_COMM_WINDOW_H_ */
