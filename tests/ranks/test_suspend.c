/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_suspend.c: ncclCommSuspend, ncclCommResume and ncclCommMemStats through the public API on host
 * buffers (the GPU memory a suspend frees is checked by gpu.nccl.suspend and gpu.procs.suspend).
 *   test_suspend basic N H   all-reduces before, between two suspend-resume cycles and after, on
 *                            random data against a reference; what a suspended comm refuses; the
 *                            statistics (no GPU state: 0 bytes) and their refusals
 *   test_suspend initall N   one thread suspends and resumes every rank of ncclCommInitAll in groups
 * H: hosts acted out (1: every rank on one host, shm; N: every rank its own host, net).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h"

#define COUNT 20011

static int allReduceChecked(ncclComm_t comm, int rank, int n, unsigned round) {
  return rankAllReduceChecked(comm, rank, NULL, n, round, COUNT);
}

static uint64_t stat(ncclComm_t comm, ncclCommMemStat_t which) {
  uint64_t v = ~0ull;
  return ncclCommMemStats(comm, which, &v) == ncclSuccess ? v : ~0ull;
}

static int basicRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(allReduceChecked(comm, rank, nranks, 1) == 0);
  uint64_t v = 0;
  EXPECT(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL) == ncclInvalidArgument);
  EXPECT(ncclCommMemStats(comm, (ncclCommMemStat_t)7, &v) == ncclInvalidArgument);
  EXPECT(ncclCommMemStats(NULL, ncclStatGpuMemTotal, &v) == ncclInvalidArgument);
  /* Host buffers only: no GPU state, nothing to free. */
  EXPECT(stat(comm, ncclStatGpuMemSuspend) == 0 && stat(comm, ncclStatGpuMemTotal) == 0);
  EXPECT(stat(comm, ncclStatGpuMemPersist) == 0 && stat(comm, ncclStatGpuMemSuspended) == 0);
  EXPECT(ncclCommSuspend(comm, 0x4) == ncclInvalidArgument);
  EXPECT(ncclCommSuspend(NULL, NCCL_SUSPEND_MEM) == ncclInvalidArgument);
  EXPECT(ncclCommResume(comm) == ncclInvalidUsage); /* not suspended */
  for (unsigned cycle = 0; cycle < 2; cycle++) {
    EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclSuccess);
    EXPECT(stat(comm, ncclStatGpuMemSuspended) == 1);
    int32_t x = 1;
    EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
    EXPECT(strstr(ncclGetLastError(comm), "suspended") != NULL && x == 1);
    EXPECT(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage);
    ncclComm_t child = NULL;
    EXPECT(ncclCommSplit(comm, 0, rank, &child, NULL) == ncclInvalidUsage && child == NULL);
    EXPECT(ncclCommResume(comm) == ncclSuccess);
    EXPECT(stat(comm, ncclStatGpuMemSuspended) == 0);
    EXPECT(allReduceChecked(comm, rank, nranks, 2 + cycle) == 0);
  }
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int initAll(int n) {
  ncclComm_t comms[8];
  static int32_t bufs[8][COUNT];
  EXPECT(n <= 8 && ncclCommInitAll(comms, n, NULL) == ncclSuccess);
  for (unsigned cycle = 0; cycle < 2; cycle++) {
    EXPECT(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < n; r++) EXPECT(ncclCommSuspend(comms[r], NCCL_SUSPEND_MEM) == ncclSuccess);
    EXPECT(ncclGroupEnd() == ncclSuccess);
    for (int r = 0; r < n; r++) EXPECT(stat(comms[r], ncclStatGpuMemSuspended) == 1);
    EXPECT(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < n; r++) EXPECT(ncclCommResume(comms[r]) == ncclSuccess);
    EXPECT(ncclGroupEnd() == ncclSuccess);
    for (int r = 0; r < n; r++) rankFill(bufs[r], COUNT, 10 + cycle, r);
    EXPECT(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < n; r++)
      EXPECT(ncclAllReduce(bufs[r], bufs[r], COUNT, ncclInt32, ncclSum, comms[r], NULL) == ncclSuccess);
    EXPECT(ncclGroupEnd() == ncclSuccess);
    for (int r = 0; r < n; r++) EXPECT(rankCheckSum(bufs[r], COUNT, 10 + cycle, NULL, n) == 0);
  }
  for (int r = 0; r < n; r++) EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_suspend basic N [H] | initall N\n");
    return 2;
  }
  const int n = atoi(argv[2]);
  if (strcmp(argv[1], "basic") == 0) return chrLaunchRanks(n, argc > 3 ? atoi(argv[3]) : 1, 60, basicRank, NULL);
  if (strcmp(argv[1], "initall") == 0) return initAll(n);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
