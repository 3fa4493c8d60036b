/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_window.c: windows (ncclCommWindowRegister, ncclCommWindowDeregister, ncclWinGetUserPtr) through
 * the public API, N ranks as processes (or one process driving N comms).
 *   test_window basic N H     each rank registers windows of random sizes (the same on every rank) and
 *                             flags, all-reduces and all-gathers in them on random data against a
 *                             reference, asks the user pointer, deregisters; the refusals of bad
 *                             arguments and stale handles, and of the one-sided calls (checked
 *                             arguments, then host memory); windows left registered at destroy
 *   test_window mismatch N H  the last rank registers another size, then other flags: every rank fails
 *                             the same way, and the next registration and the comm still work
 *   test_window initall N     ncclCommInitAll, one thread registering a window on every comm inside one
 *                             group (with a split of each in the same group), then collectives in them
 *   test_window peerdeath N H the last rank exits after init: the others' registration fails, no hang
 * H: hosts acted out (1: every rank on one host, shm; N: every rank its own host, net).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h"

#define DEAD_PEER_SEC 30.0

/* All-reduce (sum) in place in the window, then an all-gather out of place within it, both checked. */
static int collectivesIn(ncclComm_t comm, int rank, int nranks, int32_t* win, size_t bytes, unsigned round) {
  const size_t count = bytes / sizeof(int32_t) / (size_t)(nranks + 1); /* room for the all-gather */
  rankFill(win, count, round, rank);
  EXPECT(ncclAllReduce(win, win, count, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(rankCheckSum(win, count, round, NULL, nranks) == 0);
  int32_t* gathered = win + count;
  rankFill(win, count, round + 1, rank);
  EXPECT(ncclAllGather(win, gathered, count, ncclInt32, comm, NULL) == ncclSuccess);
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < count; i++) EXPECT(gathered[(size_t)r * count + i] == rankValue(round + 1, r, i));
  return 0;
}

static int basicRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  /* Sizes from a seed every rank shares: 1 byte of slack, odd, a page, a few MB. */
  const size_t sizes[4] = {(size_t)(nranks + 1) * 4 + 1, 40001 * 4 + 3, 4096, (size_t)3 << 20};
  const int flags[4] = {NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_STRICT_ORDERING,
                        NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING};
  ncclWindow_t wins[4];
  void* bufs[4];
  for (int k = 0; k < 4; k++) {
    bufs[k] = malloc(sizes[k]);
    EXPECT(bufs[k] != NULL);
    wins[k] = (ncclWindow_t)(uintptr_t)1; /* written by the call */
    EXPECT(ncclCommWindowRegister(comm, bufs[k], sizes[k], &wins[k], flags[k]) == ncclSuccess);
    EXPECT(wins[k] != NULL);
    void* user = NULL;
    EXPECT(ncclWinGetUserPtr(comm, wins[k], &user) == ncclSuccess && user == bufs[k]);
  }
  for (int k = 0; k < 4; k++) EXPECT(collectivesIn(comm, rank, nranks, bufs[k], sizes[k], 2u * (unsigned)k) == 0);

  /* Refusals a rank makes alone, before any exchange (so the ranks stay in step). */
  ncclWindow_t bad = NULL;
  EXPECT(ncclCommWindowRegister(comm, bufs[0], sizes[0], NULL, 0) == ncclInvalidArgument);
  EXPECT(ncclCommWindowRegister(comm, NULL, 64, &bad, 0) == ncclInvalidArgument && bad == NULL);
  EXPECT(ncclCommWindowRegister(comm, bufs[0], 0, &bad, 0) == ncclInvalidArgument);
  EXPECT(ncclCommWindowRegister(comm, bufs[0], sizes[0], &bad, 0x10) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(comm), "unknown flags 0x10") != NULL);
  EXPECT(ncclCommWindowRegister(NULL, bufs[0], sizes[0], &bad, 0) == ncclInvalidArgument);
  void* user = NULL;
  EXPECT(ncclWinGetUserPtr(comm, wins[0], NULL) == ncclInvalidArgument);
  EXPECT(ncclWinGetUserPtr(comm, NULL, &user) == ncclInvalidArgument);
  int notAWindow = 0;
  EXPECT(ncclWinGetUserPtr(comm, (ncclWindow_t)(void*)&notAWindow, &user) == ncclInvalidArgument);
  EXPECT(ncclCommWindowDeregister(comm, (ncclWindow_t)(void*)&notAWindow) == ncclInvalidArgument);
  EXPECT(ncclCommWindowDeregister(comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclCommWindowDeregister(NULL, wins[0]) == ncclInvalidArgument);

  /* One-sided calls: every argument is checked; on host memory they are refused (GPU windows only). */
  int32_t one = 1;
  EXPECT(ncclPutSignal(&one, 1, ncclInt32, nranks, wins[0], 0, 0, 0, 0, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclPutSignal(&one, 1, ncclInt32, 0, wins[0], 0, 1, 0, 0, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclPutSignal(&one, 1, ncclInt32, 0, wins[0], 0, 0, 0, 2, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclPutSignal(&one, 1, (ncclDataType_t)99, 0, wins[0], 0, 0, 0, 0, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclPutSignal(&one, 1, ncclInt32, 0, (ncclWindow_t)(void*)&notAWindow, 0, 0, 0, 0, comm, NULL) ==
         ncclInvalidArgument);
  EXPECT(ncclPutSignal(&one, 2, ncclInt32, 0, wins[2], 4092, 0, 0, 0, comm, NULL) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(comm), "do not fit") != NULL);
  EXPECT(ncclPutSignal(&one, 1, ncclInt32, 0, wins[2], 4092, 0, 0, 0, comm, NULL) == ncclInvalidUsage);
  EXPECT(ncclSignal(0, 0, 0, 0, comm, NULL) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(comm), "GPU path") != NULL);
  ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
  EXPECT(ncclWaitSignal(-1, &desc, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclWaitSignal(1, NULL, comm, NULL) == ncclInvalidArgument);
  desc.opCnt = -1;
  EXPECT(ncclWaitSignal(1, &desc, comm, NULL) == ncclInvalidArgument);
  desc.opCnt = 1;
  desc.peer = nranks;
  EXPECT(ncclWaitSignal(1, &desc, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclWaitSignal(0, NULL, comm, NULL) == ncclSuccess);

  /* Deregistered: the handle is refused after; the other windows still answer. */
  EXPECT(ncclCommWindowDeregister(comm, wins[1]) == ncclSuccess);
  EXPECT(ncclCommWindowDeregister(comm, wins[1]) == ncclInvalidArgument);
  EXPECT(ncclWinGetUserPtr(comm, wins[1], &user) == ncclInvalidArgument);
  EXPECT(ncclWinGetUserPtr(comm, wins[2], &user) == ncclSuccess && user == bufs[2]);
  /* A second comm does not know the first one's windows. */
  ncclComm_t other = NULL;
  EXPECT(ncclCommSplit(comm, 0, rank, &other, NULL) == ncclSuccess);
  EXPECT(ncclWinGetUserPtr(other, wins[0], &user) == ncclInvalidArgument);
  EXPECT(ncclCommWindowDeregister(other, wins[0]) == ncclInvalidArgument);
  EXPECT(ncclCommDestroy(other) == ncclSuccess);
  /* The same buffer twice is two windows. */
  ncclWindow_t again = NULL;
  EXPECT(ncclCommWindowRegister(comm, bufs[1], sizes[1], &again, 0) == ncclSuccess && again != NULL);
  EXPECT(collectivesIn(comm, rank, nranks, bufs[1], sizes[1], 20) == 0);
  EXPECT(ncclCommWindowDeregister(comm, wins[0]) == ncclSuccess);
  /* wins[2], wins[3] and again stay registered: the comm frees them at its end (ASan's leak check). */
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  for (int k = 0; k < 4; k++) free(bufs[k]);
  return 0;
}

static int mismatchRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  const int last = rank == nranks - 1;
  const size_t size = 65536;
  char* buf = malloc(size);
  ncclWindow_t win = NULL;
  EXPECT(ncclCommWindowRegister(comm, buf, last ? size / 2 : size, &win, 0) == ncclInvalidUsage && win == NULL);
  EXPECT(strstr(ncclGetLastError(comm), "same size") != NULL);
  EXPECT(ncclCommWindowRegister(comm, buf, size, &win, last ? NCCL_WIN_COLL_SYMMETRIC : 0) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(comm), "must agree") != NULL && win == NULL);
  /* Refused registrations leave the ranks in step: the next one works everywhere. */
  EXPECT(ncclCommWindowRegister(comm, buf, size, &win, 0) == ncclSuccess && win != NULL);
  /* The comm is not broken by a refused registration. */
  EXPECT(collectivesIn(comm, rank, nranks, (int32_t*)(void*)buf, size, 7) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  free(buf);
  return 0;
}

/* One thread, n comms: registrations inside a group run at its end, each comm's in call order with its
 * splits; outside a group they would wait for each other forever. */
static int initAll(int n) {
  ncclComm_t comms[16], halves[16];
  ncclWindow_t wins[16], second[16];
  int32_t* bufs[16];
  const size_t bytes = (size_t)(n + 1) * 4 * 10007;
  EXPECT(n <= 16 && ncclCommInitAll(comms, n, NULL) == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; r++) {
    bufs[r] = malloc(bytes);
    EXPECT(ncclCommWindowRegister(comms[r], bufs[r], bytes, &wins[r], NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
    EXPECT(wins[r] == NULL); /* written at the group's end */
    EXPECT(ncclCommSplit(comms[r], r % 2, r, &halves[r], NULL) == ncclSuccess);
    EXPECT(ncclCommWindowRegister(comms[r], bufs[r], bytes / 2, &second[r], 0) == ncclSuccess);
  }
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < n; r++) {
    void* user = NULL;
    EXPECT(wins[r] != NULL && second[r] != NULL && wins[r] != second[r]);
    EXPECT(ncclWinGetUserPtr(comms[r], wins[r], &user) == ncclSuccess && user == bufs[r]);
    rankFill(bufs[r], bytes / 4, 3, r);
  }
  const size_t count = bytes / 4;
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; r++)
    EXPECT(ncclAllReduce(bufs[r], bufs[r], count, ncclInt32, ncclSum, comms[r], NULL) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < n; r++) EXPECT(rankCheckSum(bufs[r], count, 3, NULL, n) == 0);
  /* A failing registration inside a group fails the group's end on every comm. */
  ncclWindow_t w = NULL;
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; r++)
    EXPECT(ncclCommWindowRegister(comms[r], bufs[r], r == n - 1 ? bytes / 4 : bytes, &w, 0) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "same size") != NULL);
  for (int r = 0; r < n; r++) {
    EXPECT(ncclCommWindowDeregister(comms[r], wins[r]) == ncclSuccess);
    EXPECT(ncclCommDestroy(halves[r]) == ncclSuccess);
    EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess); /* second[r] freed here */
    free(bufs[r]);
  }
  return 0;
}

static int peerDeathRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  if (rank == nranks - 1) _exit(0); /* dies without a word */
  char buf[4096];
  ncclWindow_t win = NULL;
  double t0 = chrLaunchNowSec();
  ncclResult_t res = ncclCommWindowRegister(comm, buf, sizeof(buf), &win, 0);
  EXPECT(res != ncclSuccess && res != ncclInProgress && win == NULL);
  EXPECT(chrLaunchNowSec() - t0 < DEAD_PEER_SEC);
  EXPECT(ncclGetLastError(comm)[0] != '\0');
  EXPECT(ncclCommAbort(comm) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_window basic|mismatch|initall|peerdeath N [H]\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int hosts = argc > 3 ? atoi(argv[3]) : 1;
  if (strcmp(argv[1], "basic") == 0) return chrLaunchRanks(n, hosts, 60, basicRank, NULL);
  if (strcmp(argv[1], "mismatch") == 0) return chrLaunchRanks(n, hosts, 60, mismatchRank, NULL);
  if (strcmp(argv[1], "initall") == 0) return initAll(n);
  if (strcmp(argv[1], "peerdeath") == 0) return chrLaunchRanks(n, hosts, 60, peerDeathRank, NULL);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
