/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_coll.c: allgather and barrier over the bootstrap's point-to-point messages.
 * They use reserved (negative) tags only, so they never take a user's message.
 */
#include "bootstrap/bootstrap_internal.h"
#include "log/check.h"
#include "log/log.h"

ncclResult_t chrBootstrapAllGather(struct chrBootstrap* bs, void* allData, size_t size) {
  if (bs == NULL) return chrFail(ncclInvalidArgument, "bootstrap: allgather on a NULL bootstrap");
  if (size > 0 && allData == NULL) return chrFail(ncclInvalidArgument, "bootstrap: allgather into NULL");
  int n = bs->nranks, r = bs->rank;
  int next = (r + 1) % n, prev = (r - 1 + n) % n;
  char* base = allData;
  /* Ring: at step s, pass on the slice that came from rank r - s, and take the one from r - s - 1. */
  for (int s = 0; s < n - 1; s++) {
    int sendSlice = (r - s + n) % n;
    int recvSlice = (r - s - 1 + n) % n;
    CHECK(chrBootstrapSend(bs, next, CHR_BS_TAG_ALLGATHER, base + (size_t)sendSlice * size, size));
    CHECK(chrBootstrapRecv(bs, prev, CHR_BS_TAG_ALLGATHER, base + (size_t)recvSlice * size, size));
  }
  return ncclSuccess;
}

ncclResult_t chrBootstrapBarrier(struct chrBootstrap* bs) {
  if (bs == NULL) return chrFail(ncclInvalidArgument, "bootstrap: barrier on a NULL bootstrap");
  int n = bs->nranks, r = bs->rank;
  /* Dissemination: after round k every rank has heard, directly or not, from 2^(k+1) ranks. */
  int round = 0;
  for (int dist = 1; dist < n; dist <<= 1, round++) {
    CHECK(chrBootstrapSend(bs, (r + dist) % n, CHR_BS_TAG_BARRIER_BASE - round, NULL, 0));
    CHECK(chrBootstrapRecv(bs, (r - dist + n) % n, CHR_BS_TAG_BARRIER_BASE - round, NULL, 0));
  }
  return ncclSuccess;
}
