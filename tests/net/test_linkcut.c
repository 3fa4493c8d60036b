/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_linkcut: one rank of a job whose network link is cut while it runs (tests/net/netns_run.sh
 * --cut). The rank all-reduces in a loop, checking every result, until the library reports an
 * error; then ncclCommAbort must return. The driver measures how long after the cut each rank ended.
 *
 *   CHORUS_RANK=r CHORUS_NRANKS=n NCCL_COMM_ID=host:port test_linkcut [--bytes B] [--max-sec S]
 *   ... test_linkcut --iters N --slow-rank R --slow-sec S [--bytes B]
 *
 * Cut mode (the first form), exit status: 3 = the expected outcome (an error reported after at least
 * one checked all-reduce, abort returned); 0 = no error within --max-sec (the cut went unnoticed);
 * 1 = anything else (init failed, a wrong result, an error before any all-reduce succeeded). 3
 * rather than 0, so that a rank that exits for any other reason cannot pass.
 * Slow-peer mode (the second form, no cut): exactly N all-reduces, rank R sleeping S seconds before
 * the middle one while the others wait inside it; every rank must finish them all (exit 0), which
 * shows a link timeout (CHORUS_SOCKET_LINK_TIMEOUT_MS) shorter than S does not fail a live peer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "nccl.h"

typedef struct {
  size_t bytes;
  double maxSec;
  long iters; /* > 0: slow-peer mode */
  int slowRank;
  double slowSec;
} cutArgs;

/* Rank r contributes r + 1 + (i % 7) to element i: small integers, so the float sum is exact. */
static void fill(float* buf, size_t count, int rank) {
  for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1 + (int)(i % 7));
}

static int checkSum(const float* buf, size_t count, int nranks) {
  for (size_t i = 0; i < count; i++) {
    float want = (float)(nranks * (nranks + 1) / 2 + nranks * (int)(i % 7));
    if (buf[i] != want) {
      fprintf(stderr, "linkcut: element %zu is %g, expected %g\n", i, buf[i], want);
      return 1;
    }
  }
  return 0;
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const cutArgs* a = arg;
  size_t count = a->bytes / sizeof(float);
  float* send = malloc(count * sizeof(float));
  float* recv = malloc(count * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "linkcut: rank %d: out of memory\n", rank);
    free(send);
    free(recv);
    return 1;
  }
  fill(send, count, rank);
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "linkcut: rank %d: ncclCommInitRank: %s (%s)\n", rank, ncclGetErrorString(res),
            ncclGetLastError(NULL));
    free(send);
    free(recv);
    return 1;
  }
  double start = chrLaunchNowSec(), lastOk = start;
  long done = 0;
  int rc = 0;
  while (a->iters > 0 ? done < a->iters : chrLaunchNowSec() - start < a->maxSec) {
    if (a->iters > 0 && done == a->iters / 2 && rank == a->slowRank) chrLaunchSleepMs((int)(a->slowSec * 1000));
    memset(recv, 0, count * sizeof(float));
    res = ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, NULL);
    if (res != ncclSuccess) break;
    if (checkSum(recv, count, nranks)) {
      rc = 1;
      break;
    }
    done++;
    lastOk = chrLaunchNowSec();
  }
  if (a->iters > 0 && rc == 0 && res == ncclSuccess) {
    /* slow-peer mode: every all-reduce done and checked */
  } else if (a->iters > 0 && rc == 0) {
    fprintf(stderr, "linkcut: rank %d: all-reduce %ld of %ld failed while rank %d was slow: %s (%s)\n", rank, done + 1,
            a->iters, a->slowRank, ncclGetErrorString(res), ncclGetLastError(comm));
    rc = 1;
  } else if (rc == 0 && res == ncclSuccess) {
    fprintf(stderr, "linkcut: rank %d: %ld all-reduces in %.0f s and no error: the cut went unnoticed\n", rank,
            done, a->maxSec);
  } else if (rc == 0) {
    double errAt = chrLaunchNowSec();
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    fprintf(stderr, "linkcut: rank %d: after %ld all-reduces, error %.1f s after the last one: %s (%s); async %s\n",
            rank, done, errAt - lastOk, ncclGetErrorString(res), ncclGetLastError(comm), ncclGetErrorString(async));
    rc = done > 0 ? 3 : 1;
  }
  res = ncclCommAbort(comm);
  if (res != ncclSuccess) {
    fprintf(stderr, "linkcut: rank %d: ncclCommAbort: %s\n", rank, ncclGetErrorString(res));
    rc = 1;
  }
  free(send);
  free(recv);
  return rc;
}

int main(int argc, char** argv) {
  cutArgs a = {4u << 20, 60.0, 0, 0, 0.0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      a.bytes = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--max-sec") == 0 && i + 1 < argc) {
      a.maxSec = strtod(argv[++i], NULL);
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      a.iters = strtol(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--slow-rank") == 0 && i + 1 < argc) {
      a.slowRank = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--slow-sec") == 0 && i + 1 < argc) {
      a.slowSec = strtod(argv[++i], NULL);
    } else {
      fprintf(stderr, "usage: %s [--bytes B] [--max-sec S | --iters N --slow-rank R --slow-sec S]"
              " (rank from CHORUS_RANK/CHORUS_NRANKS)\n", argv[0]);
      return 1;
    }
  }
  if (a.bytes < sizeof(float) || a.bytes > (1u << 30) || !(a.maxSec > 0) || a.iters < 0 || a.iters > 1000000 ||
      a.slowRank < 0 || !(a.slowSec >= 0 && a.slowSec <= 600)) {
    fprintf(stderr, "%s: --bytes must be 4..1G, --max-sec positive, --iters 0..1e6, --slow-sec 0..600\n", argv[0]);
    return 1;
  }
  return chrLaunchFromEnv(rankMain, &a);
}
