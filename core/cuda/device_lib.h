/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_lib.h: the device library (libchorus-device.so, device/launch.h), loaded at run time.
 *
 * The core never links CUDA: the kernels, their launcher and the CUDA runtime live in the device
 * library, opened with dlopen the first time a device buffer needs it. It is looked for next to
 * libchorus (the folder of the library or program this code is in, util/own_dir.h), then through
 * the normal search path, and must report chrDevApiVersion() == CHR_DEV_API_VERSION. No library, an
 * old one, or no CUDA driver with the context queries the GPU path needs: no GPU path, and device
 * buffers are refused as before. cudaStream_t values pass through as opaque pointers.
 */
#ifndef CHORUS_CUDA_DEVICE_LIB_H_
#define CHORUS_CUDA_DEVICE_LIB_H_

#include "device/launch.h"

#define CHR_DEVICE_LIB_NAME "libchorus-device.so"

struct chrDevLib {
  char path[512]; /* the file that was loaded */
  int (*apiVersion)(void);
  ncclResult_t (*groupCreate)(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out);
  ncclResult_t (*groupDestroy)(struct chrDevGroup* group);
  struct chrDevRank* (*groupRank)(struct chrDevGroup* group, int rank);
  void (*setAbort)(struct chrDevGroup* group, int rank, uint32_t value);
  ncclResult_t (*rankCreate)(const struct chrDevRankConfig* cfg, struct chrDevRank** out);
  ncclResult_t (*rankExport)(struct chrDevRank* rk, struct chrDevRankBlob* blob);
  ncclResult_t (*rankConnect)(struct chrDevRank* rk, int nPeers, const int* peers, const struct chrDevRankBlob* blobs);
  ncclResult_t (*rankLaunch)(struct chrDevRank* rk, const struct chrWork* works, const int* nWorks, int nChannels,
                             cudaStream_t stream);
  void (*rankSetAbort)(struct chrDevRank* rk, uint32_t value);
  uint32_t (*rankKernelError)(const struct chrDevRank* rk);
  ncclResult_t (*rankDestroy)(struct chrDevRank* rk);
  void (*rankCeStats)(struct chrDevRank* rk, struct chrDevCeStats* out);
  uint64_t (*rankDeviceBytes)(const struct chrDevRank* rk);
  int (*rankNetEndsMax)(const struct chrDevRank* rk);
  ncclResult_t (*rankNetConnect)(struct chrDevRank* rk, int peer, struct chrDevNetEnd* ends, int maxEnds, int* nEnds);
  ncclResult_t (*rankPutSignal)(struct chrDevRank* rk, int peer, void* dst, const void* src, size_t bytes,
                                uint64_t count, cudaStream_t stream);
  ncclResult_t (*rankWaitSignal)(struct chrDevRank* rk, int peer, uint64_t count, cudaStream_t stream);
  ncclResult_t (*exportRange)(int cudaDev, const void* ptr, size_t bytes, struct chrDevRange* out);
  ncclResult_t (*openRange)(int cudaDev, const struct chrDevRange* range, void** base);
  void (*closeRange)(int cudaDev, void* base);
  int (*maxWorks)(void);
  const char* (*lastError)(void);
  ncclResult_t (*eventCreate)(int cudaDev, void** event);
  void (*eventDestroy)(int cudaDev, void* event);
  ncclResult_t (*eventRecord)(int cudaDev, void* event, cudaStream_t stream);
  ncclResult_t (*streamWaitEvent)(int cudaDev, cudaStream_t stream, void* event);
  ncclResult_t (*eventQuery)(int cudaDev, void* event);
  ncclResult_t (*streamCapturing)(int cudaDev, cudaStream_t stream, int* capturing);
  ncclResult_t (*memAlloc)(int cudaDev, void** ptr, size_t size);
  ncclResult_t (*memFree)(void* ptr);
};

/* The loaded library, or NULL when there is no GPU path (loaded once per process, thread-safe; the
 * reason is logged once at INFO). Needs the CUDA driver too: without one, NULL without looking. */
const struct chrDevLib* chrDevLibGet(void);

/* Opens the file, checks its API version and that it has every function the core binds, and closes
 * it; needs no GPU or driver (a CPU test checks the built library this way). 1, or 0 with the reason
 * in why. */
int chrDevLibCheckFile(const char* path, char* why, size_t whyLen);

#endif /* CHORUS_CUDA_DEVICE_LIB_H_ */
