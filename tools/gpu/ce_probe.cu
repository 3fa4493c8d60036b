/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_probe.cu (chorus-ce-probe): a standalone prototype of copy-engine sends between two processes,
 * each with its own GPU, as docs/perf/gpu-2gpu.md ("Next", item 0) designs them, measured beside the
 * copy engine's own ceiling in the same run. Nothing of Chorus: it answers whether the design is
 * worth building into the library before it is.
 *
 * Two ranks (processes forked before any CUDA call), rank r on GPU r, each sending `bytes` to the
 * other and receiving as much from it, `iters` times per size (the traffic of a 2-rank send/recv in
 * nccl-tests). Per transfer and direction, a mailbox slot in host memory both processes map
 * (hostdev/ce_mailbox.h, whose protocol tests/unit/test_ce_mailbox.c checks on the CPU):
 *   - each end signals on its stream that its data is in place (an IPC event record, or a write of
 *     its `ready` word), for every transfer of the group before anything else, and records one
 *     event of its stream for the group's copies to wait for;
 *   - each end posts (its buffer's CUDA IPC handle, its event's index) with one compare-and-swap on
 *     the slot's state, which tells who came first; no one waits on the host for the peer;
 *   - the first makes its stream wait (cuStreamWaitValue64) for its `done` word (host memory both
 *     processes registered with the GPU) to reach the transfer's number;
 *   - the second, on a copy stream of the direction's (one per direction: one stream for both would
 *     queue a copy behind one that waits for it): waits for the first's signal and for the group's event of its own
 *     stream, copies (cudaMemcpyAsync between the two GPUs, one side IPC-opened), writes the first's
 *     `done` word (cuStreamWriteValue64, ordered after the copy), and its own stream waits for the
 *     copy stream.
 * Then the data is checked (every element, on the GPU). The ceiling lines: the same buffers copied
 * with plain cudaMemcpyAsync back to back, both ranks at once, pushing (each rank copies its data
 * into the peer's buffer) and pulling.
 *
 *   chorus-ce-probe [--min 64M] [--max 8G] [--iters 5] [--oneway 0|1] [--signal event|value]
 * --threads 1: the two ranks are threads of one process (a one-process communicator over two GPUs):
 * raw pointers and plain events instead of CUDA IPC.
 * --signal value: instead of the IPC event, the first end's stream writes its `ready` word
 * (cuStreamWriteValue64, after its prior work) before it posts, and the second's copy stream waits
 * for it (cuStreamWaitValue64): no event ring to guard, nothing to open; both ways measured.
 * --issuer agent: the fifth session's design between processes: the sender issues every copy, in
 * order, from its own call when the receiver has posted, else from an agent thread of its process
 * that the receiver's post wakes (a futex); both streams wait for their done word, and the copy waits
 * for the sender's group point as a value. (The library no longer issues from an agent: on streams
 * that share a hardware queue the agent's copy can stand behind work that waits for it, which
 * PyTorch hit; device/copy_engine/ce_sends.h. The probe keeps it as a bandwidth ceiling, with few streams.)
 * --issuer sender|receiver: that end always issues the copy (on its own GPU), waiting on the host for
 * the other end's post; an experiment on which GPU should drive a copy (the second to arrive is
 * either, and a GPU that drives both directions at once may not move both at full rate: the
 * pushpull_onegpu line measures that with plain copies).
 * --beside 1: also time an HBM copy kernel on each GPU (its own buffers, about half the SMs) alone and
 * while both ranks push to each other on the copy engine, and the pushes beside it: whether the
 * engine's traffic slows SM work running at the same time and the other way round (an all-to-all's
 * self copy and peer transfers, or an all-reduce that hands part of its bytes to the engine).
 * --mixed P (1-99): both ranks push every byte into the peer at once, first with the SMs alone (a
 * copy kernel storing into the peer's buffer, --mixed-ctas CTAs of 512 threads, default 64), then
 * with the SMs pushing P% while the copy engine pushes the rest beside them: whether NVLink carries
 * more with both than with either (an all-reduce whose reduce-scatter runs on the SMs while the
 * engine moves the previous chunk's gather, docs/perf/gpu-2gpu.md, Next 00ac). Checked like the rest.
 * --allreduce pull|read|direct|push: only a 2-rank float all-reduce whose transfers run on the copy
 * engines, per size, checked (ce_probe_allreduce.cu; --ar-chunk, --ar-ctas).
 * --oneway 1: rank 0 only sends and rank 1 only receives (a 2-rank broadcast's traffic; the ceiling
 * lines then time rank 0 pushing and rank 1 pulling, one at a time).
 * Prints "key value unit" lines: ce_sendrecv_<size> (ce_send_ one way; µs per iteration, GB/s per direction),
 * push_<size>, pull_<size>, smpush_<size> and mixed<P>_<size> (--mixed), the copies each role issued, the first IPC open's time, and
 * wrong_<size> (elements that differ; must be 0). Needs 2 GPUs with peer access.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <atomic>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ce_probe_allreduce.h"
#include "hostdev/ce_mailbox.h"

#define CK(call)                                                                                    \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "chorus-ce-probe rank %d: %s: %s\n", gRank, #call, cudaGetErrorString(e_));    \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

enum { SLOTS = CHR_CE_SLOTS, SEND = CHR_CE_SEND, RECV = CHR_CE_RECV };

/* What one end of a transfer posts (as the bytes of a chrCePost). */
struct Post {
  cudaIpcMemHandle_t mem; /* its buffer (the sender's source, the receiver's destination) */
  uint64_t offset;
  int event;              /* index into the poster's event ring for this direction */
};
static_assert(sizeof(struct Post) <= CHR_CE_POST_BYTES, "a post outgrew chrCePost");

struct Shared {
  struct chrCeMailbox box[2]; /* box[d]: rank d sends, the other receives (hostdev/ce_mailbox.h) */
  cudaIpcMemHandle_t buf[2][2];        /* [rank][SEND or RECV] */
  cudaIpcEventHandle_t ev[2][2][SLOTS]; /* [rank][direction][slot] */
  std::atomic<int> barrier[2];
  std::atomic<int> stop;
  uint64_t copies[2][2];               /* [rank][role]: copies this rank issued as the second, by role */
  double openUs[2];
  void* rawBuf[2][2];              /* --threads: [rank][SEND or RECV] */
  cudaEvent_t rawEv[2][2][SLOTS];  /* --threads: [rank][direction][slot] */
  std::atomic<int> registered; /* --threads: 0, 1 while the first thread registers, 2 once it has */
  uint64_t point[2][8];        /* --issuer agent: point[rank][0], the last group its user stream passed */
  uint32_t bell[2];            /* --issuer agent: rank r's agent sleeps on bell[r] (a futex) */
  uint64_t arWord[2][4];       /* --allreduce: [rank][in the call, done, pushed, taken], written by that rank's streams */
};

static __thread int gRank; /* per rank: a process, or a thread with --threads */
static int gThreads;       /* --threads: the two ranks are threads of one process (raw pointers and events) */
static int gOneWay; /* --oneway: rank 0 sends, rank 1 receives (a 2-rank broadcast's traffic) */
static int gBeside; /* --beside: a copy kernel alone and beside the engine's pushes */
static int gMixed;  /* --mixed P: the SMs push P% of each rank's bytes into the peer while the engine pushes the rest */
static int gMixedCtas = 64; /* --mixed-ctas: the SMs' push kernel's CTAs */
static int gArMode = -1;    /* --allreduce pull|read|direct|push: only the all-reduce prototype (ce_probe_allreduce.cu) */
static uint64_t gArChunk = 8ull << 20; /* --ar-chunk: its reduce-scatter's chunk */
static int gArCtas = 132;   /* --ar-ctas: its adding kernels' CTAs */
static __thread int* gRoundPtr; /* the rank's barrier round, for the prototype's barriers */
static int gValue;  /* --signal value: the first end's stream writes ready = k, the second's copy waits for it,
                       instead of an IPC event (no event to reuse, nothing to open) */
static int gIssuer = -1; /* --issuer sender|receiver: that end always issues the copy, waiting on the host for the
                            other's post (an experiment: which GPU drives the copy); -1: the second to arrive;
                            AGENT: the sender issues without waiting, from its call or its agent */
enum { AGENT = 2 };
static struct Shared* sh;
typedef CUresult (*WaitFn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static WaitFn waitValue, writeValue;

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void barrier(int round) {
  sh->barrier[gRank].store(round);
  while (sh->barrier[1 - gRank].load() < round) {
    if (sh->stop.load()) exit(1);
  }
}
static void nextBarrier(void) { barrier((*gRoundPtr)++); }

__global__ void fill(uint32_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

__global__ void hbmCopy(uint4* dst, const uint4* src, uint64_t n) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

__global__ void check(const uint32_t* p, uint64_t n, uint32_t seed, unsigned long long* wrong) {
  unsigned long long w = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
    w += p[i] != ((uint32_t)(i * 2654435761u) ^ seed);
  if (w) atomicAdd(wrong, w);
}

struct Rank {
  int peer;
  cudaStream_t stream, copy[2]; /* a copy stream per direction (role): one would serialize copies that wait on each other */
  void* buf[2];          /* SEND: source, RECV: destination */
  void* scratch[2];      /* --beside: the copy kernel's own source and destination */
  void* peerBuf[2];      /* the peer's, IPC-opened once */
  cudaEvent_t ev[2][SLOTS];     /* mine, by direction */
  cudaEvent_t peerEv[2][SLOTS]; /* the peer's, IPC-opened */
  cudaEvent_t own, copied[2];
  CUdeviceptr done[2][2];       /* device addresses of box[dir].done[role][0] */
  CUdeviceptr ready[2][2];      /* ... and of box[dir].ready[role][0] */
  /* --issuer agent */
  int rank;
  CUdeviceptr point;            /* sh->point[rank][0] as the GPU sees it */
  uint64_t groups;              /* groups queued (the user stream writes each one's number at its point) */
  pthread_mutex_t lock;         /* the pending ring and the copy stream's order */
  struct { uint64_t k, bytes, point; } pending[SLOTS];
  unsigned pendHead, pendTail;
  pthread_t agent;
  int agentQuit;
};

static void streamWait(cudaStream_t st, CUdeviceptr word, uint64_t v, const char* what) {
  if (waitValue((CUstream)st, word, v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWaitValue64 (%s) failed\n", gRank, what);
    exit(1);
  }
}
static void streamWrite(cudaStream_t st, CUdeviceptr word, uint64_t v, const char* what) {
  if (writeValue((CUstream)st, word, v, 0) != CUDA_SUCCESS) {
    fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWriteValue64 (%s) failed\n", gRank, what);
    exit(1);
  }
}

/* --issuer agent: issue, in transfer order, every pending send whose receiver has posted; from the
 * user's thread after a post, and from the agent thread when a receiver posting second rings. The
 * copy waits for the receiver's signal and for this rank's group point as a value (an event would
 * bind to its latest record, which may already be a later group that waits for this copy). */
static void issueReady(struct Rank* R) {
  pthread_mutex_lock(&R->lock);
  while (R->pendHead != R->pendTail) {
    const unsigned i = R->pendHead % SLOTS;
    const uint64_t k = R->pending[i].k;
    struct chrCeMailbox* mb = &sh->box[R->rank];
    struct chrCePost theirs;
    if (!chrCeOtherPosted(mb, SEND, k, &theirs)) break;
    struct Post other;
    memcpy(&other, theirs.bytes, sizeof(other));
    if (gValue) streamWait(R->copy[SEND], R->ready[R->rank][RECV], k, "ready");
    else CK(cudaStreamWaitEvent(R->copy[SEND], R->peerEv[R->rank][other.event], 0));
    streamWait(R->copy[SEND], R->point, R->pending[i].point, "point");
    CK(cudaMemcpyAsync(R->peerBuf[RECV], R->buf[SEND], R->pending[i].bytes, cudaMemcpyDeviceToDevice, R->copy[SEND]));
    streamWrite(R->copy[SEND], R->done[R->rank][RECV], k, "done");
    streamWrite(R->copy[SEND], R->done[R->rank][SEND], k, "done");
    sh->copies[R->rank][SEND]++;
    chrCeRelease(mb, k);
    R->pendHead++;
  }
  pthread_mutex_unlock(&R->lock);
}

static void ringBell(int rank) {
  __atomic_add_fetch(&sh->bell[rank], 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &sh->bell[rank], FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void* agentMain(void* arg) {
  struct Rank* R = (struct Rank*)arg;
  gRank = R->rank;
  CK(cudaSetDevice(R->rank)); /* the current device is per thread */
  for (;;) {
    const uint32_t seen = __atomic_load_n(&sh->bell[R->rank], __ATOMIC_ACQUIRE);
    issueReady(R);
    if (__atomic_load_n(&R->agentQuit, __ATOMIC_ACQUIRE)) return NULL;
    const struct timespec wait = {0, 1000000};
    syscall(SYS_futex, &sh->bell[R->rank], FUTEX_WAIT, seen, &wait, NULL, 0);
  }
}

/* A group of transfers (an iteration: a send and a receive) goes in two passes, as
 * tests/unit/test_ce_mailbox.c checks on the CPU: first every transfer's signal (ready word or
 * event) and one event of the stream that the group's copies wait for, before any wait is queued;
 * then the posts. Queuing a first end's wait before the other transfer's signal, or before the
 * point a copy waits for, makes a cycle when each rank comes first on one transfer and second on
 * the other. */
static void prepareOne(struct Rank* R, int dir, int role, uint64_t k) {
  const int slot = (int)(k % SLOTS);
  /* The slot is free for k once the transfer k - SLOTS is done with it (its second end released it);
   * only then may its event be recorded again (the peer's wait binds to the latest record). */
  while (!chrCeSlotFree(&sh->box[dir], k)) {
    if (sh->stop.load()) exit(1);
  }
  if (gValue) {
    if (writeValue((CUstream)R->stream, R->ready[dir][role], k, 0) != CUDA_SUCCESS) {
      fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWriteValue64 (ready) failed\n", gRank);
      exit(1);
    }
  } else {
    CK(cudaEventRecord(R->ev[dir][slot], R->stream));
  }
}

/* One end of transfer k (k >= 1) in direction dir (the sender's rank), as `role`, after its group's
 * prepareOne calls and the record of R->own. */
static void postOne(struct Rank* R, int dir, int role, uint64_t k, uint64_t bytes) {
  struct chrCeMailbox* mb = &sh->box[dir];
  struct Post p;
  memset(&p, 0, sizeof(p));
  p.mem = sh->buf[gRank][role];
  p.event = (int)(k % SLOTS);
  struct chrCePost mine, theirs;
  memset(&mine, 0, sizeof(mine));
  memcpy(mine.bytes, &p, sizeof(p));
  if (gIssuer == AGENT) { /* both ends' streams wait for their done word; the sender issues */
    const int first = chrCePost(mb, role, k, &mine, &theirs);
    streamWait(R->stream, R->done[dir][role], k, "done");
    if (role == RECV) {
      if (!first) ringBell(R->peer); /* the sender came first: its agent issues */
      return;
    }
    pthread_mutex_lock(&R->lock);
    const unsigned t = R->pendTail++;
    R->pending[t % SLOTS].k = k;
    R->pending[t % SLOTS].bytes = bytes;
    R->pending[t % SLOTS].point = R->groups;
    pthread_mutex_unlock(&R->lock);
    issueReady(R);
    return;
  }
  if (gIssuer == role) /* the issuer posts only once the other end has: it then comes second */
    while (__atomic_load_n(&mb->state[k % SLOTS], __ATOMIC_ACQUIRE) != ((chrCeRound(k) << 2) | (1u << (1 - role)))) {
      if (sh->stop.load()) exit(1);
    }
  if (chrCePost(mb, role, k, &mine, &theirs)) {
    /* First: wait for the second to copy and say so. */
    if (waitValue((CUstream)R->stream, R->done[dir][role], k, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWaitValue64 failed\n", gRank);
      exit(1);
    }
    return;
  }
  /* Second: copy, then tell the first. */
  struct Post otherPost;
  memcpy(&otherPost, theirs.bytes, sizeof(otherPost));
  const struct Post* other = &otherPost;
  if (gValue) {
    if (waitValue((CUstream)R->copy[role], R->ready[dir][1 - role], k, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWaitValue64 (ready) failed\n", gRank);
      exit(1);
    }
  } else {
    CK(cudaStreamWaitEvent(R->copy[role], R->peerEv[dir][other->event], 0));
  }
  CK(cudaStreamWaitEvent(R->copy[role], R->own, 0)); /* the group's point of this rank's stream */
  void* src = role == SEND ? R->buf[SEND] : R->peerBuf[SEND];
  void* dst = role == SEND ? R->peerBuf[RECV] : R->buf[RECV];
  CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, R->copy[role]));
  if (writeValue((CUstream)R->copy[role], R->done[dir][1 - role], k, 0) != CUDA_SUCCESS) {
    fprintf(stderr, "chorus-ce-probe rank %d: cuStreamWriteValue64 failed\n", gRank);
    exit(1);
  }
  CK(cudaEventRecord(R->copied[role], R->copy[role]));
  CK(cudaStreamWaitEvent(R->stream, R->copied[role], 0));
  sh->copies[gRank][role]++;
  chrCeRelease(mb, k); /* free for k + SLOTS */
}

/* One iteration: this rank's send to the peer and its receive from it (or one of them, one way). */
static void group(struct Rank* R, uint64_t k, uint64_t bytes, int sends, int recvs) {
  if (sends) prepareOne(R, gRank, SEND, k);
  if (recvs) prepareOne(R, R->peer, RECV, k);
  CK(cudaEventRecord(R->own, R->stream));
  if (gIssuer == AGENT) streamWrite(R->stream, R->point, ++R->groups, "point");
  if (gIssuer == SEND) { /* the ends that never wait on the host post first: no host cycle */
    if (recvs) postOne(R, R->peer, RECV, k, bytes);
    if (sends) postOne(R, gRank, SEND, k, bytes);
    return;
  }
  if (sends) postOne(R, gRank, SEND, k, bytes);
  if (recvs) postOne(R, R->peer, RECV, k, bytes);
}

/* --mixed: both ranks push `bytes` into the peer's receive buffer at once, by the SMs alone, then by
 * the SMs (gMixed percent) and the copy engine (the rest) together; each rank then checks what its
 * peer pushed (into `wrong`, the run's device counter). Prints both times; returns the wrong elements. */
static unsigned long long mixedPushes(struct Rank* R, uint64_t bytes, int iters, int* round, unsigned long long* wrong) {
  const uint64_t smShare = bytes / 100 * (uint64_t)gMixed / 16 * 16;
  unsigned long long wrongTotal = 0;
  double t[2];
  for (int mode = 0; mode < 2; mode++) {
    const uint64_t sm = mode ? smShare : bytes;
    CK(cudaMemsetAsync(R->buf[RECV], 0, bytes, R->stream));
    CK(cudaStreamSynchronize(R->stream));
    barrier((*round)++);
    const double c = nowUs();
    for (int i = 0; i < iters; i++) {
      if (sm > 0) hbmCopy<<<gMixedCtas, 512, 0, R->stream>>>((uint4*)R->peerBuf[RECV], (const uint4*)R->buf[SEND], sm / 16);
      if (bytes > sm)
        CK(cudaMemcpyAsync((char*)R->peerBuf[RECV] + sm, (const char*)R->buf[SEND] + sm, bytes - sm,
                           cudaMemcpyDeviceToDevice, R->copy[SEND]));
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(R->stream));
    CK(cudaStreamSynchronize(R->copy[SEND]));
    t[mode] = (nowUs() - c) / iters;
    barrier((*round)++); /* the peer's pushes into this rank's buffer are over */
    CK(cudaMemsetAsync(wrong, 0, sizeof(*wrong), R->stream));
    check<<<264, 512, 0, R->stream>>>((const uint32_t*)R->buf[RECV], bytes / 4,
                                      0x1000u * (R->peer + 1) + (uint32_t)(bytes >> 20), wrong);
    unsigned long long w = 0;
    CK(cudaMemcpyAsync(&w, wrong, sizeof(w), cudaMemcpyDeviceToHost, R->stream));
    CK(cudaStreamSynchronize(R->stream));
    wrongTotal += w;
  }
  printf("rank%d_smpush_%llu %.1f us %.2f GB/s\n", gRank, (unsigned long long)bytes, t[0], bytes / t[0] / 1e3);
  printf("rank%d_mixed%d_%llu %.1f us %.2f GB/s\n", gRank, gMixed, (unsigned long long)bytes, t[1], bytes / t[1] / 1e3);
  printf("rank%d_mixed_wrong_%llu %llu elements\n", gRank, (unsigned long long)bytes, wrongTotal);
  return wrongTotal;
}

static uint64_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'G': case 'g': v *= 1 << 30; break;
    case 'M': case 'm': v *= 1 << 20; break;
    case 'K': case 'k': v *= 1 << 10; break;
  }
  return (uint64_t)v;
}

/* --allreduce: the prototype at this size, on the rank's buffers and the peer's. */
static unsigned long long allReduceRun(const struct Rank* R, uint64_t bytes, uint64_t room, int iters, uint64_t* k) {
  struct chrProbeAr a = {};
  a.rank = gRank;
  a.stream = R->stream;
  a.x = (float*)R->buf[SEND];
  a.y = (float*)R->buf[RECV];
  a.peerX = (const float*)R->peerBuf[SEND];
  a.peerY = (float*)R->peerBuf[RECV];
  a.waitValue = waitValue;
  a.writeValue = writeValue;
  a.barrier = nextBarrier;
  a.ctas = gArCtas;
  a.room = room;
  for (int r = 0; r < 2; r++)
    for (int w = 0; w < 4; w++) {
      void* p = NULL;
      CK(cudaHostGetDevicePointer(&p, &sh->arWord[r][w], 0));
      a.word[r][w] = (CUdeviceptr)(uintptr_t)p;
    }
  return chrProbeAllReduce(&a, gArMode, bytes, gArChunk, iters, k);
}

static int runRank(int rank, uint64_t minB, uint64_t maxB, int iters) {
  gRank = rank;
  struct Rank R;
  memset(&R, 0, sizeof(R));
  R.peer = 1 - rank;
  int nDev = 0;
  if (cudaGetDeviceCount(&nDev) != cudaSuccess || nDev < 2) {
    if (rank == 0) printf("SKIP: chorus-ce-probe needs 2 GPUs (%d found)\n", nDev);
    return 77;
  }
  CK(cudaSetDevice(rank));
  cudaError_t pe = cudaDeviceEnablePeerAccess(R.peer, 0);
  if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled) {
    fprintf(stderr, "chorus-ce-probe rank %d: no peer access to GPU %d: %s\n", rank, R.peer, cudaGetErrorString(pe));
    return 1;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib) {
    waitValue = (WaitFn)dlsym(lib, "cuStreamWaitValue64_v2");
    writeValue = (WaitFn)dlsym(lib, "cuStreamWriteValue64_v2");
  }
  if (!waitValue || !writeValue) {
    fprintf(stderr, "chorus-ce-probe rank %d: no cuStreamWaitValue64_v2 / cuStreamWriteValue64_v2\n", rank);
    return 1;
  }
  typedef CUresult (*GetDevFn)(CUdevice*, int);
  typedef CUresult (*GetAttrFn)(int*, CUdevice_attribute, CUdevice);
  GetDevFn getDev = (GetDevFn)dlsym(lib, "cuDeviceGet");
  GetAttrFn getAttr = (GetAttrFn)dlsym(lib, "cuDeviceGetAttribute");
  CUdevice cuDev;
  int memOps = -1;
  if (getDev && getAttr && getDev(&cuDev, rank) == CUDA_SUCCESS)
    getAttr(&memOps, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, cuDev);
  if (rank == 0) printf("stream_mem_ops_64 %d flag\nsignal %s\noneway %d\n", memOps, gValue ? "value" : "event", gOneWay);
  CK(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
  for (int r = 0; r < 2; r++) CK(cudaStreamCreateWithFlags(&R.copy[r], cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&R.own, cudaEventDisableTiming));
  for (int r = 0; r < 2; r++) CK(cudaEventCreateWithFlags(&R.copied[r], cudaEventDisableTiming));
  for (int b = 0; b < 2; b++) {
    CK(cudaMalloc(&R.buf[b], maxB));
    if (gBeside) CK(cudaMalloc(&R.scratch[b], maxB));
    if (gThreads) sh->rawBuf[rank][b] = R.buf[b];
    else CK(cudaIpcGetMemHandle(&sh->buf[rank][b], R.buf[b]));
  }
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < SLOTS; s++) {
      CK(cudaEventCreateWithFlags(&R.ev[d][s], cudaEventDisableTiming | (gThreads ? 0 : cudaEventInterprocess)));
      if (gThreads) sh->rawEv[rank][d][s] = R.ev[d][s];
      else CK(cudaIpcGetEventHandle(&sh->ev[rank][d][s], R.ev[d][s]));
    }
  /* once per process (portable: every device sees it). With --threads the first thread to come
   * registers and the other waits for it; an exchange here instead of the compare-and-swap let a late
   * second thread set the word back to 1 and wait for a 2 that never came (f2, f3 start-up hangs). */
  int unregistered = 0;
  if (!gThreads || sh->registered.compare_exchange_strong(unregistered, 1)) {
    CK(cudaHostRegister(sh, sizeof(*sh), cudaHostRegisterMapped | cudaHostRegisterPortable));
    if (gThreads) sh->registered.store(2);
  } else {
    while (sh->registered.load() != 2) {
      if (sh->stop.load()) exit(1);
    }
  }
  for (int d = 0; d < 2; d++)
    for (int role = 0; role < 2; role++) {
      void* p = NULL;
      CK(cudaHostGetDevicePointer(&p, &sh->box[d].done[role][0], 0));
      R.done[d][role] = (CUdeviceptr)(uintptr_t)p;
      CK(cudaHostGetDevicePointer(&p, &sh->box[d].ready[role][0], 0));
      R.ready[d][role] = (CUdeviceptr)(uintptr_t)p;
    }
  R.rank = rank;
  {
    void* p = NULL;
    CK(cudaHostGetDevicePointer(&p, &sh->point[rank][0], 0));
    R.point = (CUdeviceptr)(uintptr_t)p;
  }
  pthread_mutex_init(&R.lock, NULL);
  barrier(1);
  const double t0 = nowUs();
  for (int b = 0; b < 2; b++) {
    if (gThreads) R.peerBuf[b] = sh->rawBuf[R.peer][b];
    else CK(cudaIpcOpenMemHandle(&R.peerBuf[b], sh->buf[R.peer][b], cudaIpcMemLazyEnablePeerAccess));
  }
  sh->openUs[rank] = (nowUs() - t0) / 2;
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < SLOTS; s++) {
      if (gThreads) R.peerEv[d][s] = sh->rawEv[R.peer][d][s];
      else CK(cudaIpcOpenEventHandle(&R.peerEv[d][s], sh->ev[R.peer][d][s]));
    }
  unsigned long long* wrong;
  CK(cudaMalloc(&wrong, sizeof(*wrong)));
  barrier(2);
  if (rank == 0) printf("ipc_open_first %.1f us\n", sh->openUs[0]);
  if (gIssuer == AGENT && pthread_create(&R.agent, NULL, agentMain, &R) != 0) {
    fprintf(stderr, "chorus-ce-probe rank %d: no agent thread\n", rank);
    return 1;
  }

  uint64_t k = 1;
  int round = 3;
  gRoundPtr = &round;
  unsigned long long wrongTotal = 0;
  for (uint64_t bytes = minB; bytes <= maxB; bytes *= 2) {
    if (gArMode >= 0) {
      if (bytes % 64 == 0) wrongTotal += allReduceRun(&R, bytes, maxB, iters, &k);
      continue;
    }
    const uint64_t n = bytes / 4;
    /* The protocol: send to the peer (direction = my rank), receive from it (direction = its rank). */
    CK(cudaMemsetAsync(R.buf[RECV], 0, bytes, R.stream));
    fill<<<264, 512, 0, R.stream>>>((uint32_t*)R.buf[SEND], n, 0x1000u * (rank + 1) + (uint32_t)(bytes >> 20));
    CK(cudaStreamSynchronize(R.stream));
    barrier(round++);
    const int sends = !gOneWay || rank == 0, recvs = !gOneWay || rank == 1;
    group(&R, k, bytes, sends, recvs); /* warm-up, checked below like the rest */
    k++;
    CK(cudaStreamSynchronize(R.stream));
    for (int r = 0; r < 2; r++) CK(cudaStreamSynchronize(R.copy[r]));
    barrier(round++);
    double t = nowUs();
    for (int i = 0; i < iters; i++, k++) {
      group(&R, k, bytes, sends, recvs);
    }
    CK(cudaStreamSynchronize(R.stream));
    for (int r = 0; r < 2; r++) CK(cudaStreamSynchronize(R.copy[r]));
    t = (nowUs() - t) / iters;
    barrier(round++);
    CK(cudaMemsetAsync(wrong, 0, sizeof(*wrong), R.stream)); /* R.stream does not wait for the legacy stream */
    check<<<264, 512, 0, R.stream>>>((const uint32_t*)R.buf[RECV], n, 0x1000u * (R.peer + 1) + (uint32_t)(bytes >> 20),
                                     wrong);
    unsigned long long w = 0;
    CK(cudaMemcpyAsync(&w, wrong, sizeof(w), cudaMemcpyDeviceToHost, R.stream));
    CK(cudaStreamSynchronize(R.stream));
    printf("rank%d_ce_%s_%llu %.1f us %.2f GB/s\n", rank, gOneWay ? "send" : "sendrecv", (unsigned long long)bytes, t,
           bytes / t / 1e3);
    if (recvs) printf("rank%d_wrong_%llu %llu elements\n", rank, (unsigned long long)bytes, w);
    if (recvs) wrongTotal += w; /* one way, rank 0 receives nothing: its buffer is not checked */
    /* The ceiling in the same run: both ranks copying at once, plain cudaMemcpyAsync, no protocol. */
    for (int pull = 0; pull < 2; pull++) {
      barrier(round++);
      double c = nowUs();
      for (int i = 0; i < iters && (!gOneWay || rank == pull); i++) { /* one way: rank 0 pushes, rank 1 pulls */
        if (pull) CK(cudaMemcpyAsync(R.buf[RECV], R.peerBuf[SEND], bytes, cudaMemcpyDeviceToDevice, R.stream));
        else CK(cudaMemcpyAsync(R.peerBuf[RECV], R.buf[SEND], bytes, cudaMemcpyDeviceToDevice, R.stream));
      }
      CK(cudaStreamSynchronize(R.stream));
      c = (nowUs() - c) / iters;
      printf("rank%d_%s_%llu %.1f us %.2f GB/s\n", rank, pull ? "pull" : "push", (unsigned long long)bytes, c,
             bytes / c / 1e3);
    }
    if (gMixed > 0 && !gOneWay && bytes % 16 == 0) wrongTotal += mixedPushes(&R, bytes, iters, &round, wrong);
    if (gBeside && !gOneWay) { /* a copy kernel alone, then beside both ranks' pushes, and the pushes beside it */
      const uint64_t n16 = bytes / 16;
      double t[3];
      for (int mode = 0; mode < 2; mode++) {
        barrier(round++);
        cudaEvent_t k0, k1, c0, c1;
        CK(cudaEventCreate(&k0));
        CK(cudaEventCreate(&k1));
        CK(cudaEventCreate(&c0));
        CK(cudaEventCreate(&c1));
        CK(cudaEventRecord(k0, R.stream));
        for (int i = 0; i < iters; i++)
          hbmCopy<<<66, 1024, 0, R.stream>>>((uint4*)R.scratch[RECV], (const uint4*)R.scratch[SEND], n16);
        CK(cudaEventRecord(k1, R.stream));
        if (mode) {
          CK(cudaEventRecord(c0, R.copy[SEND]));
          for (int i = 0; i < iters; i++)
            CK(cudaMemcpyAsync(R.peerBuf[RECV], R.buf[SEND], bytes, cudaMemcpyDeviceToDevice, R.copy[SEND]));
          CK(cudaEventRecord(c1, R.copy[SEND]));
        }
        CK(cudaStreamSynchronize(R.stream));
        CK(cudaStreamSynchronize(R.copy[SEND]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, k0, k1));
        t[mode] = ms * 1e3 / iters;
        if (mode) {
          CK(cudaEventElapsedTime(&ms, c0, c1));
          t[2] = ms * 1e3 / iters;
        }
        CK(cudaEventDestroy(k0));
        CK(cudaEventDestroy(k1));
        CK(cudaEventDestroy(c0));
        CK(cudaEventDestroy(c1));
      }
      printf("rank%d_kernel_alone_%llu %.1f us %.2f GB/s\n", rank, (unsigned long long)bytes, t[0], bytes / t[0] / 1e3);
      printf("rank%d_kernel_beside_ce_%llu %.1f us %.2f GB/s\n", rank, (unsigned long long)bytes, t[1], bytes / t[1] / 1e3);
      printf("rank%d_ce_push_beside_kernel_%llu %.1f us %.2f GB/s\n", rank, (unsigned long long)bytes, t[2],
             bytes / t[2] / 1e3);
    }
    if (!gOneWay) { /* one GPU drives both directions at once (push and pull on two streams), the other idles */
      barrier(round++);
      double c = nowUs();
      for (int i = 0; i < iters && rank == 0; i++) {
        CK(cudaMemcpyAsync(R.peerBuf[RECV], R.buf[SEND], bytes, cudaMemcpyDeviceToDevice, R.copy[SEND]));
        CK(cudaMemcpyAsync(R.buf[RECV], R.peerBuf[SEND], bytes, cudaMemcpyDeviceToDevice, R.copy[RECV]));
      }
      for (int r = 0; r < 2; r++) CK(cudaStreamSynchronize(R.copy[r]));
      c = (nowUs() - c) / iters;
      if (rank == 0)
        printf("rank0_pushpull_onegpu_%llu %.1f us %.2f GB/s\n", (unsigned long long)bytes, c, bytes / c / 1e3);
    }
    barrier(round++); /* the peer is done with my buffers before the next size refills them */
    fflush(stdout);
  }
  barrier(round++);
  printf("rank%d_copies_issued_as_sender %llu copies\nrank%d_copies_issued_as_receiver %llu copies\n", rank,
         (unsigned long long)sh->copies[rank][SEND], rank, (unsigned long long)sh->copies[rank][RECV]);
  if (gIssuer == AGENT) {
    __atomic_store_n(&R.agentQuit, 1, __ATOMIC_RELEASE);
    ringBell(rank);
    pthread_join(R.agent, NULL);
    printf("rank%d_agent_pending_left %u sends\n", rank, R.pendTail - R.pendHead);
    if (R.pendTail != R.pendHead) return 1;
  }
  return wrongTotal ? 1 : 0; /* wrong data fails the run (gpu.x2.ceprobe.* check it) */
}

int main(int argc, char** argv) {
  uint64_t minB = 64ull << 20, maxB = 8ull << 30;
  int iters = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--min")) minB = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "--max")) maxB = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--oneway")) gOneWay = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--signal") && !strcmp(argv[i + 1], "value")) gValue = 1;
    else if (!strcmp(argv[i], "--signal") && !strcmp(argv[i + 1], "event")) gValue = 0;
    else if (!strcmp(argv[i], "--threads")) gThreads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--beside")) gBeside = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--mixed")) gMixed = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--mixed-ctas")) gMixedCtas = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--allreduce") && !strcmp(argv[i + 1], "pull")) gArMode = CHR_PROBE_AR_PULL;
    else if (!strcmp(argv[i], "--allreduce") && !strcmp(argv[i + 1], "read")) gArMode = CHR_PROBE_AR_READ;
    else if (!strcmp(argv[i], "--allreduce") && !strcmp(argv[i + 1], "direct")) gArMode = CHR_PROBE_AR_DIRECT;
    else if (!strcmp(argv[i], "--allreduce") && !strcmp(argv[i + 1], "push")) gArMode = CHR_PROBE_AR_PUSH;
    else if (!strcmp(argv[i], "--ar-chunk")) gArChunk = parseBytes(argv[i + 1]);
    else if (!strcmp(argv[i], "--ar-ctas")) gArCtas = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--issuer") && !strcmp(argv[i + 1], "sender")) gIssuer = SEND;
    else if (!strcmp(argv[i], "--issuer") && !strcmp(argv[i + 1], "receiver")) gIssuer = RECV;
    else if (!strcmp(argv[i], "--issuer") && !strcmp(argv[i + 1], "second")) gIssuer = -1;
    else if (!strcmp(argv[i], "--issuer") && !strcmp(argv[i + 1], "agent")) gIssuer = AGENT;
    else {
      fprintf(stderr, "usage: %s [--min 64M] [--max 8G] [--iters 5] [--oneway 0|1] [--signal event|value] [--threads 0|1]\n"
              "       [--issuer second|sender|receiver|agent] [--beside 0|1] [--mixed 0-99] [--mixed-ctas N]\n"
              "       [--allreduce pull|read|direct|push [--ar-chunk 8M] [--ar-ctas 132]]\n",
              argv[0]);
      return 2;
    }
  }
  if (minB < 4 || minB > maxB || iters < 1 || gMixed < 0 || gMixed > 99 || gMixedCtas < 1 || gMixedCtas > 1024 ||
      gArChunk < 16 || gArCtas < 1 || gArCtas > 4096) {
    fprintf(stderr, "chorus-ce-probe: bad sizes or iterations\n");
    return 2;
  }
  sh = (struct Shared*)mmap(NULL, sizeof(struct Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    perror("chorus-ce-probe: mmap");
    return 1;
  }
  /* mmap's anonymous pages start zeroed: every counter and atomic is 0 */
  for (int d = 0; d < 2; d++) chrCeMailboxInit(&sh->box[d]);
  if (gThreads) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t[2];
    static int rcs[2];
    struct Arg { int r; uint64_t minB, maxB; int iters; } args[2];
    for (int r = 0; r < 2; r++) {
      args[r] = (struct Arg){r, minB, maxB, iters};
      pthread_create(&t[r], NULL, [](void* a) -> void* {
        const struct Arg* x = (const struct Arg*)a;
        rcs[x->r] = runRank(x->r, x->minB, x->maxB, x->iters);
        if (rcs[x->r]) sh->stop.store(1); /* the other thread stops waiting for this one */
        return NULL;
      }, &args[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
    return rcs[0] == 77 ? 77 : (rcs[0] || rcs[1]);
  }
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      setvbuf(stdout, NULL, _IOLBF, 0);
      _exit(runRank(r, minB, maxB, iters));
    }
  }
  int rc = 0;
  for (int r = 0; r < 2; r++) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
      rc = rc ? rc : 77; /* no 2 GPUs: skipped */
      sh->stop.store(1);
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      rc = 1;
      sh->stop.store(1); /* the other rank stops spinning */
    }
  }
  return rc;
}
