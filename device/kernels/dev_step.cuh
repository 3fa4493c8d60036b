/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_step.cuh: what one step of a work touches, resolved by the CTA's first thread (slot addresses,
 * LL flags, user buffer addresses) and shared with the CTA, plus the element combine both
 * protocols use.
 */
#ifndef CHORUS_DEVICE_DEV_STEP_CUH_
#define CHORUS_DEVICE_DEV_STEP_CUH_

#include <stdint.h>
#include "device/kernels/dev_comm.h"
#include "device/kernels/dev_reduce.cuh"
#include "hostdev/work.h"

struct chrDevStepPtrs {
  int nRecv, nSend;
  int final;
  uint64_t count;                                    /* elements of the kernel's storage type */
  const char* local;                                 /* NULL: no local input */
  char* out;                                         /* NULL: no output */
  const char* recv[CHR_STEP_MAX_LINKS];              /* SIMPLE slots */
  char* send[CHR_STEP_MAX_LINKS];
  const union chrDevLLLine* llRecv[CHR_STEP_MAX_LINKS]; /* LL slots */
  union chrDevLLLine* llSend[CHR_STEP_MAX_LINKS];
  uint32_t recvFlag[CHR_STEP_MAX_LINKS];
  uint32_t sendFlag[CHR_STEP_MAX_LINKS];
};

/* L2-only loads for data another SM wrote (a FIFO slot), by element width. */
template <typename S>
__device__ __forceinline__ S chrLdCg(const S* p) {
  S v;
  if constexpr (sizeof(S) == 1) {
    uint16_t x;
    asm volatile("ld.global.cg.u8 %0, [%1];" : "=h"(x) : "l"(p));
    uint8_t b = (uint8_t)x;
    memcpy(&v, &b, 1);
  } else if constexpr (sizeof(S) == 2) {
    uint16_t x;
    asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(x) : "l"(p));
    memcpy(&v, &x, 2);
  } else if constexpr (sizeof(S) == 4) {
    uint32_t x;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(x) : "l"(p));
    memcpy(&v, &x, 4);
  } else {
    uint64_t x;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(x) : "l"(p));
    memcpy(&v, &x, 8);
  }
  return v;
}

__device__ __forceinline__ uint4 chrLdCg16(const void* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

/* An element of a user buffer that may not be aligned to its size (any byte address is valid on the
 * host, so it must be here too). */
template <typename S, bool BYTEWISE>
__device__ __forceinline__ S chrLdUser(const char* p) {
  if constexpr (BYTEWISE) {
    uint8_t b[sizeof(S)];
#pragma unroll
    for (int i = 0; i < (int)sizeof(S); i++) b[i] = ((const uint8_t*)p)[i];
    S v;
    memcpy(&v, b, sizeof(S));
    return v;
  } else {
    return *(const S*)p;
  }
}

template <typename S, bool BYTEWISE>
__device__ __forceinline__ void chrStUser(char* p, S v) {
  if constexpr (BYTEWISE) {
    uint8_t b[sizeof(S)];
    memcpy(b, &v, sizeof(S));
#pragma unroll
    for (int i = 0; i < (int)sizeof(S); i++) ((uint8_t*)p)[i] = b[i];
  } else {
    *(S*)p = v;
  }
}

#endif /* CHORUS_DEVICE_DEV_STEP_CUH_ */
