/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_error.h: error reporting inside the device library. The library is loaded by the core with
 * dlopen and cannot call the core's logger, so the first code that detects an error stores its
 * message here (per thread) and returns the code; the core quotes chrDevLastError() once.
 */
#ifndef CHORUS_DEVICE_DEV_ERROR_H_
#define CHORUS_DEVICE_DEV_ERROR_H_

#include <cuda_runtime.h>
#include "nccl.h"

ncclResult_t chrDevFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define chrDevFail(res, ...) chrDevFailAt((res), __FILE__, __LINE__, __VA_ARGS__)

/* A CUDA runtime call that must succeed; on failure: res = ncclUnhandledCudaError, goto label. */
#define CHR_DEV_CUDA_GOTO(call, res, label)                                                          \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      (res) = chrDevFail(ncclUnhandledCudaError, "%s: %s (%s)", #call, cudaGetErrorString(e_),      \
                         cudaGetErrorName(e_));                                                      \
      goto label;                                                                                    \
    }                                                                                                \
  } while (0)

#endif /* CHORUS_DEVICE_DEV_ERROR_H_ */
