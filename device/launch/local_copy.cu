/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * local_copy.cu: local_copy.h.
 */
#include "device/launch/local_copy.h"

#include <stdint.h>

/* 16-byte packs, then the tail (under 16 bytes) byte by byte. */
__global__ void chrDevLocalCopyKernel(uint4* dst, const uint4* src, size_t packs, char* dstTail, const char* srcTail,
                                      size_t tail) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < packs; i += stride) dst[i] = src[i];
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < tail; i += stride) dstTail[i] = srcTail[i];
}

cudaError_t chrDevLocalCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  const int aligned = ((uintptr_t)dst % 16 == 0) && ((uintptr_t)src % 16 == 0);
  if (CHR_DEV_SELF_COPY_CTAS <= 0 || bytes == 0 || !aligned)
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  const size_t packs = bytes / 16, head = packs * 16;
  chrDevLocalCopyKernel<<<CHR_DEV_SELF_COPY_CTAS, 512, 0, stream>>>((uint4*)dst, (const uint4*)src, packs,
                                                                     (char*)dst + head, (const char*)src + head,
                                                                     bytes - head);
  return cudaGetLastError();
}

cudaError_t chrDevLoadLocalCopy(void) {
  if (CHR_DEV_SELF_COPY_CTAS <= 0) return cudaSuccess;
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, chrDevLocalCopyKernel); /* loads its module on this device */
}
