/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_revoke.c: ncclCommRevoke through the public API, N ranks as processes.
 *   test_revoke basic N H     revoke after some all-reduces: the refusals (flags, twice, every new
 *                             operation, finalize), a queued all-reduce dropped from an open group, then
 *                             the revoked comm as a parent: a split and a shrink whose children
 *                             all-reduce random data correctly, and destroy
 *   test_revoke inflight N H  the recovery flow: the last rank never comes to a large all-reduce; the
 *                             others' calls, on a thread of their own, are stuck until their main
 *                             thread revokes the comm, then return an error; every rank revokes and the
 *                             survivors shrink the last rank away and go on
 * H: hosts acted out (1: every rank on one host, shm; N: every rank its own host, net).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h"

#define COUNT 30011

/* Sum all-reduce on comm; `members[k]` is the parent rank whose data child rank k holds. */
static int allReduceChecked(ncclComm_t comm, int myParentRank, const int* members, int n, unsigned round) {
  return rankAllReduceChecked(comm, myParentRank, members, n, round, COUNT);
}

static int basicRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int all[64];
  for (int r = 0; r < nranks; r++) all[r] = r;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(allReduceChecked(comm, rank, all, nranks, 1) == 0);
  EXPECT(ncclCommRevoke(NULL, NCCL_REVOKE_DEFAULT) == ncclInvalidArgument);
  EXPECT(ncclCommRevoke(comm, 1) == ncclInvalidArgument);
  /* An all-reduce queued in an open group is dropped by the revoke: the group's end runs nothing. */
  int32_t x = 5;
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess && x == 5);
  EXPECT(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclInvalidArgument);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(comm), "revoked") != NULL);
  EXPECT(ncclSend(&x, 1, ncclInt32, (rank + 1) % nranks, comm, NULL) == ncclInvalidUsage);
  ncclWindow_t win = NULL;
  EXPECT(ncclCommWindowRegister(comm, &x, sizeof(x), &win, 0) == ncclInvalidUsage);
  ncclResult_t state = ncclInternalError;
  EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess);
  EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage);
  /* A parent still: a split of every rank (reversed), then a shrink without the last rank. */
  ncclComm_t split = NULL, shrunk = NULL;
  EXPECT(ncclCommSplit(comm, 0, nranks - rank, &split, NULL) == ncclSuccess);
  int reversed[64];
  for (int k = 0; k < nranks; k++) reversed[k] = nranks - 1 - k;
  int r = -1;
  EXPECT(ncclCommUserRank(split, &r) == ncclSuccess && r == nranks - 1 - rank);
  EXPECT(allReduceChecked(split, rank, reversed, nranks, 2) == 0);
  int last = nranks - 1;
  if (rank != last) {
    EXPECT(ncclCommShrink(comm, &last, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT) == ncclSuccess);
    EXPECT(allReduceChecked(shrunk, rank, all, nranks - 1, 3) == 0);
    EXPECT(ncclCommDestroy(shrunk) == ncclSuccess);
  }
  EXPECT(ncclCommDestroy(split) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

struct stuckCall {
  ncclComm_t comm;
  float* buf;
  size_t count;
  ncclResult_t res;
  double returnedAt;
};

static void* stuckAllReduce(void* arg) {
  struct stuckCall* c = arg;
  c->res = ncclAllReduce(c->buf, c->buf, c->count, ncclFloat, ncclSum, c->comm, NULL);
  c->returnedAt = chrLaunchNowSec();
  return NULL;
}

static int inflightRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int all[64];
  for (int r = 0; r < nranks; r++) all[r] = r;
  ncclComm_t comm = NULL, shrunk = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(allReduceChecked(comm, rank, all, nranks, 4) == 0); /* links made */
  const int last = nranks - 1;
  if (rank != last) {
    struct stuckCall c = {comm, calloc((size_t)8 << 20, sizeof(float)), (size_t)8 << 20, ncclSuccess, 0};
    pthread_t t;
    EXPECT(c.buf != NULL && pthread_create(&t, NULL, stuckAllReduce, &c) == 0);
    chrLaunchSleepMs(300); /* the call waits for the last rank, which never comes */
    double t0 = chrLaunchNowSec();
    EXPECT(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclSuccess);
    EXPECT(chrLaunchNowSec() - t0 < 5.0);
    pthread_join(t, NULL);
    EXPECT(c.res != ncclSuccess && c.res != ncclInProgress);
    EXPECT(c.returnedAt - t0 < 1.5);
    free(c.buf);
    /* Recovery: the survivors shrink the last rank away and go on. */
    EXPECT(ncclCommShrink(comm, (int*)&last, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT) == ncclSuccess);
    EXPECT(allReduceChecked(shrunk, rank, all, nranks - 1, 5) == 0);
    EXPECT(ncclCommDestroy(shrunk) == ncclSuccess);
  } else {
    EXPECT(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclSuccess);
    chrLaunchSleepMs(2000); /* its links stay open: what ends the others' calls is their revoke */
  }
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_revoke basic|inflight N [H]\n");
    return 2;
  }
  const int n = atoi(argv[2]), hosts = argc > 3 ? atoi(argv[3]) : 1;
  if (n < 2 || n > 64) return 2;
  if (strcmp(argv[1], "basic") == 0) return chrLaunchRanks(n, hosts, 60, basicRank, NULL);
  if (strcmp(argv[1], "inflight") == 0) return chrLaunchRanks(n, hosts, 60, inflightRank, NULL);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
