/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vmm_layout.h: GPU memory laid out as PyTorch's expandable segments lay it out: one reserved
 * address range with physical chunks (cuMemCreate) mapped side by side in it, read-write for the
 * GPU that holds them. The device library never makes such memory (it meets it in users' buffers);
 * the GPU tests and tools do, to give it the buffers it must handle. The driver's functions come
 * from vmm_driver.h's table, so callers link no libcuda. C and C++.
 */
#ifndef CHORUS_DEVICE_VMM_LAYOUT_H_
#define CHORUS_DEVICE_VMM_LAYOUT_H_

#include <cuda.h>
#include <string.h>
#include "device/memory/vmm_driver.h"

/* Pinned memory on GPU dev, exportable as a POSIX file descriptor when fdHandles. */
static inline CUmemAllocationProp chrVmmProp(int dev, int fdHandles) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  if (fdHandles) prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

/* Maps fresh chunks of chunk bytes (cuMemCreate on GPU dev, the POSIX file descriptor handle type
 * when fdHandles) side by side over the reserved [va, va + total), read-write for dev. When remap,
 * the chunks mapped there now are unmapped first (freed, unless something else holds them): what an
 * allocator that returns memory and maps new memory at the same addresses does. */
static inline CUresult chrVmmMapChunks(int dev, CUdeviceptr va, size_t total, size_t chunk, int fdHandles, int remap) {
  struct chrVmmDriver d;
  if (!chrVmmDriverResolve(&d)) return CUDA_ERROR_NOT_FOUND;
  const CUmemAllocationProp prop = chrVmmProp(dev, fdHandles);
  CUresult r;
  for (size_t off = 0; off < total; off += chunk) {
    if (remap && (r = d.unmap(va + off, chunk)) != CUDA_SUCCESS) return r;
    CUmemGenericAllocationHandle h;
    if ((r = d.create(&h, chunk, &prop, 0)) != CUDA_SUCCESS) return r;
    r = d.map(va + off, chunk, 0, h, 0);
    d.release(h); /* the mapping keeps the chunk */
    if (r != CUDA_SUCCESS) return r;
  }
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d.access(va, total, &desc, 1);
}

/* At least `bytes` on GPU dev in chunks of chunkBytes rounded up to the allocation granularity (0:
 * one chunk for the whole), each made with the POSIX file descriptor handle type when fdHandles (so
 * that it can be exported). *va, *total and *chunk: the range, its size, the chunk size. Returns
 * CUDA_SUCCESS, the first failing call's result, or CUDA_ERROR_NOT_FOUND without the driver's
 * virtual memory API. The chunks stay mapped until the caller unmaps the range. */
static inline CUresult chrVmmLayout(int dev, size_t bytes, size_t chunkBytes, int fdHandles, CUdeviceptr* va,
                                    size_t* total, size_t* chunk) {
  struct chrVmmDriver d;
  if (!chrVmmDriverResolve(&d)) return CUDA_ERROR_NOT_FOUND;
  const CUmemAllocationProp prop = chrVmmProp(dev, fdHandles);
  size_t g = 0;
  CUresult r = d.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS) return r;
  const size_t want = chunkBytes ? chunkBytes : bytes;
  *chunk = (want + g - 1) / g * g;
  *total = (bytes + *chunk - 1) / *chunk * *chunk;
  if ((r = d.reserve(va, *total, g, 0, 0)) != CUDA_SUCCESS) return r;
  return chrVmmMapChunks(dev, *va, *total, *chunk, fdHandles, 0);
}

/* Unmaps the chunks of the reserved [va, va + span) (freeing them) and frees the range. */
static inline void chrVmmFree(CUdeviceptr va, size_t span) {
  struct chrVmmDriver d;
  if (chrVmmDriverResolve(&d)) chrVmmUnmapRange(&d, va, span);
}

#endif /* CHORUS_DEVICE_VMM_LAYOUT_H_ */
