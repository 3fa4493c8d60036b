/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_ll.cuh: one LL step. The step's bytes travel as 16-byte lines of 8 data bytes and two flags;
 * thread t of nThreads (the whole CTA) handles lines t, t + nThreads, ... : it polls each received
 * line until both flags say step + 1 (no tail, no fence: the flag arrives with its data), combines
 * the terms element by element, writes the output and stores the line to every send slot with its
 * own flag. The last line of a step may hold fewer than 8 bytes; its unused bytes are zero on the
 * send side and ignored on the receive side.
 */
#ifndef CHORUS_DEVICE_DEV_LL_CUH_
#define CHORUS_DEVICE_DEV_LL_CUH_

#include "device/kernels/dev_simple.cuh"
#include "device/kernels/dev_sync.cuh"

/* Poll one line until both flags are `flag`; false when the comm was aborted meanwhile. */
__device__ __forceinline__ bool chrDevLLRead(const union chrDevLLLine* line, uint32_t flag, chrDevAbort& ab,
                                             uint64_t* data) {
  uint32_t d1, f1, d2, f2;
  for (;;) {
    chrLLLoad(line, &d1, &f1, &d2, &f2);
    if (f1 == flag && f2 == flag) break;
    if (ab.poll()) return false;
  }
  *data = (uint64_t)d1 | ((uint64_t)d2 << 32);
  return true;
}

/* nE elements of a user buffer into the low bytes of a line's data (the rest zero). */
template <typename S>
__device__ __forceinline__ uint64_t chrDevLLLoadUser(const char* p, int nE, bool aligned8) {
  if (aligned8 && nE * (int)sizeof(S) == 8) return *(const uint64_t*)p;
  union {
    uint64_t u;
    S e[8 / sizeof(S)];
  } x;
  x.u = 0;
  const bool elemAligned = ((uintptr_t)p & (sizeof(S) - 1)) == 0;
  /* Unrolled with constant indices, so x stays in registers. */
#pragma unroll
  for (int i = 0; i < (int)(8 / sizeof(S)); i++)
    if (i < nE) x.e[i] = elemAligned ? chrLdUser<S, false>(p + i * sizeof(S)) : chrLdUser<S, true>(p + i * sizeof(S));
  return x.u;
}

template <typename S>
__device__ __forceinline__ void chrDevLLStoreUser(char* p, int nE, bool aligned8, uint64_t v) {
  if (aligned8 && nE * (int)sizeof(S) == 8) {
    *(uint64_t*)p = v;
    return;
  }
  union {
    uint64_t u;
    S e[8 / sizeof(S)];
  } x;
  x.u = v;
  const bool elemAligned = ((uintptr_t)p & (sizeof(S) - 1)) == 0;
#pragma unroll
  for (int i = 0; i < (int)(8 / sizeof(S)); i++) {
    if (i >= nE) break;
    if (elemAligned) chrStUser<S, false>(p + i * sizeof(S), x.e[i]);
    else chrStUser<S, true>(p + i * sizeof(S), x.e[i]);
  }
}

/* Element-wise over the 8 bytes of a line. */
template <class R>
struct chrDevLLWord {
  typedef typename R::S S;
  static const int E = 8 / sizeof(S);
  union U {
    uint64_t u;
    S e[8 / sizeof(S)];
  };
  static __device__ __forceinline__ uint64_t half2Sums(uint64_t a, uint64_t b) {
    return (uint64_t)chrDevHalf2Sum<R::type>((uint32_t)a, (uint32_t)b) |
           (uint64_t)chrDevHalf2Sum<R::type>((uint32_t)(a >> 32), (uint32_t)(b >> 32)) << 32;
  }
  static __device__ __forceinline__ uint64_t red(const R& r, uint64_t a, uint64_t b) {
    if constexpr (chrDevHalfSum<R>::red) return half2Sums(a, b);
    U x, y;
    x.u = a;
    y.u = b;
#pragma unroll
    for (int i = 0; i < E; i++) x.e[i] = r.red(x.e[i], y.e[i]);
    return x.u;
  }
  static __device__ __forceinline__ uint64_t redPre(const R& r, uint64_t a, uint64_t b) {
    if constexpr (chrDevHalfSum<R>::redPre) return half2Sums(a, b);
    U x, y;
    x.u = a;
    y.u = b;
#pragma unroll
    for (int i = 0; i < E; i++) x.e[i] = r.redPre(x.e[i], y.e[i]);
    return x.u;
  }
  static __device__ __forceinline__ uint64_t pre(const R& r, uint64_t b) {
    U y;
    y.u = b;
#pragma unroll
    for (int i = 0; i < E; i++) y.e[i] = r.pre(y.e[i]);
    return y.u;
  }
  static __device__ __forceinline__ uint64_t post(const R& r, uint64_t b) {
    U y;
    y.u = b;
#pragma unroll
    for (int i = 0; i < E; i++) y.e[i] = r.post(y.e[i]);
    return y.u;
  }
};

/* The CTA's part of one LL step; returns early (the caller's barrier still follows) on abort. */
template <class R>
__device__ void chrDevLLStep(const R& r, const chrDevStepPtrs& p, chrDevAbort& ab, uint32_t tid, uint32_t nThreads) {
  typedef typename R::S S;
  typedef chrDevLLWord<R> W;
  const int OP = R::op;
  const uint64_t n = p.count;
  const uint64_t nLines = (n * sizeof(S) + 7) / 8;
  const bool localAligned = ((uintptr_t)p.local & 7) == 0;
  const bool outAligned = ((uintptr_t)p.out & 7) == 0;
  for (uint64_t l = tid; l < nLines; l += nThreads) {
    const uint64_t e0 = l * W::E;
    const int nE = n - e0 < (uint64_t)W::E ? (int)(n - e0) : W::E;
    const uint64_t b = l * 8;
    uint64_t acc;
    if (p.nRecv > 0) {
      if (!chrDevLLRead(p.llRecv[0] + l, p.recvFlag[0], ab, &acc)) return;
#pragma unroll
      for (int k = 1; k < CHR_STEP_MAX_LINKS; k++) {
        if (k < p.nRecv) {
          uint64_t t;
          if (!chrDevLLRead(p.llRecv[k] + l, p.recvFlag[k], ab, &t)) return;
          acc = W::red(r, acc, t);
        }
      }
      if (p.local) acc = W::redPre(r, acc, chrDevLLLoadUser<S>(p.local + b, nE, localAligned));
    } else {
      acc = chrDevLLLoadUser<S>(p.local + b, nE, localAligned);
      if (chrDevOpTraits<OP>::hasPre) acc = W::pre(r, acc);
    }
    if (chrDevOpTraits<OP>::hasPost && p.final) acc = W::post(r, acc);
    if (p.out) chrDevLLStoreUser<S>(p.out + b, nE, outAligned, acc);
#pragma unroll
    for (int j = 0; j < CHR_STEP_MAX_LINKS; j++)
      if (j < p.nSend) chrLLStore(p.llSend[j] + l, acc, p.sendFlag[j]);
  }
}

#endif /* CHORUS_DEVICE_DEV_LL_CUH_ */
