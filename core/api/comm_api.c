/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_api.c: unique ids and the communicator lifecycle.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/api.h"
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  if (uniqueId == NULL) return chrFail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  return chrBootstrapGetUniqueId(uniqueId);
}

static ncclResult_t initRank(const char* func, ncclComm_t* newcomm, int nranks, const ncclUniqueId* id, int rank,
                             const ncclConfig_t* config) {
  if (newcomm == NULL) return chrFail(ncclInvalidArgument, "%s: comm is NULL", func);
  *newcomm = NULL;
  if (nranks < 1) return chrFail(ncclInvalidArgument, "%s: nranks = %d, must be >= 1", func, nranks);
  if (rank < 0 || rank >= nranks)
    return chrFail(ncclInvalidArgument, "%s: rank = %d is out of range [0, %d)", func, rank, nranks);
  int inGroup = chrGroupDepth() > 0;
  ncclResult_t res = chrCommInitStart(newcomm, nranks, id, rank, config, inGroup);
  if (inGroup && *newcomm != NULL) {
    ncclResult_t deferRes = chrGroupDeferInit(*newcomm);
    if (deferRes != ncclSuccess) return deferRes;
    /* Inside a group a blocking init completes at ncclGroupEnd. */
    return (*newcomm)->config.blocking ? ncclSuccess : ncclInProgress;
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank("ncclCommInitRank", comm, nranks, &commId, rank, NULL);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config) {
  return initRank("ncclCommInitRankConfig", comm, nranks, &commId, rank, config);
}

/* Several roots only spread the bootstrap load in NCCL; every rank holds the full list, so using
 * the first id gives the same communicator (the rank that made commIds[0] runs its root). */
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1) return chrFail(ncclInvalidArgument, "ncclCommInitRankScalable: nId = %d, must be >= 1", nId);
  if (commIds == NULL) return chrFail(ncclInvalidArgument, "ncclCommInitRankScalable: commIds is NULL");
  return initRank("ncclCommInitRankScalable", newcomm, nranks, &commIds[0], myrank, config);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == NULL) return chrFail(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
  if (ndev < 1) return chrFail(ncclInvalidArgument, "ncclCommInitAll: ndev = %d, must be >= 1", ndev);
  /* A device may appear several times: unlike NCCL, Chorus runs several ranks on one GPU (the ranks of
   * one process on one GPU share a device group, cuda/dev_state.h). */
  if (devlist) {
    for (int i = 0; i < ndev; i++)
      if (devlist[i] < 0) return chrFail(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is negative", i, devlist[i]);
  }
  ncclUniqueId id;
  CHECK(chrBootstrapNewUniqueId(&id)); /* every rank is in this process: no fixed address */
  ncclResult_t res = ncclSuccess;
  int started = 0;
  for (int i = 0; i < ndev; i++) comms[i] = NULL;
  for (; started < ndev; started++) {
    /* The device is set before the init starts: the ranks tell each other their devices. */
    struct ncclComm* comm = NULL;
    ncclResult_t r = chrCommAllocPending(NULL, &comm);
    if (r != ncclSuccess) { res = r; break; }
    comm->cudaDev = devlist ? devlist[started] : started;
    comms[started] = comm;
    r = chrCommInitLaunch(comm, ndev, &id, started, 1);
    if (CHR_IS_ERROR(r)) {
      chrCommFree(comm);
      comms[started] = NULL;
      res = r;
      break;
    }
  }
  /* The error returned is the lowest failed rank's, and so is the message: a later rank that only
   * saw the others give up (its bootstrap aborted) must not overwrite the cause. */
  char cause[1024] = ""; /* the last error's own bound (log/log.c) */
  for (int i = 0; i < started; i++) {
    if (res != ncclSuccess) chrCommRaiseAbort(comms[i]);
    ncclResult_t r = chrCommInitWait(comms[i]);
    if (r != ncclSuccess && res == ncclSuccess) {
      res = r;
      snprintf(cause, sizeof(cause), "%s", chrThreadLastError());
    }
  }
  if (cause[0] != '\0') chrSetLastError("%s", cause);
  if (res != ncclSuccess) {
    for (int i = 0; i < started; i++) { chrCommFree(comms[i]); comms[i] = NULL; }
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  CHECK(chrCommCheck(comm, "ncclCommCount"));
  if (count == NULL) return chrFail(ncclInvalidArgument, "ncclCommCount: count is NULL");
  *count = comm->nRanks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  CHECK(chrCommCheck(comm, "ncclCommCuDevice"));
  if (device == NULL) return chrFail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
  *device = comm->cudaDev;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  CHECK(chrCommCheck(comm, "ncclCommUserRank"));
  if (rank == NULL) return chrFail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  CHECK(chrCommCheck(comm, "ncclCommGetAsyncError"));
  if (asyncError == NULL) return chrFail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  int state = atomic_load(&comm->asyncError);
  if (state != ncclInProgress) chrCommReapInitThread(comm, 0); /* non-blocking init finished */
  if (state == ncclSuccess && comm->dev) state = chrDevCommPoll(comm); /* a kernel's error, an aborted peer */
  if (CHR_IS_ERROR(state)) { /* the root cause, not the latest refusal that quoted it */
    pthread_mutex_lock(&comm->lock);
    chrSetLastError("%s", comm->failCause[0] ? comm->failCause : comm->lastError);
    pthread_mutex_unlock(&comm->lock);
  }
  *asyncError = (ncclResult_t)state;
  return ncclSuccess;
}

/* Once per comm. A failed comm is finalized too (nothing can be flushed), but the call reports the
 * failure; either way ncclCommDestroy or ncclCommAbort come next. */
NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  CHECK(chrCommCheck(comm, "ncclCommFinalize"));
  int state = atomic_load(&comm->asyncError);
  if (state == ncclInProgress)
    return chrFail(ncclInvalidUsage, "ncclCommFinalize: communicator is still initializing");
  if (atomic_load(&comm->revoked))
    return chrFail(ncclInvalidUsage, "ncclCommFinalize: communicator %p was revoked: nothing of it can be drained "
                   "(call ncclCommDestroy or ncclCommAbort)", (void*)comm);
  if (__atomic_exchange_n(&comm->finalized, 1, __ATOMIC_ACQ_REL) != 0)
    return chrFail(ncclInvalidUsage,
                   "ncclCommFinalize: communicator %p was already finalized (call ncclCommDestroy or ncclCommAbort)",
                   (void*)comm);
  if (state != ncclSuccess) {
    ncclResult_t res = chrCommFailedError(comm, "ncclCommFinalize");
    chrCommNoteError(comm);
    return res;
  }
  /* Host-buffer work completes before each call returns; GPU work is waited for here. */
  ncclResult_t res = chrDevCommFlush(comm, "ncclCommFinalize");
  if (res != ncclSuccess) chrCommNoteError(comm);
  return res;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  CHECK(chrCommCheck(comm, "ncclCommDestroy"));
  if (atomic_load(&comm->busy) > 0)
    return chrFail(ncclInvalidUsage, "ncclCommDestroy: comm %p has a call in flight on another thread", (void*)comm);
  if (atomic_load(&comm->refs) > 1)
    return chrFail(ncclInvalidUsage, "ncclCommDestroy: comm %p has operations queued in an open group (end the group, "
                   "or use ncclCommAbort)", (void*)comm);
  chrCommRelease(comm);
  return ncclSuccess;
}

/* Waits up to 60 s for the calls in flight on comm (other threads') to see its abort flag and return. */
static ncclResult_t waitCallsStopped(struct ncclComm* comm, const char* func) {
  struct timespec ts = {0, 1000000};
  for (int i = 0; i < 60000 && atomic_load(&comm->busy) > 0; i++) nanosleep(&ts, NULL);
  if (atomic_load(&comm->busy) > 0)
    return chrFail(ncclInternalError, "%s: a call on comm %p did not stop within 60 s", func, (void*)comm);
  return ncclSuccess;
}

/* Local, as NCCL's: what is in flight on this rank stops (the calls of other threads return an error,
 * the kernels return within milliseconds; their outputs are undefined), work queued in this thread's
 * open group is dropped, and every later operation is refused with ncclInvalidUsage. The comm stays a
 * parent for ncclCommSplit, ncclCommShrink and ncclCommGrow (the abort flag is lowered again once the
 * calls have stopped, so its bootstrap serves their exchanges) and can be destroyed or aborted. */
NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  CHECK(chrCommCheck(comm, "ncclCommRevoke"));
  if (revokeFlags != NCCL_REVOKE_DEFAULT)
    return chrFail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags = 0x%x, must be NCCL_REVOKE_DEFAULT (0)",
                   (unsigned)revokeFlags);
  if (atomic_load(&comm->asyncError) == ncclInProgress)
    return chrFail(ncclInvalidUsage, "ncclCommRevoke: communicator is still initializing");
  if (comm->abortFlag) return chrFail(ncclInvalidUsage, "ncclCommRevoke: communicator was aborted");
  if (atomic_exchange(&comm->revoked, 1) != 0)
    return chrFail(ncclInvalidArgument, "ncclCommRevoke: communicator %p was already revoked", (void*)comm);
  chrGroupDiscardTasks(comm);
  chrCommRaiseAbort(comm);
  chrDevCommAbort(comm);
  ncclResult_t res = waitCallsStopped(comm, "ncclCommRevoke");
  if (res != ncclSuccess) return res; /* the flag stays up: the comm can only be aborted now */
  comm->abortFlag = 0;
  INFO(NCCL_INIT, "comm %p rank %d revoked", (void*)comm, comm->rank);
  return ncclSuccess;
}

/* Safe from a watchdog thread while the main thread is inside a call on the comm: that call sees the
 * abort flag within one progress pass and returns an error. Work queued in an open group of this
 * thread is discarded; work queued in another thread's open group keeps the comm's memory alive
 * until that group ends (it then runs nothing of it), so this returns at once. */
NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  CHECK(chrCommCheck(comm, "ncclCommAbort"));
  chrCommRaiseAbort(comm);
  chrDevCommAbort(comm); /* its kernels, and its peers' in this process, return within milliseconds */
  chrSetLastError("ncclCommAbort: communicator %p was aborted", (void*)comm);
  chrCommSetAsyncError(comm, ncclRemoteError);
  chrGroupDiscardComm(comm);
  CHECK(waitCallsStopped(comm, "ncclCommAbort"));
  chrCommRelease(comm);
  return ncclSuccess;
}
