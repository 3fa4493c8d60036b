/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_driver.c: loading the CUDA driver at run time, and what the core asks it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "cuda/cuda_driver.h"
#include "log/log.h"

#define CHR_CUDA_DRIVER_LIB "libcuda.so.1"

enum { CHR_CUDA_UNKNOWN = 0, CHR_CUDA_ABSENT, CHR_CUDA_PRESENT };

static struct chrCudaDriver driver;  /* filled once by loadDriver, read-only afterwards */
static _Atomic int driverState;      /* CHR_CUDA_*; published (release) after driver is filled */
static pthread_once_t driverOnce = PTHREAD_ONCE_INIT;

/* dlsym into a function pointer (copied, as ISO C has no cast between object and function pointers). */
static int resolve(void* lib, const char* name, void* fnPtr, size_t fnSize) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) {
    INFO(NCCL_INIT, "CUDA driver: %s has no %s; buffers are host memory", CHR_CUDA_DRIVER_LIB, name);
    return 0;
  }
  memcpy(fnPtr, &sym, fnSize);
  return 1;
}

/* An optional entry point: left NULL when the library lacks it. */
#define OPTIONAL(lib, name, field)                              \
  do {                                                          \
    void* sym_ = dlsym(lib, name);                              \
    if (sym_ != NULL) memcpy(&driver.field, &sym_, sizeof sym_); \
  } while (0)

static void loadDriver(void) {
  int state = CHR_CUDA_ABSENT;
  void* lib = dlopen(CHR_CUDA_DRIVER_LIB, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char* why = dlerror();
    INFO(NCCL_INIT, "CUDA driver: cannot load %s (%s): no GPU; buffers are host memory", CHR_CUDA_DRIVER_LIB,
         why ? why : "unknown reason");
    goto publish;
  }
  if (!resolve(lib, "cuInit", &driver.cuInit, sizeof(driver.cuInit)) ||
      !resolve(lib, "cuDriverGetVersion", &driver.cuDriverGetVersion, sizeof(driver.cuDriverGetVersion)) ||
      !resolve(lib, "cuPointerGetAttribute", &driver.cuPointerGetAttribute, sizeof(driver.cuPointerGetAttribute))) {
    dlclose(lib);
    goto publish;
  }
  /* Optional: the GPU path needs them, buffer classification does not. */
  OPTIONAL(lib, "cuCtxGetCurrent", cuCtxGetCurrent);
  OPTIONAL(lib, "cuCtxGetDevice", cuCtxGetDevice);
  OPTIONAL(lib, "cuDeviceGet", cuDeviceGet);
  OPTIONAL(lib, "cuDeviceGetAttribute", cuDeviceGetAttribute);
  OPTIONAL(lib, "cuPointerGetAttributes", cuPointerGetAttributes);
  OPTIONAL(lib, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain);
  OPTIONAL(lib, "cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease);
  OPTIONAL(lib, "cuCtxSetCurrent", cuCtxSetCurrent);
  OPTIONAL(lib, "cuStreamCreate", cuStreamCreate);
  OPTIONAL(lib, "cuStreamDestroy_v2", cuStreamDestroy);
  OPTIONAL(lib, "cuStreamSynchronize", cuStreamSynchronize);
  OPTIONAL(lib, "cuMemcpyAsync", cuMemcpyAsync);
  /* From here the library stays loaded even on failure: a driver that ran cuInit may have started
   * threads or registered exit handlers, so unloading it is not safe. */
  chrCuResult r = driver.cuInit(0);
  if (r != CHR_CUDA_SUCCESS) {
    INFO(NCCL_INIT, "CUDA driver: cuInit(0) returned %d (no usable GPU); buffers are host memory", r);
    goto publish;
  }
  if (driver.cuDriverGetVersion(&driver.version) != CHR_CUDA_SUCCESS) driver.version = 0;
  INFO(NCCL_INIT, "CUDA driver %d.%d loaded (%s)", driver.version / 1000, (driver.version % 1000) / 10,
       CHR_CUDA_DRIVER_LIB);
  state = CHR_CUDA_PRESENT;
publish:
  atomic_store_explicit(&driverState, state, memory_order_release);
}

const struct chrCudaDriver* chrCudaDriverGet(void) {
  int state = atomic_load_explicit(&driverState, memory_order_acquire);
  if (state == CHR_CUDA_UNKNOWN) {
    pthread_once(&driverOnce, loadDriver);
    state = atomic_load_explicit(&driverState, memory_order_acquire);
  }
  return state == CHR_CUDA_PRESENT ? &driver : NULL;
}

int chrCudaPtrIsDevice(const void* p) {
  /* The common case on a machine without a GPU: known absent, one well-predicted branch. */
  if (__builtin_expect(atomic_load_explicit(&driverState, memory_order_acquire) == CHR_CUDA_ABSENT, 1)) return 0;
  if (p == NULL) return 0;
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (cu == NULL) return 0;
  chrCuDevicePtr addr = (chrCuDevicePtr)(uintptr_t)p;
  unsigned int memType = 0;
  /* Both answers in one driver call where the driver has it: this runs for every buffer of every
   * call, and a small GPU call's whole host time is a few microseconds. The booleans are zeroed
   * first (the driver may store one byte). Any failure falls back to one attribute per call. */
  if (cu->cuPointerGetAttributes != NULL) {
    unsigned int type = 0, isManaged = 0;
    int attrs[2] = {CHR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CHR_CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* data[2] = {&type, &isManaged};
    if (cu->cuPointerGetAttributes(2, attrs, data, addr) == CHR_CUDA_SUCCESS)
      return (type == CHR_CU_MEMORYTYPE_DEVICE || type == CHR_CU_MEMORYTYPE_ARRAY) && !isManaged;
  }
  /* Any error (CHR_CUDA_ERROR_INVALID_VALUE above all) means the driver does not know the address:
   * plain host memory. Pinned and registered host memory report HOST. */
  if (cu->cuPointerGetAttribute(&memType, CHR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr) != CHR_CUDA_SUCCESS) return 0;
  if (memType != CHR_CU_MEMORYTYPE_DEVICE && memType != CHR_CU_MEMORYTYPE_ARRAY) return 0;
  /* Managed memory reports DEVICE too, but the host may read and write it. The driver stores a
   * boolean: zeroed first, the answer is right (little-endian) whether it writes one byte or four. */
  unsigned int managed = 0;
  if (cu->cuPointerGetAttribute(&managed, CHR_CU_POINTER_ATTRIBUTE_IS_MANAGED, addr) == CHR_CUDA_SUCCESS && managed)
    return 0;
  return 1;
}

int chrCudaCurrentDevice(void) {
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (cu == NULL) return -1;
  if (cu->cuCtxGetCurrent == NULL || cu->cuCtxGetDevice == NULL) return 0;
  chrCuContext ctx = NULL;
  if (cu->cuCtxGetCurrent(&ctx) != CHR_CUDA_SUCCESS || ctx == NULL) return 0;
  chrCuDevice dev = 0;
  if (cu->cuCtxGetDevice(&dev) != CHR_CUDA_SUCCESS) return 0;
  return (int)dev;
}

int chrCudaDeviceSMs(int ordinal) {
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (cu == NULL || cu->cuDeviceGet == NULL || cu->cuDeviceGetAttribute == NULL || ordinal < 0) return 0;
  chrCuDevice dev = 0;
  int sms = 0;
  if (cu->cuDeviceGet(&dev, ordinal) != CHR_CUDA_SUCCESS) return 0;
  if (cu->cuDeviceGetAttribute(&sms, CHR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CHR_CUDA_SUCCESS) return 0;
  return sms;
}

int64_t chrCudaDeviceBusId(int ordinal) {
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (cu == NULL || cu->cuDeviceGet == NULL || cu->cuDeviceGetAttribute == NULL || ordinal < 0) return -1;
  chrCuDevice dev = 0;
  int domain = 0, bus = 0, device = 0;
  if (cu->cuDeviceGet(&dev, ordinal) != CHR_CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&domain, CHR_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CHR_CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&bus, CHR_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CHR_CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&device, CHR_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CHR_CUDA_SUCCESS)
    return -1;
  return (((int64_t)domain << 16) | ((int64_t)(bus & 0xff) << 8) | (int64_t)(device & 0x1f)) << 4;
}
