/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_comm.c: communicator lifecycle through the public API, N ranks as processes.
 *   test_comm nonblocking N   config.blocking = 0: init returns ncclInProgress, GetAsyncError polls
 *   test_comm initall N       ncclCommInitAll in one process, then one thread drives all N comms in a group
 *   test_comm errors          bad arguments, use after finalize, group misuse, a failing call in a group
 *   test_comm peerdeath N H   the last rank exits mid-job; the others get an error, then abort returns
 *   test_comm deadafterinit N H  the last rank exits right after init, before any link exists; the others'
 *                             first all-reduce fails at once (connection setup notices), no deadline set
 *   test_comm slowinit N      rank N-1 comes to init 61 s late; nobody gives up (no deadline by default)
 *   test_comm slowcoll N H    rank 0 comes to its first all-reduce 61 s late (its links connect then)
 *   test_comm scalable N      ncclCommInitRankScalable with a list of ids
 *   test_comm onehost N       N ranks of one host work whatever the net plugin setting (run with
 *                             NCCL_NET_PLUGIN=none, a missing plugin, a plugin with no device)
 *   test_comm nonet N         N ranks on N hosts with NCCL_NET_PLUGIN=none: init fails, saying why
 *   test_comm abortqueued N   ncclCommAbort with all-reduces queued in an open group (of this thread, and
 *                             of another thread): returns at once, the group end runs nothing of it
 *   test_comm pollers N H     non-blocking init polled by two threads at once (a program and its watchdog),
 *                             config.netName in a buffer the caller overwrites right after the call
 *   test_comm eager 2 H       once links exist, ncclSend then ncclRecv outside any group on both ranks
 *                             (sends that fit in the connection's buffer complete before the receive)
 *   test_comm latesend 2 H    (run with CHORUS_TIMEOUT) rank 0's 1 MiB receive times out while rank 1
 *                             waits for it, then rank 1 sends: rank 0's buffer must stay as it was after the
 *                             call returned (a receive posted straight into it, exec/direct.h, must
 *                             not land after the call gave up on it)
 *   test_comm shrink N H      ncclCommShrink without the last rank (and rank 1 from 4 ranks): the others
 *                             make a child in parent order and all-reduce on it; the refusals first
 *   test_comm shrinkgone N H  the same, the excluded ranks gone right after init (NCCL_SHRINK_ABORT)
 *   test_comm shrinkinitall N ncclCommInitAll, one thread shrinking every rank inside one group, then
 *                             a child shrunk again
 * H: hosts acted out (1: every rank on one host, shm; N: every rank its own host, net).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h" /* EXPECT */

/* Sum all-reduce of rank-dependent data, checked exactly. */
static int checkAllReduce(ncclComm_t comm, int rank, int nranks, size_t count) {
  int* buf = malloc(count * sizeof(int));
  for (size_t i = 0; i < count; i++) buf[i] = (int)(i % 1000) * (rank + 1);
  EXPECT(ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  int tri = nranks * (nranks + 1) / 2;
  for (size_t i = 0; i < count; i++) EXPECT(buf[i] == (int)(i % 1000) * tri);
  free(buf);
  return 0;
}

static int nonblockingRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, *id, rank, &config);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  EXPECT(comm != NULL);
  ncclResult_t state;
  int polls = 0;
  do {
    EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
    polls++;
    if (state == ncclInProgress) usleep(1000);
  } while (state == ncclInProgress);
  EXPECT(state == ncclSuccess);
  int count = 0;
  EXPECT(ncclCommCount(comm, &count) == ncclSuccess && count == nranks);
  EXPECT(checkAllReduce(comm, rank, nranks, 100003) == 0);
  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int initAll(int n) {
  ncclComm_t comms[16];
  EXPECT(ncclCommInitAll(comms, n, NULL) == ncclSuccess);
  int* bufs[16];
  size_t count = 65537;
  for (int r = 0; r < n; r++) {
    int rank = -1, dev = -2, cnt = 0;
    EXPECT(ncclCommUserRank(comms[r], &rank) == ncclSuccess && rank == r);
    EXPECT(ncclCommCount(comms[r], &cnt) == ncclSuccess && cnt == n);
    EXPECT(ncclCommCuDevice(comms[r], &dev) == ncclSuccess && dev == r);
    bufs[r] = malloc(count * sizeof(int));
    for (size_t i = 0; i < count; i++) bufs[r][i] = (int)i + r;
  }
  /* One thread, n communicators, one group: must not deadlock. Twice, to reuse connections. */
  for (int round = 0; round < 2; round++) {
    EXPECT(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < n; r++)
      EXPECT(ncclAllReduce(bufs[r], bufs[r], count, ncclInt32, ncclMax, comms[r], NULL) == ncclSuccess);
    EXPECT(ncclGroupEnd() == ncclSuccess);
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) EXPECT(bufs[r][i] == (int)i + n - 1);
  }
  for (int r = 0; r < n; r++) {
    EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
    free(bufs[r]);
  }
  /* Several ranks on one device are allowed (unlike NCCL): each reports the device it was given. */
  int dup[2] = {1, 1};
  EXPECT(ncclCommInitAll(comms, 2, dup) == ncclSuccess);
  for (int r = 0; r < 2; r++) {
    int dev = -1;
    EXPECT(ncclCommCuDevice(comms[r], &dev) == ncclSuccess && dev == 1);
    EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
  }
  int neg[2] = {0, -1};
  EXPECT(ncclCommInitAll(comms, 2, neg) == ncclInvalidArgument);
  return 0;
}

static int errorsRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, nranks) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(NULL), "out of range") != NULL);
  EXPECT(ncclCommInitRank(NULL, nranks, *id, rank) == ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT(ncclCommInitRankConfig(&comm, nranks, *id, rank, &bad) == ncclInvalidArgument);
  EXPECT(ncclGroupEnd() == ncclInvalidUsage);

  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  int x = 1;
  /* A failing call inside a group fails the group, runs nothing, and leaves the comm usable. */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, (ncclDataType_t)99, ncclSum, comm, NULL) == ncclInvalidArgument);
  EXPECT(ncclGroupEnd() == ncclInvalidArgument);
  EXPECT(x == 1);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(x == nranks);
  /* Nested groups run at the outermost end. */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  EXPECT(x == nranks);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  EXPECT(x == nranks * nranks);
  /* Simulate returns an estimate and runs nothing. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(ncclGroupSimulateEnd(&sim) == ncclSuccess);
  EXPECT(sim.estimatedTime >= 0.0f && x == nranks * nranks);
  /* A one-sided call without the GPU path: a clear error naming the function. */
  EXPECT(ncclSignal(0, 0, 0, 0, comm, NULL) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(comm), "ncclSignal") != NULL);
  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

/* ncclCommInitRankScalable with several ids (every rank holds the same list). */
static int scalableRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclUniqueId ids[3] = {*id, *id, *id};
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRankScalable(&comm, nranks, rank, 0, ids, NULL) == ncclInvalidArgument);
  EXPECT(ncclCommInitRankScalable(&comm, nranks, rank, 3, NULL, NULL) == ncclInvalidArgument);
  EXPECT(ncclCommInitRankScalable(&comm, nranks, rank, 3, ids, NULL) == ncclSuccess);
  int r = -1, n = 0;
  EXPECT(ncclCommUserRank(comm, &r) == ncclSuccess && r == rank);
  EXPECT(ncclCommCount(comm, &n) == ncclSuccess && n == nranks);
  EXPECT(checkAllReduce(comm, rank, nranks, 4099) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static void* abortThread(void* arg) {
  ncclCommAbort((ncclComm_t)arg);
  return NULL;
}

/* A dead peer is an error within this many seconds, with no CHORUS_TIMEOUT set (the default). */
#define DEAD_PEER_SEC 20.0
/* Later than the 60 s deadline Chorus used to apply by default. */
#define LATE_SEC 61

static int peerDeathRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  int beforeLinks = arg != NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  if (!beforeLinks) EXPECT(checkAllReduce(comm, rank, nranks, 1000) == 0);
  if (rank == nranks - 1) _exit(0); /* dies without a word */
  size_t count = 4 << 20;
  float* buf = calloc(count, sizeof(float));
  double t0 = chrLaunchNowSec();
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < 50 && res == ncclSuccess; i++) res = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL);
  double waited = chrLaunchNowSec() - t0;
  EXPECT(res != ncclSuccess && res != ncclInProgress);
  EXPECT(waited < DEAD_PEER_SEC);
  ncclResult_t state;
  EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess && state != ncclSuccess);
  EXPECT(ncclGetLastError(comm)[0] != '\0');
  EXPECT(ncclCommAbort(comm) == ncclSuccess);
  free(buf);
  return 0;
}

static int oneHostRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(checkAllReduce(comm, rank, nranks, 70001) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int noNetRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "NCCL_NET_PLUGIN=none") != NULL);
  return 0;
}

/* Abort with work queued in an open group. Same thread: the queued work is dropped, the group ends
 * with nothing to do. Other thread: abort returns at once; this thread's group end fails cleanly. */
static int abortQueuedRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int x[1024];
  ncclComm_t parent = NULL;
  EXPECT(ncclCommInitRank(&parent, nranks, *id, rank) == ncclSuccess);
  for (int pass = 0; pass < 2; pass++) {
    ncclComm_t comm = NULL;
    EXPECT(ncclCommSplit(parent, 0, rank, &comm, NULL) == ncclSuccess);
    EXPECT(checkAllReduce(comm, rank, nranks, 1000) == 0); /* links exist */
    EXPECT(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 3; i++) EXPECT(ncclAllReduce(x, x, 1024, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
    double t0 = chrLaunchNowSec();
    if (pass == 0) {
      EXPECT(ncclCommAbort(comm) == ncclSuccess);
      EXPECT(chrLaunchNowSec() - t0 < 5.0);
      EXPECT(ncclGroupEnd() == ncclSuccess); /* nothing left in it */
    } else {
      pthread_t t;
      EXPECT(pthread_create(&t, NULL, abortThread, comm) == 0);
      pthread_join(t, NULL);
      EXPECT(chrLaunchNowSec() - t0 < 5.0);
      ncclResult_t res = ncclGroupEnd();
      EXPECT(res != ncclSuccess && res != ncclInProgress);
    }
    /* Every rank aborts the same comm, so no one waits for a peer. */
  }
  EXPECT(checkAllReduce(parent, rank, nranks, 1000) == 0); /* the parent is untouched */
  EXPECT(ncclCommDestroy(parent) == ncclSuccess);
  return 0;
}

static void* pollThread(void* arg) {
  ncclComm_t comm = arg;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return (void*)1;
    sched_yield();
  }
  return state == ncclSuccess ? NULL : (void*)1;
}

static int pollersRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  char* name = strdup("socket");
  config.netName = name;
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, *id, rank, &config);
  memset(name, 'X', 6); /* the caller's string is its own again once the call returned */
  free(name);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  pthread_t t;
  EXPECT(pthread_create(&t, NULL, pollThread, comm) == 0);
  void* mine = pollThread(comm);
  void* theirs = NULL;
  pthread_join(t, &theirs);
  EXPECT(mine == NULL && theirs == NULL);
  EXPECT(checkAllReduce(comm, rank, nranks, 5000) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int eagerRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  int peer = 1 - rank;
  enum { N = 4096, BURST = 4 };
  int* out = malloc(BURST * N * sizeof(int));
  int* in = malloc(BURST * N * sizeof(int));
  /* Links are made in a group (before they exist, a send needs its receive in the same group). */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclSend(out, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
  EXPECT(ncclRecv(in, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int it = 0; it < 50; it++) {
    for (int i = 0; i < N; i++) out[i] = rank * 1000003 + it * 7919 + i;
    EXPECT(ncclSend(out, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
    EXPECT(ncclRecv(in, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
    for (int i = 0; i < N; i++) EXPECT(in[i] == peer * 1000003 + it * 7919 + i);
  }
  /* Several sends before the first receive, all within the buffer. */
  for (int b = 0; b < BURST; b++) {
    for (int i = 0; i < N; i++) out[b * N + i] = rank * 31 + b * 100003 + i;
    EXPECT(ncclSend(out + b * N, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
  }
  for (int b = 0; b < BURST; b++) EXPECT(ncclRecv(in + b * N, N, ncclInt32, peer, comm, NULL) == ncclSuccess);
  for (int b = 0; b < BURST; b++)
    for (int i = 0; i < N; i++) EXPECT(in[b * N + i] == peer * 31 + b * 100003 + i);
  EXPECT(checkAllReduce(comm, rank, nranks, 10000) == 0); /* the links still line up with collectives */
  free(out);
  free(in);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

/* Pipes made before the ranks are forked: rank 0 says its receive failed, rank 1 says it has sent.
 * The order comes from them, not from sleeps, so a busy machine cannot reorder the two. */
static int lateFailed[2], lateSent[2];

static int lateWait(int fd) {
  char c;
  return chrLaunchReadFull(fd, &c, 1);
}

static int lateSendRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  enum { N = 1 << 18 }; /* 1 MiB: above CHORUS_NET_DIRECT_MIN_BYTES */
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  int* buf = malloc(N * sizeof(int));
  EXPECT(buf != NULL);
  for (int i = 0; i < N; i++) buf[i] = 7 * i + 1;
  /* The link first, and one receive straight into the user's buffer that works. */
  EXPECT((rank == 1 ? ncclSend(buf, N, ncclInt32, 0, comm, NULL) : ncclRecv(buf, N, ncclInt32, 1, comm, NULL)) ==
         ncclSuccess);
  for (int i = 0; i < N; i++) EXPECT(buf[i] == 7 * i + 1);
  if (rank == 1) {
    EXPECT(lateWait(lateFailed[0]) == 0);
    ncclResult_t r = ncclSend(buf, N, ncclInt32, 0, comm, NULL); /* may fail: rank 0 gave up on the link */
    printf("rank 1: the late send returned %s\n", ncclGetErrorString(r));
    EXPECT(write(lateSent[1], "s", 1) == 1);
  } else {
    memset(buf, 0x5a, N * sizeof(int));
    ncclResult_t r = ncclRecv(buf, N, ncclInt32, 1, comm, NULL);
    EXPECT(r != ncclSuccess); /* CHORUS_TIMEOUT */
    EXPECT(write(lateFailed[1], "f", 1) == 1);
    EXPECT(lateWait(lateSent[0]) == 0);
    sleep(1); /* room for bytes the plugin's threads might still deliver */
    for (int i = 0; i < N; i++)
      if (buf[i] != 0x5a5a5a5a) {
        fprintf(stderr, "FAIL rank 0: element %d of the buffer changed after the receive failed (%s)\n", i,
                ncclGetErrorString(r));
        return 1;
      }
    printf("rank 0: the receive failed (%s); the buffer was left alone\n", ncclGetErrorString(r));
  }
  free(buf);
  EXPECT(ncclCommAbort(comm) == ncclSuccess);
  return 0;
}

static int slowRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int slowInit = arg != NULL;
  if (slowInit && rank == nranks - 1) sleep(LATE_SEC);
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  if (!slowInit && rank == 0) sleep(LATE_SEC);
  EXPECT(checkAllReduce(comm, rank, nranks, 300000) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

/* ncclCommShrink. The last rank (and rank 1 from 4 ranks on) are excluded; the ranks that stay make a
 * child, numbered in parent order, and all-reduce on it. gone == NULL: the excluded ranks stay alive
 * and idle (they abort their parent once the others are done, told by files in the test's folder),
 * and rank 0 first checks the refusals; otherwise the excluded ranks exit right after init and the
 * others shrink with NCCL_SHRINK_ABORT, which also leaves the parent failed. */
static void shrinkDoneFile(int rank, char* path, size_t cap) {
  snprintf(path, cap, "%s/chorus-shrink-%d-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getppid(), rank);
}

static int shrinkRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const int gone = arg != NULL;
  ncclComm_t parent = NULL, child = NULL;
  EXPECT(ncclCommInitRank(&parent, nranks, *id, rank) == ncclSuccess);
  EXPECT(checkAllReduce(parent, rank, nranks, 1000) == 0);
  int exclude[2], nEx = 0, out = 0;
  exclude[nEx++] = nranks - 1;
  if (nranks >= 4) exclude[nEx++] = 1;
  for (int i = 0; i < nEx; i++) out |= exclude[i] == rank;
  char path[512];
  if (out) {
    if (gone) _exit(0); /* without a word */
    for (int r = 0; r < nranks; r++) { /* idle until every rank that stays is done */
      int stays = 1;
      for (int i = 0; i < nEx; i++) stays &= exclude[i] != r;
      if (!stays) continue;
      shrinkDoneFile(r, path, sizeof(path));
      double t0 = chrLaunchNowSec();
      while (access(path, F_OK) != 0 && chrLaunchNowSec() - t0 < 50.0) usleep(10000);
      EXPECT(access(path, F_OK) == 0);
    }
    EXPECT(ncclCommAbort(parent) == ncclSuccess);
    return 0;
  }
  if (rank == 0 && !gone) { /* refused before anything is exchanged */
    int bad[2] = {nranks, 0}, twice[2] = {nranks - 1, nranks - 1}, self[1] = {0};
    EXPECT(ncclCommShrink(parent, exclude, nEx, NULL, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, exclude, nEx, &child, NULL, 7) == ncclInvalidArgument && child == NULL);
    EXPECT(ncclCommShrink(parent, exclude, -1, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, exclude, nranks, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, NULL, 1, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, bad, 1, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, twice, 2, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidArgument);
    EXPECT(ncclCommShrink(parent, self, 1, &child, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidUsage);
    EXPECT(strstr(ncclGetLastError(parent), "own exclude list") != NULL);
    EXPECT(child == NULL);
  }
  /* Gone: a non-blocking child (its init on a thread, polled as a watchdog would). */
  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ncclResult_t made = ncclCommShrink(parent, exclude, nEx, &child, gone ? &nonblocking : NULL,
                                     gone ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT);
  EXPECT(gone ? made == ncclSuccess || made == ncclInProgress : made == ncclSuccess);
  EXPECT(child != NULL);
  ncclResult_t ready = ncclInProgress;
  for (double t0 = chrLaunchNowSec(); ready == ncclInProgress && chrLaunchNowSec() - t0 < 30.0; usleep(1000))
    EXPECT(ncclCommGetAsyncError(child, &ready) == ncclSuccess);
  EXPECT(ready == ncclSuccess);
  int want = 0, childRank = -1, childCount = 0;
  for (int r = 0; r < rank; r++) want += r != exclude[0] && (nEx < 2 || r != exclude[1]);
  EXPECT(ncclCommUserRank(child, &childRank) == ncclSuccess && childRank == want);
  EXPECT(ncclCommCount(child, &childCount) == ncclSuccess && childCount == nranks - nEx);
  EXPECT(checkAllReduce(child, childRank, childCount, 100003) == 0);
  ncclResult_t state = ncclSuccess;
  EXPECT(ncclCommGetAsyncError(parent, &state) == ncclSuccess);
  EXPECT(gone ? state == ncclRemoteError : state == ncclSuccess); /* NCCL_SHRINK_ABORT leaves it failed */
  EXPECT(ncclCommAbort(parent) == ncclSuccess);
  EXPECT(ncclCommDestroy(child) == ncclSuccess);
  shrinkDoneFile(rank, path, sizeof(path));
  FILE* done = fopen(path, "w");
  EXPECT(done != NULL);
  fclose(done);
  return 0;
}

/* ncclCommInitAll, then one thread shrinks every rank that stays inside one group (outside a group
 * the first call would wait for the others' exchange forever): ranks 1 and n-1 leave. Then the
 * children all-reduce in one group, and a second shrink of a child (a blocking one, the next shrink
 * number) leaves one rank. */
static int shrinkInitAll(int n) {
  ncclComm_t comms[16], children[16] = {0}, grand[16] = {0};
  EXPECT(n >= 4 && n <= 16);
  EXPECT(ncclCommInitAll(comms, n, NULL) == ncclSuccess);
  int exclude[2] = {1, n - 1};
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; r++)
    if (r != 1 && r != n - 1)
      EXPECT(ncclCommShrink(comms[r], exclude, 2, &children[r], NULL, NCCL_SHRINK_DEFAULT) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  const int m = n - 2;
  int* bufs[16] = {0};
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 0, k = 0; r < n; r++) {
    if (children[r] == NULL) continue;
    int rank = -1, cnt = 0;
    EXPECT(ncclCommUserRank(children[r], &rank) == ncclSuccess && rank == k);
    EXPECT(ncclCommCount(children[r], &cnt) == ncclSuccess && cnt == m);
    bufs[r] = malloc(1000 * sizeof(int));
    for (int i = 0; i < 1000; i++) bufs[r][i] = i * (rank + 1);
    EXPECT(ncclAllReduce(bufs[r], bufs[r], 1000, ncclInt32, ncclSum, children[r], NULL) == ncclSuccess);
    k++;
  }
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < n; r++)
    for (int i = 0; bufs[r] && i < 1000; i++) EXPECT(bufs[r][i] == i * m * (m + 1) / 2);
  /* The child's rank 0 (parent rank 0) leaves the next one. */
  int first[1] = {0};
  EXPECT(ncclGroupStart() == ncclSuccess);
  for (int r = 1; r < n; r++)
    if (children[r]) EXPECT(ncclCommShrink(children[r], first, 1, &grand[r], NULL, NCCL_SHRINK_DEFAULT) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  for (int r = 1, k = 0; r < n; r++) {
    if (grand[r] == NULL) continue;
    int rank = -1, cnt = 0;
    EXPECT(ncclCommUserRank(grand[r], &rank) == ncclSuccess && rank == k++);
    EXPECT(ncclCommCount(grand[r], &cnt) == ncclSuccess && cnt == m - 1);
    EXPECT(ncclCommDestroy(grand[r]) == ncclSuccess);
  }
  for (int r = 0; r < n; r++) {
    if (children[r]) EXPECT(ncclCommDestroy(children[r]) == ncclSuccess);
    EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
    free(bufs[r]);
  }
  return 0;
}

/* The launcher removes the files once every rank has ended (the ranks name them by its pid). */
static int shrinkRun(int n, int hosts, int* gone) {
  int rc = chrLaunchRanks(n, hosts, 60, shrinkRank, gone);
  for (int r = 0; r < n; r++) {
    char path[512];
    snprintf(path, sizeof(path), "%s/chorus-shrink-%d-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), r);
    unlink(path);
  }
  return rc;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_comm nonblocking|initall|errors|peerdeath|deadafterinit|slowinit|slowcoll|scalable|shrink|shrinkgone|shrinkinitall|eager|latesend [N [H]]\n");
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 2;
  if (strcmp(argv[1], "nonblocking") == 0) return chrLaunchRanks(n, 1, 60, nonblockingRank, NULL);
  if (strcmp(argv[1], "initall") == 0) return initAll(n);
  if (strcmp(argv[1], "errors") == 0) return chrLaunchRanks(n, 1, 60, errorsRank, NULL);
  if (strcmp(argv[1], "scalable") == 0) return chrLaunchRanks(n, 1, 60, scalableRank, NULL);
  int hosts = argc > 3 ? atoi(argv[3]) : n;
  static int yes = 1;
  if (strcmp(argv[1], "peerdeath") == 0) return chrLaunchRanks(n, hosts, 60, peerDeathRank, NULL);
  if (strcmp(argv[1], "deadafterinit") == 0) return chrLaunchRanks(n, hosts, 60, peerDeathRank, &yes);
  if (strcmp(argv[1], "abortqueued") == 0) return chrLaunchRanks(n, 1, 60, abortQueuedRank, NULL);
  if (strcmp(argv[1], "pollers") == 0) return chrLaunchRanks(n, hosts, 60, pollersRank, NULL);
  if (strcmp(argv[1], "eager") == 0) return chrLaunchRanks(2, hosts, 60, eagerRank, NULL);
  if (strcmp(argv[1], "latesend") == 0) {
    if (pipe(lateFailed) != 0 || pipe(lateSent) != 0) return 1;
    return chrLaunchRanks(2, hosts, 90, lateSendRank, NULL);
  }
  if (strcmp(argv[1], "onehost") == 0) return chrLaunchRanks(n, 1, 60, oneHostRank, NULL);
  if (strcmp(argv[1], "nonet") == 0) return chrLaunchRanks(n, n, 60, noNetRank, NULL);
  if (strcmp(argv[1], "shrink") == 0) return shrinkRun(n, hosts, NULL);
  if (strcmp(argv[1], "shrinkinitall") == 0) return shrinkInitAll(n);
  if (strcmp(argv[1], "shrinkgone") == 0) return shrinkRun(n, hosts, &yes);
  if (strcmp(argv[1], "slowinit") == 0) return chrLaunchRanks(n, 1, 3 * LATE_SEC, slowRank, &yes);
  if (strcmp(argv[1], "slowcoll") == 0) return chrLaunchRanks(n, hosts, 3 * LATE_SEC, slowRank, NULL);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
