/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suspend.c: the collective part of ncclCommSuspend and ncclCommResume (comm/lifecycle.h).
 *
 * What a suspend with NCCL_SUSPEND_MEM frees is the rank's device state: its arena (connection
 * FIFOs), its device comm and its copy-engine buffers, i.e. what ncclCommMemStats reports. The
 * communicator itself, its bootstrap and its host links stay. The device state comes back at the
 * first GPU call after the resume, made and connected as at the first one, under a new generation
 * (comm->devGeneration, which tags its IPC blobs), so a peer's blob of the old state that was never
 * received cannot be taken for the new one. CUDA graphs captured before a suspend name the old
 * state's memory: capture them again after the resume.
 */
#include <stdlib.h>
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "log/check.h"
#include "log/log.h"

#define SUSPEND_ENTRY_MAGIC 0x53555350u /* "SUSP" */

enum { OP_SUSPEND = 1, OP_RESUME = 2 };

struct suspendEntry { /* allgathered, one per rank */
  uint32_t magic;
  uint32_t seq;
  int32_t rank;
  int32_t op;
};

static const char* opName(int op) { return op == OP_SUSPEND ? "ncclCommSuspend" : "ncclCommResume"; }

/* Every rank at the same call: the same verdict on every rank. */
static ncclResult_t agree(struct ncclComm* comm, int op, uint32_t seq) {
  const int n = comm->nRanks;
  struct suspendEntry* all = calloc((size_t)n, sizeof(*all));
  if (all == NULL) return chrFail(ncclSystemError, "%s: out of memory for %d ranks", opName(op), n);
  struct suspendEntry* mine = &all[comm->rank];
  mine->magic = SUSPEND_ENTRY_MAGIC;
  mine->seq = seq;
  mine->rank = comm->rank;
  mine->op = op;
  ncclResult_t res = chrBootstrapAllGather(comm->bootstrap, all, sizeof(*all));
  for (int r = 0; r < n && res == ncclSuccess; r++) {
    const struct suspendEntry* e = &all[r];
    if (e->magic != SUSPEND_ENTRY_MAGIC || e->rank != r)
      res = chrFail(ncclRemoteError, "%s: rank %d sent a malformed entry (magic 0x%x, rank %d)", opName(op), r, e->magic,
                    e->rank);
    else if (e->seq != seq || e->op != op)
      res = chrFail(ncclInvalidUsage,
                    "%s: rank %d is at its %s #%u of this communicator, this rank at its %s #%u (every rank suspends "
                    "and resumes together)",
                    opName(op), r, opName(e->op), e->seq, opName(op), seq);
  }
  free(all);
  return res;
}

ncclResult_t chrCommSuspendExchange(struct ncclComm* comm, int flags, uint32_t seq) {
  const int releaseMem = (flags & NCCL_SUSPEND_MEM) != 0;
  if (releaseMem) CHECK(chrDevCommWait(comm, "ncclCommSuspend")); /* before the exchange: the peers wait for it */
  CHECK(agree(comm, OP_SUSPEND, seq));
  uint64_t freed = 0;
  if (releaseMem) { /* every rank's GPU work is done: nobody reads this state any more */
    freed = chrDevCommDeviceBytes(comm);
    chrDevCommDetach(comm);
    comm->devGeneration++; /* every rank counts alike, attached or not */
    /* The signal words go with the arena: the next one starts at zero on every rank. */
    free(comm->sigSent);
    free(comm->sigAwaited);
    comm->sigSent = comm->sigAwaited = NULL;
  }
  atomic_store(&comm->suspended, 1);
  INFO(NCCL_INIT, "comm %p rank %d suspended (flags 0x%x): %llu bytes of GPU memory freed", (void*)comm, comm->rank,
       (unsigned)flags, (unsigned long long)freed);
  return ncclSuccess;
}

ncclResult_t chrCommResumeExchange(struct ncclComm* comm, uint32_t seq) {
  CHECK(agree(comm, OP_RESUME, seq));
  atomic_store(&comm->suspended, 0);
  INFO(NCCL_INIT, "comm %p rank %d resumed", (void*)comm, comm->rank);
  return ncclSuccess;
}
