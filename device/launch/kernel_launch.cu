/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernel_launch.cu: chrDevLaunchArgs (kernel_launch.h).
 */
#include <cuda.h>
#include <pthread.h>
#include "device/common/dev_error.h"
#include "device/common/driver_entry.h"
#include "device/launch/kernel_launch.h"

typedef CUresult (*launchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
typedef CUresult (*errorNameFn)(CUresult, const char**);

static launchFn driverLaunch;
static errorNameFn driverErrorName;
static int shortRefused; /* the driver refused a short buffer once: whole blocks from then on */
static pthread_once_t resolveOnce = PTHREAD_ONCE_INIT;

static void resolve(void) {
  driverLaunch = (launchFn)chrDevDriverEntry("cuLaunchKernel");
  driverErrorName = (errorNameFn)chrDevDriverEntry("cuGetErrorName");
}

cudaKernel_t chrDevKernelHandle(const void* fn) {
  cudaKernel_t k = NULL;
  if (fn == NULL || cudaGetKernel(&k, fn) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return k;
}

static CUresult launchDriver(cudaKernel_t handle, unsigned grid, unsigned block, cudaStream_t stream, void* args,
                             size_t bytes) {
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END};
  /* cuLaunchKernel takes a CUkernel where it takes a CUfunction (CUDA 12.0 and later), launched in
   * the current context: the caller has set the rank's device. */
  return driverLaunch((CUfunction)handle, grid, 1, 1, block, 1, 1, 0, (CUstream)stream, NULL, extra);
}

ncclResult_t chrDevLaunchArgs(const void* fn, cudaKernel_t handle, unsigned grid, unsigned block, cudaStream_t stream,
                              void* args, size_t used, size_t full) {
  pthread_once(&resolveOnce, resolve);
  if (driverLaunch != NULL && handle != NULL) {
    const size_t shortBytes = (used + 15) & ~(size_t)15; /* the block's alignment */
    CUresult r = launchDriver(handle, grid, block, stream, args,
                              __atomic_load_n(&shortRefused, __ATOMIC_RELAXED) || shortBytes > full ? full : shortBytes);
    if (r == CUDA_ERROR_INVALID_VALUE && !__atomic_load_n(&shortRefused, __ATOMIC_RELAXED)) {
      r = launchDriver(handle, grid, block, stream, args, full);
      if (r == CUDA_SUCCESS) __atomic_store_n(&shortRefused, 1, __ATOMIC_RELAXED);
    }
    if (r == CUDA_SUCCESS) return ncclSuccess;
    const char* name = "unknown";
    if (driverErrorName == NULL || driverErrorName(r, &name) != CUDA_SUCCESS) name = "unknown";
    return chrDevFail(ncclUnhandledCudaError, "cuLaunchKernel (%u CTAs, %zu argument bytes): %s (%d)", grid, used,
                      name, (int)r);
  }
  void* params[] = {args};
  cudaError_t e = cudaLaunchKernel(fn, dim3(grid), dim3(block), params, 0, stream);
  if (e != cudaSuccess)
    return chrDevFail(ncclUnhandledCudaError, "cudaLaunchKernel (%u CTAs): %s", grid, cudaGetErrorString(e));
  return ncclSuccess;
}
