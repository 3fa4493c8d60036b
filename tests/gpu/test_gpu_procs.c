/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_procs.c (gpu.procs.*): GPU buffers through the PUBLIC API with one PROCESS per rank, all
 * on GPU 0, as PyTorch runs NCCL (the device state is per rank, connected through CUDA IPC).
 *
 *   test_gpu_procs colls N   N processes (forked before any CUDA call, tools/launch.c), each
 *                            cudaSetDevice(0) then ncclCommInitRank: all-reduce, reduce-scatter,
 *                            all-gather, broadcast, reduce, send/recv and all-to-all on device buffers,
 *                            a few types, ops and sizes (0, 1, odd, a few MB), each rank checking its
 *                            own output against the host reference (nccl_cases.c)
 *   test_gpu_procs onesided N  a window per process (cudaMalloc, shared by CUDA IPC): three rounds of
 *                            every rank putting a block into every rank's window with ncclPutSignal,
 *                            a bare ncclSignal to the next rank, one ncclWaitSignal for all of them,
 *                            then each window as the stream copied it right after the wait, checked
 *                            (in the second round every rank but 0 puts 200 ms late)
 *   test_gpu_procs kill N    after a good all-reduce, rank N-1 kills itself (SIGKILL) while the others
 *                            wait for it inside an all-reduce kernel: each survivor's comm must report
 *                            an error (ncclCommGetAsyncError) within a deadline, its stream must drain,
 *                            its next call must fail, and ncclCommAbort must return promptly
 *   test_gpu_procs drain N   (with CHORUS_TEST_HOSTS) rank 0 sends 64 MiB to every other rank, waits for
 *                            its stream and destroys its comm at once (finalizing first when N is 3);
 *                            the receivers post their receives 300 ms late, so rank 0's kernel ends
 *                            with up to 16 MiB per peer still in its pinned slots, which only its net
 *                            proxy can deliver: every receiver must get every element, and no error
 *   test_gpu_procs mismatch N  (with CHORUS_TEST_HOSTS) after a good all-reduce, every rank all-reduces
 *                            a different count (a user error): the steps that cross hosts have sizes
 *                            the receivers do not expect, so each rank's stream must drain within 30 s
 *                            without any call into the library (the failing kernel aborts the rank's
 *                            other CTAs and its queued kernel), then its comm must report the failure
 *                            (ncclCommGetAsyncError, naming the cause) and abort return
 * Processes on one GPU are time-sliced by the driver (milliseconds per flag round trip), so the case
 * list is short. CHORUS_TEST_GPUS=G (default 1): rank r uses GPU r % G (exits 77 when fewer are
 * present); with ranks spread so, each process must end holding a context on its own GPU only (the
 * driver's primary-context state, after the watchdog has probed). CHORUS_TEST_VMM=1: the receive arenas are cuMemCreate memory (what PyTorch's expandable
 * segments give), which CUDA IPC cannot share: copy-engine sends then receive through staging
 * (device/copy_engine/ce_sends.cu). CHORUS_TEST_VMM=2: laid out as the expandable segments are, one reserved
 * range of chunks of the allocation granularity mapped side by side, each made with the POSIX file
 * descriptor handle type (what sharing by descriptor needs), so a receive spans several chunks;
 * with CHORUS_TEST_VMM_REMAP=1 the cases run twice, and between the rounds every rank maps fresh
 * chunks at its arena's addresses (an allocator that returned memory and took new): a sender still
 * writing through its mapping of the old chunks fails the second round. CHORUS_TEST_EXPECT_FD=1 (0):
 * each process must (must not) end up serving descriptors of its memory (an abstract Unix socket
 * named chorus-fd-*, device/copy_engine/ce_vmm.h), which says which of the two paths its receives took; one
 * digit per rank (e.g. 10: rank 0 must, rank 1 must not) where the ranks differ. CHORUS_TEST_EXPECT_WAY:
 * which way each rank's copy-engine receives went, from the counts its comm logs at destroy
 * (NCCL_DEBUG=INFO, subsystem P2P, into a file of its own): one letter per rank (one for all) for
 * the receives it posted, d (every one directly: an address or a CUDA IPC handle), f (by file
 * descriptor), s (staged), beside any it pulled from its sender's buffer (CHORUS_GPU_CE_PULL); p
 * (some pulled, none staged); - (none at all). CHORUS_TEST_SUSPEND=1: the all-reduces first (the
 * ring connects each rank to its neighbours only), then every rank suspends its comm (NCCL_SUSPEND_MEM,
 * checked through ncclCommMemStats) and resumes it, then every case: the device states are made again,
 * and a rank first connecting a peer it never spoke to before the suspend must get that peer's new
 * state, not the one it sent before. CHORUS_TEST_LATE_RANK=R: rank R sleeps 50 ms before each call, so its peers'
 * calls (and their streams' waits) come first: a copy-engine sender then issues from its agent thread
 * after its stream already waits (with CUDA_DEVICE_MAX_CONNECTIONS=1, Megatron's setting, every
 * stream shares one hardware queue). CHORUS_TEST_HOSTS=H (default 1): rank r acts out host r % H
 * (NCCL_HOSTID), so ranks of different hosts connect through the net plugin and the GPU path's
 * proxy (core/transport/dev_net.h) instead of CUDA IPC. Exits 77 (SKIP) without a CUDA device (asked in a child, so this process never
 * initialises CUDA before forking). Every wait has a deadline: a hang fails, naming the case.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "device/common/driver_entry.h"
#include "device/memory/vmm_layout.h"
#include "launch.h"
#include "nccl.h"
#include "nccl_cases.h"
#include "way_log.h"

#define MAX_RANKS 8
#define WAIT_S 60.0

/* CHORUS_TEST_GPUS (checked in main): the GPUs the ranks spread over. */
static int gpuOf(int rank) {
  const char* g = getenv("CHORUS_TEST_GPUS");
  int n = g && *g ? atoi(g) : 1;
  return rank % (n < 1 ? 1 : n);
}
#define SKIP 77

#define CUDA_OK(call)                                                                                 \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      fprintf(stderr, "FAIL rank %d %s:%d: %s: %s\n", myRank, __FILE__, __LINE__, #call,              \
              cudaGetErrorString(e_));                                                                \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

#define NCCL_OK(call)                                                                                 \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess) {                                                                          \
      fprintf(stderr, "FAIL rank %d %s:%d: %s: %s: %s\n", myRank, __FILE__, __LINE__, #call,          \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                                        \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

static int myRank = -1;

struct rankBufs {
  ncclComm_t comm;
  cudaStream_t s;
  char* send; /* device arenas, NC_ARENA each */
  char* recv;
  size_t recvTotal, recvChunk; /* a VMM arena's layout */
  unsigned char* up;
  unsigned char* down;
};

/* Waits for the stream with a deadline. 0 done, 1 CUDA error, 2 still running. */
static int waitStream(cudaStream_t s, double seconds) {
  const double deadline = chrLaunchNowSec() + seconds;
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady) {
      fprintf(stderr, "FAIL rank %d: stream: %s\n", myRank, cudaGetErrorString(e));
      return 1;
    }
    if (chrLaunchNowSec() > deadline) return 2;
    usleep(200);
  }
}

/* CHORUS_TEST_VMM: the receive arena through the driver's virtual memory API (cuMemCreate, mapped and
 * made accessible from this GPU), found through the runtime so the test links no libcuda. */
static int useVmm(void) {
  const char* v = getenv("CHORUS_TEST_VMM");
  return v && (*v == '1' || *v == '2') ? *v - '0' : 0;
}
static int vmmAlloc(struct rankBufs* B, size_t bytes, int dev) {
  CUdeviceptr va = 0;
  /* one chunk (1), or one per granularity unit, exportable (2) */
  const CUresult r = chrVmmLayout(dev, bytes, useVmm() == 2 ? 1 : 0, useVmm() == 2, &va, &B->recvTotal, &B->recvChunk);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "FAIL rank %d: a cuMemCreate arena of %zu bytes on GPU %d (CUresult %d)\n", myRank, bytes, dev,
            (int)r);
    return 1;
  }
  B->recv = (char*)(uintptr_t)va;
  return 0;
}

/* Fresh chunks at the VMM arena's addresses (CHORUS_TEST_VMM_REMAP); the stream is idle. */
static int vmmRemap(struct rankBufs* B, int dev) {
  const CUresult r = chrVmmMapChunks(dev, (CUdeviceptr)(uintptr_t)B->recv, B->recvTotal, B->recvChunk, useVmm() == 2, 1);
  if (r != CUDA_SUCCESS) fprintf(stderr, "FAIL rank %d: mapping fresh chunks at the arena (CUresult %d)\n", myRank, (int)r);
  return r != CUDA_SUCCESS;
}

/* 1 when this process listens on an abstract Unix socket named chorus-fd-* (its descriptor server,
 * device/copy_engine/ce_vmm.h): the socket inodes /proc/net/unix lists under that name, against this process's
 * descriptors. -1 when /proc cannot say. */
static int servesDescriptors(void) {
  FILE* f = fopen("/proc/net/unix", "r");
  if (f == NULL) return -1;
  unsigned long inodes[64];
  int n = 0;
  char line[512];
  while (fgets(line, sizeof line, f) && n < 64) {
    unsigned long inode = 0;
    char path[256] = "";
    if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &inode, path) == 2 && strncmp(path, "@chorus-fd-", 11) == 0)
      inodes[n++] = inode;
  }
  fclose(f);
  int found = 0;
  for (int fd = 0; fd < 4096 && !found; fd++) {
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    unsigned long inode = 0;
    if (sscanf(target, "socket:[%lu]", &inode) == 1)
      for (int i = 0; i < n; i++) found |= inodes[i] == inode;
  }
  return found;
}

static int setup(struct rankBufs* B, int rank, int n, const ncclUniqueId* id) {
  myRank = rank;
  memset(B, 0, sizeof(*B));
  CUDA_OK(cudaSetDevice(gpuOf(rank)));
  CUDA_OK(cudaStreamCreateWithFlags(&B->s, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void**)&B->send, NC_ARENA));
  if (useVmm()) {
    if (vmmAlloc(B, NC_ARENA, gpuOf(rank))) return 1;
  } else {
    CUDA_OK(cudaMalloc((void**)&B->recv, NC_ARENA));
  }
  B->up = malloc(NC_ARENA);
  B->down = malloc(NC_ARENA);
  if (B->up == NULL || B->down == NULL) return 1;
  NCCL_OK(ncclCommInitRank(&B->comm, n, *id, rank));
  int dev = -1;
  NCCL_OK(ncclCommCuDevice(B->comm, &dev));
  if (dev != gpuOf(rank)) {
    fprintf(stderr, "FAIL rank %d: comm on device %d, expected %d\n", rank, dev, gpuOf(rank));
    return 1;
  }
  return 0;
}

static void release(struct rankBufs* B) {
  cudaStreamDestroy(B->s);
  cudaFree(B->send);
  if (!useVmm()) cudaFree(B->recv); /* a VMM arena stays mapped until the process exits */
  free(B->up);
  free(B->down);
}

static ncclRedOp_t redOp(int op) {
  static const ncclRedOp_t builtin[OP_PREMUL_HOST] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  return op < OP_PREMUL_HOST ? builtin[op] : ncclSum;
}

/* One op of every rank: upload, call, wait, download, check. Returns 0 when the output is right. */
static int runOp(struct rankBufs* B, int n, const struct ncCase* c) {
  const struct ncOp* o = &c->ops[0];
  const int r = myRank;
  struct ncLayout l;
  ncLayoutOf(o, n, r, &l);
  CUDA_OK(cudaMemsetAsync(B->recv + l.regionOff, NC_POISON, l.regionBytes, B->s));
  const size_t inBytes = l.inElems * (size_t)ncTypeSize(o->type);
  if (inBytes) {
    ncFillInput(o, n, r, B->up + l.inOff, l.inElems);
    CUDA_OK(cudaMemcpyAsync((l.inRecvArena ? B->recv : B->send) + l.inOff, B->up + l.inOff, inBytes,
                            cudaMemcpyHostToDevice, B->s));
  }
  char* in = (l.inRecvArena ? B->recv : B->send) + l.inOff;
  char* out = B->recv + l.outOff;
  const char* late = getenv("CHORUS_TEST_LATE_RANK");
  if (late && *late && atoi(late) == r) usleep(50 * 1000);
  const ncclDataType_t t = (ncclDataType_t)o->type;
  const size_t cnt = o->count, block = cnt * (size_t)ncTypeSize(o->type);
  ncclResult_t res = ncclSuccess;
  switch (o->func) {
    case F_ALLREDUCE: res = ncclAllReduce(in, out, cnt, t, redOp(o->op), B->comm, B->s); break;
    case F_REDUCESCATTER: res = ncclReduceScatter(in, out, cnt, t, redOp(o->op), B->comm, B->s); break;
    case F_ALLGATHER: res = ncclAllGather(in, out, cnt, t, B->comm, B->s); break;
    case F_BROADCAST: res = ncclBroadcast(r == o->root ? in : out, out, cnt, t, o->root, B->comm, B->s); break;
    case F_REDUCE: res = ncclReduce(in, out, cnt, t, redOp(o->op), o->root, B->comm, B->s); break;
    case F_RING:
      res = ncclGroupStart();
      if (res == ncclSuccess) res = ncclRecv(out, cnt, t, (r - 1 + n) % n, B->comm, B->s);
      if (res == ncclSuccess) res = ncclSend(in, cnt, t, (r + 1) % n, B->comm, B->s);
      if (res == ncclSuccess) res = ncclGroupEnd();
      break;
    case F_PAIRS: {
      int order[2 * MAX_RANKS];
      ncPairsOrder(o, n, r, order);
      res = ncclGroupStart();
      for (int i = 0; i < 2 * n && res == ncclSuccess; i++) {
        const int peer = order[i] % n;
        if (order[i] < n) res = ncclSend(in + (size_t)peer * block, cnt, t, peer, B->comm, B->s);
        else res = ncclRecv(out + (size_t)peer * block, cnt, t, peer, B->comm, B->s);
      }
      if (res == ncclSuccess) res = ncclGroupEnd();
      break;
    }
    case F_ALLTOALL: res = ncclAlltoAll(in, out, cnt, t, B->comm, B->s); break;
    default: break;
  }
  if (res != ncclSuccess) {
    fprintf(stderr, "FAIL n=%d %s: rank %d: %s: %s\n", n, c->name, r, ncclGetErrorString(res), ncclGetLastError(B->comm));
    return 1;
  }
  int w = waitStream(B->s, WAIT_S);
  if (w == 2) fprintf(stderr, "FAIL n=%d %s: rank %d still running after %.0f s (hang)\n", n, c->name, r, WAIT_S);
  if (w) return 1;
  CUDA_OK(cudaMemcpyAsync(B->down + l.regionOff, B->recv + l.regionOff, l.regionBytes, cudaMemcpyDeviceToHost, B->s));
  CUDA_OK(cudaStreamSynchronize(B->s));
  char msg[256];
  if (ncCheck(o, n, r, B->down + l.regionOff, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "FAIL n=%d %s: rank %d: %s\n", n, c->name, r, msg);
    return 1;
  }
  return 0;
}

static struct ncOp mkOp(int func, int type, int op, size_t count, int root, int inPlace, uint64_t seed) {
  struct ncOp o;
  memset(&o, 0, sizeof(o));
  o.func = func;
  o.type = type;
  o.op = op;
  o.count = count;
  o.root = root;
  o.inPlace = inPlace;
  o.seed = seed;
  return o;
}

/* ---- colls ---- */

/* With ranks spread over GPUs, a process must hold a context only on its rank's GPU. A thread of
 * Chorus that never chose a device (the watchdog, whose first probe comes 100 ms after the first
 * launch) once restored "device 0" after its work, which creates GPU 0's primary context there:
 * it stalled the kernels running on GPU 0 for milliseconds and held its memory (device/common/dev_scope.h).
 * Called after the watchdog has probed a few times. */
static int strayContexts(int rank) {
  typedef CUresult (*deviceGetFn)(CUdevice*, int);
  typedef CUresult (*ctxStateFn)(CUdevice, unsigned*, int*);
  const deviceGetFn deviceGet = (deviceGetFn)chrDevDriverEntry("cuDeviceGet");
  const ctxStateFn ctxState = (ctxStateFn)chrDevDriverEntry("cuDevicePrimaryCtxGetState");
  int ndev = 0;
  if (deviceGet == NULL || ctxState == NULL || cudaGetDeviceCount(&ndev) != cudaSuccess) {
    fprintf(stderr, "FAIL rank %d: cannot ask the driver which GPUs this process holds contexts on\n", rank);
    return 1;
  }
  int stray = 0;
  for (int d = 0; d < ndev; d++) {
    CUdevice dev;
    unsigned flags = 0;
    int active = 0;
    if (d == gpuOf(rank) || deviceGet(&dev, d) != CUDA_SUCCESS || ctxState(dev, &flags, &active) != CUDA_SUCCESS)
      continue;
    if (active) {
      fprintf(stderr, "FAIL rank %d (GPU %d): this process holds a context on GPU %d, which it never uses\n", rank,
              gpuOf(rank), d);
      stray++;
    }
  }
  return stray;
}

/* CHORUS_TEST_SUSPEND=1, between the rounds: the rank's device state freed and, after the resume,
 * made again at the next call. */
static int suspendResume(struct rankBufs* B, int rank) {
  uint64_t held = 0, flag = 1, after = 1;
  NCCL_OK(ncclCommMemStats(B->comm, ncclStatGpuMemSuspend, &held));
  NCCL_OK(ncclCommMemStats(B->comm, ncclStatGpuMemSuspended, &flag));
  NCCL_OK(ncclCommSuspend(B->comm, NCCL_SUSPEND_MEM));
  NCCL_OK(ncclCommMemStats(B->comm, ncclStatGpuMemSuspend, &after));
  uint64_t suspended = 0;
  NCCL_OK(ncclCommMemStats(B->comm, ncclStatGpuMemSuspended, &suspended));
  const ncclResult_t refused = ncclAllReduce(B->send, B->recv, 1, ncclFloat32, ncclSum, B->comm, B->s);
  NCCL_OK(ncclCommResume(B->comm));
  if (held == 0 || flag != 0 || after != 0 || suspended != 1 || refused != ncclInvalidUsage) {
    fprintf(stderr, "FAIL rank %d: suspend: %llu bytes suspendable before (flag %llu), %llu after (flag %llu), "
            "a call while suspended returned %s\n", rank, (unsigned long long)held, (unsigned long long)flag,
            (unsigned long long)after, (unsigned long long)suspended, ncclGetErrorString(refused));
    return 1;
  }
  if (rank == 0) printf("gpu.procs suspend: rank 0 held %llu bytes of GPU memory, freed by the suspend\n",
                        (unsigned long long)held);
  return 0;
}

static int collsRank(int rank, int n, const ncclUniqueId* id, void* arg) {
  (void)arg;
  struct rankBufs B;
  char tag[16];
  snprintf(tag, sizeof tag, "r%d", rank);
  chrWayLogStart(tag);
  if (setup(&B, rank, n, id)) return 1;
  const struct ncOp ops[] = {
      mkOp(F_ALLREDUCE, ncclFloat32, OP_SUM, 1001, 0, 0, 1),            /* LL, odd */
      mkOp(F_ALLREDUCE, ncclInt32, OP_MAX, 0, 0, 0, 2),                 /* moves nothing */
      mkOp(F_ALLREDUCE, ncclFloat32, OP_SUM, (1u << 20) + 3, 0, 1, 3),  /* 4 MB, SIMPLE, in place */
      mkOp(F_ALLREDUCE, ncclUint8, OP_MIN, 1, 0, 0, 4),
      mkOp(F_ALLREDUCE, ncclFloat32, OP_AVG, 100003, 0, 0, 5),
      mkOp(F_REDUCESCATTER, ncclBfloat16, OP_SUM, 777, 0, 0, 6),
      mkOp(F_ALLGATHER, ncclInt8, OP_SUM, 1, 0, 0, 7),
      mkOp(F_ALLGATHER, ncclFloat16, OP_SUM, (1u << 19) + 5, 0, 0, 8), /* 1 MB per rank */
      mkOp(F_BROADCAST, ncclUint8, OP_SUM, (3u << 20) + 1, 1 % n, 0, 9),
      mkOp(F_REDUCE, ncclInt64, OP_PROD, 999, n - 1, 0, 10),
      mkOp(F_RING, ncclFloat64, OP_SUM, 12345, 0, 0, 11),
      mkOp(F_PAIRS, ncclInt32, OP_SUM, 333, 0, 0, 12),
      mkOp(F_ALLTOALL, ncclInt32, OP_SUM, 4099, 0, 0, 13),
  };
  const int nOps = (int)(sizeof(ops) / sizeof(ops[0]));
  const char* remap = getenv("CHORUS_TEST_VMM_REMAP");
  const char* suspend = getenv("CHORUS_TEST_SUSPEND");
  const int suspending = suspend && *suspend == '1';
  const int rounds = (useVmm() && remap && *remap == '1') || suspending ? 2 : 1;
  int failures = 0;
  const double t0 = chrLaunchNowSec();
  for (int round = 0; round < rounds && failures == 0; round++) {
    if (round > 0 && suspending) failures += suspendResume(&B, rank);
    else if (round > 0 && vmmRemap(&B, gpuOf(rank))) failures++;
    for (int i = 0; i < nOps && failures < 5; i++) {
      if (suspending && round == 0 && ops[i].func != F_ALLREDUCE) continue;
      struct ncCase c;
      ncMakeCase(&c, &ops[i], 1, n);
      failures += runOp(&B, n, &c);
    }
  }
  const char* expectFd = getenv("CHORUS_TEST_EXPECT_FD");
  if (expectFd && *expectFd && failures == 0) {
    const int expect = (strlen(expectFd) > (size_t)rank ? expectFd[rank] : expectFd[0]) == '1';
    const int serves = servesDescriptors();
    if (serves != expect) {
      fprintf(stderr, "FAIL rank %d: this process %s descriptors of its memory, expected %s\n", rank,
              serves < 0 ? "cannot tell (no /proc) whether it serves" : serves ? "serves" : "does not serve",
              expect ? "it to (its receives shared by file descriptor)" : "it not to (no receive shared that way)");
      failures++;
    }
  }
  if (failures == 0 && gpuOf(1) != gpuOf(0)) { /* ranks spread over GPUs (CHORUS_TEST_GPUS) */
    usleep(350 * 1000);                          /* the watchdog probes every 100 ms */
    failures += strayContexts(rank);
  }
  ncclResult_t async = ncclInProgress;
  NCCL_OK(ncclCommGetAsyncError(B.comm, &async));
  if (async != ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: async error %s: %s\n", rank, ncclGetErrorString(async), ncclGetLastError(B.comm));
    failures++;
  }
  NCCL_OK(ncclCommDestroy(B.comm));
  if (failures == 0) failures += chrWayLogCheck(rank, 1);
  release(&B);
  if (rank == 0) printf("gpu.procs colls n=%d: %d cases%s, %d failures (rank 0), %.2f s\n", n, nOps,
                        suspending ? ", the all-reduces before a suspend and resume, all after"
                        : rounds > 1 ? " twice, fresh chunks at the arena between" : "",
                        failures, chrLaunchNowSec() - t0);
  return failures ? 1 : 0;
}

/* ---- onesided ---- */

static float blockValue(int from, int round, size_t i) { return (float)(from * 1000 + round * 100) + (float)(i % 89); }

static int oneSidedRank(int rank, int n, const ncclUniqueId* id, void* arg) {
  (void)arg;
  enum { BLOCK = 30011 };
  struct rankBufs B;
  if (setup(&B, rank, n, id)) return 1;
  const size_t bytes = (size_t)n * BLOCK * sizeof(float);
  float* win = NULL;
  float* seen = NULL; /* the window as the stream saw it right after the wait */
  float* host = malloc(bytes);
  if (host == NULL) return 1;
  CUDA_OK(cudaMalloc((void**)&win, bytes));
  CUDA_OK(cudaMalloc((void**)&seen, bytes));
  ncclWindow_t w = NULL;
  NCCL_OK(ncclCommWindowRegister(B.comm, win, bytes, &w, 0));
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < BLOCK; i++) host[i] = blockValue(rank, round, i);
    CUDA_OK(cudaMemcpy(B.send, host, BLOCK * sizeof(float), cudaMemcpyHostToDevice));
    /* Round 1: every rank but 0 puts 200 ms late, so rank 0's stream must really wait for them. */
    if (round == 1 && rank != 0) usleep(200 * 1000);
    for (int p = 0; p < n; p++)
      NCCL_OK(ncclPutSignal(B.send, BLOCK, ncclFloat32, p, w, (size_t)rank * BLOCK * sizeof(float), 0, 0, 0, B.comm,
                            B.s));
    NCCL_OK(ncclSignal((rank + 1) % n, 0, 0, 0, B.comm, B.s));
    ncclWaitSignalDesc_t descs[MAX_RANKS];
    for (int p = 0; p < n; p++) {
      descs[p].opCnt = p == (rank + n - 1) % n ? 2 : 1;
      descs[p].peer = p;
      descs[p].sigIdx = 0;
      descs[p].ctx = 0;
    }
    NCCL_OK(ncclWaitSignal(n, descs, B.comm, B.s));
    CUDA_OK(cudaMemcpyAsync(seen, win, bytes, cudaMemcpyDeviceToDevice, B.s));
    if (waitStream(B.s, WAIT_S)) {
      fprintf(stderr, "FAIL rank %d: one-sided round %d did not finish\n", rank, round);
      return 1;
    }
    CUDA_OK(cudaMemcpy(host, seen, bytes, cudaMemcpyDeviceToHost));
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < BLOCK; i++)
        if (host[(size_t)p * BLOCK + i] != blockValue(p, round, i)) {
          fprintf(stderr, "FAIL rank %d round %d: element %zu of rank %d's block is %g, expected %g\n", rank, round, i,
                  p, host[(size_t)p * BLOCK + i], blockValue(p, round, i));
          return 1;
        }
  }
  /* Every rank is done with every window before any is freed. */
  NCCL_OK(ncclAllReduce(B.send, B.send, 1, ncclFloat32, ncclSum, B.comm, B.s));
  if (waitStream(B.s, WAIT_S)) return 1;
  NCCL_OK(ncclCommWindowDeregister(B.comm, w));
  NCCL_OK(ncclCommDestroy(B.comm));
  CUDA_OK(cudaFree(win));
  CUDA_OK(cudaFree(seen));
  release(&B);
  free(host);
  if (rank == 0) printf("gpu.procs onesided n=%d: 3 rounds of %d puts and %d signals through CUDA IPC, every window right\n",
                        n, n * n, n);
  return 0;
}

/* ---- kill ---- */

static int killRank(int rank, int n) {
  const int victim = n - 1;
  struct rankBufs B;
  ncclUniqueId id;
  if (chrLaunchReadFull(STDIN_FILENO, &id, sizeof(id)) != 0) return 1;
  if (setup(&B, rank, n, &id)) return 1;
  struct ncCase warm;
  const struct ncOp w = mkOp(F_ALLREDUCE, ncclFloat32, OP_SUM, 1000, 0, 0, 21);
  ncMakeCase(&warm, &w, 1, n);
  if (runOp(&B, n, &warm)) return 1; /* every rank has its GPU state and all its connections */
  if (rank == victim) {
    usleep(500 * 1000); /* the others are inside their next all-reduce by now */
    fflush(stdout);
    fflush(stderr);
    raise(SIGKILL);
  }
  /* 16 MB: more than the connections hold, so the kernel waits for the victim whatever the protocol. */
  const size_t count = 4u << 20;
  const double t0 = chrLaunchNowSec();
  ncclResult_t res = ncclAllReduce(B.send, B.recv, count, ncclFloat32, ncclSum, B.comm, B.s);
  ncclResult_t async = ncclSuccess;
  while (res == ncclSuccess && chrLaunchNowSec() - t0 < 30.0) {
    NCCL_OK(ncclCommGetAsyncError(B.comm, &async));
    if (async != ncclSuccess) break;
    usleep(10 * 1000);
  }
  const double detected = chrLaunchNowSec() - t0;
  if (res == ncclSuccess && async == ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: no error %.0f s after rank %d was killed (hang)\n", rank, detected, victim);
    return 1;
  }
  const int drained = waitStream(B.s, 15.0);
  if (drained != 0) {
    fprintf(stderr, "FAIL rank %d: the stream did not drain after the error (%s)\n", rank,
            drained == 2 ? "still running after 15 s" : "CUDA error");
    return 1;
  }
  /* The comm has failed: the next call says so instead of launching. */
  ncclResult_t next = ncclAllReduce(B.send, B.recv, 16, ncclFloat32, ncclSum, B.comm, B.s);
  if (next == ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: a call after the peer's death was accepted\n", rank);
    return 1;
  }
  const double t1 = chrLaunchNowSec();
  NCCL_OK(ncclCommAbort(B.comm));
  const double aborted = chrLaunchNowSec() - t1;
  release(&B);
  if (aborted > 10.0) {
    fprintf(stderr, "FAIL rank %d: ncclCommAbort took %.1f s\n", rank, aborted);
    return 1;
  }
  if (rank == 0)
    printf("gpu.procs kill n=%d: rank 0 saw %s after %.2f s (call: %s), next call %s, abort %.3f s\n", n,
           ncclGetErrorString(res != ncclSuccess ? res : async), detected, ncclGetErrorString(res),
           ncclGetErrorString(next), aborted);
  return 0;
}

/* Forks the ranks before this process makes the unique id (no CUDA here at all), hands the id to each
 * through its stdin, and checks: the victim died of SIGKILL, every other rank exited 0. */
static int runKill(int n, int hosts) {
  pid_t pids[MAX_RANKS];
  int fds[MAX_RANKS];
  for (int r = 0; r < n; r++) {
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      close(p[1]);
      dup2(p[0], STDIN_FILENO);
      close(p[0]);
      for (int q = 0; q < r; q++) close(fds[q]);
      if (hosts > 1) {
        char host[32];
        snprintf(host, sizeof host, "host%d", r % hosts);
        setenv("NCCL_HOSTID", host, 1);
      }
      alarm(120); /* never outlive a broken parent */
      _exit(killRank(r, n));
    }
    close(p[0]);
    pids[r] = pid;
    fds[r] = p[1];
  }
  ncclUniqueId id;
  int bad = ncclGetUniqueId(&id) != ncclSuccess;
  for (int r = 0; r < n; r++) {
    if (!bad && write(fds[r], &id, sizeof(id)) != (ssize_t)sizeof(id)) bad = 1;
    close(fds[r]);
  }
  const double deadline = chrLaunchNowSec() + 100.0;
  int done[MAX_RANKS] = {0}, left = n, status[MAX_RANKS];
  while (left > 0 && chrLaunchNowSec() < deadline) {
    for (int r = 0; r < n; r++)
      if (!done[r] && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
        done[r] = 1;
        left--;
      }
    chrLaunchSleepMs(20);
  }
  for (int r = 0; r < n; r++) {
    if (!done[r]) {
      fprintf(stderr, "FAIL: rank %d still running after 100 s (hang)\n", r);
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status[r], 0);
      bad = 1;
      continue;
    }
    if (r == n - 1) {
      if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == SKIP) return SKIP;
      if (!WIFSIGNALED(status[r]) || WTERMSIG(status[r]) != SIGKILL) {
        fprintf(stderr, "FAIL: the victim (rank %d) did not die of SIGKILL (status 0x%x)\n", r, status[r]);
        bad = 1;
      }
    } else if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
      if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == SKIP) return SKIP;
      fprintf(stderr, "FAIL: survivor rank %d ended with status 0x%x\n", r, status[r]);
      bad = 1;
    }
  }
  return bad;
}

static int mismatchRank(int rank, int n, const ncclUniqueId* id, void* arg) {
  (void)arg;
  struct rankBufs B;
  if (setup(&B, rank, n, id)) return 1;
  const size_t count = 1u << 20;
  float* buf = (float*)B.send;
  cudaStream_t s = B.s;
  ncclComm_t comm = B.comm;
  CUDA_OK(cudaMemset(buf, 0, 2 * count * sizeof(float)));
  NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s));
  if (waitStream(s, WAIT_S) != 0) return 1;
  /* Counts that differ by rank, then a second call queued behind the first. */
  NCCL_OK(ncclAllReduce(buf, buf, count + 4096 * (size_t)rank, ncclFloat32, ncclSum, comm, s));
  NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, s));
  const double t0 = chrLaunchNowSec();
  const int drained = waitStream(s, 30.0); /* no library call meanwhile */
  const double took = chrLaunchNowSec() - t0;
  if (drained != 0) {
    fprintf(stderr, "FAIL rank %d: the stream did not drain after all-reduces of different counts (%s)\n", rank,
            drained == 2 ? "still running after 30 s" : "CUDA error");
    return 1;
  }
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  if (async == ncclSuccess) {
    fprintf(stderr, "FAIL rank %d: the stream drained, but the comm reports no error\n", rank);
    return 1;
  }
  printf("gpu.procs mismatch n=%d: rank %d saw %s after %.2f s: %s\n", n, rank, ncclGetErrorString(async), took,
         ncclGetLastError(comm));
  const double t1 = chrLaunchNowSec();
  NCCL_OK(ncclCommAbort(comm));
  if (chrLaunchNowSec() - t1 > 10.0) {
    fprintf(stderr, "FAIL rank %d: ncclCommAbort took %.1f s\n", rank, chrLaunchNowSec() - t1);
    return 1;
  }
  release(&B);
  return 0;
}

static float drainValue(size_t i) { return (float)(i % 1000003u) - 500000.0f; }

static int drainRank(int rank, int n, const ncclUniqueId* id, void* arg) {
  (void)arg;
  myRank = rank;
  const size_t count = 16u << 20; /* 64 MiB of floats */
  float* host = malloc(count * sizeof(float));
  float* buf = NULL;
  cudaStream_t s;
  ncclComm_t comm;
  if (host == NULL) return 1;
  CUDA_OK(cudaSetDevice(gpuOf(rank)));
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void**)&buf, count * sizeof(float)));
  NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
  if (rank == 0) {
    for (size_t i = 0; i < count; i++) host[i] = drainValue(i);
    CUDA_OK(cudaMemcpy(buf, host, count * sizeof(float), cudaMemcpyHostToDevice));
    NCCL_OK(ncclGroupStart());
    for (int p = 1; p < n; p++) NCCL_OK(ncclSend(buf, count, ncclFloat32, p, comm, s));
    NCCL_OK(ncclGroupEnd());
    if (waitStream(s, WAIT_S) != 0) return 1;
    const double t0 = chrLaunchNowSec();
    if (n == 3) NCCL_OK(ncclCommFinalize(comm));
    NCCL_OK(ncclCommDestroy(comm));
    printf("gpu.procs drain n=%d: rank 0's %s returned after %.3f s\n", n, n == 3 ? "finalize and destroy" : "destroy",
           chrLaunchNowSec() - t0);
  } else {
    usleep(300 * 1000);
    CUDA_OK(cudaMemset(buf, 0, count * sizeof(float)));
    NCCL_OK(ncclRecv(buf, count, ncclFloat32, 0, comm, s));
    if (waitStream(s, WAIT_S) != 0) return 1;
    ncclResult_t async = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess) {
      fprintf(stderr, "FAIL rank %d: the receive from rank 0 failed: %s: %s\n", rank, ncclGetErrorString(async),
              ncclGetLastError(comm));
      return 1;
    }
    CUDA_OK(cudaMemcpy(host, buf, count * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; i++)
      if (host[i] != drainValue(i)) {
        fprintf(stderr, "FAIL rank %d: element %zu of rank 0's send is %g, expected %g\n", rank, i, (double)host[i],
                (double)drainValue(i));
        return 1;
      }
    NCCL_OK(ncclCommDestroy(comm));
  }
  cudaFree(buf);
  cudaStreamDestroy(s);
  free(host);
  return 0;
}

/* Are there the GPUs CHORUS_TEST_GPUS asks for (default 1)? Asked in a child: this process must not
 * initialise CUDA before it forks the ranks. */
static int haveGpus(int want) {
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    _exit(e == cudaSuccess && n >= want ? 0 : SKIP);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return 0;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 2 || n > MAX_RANKS ||
      (strcmp(mode, "colls") && strcmp(mode, "kill") && strcmp(mode, "onesided") && strcmp(mode, "drain") &&
       strcmp(mode, "mismatch"))) {
    fprintf(stderr, "usage: %s colls|kill|onesided|drain|mismatch N (2..%d)\n", argv[0], MAX_RANKS);
    return 2;
  }
  const char* g = getenv("CHORUS_TEST_GPUS");
  const int want = g && *g ? atoi(g) : 1;
  if (want < 1 || want > MAX_RANKS) {
    fprintf(stderr, "%s: CHORUS_TEST_GPUS=%s (1..%d)\n", argv[0], g, MAX_RANKS);
    return 2;
  }
  if (!haveGpus(want)) {
    printf("%s: SKIP: fewer than %d CUDA device(s)\n", argv[0], want);
    return SKIP;
  }
  const char* h = getenv("CHORUS_TEST_HOSTS");
  const int hosts = h && *h ? atoi(h) : 1;
  if (hosts < 1 || hosts > n) {
    fprintf(stderr, "%s: CHORUS_TEST_HOSTS=%s (1..%d)\n", argv[0], h, n);
    return 2;
  }
  if (!strcmp(mode, "kill")) return runKill(n, hosts);
  if (!strcmp(mode, "onesided")) return chrLaunchRanks(n, hosts, 100, oneSidedRank, NULL) ? 1 : 0;
  if (!strcmp(mode, "drain")) return chrLaunchRanks(n, hosts, 100, drainRank, NULL) ? 1 : 0;
  if (!strcmp(mode, "mismatch")) return chrLaunchRanks(n, hosts, 100, mismatchRank, NULL) ? 1 : 0;
  return chrLaunchRanks(n, hosts, 100, collsRank, NULL) ? 1 : 0;
}
