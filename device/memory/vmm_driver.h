/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vmm_driver.h: the CUDA driver's virtual memory functions (cuMemCreate and its kin) in one table,
 * looked up through the runtime (driver_entry.h), so the library never links libcuda. Each function
 * is named once, and its pointer takes cuda.h's own prototype. Used by the copy engine's descriptor
 * sharing (ce_vmm.cu), by the layouts the GPU tests and chorus-perf make (vmm_layout.h) and by the
 * probe (tools/gpu/vmm_probe.cu). C and C++.
 */
#ifndef CHORUS_DEVICE_VMM_DRIVER_H_
#define CHORUS_DEVICE_VMM_DRIVER_H_

#include <cuda.h>
#include "device/common/driver_entry.h"

/* X(cuda.h's name, the table's field) for each function. The name is stringified unexpanded (the
 * entry point's base name, which the lookup wants) and expanded for the prototype (cuda.h maps some
 * names to their current version, e.g. cuMemGetAddressRange_v2, the one the lookup returns). */
#define CHR_VMM_FUNCS(X)                                                                                   \
  X(cuMemGetAllocationGranularity, granularity) X(cuMemCreate, create) X(cuMemRelease, release)          \
  X(cuMemAddressReserve, reserve) X(cuMemAddressFree, addrFree) X(cuMemMap, map) X(cuMemUnmap, unmap)  \
  X(cuMemSetAccess, access) X(cuMemGetAddressRange, range) X(cuPointerGetAttributes, attributes)        \
  X(cuMemRetainAllocationHandle, retain) X(cuMemGetAllocationPropertiesFromHandle, props)              \
  X(cuMemExportToShareableHandle, exportFd) X(cuMemImportFromShareableHandle, importFd)

struct chrVmmDriver {
#define CHR_VMM_FIELD(fn, field) __typeof__(&fn) field;
  CHR_VMM_FUNCS(CHR_VMM_FIELD)
#undef CHR_VMM_FIELD
};

/* Fills d; 1 when the driver has every function. */
static inline int chrVmmDriverResolve(struct chrVmmDriver* d) {
  int all = 1;
#define CHR_VMM_LOOKUP(fn, field) all &= (*(void**)&d->field = chrDevDriverEntry(#fn)) != NULL;
  CHR_VMM_FUNCS(CHR_VMM_LOOKUP)
#undef CHR_VMM_LOOKUP
  return all;
}

/* Unmaps every mapping in the reserved range [va, va + span), one at a time (cuMemUnmap takes a
 * whole mapping; a chunk no longer mapped nor held is freed), and frees the range. */
static inline void chrVmmUnmapRange(const struct chrVmmDriver* d, CUdeviceptr va, size_t span) {
  for (CUdeviceptr at = va; at < va + span;) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (d->range(&base, &size, at) == CUDA_SUCCESS && size > 0 && base + size > at) {
      d->unmap(base, size);
      at = base + size;
    } else {
      at += (CUdeviceptr)1 << 21; /* not mapped: the next granule (2 MiB, the smallest) */
    }
  }
  d->addrFree(va, span);
}

#endif /* CHORUS_DEVICE_VMM_DRIVER_H_ */
