/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grow_api.c: ncclCommGetUniqueId and ncclCommGrow: a larger communicator made of an existing one's
 * ranks and new ones.
 *
 * One rank of the existing communicator calls ncclCommGetUniqueId: the id names a new bootstrap
 * root, run in that rank's process (it must stay up until the grown communicator is made), and the
 * program hands it to every rank, old and new, out of band. The existing ranks then call
 * ncclCommGrow(comm, nRanks, &id, -1, ...): they keep their ranks and, without a config, their
 * communicator's effective config and device. The new ranks call ncclCommGrow(NULL, nRanks, &id,
 * rank, ...) with ranks the old ones do not hold; a rank two processes claim is refused by the root.
 * The result is an init like ncclCommInitRankConfig's: inline when blocking, on a thread when not,
 * deferred to the outermost ncclGroupEnd inside a group (one thread may grow several ranks). The
 * existing communicator stays usable and is destroyed on its own.
 */
#include "api/api.h"
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  if (uniqueId == NULL) return chrFail(ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId is NULL");
  CHECK(chrCommCheckParent(comm, "ncclCommGetUniqueId"));
  return chrBootstrapNewUniqueId(uniqueId); /* a root of its own, never NCCL_COMM_ID's fixed address */
}

/* The new comm's rank, config and device; for an existing rank they come from its communicator
 * (*config then points at inherited, filled here), for a new one from the call (the user's config). */
static ncclResult_t growSetup(ncclComm_t comm, int nRanks, int rank, const ncclConfig_t* user, int* myRank,
                              const ncclConfig_t** config, ncclConfig_t* inherited, int* cudaDev) {
  if (comm == NULL) {
    if (nRanks < 2) return chrFail(ncclInvalidArgument, "ncclCommGrow: nRanks = %d, must be >= 2", nRanks);
    if (rank < 0 || rank >= nRanks)
      return chrFail(ncclInvalidArgument, "ncclCommGrow: rank = %d is out of range [0, %d) for a new rank", rank,
                     nRanks);
    *myRank = rank;
    *cudaDev = CHR_COMM_CALLER_DEVICE;
    *config = user;
    return ncclSuccess;
  }
  CHECK(chrCommCheckParent(comm, "ncclCommGrow"));
  if (rank != -1)
    return chrFail(ncclInvalidArgument,
                   "ncclCommGrow: rank = %d with an existing communicator (its ranks pass -1 and keep rank %d)", rank,
                   comm->rank);
  if (nRanks <= comm->nRanks)
    return chrFail(ncclInvalidArgument, "ncclCommGrow: nRanks = %d, must be larger than the communicator's %d", nRanks,
                   comm->nRanks);
  *myRank = comm->rank;
  *cudaDev = comm->cudaDev;
  *config = inherited;
  return chrSplitConfig(comm, user, inherited); /* user NULL: the communicator's effective config */
}

NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
         ncclComm_t* newcomm, ncclConfig_t* config) {
  ncclResult_t res = ncclSuccess;
  if (newcomm == NULL) res = chrFail(ncclInvalidArgument, "ncclCommGrow: newcomm is NULL");
  else *newcomm = NULL;
  if (res == ncclSuccess && uniqueId == NULL) res = chrFail(ncclInvalidArgument, "ncclCommGrow: uniqueId is NULL");
  int myRank = -1, cudaDev = CHR_COMM_CALLER_DEVICE;
  const ncclConfig_t* effective = NULL;
  ncclConfig_t inherited;
  if (res == ncclSuccess) res = growSetup(comm, nRanks, rank, config, &myRank, &effective, &inherited, &cudaDev);
  if (res != ncclSuccess) {
    chrGroupNoteError(res);
    return res;
  }
  const int inGroup = chrGroupDepth() > 0;
  res = chrCommInitStartOn(newcomm, nRanks, uniqueId, myRank, effective, inGroup, cudaDev);
  if (inGroup && *newcomm != NULL) {
    CHECK(chrGroupDeferInit(*newcomm));
    return (*newcomm)->config.blocking ? ncclSuccess : ncclInProgress; /* a blocking one completes at the end */
  }
  return res;
}
