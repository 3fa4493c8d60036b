/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suspend_api.c: ncclCommSuspend, ncclCommResume and ncclCommMemStats.
 *
 * Suspend and resume are collective (comm/suspend.c): every rank calls them, one thread driving several
 * ranks does so inside a group (they run at its end, with the comm's other deferred calls in call
 * order). Between the two the communicator refuses every operation with ncclInvalidUsage; it can be
 * destroyed or aborted. User buffers are never touched.
 */
#include <stdatomic.h>
#include "api/api.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

/* Runs now, or at the outermost ncclGroupEnd inside a group. */
static ncclResult_t runOrDefer(ncclComm_t comm, int kind, int flags) {
  const uint32_t seq = comm->suspendSeq++; /* every rank counts its suspends and resumes alike */
  if (chrGroupDepth() > 0) {
    struct chrCommJob job = {comm, NCCL_SPLIT_NOCOLOR, 0, seq, NULL};
    job.kind = kind;
    job.flags = flags;
    return chrGroupDeferCommJob(&job);
  }
  atomic_fetch_add(&comm->busy, 1); /* a destroy from another thread must wait for the exchange */
  ncclResult_t res = kind == CHR_JOB_SUSPEND ? chrCommSuspendExchange(comm, flags, seq) : chrCommResumeExchange(comm, seq);
  atomic_fetch_sub(&comm->busy, 1);
  return res;
}

/* A failure inside a group fails the group; one on a valid comm is also kept as its last error. */
static ncclResult_t refused(ncclComm_t validComm, ncclResult_t res) {
  if (validComm != NULL) chrCommNoteError(validComm);
  chrGroupNoteError(res);
  return res;
}

NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  ncclResult_t res = chrCommCheckReady(comm, "ncclCommSuspend");
  if (res != ncclSuccess) return refused(NULL, res);
  if (flags & ~NCCL_SUSPEND_MEM)
    return refused(comm, chrFail(ncclInvalidArgument, "ncclCommSuspend: unknown flags 0x%x (NCCL_SUSPEND_MEM 0x%x)",
                                 (unsigned)(flags & ~NCCL_SUSPEND_MEM), NCCL_SUSPEND_MEM));
  res = runOrDefer(comm, CHR_JOB_SUSPEND, flags);
  return res == ncclSuccess ? res : refused(comm, res);
}

NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  ncclResult_t res = chrCommCheck(comm, "ncclCommResume");
  if (res != ncclSuccess) return refused(NULL, res);
  /* Inside a group the suspend it follows may be queued in the same group. */
  if (!atomic_load(&comm->suspended) && chrGroupDepth() == 0)
    return refused(comm, chrFail(ncclInvalidUsage, "ncclCommResume: communicator %p is not suspended", (void*)comm));
  res = runOrDefer(comm, CHR_JOB_RESUME, 0);
  return res == ncclSuccess ? res : refused(comm, res);
}

NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  CHECK(chrCommCheck(comm, "ncclCommMemStats"));
  if (value == NULL) return chrFail(ncclInvalidArgument, "ncclCommMemStats: value is NULL");
  /* All of a rank's GPU memory is its device state, which a suspend frees: nothing persists. */
  const uint64_t suspendable = chrDevCommDeviceBytes(comm);
  switch (stat) {
    case ncclStatGpuMemSuspend: *value = suspendable; return ncclSuccess;
    case ncclStatGpuMemSuspended: *value = atomic_load(&comm->suspended) ? 1 : 0; return ncclSuccess;
    case ncclStatGpuMemPersist: *value = 0; return ncclSuccess;
    case ncclStatGpuMemTotal: *value = suspendable; return ncclSuccess;
    default:
      return chrFail(ncclInvalidArgument, "ncclCommMemStats: stat = %d (ncclStatGpuMemSuspend 0 .. ncclStatGpuMemTotal 3)",
                     (int)stat);
  }
}
