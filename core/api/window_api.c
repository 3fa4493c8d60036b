/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * window_api.c: ncclCommWindowRegister, ncclCommWindowDeregister, ncclWinGetUserPtr.
 *
 * Registration is collective over the communicator (comm/window.c). Outside a group it runs in the
 * call; inside one it is recorded and runs at the outermost ncclGroupEnd, with the communicator's
 * splits and shrinks in call order, so that one thread can register a window on every rank it drives
 * (comms from ncclCommInitAll): *win is written then. Deregistration is local to the rank.
 */
#include <stdatomic.h>
#include "api/api.h"
#include "comm/lifecycle.h"
#include "comm/window.h"
#include "commstate/comm.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

static ncclResult_t registerChecked(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int flags) {
  CHECK(chrWindowCheckArgs(buff, size, flags));
  const uint32_t seq = comm->windowCount++; /* every rank counts its windows of this comm the same way */
  if (chrGroupDepth() == 0) return chrWindowExchange(comm, buff, size, flags, seq, win);
  struct chrCommJob job = {comm, NCCL_SPLIT_NOCOLOR, 0, seq, NULL};
  job.kind = CHR_JOB_WINDOW;
  job.flags = flags;
  job.winBuff = buff;
  job.winSize = size;
  job.winOut = win;
  return chrGroupDeferCommJob(&job);
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags) {
  if (win == NULL) {
    chrGroupNoteError(ncclInvalidArgument);
    return chrFail(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
  }
  *win = NULL;
  ncclResult_t res = chrCommCheckReady(comm, "ncclCommWindowRegister");
  if (res != ncclSuccess) {
    chrGroupNoteError(res);
    return res;
  }
  atomic_fetch_add(&comm->busy, 1); /* a destroy from another thread must wait for the exchange */
  res = registerChecked(comm, buff, size, win, winFlags);
  atomic_fetch_sub(&comm->busy, 1);
  if (res != ncclSuccess) {
    chrCommNoteError(comm);
    chrGroupNoteError(res);
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  CHECK(chrCommCheck(comm, "ncclCommWindowDeregister"));
  if (win == NULL) return chrFail(ncclInvalidArgument, "ncclCommWindowDeregister: win is NULL");
  return chrWindowRelease(comm, win);
}

NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  CHECK(chrCommCheck(comm, "ncclWinGetUserPtr"));
  if (outUserPtr == NULL) return chrFail(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
  struct ncclWindow_vidmem* w = win ? chrWindowFind(comm, win) : NULL;
  if (w == NULL)
    return chrFail(ncclInvalidArgument, "ncclWinGetUserPtr: %p is not a window registered on communicator %p",
                   (void*)win, (void*)comm);
  *outUserPtr = w->buff;
  return ncclSuccess;
}
