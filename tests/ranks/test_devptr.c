/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_devptr.c: GPU device buffers are refused (ncclInvalidUsage) by a build that runs collectives on
 * host buffers only; host buffers keep working with and without a CUDA driver.
 *   test_devptr stub N       run with fake_libcuda's libcuda.so.1 in LD_LIBRARY_PATH: buffers the fake
 *                            driver calls device memory are refused with a message naming them and
 *                            stay untouched; host, pinned-host and managed buffers give correct sums
 *   test_devptr noinit N     the same fake driver with cuInit failing: no driver, everything is host
 *   test_devptr nodriver N   whatever the machine has (no libcuda here): host buffers work
 * The "device" buffers are host memory the fake driver is told about (CHORUS_TEST_FAKE_*_RANGE), so
 * the test can see that a refused call wrote nothing.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define COUNT 4099
#define PATTERN 0x5a

enum scenario { STUB, NOINIT, NODRIVER };

static void setRange(const char* var, const void* p, size_t bytes) {
  char v[64];
  snprintf(v, sizeof(v), "0x%llx:%zu", (unsigned long long)(uintptr_t)p, bytes);
  setenv(var, v, 1);
}

static int untouched(const void* p, size_t bytes) {
  const unsigned char* c = p;
  for (size_t i = 0; i < bytes; i++)
    if (c[i] != PATTERN) return 0;
  return 1;
}

/* The refusal names the call, which buffer, and its address, in these words. */
static int refusedWith(const char* call, const char* which, const void* p) {
  char want[512];
  snprintf(want, sizeof(want),
           "%s: %s %p is GPU device memory; this build of Chorus runs collectives on host buffers only "
           "(GPU path not built yet)", call, which, p);
  const char* got = ncclGetLastError(NULL);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "FAIL: last error \"%s\", expected \"%s\"\n", got, want);
    return 0;
  }
  return 1;
}

/* A sum all-reduce of rank-dependent data on host memory (buf may also be in a range the fake
 * driver reports as managed or pinned host), checked exactly; in place when recv == send. */
static int sumWorks(ncclComm_t comm, int rank, int nranks, int* send, int* recv) {
  for (int i = 0; i < COUNT; i++) send[i] = (i % 977) * (rank + 1);
  EXPECT(ncclAllReduce(send, recv, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  int tri = nranks * (nranks + 1) / 2;
  for (int i = 0; i < COUNT; i++)
    if (recv[i] != (i % 977) * tri) {
      fprintf(stderr, "FAIL: rank %d element %d is %d, expected %d\n", rank, i, recv[i], (i % 977) * tri);
      return 1;
    }
  return 0;
}

/* cuInit calls the fake driver saw, or -1 when it is not loaded in this process. */
static int fakeDriverInits(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return -1;
  int (*calls)(void) = NULL;
  void* sym = dlsym(h, "chorusFakeCudaInitCalls");
  memcpy(&calls, &sym, sizeof(calls));
  int n = calls ? calls() : -1;
  dlclose(h);
  return n;
}

static int refusals(ncclComm_t comm, int rank, int nranks, int* dev, int* host) {
  size_t bytes = COUNT * sizeof(int);
  int peer = (rank + 1) % nranks;
  memset(dev, PATTERN, bytes);
  memset(host, PATTERN, bytes);
  EXPECT(ncclAllReduce(dev, host, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclAllReduce", "sendbuff", dev));
  EXPECT(ncclAllReduce(host, dev, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclAllReduce", "recvbuff", dev));
  EXPECT(ncclAllReduce(dev, dev, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclAllReduce", "sendbuff", dev));
  /* An address inside the allocation, and the comm's own last error. */
  EXPECT(ncclAllReduce(dev + 7, host, 5, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(comm), "is GPU device memory") != NULL);
  EXPECT(ncclBroadcast(host, dev, COUNT, ncclInt32, 0, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclBroadcast", "recvbuff", dev));
  EXPECT(ncclReduceScatter(dev, host, COUNT / nranks, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(ncclSend(dev, COUNT, ncclInt32, peer, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclSend", "sendbuff", dev));
  EXPECT(ncclRecv(dev, COUNT, ncclInt32, peer, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclRecv", "recvbuff", dev));
  EXPECT(ncclAlltoAll(host, dev, COUNT / nranks, ncclInt32, comm, NULL) == ncclInvalidUsage);
  EXPECT(refusedWith("ncclAlltoAll", "recvbuff", dev));
  /* In a group: the call is refused, the group fails and runs nothing (a host call included). */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(host, host, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclSuccess);
  EXPECT(ncclAllReduce(dev, host, COUNT, ncclInt32, ncclSum, comm, NULL) == ncclInvalidUsage);
  EXPECT(ncclGroupEnd() == ncclInvalidUsage);
  EXPECT(untouched(dev, bytes) && untouched(host, bytes));
  /* Refusing a buffer does not fail the communicator. */
  ncclResult_t async = ncclInProgress;
  EXPECT(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess);
  return 0;
}

static int devptrRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  enum scenario sc = *(const enum scenario*)arg;
  size_t bytes = COUNT * sizeof(int);
  int* dev = malloc(bytes);
  int* managed = malloc(bytes);
  int* pinned = malloc(bytes);
  int* send = malloc(bytes);
  int* recv = malloc(bytes);
  EXPECT(dev && managed && pinned && send && recv);
  setRange("CHORUS_TEST_FAKE_DEVICE_RANGE", dev, bytes);
  setRange("CHORUS_TEST_FAKE_MANAGED_RANGE", managed, bytes);
  setRange("CHORUS_TEST_FAKE_HOST_RANGE", pinned, bytes);
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);

  if (sc == STUB) {
    EXPECT(refusals(comm, rank, nranks, dev, send) == 0);
    EXPECT(sumWorks(comm, rank, nranks, managed, managed) == 0); /* managed memory is host-accessible */
    EXPECT(sumWorks(comm, rank, nranks, pinned, recv) == 0);     /* pinned host memory is host memory */
  } else {
    /* No usable driver: the same "device" buffer is plain host memory, as it really is. */
    EXPECT(sumWorks(comm, rank, nranks, dev, dev) == 0);
    EXPECT(sumWorks(comm, rank, nranks, managed, recv) == 0);
  }
  EXPECT(sumWorks(comm, rank, nranks, send, recv) == 0);
  EXPECT(sumWorks(comm, rank, nranks, send, send) == 0);

  int inits = fakeDriverInits();
  if (sc == NODRIVER) EXPECT(inits == -1); /* whatever libcuda this machine has, it is not the fake */
  else EXPECT(inits == 1);                 /* loaded, and cuInit(0) ran once for all those calls */
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  free(dev);
  free(managed);
  free(pinned);
  free(send);
  free(recv);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_devptr stub|noinit|nodriver N\n");
    return 2;
  }
  enum scenario sc;
  if (strcmp(argv[1], "stub") == 0) sc = STUB;
  else if (strcmp(argv[1], "noinit") == 0) sc = NOINIT;
  else if (strcmp(argv[1], "nodriver") == 0) sc = NODRIVER;
  else {
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
  }
  if (sc == NOINIT) setenv("CHORUS_TEST_FAKE_CUINIT_FAIL", "1", 1);
  return chrLaunchRanks(atoi(argv[2]), 1, 60, devptrRank, &sc);
}
