/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_driver.h: the one place the core reaches the CUDA driver.
 *
 * Chorus never links against CUDA: libcuda.so.1 is opened at run time, on first use, and every
 * driver call the core makes goes through the table below, so one build runs on machines with and
 * without a GPU. No usable driver (library absent, a symbol missing, cuInit failing) means every
 * buffer is host memory.
 *
 * The driver's types and constants are declared here under our own names (values as in CUDA's
 * cuda.h; that header is not included, so this compiles without a CUDA toolkit and does not clash
 * with cuda.h in code that also includes it). Add entry points to the table as the GPU path needs them.
 */
#ifndef CHORUS_CUDA_DRIVER_H_
#define CHORUS_CUDA_DRIVER_H_

#include <stddef.h>
#include <stdint.h>

typedef int chrCuResult;                  /* CUresult */
typedef unsigned long long chrCuDevicePtr; /* CUdeviceptr */

#define CHR_CUDA_SUCCESS 0
#define CHR_CUDA_ERROR_INVALID_VALUE 1    /* also: "not a pointer the driver knows" */

/* CUpointer_attribute values used by the core. */
#define CHR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2 /* unsigned int: a CUmemorytype below */
#define CHR_CU_POINTER_ATTRIBUTE_IS_MANAGED 8  /* boolean: managed (cudaMallocManaged) memory */

/* CUmemorytype values. */
#define CHR_CU_MEMORYTYPE_HOST 1
#define CHR_CU_MEMORYTYPE_DEVICE 2
#define CHR_CU_MEMORYTYPE_ARRAY 3
#define CHR_CU_MEMORYTYPE_UNIFIED 4

/* CUdevice_attribute values used by the core. */
#define CHR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CHR_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define CHR_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define CHR_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define CHR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CHR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CHR_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 116

typedef void* chrCuContext; /* CUcontext */
typedef int chrCuDevice;    /* CUdevice */
typedef void* chrCuStream;  /* CUstream */

#define CHR_CU_STREAM_NON_BLOCKING 0x1

/* The driver entry points (names and signatures as the driver exports them). The first three are
 * required; the context and device queries are optional (NULL when the library lacks them), and the
 * GPU path needs them (chrCudaGpuPathUsable). */
struct chrCudaDriver {
  int version; /* cuDriverGetVersion: 1000 * major + 10 * minor, e.g. 12080 */
  chrCuResult (*cuInit)(unsigned int flags);
  chrCuResult (*cuDriverGetVersion)(int* driverVersion);
  chrCuResult (*cuPointerGetAttribute)(void* data, int attribute, chrCuDevicePtr ptr);
  /* Optional: several attributes in one call (an address the driver does not know reads as zeros). */
  chrCuResult (*cuPointerGetAttributes)(unsigned int numAttributes, int* attributes, void** data, chrCuDevicePtr ptr);
  chrCuResult (*cuCtxGetCurrent)(chrCuContext* ctx);
  chrCuResult (*cuCtxGetDevice)(chrCuDevice* device);
  chrCuResult (*cuDeviceGet)(chrCuDevice* device, int ordinal);
  chrCuResult (*cuDeviceGetAttribute)(int* value, int attribute, chrCuDevice device);
  /* Optional: copies on a stream of the proxy's own (cuda/net_staging.c). */
  chrCuResult (*cuDevicePrimaryCtxRetain)(chrCuContext* ctx, chrCuDevice device);
  chrCuResult (*cuDevicePrimaryCtxRelease)(chrCuDevice device);
  chrCuResult (*cuCtxSetCurrent)(chrCuContext ctx);
  chrCuResult (*cuStreamCreate)(chrCuStream* stream, unsigned int flags);
  chrCuResult (*cuStreamDestroy)(chrCuStream stream);
  chrCuResult (*cuStreamSynchronize)(chrCuStream stream);
  chrCuResult (*cuMemcpyAsync)(chrCuDevicePtr dst, chrCuDevicePtr src, size_t bytes, chrCuStream stream);
};

/* The loaded driver, with cuInit(0) done; NULL when there is no usable driver. The first call loads
 * it (thread-safe, once per process; the answer is cached, never retried). */
const struct chrCudaDriver* chrCudaDriverGet(void);

/* 1 when p is GPU device memory the host cannot read: device allocations, not managed/unified memory
 * (host-accessible) nor pinned or registered host memory. 0 for NULL, for host memory, and always
 * when there is no driver; then, once the driver was looked for, the cost is one predictable branch. */
int chrCudaPtrIsDevice(const void* p);

/* The CUDA device of the calling thread, as cudaGetDevice would say: the device of the current
 * context, 0 when the thread has none yet (the runtime's default), -1 when there is no driver. */
int chrCudaCurrentDevice(void);

/* Streaming multiprocessors of device `dev`; 0 when unknown. */
int chrCudaDeviceSMs(int dev);

/* The PCI address of device `dev` (domain, bus, device), the same in every process of the host
 * whatever CUDA_VISIBLE_DEVICES says: (domain << 16 | bus << 8 | device) << 4, so a function number
 * fits below as in "0000:19:00.0"; -1 when unknown. */
int64_t chrCudaDeviceBusId(int dev);

#endif /* CHORUS_CUDA_DRIVER_H_ */
