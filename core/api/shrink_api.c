/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shrink_api.c: ncclCommShrink.
 *
 * Called by every parent rank that stays, never by the excluded ones (after a failure they may be
 * gone). The child holds the ranks that stay, in parent order. config NULL: the child inherits the
 * parent's effective config, as for ncclCommSplit. shrinkFlags:
 *   NCCL_SHRINK_DEFAULT  the parent is healthy (a failed parent is refused with its error);
 *   NCCL_SHRINK_ABORT    for recovery: the parent's GPU work is aborted first (its kernels return
 *                        within milliseconds) and the parent is marked failed (ncclRemoteError):
 *                        the program then aborts or destroys it. A parent that has already failed
 *                        (a peer died) is accepted.
 * The exchange (comm/shrink.c) goes between the ranks that stay, over the parent's bootstrap; then
 * the child's init runs as ncclCommInitRankConfig's would (on a thread for a non-blocking config:
 * ncclInProgress, poll the child). Every rank that stays must pass the same exclude list (checked
 * against the lowest rank that stays; a rank whose list names another leader waits for that rank).
 * Inside a group it runs at the outermost ncclGroupEnd, as a split does (below).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include "api/api.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

/* Arguments and the parent's state. */
static ncclResult_t checkShrink(ncclComm_t comm, const int* exclude, int count, int flags) {
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return chrFail(ncclInvalidArgument, "ncclCommShrink: shrinkFlags = %d (NCCL_SHRINK_DEFAULT %d or NCCL_SHRINK_ABORT %d)",
                   flags, NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT);
  int state = atomic_load(&comm->asyncError);
  if (state == ncclInProgress)
    return chrFail(ncclInvalidUsage, "ncclCommShrink: communicator is still initializing (poll ncclCommGetAsyncError)");
  if (comm->abortFlag) return chrFail(ncclInvalidUsage, "ncclCommShrink: communicator was aborted");
  if (comm->finalized) return chrFail(ncclInvalidUsage, "ncclCommShrink: communicator was finalized");
  /* A failed parent needs NCCL_SHRINK_ABORT, or a revoke before (which stopped what was in flight). */
  if (state != ncclSuccess && flags != NCCL_SHRINK_ABORT && !atomic_load(&comm->revoked))
    return chrCommFailedError(comm, "ncclCommShrink");
  const int n = comm->nRanks;
  if (count < 0 || count >= n)
    return chrFail(ncclInvalidArgument, "ncclCommShrink: excludeRanksCount = %d, must be 0 .. %d (nranks - 1)", count,
                   n - 1);
  if (count > 0 && exclude == NULL)
    return chrFail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList is NULL with excludeRanksCount = %d", count);
  unsigned char* seen = calloc((size_t)n, 1);
  if (seen == NULL) return chrFail(ncclSystemError, "ncclCommShrink: out of memory for %d ranks", n);
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < count && res == ncclSuccess; i++) {
    const int r = exclude[i];
    if (r < 0 || r >= n)
      res = chrFail(ncclInvalidArgument, "ncclCommShrink: excludeRanksList[%d] = %d, not a rank of %d", i, r, n);
    else if (seen[r])
      res = chrFail(ncclInvalidArgument, "ncclCommShrink: rank %d is in excludeRanksList twice", r);
    else if (r == comm->rank)
      res = chrFail(ncclInvalidUsage, "ncclCommShrink: rank %d is in its own exclude list (excluded ranks do not call "
                    "ncclCommShrink)", r);
    else
      seen[r] = 1;
  }
  free(seen);
  return res;
}

/* Inside a group the call records the shrink (a copy of the list; the child's handle is made now,
 * still initializing) and the exchange runs at the outermost ncclGroupEnd, as a split's does: one
 * thread can shrink several ranks of one job (comms from ncclCommInitAll). */
static ncclResult_t deferShrink(ncclComm_t comm, const int* exclude, int count, const ncclConfig_t* childConfig,
                                int flags, ncclComm_t* newcomm) {
  struct chrCommJob job = {comm, NCCL_SPLIT_NOCOLOR, 0, comm->shrinkCount, NULL, CHR_JOB_SHRINK, count, flags, NULL};
  job.exclude = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
  if (job.exclude == NULL) return chrFail(ncclSystemError, "ncclCommShrink: out of memory queueing a shrink in a group");
  for (int i = 0; i < count; i++) job.exclude[i] = exclude[i];
  ncclResult_t res = chrCommAllocPending(childConfig, &job.child);
  if (res == ncclSuccess) res = chrGroupDeferCommJob(&job);
  if (res != ncclSuccess) {
    if (job.child) chrCommFree(job.child);
    free(job.exclude);
    return res;
  }
  comm->shrinkCount++;
  *newcomm = job.child;
  /* Inside a group a blocking init completes at ncclGroupEnd. */
  return job.child->config.blocking ? ncclSuccess : ncclInProgress;
}

static ncclResult_t shrink(ncclComm_t comm, const int* exclude, int count, ncclComm_t* newcomm, const ncclConfig_t* config,
                           int flags) {
  CHECK(checkShrink(comm, exclude, count, flags));
  ncclConfig_t childConfig;
  CHECK(chrSplitConfig(comm, config, &childConfig));
  if (chrGroupDepth() > 0) return deferShrink(comm, exclude, count, &childConfig, flags, newcomm);
  if (flags == NCCL_SHRINK_ABORT) chrShrinkAbortParent(comm);
  int nranks = 0, rank = -1;
  ncclUniqueId id;
  CHECK(chrShrinkExchange(comm, exclude, count, comm->shrinkCount++, &nranks, &rank, &id));
  return chrCommInitStartOn(newcomm, nranks, &id, rank, &childConfig, 0, comm->cudaDev); /* as for a split */
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  if (newcomm == NULL) return chrFail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  *newcomm = NULL;
  ncclResult_t valid = chrCommCheck(comm, "ncclCommShrink");
  if (valid != ncclSuccess) return valid;
  atomic_fetch_add(&comm->busy, 1); /* a destroy from another thread must wait for the exchange */
  ncclResult_t res = shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  atomic_fetch_sub(&comm->busy, 1);
  if (CHR_IS_ERROR(res)) {
    chrCommNoteError(comm);
    chrGroupNoteError(res);
  }
  return res;
}
