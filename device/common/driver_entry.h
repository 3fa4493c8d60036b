/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * driver_entry.h: a CUDA driver function looked up through the runtime linked into this library
 * (cudaGetDriverEntryPointByVersion, CUDA 12.0's ABI), so the library never links libcuda. NULL when
 * the driver lacks it; a failed lookup leaves no error behind for the caller's next check. C and C++
 * (the GPU tests use it too).
 */
#ifndef CHORUS_DEVICE_DRIVER_ENTRY_H_
#define CHORUS_DEVICE_DRIVER_ENTRY_H_

#include <cuda_runtime.h>

static inline void* chrDevDriverEntry(const char* name) {
  void* p = NULL;
  enum cudaDriverEntryPointQueryResult q; /* (enum: C callers too) */
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    p = NULL;
  cudaGetLastError();
  return p;
}

#endif /* CHORUS_DEVICE_DRIVER_ENTRY_H_ */
