/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_perf_check.c (unit.perf_check): chorus-perf's data check (tools/perf/data.c) finds wrong
 * elements, and finds the same ones whether one thread or several check (tools/perf/parallel.c).
 *
 * The inputs are what chorus-perf writes (chrPerfFillInputs, host memory); the right outputs are
 * made here independently (float sums of the ranks' inputs for an all-reduce, the ranks' buffers
 * side by side for an all-gather). The check must count 0 on them, then exactly the elements this
 * test spoils: the first and last, and both sides of every boundary between the threads' ranges. Two
 * sizes: below the size from which threads split the loop, and above it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "perf/parallel.h"
#include "perf/perf.h"

static int failures;

static void expect(int cond, const char* what, long long got, long long want) {
  if (!cond) {
    failures++;
    printf("FAIL %s: got %lld, expected %lld\n", what, got, want);
  } else {
    printf("ok %s (%lld)\n", what, got);
  }
}

/* The elements to spoil in n outputs checked by `workers` threads: the first, the last, and each
 * side of every range boundary (parallel.c cuts [0, n) into equal ranges, the last takes the rest). */
static size_t spoilList(size_t n, int workers, size_t* at) {
  size_t k = 0;
  at[k++] = 0;
  if (n >= CHR_PERF_PARALLEL_MIN)
    for (int i = 1; i < workers; i++) {
      at[k++] = n / (size_t)workers * (size_t)i - 1;
      at[k++] = n / (size_t)workers * (size_t)i;
    }
  at[k++] = n - 1;
  return k;
}

/* Counts wrong elements of out with 1 and with 4 threads; both must equal want. */
static void checkBoth(const chrPerfColl* c, const chrPerfShape* s, const chrPerfPattern* p, const void* out,
                      long long want, const char* what) {
  chrPerfBuffers host;
  memset(&host, 0, sizeof host); /* host memory: the check reads out directly */
  char label[160];
  for (int w = 1; w <= 4; w += 3) {
    chrPerfSetWorkers(w);
    const int64_t wrong = chrPerfCheckOutputs(&host, c, s, p, 0, 0, out);
    snprintf(label, sizeof label, "%s, %d thread%s", what, w, w > 1 ? "s" : "");
    expect(wrong == want, label, (long long)wrong, want);
  }
}

static void allreduceCase(int nranks, size_t count) {
  const chrPerfColl* c = chrPerfFindColl("allreduce");
  chrPerfPattern p;
  chrPerfPatternInit(&p, ncclFloat32, PERF_SUM, nranks, 12345);
  chrPerfShape s;
  c->shape(count, 4, nranks, 0, 0, &s);
  chrPerfBuffers host;
  memset(&host, 0, sizeof host);
  float* out = calloc(count, sizeof(float));
  float* in = malloc(count * sizeof(float));
  float* scratch = malloc(count * sizeof(float));
  if (!out || !in || !scratch) {
    printf("FAIL out of memory\n");
    exit(1);
  }
  for (int r = 0; r < nranks; r++) { /* the right output: the ranks' inputs summed */
    chrPerfFillInputs(&host, &s, &p, r, in, scratch);
    for (size_t j = 0; j < count; j++) out[j] += in[j];
  }
  char what[96];
  snprintf(what, sizeof what, "all-reduce sum, float, %d ranks, %zu elements, right", nranks, count);
  checkBoth(c, &s, &p, out, 0, what);
  size_t at[16];
  const size_t k = spoilList(count, 4, at);
  for (size_t i = 0; i < k; i++) out[at[i]] += 1.0f;
  snprintf(what, sizeof what, "all-reduce sum, float, %d ranks, %zu elements, %zu spoiled", nranks, count, k);
  checkBoth(c, &s, &p, out, (long long)k, what);
  free(out);
  free(in);
  free(scratch);
}

static void allgatherCase(int nranks, size_t perRank) {
  const chrPerfColl* c = chrPerfFindColl("allgather");
  chrPerfPattern p;
  chrPerfPatternInit(&p, ncclInt32, -1, nranks, 777);
  chrPerfShape s;
  c->shape(perRank * (size_t)nranks, 4, nranks, 0, 0, &s);
  chrPerfBuffers host;
  memset(&host, 0, sizeof host);
  uint32_t* out = malloc(s.recvElems * sizeof(uint32_t));
  uint32_t* scratch = malloc(s.recvElems * sizeof(uint32_t));
  if (!out || !scratch) {
    printf("FAIL out of memory\n");
    exit(1);
  }
  for (int r = 0; r < nranks; r++) { /* the right output: each rank's buffer at its place */
    chrPerfShape rs;
    c->shape(perRank * (size_t)nranks, 4, nranks, r, 0, &rs);
    chrPerfFillInputs(&host, &rs, &p, r, out + (size_t)r * s.count, scratch);
  }
  char what[96];
  snprintf(what, sizeof what, "all-gather, int32, %d ranks, %zu elements, right", nranks, s.recvElems);
  checkBoth(c, &s, &p, out, 0, what);
  size_t at[16];
  const size_t k = spoilList(s.recvElems, 4, at);
  for (size_t i = 0; i < k; i++) out[at[i]] ^= 0x100u;
  snprintf(what, sizeof what, "all-gather, int32, %d ranks, %zu elements, %zu spoiled", nranks, s.recvElems, k);
  checkBoth(c, &s, &p, out, (long long)k, what);
  free(out);
  free(scratch);
}

int main(void) {
  allreduceCase(2, 1001);
  allreduceCase(3, CHR_PERF_PARALLEL_MIN + 12345);
  allgatherCase(2, 777);
  allgatherCase(3, CHR_PERF_PARALLEL_MIN / 2 + 5);
  printf("test_perf_check: %d failures\n", failures);
  return failures ? 1 : 0;
}
