/* SPDX-License-Identifier: BSD-3-Clause */
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
#include "util/own_dir.h"

static struct chrDevLib devLib;  /* filled once by loadDevLib */
static int devLibUsable;         /* written once, before pthread_once returns */
static pthread_once_t devLibOnce = PTHREAD_ONCE_INIT;

static int bind(void* lib, const char* name, void* fnPtr, size_t fnSize, char* why, size_t whyLen) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) {
    snprintf(why, whyLen, "it has no %s", name);
    return 0;
  }
  memcpy(fnPtr, &sym, fnSize);
  return 1;
}

#define BIND(field, name) bind(lib, name, &d->field, sizeof(d->field), why, whyLen)

/* Checks the version of an opened library and fills every entry of d; 0 with the reason in why. */
static int bindAll(void* lib, struct chrDevLib* d, char* why, size_t whyLen) {
  if (!BIND(apiVersion, "chrDevApiVersion")) return 0;
  int version = d->apiVersion();
  if (version != CHR_DEV_API_VERSION) {
    snprintf(why, whyLen, "it has API version %d, this libchorus needs %d", version, CHR_DEV_API_VERSION);
    return 0;
  }
  return BIND(groupCreate, "chrDevGroupCreate") && BIND(groupDestroy, "chrDevGroupDestroy") &&
         BIND(groupRank, "chrDevGroupRank") && BIND(setAbort, "chrDevSetAbort") &&
         BIND(rankCreate, "chrDevRankCreate") && BIND(rankExport, "chrDevRankExport") &&
         BIND(rankConnect, "chrDevRankConnect") && BIND(rankLaunch, "chrDevRankLaunch") &&
         BIND(rankSetAbort, "chrDevRankSetAbort") && BIND(rankKernelError, "chrDevRankKernelError") &&
         BIND(rankDestroy, "chrDevRankDestroy") && BIND(rankCeStats, "chrDevRankCeStats") &&
         BIND(rankDeviceBytes, "chrDevRankDeviceBytes") && BIND(rankPutSignal, "chrDevRankPutSignal") &&
         BIND(rankWaitSignal, "chrDevRankWaitSignal") && BIND(exportRange, "chrDevExportRange") &&
         BIND(openRange, "chrDevOpenRange") && BIND(closeRange, "chrDevCloseRange") &&
         BIND(rankNetEndsMax, "chrDevRankNetEndsMax") && BIND(rankNetConnect, "chrDevRankNetConnect") &&
         BIND(maxWorks, "chrDevMaxWorks") &&
         BIND(lastError, "chrDevLastError") && BIND(eventCreate, "chrDevEventCreate") &&
         BIND(eventDestroy, "chrDevEventDestroy") && BIND(eventRecord, "chrDevEventRecord") &&
         BIND(streamWaitEvent, "chrDevStreamWaitEvent") && BIND(eventQuery, "chrDevEventQuery") &&
         BIND(streamCapturing, "chrDevStreamCapturing") && BIND(memAlloc, "chrDevMemAlloc") &&
         BIND(memFree, "chrDevMemFree");
}

/* Every dlopen of the device library is RTLD_NODELETE: once loaded, its CUDA runtime and the C++
 * runtime it pulls in may have registered exit handlers and allocated for the process, and unloading
 * them would leave those dangling (LeakSanitizer saw libstdc++'s pool lost after a check). */
#define DEV_LIB_OPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)

int chrDevLibCheckFile(const char* path, char* why, size_t whyLen) {
  void* lib = dlopen(path, DEV_LIB_OPEN_FLAGS);
  if (lib == NULL) {
    const char* e = dlerror();
    snprintf(why, whyLen, "dlopen: %s", e ? e : "unknown reason");
    return 0;
  }
  struct chrDevLib d;
  memset(&d, 0, sizeof(d));
  int ok = bindAll(lib, &d, why, whyLen);
  dlclose(lib);
  return ok;
}

/* The folder of the library (or program) this code was linked into, with a trailing '/'; "" if unknown. */
static void ownFolder(char* out, size_t cap) {
  int isProgram;
  if (chrOwnDir((const void*)&chrDevLibGet, out, cap - 1, &isProgram) == 0) strcat(out, "/");
}

static void* openLib(void) {
  char folder[400];
  ownFolder(folder, sizeof(folder));
  if (folder[0]) {
    snprintf(devLib.path, sizeof(devLib.path), "%s%s", folder, CHR_DEVICE_LIB_NAME);
    void* lib = dlopen(devLib.path, DEV_LIB_OPEN_FLAGS);
    if (lib) return lib;
    TRACE(NCCL_INIT, "device library: %s: %s", devLib.path, dlerror());
  }
  snprintf(devLib.path, sizeof(devLib.path), "%s", CHR_DEVICE_LIB_NAME);
  void* lib = dlopen(CHR_DEVICE_LIB_NAME, DEV_LIB_OPEN_FLAGS);
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
  char why[256];
  if (!bindAll(lib, &devLib, why, sizeof(why))) {
    INFO(NCCL_INIT, "device library %s: %s: no GPU path", devLib.path, why);
    dlclose(lib);
    return;
  }
  /* Stays loaded for the process: its CUDA runtime may hold threads and exit handlers. */
  INFO(NCCL_INIT, "device library %s loaded (API version %d)", devLib.path, CHR_DEV_API_VERSION);
  devLibUsable = 1;
}

const struct chrDevLib* chrDevLibGet(void) {
  pthread_once(&devLibOnce, loadDevLib);
  return devLibUsable ? &devLib : NULL;
}
