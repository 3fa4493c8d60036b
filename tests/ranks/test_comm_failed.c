/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_comm_failed.c: what calls on a failed communicator return, and what they say.
 *   test_comm_failed peerdeath N [abort]  the last rank exits after one all-reduce; the others' next
 *                                         all-reduce fails (the root cause), then every later call
 *   test_comm_failed initfail N [abort]   non-blocking init with a net plugin that does not exist: the
 *                                         comm exists but failed before its first call
 *   test_comm_failed finalize N           a healthy comm finalized twice
 * On a failed comm: 1000 more calls each return the comm's error, and the last-error text then holds
 * the root cause exactly once and stays short (no prefix per call); ncclCommFinalize returns the
 * error, a second one ncclInvalidUsage; then ncclCommDestroy (or ncclCommAbort with "abort") works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"

#define EXPECT(cond)                                                                                 \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      fprintf(stderr, "FAIL %s:%d: %s (last error: %.300s)\n", __FILE__, __LINE__, #cond,            \
              ncclGetLastError(NULL));                                                               \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

#define CALLS_ON_FAILED_COMM 1000
#define BOGUS_NET "chorus-test-no-such-net"

static int countOf(const char* text, const char* needle) {
  int n = 0;
  size_t len = strlen(needle);
  for (const char* p = strstr(text, needle); p; p = strstr(p + len, needle)) n++;
  return n;
}

/* The text names the call, says the comm failed, and holds `cause` once, with no nesting: no longer
 * than the call's prefix and a cause of at most `causeMax` bytes. */
static int checkText(const char* text, const char* call, const char* cause, size_t causeMax) {
  char head[128];
  snprintf(head, sizeof(head), "%s: communicator has failed (", call);
  if (strncmp(text, head, strlen(head)) != 0 || countOf(text, cause) != 1 ||
      countOf(text, "communicator has failed") != 1 || strlen(text) > strlen(head) + 32 + causeMax) {
    fprintf(stderr, "FAIL: after %s on a failed comm the last error is (%zu bytes) \"%.600s\"; expected \"%s...\" "
            "with \"%s\" once\n", call, strlen(text), text, head, cause);
    return 1;
  }
  return 0;
}

/* comm has failed with `state`; `cause` is a piece of text its root cause (at most causeMax bytes)
 * must keep. */
static int exerciseFailedComm(ncclComm_t comm, ncclResult_t state, const char* cause, size_t causeMax, int useAbort) {
  int x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0};
  for (int i = 0; i < CALLS_ON_FAILED_COMM; i++) {
    ncclResult_t res;
    switch (i % 4) {
      case 0: res = ncclAllReduce(x, y, 4, ncclInt32, ncclSum, comm, NULL); break;
      case 1: res = ncclBroadcast(x, y, 4, ncclInt32, 0, comm, NULL); break;
      case 2: res = ncclAllGather(x, y, 1, ncclInt32, comm, NULL); break;
      default: res = ncclSend(x, 4, ncclInt32, 0, comm, NULL); break;
    }
    if (res != state) {
      fprintf(stderr, "FAIL: call %d on the failed comm returned %d (%s), expected %d\n", i, (int)res,
              ncclGetErrorString(res), (int)state);
      return 1;
    }
  }
  EXPECT(y[0] == 0 && y[3] == 0); /* nothing ran */
  EXPECT(ncclAllReduce(x, y, 4, ncclInt32, ncclSum, comm, NULL) == state);
  if (checkText(ncclGetLastError(comm), "ncclAllReduce", cause, causeMax)) return 1;
  if (checkText(ncclGetLastError(NULL), "ncclAllReduce", cause, causeMax)) return 1;
  /* In a group: the call is refused and so is the group. */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(x, y, 4, ncclInt32, ncclSum, comm, NULL) == state);
  EXPECT(ncclGroupEnd() == state);
  ncclResult_t async = ncclSuccess;
  EXPECT(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == state);
  EXPECT(strstr(ncclGetLastError(comm), cause) != NULL);

  EXPECT(ncclCommFinalize(comm) == state);
  if (checkText(ncclGetLastError(comm), "ncclCommFinalize", cause, causeMax)) return 1;
  EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "already finalized") != NULL);
  EXPECT(ncclAllReduce(x, y, 4, ncclInt32, ncclSum, comm, NULL) == state);
  if (checkText(ncclGetLastError(comm), "ncclAllReduce", cause, causeMax)) return 1;
  if (useAbort) EXPECT(ncclCommAbort(comm) == ncclSuccess);
  else EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int peerDeathRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int useAbort = *(const int*)arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  size_t count = 1 << 16;
  float* buf = calloc(count, sizeof(float));
  EXPECT(buf != NULL);
  EXPECT(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL) == ncclSuccess);
  if (rank == nranks - 1) _exit(0); /* dies without a word */
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < 200 && res == ncclSuccess; i++)
    res = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL);
  EXPECT(res != ncclSuccess && res != ncclInProgress);
  /* The root cause, as the failing call reported it. */
  char cause[1024];
  snprintf(cause, sizeof(cause), "%s", ncclGetLastError(comm));
  EXPECT(cause[0] != '\0' && strstr(cause, "communicator has failed") == NULL);
  ncclResult_t async = ncclSuccess;
  EXPECT(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == res);
  int rc = exerciseFailedComm(comm, async, cause, strlen(cause), useAbort);
  free(buf);
  return rc;
}

static int initFailRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  int useAbort = *(const int*)arg;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.netName = BOGUS_NET;
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, *id, rank, &config);
  EXPECT(res == ncclInProgress);
  EXPECT(comm != NULL);
  ncclResult_t async = ncclInProgress;
  for (int polls = 0; polls < 20000 && async == ncclInProgress; polls++) {
    EXPECT(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    if (async == ncclInProgress) chrLaunchSleepMs(1);
  }
  EXPECT(async != ncclSuccess && async != ncclInProgress);
  /* The cause names the net twice (asked for, and what was tried); this piece of it is unique. The
   * whole cause is one line of the net loader's, well under 400 bytes. */
  return exerciseFailedComm(comm, async, "no net plugin named '" BOGUS_NET "'", 400, useAbort);
}

static int finalizeRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  int x = rank + 1;
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(x == nranks * (nranks + 1) / 2);
  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclCommFinalize(comm) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "ncclCommFinalize") != NULL);
  EXPECT(strstr(ncclGetLastError(NULL), "already finalized") != NULL);
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  ncclResult_t async = ncclInProgress;
  EXPECT(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
  if (rank % 2) EXPECT(ncclCommAbort(comm) == ncclSuccess);
  else EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_comm_failed peerdeath|initfail|finalize N [abort]\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int useAbort = argc > 3 && strcmp(argv[3], "abort") == 0;
  if (strcmp(argv[1], "peerdeath") == 0) return chrLaunchRanks(n, 1, 60, peerDeathRank, &useAbort);
  if (strcmp(argv[1], "initfail") == 0) return chrLaunchRanks(n, 1, 60, initFailRank, &useAbort);
  if (strcmp(argv[1], "finalize") == 0) return chrLaunchRanks(n, 1, 60, finalizeRank, NULL);
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
