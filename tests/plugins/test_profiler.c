/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_profiler.c: collectives under a test profiler (testprof_plugin.c), N ranks as N processes.
 *
 *   test_profiler <nranks> <nhosts> [events=<min>] [none=1] [die=1] [declined=1]
 *
 * Each rank runs, on host buffers: a bare AllReduce; a group of AllReduce + AllGather; a Broadcast;
 * a group of a Send to the next rank and a Recv from the previous one; a ReduceScatter. Results are
 * checked against the exact integer sums. After ncclCommDestroy (which finalizes the profiler) the
 * plugin (NCCL_PROFILER_PLUGIN, a path) is asked for its report: every failure it recorded fails
 * the rank. events=<min>: at least that many events arrived; none=1: none did (mask 0);
 * declined=1: the plugin's init left its context NULL, so no event and no finalize (as NCCL).
 * With nhosts > 1 every rank is its own host, so transfers go through the net plugin and its
 * profiler events (NetPlugin) are exercised too.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "nccl.h"

#define NCCLOK(call)                                                                      \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "rank %d: %s failed: %d (%s)\n", rank, #call, (int)r_, ncclGetLastError(NULL)); \
      return 2;                                                                           \
    }                                                                                     \
  } while (0)

static int minEvents = 0, expectNone = 0, peerDies = 0, declined = 0;

static int report(int rank);

/* die=1: after one good AllReduce the last rank exits; the others' next AllReduce fails on the dead
 * peer, and the profiler must still see every event it was given stopped (the executor's error
 * path), then a finalize at ncclCommAbort. */
static int dyingPeer(int rank, int nranks, ncclComm_t comm) {
  float* a = calloc(1 << 20, sizeof(float));
  if (a == NULL) return 3;
  NCCLOK(ncclAllReduce(a, a, 1000, ncclFloat32, ncclSum, comm, NULL));
  if (rank == nranks - 1) _exit(0); /* no destroy: the others see a dead peer */
  ncclResult_t res = ncclAllReduce(a, a, 1 << 20, ncclFloat32, ncclSum, comm, NULL);
  if (res == ncclSuccess) {
    fprintf(stderr, "rank %d: AllReduce with a dead peer succeeded\n", rank);
    return 1;
  }
  NCCLOK(ncclCommAbort(comm));
  free(a);
  return report(rank);
}

static int expectAll(const float* buf, size_t n, float want, const char* what, int rank) {
  for (size_t i = 0; i < n; i++)
    if (buf[i] != want) {
      fprintf(stderr, "rank %d: %s[%zu] = %g, expected %g\n", rank, what, i, buf[i], want);
      return 1;
    }
  return 0;
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = getenv("TESTPROF_COMMNAME");
  NCCLOK(ncclCommInitRankConfig(&comm, nranks, *id, rank, &config));
  if (peerDies) return dyingPeer(rank, nranks, comm);
  const size_t n = 65536;
  float* a = malloc(n * sizeof(float) * (size_t)nranks);
  float* b = malloc(n * sizeof(float) * (size_t)nranks);
  if (a == NULL || b == NULL) return 3;
  float sum = (float)(nranks * (nranks + 1) / 2);
  int bad = 0;
  cudaStream_t s = NULL;

  for (size_t i = 0; i < 1000; i++) a[i] = (float)(rank + 1);
  NCCLOK(ncclAllReduce(a, b, 1000, ncclFloat32, ncclSum, comm, s));
  bad |= expectAll(b, 1000, sum, "allreduce", rank);

  for (size_t i = 0; i < n; i++) a[i] = (float)(rank + 1);
  float* g = malloc(1000 * sizeof(float) * (size_t)nranks);
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclAllReduce(a, b, n, ncclFloat32, ncclSum, comm, s));
  NCCLOK(ncclAllGather(a, g, 1000, ncclFloat32, comm, s));
  NCCLOK(ncclGroupEnd());
  bad |= expectAll(b, n, sum, "grouped allreduce", rank);
  for (int r = 0; r < nranks; r++) bad |= expectAll(g + (size_t)r * 1000, 1000, (float)(r + 1), "allgather", rank);
  free(g);

  for (size_t i = 0; i < 2000; i++) a[i] = rank == 0 ? 7.0f : 0.0f;
  NCCLOK(ncclBroadcast(a, a, 2000, ncclFloat32, 0, comm, s));
  bad |= expectAll(a, 2000, 7.0f, "broadcast", rank);

  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  for (size_t i = 0; i < 500; i++) a[i] = (float)rank;
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclSend(a, 500, ncclFloat32, next, comm, s));
  NCCLOK(ncclRecv(b, 500, ncclFloat32, prev, comm, s));
  NCCLOK(ncclGroupEnd());
  bad |= expectAll(b, 500, (float)prev, "recv", rank);

  for (size_t i = 0; i < 100 * (size_t)nranks; i++) a[i] = (float)(rank + 1);
  NCCLOK(ncclReduceScatter(a, b, 100, ncclFloat32, ncclSum, comm, s));
  bad |= expectAll(b, 100, sum, "reducescatter", rank);

  NCCLOK(ncclCommDestroy(comm));
  free(a);
  free(b);
  return bad || report(rank) ? 1 : 0;
}

/* The plugin's verdict (its own checks, the number of events and finalizes); 0 when all is well. */
static int report(int rank) {
  const char* path = getenv("NCCL_PROFILER_PLUGIN");
  void* h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (h == NULL) {
    fprintf(stderr, "rank %d: the profiler %s is not loaded\n", rank, path ? path : "(unset)");
    return 4;
  }
  int (*report)(void) = (int (*)(void))dlsym(h, "testProfReport");
  int (*count)(int) = (int (*)(int))dlsym(h, "testProfCount");
  int (*finalizes)(void) = (int (*)(void))dlsym(h, "testProfFinalizes");
  if (!report || !count || !finalizes) return 5;
  int failures = report();
  int total = 0;
  for (int i = 0; i < 16; i++) total += count(i);
  if (finalizes() != (declined ? 0 : 1)) {
    fprintf(stderr, "rank %d: finalize called %d times, expected %d\n", rank, finalizes(), declined ? 0 : 1);
    failures++;
  }
  if ((expectNone || declined) && total != 0) {
    fprintf(stderr, "rank %d: %d events with the mask off\n", rank, total);
    failures++;
  }
  if (total < minEvents) {
    fprintf(stderr, "rank %d: %d events, expected at least %d\n", rank, total, minEvents);
    failures++;
  }
  dlclose(h);
  return failures;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <nranks> <nhosts> [events=<min>] [none=1] [die=1] [declined=1]\n", argv[0]);
    return 2;
  }
  for (int i = 3; i < argc; i++) {
    if (strncmp(argv[i], "events=", 7) == 0) minEvents = atoi(argv[i] + 7);
    if (strcmp(argv[i], "none=1") == 0) expectNone = 1;
    if (strcmp(argv[i], "die=1") == 0) peerDies = 1;
    if (strcmp(argv[i], "declined=1") == 0) declined = 1;
  }
  return chrLaunchRanks(atoi(argv[1]), atoi(argv[2]), 50, rankMain, NULL);
}
