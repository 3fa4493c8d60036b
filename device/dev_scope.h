/*
 * dev_scope.h: makes a CUDA device current for a C++ scope and restores the caller's (the runtime
 * linked into this library keeps its own current device per thread). CHR_DEV_SCOPE(dev) opens one
 * and returns an error from the enclosing function when the device cannot be made current.
 */
#ifndef CHORUS_DEVICE_DEV_SCOPE_H_
#define CHORUS_DEVICE_DEV_SCOPE_H_

#include <cuda_runtime.h>
#include "device/dev_error.h"

namespace {
/* Makes cudaDev current for the scope; restores the previous device if it had to change it. Each
 * runtime call counts on a launch's path (cudaGetDevice plus two cudaSetDevice took 0.3-3.0 us on the
 * H100 hosts, docs/perf/gpu-2gpu.md), so a device already current costs one cudaGetDevice. */
struct DeviceScope {
  int prev = -1;
  bool switched = false;
  cudaError_t err = cudaSuccess;
  explicit DeviceScope(int dev) {
    err = cudaGetDevice(&prev);
    if (err == cudaSuccess && prev != dev) {
      err = cudaSetDevice(dev);
      switched = err == cudaSuccess;
    }
  }
  ~DeviceScope() {
    if (switched) cudaSetDevice(prev);
  }
};
}  // namespace

#define CHR_DEV_SCOPE(dev)                                                                                        \
  DeviceScope scope_(dev);                                                                                        \
  if (scope_.err != cudaSuccess)                                                                                  \
    return chrDevFail(ncclUnhandledCudaError, "cannot make device %d current: %s", (dev), cudaGetErrorString(scope_.err))

#endif /* CHORUS_DEVICE_DEV_SCOPE_H_ */
