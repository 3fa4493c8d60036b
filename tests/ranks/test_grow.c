/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grow.c: ncclCommGetUniqueId and ncclCommGrow through the public API.
 *   test_grow procs N M H  N ranks make a communicator; rank 0 asks it for a grow id and hands it to
 *                          M new ranks through a file; the N + M ranks grow (the old ones pass -1 and
 *                          keep their ranks, the new ones name theirs), all-reduce random data on the
 *                          grown comm against a reference, and the old comm still works after; the
 *                          refusals of bad arguments first
 *   test_grow initall N M  one process: ncclCommInitAll(N), then one thread grows the N comms and M
 *                          new ranks inside one group; the grown comms keep their parents' devices
 * H: hosts acted out (1: every rank on one host, shm; N + M: every rank its own host, net).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h"

#define COUNT 50021 /* odd, more than one step on every transport */

static int allReduceChecked(ncclComm_t comm, int rank, int n, unsigned round) {
  return rankAllReduceChecked(comm, rank, NULL, n, round, COUNT);
}

struct growJob {
  int nOld, nNew;
  char path[512]; /* where rank 0 leaves the grow id */
};

static int publishId(const char* path, const ncclUniqueId* id) {
  char tmp[600];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  EXPECT(f != NULL);
  EXPECT(fwrite(id, sizeof(*id), 1, f) == 1);
  EXPECT(fclose(f) == 0);
  EXPECT(rename(tmp, path) == 0); /* readers see the whole id or nothing */
  return 0;
}

static int readId(const char* path, ncclUniqueId* id) {
  for (int tries = 0; tries < 3000; tries++) { /* 30 s */
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      size_t got = fread(id, sizeof(*id), 1, f);
      fclose(f);
      EXPECT(got == 1);
      return 0;
    }
    chrLaunchSleepMs(10);
  }
  fprintf(stderr, "FAIL: no grow id at %s after 30 s\n", path);
  return 1;
}

static int procsRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const struct growJob* job = arg;
  const int old = rank < job->nOld, n = job->nOld + job->nNew;
  ncclComm_t comm = NULL, big = NULL;
  ncclUniqueId gid;
  memset(&gid, 0, sizeof(gid));
  if (old) {
    EXPECT(ncclCommInitRank(&comm, job->nOld, *id, rank) == ncclSuccess);
    EXPECT(allReduceChecked(comm, rank, job->nOld, 1) == 0);
    /* Refusals, each before anything is exchanged. */
    EXPECT(ncclCommGetUniqueId(comm, NULL) == ncclInvalidArgument);
    EXPECT(ncclCommGetUniqueId(NULL, &gid) == ncclInvalidArgument);
    EXPECT(ncclCommGrow(comm, n, &gid, rank, &big, NULL) == ncclInvalidArgument && big == NULL);
    EXPECT(strstr(ncclGetLastError(comm), "pass -1") != NULL);
    EXPECT(ncclCommGrow(comm, job->nOld, &gid, -1, &big, NULL) == ncclInvalidArgument);
    EXPECT(ncclCommGrow(comm, n, NULL, -1, &big, NULL) == ncclInvalidArgument);
    EXPECT(ncclCommGrow(comm, n, &gid, -1, NULL, NULL) == ncclInvalidArgument);
    if (rank == 0) {
      EXPECT(ncclCommGetUniqueId(comm, &gid) == ncclSuccess);
      EXPECT(publishId(job->path, &gid) == 0);
    } else {
      EXPECT(readId(job->path, &gid) == 0);
    }
    EXPECT(ncclCommGrow(comm, n, &gid, -1, &big, NULL) == ncclSuccess);
  } else {
    EXPECT(ncclCommGrow(NULL, n, &gid, n, &big, NULL) == ncclInvalidArgument);
    EXPECT(ncclCommGrow(NULL, 1, &gid, 0, &big, NULL) == ncclInvalidArgument);
    EXPECT(readId(job->path, &gid) == 0);
    EXPECT(ncclCommGrow(NULL, n, &gid, rank, &big, NULL) == ncclSuccess);
  }
  int r = -1, cnt = 0;
  EXPECT(ncclCommUserRank(big, &r) == ncclSuccess && r == rank);
  EXPECT(ncclCommCount(big, &cnt) == ncclSuccess && cnt == n);
  EXPECT(allReduceChecked(big, rank, n, 2) == 0);
  if (old) EXPECT(allReduceChecked(comm, rank, job->nOld, 3) == 0); /* the old comm still works */
  EXPECT(allReduceChecked(big, rank, n, 4) == 0);
  EXPECT(ncclCommDestroy(big) == ncclSuccess);
  if (old) EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int procs(int nOld, int nNew, int hosts) {
  static struct growJob job;
  job.nOld = nOld;
  job.nNew = nNew;
  snprintf(job.path, sizeof(job.path), "%s/chorus-grow-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  unlink(job.path);
  int rc = chrLaunchRanks(nOld + nNew, hosts, 60, procsRank, &job);
  unlink(job.path);
  return rc;
}

/* One thread, every rank: the grows run at the group's end, each rank's init on its own thread. */
static int initAll(int nOld, int nNew) {
  ncclComm_t comms[8], big[16];
  const int n = nOld + nNew;
  EXPECT(n <= 16 && nOld <= 8 && ncclCommInitAll(comms, nOld, NULL) == ncclSuccess);
  ncclUniqueId gid;
  EXPECT(ncclCommGetUniqueId(comms[0], &gid) == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < nOld; r++) EXPECT(ncclCommGrow(comms[r], n, &gid, -1, &big[r], NULL) == ncclSuccess);
  for (int r = nOld; r < n; r++) EXPECT(ncclCommGrow(NULL, n, &gid, r, &big[r], NULL) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  int32_t* bufs[16];
  for (int r = 0; r < n; r++) {
    int rank = -1, dev = -2;
    EXPECT(ncclCommUserRank(big[r], &rank) == ncclSuccess && rank == r);
    EXPECT(ncclCommCuDevice(big[r], &dev) == ncclSuccess);
    if (r < nOld) EXPECT(dev == r); /* ncclCommInitAll gave rank r device r; the grown comm keeps it */
    bufs[r] = malloc(COUNT * sizeof(int32_t));
    rankFill(bufs[r], COUNT, 5, r);
  }
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; r++)
    EXPECT(ncclAllReduce(bufs[r], bufs[r], COUNT, ncclInt32, ncclSum, big[r], NULL) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < n; r++) {
    EXPECT(rankCheckSum(bufs[r], COUNT, 5, NULL, n) == 0);
    free(bufs[r]);
    EXPECT(ncclCommDestroy(big[r]) == ncclSuccess);
  }
  for (int r = 0; r < nOld; r++) EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: test_grow procs N M [H] | initall N M\n");
    return 2;
  }
  const int nOld = atoi(argv[2]), nNew = atoi(argv[3]);
  if (strcmp(argv[1], "procs") == 0) return procs(nOld, nNew, argc > 4 ? atoi(argv[4]) : 1);
  if (strcmp(argv[1], "initall") == 0) return initAll(nOld, nNew);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
