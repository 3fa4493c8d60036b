/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * split_api.c: ncclCommSplit.
 *
 * Collective over the parent: every parent rank calls it. color >= 0 picks the child, or
 * NCCL_SPLIT_NOCOLOR (-1): no child (*newcomm = NULL), but the rank still takes part in the exchange.
 * Child ranks follow key, ties by parent rank. config NULL: the child inherits the parent's
 * effective config (blocking, netName, commName, ...); otherwise the given config is read as for
 * ncclCommInitRankConfig.
 *
 * Outside a group the exchange over the parent (comm/split.c) runs in the call, then the child's init
 * runs as ncclCommInitRankConfig's would: inline when blocking, on a thread when config.blocking = 0
 * (ncclInProgress, poll the child with ncclCommGetAsyncError).
 * Inside a group the call only records the split (a colored child's handle is made now, still
 * initializing) and everything runs at the outermost ncclGroupEnd: the exchanges of each parent in call
 * order on a thread per parent, so one thread can split several ranks of one job (comms from
 * ncclCommInitAll), then the children's inits. A failure reaches ncclGroupEnd's return value.
 */
#include <stdatomic.h>
#include "api/api.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

static ncclResult_t splitChecked(ncclComm_t parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return chrFail(ncclInvalidArgument, "ncclCommSplit: color = %d, must be >= 0 or NCCL_SPLIT_NOCOLOR (%d)", color,
                   NCCL_SPLIT_NOCOLOR);
  ncclConfig_t childConfig;
  CHECK(chrSplitConfig(parent, config, &childConfig));

  uint32_t seq = parent->splitCount++; /* every rank counts its splits of this parent the same way */
  if (chrGroupDepth() > 0) {
    struct chrCommJob job = {parent, color, key, seq, NULL};
    if (color != NCCL_SPLIT_NOCOLOR) CHECK(chrCommAllocPending(&childConfig, &job.child));
    ncclResult_t res = chrGroupDeferCommJob(&job);
    if (res != ncclSuccess) {
      if (job.child) chrCommFree(job.child);
      return res;
    }
    *newcomm = job.child;
    /* Inside a group a blocking init completes at ncclGroupEnd. */
    return job.child && !job.child->config.blocking ? ncclInProgress : ncclSuccess;
  }

  int nranks = 0, rank = -1;
  ncclUniqueId id;
  CHECK(chrSplitExchange(parent, color, key, seq, &nranks, &rank, &id));
  if (nranks == 0) return ncclSuccess; /* NCCL_SPLIT_NOCOLOR */
  /* The device stays the parent's (as ncclCommInitAll's comms keep theirs), set before the ranks
   * exchange their devices. */
  return chrCommInitStartOn(newcomm, nranks, &id, rank, &childConfig, 0, parent->cudaDev);
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (newcomm == NULL) {
    chrGroupNoteError(ncclInvalidArgument);
    return chrFail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  }
  *newcomm = NULL;
  ncclResult_t ready = chrCommCheckParent(comm, "ncclCommSplit");
  if (ready != ncclSuccess) {
    chrGroupNoteError(ready);
    return ready;
  }
  atomic_fetch_add(&comm->busy, 1); /* a destroy from another thread must wait for the exchange */
  ncclResult_t res = splitChecked(comm, color, key, newcomm, config);
  atomic_fetch_sub(&comm->busy, 1);
  if (CHR_IS_ERROR(res)) {
    chrCommNoteError(comm);
    chrGroupNoteError(res);
  }
  return res;
}
