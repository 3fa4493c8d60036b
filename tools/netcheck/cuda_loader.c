/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_loader.c: chorus-netcheck's own loader of the CUDA driver (cuda_loader.h). The core has one
 * too (core/cuda), but tools see only the public headers and their own folder, and this one needs a
 * different set of calls (allocations, copies, dma-buf). Names with a _v2 are the ones cuda.h maps
 * the plain names to; cuMemGetHandleForAddressRange is optional (older drivers lack it).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_loader.h"

static ncCudaDriver driver;           /* filled by load(), read-only afterwards */
static const ncCudaDriver* loaded;    /* &driver once usable; written under once */
static char missing[320];             /* why there is no driver; written under once */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int resolve(void* lib, const char* name, void* fnPtr, size_t fnSize, int required) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) {
    if (required) snprintf(missing, sizeof(missing), "libcuda.so.1 has no %s (a driver older than CUDA 11?)", name);
    return !required;
  }
  memcpy(fnPtr, &sym, fnSize); /* ISO C has no cast between object and function pointers */
  return 1;
}

#define NEED(name, field) resolve(lib, name, &driver.field, sizeof(driver.field), 1)

static void load(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char* e = dlerror();
    snprintf(missing, sizeof(missing), "cannot load libcuda.so.1 (%s): no CUDA driver on this machine",
             e != NULL ? e : "unknown reason");
    return;
  }
  if (!NEED("cuInit", cuInit) || !NEED("cuDriverGetVersion", cuDriverGetVersion) ||
      !NEED("cuGetErrorString", cuGetErrorString) || !NEED("cuDeviceGetCount", cuDeviceGetCount) ||
      !NEED("cuDeviceGet", cuDeviceGet) || !NEED("cuDeviceGetAttribute", cuDeviceGetAttribute) ||
      !NEED("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain) ||
      !NEED("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease) || !NEED("cuCtxSetCurrent", cuCtxSetCurrent) ||
      !NEED("cuCtxSynchronize", cuCtxSynchronize) || !NEED("cuMemAlloc_v2", cuMemAlloc) ||
      !NEED("cuMemFree_v2", cuMemFree) || !NEED("cuMemcpyHtoD_v2", cuMemcpyHtoD) ||
      !NEED("cuMemcpyDtoH_v2", cuMemcpyDtoH) || !NEED("cuMemsetD8_v2", cuMemsetD8))
    return; /* the library stays loaded: unloading a driver is not safe */
  resolve(lib, "cuMemGetHandleForAddressRange", &driver.cuMemGetHandleForAddressRange,
          sizeof(driver.cuMemGetHandleForAddressRange), 0);
  ncCuResult r = driver.cuInit(0);
  if (r != NC_CUDA_SUCCESS) {
    snprintf(missing, sizeof(missing), "cuInit(0) failed: %s (no usable GPU)", ncCudaErrorText(&driver, r));
    return;
  }
  if (driver.cuDriverGetVersion(&driver.version) != NC_CUDA_SUCCESS) driver.version = 0;
  loaded = &driver;
}

const ncCudaDriver* ncCudaLoad(const char** why) {
  pthread_once(&once, load);
  if (loaded == NULL && why != NULL) *why = missing;
  return loaded;
}

const char* ncCudaErrorText(const ncCudaDriver* cu, ncCuResult r) {
  static _Thread_local char text[160];
  const char* s = NULL;
  if (cu->cuGetErrorString == NULL || cu->cuGetErrorString(r, &s) != NC_CUDA_SUCCESS || s == NULL) s = "unknown";
  snprintf(text, sizeof(text), "CUDA error %d (%s)", r, s);
  return text;
}
