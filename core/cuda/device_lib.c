/*
 * device_lib.c: finding and opening libchorus-device.so (device_lib.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cuda/cuda_driver.h"
#include "cuda/device_lib.h"
#include "log/log.h"

static struct chrDevLib devLib;  /* filled once by loadDevLib */
static int devLibUsable;         /* written once, before pthread_once returns */
static pthread_once_t devLibOnce = PTHREAD_ONCE_INIT;

static int bind(void* lib, const char* file, const char* name, void* fnPtr, size_t fnSize) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) {
    INFO(NCCL_INIT, "device library %s has no %s: no GPU path", file, name);
    return 0;
  }
  memcpy(fnPtr, &sym, fnSize);
  return 1;
}

#define BIND(field, name) bind(lib, devLib.path, name, &devLib.field, sizeof(devLib.field))

/* The folder of the library (or program) this code was linked into, with a trailing '/'; "" if unknown. */
static void ownFolder(char* out, size_t cap) {
  Dl_info info;
  out[0] = '\0';
  if (dladdr((void*)&chrDevLibGet, &info) == 0 || info.dli_fname == NULL) return;
  const char* slash = strrchr(info.dli_fname, '/');
  if (slash == NULL) return;
  size_t len = (size_t)(slash - info.dli_fname) + 1;
  if (len >= cap) return;
  memcpy(out, info.dli_fname, len);
  out[len] = '\0';
}

static void* openLib(void) {
  char folder[400];
  ownFolder(folder, sizeof(folder));
  if (folder[0]) {
    snprintf(devLib.path, sizeof(devLib.path), "%s%s", folder, CHR_DEVICE_LIB_NAME);
    void* lib = dlopen(devLib.path, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
    TRACE(NCCL_INIT, "device library: %s: %s", devLib.path, dlerror());
  }
  snprintf(devLib.path, sizeof(devLib.path), "%s", CHR_DEVICE_LIB_NAME);
  void* lib = dlopen(CHR_DEVICE_LIB_NAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char* why = dlerror();
    INFO(NCCL_INIT, "device library %s not found next to libchorus (%s) nor on the search path (%s): no GPU path",
         CHR_DEVICE_LIB_NAME, folder[0] ? folder : "?", why ? why : "unknown reason");
  }
  return lib;
}

static void loadDevLib(void) {
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (cu == NULL) return; /* logged by the driver loader */
  if (cu->cuCtxGetCurrent == NULL || cu->cuCtxGetDevice == NULL) {
    INFO(NCCL_INIT, "CUDA driver has no cuCtxGetCurrent/cuCtxGetDevice: no GPU path");
    return;
  }
  void* lib = openLib();
  if (lib == NULL) return;
  if (!BIND(apiVersion, "chrDevApiVersion")) goto fail_close;
  int version = devLib.apiVersion();
  if (version != CHR_DEV_API_VERSION) {
    INFO(NCCL_INIT, "device library %s has API version %d, this libchorus needs %d: no GPU path", devLib.path, version,
         CHR_DEV_API_VERSION);
    goto fail_close;
  }
  if (!BIND(groupCreate, "chrDevGroupCreate") || !BIND(groupDestroy, "chrDevGroupDestroy") ||
      !BIND(groupRank, "chrDevGroupRank") || !BIND(setAbort, "chrDevSetAbort") ||
      !BIND(rankCreate, "chrDevRankCreate") || !BIND(rankExport, "chrDevRankExport") ||
      !BIND(rankConnect, "chrDevRankConnect") || !BIND(rankLaunch, "chrDevRankLaunch") ||
      !BIND(rankSetAbort, "chrDevRankSetAbort") || !BIND(rankKernelError, "chrDevRankKernelError") ||
      !BIND(rankDestroy, "chrDevRankDestroy") ||
      !BIND(maxWorks, "chrDevMaxWorks") || !BIND(lastError, "chrDevLastError") ||
      !BIND(eventCreate, "chrDevEventCreate") || !BIND(eventDestroy, "chrDevEventDestroy") ||
      !BIND(eventRecord, "chrDevEventRecord") || !BIND(streamWaitEvent, "chrDevStreamWaitEvent") ||
      !BIND(eventQuery, "chrDevEventQuery") || !BIND(streamCapturing, "chrDevStreamCapturing") ||
      !BIND(memAlloc, "chrDevMemAlloc") || !BIND(memFree, "chrDevMemFree"))
    goto fail_close;
  /* Stays loaded for the process: its CUDA runtime may hold threads and exit handlers. */
  INFO(NCCL_INIT, "device library %s loaded (API version %d)", devLib.path, version);
  devLibUsable = 1;
  return;
fail_close:
  dlclose(lib);
}

const struct chrDevLib* chrDevLibGet(void) {
  pthread_once(&devLibOnce, loadDevLib);
  return devLibUsable ? &devLib : NULL;
}
