/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_staging.c: the proxy's staging copier over the CUDA driver (core/cuda/net_staging.c),
 * with the stand-in driver of tests/ranks/fake_libcuda.c (LD_LIBRARY_PATH; its "device" memory is
 * host memory and cuMemcpyAsync a memcpy), so that it runs on machines without a GPU.
 *
 * Three threads copy random buffers, each as its own proxy thread index: every byte must
 * arrive; the device's primary context is retained once, each thread gets one non-blocking stream,
 * every copy runs with the context current; destroy frees the streams and releases the context once.
 * Then a driver whose copy fails: the copy returns ncclUnhandledCudaError naming the call.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda/net_staging.h"
#include "log/log.h"
#include "../test_mix.h"

#define FAIL(...)                                 \
  do {                                            \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                 \
    fprintf(stderr, "\n");                        \
    exit(1);                                      \
  } while (0)

#define THREADS 3
#define COPIES 50
#define MAX_BYTES 70000

struct worker {
  struct chrDevNetCopier* copier;
  int index;
  int bad;
};

static void* work(void* arg) {
  struct worker* w = arg;
  unsigned char* a = malloc(MAX_BYTES);
  unsigned char* b = malloc(MAX_BYTES);
  for (int i = 0; i < COPIES && a && b; i++) {
    const size_t n = 1 + chrTestFinalMix((uint64_t)w->index << 32 | (uint64_t)i) % MAX_BYTES;
    for (size_t k = 0; k < n; k++) a[k] = (unsigned char)chrTestFinalMix((uint64_t)i << 40 ^ k ^ (uint64_t)w->index);
    memset(b, 0, n);
    if (w->copier->copy(w->copier->arg, w->index, b, a, n) != ncclSuccess || memcmp(a, b, n) != 0) w->bad++;
  }
  if (!a || !b) w->bad++;
  free(a);
  free(b);
  return NULL;
}

typedef void (*countsFn)(int* out);

static void counts(int* out) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  countsFn fn = lib ? (countsFn)dlsym(lib, "chorusFakeCudaCounts") : NULL;
  if (fn == NULL) FAIL("the stand-in driver is not loaded (LD_LIBRARY_PATH must name it)");
  fn(out);
  dlclose(lib);
}

int main(void) {
  struct chrDevNetCopier copier;
  if (chrNetStagingCopier(0, &copier) != ncclSuccess) FAIL("create: %s", chrThreadLastError());
  struct worker ws[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    ws[t] = (struct worker){&copier, t, 0};
    if (pthread_create(&th[t], NULL, work, &ws[t]) != 0) FAIL("thread");
  }
  int bad = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    bad += ws[t].bad;
  }
  if (bad) FAIL("%d copies wrong or failed (%s)", bad, chrThreadLastError());
  int c[7];
  counts(c);
  if (c[0] != 1 || c[2] != THREADS || c[3] != 0 || c[5] != THREADS * COPIES || c[6] != 0)
    FAIL("retains %d (want 1), streams %d (want %d), blocking %d (want 0), copies %d (want %d), without the context "
         "%d (want 0)", c[0], c[2], THREADS, c[3], c[5], THREADS * COPIES, c[6]);
  copier.destroy(copier.arg);
  counts(c);
  if (c[1] != 1 || c[4] != THREADS) FAIL("after destroy: releases %d (want 1), streams freed %d (want %d)", c[1], c[4], THREADS);

  setenv("CHORUS_TEST_FAKE_MEMCPY_FAIL", "1", 1);
  if (chrNetStagingCopier(0, &copier) != ncclSuccess) FAIL("create: %s", chrThreadLastError());
  char x[8] = "abc", y[8];
  ncclResult_t r = copier.copy(copier.arg, 0, y, x, sizeof(x));
  if (r != ncclUnhandledCudaError || strstr(chrThreadLastError(), "cuMemcpyAsync") == NULL)
    FAIL("a failing copy returned %d, last error \"%s\"", (int)r, chrThreadLastError());
  if (copier.copy(copier.arg, CHR_DEV_NET_MAX_THREADS, y, x, sizeof(x)) != ncclInternalError)
    FAIL("a thread index past CHR_DEV_NET_MAX_THREADS was taken");
  copier.destroy(copier.arg);
  printf("staging copier: %d threads x %d copies right, 1 context, a non-blocking stream each, all freed\n", THREADS,
         COPIES);
  return 0;
}
