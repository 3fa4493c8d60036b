/*
 * split_api.c: ncclCommSplit.
 *
 * Collective over the parent: every parent rank calls it. color >= 0 picks the child, or
 * NCCL_SPLIT_NOCOLOR (-1): no child (*newcomm = NULL), but the rank still takes part in the exchange.
 * Child ranks follow key, ties by parent rank. config NULL: the child inherits the parent's
 * effective config (blocking, netName, commName, ...); otherwise the given config is read as for
 * ncclCommInitRankConfig.
 *
 * The exchange over the parent (comm/split.c) runs in the call; the child's init then runs as
 * ncclCommInitRankConfig's would: inline when blocking, on a thread when config.blocking = 0
 * (ncclInProgress, poll the child with ncclCommGetAsyncError), and deferred to the outermost
 * ncclGroupEnd inside a group.
 * Limitation: since the exchange runs in the call, one thread cannot split several ranks of the same
 * parent (comms from ncclCommInitAll) in one group: the first exchange would wait for the others
 * (CHORUS_TIMEOUT). Lifting it needs the child handle to exist before its members are known (an init
 * whose first step is the exchange) and a deferred exchange for NCCL_SPLIT_NOCOLOR ranks at GroupEnd.
 */
#include <stdatomic.h>
#include "api/api.h"
#include "comm/comm.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

static ncclResult_t splitChecked(ncclComm_t parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return chrFail(ncclInvalidArgument, "ncclCommSplit: color = %d, must be >= 0 or NCCL_SPLIT_NOCOLOR (%d)", color,
                   NCCL_SPLIT_NOCOLOR);
  ncclConfig_t childConfig;
  CHECK(chrSplitConfig(parent, config, &childConfig));

  int nranks = 0, rank = -1;
  ncclUniqueId id;
  CHECK(chrSplitExchange(parent, color, key, &nranks, &rank, &id));
  if (nranks == 0) return ncclSuccess; /* NCCL_SPLIT_NOCOLOR */

  int inGroup = chrGroupDepth() > 0;
  ncclResult_t res = chrCommInitStart(newcomm, nranks, &id, rank, &childConfig, inGroup);
  if (*newcomm != NULL) (*newcomm)->cudaDev = parent->cudaDev; /* as ncclCommInitAll does: the device stays */
  if (inGroup && *newcomm != NULL) {
    ncclResult_t deferRes = chrGroupDeferInit(*newcomm);
    if (deferRes != ncclSuccess) {
      chrCommFree(*newcomm); /* stops its init thread */
      *newcomm = NULL;
      return deferRes;
    }
    /* Inside a group a blocking init completes at ncclGroupEnd. */
    return (*newcomm)->config.blocking ? ncclSuccess : ncclInProgress;
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (newcomm == NULL) return chrFail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = NULL;
  CHECK(chrCommCheckReady(comm, "ncclCommSplit"));
  atomic_fetch_add(&comm->busy, 1); /* a destroy from another thread must wait for the exchange */
  ncclResult_t res = splitChecked(comm, color, key, newcomm, config);
  atomic_fetch_sub(&comm->busy, 1);
  if (CHR_IS_ERROR(res)) chrCommNoteError(comm);
  return res;
}
