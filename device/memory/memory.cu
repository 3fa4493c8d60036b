/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memory.cu: GPU memory for ncclMemAlloc / ncclMemFree (hostdev/dev_api.h). Plain cudaMalloc on the device
 * the caller names: such memory works with every path of this library (peer access in one process,
 * CUDA IPC between processes), so buffers from ncclMemAlloc need nothing special anywhere else.
 */
#include "device/common/dev_error.h"
#include "device/common/dev_scope.h"
#include "hostdev/dev_api.h"

extern "C" ncclResult_t chrDevMemAlloc(int cudaDev, void** ptr, size_t size) {
  if (ptr == NULL || size == 0) return chrDevFail(ncclInvalidArgument, "chrDevMemAlloc: NULL pointer or 0 bytes");
  *ptr = NULL;
  CHR_DEV_SCOPE(cudaDev);
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaMalloc(ptr, size), res, fail);
fail:
  return res;
}

extern "C" ncclResult_t chrDevMemFree(void* ptr) {
  cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
  if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
    if (e != cudaSuccess) cudaGetLastError();
    return chrDevFail(ncclInvalidArgument, "chrDevMemFree: %p is not GPU memory", ptr);
  }
  CHR_DEV_SCOPE(attr.device);
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaFree(ptr), res, fail);
fail:
  return res;
}
