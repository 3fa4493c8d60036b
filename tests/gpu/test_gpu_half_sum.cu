/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_half_sum.cu (gpu.halfsum): the kernels' packed float16 and bfloat16 sums (chrDevHalf2Sum,
 * device/kernels/dev_reduce.cuh) against the element arithmetic they stand in for (chrDevRed::red: decode,
 * one float add, encode), on the GPU, for every ordered pair of 16-bit codes of each type (2^32
 * pairs, each in the low and the high half of the word), and through the SIMPLE and LL pack helpers
 * the kernels call (chrDevPack, chrDevLLWord) for sum, SumPostDiv and PreMulSum. Also the GPU's own
 * conversions of CHR_DEV_HW_CONVERT (device/kernels/dev_float.h, on by default; this test is built with it on
 * whatever the library's build says) against the integer ones the host shares: every half code decoded (identical
 * bits, a NaN for a NaN), every float encoded to half (2^32, identical bits). The CPU cannot run
 * the PTX; gpu.arith checks the integer versions and red() against the host's chrReduce. SKIP (77)
 * without a GPU.
 */
#ifndef CHR_DEV_HW_CONVERT
#define CHR_DEV_HW_CONVERT 1
#endif
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device/kernels/dev_kernel.cuh"

struct Result {
  unsigned long long wrong;
  unsigned int firstA, firstB, got, want;
};

__device__ void note(Result* res, uint32_t a, uint32_t b, uint32_t got, uint32_t want) {
  if (atomicAdd(&res->wrong, 1ull) == 0) {
    res->firstA = a;
    res->firstB = b;
    res->got = got;
    res->want = want;
  }
}

/* Block x covers a = x; its threads sweep every b. Lane 0 holds (a, b), lane 1 (b, a). */
template <int TY>
__global__ void everyPair(Result* res) {
  const chrDevRed<TY, CHR_DEV_SUM> r(0, 1);
  const uint32_t a = blockIdx.x;
  for (uint32_t b = threadIdx.x; b < 65536u; b += blockDim.x) {
    const uint32_t got = chrDevHalf2Sum<TY>(a | b << 16, b | a << 16);
    const uint32_t want = r.red((uint16_t)a, (uint16_t)b) | (uint32_t)r.red((uint16_t)b, (uint16_t)a) << 16;
    if (got != want) note(res, a, b, got, want);
  }
}

/* Every half code decoded (block 0), and every float encoded: block x holds the high 16 bits. */
__global__ void conversions(Result* res) {
  const uint32_t h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h < 65536u) {
    const float f = chrDevHalfToFloat((uint16_t)h), soft = chrDevHalfToFloatSoft((uint16_t)h);
    const uint32_t got = chrDevF32Bits(f), want = chrDevF32Bits(soft);
    if (soft != soft ? f == f : got != want) note(&res[0], h, 0, got, want); /* a NaN's payload may differ */
  }
  for (uint32_t lo = threadIdx.x; lo < 65536u; lo += blockDim.x) {
    const uint32_t u = blockIdx.x << 16 | lo;
    const float f = chrDevF32FromBits(u);
    const uint16_t h = chrDevFloatToHalf(f), hs = chrDevFloatToHalfSoft(f);
    if (h != hs) note(&res[1], u >> 16, u & 0xffffu, h, hs);
  }
}

/* The pack helpers pick the packed path at compile time for these ops; each must give the bits of
 * its element-wise red()/redPre(). */
template <int TY, int OP>
__device__ void packsOf(Result* res, uint32_t seed) {
  typedef chrDevRed<TY, OP> R;
  const R r((uint16_t)(TY == ncclFloat16 ? 0x3c00 : 0x3f80) /* 1.0 */, 3);
  uint32_t w[8];
  for (int i = 0; i < 8; i++) {
    seed = seed * 1664525u + 1013904223u;
    w[i] = seed;
  }
  const uint4 a = make_uint4(w[0], w[1], w[2], w[3]), b = make_uint4(w[4], w[5], w[6], w[7]);
  const uint4 s = chrDevPack<R>::red(r, a, b), p = chrDevPack<R>::redPre(r, a, b);
  const uint64_t l = chrDevLLWord<R>::red(r, (uint64_t)w[1] << 32 | w[0], (uint64_t)w[5] << 32 | w[4]);
  const uint32_t sw[4] = {s.x, s.y, s.z, s.w}, pw[4] = {p.x, p.y, p.z, p.w};
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 2; h++) {
      const uint16_t x = (uint16_t)(w[i] >> 16 * h), y = (uint16_t)(w[4 + i] >> 16 * h);
      const uint16_t gs = (uint16_t)(sw[i] >> 16 * h), gp = (uint16_t)(pw[i] >> 16 * h);
      if (gs != r.red(x, y)) note(res, x, y, gs, r.red(x, y));
      if (gp != r.redPre(x, y)) note(res, x, y, gp, r.redPre(x, y));
      if (i < 2) {
        const uint16_t gl = (uint16_t)(l >> (32 * i + 16 * h));
        if (gl != r.red(x, y)) note(res, x, y, gl, r.red(x, y));
      }
    }
}

template <int TY>
__global__ void packs(Result* res) {
  const uint32_t seed = blockIdx.x * blockDim.x + threadIdx.x;
  packsOf<TY, CHR_DEV_SUM>(res, seed);
  packsOf<TY, CHR_DEV_SUMPOSTDIV>(res, seed ^ 0x9e3779b9u);
  packsOf<TY, CHR_DEV_PREMULSUM>(res, seed ^ 0x7f4a7c15u);
}

static int report(const char* what, const Result& r) {
  if (!r.wrong) {
    printf("gpu.halfsum %s: 0 wrong\n", what);
    return 0;
  }
  printf("FAIL gpu.halfsum %s: %llu wrong; first: 0x%04x + 0x%04x gives 0x%08x, red() 0x%08x\n", what, r.wrong,
         r.firstA, r.firstB, r.got, r.want);
  return 1;
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    printf("SKIP: no CUDA device\n");
    return 77;
  }
  Result* res;
  if (cudaMallocManaged(&res, 6 * sizeof(Result)) != cudaSuccess) return 1;
  memset(res, 0, 6 * sizeof(Result));
  conversions<<<65536, 256>>>(&res[4]);
  everyPair<ncclFloat16><<<65536, 256>>>(&res[0]);
  packs<ncclFloat16><<<1024, 256>>>(&res[1]);
  everyPair<ncclBfloat16><<<65536, 256>>>(&res[2]);
  packs<ncclBfloat16><<<1024, 256>>>(&res[3]);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("FAIL gpu.halfsum: %s\n", cudaGetErrorString(e));
    return 1;
  }
  int rc = report("float16, every pair (2^32, both lanes)", res[0]);
  rc |= report("float16, pack helpers (sum, SumPostDiv, PreMulSum; SIMPLE and LL)", res[1]);
  rc |= report("bfloat16, every pair (2^32, both lanes)", res[2]);
  rc |= report("bfloat16, pack helpers (sum, SumPostDiv, PreMulSum; SIMPLE and LL)", res[3]);
  rc |= report("cvt: every half decoded", res[4]);
  rc |= report("cvt: every float encoded to half (first: high, low 16 bits)", res[5]);
  cudaFree(res);
  return rc;
}
