/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * iter_times.c: -I 1, each timed iteration's own time, per rank (perf.h). A size's mean hides
 * whether one iteration stalled or every one ran slower; these lines tell them apart. With host
 * buffers a call returns when its operation is done, so the host clock times it; with device
 * buffers an event recorded after each iteration on the buffers' stream does, read once the stream
 * has drained (the GPU's time between one iteration's end and the next one's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "perf.h"

int chrPerfIterStart(chrPerfIterTimes* t, const chrPerfBuffers* b, int iters) {
  t->n = iters;
  t->device = b->mem == PERF_MEM_CUDA;
  t->sec = calloc((size_t)iters + 1, sizeof(double));
  if (t->sec == NULL) return 1;
#ifdef CHORUS_PERF_CUDA
  if (t->device) {
    t->events = calloc((size_t)iters + 1, sizeof(cudaEvent_t));
    if (t->events == NULL) return 1;
    for (int i = 0; i <= iters; i++)
      if (cudaEventCreate(&t->events[i]) != cudaSuccess) return 1;
  }
#endif
  return chrPerfIterMark(t, b, -1);
}

int chrPerfIterMark(chrPerfIterTimes* t, const chrPerfBuffers* b, int it) {
  if (it + 1 > t->n) return 1;
#ifdef CHORUS_PERF_CUDA
  if (t->device) return cudaEventRecord(t->events[it + 1], b->stream) != cudaSuccess;
#endif
  (void)b;
  t->sec[it + 1] = chrLaunchNowSec();
  return 0;
}

int chrPerfIterReport(chrPerfIterTimes* t, int rank, size_t bytes, int inPlace) {
  int rc = 0;
#ifdef CHORUS_PERF_CUDA
  for (int i = 1; t->device && i <= t->n && rc == 0; i++) {
    float ms = 0;
    rc = cudaEventElapsedTime(&ms, t->events[0], t->events[i]) != cudaSuccess;
    t->sec[i] = ms * 1e-3;
  }
#endif
  if (rc == 0) {
    /* one line, written at once: ranks that are threads of this process print beside each other */
    enum { SHOWN = 256 };
    char line[96 + 16 * SHOWN];
    size_t at = (size_t)snprintf(line, sizeof line, "# iteration us: rank %d, %zu B, %s:", rank, bytes,
                                 inPlace ? "in place" : "out of place");
    for (int i = 1; i <= t->n && i <= SHOWN && at < sizeof line; i++)
      at += (size_t)snprintf(line + at, sizeof line - at, " %.1f", (t->sec[i] - t->sec[i - 1]) * 1e6);
    if (t->n > SHOWN && at < sizeof line) snprintf(line + at, sizeof line - at, " (first %d)", SHOWN);
    printf("%s\n", line);
    fflush(stdout);
  }
  chrPerfIterFree(t);
  return rc;
}

void chrPerfIterFree(chrPerfIterTimes* t) {
#ifdef CHORUS_PERF_CUDA
  if (t->events)
    for (int i = 0; i <= t->n; i++)
      if (t->events[i]) cudaEventDestroy(t->events[i]);
  free(t->events);
#endif
  free(t->sec);
  memset(t, 0, sizeof(*t));
}
