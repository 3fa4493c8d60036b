/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_scope.h: makes a CUDA device current for a while and then puts back exactly what the calling
 * thread had, which may be no context at all. chrDevEnter / chrDevLeave do it in C-style code with
 * gotos; CHR_DEV_SCOPE(dev) opens a C++ scope that does it and returns an error from the enclosing
 * function when the device cannot be made current.
 *
 * Why not cudaGetDevice then cudaSetDevice(prev): a thread that never chose a device (the GPU
 * watchdog, an init thread, a copy-engine agent) reads device 0 from cudaGetDevice, and since CUDA
 * 12 cudaSetDevice(0) creates device 0's primary context. A process whose ranks use only GPU 1 then
 * makes a context on GPU 0 (at the watchdog's first probe; gpu.x2.procs.colls checks it), which
 * holds GPU 0 memory for nothing and slows the work running there (docs/perf/gpu-2gpu.md). The
 * driver's current context, looked up through the runtime (driver_entry.h), tells a thread with no
 * context apart; restoring it (NULL included) creates none.
 */
#ifndef CHORUS_DEVICE_DEV_SCOPE_H_
#define CHORUS_DEVICE_DEV_SCOPE_H_

#include <cuda.h>
#include <cuda_runtime.h>
#include "device/common/dev_error.h"
#include "device/common/driver_entry.h"

/* What a thread had before chrDevEnter. Zero-initialise it (= {}), so that chrDevLeave on a path
 * that never entered does nothing. */
struct chrDevSaved {
  CUcontext ctx; /* the driver's current context before (NULL: none) */
  bool switched; /* chrDevLeave has something to put back */
};

namespace {
typedef CUresult (*chrCtxGetFn)(CUcontext*);
typedef CUresult (*chrCtxSetFn)(CUcontext);
struct ChrCtxFns {
  chrCtxGetFn get;
  chrCtxSetFn set;
  ChrCtxFns()
      : get((chrCtxGetFn)chrDevDriverEntry("cuCtxGetCurrent")), set((chrCtxSetFn)chrDevDriverEntry("cuCtxSetCurrent")) {}
};
const ChrCtxFns& chrCtxFns() {
  static const ChrCtxFns fns; /* looked up once, thread-safe (C++11 statics) */
  return fns;
}
}  // namespace

/* Makes dev current. Each runtime call counts on a launch's path (docs/perf/gpu-2gpu.md), so a
 * thread already on dev costs a context lookup and one cudaGetDevice. Without the driver's two
 * context functions (a driver older than the core accepts, which also needs cuCtxGetCurrent) it
 * refuses rather than guess. */
static inline cudaError_t chrDevEnter(int dev, chrDevSaved* s) {
  *s = chrDevSaved{};
  const ChrCtxFns& f = chrCtxFns();
  if (f.get == NULL || f.set == NULL) return cudaErrorNotSupported;
  CUcontext cur = NULL;
  if (f.get(&cur) != CUDA_SUCCESS) cur = NULL;
  int prev = -1;
  if (cur != NULL && cudaGetDevice(&prev) == cudaSuccess && prev == dev) return cudaSuccess;
  const cudaError_t e = cudaSetDevice(dev);
  if (e == cudaSuccess) *s = chrDevSaved{cur, true};
  return e;
}

/* Puts back what chrDevEnter found (once; later calls do nothing). */
static inline void chrDevLeave(chrDevSaved* s) {
  if (!s->switched) return;
  chrCtxFns().set(s->ctx);
  s->switched = false;
}

namespace {
struct DeviceScope {
  chrDevSaved saved = {};
  cudaError_t err = cudaSuccess;
  explicit DeviceScope(int dev) { err = chrDevEnter(dev, &saved); }
  ~DeviceScope() { chrDevLeave(&saved); }
};
}  // namespace

#define CHR_DEV_SCOPE(dev)                                                                                        \
  DeviceScope scope_(dev);                                                                                        \
  if (scope_.err != cudaSuccess)                                                                                  \
    return chrDevFail(ncclUnhandledCudaError, "cannot make device %d current: %s", (dev), cudaGetErrorString(scope_.err))

#endif /* CHORUS_DEVICE_DEV_SCOPE_H_ */
