/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chorus-perf: collective benchmark with nccl-tests' sizes, formulas and columns.
 *
 *   chorus-perf [-np N] [--hosts K] <collective> -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 -d float -o sum ...
 *   chorus-perf --calibrate [-np N] ...   (the planner's cost model: perf/calibrate.c)
 *
 * With -np, N ranks run as local processes (tools/launch.c); without it, one rank, or the ranks that
 * the environment describes (CHORUS_RANK/CHORUS_NRANKS or mpirun, plus NCCL_COMM_ID). Rank 0 prints.
 * Only the public NCCL API is used: the same binary runs on NVIDIA's NCCL (with -M cuda there).
 * Timings and wrong-value counts are combined over ranks with ncclAllReduce, so no MPI is needed.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "perf/parallel.h"
#include "perf/perf.h"

/* Chorus's own version string, when the library is Chorus (weak: absent on NVIDIA's NCCL). */
extern const char* ncclChorusVersionString(void) __attribute__((weak));

typedef struct {
  const chrPerfOptions* o;
  int rank, nranks;
  ncclComm_t comm;
  chrPerfBuffers buf;
} perfRank;

/* Chorus says which algorithm and protocol it chose (a trailing column after nccl-tests' ones).
 * Looked up at run time, so the same binary runs on NVIDIA's NCCL, which has no such call. */
typedef ncclResult_t (*lastPlanFn)(ncclComm_t, const char**, const char**);
static void describePlan(ncclComm_t comm, chrPerfRow* row) {
  static lastPlanFn fn;
  static int looked;
  if (!looked) {
    fn = (lastPlanFn)dlsym(RTLD_DEFAULT, "ncclChorusLastPlan");
    looked = 1;
  }
  const char* algo = "";
  const char* proto = "";
  row->algo[0] = row->proto[0] = '\0';
  if (fn && fn(comm, &algo, &proto) == ncclSuccess && algo[0]) {
    snprintf(row->algo, sizeof(row->algo), "%s", algo);
    snprintf(row->proto, sizeof(row->proto), "%s", proto);
  }
}

/* The file the NCCL API was loaded from (Chorus's or NVIDIA's libnccl.so.2), "" if unknown. */
static const char* libraryPath(void) {
  Dl_info info;
  if (dladdr((void*)ncclGetVersion, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

static int reportNccl(perfRank* pr, const char* what, ncclResult_t res) {
  const char* last = ncclGetLastError(pr->comm);
  fprintf(stderr, "chorus-perf: rank %d: %s failed: %s%s%s\n", pr->rank, what, ncclGetErrorString(res),
          last && *last ? ": " : "", last ? last : "");
  return 1;
}

/* A combination the library rejects as an invalid argument (e.g. avg on fp8 in NVIDIA's NCCL) is
 * skipped, not fatal, when it only came from "-d all" or "-o all": argument checks give the same
 * answer on every rank, so the ranks stay in step. Returns 2 for "skip", 1 for a failure. */
#define PERF_SKIP 2
static int launchFailed(perfRank* pr, const char* what, ncclResult_t res) {
  if (res == ncclInvalidArgument && pr->o->skipRejected) return PERF_SKIP;
  return reportNccl(pr, what, res);
}

/* In-place allreduce of a small host array, through device memory when the buffers live there. */
static ncclResult_t allreduceHost(perfRank* pr, void* data, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  size_t bytes = count * (size_t)chrNumTypeInfo(type)->size;
  if (pr->buf.mem == PERF_MEM_HOST) return ncclAllReduce(data, data, count, type, op, pr->comm, NULL);
#ifdef CHORUS_PERF_CUDA
  /* Allocated once with the buffers: cudaFree mid-run waits for the whole device, where another
   * rank of this process may run a kernel that waits for this rank. */
  if (pr->buf.scratchBytes < bytes) return ncclInternalError;
  if (cudaMemcpy(pr->buf.scratch, data, bytes, cudaMemcpyHostToDevice) != cudaSuccess) return ncclUnhandledCudaError;
  ncclResult_t res = ncclAllReduce(pr->buf.scratch, pr->buf.scratch, count, type, op, pr->comm, pr->buf.stream);
  if (res != ncclSuccess) return res;
  if (cudaStreamSynchronize(pr->buf.stream) != cudaSuccess) return ncclUnhandledCudaError;
  if (cudaMemcpy(data, pr->buf.scratch, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return ncclUnhandledCudaError;
  return ncclSuccess;
#else
  (void)bytes;
  return ncclInvalidUsage;
#endif
}

static int barrier(perfRank* pr) {
  double one = 1;
  ncclResult_t res = allreduceHost(pr, &one, 1, ncclFloat64, ncclSum);
  return res == ncclSuccess ? 0 : reportNccl(pr, "ncclAllReduce (barrier)", res);
}

/* Combines a per-rank time as -a asks: 0 rank 0's, 1 mean, 2 min, 3 max. */
static int combineTime(perfRank* pr, double* t) {
  double v = *t;
  ncclRedOp_t op = ncclSum;
  switch (pr->o->average) {
    case 0: if (pr->rank != 0) v = 0; break;
    case 2: op = ncclMin; break;
    case 3: op = ncclMax; break;
    default: break;
  }
  ncclResult_t res = allreduceHost(pr, &v, 1, ncclFloat64, op);
  if (res != ncclSuccess) return reportNccl(pr, "ncclAllReduce (timing)", res);
  *t = pr->o->average == 1 ? v / pr->nranks : v;
  return 0;
}

/* One iteration: agg operations, batched in a group when agg > 1. */
static ncclResult_t launchIter(perfRank* pr, const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, int agg) {
  const chrPerfColl* c = pr->o->coll;
  ncclResult_t res = ncclSuccess;
  if (agg > 1 && (res = ncclGroupStart()) != ncclSuccess) return res;
  for (int a = 0; a < agg && res == ncclSuccess; a++)
    res = c->launch(send, recv, count, type, op, pr->o->root, pr->rank, pr->nranks, pr->comm, pr->buf.stream);
  if (agg > 1) {
    ncclResult_t end = ncclGroupEnd();
    if (res == ncclSuccess) res = end;
  }
  if (res == ncclSuccess && pr->o->blocking && chrPerfSync(&pr->buf) != 0) res = ncclUnhandledCudaError;
  return res;
}

static uint64_t seedOf(int type, int op, int sizeIdx, int inPlace, int rep) {
  return ((uint64_t)type << 48) ^ ((uint64_t)(op + 1) << 40) ^ ((uint64_t)sizeIdx << 16) ^ ((uint64_t)inPlace << 12) ^
         (uint64_t)rep ^ 0x6368726f7275730aull;
}

/* Sizes of the step loop: -b, then x -f (or + -i), up to -e. */
static int nextSize(const chrPerfOptions* o, size_t size, size_t* next) {
  size_t n = o->stepFactor > 1 ? (size_t)((double)size * o->stepFactor) : size + o->stepBytes;
  if (n <= size) return 0;
  *next = n;
  return n <= o->maxBytes;
}

/* Largest send/receive buffers this rank needs over every type and size (in-place layouts included). */
static void bufferNeeds(const perfRank* pr, size_t* sendBytes, size_t* recvBytes) {
  const chrPerfOptions* o = pr->o;
  *sendBytes = *recvBytes = 0;
  for (int ti = 0; ti < o->ntypes; ti++) {
    int ts = chrNumTypeInfo(o->types[ti])->size;
    size_t size = o->minBytes;
    for (;;) {
      chrPerfShape s;
      o->coll->shape(size / (size_t)ts, ts, pr->nranks, pr->rank, o->root, &s);
      size_t sb = s.sendElems * (size_t)ts;
      size_t rb = s.recvElems * (size_t)ts;
      size_t ib = (s.sendInplaceOff + s.sendElems) * (size_t)ts;
      size_t ib2 = (s.recvInplaceOff + s.recvElems) * (size_t)ts;
      if (sb > *sendBytes) *sendBytes = sb;
      if (rb > *recvBytes) *recvBytes = rb;
      if (ib > *recvBytes) *recvBytes = ib;
      if (ib2 > *recvBytes) *recvBytes = ib2;
      if (!nextSize(o, size, &size)) break;
    }
  }
}

/* Prints the preamble (rank 0, unless -q) and gives rank 0 every rank's host name in report->hosts
 * (for -J). */
static int printPreamble(perfRank* pr, chrPerfReport* report) {
  const chrPerfOptions* o = pr->o;
  int libVersion = 0;
  ncclGetVersion(&libVersion);
  /* Every rank describes itself in a fixed slot, then names its host in a second one; a uint8 sum
   * of zero-filled slots gathers them. */
  enum { SLOT = 128 };
  const size_t lines = (size_t)pr->nranks * SLOT;
  char* slots = calloc((size_t)pr->nranks, SLOT + PERF_HOST_LEN);
  if (!slots) return 1;
  char host[PERF_HOST_LEN] = "?";
  gethostname(host, sizeof(host) - 1);
  const char* hostId = getenv("NCCL_HOSTID");
  snprintf(slots + (size_t)pr->rank * SLOT, SLOT, "#  Rank %2d Pid %7d on %s%s%s%s", pr->rank, (int)getpid(), host,
           hostId ? " (NCCL_HOSTID " : "", hostId ? hostId : "", hostId ? ")" : "");
  memcpy(slots + lines + (size_t)pr->rank * PERF_HOST_LEN, host, PERF_HOST_LEN);
  ncclResult_t res = allreduceHost(pr, slots, (size_t)pr->nranks * (SLOT + PERF_HOST_LEN), ncclUint8, ncclSum);
  if (res != ncclSuccess) {
    free(slots);
    return reportNccl(pr, "ncclAllReduce (rank list)", res);
  }
  if (pr->rank == 0) {
    report->hosts = malloc((size_t)pr->nranks * PERF_HOST_LEN);
    if (!report->hosts) {
      free(slots);
      return 1;
    }
    memcpy(report->hosts, slots + lines, (size_t)pr->nranks * PERF_HOST_LEN);
    for (int r = 0; r < pr->nranks; r++) report->hosts[(size_t)r * PERF_HOST_LEN + PERF_HOST_LEN - 1] = '\0';
  }
  if (pr->rank == 0 && !o->quiet) {
    printf("# chorus-perf nccl-headers=%d nccl-library=%d\n", NCCL_VERSION_CODE, libVersion);
    printf("# library: %s\n", ncclChorusVersionString ? ncclChorusVersionString() : "NCCL (not Chorus)");
    printf("# Collective test starting: %s\n", o->coll->testName);
    char step[48];
    if (o->stepFactor > 1) snprintf(step, sizeof(step), "%g(factor)", o->stepFactor);
    else snprintf(step, sizeof(step), "%zu(bytes)", o->stepBytes);
    printf("# nranks %d nhosts %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d agg iters: %d "
           "validation: %d average: %d blocking: %d memory: %s cudagraph: %d register: %d\n",
           pr->nranks, o->nhosts, o->minBytes, o->maxBytes, step, o->warmup, o->iters, o->agg, o->check,
           o->average, o->blocking, o->vmm ? "vmm" : o->mem == PERF_MEM_CUDA ? "cuda" : "host", o->graphLaunches,
           o->registerMode);
    printf("#\n# Using ranks\n");
    for (int r = 0; r < pr->nranks; r++) {
      char* s = slots + (size_t)r * SLOT;
      s[SLOT - 1] = '\0';
      printf("%s\n", s);
    }
    fflush(stdout);
  }
  free(slots);
  return 0;
}

#ifdef CHORUS_PERF_CUDA
static int reportCuda(perfRank* pr, const char* what, cudaError_t e) {
  fprintf(stderr, "chorus-perf: rank %d: %s failed: %s\n", pr->rank, what, cudaGetErrorString(e));
  return 1;
}

/* Frees a graph and its executable (either may be NULL). Returns 1 if CUDA refused. */
static int destroyGraph(perfRank* pr, cudaGraphExec_t exec, cudaGraph_t graph) {
  int rc = 0;
  cudaError_t e;
  if (exec && (e = cudaGraphExecDestroy(exec)) != cudaSuccess) rc = reportCuda(pr, "cudaGraphExecDestroy", e);
  if (graph && (e = cudaGraphDestroy(graph)) != cudaSuccess) rc = reportCuda(pr, "cudaGraphDestroy", e);
  return rc;
}

/* Records -n iterations, each launchIter as in the plain timing, into one graph on the rank's
 * stream. The capture is ended on every path: a stream left capturing would fail every later call
 * on it. Returns 0, 1 (failure) or PERF_SKIP (as launchFailed). */
static int captureIters(perfRank* pr, const void* send, void* recv, size_t count, ncclDataType_t type,
                        ncclRedOp_t op, cudaGraph_t* graph) {
  const chrPerfOptions* o = pr->o;
  *graph = NULL;
  /* Thread-local: with -t the other ranks are threads of this process, and what they call meanwhile
   * (an allocation, a synchronize) must neither break this capture nor be refused because of it. */
  cudaError_t e = cudaStreamBeginCapture(pr->buf.stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return reportCuda(pr, "cudaStreamBeginCapture", e);
  ncclResult_t res = ncclSuccess;
  for (int it = 0; it < o->iters && res == ncclSuccess; it++)
    res = launchIter(pr, send, recv, count, type, op, o->agg);
  e = cudaStreamEndCapture(pr->buf.stream, graph);
  if (res == ncclSuccess && e == cudaSuccess) return 0;
  if (*graph) destroyGraph(pr, NULL, *graph);
  *graph = NULL;
  if (res != ncclSuccess) {
    /* The library's error is the cause; an invalidated capture is only its consequence. */
    if (e != cudaSuccess) fprintf(stderr, "chorus-perf: rank %d: cudaStreamEndCapture after the failed call: %s\n",
                                  pr->rank, cudaGetErrorString(e));
    return launchFailed(pr, o->coll->ncclFunction, res);
  }
  return reportCuda(pr, "cudaStreamEndCapture (capturing the timed iterations)", e);
}

/* -G: the timed iterations as one CUDA graph, launched graphLaunches times. *elapsed is the wall
 * clock over the launches and the final sync; *inCalls the part inside cudaGraphLaunch. plan (NULL:
 * not wanted) gets the library's choice for the captured calls in its algo and proto. */
static int timeGraph(perfRank* pr, const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                     chrPerfRow* plan, double* elapsed, double* inCalls) {
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  double t0;
  int rc = captureIters(pr, send, recv, count, type, op, &graph);
  if (rc) return rc;
  /* Asked now: the barrier below is a call of its own, which the library would describe instead. */
  if (plan) describePlan(pr->comm, plan);
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    exec = NULL;
    rc = reportCuda(pr, "cudaGraphInstantiate", e);
    goto done;
  }
  /* The first launch of an executable graph would otherwise upload it, inside the timing. */
  if ((e = cudaGraphUpload(exec, pr->buf.stream)) != cudaSuccess) {
    rc = reportCuda(pr, "cudaGraphUpload", e);
    goto done;
  }
  /* Capture and instantiation take each rank its own time: line the ranks up before the clock. */
  if (barrier(pr)) {
    rc = 1;
    goto done;
  }
  *inCalls = 0;
  t0 = chrLaunchNowSec();
  for (int l = 0; l < pr->o->graphLaunches; l++) {
    const double c0 = chrLaunchNowSec();
    e = cudaGraphLaunch(exec, pr->buf.stream);
    *inCalls += chrLaunchNowSec() - c0;
    if (e != cudaSuccess) {
      rc = reportCuda(pr, "cudaGraphLaunch", e);
      goto done;
    }
  }
  if (chrPerfSync(&pr->buf)) {
    rc = 1;
    goto done;
  }
  *elapsed = chrLaunchNowSec() - t0;
done:
  /* An executable still running on the device is freed when it completes, not waited for. */
  if (destroyGraph(pr, exec, graph)) rc = 1;
  return rc;
}
#endif

/* Times one half (out of place or in place) of one row and checks its results. */
static int runHalf(perfRank* pr, ncclDataType_t type, int op, ncclRedOp_t ncclOp, int sizeIdx, const chrPerfShape* s,
                   int inPlace, chrPerfRow* row) {
  const chrPerfOptions* o = pr->o;
  const chrPerfColl* c = o->coll;
  int ts = chrNumTypeInfo(type)->size;
  char* base = pr->buf.recv;
  const void* send = inPlace ? (const void*)(base + s->sendInplaceOff * (size_t)ts) : pr->buf.send;
  void* recv = inPlace ? (void*)(base + s->recvInplaceOff * (size_t)ts) : pr->buf.recv;
  chrPerfPattern pat;
  ncclResult_t res;

  if (chrPerfFillTimed(&pr->buf, s, ts, (void*)send) != 0) return 1; /* the check runs refill */
  if (barrier(pr)) return 1;
  for (int w = 0; w < o->warmup; w++)
    if ((res = launchIter(pr, send, recv, s->count, type, ncclOp, o->agg)) != ncclSuccess)
      return launchFailed(pr, c->ncclFunction, res);
  if (chrPerfSync(&pr->buf) || barrier(pr)) return 1;

  /* Besides the wall clock, the time spent inside the library's calls: with device buffers the
   * calls only enqueue, so the two together say whether the host or the GPU sets the pace. */
  double inCalls = 0, elapsed = 0, ops = (double)o->iters * o->agg;
  if (o->graphLaunches > 0) {
#ifdef CHORUS_PERF_CUDA
    int grc = timeGraph(pr, send, recv, s->count, type, ncclOp, inPlace ? NULL : row, &elapsed, &inCalls);
    if (grc) return grc;
    ops *= o->graphLaunches;
#else
    return 1; /* refused by the option parser */
#endif
  } else {
    chrPerfIterTimes each = {0};
    if (o->iterTimes && chrPerfIterStart(&each, &pr->buf, o->iters)) {
      chrPerfIterFree(&each);
      fprintf(stderr, "chorus-perf: rank %d: no room or events for -I 1's times\n", pr->rank);
      return 1;
    }
    const double t0 = chrLaunchNowSec();
    for (int it = 0; it < o->iters; it++) {
      const double c0 = chrLaunchNowSec();
      if ((res = launchIter(pr, send, recv, s->count, type, ncclOp, o->agg)) != ncclSuccess) {
        chrPerfIterFree(&each);
        return launchFailed(pr, c->ncclFunction, res);
      }
      inCalls += chrLaunchNowSec() - c0;
      if (o->iterTimes && chrPerfIterMark(&each, &pr->buf, it)) {
        chrPerfIterFree(&each);
        fprintf(stderr, "chorus-perf: rank %d: recording iteration %d's time failed\n", pr->rank, it);
        return 1;
      }
    }
    if (chrPerfSync(&pr->buf)) {
      chrPerfIterFree(&each);
      return 1;
    }
    elapsed = chrLaunchNowSec() - t0;
    if (o->iterTimes && chrPerfIterReport(&each, pr->rank, s->count * (size_t)ts, inPlace)) {
      fprintf(stderr, "chorus-perf: rank %d: reading the iterations' times failed\n", pr->rank);
      return 1;
    }
    /* Ask now, before the small all-reduce that combines the times is planned. */
    if (!inPlace) describePlan(pr->comm, row);
  }
  double sec = elapsed / ops;
  double hostSec = inCalls / ops;
  if (combineTime(pr, &sec) || combineTime(pr, &hostSec)) return 1;

  row->timeUs[inPlace] = sec * 1e6;
  row->hostUs[inPlace] = hostSec * 1e6;
  row->algBw[inPlace] = sec > 0 ? (double)s->algBytes / 1e9 / sec : 0;
  row->busBw[inPlace] = row->algBw[inPlace] * c->busFactor(pr->nranks);
  row->wrong[inPlace] = -1;
  if (o->check <= 0 || (inPlace && !c->checkInPlace)) return 0;

  double wrong = 0;
  for (int rep = 0; rep < o->check; rep++) {
    chrPerfPatternInit(&pat, type, c->usesOp ? op : -1, pr->nranks, seedOf(type, op, sizeIdx, inPlace, rep + 1));
    if (chrPerfFillInputs(&pr->buf, s, &pat, pr->rank, (void*)send, recv) != 0) return 1;
    if ((res = launchIter(pr, send, recv, s->count, type, ncclOp, 1)) != ncclSuccess)
      return launchFailed(pr, c->ncclFunction, res);
    if (chrPerfSync(&pr->buf)) return 1;
    wrong += (double)chrPerfCheckOutputs(&pr->buf, c, s, &pat, pr->rank, o->root, recv);
  }
  /* Sum of wrong elements over ranks (a double holds any count we can reach exactly). */
  if ((res = allreduceHost(pr, &wrong, 1, ncclFloat64, ncclSum)) != ncclSuccess)
    return reportNccl(pr, "ncclAllReduce (check)", res);
  row->wrong[inPlace] = (int64_t)wrong;
  return 0;
}

/* The scalar of "mulsum" lives in host memory and is read at creation (ncclScalarHostImmediate). */
static int createMulsum(perfRank* pr, ncclDataType_t type, ncclRedOp_t* op) {
  uint64_t bits = chrNumEncodeInt(type, chrPerfMulsumScalar(pr->rank));
  ncclResult_t res = ncclRedOpCreatePreMulSum(op, &bits, type, ncclScalarHostImmediate, pr->comm);
  return res == ncclSuccess ? 0 : launchFailed(pr, "ncclRedOpCreatePreMulSum", res);
}

static void printSkipped(perfRank* pr, const char* type, const char* op) {
  if (pr->rank != 0) return;
  const char* last = ncclGetLastError(pr->comm);
  printf("# %s %s skipped: the library rejects it (invalid argument%s%s)\n", type, op, last && *last ? ": " : "",
         last ? last : "");
  fflush(stdout);
}

static int runAll(perfRank* pr, chrPerfReport* report) {
  const chrPerfOptions* o = pr->o;
  const chrPerfColl* c = o->coll;
  static const ncclRedOp_t builtin[PERF_NUM_OPS] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclSum};
  int nops = c->usesOp ? o->nops : 1;
  for (int ti = 0; ti < o->ntypes; ti++) {
    ncclDataType_t type = o->types[ti];
    const chrNumType* tinfo = chrNumTypeInfo(type);
    for (int oi = 0; oi < nops; oi++) {
      int op = c->usesOp ? o->ops[oi] : -1;
      ncclRedOp_t ncclOp = op >= 0 ? builtin[op] : ncclSum;
      int created = 0;
      if (op == PERF_MULSUM) {
        int crc = createMulsum(pr, type, &ncclOp);
        if (crc == PERF_SKIP) {
          printSkipped(pr, tinfo->name, chrPerfOpName(op));
          continue;
        }
        if (crc) return 1;
        created = 1;
      }
      int sizeIdx = 0, rc = 0;
      size_t size = o->minBytes;
      for (;;) {
        chrPerfShape s;
        c->shape(size / (size_t)tinfo->size, tinfo->size, pr->nranks, pr->rank, o->root, &s);
        chrPerfRow row;
        memset(&row, 0, sizeof(row));
        row.size = s.sizeBytes;
        row.count = s.count;
        row.type = tinfo->name;
        row.redop = chrPerfOpName(op);
        row.root = c->usesRoot ? o->root : -1;
        for (int inPlace = 0; inPlace < 2 && rc == 0; inPlace++)
          rc = runHalf(pr, type, op, ncclOp, sizeIdx, &s, inPlace, &row);
        if (rc == PERF_SKIP) {
          printSkipped(pr, tinfo->name, chrPerfOpName(op));
          rc = 0;
          break;
        }
        if (rc) break;
        if (pr->rank == 0) {
          chrPerfPrintRow(stdout, &row);
          if (chrPerfReportAdd(report, &row)) rc = 1;
        }
        sizeIdx++;
        if (rc || !nextSize(o, size, &size)) break;
      }
      if (created) ncclRedOpDestroy(ncclOp, pr->comm);
      if (rc) return rc;
    }
  }
  return 0;
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const chrPerfOptions* o = arg;
  perfRank pr;
  memset(&pr, 0, sizeof(pr));
  pr.o = o;
  pr.rank = rank;
  pr.nranks = nranks;
  if (o->coll->usesRoot && o->root >= nranks) {
    if (rank == 0) fprintf(stderr, "chorus-perf: root %d is not a rank (nranks %d)\n", o->root, nranks);
    return 1;
  }
#ifdef CHORUS_PERF_CUDA
  if (o->mem == PERF_MEM_CUDA) {
    int ndev = 0;
    const char* local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
      fprintf(stderr, "chorus-perf: rank %d: no CUDA device\n", rank);
      return 1;
    }
    cudaSetDevice((local ? atoi(local) : rank) % ndev);
  }
#endif
  ncclResult_t res = ncclCommInitRank(&pr.comm, nranks, *id, rank);
  if (res != ncclSuccess) return reportNccl(&pr, "ncclCommInitRank", res);

  int rc = 1;
  size_t sendBytes, recvBytes;
  bufferNeeds(&pr, &sendBytes, &recvBytes);
  int allocated = chrPerfBuffersAlloc(&pr.buf, o->mem, o->vmm, sendBytes, recvBytes) == 0;
  /* Ranks that are threads of this process: nobody launches before everybody has allocated
   * (an allocation may wait for the device, where a waiting kernel would never finish). */
  chrLaunchLocalBarrier();
  if (!allocated) goto fail_destroy_comm;
  chrPerfReport report;
  memset(&report, 0, sizeof(report));
  if (chrPerfBuffersRegister(&pr.buf, pr.comm, o->registerMode, rank)) goto fail_free_buffers;
  if (printPreamble(&pr, &report)) goto fail_free_buffers;

  if (rank == 0) chrPerfPrintHeader(stdout);
  rc = runAll(&pr, &report);
  if (rc == 0) {
    /* Rank 0 decides (wrong values, NCCL_TESTS_MIN_BW, JSON and CSV files) and tells the others, so
     * that every rank exits with the same status. */
    double verdict = 0;
    if (rank == 0) {
      chrPerfLibrary lib = {NCCL_VERSION_CODE, 0, ncclChorusVersionString ? ncclChorusVersionString() : "NCCL",
                            libraryPath()};
      ncclGetVersion(&lib.library);
      verdict = chrPerfPrintFooter(stdout, &report, o->coll);
      if (o->jsonPath && chrPerfWriteJson(o->jsonPath, &report, o, nranks, &lib) != 0) verdict += 1;
      if (o->csvPath && chrPerfWriteCsv(o->csvPath, &report, o, nranks) != 0) verdict += 1;
    }
    res = allreduceHost(&pr, &verdict, 1, ncclFloat64, ncclSum);
    if (res != ncclSuccess) rc = reportNccl(&pr, "ncclAllReduce (verdict)", res);
    else if (verdict != 0) rc = 1;
  }
fail_free_buffers:
  chrPerfReportFree(&report);
  /* cudaFree waits for the device: every rank of this process done first (a rank that failed ends
   * the process instead, chrLaunchThreads). */
  if (rc == 0) chrLaunchLocalBarrier();
  if (chrPerfBuffersDeregister(&pr.buf, pr.comm, rank)) rc = 1;
  chrPerfBuffersFree(&pr.buf);
fail_destroy_comm:
  if (rc == 0) ncclCommDestroy(pr.comm);
  else ncclCommAbort(pr.comm);
  return rc;
}

/* Threads per rank for the host loops over the buffers (perf/parallel.h): the CPUs shared among the
 * ranks of this host (-np, -t, or mpirun's local size); CHORUS_PERF_CHECK_THREADS overrides. */
static void setCheckThreads(const chrPerfOptions* o) {
  const char* own = getenv("CHORUS_PERF_CHECK_THREADS");
  if (own && *own) {
    chrPerfSetWorkers(atoi(own));
    return;
  }
  const char* mpiLocal = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int local = o->np > 0 ? o->np : o->nthreads > 1 ? o->nthreads : mpiLocal ? atoi(mpiLocal) : 1;
  if (local < 1) local = 1;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  chrPerfSetWorkers(cpus > 0 ? (int)(cpus / local) : 1);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--calibrate") == 0) return chrPerfCalibrate(argc, argv);
  chrPerfOptions o;
  int prc = chrPerfParseOptions(argc, argv, &o);
  if (prc == 2) return 0;
  if (prc != 0) return 1;
  o.startTime = time(NULL);
  o.startSec = chrLaunchNowSec();
  setCheckThreads(&o);
  if (o.np > 0) return chrLaunchRanks(o.np, o.nhosts, o.timeoutSec, rankMain, &o) ? 1 : 0;
  if (o.nthreads > 1) return chrLaunchThreads(o.nthreads, rankMain, &o) ? 1 : 0;
  int rank, nranks;
  int env = chrLaunchEnvRank(&rank, &nranks);
  if (env < 0) return 1;
  if (env > 0) return chrLaunchFromEnv(rankMain, &o);
  return chrLaunchSingle(rankMain, &o);
}
