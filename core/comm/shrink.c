/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shrink.c: the exchange of ncclCommShrink (comm/lifecycle.h), among the parent's ranks that stay. Unlike a
 * split it cannot gather from every parent rank: the excluded ones do not call (after a failure they
 * may be gone), so the ranks that stay derive the child from the exclude list alone, and the leader's
 * message carries what they must agree on (the shrink's number on this parent, the child's size, a
 * digest of the list), which every receiver checks. Bootstrap messages go between live ranks only.
 */
#include <stdlib.h>
#include <string.h>
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "log/check.h"
#include "log/log.h"

/* Bootstrap tag of the id message (split.c uses 0x40000; see its list of the other users). */
#define TAG_SHRINK_ID 0x41000
#define SHRINK_ID_MAGIC 0x5348524bu /* "SHRK" */

struct shrinkIdMsg { /* leader -> each other rank that stays */
  uint32_t magic;
  uint32_t seq;
  int32_t nranks;
  int32_t pad;
  uint64_t digest;
  ncclUniqueId id;
};

/* Order-independent digest of the excluded ranks: FNV-1a over a bitmap walk of the parent's ranks. */
static uint64_t listDigest(const unsigned char* excluded, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int r = 0; r < n; r++) {
    h ^= (uint64_t)(excluded[r] ? r + 1 : 0);
    h *= 1099511628211ull;
  }
  return h;
}

ncclResult_t chrShrinkExchange(struct ncclComm* parent, const int* exclude, int count, uint32_t seq, int* nranks,
                               int* rank, ncclUniqueId* id) {
  const int n = parent->nRanks;
  unsigned char* excluded = calloc((size_t)n, 1);
  if (excluded == NULL) return chrFail(ncclSystemError, "ncclCommShrink: out of memory for %d ranks", n);
  for (int i = 0; i < count; i++) excluded[exclude[i]] = 1;
  int leader = -1, size = 0, mine = -1;
  for (int r = 0; r < n; r++) {
    if (excluded[r]) continue;
    if (leader < 0) leader = r;
    if (r == parent->rank) mine = size;
    size++;
  }
  const uint64_t digest = listDigest(excluded, n);
  struct shrinkIdMsg msg;
  memset(&msg, 0, sizeof(msg));
  if (parent->rank == leader) {
    ncclResult_t res = chrBootstrapNewUniqueId(id); /* never NCCL_COMM_ID's fixed address */
    msg.magic = SHRINK_ID_MAGIC;
    msg.seq = seq;
    msg.nranks = size;
    msg.digest = digest;
    msg.id = *id;
    for (int r = leader + 1; r < n && res == ncclSuccess; r++)
      if (!excluded[r]) res = chrBootstrapSend(parent->bootstrap, r, TAG_SHRINK_ID, &msg, sizeof(msg));
    free(excluded);
    if (res != ncclSuccess) return res;
  } else {
    free(excluded);
    CHECK(chrBootstrapRecv(parent->bootstrap, leader, TAG_SHRINK_ID, &msg, sizeof(msg)));
    if (msg.magic != SHRINK_ID_MAGIC)
      return chrFail(ncclRemoteError, "ncclCommShrink: parent rank %d sent a malformed id message (magic 0x%x)", leader,
                     msg.magic);
    if (msg.seq != seq || msg.nranks != size || msg.digest != digest)
      return chrFail(ncclInvalidUsage,
                     "ncclCommShrink: parent rank %d is in its shrink #%u of this communicator to %d ranks, this rank "
                     "in #%u to %d ranks%s (every rank that stays must call it alike, with the same exclude list)",
                     leader, msg.seq, msg.nranks, seq, size, msg.digest != digest ? ", with another exclude list" : "");
    *id = msg.id;
  }
  *nranks = size;
  *rank = mine;
  INFO(NCCL_INIT, "comm %p rank %d shrink #%u: %d rank(s) excluded -> rank %d of %d", (void*)parent, parent->rank, seq,
       count, mine, size);
  return ncclSuccess;
}

void chrShrinkAbortParent(struct ncclComm* parent) {
  chrDevCommAbort(parent); /* its kernels, and its peers' in this process, stop waiting */
  chrSetLastError("ncclCommShrink(NCCL_SHRINK_ABORT): communicator %p was aborted for the shrink", (void*)parent);
  chrCommSetAsyncError(parent, ncclRemoteError);
}
