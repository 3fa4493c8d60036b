/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_colls.c: the MPI side of docs/perf/run_host.sh and tools/bench/net_compare.sh. Times MPI_Allreduce
 * (float, sum), MPI_Allgather (float), MPI_Bcast (float, root 0, in place) and, when asked for,
 * MPI_Sendrecv (each rank sends to rank+1 and receives from rank-1, as nccl-tests' sendrecv) on host
 * buffers, and prints one row per size with
 * the sizes and bandwidth formulas of nccl-tests (and of chorus-perf), so the two can be compared row
 * by row.
 *
 * Not built by CMake (it needs an MPI compiler); the script builds it with
 *   mpicc -O2 -o mpi_colls tools/bench/mpi_colls.c
 * and runs it as
 *   mpirun -np N mpi_colls [-c allreduce,allgather,bcast,sendrecv] [-b 8] [-e 256M] [-f 4]
 *                          [-n 20] [-m 5] [-w 3] [-T 1.5] [-I 0]
 *
 *   -c  collectives to run (comma list; default allreduce,allgather,bcast)
 *   -b  smallest size in bytes, -e largest (K/M/G suffixes), -f factor between sizes; the largest size
 *       is always measured, even when the series steps over it
 *   -n  most timed samples per size, -m fewest, -T time budget per size in seconds (the sample count
 *       is cut to fit the budget, never below -m), -w warm-up calls per size
 *  -I  N > 0: time N calls one by one instead of in batches (as chorus-perf -I 1 -n N)
 *
 * Size: the "size" of nccl-tests. all-reduce: bytes of one rank's buffer; all-gather: bytes of the
 * gathered output (each rank gives size/nranks, at least one float); broadcast: bytes sent by root 0.
 * algbw = size / time (GB/s = 1e9 B/s); busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather),
 * x 1 (broadcast, sendrecv).
 *
 * Timing: a call is too short to time alone, so calls run in batches. After the warm-up, batches of
 * 1, 2, 4, ... calls are timed until one lasts 1 ms; that per-call time (the slowest rank's, so every
 * rank computes the same numbers) sets `inner`, the batch length of one sample (about 2 ms, at most
 * 1000 calls), and the sample count (budget / sample length, within [-m, -n]). A sample is a barrier
 * and `inner` calls; its per-call time is the slowest rank's. The row gives the median sample, and
 * the fastest and slowest.
 *
 * With -I N: after the warm-up and a barrier, each rank times N calls back to back, each call alone;
 * a call's time is the slowest rank's. The row gives the median call, the fastest and slowest; a
 * comment line after it, "# mean us: COLL SIZE MEAN", the slowest rank's span over the N calls / N.
 * This is chorus-perf's method with -I 1 (its "time" the mean, its iteration lines the calls), so
 * the two compare as they are, on a busy machine too, where a batch's median hides the calls that
 * waited for a core.
 *
 * Check: every element of the output, against values computed here, on a first call into a cleared
 * output buffer and on the output of the last timed call. Inputs are small integers, exact in float
 * whatever the order of the additions. A wrong element makes the row say FAIL, the last line
 * "# result check: FAILED", and the exit status 1.
 *
 * Output columns (rank 0; lines starting with '#' are comments):
 *   coll size(B) count time_us min_us max_us algbw busbw inner nsamp check
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { COLL_ALLREDUCE, COLL_ALLGATHER, COLL_BCAST, COLL_SENDRECV, COLL_COUNT };
static const char* const collNames[COLL_COUNT] = {"allreduce", "allgather", "bcast", "sendrecv"};

struct options {
  size_t minBytes, maxBytes;
  double factor;
  int maxSamples, minSamples, warmup;
  int iterCalls; /* -I: calls timed one by one (0: batches) */
  double budgetSec;
  int run[COLL_COUNT];
};

static int myRank, nRanks;

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "64M" -> 67108864. Returns 0 on a malformed value. */
static size_t parseBytes(const char* text) {
  char* end = NULL;
  double v = strtod(text, &end);
  if (end == text || v < 0) return 0;
  if (*end == 'k' || *end == 'K') v *= 1024.0;
  else if (*end == 'm' || *end == 'M') v *= 1024.0 * 1024.0;
  else if (*end == 'g' || *end == 'G') v *= 1024.0 * 1024.0 * 1024.0;
  return (size_t)v;
}

static void usage(const char* prog) {
  if (myRank == 0)
    fprintf(stderr, "usage: %s [-c allreduce,allgather,bcast,sendrecv] [-b BYTES] [-e BYTES] [-f F] [-n MAX] [-m MIN] "
                    "[-w WARMUP] [-T SECONDS] [-I CALLS]\n", prog);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parseOptions(int argc, char** argv, struct options* o) {
  *o = (struct options){8, 256u << 20, 4.0, 20, 5, 3, 0, 1.5, {1, 1, 1, 0}};
  for (int i = 1; i < argc; i++) {
    const char* flag = argv[i];
    if (i + 1 >= argc || flag[0] != '-' || strlen(flag) != 2) usage(argv[0]);
    const char* value = argv[++i];
    switch (flag[1]) {
      case 'b': o->minBytes = parseBytes(value); break;
      case 'e': o->maxBytes = parseBytes(value); break;
      case 'f': o->factor = atof(value); break;
      case 'n': o->maxSamples = atoi(value); break;
      case 'm': o->minSamples = atoi(value); break;
      case 'w': o->warmup = atoi(value); break;
      case 'T': o->budgetSec = atof(value); break;
      case 'I': o->iterCalls = atoi(value); break;
      case 'c':
        for (int c = 0; c < COLL_COUNT; c++) o->run[c] = strstr(value, collNames[c]) != NULL;
        break;
      default: usage(argv[0]);
    }
  }
  if (o->minBytes < 1 || o->maxBytes < o->minBytes || o->factor <= 1.0 || o->iterCalls < 0) usage(argv[0]);
  if (o->warmup < 1) o->warmup = 1;
  if (o->minSamples < 1) o->minSamples = 1;
  if (o->maxSamples < o->minSamples) o->maxSamples = o->minSamples;
}

/* One collective at one size: counts in elements. */
struct sizePoint {
  int coll;
  size_t opCount;     /* the count passed to MPI (per rank for all-gather) */
  size_t outCount;    /* elements of the result */
  size_t reportBytes; /* the "size" column */
};

static struct sizePoint pointFor(int coll, size_t bytes) {
  struct sizePoint p = {coll, bytes / sizeof(float), 0, 0};
  if (p.opCount == 0) p.opCount = 1;
  if (coll == COLL_ALLGATHER) {
    p.opCount = bytes / sizeof(float) / (size_t)nRanks;
    if (p.opCount == 0) p.opCount = 1;
    p.outCount = p.opCount * (size_t)nRanks;
  } else {
    p.outCount = p.opCount;
  }
  p.reportBytes = p.outCount * sizeof(float);
  return p;
}

/* Input element i of rank r: a small positive integer (sums over 1000s of ranks stay exact). */
static float inputValue(int r, size_t i) { return (float)(1 + (r % 11) + (int)(i % 13)); }

static float* sendBuf;
static float* recvBuf;

static void prepare(const struct sizePoint* p) {
  if (p->coll == COLL_BCAST) {
    /* In place: the root's buffer is the input, every other rank's is cleared output. */
    for (size_t i = 0; i < p->opCount; i++) recvBuf[i] = myRank == 0 ? inputValue(0, i) : 0.0f;
    return;
  }
  for (size_t i = 0; i < p->opCount; i++) sendBuf[i] = inputValue(myRank, i);
  memset(recvBuf, 0, p->outCount * sizeof(float));
}

static void runOnce(const struct sizePoint* p) {
  int n = (int)p->opCount;
  if (p->coll == COLL_ALLREDUCE) MPI_Allreduce(sendBuf, recvBuf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (p->coll == COLL_ALLGATHER) MPI_Allgather(sendBuf, n, MPI_FLOAT, recvBuf, n, MPI_FLOAT, MPI_COMM_WORLD);
  else if (p->coll == COLL_BCAST) MPI_Bcast(recvBuf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  else MPI_Sendrecv(sendBuf, n, MPI_FLOAT, (myRank + 1) % nRanks, 0, recvBuf, n, MPI_FLOAT,
                    (myRank + nRanks - 1) % nRanks, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Sum over ranks of the rank part of inputValue, so the all-reduce check costs one add per element. */
static float rankPartSum(void) {
  float sum = 0.0f;
  for (int r = 0; r < nRanks; r++) sum += (float)(1 + (r % 11));
  return sum;
}

static float expectedValue(const struct sizePoint* p, size_t i) {
  if (p->coll == COLL_ALLREDUCE) {
    static float rankSum = -1.0f;
    if (rankSum < 0.0f) rankSum = rankPartSum();
    return rankSum + (float)nRanks * (float)(int)(i % 13);
  }
  if (p->coll == COLL_ALLGATHER) return inputValue((int)(i / p->opCount), i % p->opCount);
  if (p->coll == COLL_SENDRECV) return inputValue((myRank + nRanks - 1) % nRanks, i);
  return inputValue(0, i);
}

/* Wrong elements of this rank's output. */
static long countWrong(const struct sizePoint* p) {
  long wrong = 0;
  for (size_t i = 0; i < p->outCount; i++)
    if (recvBuf[i] != expectedValue(p, i)) wrong++;
  return wrong;
}

/* Seconds per call of a batch of `calls` calls, as the slowest rank saw it. */
static double timeBatch(const struct sizePoint* p, int calls) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = seconds();
  for (int k = 0; k < calls; k++) runOnce(p);
  double mine = (seconds() - start) / calls, slowest = 0.0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

static int compareDouble(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Checks the last call's output, prints the row of nSamples times (sorted here) and returns the wrong
 * elements over all ranks. mean < 0: no mean_us line. */
static long report(const struct sizePoint* p, double* samples, int nSamples, int inner, long wrong, double mean) {
  wrong += countWrong(p);
  long wrongAll = 0;
  MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

  qsort(samples, (size_t)nSamples, sizeof(double), compareDouble);
  double median = nSamples % 2 ? samples[nSamples / 2] : 0.5 * (samples[nSamples / 2 - 1] + samples[nSamples / 2]);
  double algBw = (double)p->reportBytes / median / 1e9;
  double busFactor = p->coll == COLL_ALLREDUCE   ? 2.0 * (nRanks - 1) / nRanks
                     : p->coll == COLL_ALLGATHER ? (double)(nRanks - 1) / nRanks
                                                 : 1.0;
  if (myRank == 0) {
    printf("  %-9s %12zu %11zu %12.2f %12.2f %12.2f %9.3f %9.3f %5d %6d %s\n", collNames[p->coll], p->reportBytes,
           p->outCount, median * 1e6, samples[0] * 1e6, samples[nSamples - 1] * 1e6, algBw, algBw * busFactor, inner,
           nSamples, wrongAll ? "FAIL" : "ok");
    if (mean >= 0) printf("# mean us: %s %zu %.2f\n", collNames[p->coll], p->reportBytes, mean * 1e6);
    fflush(stdout);
  }
  return wrongAll;
}

/* -I: n calls timed one by one into samples (each the slowest rank's); returns the slowest rank's
 * span over them. */
static double timeCalls(const struct sizePoint* p, int n, double* samples) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = seconds(), prev = start;
  for (int k = 0; k < n; k++) {
    runOnce(p);
    double now = seconds();
    samples[k] = now - prev;
    prev = now;
  }
  double span = prev - start, slowest = 0.0;
  MPI_Allreduce(MPI_IN_PLACE, samples, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&span, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Measures and prints one row. Returns the number of wrong elements over all ranks. */
static long measure(const struct options* o, const struct sizePoint* p, double* samples) {
  prepare(p);
  MPI_Barrier(MPI_COMM_WORLD);
  runOnce(p);
  long wrong = countWrong(p);
  for (int w = 1; w < o->warmup; w++) runOnce(p);
  if (o->iterCalls > 0) {
    double mean = timeCalls(p, o->iterCalls, samples) / o->iterCalls;
    return report(p, samples, o->iterCalls, 1, wrong, mean);
  }

  /* Per-call estimate: double the batch until it lasts 1 ms (or 1024 calls). */
  double perCall = 0.0;
  int calls = 1;
  for (;;) {
    perCall = timeBatch(p, calls);
    if (perCall * calls >= 1e-3 || calls >= 1024) break;
    calls *= 2;
  }
  /* Short calls: two more batches of about 1 ms, keeping the fastest, so one stall (another process
   * taking the core) does not make the samples too short. */
  if (perCall < 2e-3) {
    int batch = (int)(1e-3 / perCall) + 1;
    if (batch > 1024) batch = 1024;
    for (int k = 0; k < 2; k++) {
      double t = timeBatch(p, batch);
      if (t < perCall) perCall = t;
    }
  }
  int inner = (int)(2e-3 / perCall);
  if (inner < 1) inner = 1;
  if (inner > 1000) inner = 1000;
  int nSamples = (int)(o->budgetSec / (perCall * inner));
  if (nSamples > o->maxSamples) nSamples = o->maxSamples;
  if (nSamples < o->minSamples) nSamples = o->minSamples;

  for (int s = 0; s < nSamples; s++) samples[s] = timeBatch(p, inner);
  return report(p, samples, nSamples, inner, wrong, -1.0);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  MPI_Comm_size(MPI_COMM_WORLD, &nRanks);
  struct options o;
  parseOptions(argc, argv, &o);

  /* Largest buffers: all-reduce needs maxBytes on both sides; all-gather maxBytes of output (and at
   * least one float per rank); broadcast maxBytes. */
  size_t maxElems = o.maxBytes / sizeof(float);
  if (maxElems < (size_t)nRanks) maxElems = (size_t)nRanks;
  sendBuf = calloc(maxElems, sizeof(float));
  recvBuf = calloc(maxElems, sizeof(float));
  int nSamplesMax = o.iterCalls > o.maxSamples ? o.iterCalls : o.maxSamples;
  double* samples = malloc((size_t)nSamplesMax * sizeof(double));
  if (sendBuf == NULL || recvBuf == NULL || samples == NULL) {
    fprintf(stderr, "mpi_colls: rank %d: cannot allocate 2 x %zu bytes\n", myRank, maxElems * sizeof(float));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  if (myRank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    printf("# mpi_colls: nranks=%d lib=\"%s\" samples<=%d (>=%d) warmup=%d budget=%.2fs type=float\n", nRanks, lib,
           o.maxSamples, o.minSamples, o.warmup, o.budgetSec);
    printf("# %-9s %12s %11s %12s %12s %12s %9s %9s %5s %6s %s\n", "coll", "size(B)", "count", "time_us", "min_us",
           "max_us", "algbw", "busbw", "inner", "nsamp", "check");
    fflush(stdout);
  }

  long wrong = 0;
  for (int c = 0; c < COLL_COUNT; c++) {
    if (!o.run[c]) continue;
    double bytes = (double)o.minBytes;
    for (;;) {
      size_t b = bytes < (double)o.maxBytes ? (size_t)bytes : o.maxBytes;
      struct sizePoint p = pointFor(c, b);
      wrong += measure(&o, &p, samples);
      if (b == o.maxBytes) break;
      bytes *= o.factor;
    }
  }
  if (myRank == 0) printf("# result check: %s\n", wrong ? "FAILED" : "all ok");
  free(samples);
  free(sendBuf);
  free(recvBuf);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
