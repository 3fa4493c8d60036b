/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * parallel.c: host loops cut into ranges run by threads (parallel.h).
 */
#include "parallel.h"
#include <pthread.h>

#define MAX_WORKERS 64

static int workers = 1;

void chrPerfSetWorkers(int n) { workers = n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : n; }

int chrPerfWorkers(void) { return workers; }

struct range {
  chrPerfRangeFn fn;
  void* arg;
  size_t from, to;
  int64_t result;
  pthread_t thread;
  int started;
};

static void* runRange(void* p) {
  struct range* r = (struct range*)p;
  r->result = r->fn(r->arg, r->from, r->to);
  return NULL;
}

int64_t chrPerfForRange(size_t n, chrPerfRangeFn fn, void* arg) {
  const int parts = n < CHR_PERF_PARALLEL_MIN ? 1 : workers;
  if (parts <= 1) return fn(arg, 0, n);
  const size_t each = n / (size_t)parts;
  struct range r[MAX_WORKERS];
  for (int i = 1; i < parts; i++) { /* range 0 runs on this thread */
    r[i] = (struct range){fn, arg, each * (size_t)i, i == parts - 1 ? n : each * (size_t)(i + 1), 0, (pthread_t)0, 0};
    r[i].started = pthread_create(&r[i].thread, NULL, runRange, &r[i]) == 0;
  }
  int64_t total = fn(arg, 0, each);
  for (int i = 1; i < parts; i++) {
    if (r[i].started) pthread_join(r[i].thread, NULL);
    else runRange(&r[i]);
    total += r[i].result;
  }
  return total;
}
