/*
 * comm.c: communicator handle checks and error bookkeeping shared by the API layer.
 */
#include <string.h>
#include "comm/comm.h"
#include "log/log.h"

ncclResult_t chrCommCheck(const struct ncclComm* comm, const char* func) {
  if (comm == NULL) return chrFail(ncclInvalidArgument, "%s: comm is NULL", func);
  if (comm->magic == CHR_COMM_DEAD_MAGIC)
    return chrFail(ncclInvalidArgument, "%s: comm %p was already destroyed", func, (const void*)comm);
  if (comm->magic != CHR_COMM_MAGIC)
    return chrFail(ncclInvalidArgument, "%s: comm %p is not a communicator (bad magic)", func, (const void*)comm);
  return ncclSuccess;
}

ncclResult_t chrCommCheckReady(struct ncclComm* comm, const char* func) {
  ncclResult_t res = chrCommCheck(comm, func);
  if (res != ncclSuccess) return res;
  int state = atomic_load(&comm->asyncError);
  if (state == ncclInProgress)
    return chrFail(ncclInvalidUsage, "%s: communicator is still initializing (poll ncclCommGetAsyncError)", func);
  if (comm->abortFlag) return chrFail(ncclInvalidUsage, "%s: communicator was aborted", func);
  if (state != ncclSuccess)
    return chrFail((ncclResult_t)state, "%s: communicator is in error state: %s", func, comm->lastError);
  if (comm->finalized) return chrFail(ncclInvalidUsage, "%s: communicator was finalized", func);
  return ncclSuccess;
}

void chrCommNoteError(struct ncclComm* comm) {
  if (comm == NULL || comm->magic != CHR_COMM_MAGIC) return;
  pthread_mutex_lock(&comm->lock);
  strncpy(comm->lastError, chrThreadLastError(), sizeof(comm->lastError) - 1);
  comm->lastError[sizeof(comm->lastError) - 1] = '\0';
  comm->lastErrorSeq = chrThreadLastErrorSeq();
  pthread_mutex_unlock(&comm->lock);
}

void chrCommSetAsyncError(struct ncclComm* comm, ncclResult_t res) {
  int expected = ncclSuccess;
  if (!atomic_compare_exchange_strong(&comm->asyncError, &expected, (int)res)) {
    expected = ncclInProgress;
    atomic_compare_exchange_strong(&comm->asyncError, &expected, (int)res);
  }
  chrCommNoteError(comm);
}

void chrCommRetain(struct ncclComm* comm) { atomic_fetch_add(&comm->refs, 1); }

void chrCommRelease(struct ncclComm* comm) {
  if (atomic_fetch_sub(&comm->refs, 1) == 1) chrCommFree(comm);
}
