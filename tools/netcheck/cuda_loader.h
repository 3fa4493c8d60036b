/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_loader.h: the few CUDA driver calls chorus-netcheck makes for --mem cuda, found with
 * dlopen("libcuda.so.1") when a rank first needs them. The tool links no CUDA library and includes
 * no CUDA header, so it builds and runs where there is none; only --mem cuda needs a driver. The
 * types and values are those of CUDA's cuda.h (the driver API's ABI, stable across versions). Only
 * gpumem.c uses this header.
 */
#ifndef CHORUS_NETCHECK_CUDA_LOADER_H_
#define CHORUS_NETCHECK_CUDA_LOADER_H_

#include <stddef.h>

typedef int ncCuResult;
typedef int ncCuDevice;
typedef void* ncCuContext;
typedef unsigned long long ncCuDevicePtr;

#define NC_CUDA_SUCCESS 0
#define NC_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define NC_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

typedef struct {
  ncCuResult (*cuInit)(unsigned int flags);
  ncCuResult (*cuDriverGetVersion)(int* version);
  ncCuResult (*cuGetErrorString)(ncCuResult error, const char** text);
  ncCuResult (*cuDeviceGetCount)(int* count);
  ncCuResult (*cuDeviceGet)(ncCuDevice* dev, int ordinal);
  ncCuResult (*cuDeviceGetAttribute)(int* value, int attribute, ncCuDevice dev);
  ncCuResult (*cuDevicePrimaryCtxRetain)(ncCuContext* ctx, ncCuDevice dev);
  ncCuResult (*cuDevicePrimaryCtxRelease)(ncCuDevice dev);
  ncCuResult (*cuCtxSetCurrent)(ncCuContext ctx);
  ncCuResult (*cuCtxSynchronize)(void);
  ncCuResult (*cuMemAlloc)(ncCuDevicePtr* ptr, size_t bytes);
  ncCuResult (*cuMemFree)(ncCuDevicePtr ptr);
  ncCuResult (*cuMemcpyHtoD)(ncCuDevicePtr dst, const void* src, size_t bytes);
  ncCuResult (*cuMemcpyDtoH)(void* dst, ncCuDevicePtr src, size_t bytes);
  ncCuResult (*cuMemsetD8)(ncCuDevicePtr dst, unsigned char value, size_t bytes);
  /* CUDA 11.7 and later; NULL on an older driver, which then gives no dma-buf. */
  ncCuResult (*cuMemGetHandleForAddressRange)(void* handle, ncCuDevicePtr ptr, size_t bytes, int type,
                                              unsigned long long flags);
  int version; /* cuDriverGetVersion: 1000 * major + 10 * minor */
} ncCudaDriver;

/* The driver, loaded and cuInit(0) run once per process; NULL when there is none usable, and then
 * *why (when why is not NULL) says what is missing. The library stays loaded. */
const ncCudaDriver* ncCudaLoad(const char** why);

/* The driver's name for an error, or "CUDA error N". */
const char* ncCudaErrorText(const ncCudaDriver* cu, ncCuResult r);

#endif /* CHORUS_NETCHECK_CUDA_LOADER_H_ */
