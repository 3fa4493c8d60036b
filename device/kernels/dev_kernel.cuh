/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_kernel.cuh: the kernel. One CTA per channel runs the channel's works in order; each work is
 * the step program of hostdev/work.h (chrWorkCounts / chrWorkStep), the same one the host executor
 * runs, so a plan computes the same bits on both.
 *
 * Per step i, thread 0 prepares: it computes the step, resolves its slots and waits, for every
 * receive until the data is there (SIMPLE: tail > position; LL: the lines carry their flags, so
 * nothing), for every send until the slot is free (head + CHR_DEV_STEPS > position); then it moves the
 * links' positions on and writes what the step will publish into pub[i & 1]: tail of each send link
 * (SIMPLE only; a release store at system scope, whose fence waits until the step's stores have
 * landed at the peer), head of each receive link. Barrier A (named, the computing threads only) hands
 * the step to them (dev_simple.cuh / dev_ll.cuh), barrier B (the CTA's) ends it, and one thread stores
 * pub[i & 1].
 *
 * SIMPLE: that thread is lane 0 of the last warp, the publisher, which computes nothing, so the fence
 * runs while the workers go on with step i + 1, not before thread 0 may prepare it. pub[i & 1] is
 * rewritten in prepare(i + 2), after B(i + 1), which the publisher reaches only once step i is out.
 * Data before tail as with one thread: the workers' stores, B, the publisher's release (cumulative);
 * head: every slot read was consumed before B. The publisher waits for nothing but B, so a prepare
 * that waits for a peer never waits for it (a small gain for copies and reduce-scatters:
 * docs/perf/gpu-2gpu.md). LL (no tail; every thread computes), and SIMPLE in a CTA of one warp or a
 * CHR_DEV_PUB_WARP=0 build: thread 0 publishes after B, then prepares the next step.
 *
 * At the end of a work the positions go back to the connections in device memory, so the next work,
 * in this launch or a later one, continues the sequences; the work's closing barrier comes after the
 * publisher's last stores, so the next work may reuse pub[].
 *
 * Abort: every wait polls the host-mapped abort flag every CHR_DEV_ABORT_SPINS spins; a thread that
 * sees it marks the CTA aborted. Threads leave only at a CTA barrier that ORs the mark
 * (__syncthreads_or: B, or the one after a work's setup), so all of them, the publisher included,
 * leave at the same one: a mark set after a barrier (thread 0 preparing the next step, an LL poll)
 * cannot send a slow reader away while the others wait for it. The workers read it after A only to
 * skip the step; they still go on to B.
 *
 * Works of the functions that only move data (all-gather, broadcast, point-to-point, the tree's
 * down pass, and local copies) run as byte copies whatever their type, so one kernel serves them
 * and the launcher needs to split a plan only between different reductions.
 */
#ifndef CHORUS_DEVICE_DEV_KERNEL_CUH_
#define CHORUS_DEVICE_DEV_KERNEL_CUH_

#include "device/kernels/dev_args.h"
#include "device/kernels/dev_ll.cuh"
#include "device/kernels/dev_simple.cuh"
#include "device/kernels/dev_sync.cuh"
#include "device/kernels/dev_work.h"
#include "hostdev/algo_ids.h" /* CHR_PROTO_* */

#ifndef CHR_DEV_PUB_WARP
#define CHR_DEV_PUB_WARP 1
#endif
static_assert(CHR_DEV_THREADS % 32 == 0, "named barriers count whole warps");

/* One link of the current work, as the CTA sees it. */
struct chrDevLinkState {
  struct chrDevConn* conn; /* where the position goes back */
  char* buff;
  union chrDevLLLine* ll;
  uint64_t* tail;
  uint64_t* head;
  uint64_t* sizes; /* net ends (dev_comm.h), else NULL */
  uint64_t* need;  /* net receive ends, else NULL */
  uint64_t stepBytes;
  uint64_t pos;
  uint32_t llLines;
};

/* What a step publishes: *word[e] = value[e] in order: the first nSizes (net ends' step sizes) and
 * the entries from nRelease on (heads) relaxed, those between (SIMPLE's tails) with release stores,
 * so a size is visible before its tail. */
struct chrDevPub {
  uint64_t* word[3 * CHR_STEP_MAX_LINKS];
  uint64_t value[3 * CHR_STEP_MAX_LINKS];
  int n, nSizes, nRelease;
};

struct chrDevShared {
  struct chrWork work;
  struct chrStep step;
  struct chrDevLinkState links[CHR_WORK_MAX_LINKS];
  struct chrDevStepPtrs ptrs;
  struct chrDevPub pub[2]; /* by step parity: thread 0 writes, the publishing thread stores */
  uint64_t nSteps;
  uint64_t scalarBits;
  volatile uint32_t* abortFlag;
  volatile int aborted;
};

/* The CTA stops, and so do the rank's other CTAs and the kernels queued behind this one (through the
 * rank's abort word): their connections are out of step now, and a stream that never drained would
 * leave a program that only synchronises it waiting for ever. */
__device__ __forceinline__ void chrDevFail(const struct chrDevComm* comm, struct chrDevShared& sh, uint32_t err) {
  if (*comm->error == CHR_DEV_ERR_NONE) *comm->error = err;
  *comm->abortFlag = 1;
  sh.aborted = 1;
}

/* Thread 0: resolve the work's links to connections, count its steps, load its scalar. */
static __device__ void chrDevSetupWork(const struct chrDevComm* comm, int channel, struct chrDevShared& sh) {
  const struct chrWork& w = sh.work;
  for (int l = 0; l < w.nLinks && l < CHR_WORK_MAX_LINKS; l++) {
    const struct chrWorkLink& L = w.links[l];
    struct chrDevConn* conn = NULL;
    if (L.p2p) {
      if (L.conn < comm->p2pConns && L.peer >= 0 && L.peer < comm->nRanks)
        conn = &comm->p2p[CHR_DEV_P2P_INDEX(comm->nRanks, L.conn, L.peer, L.isSend)];
    } else if (channel < comm->nChannels) {
      conn = &comm->channels[channel].ring[L.isSend ? CHR_RING_SEND : CHR_RING_RECV];
    }
    if (conn == NULL || conn->peer != L.peer) {
      chrDevFail(comm, sh, CHR_DEV_ERR_BAD_LINK);
      return;
    }
    struct chrDevLinkState& s = sh.links[l];
    s.conn = conn;
    s.buff = conn->buff;
    s.ll = conn->ll;
    s.tail = conn->tail;
    s.head = conn->head;
    s.sizes = conn->sizes;
    s.need = conn->need;
    s.stepBytes = conn->stepBytes;
    s.llLines = conn->llLines;
    s.pos = conn->step;
  }
  uint64_t nRecvs[CHR_WORK_MAX_LINKS];
  uint64_t nSteps = 0;
  chrWorkCounts(&w, &nSteps, nRecvs);
  for (int l = 0; l < w.nLinks && l < CHR_WORK_MAX_LINKS; l++) /* net receive ends: the steps this work takes */
    if (sh.links[l].need) chrStRelaxedSys(sh.links[l].need, sh.links[l].pos + nRecvs[l]);
  sh.nSteps = nSteps;
  sh.scalarBits = w.opArg;
  if (w.op == CHR_DEV_PREMULSUM && (w.flags & CHR_WORK_SCALAR_PTR)) {
    uint64_t bits = 0;
    const uint8_t* p = (const uint8_t*)(uintptr_t)w.opArg;
    for (int i = 0; i < w.typeSize && i < 8; i++) bits |= (uint64_t)p[i] << (8 * i);
    sh.scalarBits = bits;
  }
}

/* Thread 0: the step's addresses, after waiting for its data and its credit. False on abort. Then
 * the positions move on, and pub[index & 1] gets what is to be published once the step is done. */
template <typename S>
__device__ bool chrDevPrepareStep(const struct chrDevComm* comm, struct chrDevShared& sh, uint64_t index,
                                  chrDevAbort& ab) {
  const struct chrWork& w = sh.work;
  struct chrStep& st = sh.step;
  struct chrDevStepPtrs& p = sh.ptrs;
  const bool ll = w.proto == CHR_PROTO_LL;
  chrWorkStep(&w, comm->ringOrder, index, &st);
  p.nRecv = st.nRecv;
  p.nSend = st.nSend;
  p.final = st.final;
  p.count = st.count * w.typeSize / sizeof(S);
  p.local = st.localOff >= 0 ? (const char*)(uintptr_t)w.sendbuff + (uint64_t)st.localOff * w.typeSize : NULL;
  p.out = st.outOff >= 0 ? (char*)(uintptr_t)w.recvbuff + (uint64_t)st.outOff * w.typeSize : NULL;
  for (int k = 0; k < st.nRecv; k++) {
    const struct chrDevLinkState& s = sh.links[st.recv[k]];
    const uint64_t slot = s.pos % CHR_DEV_STEPS;
    if (ll) {
      p.llRecv[k] = s.ll + slot * s.llLines;
      p.recvFlag[k] = (uint32_t)(s.pos + 1);
    } else {
      p.recv[k] = s.buff + slot * s.stepBytes;
      while (chrLdAcquireSys(s.tail) <= s.pos)
        if (ab.poll()) return false;
      /* A net end's bytes came from another host: a step of another size means the ranks disagree
       * on the call (or the bytes are not ours), and reading the slot would take stale data. The word
       * is rewritten every CHR_DEV_STEPS steps, so it is read as the slot is, never from L1. */
      if (s.sizes && chrLdRelaxedSys(s.sizes + slot) != st.count * w.typeSize) {
        chrDevFail(comm, sh, CHR_DEV_ERR_NET_SIZE);
        return false;
      }
    }
  }
  for (int j = 0; j < st.nSend; j++) {
    const struct chrDevLinkState& s = sh.links[st.send[j]];
    const uint64_t slot = s.pos % CHR_DEV_STEPS;
    while (chrLdRelaxedSys(s.head) + CHR_DEV_STEPS <= s.pos)
      if (ab.poll()) return false;
    if (ll) {
      p.llSend[j] = s.ll + slot * s.llLines;
      p.sendFlag[j] = (uint32_t)(s.pos + 1);
    } else {
      p.send[j] = s.buff + slot * s.stepBytes;
    }
  }
  struct chrDevPub& rec = sh.pub[index & 1];
  int n = 0;
  if (!ll)
    for (int j = 0; j < st.nSend; j++) {
      const struct chrDevLinkState& s = sh.links[st.send[j]];
      if (s.sizes) {
        rec.word[n] = s.sizes + s.pos % CHR_DEV_STEPS;
        rec.value[n++] = st.count * w.typeSize;
      }
    }
  rec.nSizes = n;
  for (int j = 0; j < st.nSend; j++) {
    struct chrDevLinkState& s = sh.links[st.send[j]];
    s.pos++;
    if (!ll) {
      rec.word[n] = s.tail;
      rec.value[n++] = s.pos;
    }
  }
  rec.nRelease = n;
  for (int k = 0; k < st.nRecv; k++) {
    struct chrDevLinkState& s = sh.links[st.recv[k]];
    rec.word[n] = s.head;
    rec.value[n++] = ++s.pos;
  }
  rec.n = n;
  return true;
}

/* One thread, once the step is done (the publisher warp's lane 0, else thread 0): its stores, in the
 * order thread 0 recorded them. */
static __device__ void chrDevPublishRec(const struct chrDevPub& rec) {
  for (int e = 0; e < rec.n; e++) {
    if (e >= rec.nSizes && e < rec.nRelease) chrStReleaseSys(rec.word[e], rec.value[e]);
    else chrStRelaxedSys(rec.word[e], rec.value[e]);
  }
}

/* One work, by every thread; false (in every thread alike) when the CTA aborted. Per step the
 * workers pass A(i) and B(i), the publisher warp B(i) only. One loop for every role, each barrier one
 * instruction: bar.sync and bar.red are .aligned (all threads of a barrier meet at the same
 * instruction), and a loop per role or a run-time choice of barrier also cost ptxas up to ~200 more
 * bytes of spills (sm_90). A counts whole warps: the launcher starts whole warps (launch.cu). */
template <int TY, int OP>
__device__ bool chrDevRunWork(const struct chrDevComm* comm, struct chrDevShared& sh) {
  typedef chrDevRed<TY, OP> R;
  typedef typename R::S S;
  const R r(chrDevScalarFromArg<S>(sh.scalarBits), sh.work.opArg);
  const bool ll = sh.work.proto == CHR_PROTO_LL;
  const bool piped = CHR_DEV_PUB_WARP && !ll && blockDim.x >= 64 && blockDim.x % 32 == 0;
  const uint32_t nWorkers = piped ? blockDim.x - 32 : blockDim.x;
  const bool worker = threadIdx.x < nWorkers;
  chrDevAbort ab = {sh.abortFlag, &sh.aborted, 0};
  const uint64_t nSteps = sh.nSteps;
  for (uint64_t i = 0; i < nSteps; i++) {
    if (worker) {
      if (threadIdx.x == 0 && !chrDevPrepareStep<S>(comm, sh, i, ab)) sh.aborted = 1;
      if (CHR_DEV_PUB_WARP) chrBarSync(1, nWorkers); /* A(i) */
      else __syncthreads();
      if (!sh.aborted) {
        if (ll) chrDevLLStep(r, sh.ptrs, ab, threadIdx.x, nWorkers);
        else chrDevSimpleStep(r, sh.ptrs, threadIdx.x, nWorkers);
      }
    }
    if (__syncthreads_or(sh.aborted)) return false; /* B(i) */
    if (threadIdx.x == (piped ? nWorkers : 0)) chrDevPublishRec(sh.pub[i & 1]);
  }
  return true;
}

template <int TY, int OP>
__global__ void __launch_bounds__(CHR_DEV_THREADS, 1) chrDevKernel(const __grid_constant__ struct chrDevKernelArgs args) {
  __shared__ struct chrDevShared sh;
  const int channel = blockIdx.x;
  if (channel >= (int)args.nChannels) return;
  const struct chrDevComm* comm = args.comm;
  if (threadIdx.x == 0) {
    sh.aborted = 0;
    sh.abortFlag = comm->abortFlag;
  }
  const int end = args.first[channel + 1];
  for (int wi = args.first[channel]; wi < end; wi++) {
    const struct chrWork* src = args.workBuf ? args.workBuf + wi : &args.inl[wi];
    const int words = (int)(sizeof(struct chrWork) / sizeof(uint64_t));
    if (threadIdx.x < words) ((uint64_t*)&sh.work)[threadIdx.x] = ((const uint64_t*)src)[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) chrDevSetupWork(comm, channel, sh);
    if (__syncthreads_or(sh.aborted)) return;
    const bool ok = chrDevWorkIsCopy(&sh.work) ? chrDevRunWork<ncclUint8, CHR_DEV_COPY>(comm, sh)
                                               : chrDevRunWork<TY, OP>(comm, sh);
    if (!ok) return;
    if (threadIdx.x == 0)
      for (int l = 0; l < sh.work.nLinks; l++) sh.links[l].conn->step = sh.links[l].pos;
    /* The next work's copy into sh.work, and its use of pub[], must wait until every thread is done
     * with this one (the publisher warp with its last stores). */
    __syncthreads();
  }
}

#endif /* CHORUS_DEVICE_DEV_KERNEL_CUH_ */
