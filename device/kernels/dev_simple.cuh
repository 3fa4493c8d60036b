/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_simple.cuh: one SIMPLE step, computed by nThreads threads of the CTA (tid 0 .. nThreads - 1;
 * dev_kernel.cuh leaves out the publisher warp) once its slots are ready:
 *   v = recv[0] OP ... OP recv[k-1] OP pre(local)   (post(v) at the final step)
 * written to the output and to every send slot in one pass. Slots are 16-byte aligned, so when the
 * user buffers are too, every thread moves 16-byte packs, several in flight (chrDevUnroll) (loads of all
 * terms issued before the first use); the elements past the last whole pack go one per thread.
 * Otherwise the step goes element by element (byte by byte for buffers not even aligned to the
 * element size), still coalesced across the warp.
 */
#ifndef CHORUS_DEVICE_DEV_SIMPLE_CUH_
#define CHORUS_DEVICE_DEV_SIMPLE_CUH_

#include "device/kernels/dev_step.cuh"

/* Packs in flight per thread: 8 keeps enough bytes in flight per CTA to approach the memory system
 * (4 fell short of it: docs/perf/gpu.md); the 1-byte float8 types, whose arithmetic converts through
 * float, use 4 so that they do not spill. */
#ifndef CHR_DEV_UNROLL_PACKS
#define CHR_DEV_UNROLL_PACKS 8
#endif
template <class S>
struct chrDevUnroll {
  static const int N = sizeof(S) == 1 ? 4 : CHR_DEV_UNROLL_PACKS;
};

template <class R>
struct chrDevPack {
  typedef typename R::S S;
  static const int E = 16 / sizeof(S);
  union U {
    uint4 v;
    S e[16 / sizeof(S)];
  };

  static __device__ __forceinline__ uint4 half2Sums(uint4 a, uint4 b) {
    return make_uint4(chrDevHalf2Sum<R::type>(a.x, b.x), chrDevHalf2Sum<R::type>(a.y, b.y),
                      chrDevHalf2Sum<R::type>(a.z, b.z), chrDevHalf2Sum<R::type>(a.w, b.w));
  }
  static __device__ __forceinline__ uint4 red(const R& r, uint4 a, uint4 b) {
    if constexpr (chrDevHalfSum<R>::red) return half2Sums(a, b);
    U x, y;
    x.v = a;
    y.v = b;
#pragma unroll
    for (int i = 0; i < E; i++) x.e[i] = r.red(x.e[i], y.e[i]);
    return x.v;
  }
  static __device__ __forceinline__ uint4 redPre(const R& r, uint4 a, uint4 b) {
    if constexpr (chrDevHalfSum<R>::redPre) return half2Sums(a, b);
    U x, y;
    x.v = a;
    y.v = b;
#pragma unroll
    for (int i = 0; i < E; i++) x.e[i] = r.redPre(x.e[i], y.e[i]);
    return x.v;
  }
  static __device__ __forceinline__ uint4 pre(const R& r, uint4 b) {
    U y;
    y.v = b;
#pragma unroll
    for (int i = 0; i < E; i++) y.e[i] = r.pre(y.e[i]);
    return y.v;
  }
  static __device__ __forceinline__ uint4 post(const R& r, uint4 b) {
    U y;
    y.v = b;
#pragma unroll
    for (int i = 0; i < E; i++) y.e[i] = r.post(y.e[i]);
    return y.v;
  }
};

/* Pure copies and ops without a pre/post step skip those passes at compile time. */
template <int OP>
struct chrDevOpTraits {
  static const bool hasPre = OP == CHR_DEV_PREMULSUM;
  static const bool hasPost = OP == CHR_DEV_SUMPOSTDIV;
};

/* N packs at pack indices idx + u * stride. */
template <class R, int N>
__device__ __forceinline__ void chrDevSimplePacks(const R& r, const chrDevStepPtrs& p, uint64_t idx, uint64_t stride) {
  typedef chrDevPack<R> P;
  const int OP = R::op;
  uint4 acc[N];
  if (p.nRecv > 0) {
#pragma unroll
    for (int u = 0; u < N; u++) acc[u] = chrLdCg16((const uint4*)p.recv[0] + idx + u * stride);
#pragma unroll
    for (int k = 1; k < CHR_STEP_MAX_LINKS; k++) {
      if (k < p.nRecv) {
        uint4 t[N];
#pragma unroll
        for (int u = 0; u < N; u++) t[u] = chrLdCg16((const uint4*)p.recv[k] + idx + u * stride);
#pragma unroll
        for (int u = 0; u < N; u++) acc[u] = P::red(r, acc[u], t[u]);
      }
    }
    if (p.local) {
      uint4 t[N];
#pragma unroll
      for (int u = 0; u < N; u++) t[u] = ((const uint4*)p.local)[idx + u * stride];
#pragma unroll
      for (int u = 0; u < N; u++) acc[u] = P::redPre(r, acc[u], t[u]);
    }
  } else {
#pragma unroll
    for (int u = 0; u < N; u++) acc[u] = ((const uint4*)p.local)[idx + u * stride];
    if (chrDevOpTraits<OP>::hasPre) {
#pragma unroll
      for (int u = 0; u < N; u++) acc[u] = P::pre(r, acc[u]);
    }
  }
  if (chrDevOpTraits<OP>::hasPost && p.final) {
#pragma unroll
    for (int u = 0; u < N; u++) acc[u] = P::post(r, acc[u]);
  }
  if (p.out) {
#pragma unroll
    for (int u = 0; u < N; u++) ((uint4*)p.out)[idx + u * stride] = acc[u];
  }
#pragma unroll
  for (int j = 0; j < CHR_STEP_MAX_LINKS; j++) {
    if (j < p.nSend) {
#pragma unroll
      for (int u = 0; u < N; u++) ((uint4*)p.send[j])[idx + u * stride] = acc[u];
    }
  }
}

/* Elements [first, count) one per thread. BYTEWISE: user buffers not aligned to the element size. */
template <class R, bool BYTEWISE>
__device__ __forceinline__ void chrDevSimpleElems(const R& r, const chrDevStepPtrs& p, uint64_t first, uint32_t tid,
                                                  uint32_t nThreads) {
  typedef typename R::S S;
  const int OP = R::op;
  const uint64_t n = p.count;
  for (uint64_t i = first + tid; i < n; i += nThreads) {
    const uint64_t b = i * sizeof(S);
    S v;
    if (p.nRecv > 0) {
      v = chrLdCg((const S*)(p.recv[0] + b));
#pragma unroll
      for (int k = 1; k < CHR_STEP_MAX_LINKS; k++)
        if (k < p.nRecv) v = r.red(v, chrLdCg((const S*)(p.recv[k] + b)));
      if (p.local) v = r.redPre(v, chrLdUser<S, BYTEWISE>(p.local + b));
    } else {
      v = r.pre(chrLdUser<S, BYTEWISE>(p.local + b));
    }
    if (chrDevOpTraits<OP>::hasPost && p.final) v = r.post(v);
    if (p.out) chrStUser<S, BYTEWISE>(p.out + b, v);
#pragma unroll
    for (int j = 0; j < CHR_STEP_MAX_LINKS; j++)
      if (j < p.nSend) *(S*)(p.send[j] + b) = v;
  }
}

template <class R>
__device__ void chrDevSimpleStep(const R& r, const chrDevStepPtrs& p, uint32_t tid, uint32_t nThreads) {
  typedef typename R::S S;
  const uintptr_t user = (uintptr_t)p.local | (uintptr_t)p.out;
  if ((user & 15) == 0) {
    const uint64_t nPacks = p.count / chrDevPack<R>::E;
    const uint64_t stride = nThreads;
    uint64_t idx = tid;
    const int U = chrDevUnroll<S>::N;
    for (; idx + (U - 1) * stride < nPacks; idx += U * stride) chrDevSimplePacks<R, U>(r, p, idx, stride);
    for (; idx < nPacks; idx += stride) chrDevSimplePacks<R, 1>(r, p, idx, stride);
    chrDevSimpleElems<R, false>(r, p, nPacks * chrDevPack<R>::E, tid, nThreads);
  } else if ((user & (sizeof(S) - 1)) == 0) {
    chrDevSimpleElems<R, false>(r, p, 0, tid, nThreads);
  } else {
    chrDevSimpleElems<R, true>(r, p, 0, tid, nThreads);
  }
}

#endif /* CHORUS_DEVICE_DEV_SIMPLE_CUH_ */
