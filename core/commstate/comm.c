/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c: the communicator object's functions: handle checks, error bookkeeping and references,
 * used by every layer above this one. The last release calls the destructor the
 * lifecycle set (comm->destroy), never the lifecycle itself.
 */
#include <stdio.h>
#include <string.h>
#include "commstate/comm.h"
#include "util/futex.h"
#include "log/log.h"

ncclResult_t chrCommCheck(const struct ncclComm* comm, const char* func) {
  if (comm == NULL) return chrFail(ncclInvalidArgument, "%s: comm is NULL", func);
  if (comm->magic == CHR_COMM_DEAD_MAGIC)
    return chrFail(ncclInvalidArgument, "%s: comm %p was already destroyed", func, (const void*)comm);
  if (comm->magic != CHR_COMM_MAGIC)
    return chrFail(ncclInvalidArgument, "%s: comm %p is not a communicator (bad magic)", func, (const void*)comm);
  return ncclSuccess;
}

static ncclResult_t checkUsable(struct ncclComm* comm, const char* func, int asParent) {
  ncclResult_t res = chrCommCheck(comm, func);
  if (res != ncclSuccess) return res;
  int state = atomic_load(&comm->asyncError);
  if (state == ncclInProgress)
    return chrFail(ncclInvalidUsage, "%s: communicator is still initializing (poll ncclCommGetAsyncError)", func);
  if (comm->abortFlag) return chrFail(ncclInvalidUsage, "%s: communicator was aborted", func);
  if (atomic_load(&comm->suspended))
    return chrFail(ncclInvalidUsage, "%s: communicator %p is suspended (ncclCommSuspend): call ncclCommResume first",
                   func, (void*)comm);
  const int revoked = atomic_load(&comm->revoked);
  if (revoked && !asParent)
    return chrFail(ncclInvalidUsage,
                   "%s: communicator %p was revoked (ncclCommRevoke): it can only be split, shrunk, grown, destroyed "
                   "or aborted",
                   func, (void*)comm);
  if (state != ncclSuccess && !revoked) return chrCommFailedError(comm, func);
  if (comm->finalized) return chrFail(ncclInvalidUsage, "%s: communicator was finalized", func);
  return ncclSuccess;
}

ncclResult_t chrCommCheckReady(struct ncclComm* comm, const char* func) { return checkUsable(comm, func, 0); }

ncclResult_t chrCommCheckParent(struct ncclComm* comm, const char* func) { return checkUsable(comm, func, 1); }

/* The message quotes failCause, never lastError: lastError may hold an earlier refusal, and quoting
 * it would nest one prefix per call until the cause fell off the buffer. The cause was logged when it
 * happened; only the first refusal is a WARN, so a caller that keeps trying does not flood the log. */
ncclResult_t chrCommFailedError(struct ncclComm* comm, const char* func) {
  ncclResult_t state = (ncclResult_t)atomic_load(&comm->asyncError);
  char cause[CHR_COMM_FAIL_CAUSE_MAX];
  pthread_mutex_lock(&comm->lock);
  memcpy(cause, comm->failCause, sizeof(cause));
  pthread_mutex_unlock(&comm->lock);
  if (cause[0] == '\0') snprintf(cause, sizeof(cause), "(no cause was recorded)");
  if (atomic_exchange(&comm->failWarned, 1) == 0)
    return chrFail(state, "%s: communicator has failed (%s): %s", func, chrResultName(state), cause);
  chrSetLastError("%s: communicator has failed (%s): %s", func, chrResultName(state), cause);
  INFO(NCCL_INIT, "%s: communicator %p has failed (%s), call refused", func, (void*)comm, chrResultName(state));
  return state;
}

void chrCommNoteError(struct ncclComm* comm) {
  if (comm == NULL || comm->magic != CHR_COMM_MAGIC) return;
  pthread_mutex_lock(&comm->lock);
  strncpy(comm->lastError, chrThreadLastError(), sizeof(comm->lastError) - 1);
  comm->lastError[sizeof(comm->lastError) - 1] = '\0';
  comm->lastErrorSeq = chrThreadLastErrorSeq();
  pthread_mutex_unlock(&comm->lock);
}

/* Under lock, so a reader that sees the error state and then takes the lock finds the cause written. */
void chrCommSetAsyncError(struct ncclComm* comm, ncclResult_t res) {
  pthread_mutex_lock(&comm->lock);
  int expected = ncclSuccess;
  int won = atomic_compare_exchange_strong(&comm->asyncError, &expected, (int)res);
  if (!won) {
    expected = ncclInProgress;
    won = atomic_compare_exchange_strong(&comm->asyncError, &expected, (int)res);
  }
  if (won) {
    const char* text = chrThreadLastError();
    size_t len = strlen(text);
    if (len < sizeof(comm->failCause)) {
      memcpy(comm->failCause, text, len + 1);
    } else { /* keep the start, which names what failed, and say it was cut */
      size_t keep = sizeof(comm->failCause) - 4;
      memcpy(comm->failCause, text, keep);
      memcpy(comm->failCause + keep, "...", 4);
    }
  }
  pthread_mutex_unlock(&comm->lock);
  chrCommNoteError(comm);
}

void chrCommRetain(struct ncclComm* comm) { atomic_fetch_add(&comm->refs, 1); }

void chrCommRelease(struct ncclComm* comm) {
  if (atomic_fetch_sub(&comm->refs, 1) == 1) comm->destroy(comm);
}

void chrCommRaiseAbort(struct ncclComm* comm) {
  __atomic_store_n(&comm->abortFlag, 1, __ATOMIC_SEQ_CST);
  chrFutexWakeAll(&comm->abortFlag, 0);
}
