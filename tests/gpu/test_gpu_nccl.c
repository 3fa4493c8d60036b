/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_nccl.c (gpu.nccl.*): GPU buffers through the PUBLIC API only (nccl.h, plus the CUDA
 * runtime for memory and streams), with N ranks sharing GPU 0 in this process, as NCCL programs call
 * it. (NCCL itself refuses several ranks on one GPU; Chorus runs them, which is how one GPU tests
 * every rank count.)
 *
 *   test_gpu_nccl initall N   ncclCommInitAll (devlist: GPU 0), ONE thread drives every rank in groups:
 *                             the case list of nccl_cases.c (every type and op, in and out of place,
 *                             sizes 0, 1, odd and a few MB, every root, send/recv, all-to-all,
 *                             several calls per group on one and two streams), plus the refusals
 *   test_gpu_nccl threads N   one thread per rank, ncclCommInitRank after cudaSetDevice(0): a
 *                             shorter list, each thread checking its own outputs
 *   test_gpu_nccl graph N     one group of seven all-reduces (two kernels, the first with more
 *                             works than the kernel arguments hold) and an all-to-all, captured
 *                             into a CUDA graph on each rank's stream, replayed 5 times with new
 *                             data
 *   test_gpu_nccl memalloc N  ncclMemAlloc'd buffers as an all-reduce's operands, then ncclMemFree
 *   test_gpu_nccl suspend N   that all-reduce, then every rank suspended (NCCL_SUSPEND_MEM) in one
 *                             group: ncclCommMemStats before and after, a call refused while
 *                             suspended, the GPU memory the driver reports freed; resumed in one group,
 *                             the all-reduce again (twice over: the second suspend after a resume)
 *   test_gpu_nccl revoke      rank 0's all-reduce kernel waits for rank 1, which never joins; both
 *                             comms are revoked: the kernel returns, its stream drains, calls are
 *                             refused; then the revoked comms are split in a group and the children
 *                             all-reduce correctly
 *   test_gpu_nccl grow N      ncclCommInitAll of N - 1 ranks, their all-reduce, then one group growing
 *                             them (ncclCommGrow, -1) and a new rank N - 1 into N: the all-reduce on
 *                             the grown comms, then on the old ones again
 *   test_gpu_nccl onesided N  a window per rank (registered in one group); three rounds of every rank
 *                             putting a block into every rank's window (itself too) with
 *                             ncclPutSignal and a bare ncclSignal to its next rank, then waiting for
 *                             all of them with one ncclWaitSignal: each window holds every rank's
 *                             block of the round; the refusals
 *   test_gpu_nccl abort       ncclCommAbort of a rank whose all-reduce waits for a peer that never
 *                             joins: returns within a bounded time, the peer's comm reports the error
 * CHORUS_TEST_GPUS=G (default 1): rank r uses GPU r % G (2 GPUs of one process: peer access over
 * NVLink); exits 77 (SKIP) when fewer than G GPUs are present.
 * Exits 77 (SKIP) without a CUDA device. Every wait has a deadline: a hang fails with the case named.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl.h"
#include "nccl_cases.h"
#include "way_log.h"

#if defined(CHORUS_TEST_NVIDIA_HEADER) && defined(CHORUS_NCCL_H)
#error "test_gpu_nccl_nvabi must be compiled against NVIDIA's nccl.h, not Chorus's"
#endif

#define MAX_RANKS 8
#define WAIT_S 20.0

#define CUDA_OK(call)                                                                                 \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

#define NCCL_OK(call)                                                                                 \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess) {                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s: %s (%d): %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              (int)r_, ncclGetLastError(NULL));                                                       \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                                  \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      fprintf(stderr, "FAIL %s:%d: %s (last error: %.400s)\n", __FILE__, __LINE__, #cond,             \
              ncclGetLastError(NULL));                                                                \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int nGpus = 1; /* CHORUS_TEST_GPUS */

static int gpuOf(int rank) { return rank % nGpus; }

struct rankCtx {
  int rank, n, dev;
  ncclComm_t comm;
  cudaStream_t s[2];
  char* send;             /* device arenas */
  char* recv;
  uint64_t* scalars;      /* device: one PreMulSum scalar per op of a case */
  unsigned char* up;      /* host staging, NC_ARENA each */
  unsigned char* down;
  int failures;
};

/* Waits for both of a rank's streams; a hang or a CUDA error ends the test, naming the case. */
static void waitRank(struct rankCtx* R, const char* what) {
  const double deadline = now() + WAIT_S;
  for (;;) {
    int busy = 0;
    for (int i = 0; i < 2; i++) {
      cudaError_t e = cudaStreamQuery(R->s[i]);
      if (e == cudaErrorNotReady) busy = 1;
      else if (e != cudaSuccess) {
        fprintf(stderr, "FAIL %s: rank %d stream %d: %s\n", what, R->rank, i, cudaGetErrorString(e));
        exit(1);
      }
    }
    if (!busy) return;
    if (now() > deadline) {
      fprintf(stderr, "FAIL %s: rank %d still running after %.0f s (hang)\n", what, R->rank, WAIT_S);
      exit(1);
    }
    usleep(20);
  }
}

static void setupRank(struct rankCtx* R, int rank, int n) {
  memset(R, 0, sizeof(*R));
  R->rank = rank;
  R->n = n;
  R->dev = gpuOf(rank);
  CUDA_OK(cudaSetDevice(R->dev));
  for (int i = 0; i < 2; i++) CUDA_OK(cudaStreamCreateWithFlags(&R->s[i], cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void**)&R->send, NC_ARENA));
  CUDA_OK(cudaMalloc((void**)&R->recv, NC_ARENA));
  CUDA_OK(cudaMalloc((void**)&R->scalars, NC_MAX_OPS * sizeof(uint64_t)));
  R->up = malloc(NC_ARENA);
  R->down = malloc(NC_ARENA);
  EXPECT(R->up && R->down);
}

static void freeRank(struct rankCtx* R) {
  CUDA_OK(cudaSetDevice(R->dev));
  for (int i = 0; i < 2; i++) CUDA_OK(cudaStreamDestroy(R->s[i]));
  CUDA_OK(cudaFree(R->send));
  CUDA_OK(cudaFree(R->recv));
  CUDA_OK(cudaFree(R->scalars));
  free(R->up);
  free(R->down);
}

/* Before the group: poison outputs, upload inputs and scalars, make the PreMulSum ops. */
static void prepare(struct rankCtx* R, const struct ncCase* c, ncclRedOp_t* redops) {
  CUDA_OK(cudaSetDevice(R->dev)); /* one thread may drive ranks on several GPUs */
  for (int k = 0; k < c->nOps; k++) {
    const struct ncOp* o = &c->ops[k];
    struct ncLayout l;
    ncLayoutOf(o, R->n, R->rank, &l);
    CUDA_OK(cudaMemsetAsync(R->recv + l.regionOff, NC_POISON, l.regionBytes, R->s[0]));
    const size_t bytes = l.inElems * (size_t)ncTypeSize(o->type);
    if (bytes) {
      ncFillInput(o, R->n, R->rank, R->up + l.inOff, l.inElems);
      CUDA_OK(cudaMemcpyAsync((l.inRecvArena ? R->recv : R->send) + l.inOff, R->up + l.inOff, bytes,
                              cudaMemcpyHostToDevice, R->s[0]));
    }
    static const ncclRedOp_t builtin[OP_PREMUL_HOST] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
    redops[k] = ncclSum;
    if (o->op < OP_PREMUL_HOST) {
      redops[k] = builtin[o->op];
    } else if (o->func == F_ALLREDUCE || o->func == F_REDUCESCATTER || o->func == F_REDUCE) {
      uint64_t bits = ncScalarBits(o->type);
      if (o->op == OP_PREMUL_HOST) {
        NCCL_OK(ncclRedOpCreatePreMulSum(&redops[k], &bits, (ncclDataType_t)o->type, ncclScalarHostImmediate, R->comm));
      } else {
        CUDA_OK(cudaMemcpyAsync(&R->scalars[k], &bits, sizeof(bits), cudaMemcpyHostToDevice, R->s[0]));
        NCCL_OK(ncclRedOpCreatePreMulSum(&redops[k], &R->scalars[k], (ncclDataType_t)o->type, ncclScalarDevice, R->comm));
      }
    }
  }
  /* Pageable uploads are staged by the time the call returns; the stream makes them visible to the
   * collectives, which may run on the other stream. */
  CUDA_OK(cudaStreamSynchronize(R->s[0]));
}

static void issue(struct rankCtx* R, const struct ncOp* o, ncclRedOp_t redop, const char* name) {
  CUDA_OK(cudaSetDevice(R->dev));
  struct ncLayout l;
  ncLayoutOf(o, R->n, R->rank, &l);
  const int n = R->n, r = R->rank;
  const ncclDataType_t t = (ncclDataType_t)o->type;
  char* in = (l.inRecvArena ? R->recv : R->send) + l.inOff;
  char* out = R->recv + l.outOff;
  const cudaStream_t st = R->s[o->stream];
  const size_t c = o->count, block = c * (size_t)ncTypeSize(o->type);
  ncclResult_t res = ncclSuccess;
  switch (o->func) {
    case F_ALLREDUCE: res = ncclAllReduce(in, out, c, t, redop, R->comm, st); break;
    case F_REDUCESCATTER: res = ncclReduceScatter(in, out, c, t, redop, R->comm, st); break;
    case F_ALLGATHER: res = ncclAllGather(in, out, c, t, R->comm, st); break;
    case F_BROADCAST: res = ncclBroadcast(r == o->root ? in : out, out, c, t, o->root, R->comm, st); break;
    case F_REDUCE: res = ncclReduce(in, out, c, t, redop, o->root, R->comm, st); break;
    case F_RING: /* receive first: the library orders the pair, not the caller */
      res = ncclRecv(out, c, t, (r - 1 + n) % n, R->comm, st);
      if (res == ncclSuccess) res = ncclSend(in, c, t, (r + 1) % n, R->comm, st);
      break;
    case F_PAIRS: { /* every peer, itself included, in an order of this rank's own */
      int order[2 * MAX_RANKS];
      ncPairsOrder(o, n, r, order);
      for (int i = 0; i < 2 * n && res == ncclSuccess; i++) {
        int peer = order[i] % n;
        if (order[i] < n) res = ncclSend(in + (size_t)peer * block, c, t, peer, R->comm, st);
        else res = ncclRecv(out + (size_t)peer * block, c, t, peer, R->comm, st);
      }
      break;
    }
    case F_ALLTOALL: res = ncclAlltoAll(in, out, c, t, R->comm, st); break;
    default: break;
  }
  if (res != ncclSuccess) {
    fprintf(stderr, "FAIL %s: rank %d: %s returned %s: %s\n", name, r, ncFuncName(o->func), ncclGetErrorString(res),
            ncclGetLastError(R->comm));
    exit(1);
  }
}

/* After the group: wait, download, check, free the PreMulSum ops. Returns failures. */
static int finish(struct rankCtx* R, const struct ncCase* c, ncclRedOp_t* redops) {
  CUDA_OK(cudaSetDevice(R->dev));
  waitRank(R, c->name);
  for (int k = 0; k < c->nOps; k++) {
    struct ncLayout l;
    ncLayoutOf(&c->ops[k], R->n, R->rank, &l);
    CUDA_OK(cudaMemcpyAsync(R->down + l.regionOff, R->recv + l.regionOff, l.regionBytes, cudaMemcpyDeviceToHost, R->s[0]));
  }
  CUDA_OK(cudaStreamSynchronize(R->s[0]));
  int bad = 0;
  for (int k = 0; k < c->nOps; k++) {
    const struct ncOp* o = &c->ops[k];
    struct ncLayout l;
    ncLayoutOf(o, R->n, R->rank, &l);
    char msg[256];
    if (ncCheck(o, R->n, R->rank, R->down + l.regionOff, msg, sizeof(msg)) != 0) {
      fprintf(stderr, "FAIL n=%d %s [op %d: %s]: %s\n", R->n, c->name, k, ncFuncName(o->func), msg);
      bad++;
    }
    if (o->op >= OP_PREMUL_HOST && (o->func == F_ALLREDUCE || o->func == F_REDUCESCATTER || o->func == F_REDUCE))
      NCCL_OK(ncclRedOpDestroy(redops[k], R->comm));
  }
  return bad;
}

static void requireGpu(const char* prog) {
  /* Each rank's stream needs a hardware queue of its own (a kernel queued behind another rank's
   * waiting kernel would never start): ask for the most, before the first CUDA call. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    printf("%s: SKIP: no CUDA device (%s)\n", prog, e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    exit(77);
  }
  const char* g = getenv("CHORUS_TEST_GPUS");
  nGpus = g && *g ? atoi(g) : 1;
  if (nGpus < 1 || nGpus > MAX_RANKS) {
    fprintf(stderr, "%s: CHORUS_TEST_GPUS=%s (1..%d)\n", prog, g, MAX_RANKS);
    exit(2);
  }
  if (nGpus > n) {
    printf("%s: SKIP: CHORUS_TEST_GPUS=%d but %d CUDA device(s)\n", prog, nGpus, n);
    exit(77);
  }
  CUDA_OK(cudaSetDevice(0));
}

/* ncclMemAlloc buffers as the operands of an all-reduce, then ncclMemFree (a second time: refused). */
static void memAllocCase(struct rankCtx* R, int n) {
  enum { COUNT = 1 << 18 };
  float* send[MAX_RANKS];
  float* recv[MAX_RANKS];
  float* host = malloc(COUNT * sizeof(float));
  EXPECT(host != NULL);
  for (int r = 0; r < n; r++) {
    CUDA_OK(cudaSetDevice(R[r].dev));
    NCCL_OK(ncclMemAlloc((void**)&send[r], COUNT * sizeof(float)));
    NCCL_OK(ncclMemAlloc((void**)&recv[r], COUNT * sizeof(float)));
    for (int i = 0; i < COUNT; i++) host[i] = (float)(r + 1) + (float)(i % 7);
    CUDA_OK(cudaMemcpy(send[r], host, COUNT * sizeof(float), cudaMemcpyHostToDevice));
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; r++) NCCL_OK(ncclAllReduce(send[r], recv[r], COUNT, ncclFloat32, ncclSum, R[r].comm, R[r].s[0]));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; r++) {
    waitRank(&R[r], "ncclMemAlloc buffers");
    CUDA_OK(cudaMemcpy(host, recv[r], COUNT * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < COUNT; i++) EXPECT(host[i] == (float)(n * (n + 1) / 2) + (float)(n * (i % 7)));
    NCCL_OK(ncclMemFree(send[r]));
    NCCL_OK(ncclMemFree(recv[r]));
    EXPECT(ncclMemFree(recv[r]) != ncclSuccess); /* freed already (Chorus: ncclInvalidArgument) */
  }
  free(host);
}

/* ---- initall: one thread, every rank in each group ---- */

/* The refusals check Chorus's own error texts; the same cases also run on NVIDIA's library (the
 * 2-GPU run, test_gpu_nccl_nvabi), which answers in its own words. */
static int libraryIsChorus(void) { return dlsym(RTLD_DEFAULT, "ncclChorusVersionString") != NULL; }

static void refusals(struct rankCtx* R, int n) {
  ncclComm_t* comm = &R[0].comm;
  float* host = calloc(64, sizeof(float));
  EXPECT(host != NULL);
  /* Host send, device receive: refused. */
  EXPECT(ncclAllReduce(host, R[0].recv, 16, ncclFloat32, ncclSum, *comm, R[0].s[0]) == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "both must be GPU device memory") != NULL);
  /* Host and device calls of one comm in one group: refused at the group's end, nothing runs. */
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(host, host, 16, ncclFloat32, ncclSum, *comm, R[0].s[0]) == ncclSuccess);
  EXPECT(ncclAllReduce(R[0].send, R[0].recv, 16, ncclFloat32, ncclSum, *comm, R[0].s[0]) == ncclSuccess);
  EXPECT(ncclGroupEnd() == ncclInvalidUsage);
  EXPECT(strstr(ncclGetLastError(NULL), "host buffers and on GPU buffers") != NULL);
  ncclResult_t async = ncclInProgress;
  EXPECT(ncclCommGetAsyncError(*comm, &async) == ncclSuccess && async == ncclSuccess);
  for (int r = 0; r < n; r++) {
    int dev = -1;
    EXPECT(ncclCommCuDevice(R[r].comm, &dev) == ncclSuccess && dev == R[r].dev);
  }
  free(host);
}

/* ncclCommInitAll over ranks 0..n-1 (rank r on GPU gpuOf(r)), each with its streams and arenas. */
static void initAllRanks(struct rankCtx* R, ncclComm_t* comms, int n) {
  int devs[MAX_RANKS] = {0};
  for (int r = 0; r < n && r < MAX_RANKS; r++) devs[r] = gpuOf(r);
  NCCL_OK(ncclCommInitAll(comms, n, devs));
  for (int r = 0; r < n; r++) {
    setupRank(&R[r], r, n);
    R[r].comm = comms[r];
  }
}

static int runInitAll(int n) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t comms[MAX_RANKS];
  initAllRanks(R, comms, n);
  int count = 0, failures = 0;
  const struct ncCase* cases = ncCases(n, 0, &count);
  const double t0 = now();
  for (int i = 0; i < count && failures < 20; i++) {
    const struct ncCase* c = &cases[i];
    ncclRedOp_t redops[MAX_RANKS][NC_MAX_OPS];
    for (int r = 0; r < n; r++) prepare(&R[r], c, redops[r]);
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; r++)
      for (int k = 0; k < c->nOps; k++) issue(&R[r], &c->ops[k], redops[r][k], c->name);
    NCCL_OK(ncclGroupEnd());
    for (int r = 0; r < n; r++) failures += finish(&R[r], c, redops[r]);
  }
  if (libraryIsChorus()) refusals(R, n);
  else printf("gpu.nccl initall n=%d: not Chorus: the refusals (Chorus's error texts) left out\n", n);
  for (int r = 0; r < n; r++) {
    ncclResult_t async = ncclInProgress;
    NCCL_OK(ncclCommGetAsyncError(comms[r], &async));
    EXPECT(async == ncclSuccess);
  }
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(comms[r]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl initall n=%d: %d cases, %d failures, %.2f s\n", n, count, failures, now() - t0);
  return failures ? 1 : 0;
}

/* ---- memalloc: ncclMemAlloc buffers in an all-reduce ---- */

static int runMemAlloc(int n) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t comms[MAX_RANKS];
  initAllRanks(R, comms, n);
  memAllocCase(R, n);
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(comms[r]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl memalloc n=%d: all-reduce on ncclMemAlloc buffers correct, freed\n", n);
  return 0;
}

/* ---- suspend: every rank's GPU memory released and taken again ---- */

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 7)
static uint64_t memStat(ncclComm_t comm, ncclCommMemStat_t stat) {
  uint64_t v = ~0ull;
  NCCL_OK(ncclCommMemStats(comm, stat, &v));
  return v;
}

static size_t freeGpuBytes(int dev) {
  size_t freeB = 0, total = 0;
  CUDA_OK(cudaSetDevice(dev));
  CUDA_OK(cudaMemGetInfo(&freeB, &total));
  return freeB;
}

static int runSuspend(int n) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t comms[MAX_RANKS];
  initAllRanks(R, comms, n);
  for (int round = 0; round < 2; round++) {
    memAllocCase(R, n); /* the device states exist (again) */
    uint64_t held = 0;
    for (int r = 0; r < n; r++) {
      const uint64_t s = memStat(comms[r], ncclStatGpuMemSuspend);
      EXPECT(s > 0 && memStat(comms[r], ncclStatGpuMemTotal) >= s && memStat(comms[r], ncclStatGpuMemSuspended) == 0);
      held += s;
    }
    const size_t freeBefore = freeGpuBytes(R[0].dev);
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; r++) NCCL_OK(ncclCommSuspend(comms[r], NCCL_SUSPEND_MEM));
    NCCL_OK(ncclGroupEnd());
    const size_t freeAfter = freeGpuBytes(R[0].dev);
    for (int r = 0; r < n; r++) {
      EXPECT(memStat(comms[r], ncclStatGpuMemSuspended) == 1 && memStat(comms[r], ncclStatGpuMemSuspend) == 0);
      EXPECT(ncclAllReduce(R[r].send, R[r].recv, 16, ncclFloat32, ncclSum, comms[r], R[r].s[0]) == ncclInvalidUsage);
    }
    EXPECT(ncclCommSuspend(comms[0], NCCL_SUSPEND_MEM) == ncclInvalidUsage); /* suspended already */
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; r++) NCCL_OK(ncclCommResume(comms[r]));
    NCCL_OK(ncclGroupEnd());
    EXPECT(ncclCommResume(comms[0]) == ncclInvalidUsage); /* not suspended any more */
    printf("gpu.nccl suspend n=%d round %d: ncclCommMemStats %llu bytes suspendable over the ranks; the driver "
           "reports %lld bytes freed by the suspend\n", n, round, (unsigned long long)held,
           (long long)freeAfter - (long long)freeBefore);
  }
  memAllocCase(R, n);
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(comms[r]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl suspend n=%d: all-reduces correct before, between and after two suspends\n", n);
  return 0;
}
#endif

/* ---- revoke: a kernel waiting for a peer stops; the comm stays a parent ---- */

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 7)
static int runRevoke(void) {
  const int n = 2;
  static struct rankCtx R[2];
  ncclComm_t comms[2], children[2];
  initAllRanks(R, comms, n);
  memAllocCase(R, n); /* both ranks have GPU state */
  CUDA_OK(cudaSetDevice(R[0].dev));
  NCCL_OK(ncclAllReduce(R[0].send, R[0].recv, 4u << 20, ncclFloat32, ncclSum, comms[0], R[0].s[0]));
  usleep(200 * 1000);
  EXPECT(cudaStreamQuery(R[0].s[0]) == cudaErrorNotReady); /* its kernel waits for rank 1 */
  const double t0 = now();
  NCCL_OK(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT));
  NCCL_OK(ncclCommRevoke(comms[1], NCCL_REVOKE_DEFAULT));
  cudaError_t e;
  while ((e = cudaStreamQuery(R[0].s[0])) == cudaErrorNotReady && now() - t0 < 10.0) usleep(100);
  const double drained = now() - t0;
  EXPECT(e == cudaSuccess && drained < 5.0);
  for (int r = 0; r < n; r++) {
    ncclResult_t async = ncclInProgress;
    NCCL_OK(ncclCommGetAsyncError(comms[r], &async));
    EXPECT(async == ncclSuccess);
    EXPECT(ncclAllReduce(R[r].send, R[r].recv, 16, ncclFloat32, ncclSum, comms[r], R[r].s[0]) == ncclInvalidUsage);
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommSplit(comms[r], 0, r, &children[r], NULL));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; r++) R[r].comm = children[r];
  memAllocCase(R, n);
  for (int r = 0; r < n; r++) {
    NCCL_OK(ncclCommDestroy(children[r]));
    NCCL_OK(ncclCommDestroy(comms[r]));
  }
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl revoke: the waiting kernel's stream drained %.3f s after the revokes; the split children "
         "all-reduce correctly\n", drained);
  return 0;
}
#endif

/* ---- grow: a new rank joins the ranks of an ncclCommInitAll ---- */

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
static int runGrow(int n) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t old[MAX_RANKS], grown[MAX_RANKS];
  EXPECT(n >= 2);
  initAllRanks(R, old, n - 1);
  memAllocCase(R, n - 1);
  ncclUniqueId gid;
  NCCL_OK(ncclCommGetUniqueId(old[0], &gid));
  setupRank(&R[n - 1], n - 1, n); /* the new rank's GPU is current for its grow */
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n - 1; r++) NCCL_OK(ncclCommGrow(old[r], n, &gid, -1, &grown[r], NULL));
  NCCL_OK(ncclCommGrow(NULL, n, &gid, n - 1, &grown[n - 1], NULL));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; r++) {
    int rank = -1, dev = -1;
    NCCL_OK(ncclCommUserRank(grown[r], &rank));
    NCCL_OK(ncclCommCuDevice(grown[r], &dev));
    EXPECT(rank == r && dev == R[r].dev);
    R[r].comm = grown[r];
  }
  memAllocCase(R, n);
  for (int r = 0; r < n - 1; r++) R[r].comm = old[r];
  memAllocCase(R, n - 1); /* the old comms still work */
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(grown[r]));
  for (int r = 0; r < n - 1; r++) NCCL_OK(ncclCommDestroy(old[r]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl grow %d -> %d: all-reduces correct on the grown comms and on the old ones after\n", n - 1, n);
  return 0;
}
#endif

/* ---- onesided: puts and signals into windows ---- */

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
static float blockValue(int from, int round, size_t i) { return (float)(from * 1000 + round * 100) + (float)(i % 97); }

static int runOneSided(int n) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t comms[MAX_RANKS];
  ncclWindow_t wins[MAX_RANKS];
  float* winBuf[MAX_RANKS];
  enum { BLOCK = 40000 }; /* floats per sender; odd multiple of nothing in particular */
  initAllRanks(R, comms, n);
  const size_t bytes = (size_t)n * BLOCK * sizeof(float);
  float* host = malloc(bytes);
  EXPECT(host != NULL);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    CUDA_OK(cudaSetDevice(R[r].dev));
    NCCL_OK(ncclMemAlloc((void**)&winBuf[r], bytes));
    NCCL_OK(ncclCommWindowRegister(comms[r], winBuf[r], bytes, &wins[r], NCCL_WIN_COLL_SYMMETRIC));
  }
  NCCL_OK(ncclGroupEnd());
  for (int round = 0; round < 3; round++) {
    for (int r = 0; r < n; r++) {
      for (size_t i = 0; i < BLOCK; i++) host[i] = blockValue(r, round, i);
      CUDA_OK(cudaSetDevice(R[r].dev));
      CUDA_OK(cudaMemcpy(R[r].send, host, BLOCK * sizeof(float), cudaMemcpyHostToDevice));
    }
    /* One thread issues every rank's puts, then every rank's wait: nothing here waits on the host. */
    for (int r = 0; r < n; r++)
      for (int p = 0; p < n; p++)
        NCCL_OK(ncclPutSignal(R[r].send, BLOCK, ncclFloat32, p, wins[r], (size_t)r * BLOCK * sizeof(float), 0, 0, 0,
                              comms[r], R[r].s[0]));
    for (int r = 0; r < n; r++) NCCL_OK(ncclSignal((r + 1) % n, 0, 0, 0, comms[r], R[r].s[0]));
    for (int r = 0; r < n; r++) {
      ncclWaitSignalDesc_t descs[MAX_RANKS];
      for (int p = 0; p < n; p++) {
        descs[p].opCnt = p == (r + n - 1) % n ? 2 : 1; /* its put, and the bare signal of the rank before */
        descs[p].peer = p;
        descs[p].sigIdx = 0;
        descs[p].ctx = 0;
      }
      NCCL_OK(ncclWaitSignal(n, descs, comms[r], R[r].s[1]));
    }
    for (int r = 0; r < n; r++) {
      waitRank(&R[r], "one-sided round");
      CUDA_OK(cudaMemcpy(host, winBuf[r], bytes, cudaMemcpyDeviceToHost));
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < BLOCK; i++) EXPECT(host[(size_t)p * BLOCK + i] == blockValue(p, round, i));
    }
  }
  /* Refusals: a block past the window's end, a signal other than 0, a foreign window, host memory. */
  EXPECT(ncclPutSignal(R[0].send, BLOCK + 1, ncclFloat32, 0, wins[0], (size_t)(n - 1) * BLOCK * sizeof(float), 0, 0,
                       0, comms[0], R[0].s[0]) == ncclInvalidArgument);
  EXPECT(ncclSignal(0, 1, 0, 0, comms[0], R[0].s[0]) == ncclInvalidArgument);
  if (n > 1) EXPECT(ncclPutSignal(R[0].send, 1, ncclFloat32, 0, wins[1], 0, 0, 0, 0, comms[0], R[0].s[0]) == ncclInvalidArgument);
  EXPECT(ncclPutSignal(host, 1, ncclFloat32, 0, wins[0], 0, 0, 0, 0, comms[0], R[0].s[0]) == ncclInvalidUsage);
  for (int r = 0; r < n; r++) {
    NCCL_OK(ncclCommWindowDeregister(comms[r], wins[r]));
    NCCL_OK(ncclCommDestroy(comms[r]));
    NCCL_OK(ncclMemFree(winBuf[r]));
  }
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  free(host);
  printf("gpu.nccl onesided n=%d: 3 rounds of %d puts and %d signals, every window right\n", n, n * n, n);
  return 0;
}
#endif

/* ---- threads: one thread per rank ---- */

struct threadArg {
  int rank, n;
  ncclUniqueId id;
  pthread_barrier_t* barrier;
  int failures;
};

static void* rankThread(void* p) {
  struct threadArg* a = p;
  struct rankCtx R;
  setupRank(&R, a->rank, a->n); /* sets the rank's GPU for this thread */
  NCCL_OK(ncclCommInitRank(&R.comm, a->n, a->id, a->rank));
  int dev = -1;
  EXPECT(ncclCommCuDevice(R.comm, &dev) == ncclSuccess && dev == R.dev);
  /* Every allocation is made: from here no thread calls anything that waits for the whole device
   * (cudaMalloc, cudaFree), which would wait for kernels that wait for this thread. */
  pthread_barrier_wait(a->barrier);
  int count = 0;
  const struct ncCase* cases = ncCases(a->n, 1, &count);
  for (int i = 0; i < count && a->failures < 20; i++) {
    ncclRedOp_t redops[NC_MAX_OPS];
    prepare(&R, &cases[i], redops);
    NCCL_OK(ncclGroupStart());
    for (int k = 0; k < cases[i].nOps; k++) issue(&R, &cases[i].ops[k], redops[k], cases[i].name);
    NCCL_OK(ncclGroupEnd());
    a->failures += finish(&R, &cases[i], redops);
  }
  pthread_barrier_wait(a->barrier);
  NCCL_OK(ncclCommDestroy(R.comm));
  pthread_barrier_wait(a->barrier);
  freeRank(&R);
  return NULL;
}

static int runThreads(int n) {
  int count = 0;
  ncCases(n, 1, &count); /* build the shared list before the threads read it */
  struct threadArg args[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)n);
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  const double t0 = now();
  for (int r = 0; r < n; r++) {
    args[r] = (struct threadArg){r, n, id, &barrier, 0};
    EXPECT(pthread_create(&th[r], NULL, rankThread, &args[r]) == 0);
  }
  int failures = 0;
  for (int r = 0; r < n; r++) {
    pthread_join(th[r], NULL);
    failures += args[r].failures;
  }
  pthread_barrier_destroy(&barrier);
  printf("gpu.nccl threads n=%d: %d cases per rank, %d failures, %.2f s\n", n, count, failures, now() - t0);
  return failures ? 1 : 0;
}

/* ---- graph: capture an all-reduce and an all-to-all per rank, replay with new data ---- */

static int runGraph(int n, size_t a2aCount) {
  static struct rankCtx R[MAX_RANKS];
  ncclComm_t comms[MAX_RANKS];
  initAllRanks(R, comms, n);
  struct ncCase c;
  /* Six float sums, each on every channel (22 to 64, by ranks per GPU: more works than the kernel
   * arguments hold, 126, in a launch that is not the last), an int32 max (another kernel: the launch
   * after), an all-to-all (its sends and receives on every lane go into that last launch). Captured,
   * the first launch gets graph-owned storage for its works. */
  enum { NSUMS = 6, NOPS = NSUMS + 2 }; /* NC_MAX_OPS at most */
  struct ncOp o[NOPS];
  memset(o, 0, sizeof(o));
  for (int k = 0; k < NSUMS; k++) {
    o[k].func = F_ALLREDUCE;
    o[k].type = ncclFloat32;
    o[k].op = OP_SUM;
    o[k].count = k % 2 ? 600007 : 300007; /* 2.4 MB, 1.2 MB: with the all-to-all, within NC_ARENA */
  }
  o[NSUMS].func = F_ALLREDUCE;
  o[NSUMS].type = ncclInt32;
  o[NSUMS].op = OP_MAX;
  o[NSUMS].count = 5000;
  o[NSUMS + 1].func = F_ALLTOALL;
  o[NSUMS + 1].type = ncclFloat32;
  o[NSUMS + 1].op = OP_SUM;
  o[NSUMS + 1].count = a2aCount; /* default 2 MB per peer: every lane */
  ncclRedOp_t redops[MAX_RANKS][NC_MAX_OPS];
  int failures = 0;
  /* Warm up outside capture: the first device call makes the communicators' GPU state (allocations
   * are not allowed while a stream is captured). */
  for (int k = 0; k < NOPS; k++) o[k].seed = 1 + (uint64_t)k;
  ncMakeCase(&c, o, NOPS, n);
  for (int r = 0; r < n; r++) prepare(&R[r], &c, redops[r]);
  fprintf(stderr, "graph n=%d: warm-up prepared\n", n);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; r++)
    for (int k = 0; k < NOPS; k++) issue(&R[r], &c.ops[k], redops[r][k], "graph warm-up");
  NCCL_OK(ncclGroupEnd());
  fprintf(stderr, "graph n=%d: warm-up launched\n", n);
  for (int r = 0; r < n; r++) failures += finish(&R[r], &c, redops[r]);
  fprintf(stderr, "graph n=%d: warm-up done (%d failures)\n", n, failures);

  cudaGraphExec_t exec[MAX_RANKS];
  for (int r = 0; r < n; r++) {
    cudaGraph_t graph;
    CUDA_OK(cudaSetDevice(R[r].dev));
    CUDA_OK(cudaStreamBeginCapture(R[r].s[0], cudaStreamCaptureModeGlobal));
    NCCL_OK(ncclGroupStart());
    for (int k = 0; k < NOPS; k++) issue(&R[r], &c.ops[k], redops[r][k], "graph capture"); /* exits on failure */
    ncclResult_t res = ncclGroupEnd();
    cudaError_t e = cudaStreamEndCapture(R[r].s[0], &graph);
    if (res != ncclSuccess || e != cudaSuccess) {
      fprintf(stderr, "FAIL graph capture, rank %d: ncclGroupEnd %s (%s), cudaStreamEndCapture %s\n", r,
              ncclGetErrorString(res), ncclGetLastError(comms[r]), cudaGetErrorString(e));
      return 1;
    }
    CUDA_OK(cudaGraphInstantiate(&exec[r], graph, 0));
    CUDA_OK(cudaGraphDestroy(graph));
  }
  for (int rep = 0; rep < 5; rep++) {
    for (int k = 0; k < NOPS; k++) o[k].seed = 100 * (uint64_t)(k + 1) + (uint64_t)rep; /* new data, same buffers */
    ncMakeCase(&c, o, NOPS, n);
    snprintf(c.name, sizeof(c.name), "graph replay %d", rep);
    for (int r = 0; r < n; r++) prepare(&R[r], &c, redops[r]);
    for (int r = 0; r < n; r++) {
      CUDA_OK(cudaSetDevice(R[r].dev));
      CUDA_OK(cudaGraphLaunch(exec[r], R[r].s[0]));
    }
    for (int r = 0; r < n; r++) failures += finish(&R[r], &c, redops[r]);
    fprintf(stderr, "graph n=%d: replay %d done (%d failures)\n", n, rep, failures);
  }
  for (int r = 0; r < n; r++) CUDA_OK(cudaGraphExecDestroy(exec[r]));
  for (int r = 0; r < n; r++) NCCL_OK(ncclCommDestroy(comms[r]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl graph n=%d: captured 7 all-reduces + all-to-all (works in graph-owned storage) replayed 5 times, "
         "%d failures\n", n, failures);
  return failures ? 1 : 0;
}

/* ---- abort: a rank waits for a peer that never joins ---- */

/* The watchdog, as PyTorch's: after a while it looks at the rank's stream and aborts the comm,
 * whatever the rank's own thread is doing (with ranks on one GPU the call has returned and its kernel
 * waits; with a peer on another GPU the call itself waits to connect to that peer's GPU memory). */
struct abortWatch {
  ncclComm_t comm;
  cudaStream_t stream;
  int dev;
  int streamBusy;
  double at, took;
  ncclResult_t res;
};

static void* abortLater(void* arg) {
  struct abortWatch* a = arg;
  usleep(200 * 1000);
  cudaSetDevice(a->dev);
  a->streamBusy = cudaStreamQuery(a->stream) == cudaErrorNotReady;
  a->at = now();
  a->res = ncclCommAbort(a->comm);
  a->took = now() - a->at;
  return NULL;
}

static int abortCase(int warmFirst) {
  const int n = 2;
  static struct rankCtx R[2];
  ncclComm_t comms[2];
  initAllRanks(R, comms, n);
  const size_t count = 4u << 20; /* 16 MB: more than the connection holds, whatever the protocol */
  if (warmFirst) { /* both ranks have GPU state, rank 1 idle */
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; r++) NCCL_OK(ncclAllReduce(R[r].send, R[r].recv, 1000, ncclFloat32, ncclSum, comms[r], R[r].s[0]));
    NCCL_OK(ncclGroupEnd());
    for (int r = 0; r < n; r++) waitRank(&R[r], "abort warm-up");
  }
  CUDA_OK(cudaSetDevice(R[0].dev));
  struct abortWatch watch = {comms[0], R[0].s[0], R[0].dev, 0, 0, 0, ncclSuccess};
  pthread_t th;
  EXPECT(pthread_create(&th, NULL, abortLater, &watch) == 0);
  ncclResult_t call = ncclAllReduce(R[0].send, R[0].recv, count, ncclFloat32, ncclSum, comms[0], R[0].s[0]);
  const double returned = now();
  pthread_join(th, NULL);
  EXPECT(watch.res == ncclSuccess);
  /* Either the call had returned and its kernel waited, or the call itself waited and the abort made
   * it return an error; within the same bound either way. */
  const int callWaited = returned > watch.at;
  EXPECT(callWaited ? call != ncclSuccess : call == ncclSuccess);
  const int waiting = watch.streamBusy || callWaited;
  const double took = callWaited && returned - watch.at > watch.took ? returned - watch.at : watch.took;
  /* The kernel returned: its stream drains without an error. */
  const double t1 = now();
  cudaError_t e;
  while ((e = cudaStreamQuery(R[0].s[0])) == cudaErrorNotReady && now() - t1 < 10.0) usleep(100);
  EXPECT(e == cudaSuccess);
  /* The peer learns of it as PyTorch's watchdog would: by polling (at once with both ranks on one
   * GPU; through its IPC watch otherwise). */
  ncclResult_t async = ncclSuccess;
  const double t2 = now();
  do {
    NCCL_OK(ncclCommGetAsyncError(comms[1], &async));
    if (async == ncclSuccess && warmFirst) usleep(1000);
  } while (warmFirst && async == ncclSuccess && now() - t2 < 10.0);
  if (warmFirst) EXPECT(async == ncclRemoteError); /* its connections are out of step now */
  NCCL_OK(ncclCommDestroy(comms[1]));
  for (int r = 0; r < n; r++) freeRank(&R[r]);
  printf("gpu.nccl abort (%s): %s waiting, ncclCommAbort took %.3f s%s\n",
         warmFirst ? "peer idle" : "peer never used the GPU",
         watch.streamBusy ? "kernel was" : callWaited ? "call was (connecting)" : "NOTHING was", took,
         callWaited ? " until the call returned" : "");
  EXPECT(waiting);
  EXPECT(took < 5.0);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  int n = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 1 || n > MAX_RANKS) {
    fprintf(stderr, "usage: %s initall|threads|graph|memalloc|suspend|grow|onesided N (1..%d) | abort | revoke\n", argv[0], MAX_RANKS);
    return 2;
  }
  requireGpu(argv[0]);
  /* CHORUS_TEST_EXPECT_WAY (way_log.h): after the comms' destroy, their copy-engine counts */
  if (!strcmp(mode, "initall") || !strcmp(mode, "threads")) {
    chrWayLogStart(mode);
    const int rc = !strcmp(mode, "initall") ? runInitAll(n) : runThreads(n);
    return rc ? rc : chrWayLogCheck(0, n) ? 1 : 0;
  }
  if (!strcmp(mode, "memalloc")) return runMemAlloc(n);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 7)
  if (!strcmp(mode, "suspend")) return runSuspend(n);
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 7)
  if (!strcmp(mode, "revoke")) return runRevoke();
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
  if (!strcmp(mode, "grow")) return runGrow(n);
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 0)
  if (!strcmp(mode, "onesided")) return runOneSided(n);
#endif
  if (!strcmp(mode, "graph")) return runGraph(n, argc > 3 ? (size_t)atol(argv[3]) : (size_t)1 << 19);
  if (!strcmp(mode, "abort")) return abortCase(0) || abortCase(1);
  fprintf(stderr, "usage: %s initall|threads|graph|memalloc|suspend|grow|onesided N | abort | revoke\n", argv[0]);
  return 2;
}
