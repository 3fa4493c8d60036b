/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_libcuda.c: a stand-in for the CUDA driver (built as libcuda.so.1 in its own folder, found
 * only by the tests that put that folder in LD_LIBRARY_PATH), so the device-pointer checks can be
 * tested on machines without a GPU. It answers from the environment, read at each call:
 *   CHORUS_TEST_FAKE_DEVICE_RANGE=addr:len    pointers inside are device memory
 *   CHORUS_TEST_FAKE_MANAGED_RANGE=addr:len   pointers inside are managed memory (type device, managed)
 *   CHORUS_TEST_FAKE_HOST_RANGE=addr:len      pointers inside are pinned host memory
 *   CHORUS_TEST_FAKE_CUINIT_FAIL=1            cuInit fails as with no GPU (CUDA_ERROR_NO_DEVICE)
 *   CHORUS_TEST_FAKE_NO_MULTI=1               cuPointerGetAttributes fails (CUDA_ERROR_NOT_SUPPORTED), so
 *                                             the library must ask one attribute at a time
 *   CHORUS_TEST_FAKE_GPU=n                    the process's GPUs sit at PCI bus 0x10 + n + ordinal (default
 *                                             n = 0: every process sees the same GPU 0)
 *   CHORUS_TEST_FAKE_MEMCPY_FAIL=1            cuMemcpyAsync fails (CUDA_ERROR_INVALID_VALUE)
 * Any other pointer is unknown to the driver (CUDA_ERROR_INVALID_VALUE), as plain malloc memory is.
 * Primary contexts, streams and cuMemcpyAsync (a memcpy: every "device" address is host memory here)
 * are modelled for the proxy's staging copies; chorusFakeCudaCounts reports their use.
 * Numbers are C literals (0x... or decimal). Values are those of CUDA's cuda.h.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_CUDA_SUCCESS 0
#define FAKE_CUDA_ERROR_INVALID_VALUE 1
#define FAKE_CUDA_ERROR_NOT_INITIALIZED 3
#define FAKE_CUDA_ERROR_NO_DEVICE 100
#define FAKE_CUDA_ERROR_NOT_SUPPORTED 801
#define FAKE_ATTR_MEMORY_TYPE 2
#define FAKE_ATTR_IS_MANAGED 8
#define FAKE_MEMORYTYPE_HOST 1
#define FAKE_MEMORYTYPE_DEVICE 2

static atomic_int initCalls;
static atomic_int initialized;

static int inRange(const char* var, unsigned long long p) {
  const char* s = getenv(var);
  if (s == NULL || *s == '\0') return 0;
  char* end = NULL;
  unsigned long long start = strtoull(s, &end, 0);
  if (end == NULL || *end != ':') return 0;
  unsigned long long len = strtoull(end + 1, NULL, 0);
  return p >= start && p - start < len;
}

int cuInit(unsigned int flags) {
  atomic_fetch_add(&initCalls, 1);
  if (flags != 0) return FAKE_CUDA_ERROR_INVALID_VALUE;
  const char* fail = getenv("CHORUS_TEST_FAKE_CUINIT_FAIL");
  if (fail && *fail && *fail != '0') return FAKE_CUDA_ERROR_NO_DEVICE;
  atomic_store(&initialized, 1);
  return FAKE_CUDA_SUCCESS;
}

int cuDriverGetVersion(int* version) {
  if (version == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
  *version = 12080;
  return FAKE_CUDA_SUCCESS;
}

/* What the fake knows of ptr: 0 when it is unknown to the driver (plain host memory). */
static int lookup(unsigned long long ptr, unsigned int* type, unsigned int* managed) {
  if (inRange("CHORUS_TEST_FAKE_DEVICE_RANGE", ptr)) { *type = FAKE_MEMORYTYPE_DEVICE; *managed = 0; }
  else if (inRange("CHORUS_TEST_FAKE_MANAGED_RANGE", ptr)) { *type = FAKE_MEMORYTYPE_DEVICE; *managed = 1; }
  else if (inRange("CHORUS_TEST_FAKE_HOST_RANGE", ptr)) { *type = FAKE_MEMORYTYPE_HOST; *managed = 0; }
  else return 0;
  return 1;
}

/* One answer into data: a one-byte boolean for IS_MANAGED, the narrowest a driver could store (the
 * library must read it right). */
static int answer(void* data, int attribute, unsigned int type, unsigned int managed) {
  if (attribute == FAKE_ATTR_MEMORY_TYPE) { *(unsigned int*)data = type; return FAKE_CUDA_SUCCESS; }
  if (attribute == FAKE_ATTR_IS_MANAGED) { *(unsigned char*)data = (unsigned char)managed; return FAKE_CUDA_SUCCESS; }
  return FAKE_CUDA_ERROR_INVALID_VALUE;
}

int cuPointerGetAttribute(void* data, int attribute, unsigned long long ptr) {
  if (!atomic_load(&initialized)) return FAKE_CUDA_ERROR_NOT_INITIALIZED;
  if (data == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
  unsigned int type, managed;
  if (!lookup(ptr, &type, &managed)) return FAKE_CUDA_ERROR_INVALID_VALUE;
  return answer(data, attribute, type, managed);
}

/* As the driver documents it: an address it does not know is no error, its answers are zeros
 * (here: a 4-byte zero for the type, one zero byte for the boolean, what the driver would write). */
int cuPointerGetAttributes(unsigned int n, int* attributes, void** data, unsigned long long ptr) {
  if (!atomic_load(&initialized)) return FAKE_CUDA_ERROR_NOT_INITIALIZED;
  const char* off = getenv("CHORUS_TEST_FAKE_NO_MULTI");
  if (off && *off && *off != '0') return FAKE_CUDA_ERROR_NOT_SUPPORTED;
  if (attributes == NULL || data == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
  unsigned int type = 0, managed = 0;
  (void)lookup(ptr, &type, &managed);
  for (unsigned int i = 0; i < n; i++) {
    if (data[i] == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
    int rc = answer(data[i], attributes[i], type, managed);
    if (rc != FAKE_CUDA_SUCCESS) return rc;
  }
  return FAKE_CUDA_SUCCESS;
}

#define FAKE_ATTR_MULTIPROCESSOR_COUNT 16
#define FAKE_ATTR_PCI_BUS_ID 33
#define FAKE_ATTR_PCI_DEVICE_ID 34
#define FAKE_ATTR_PCI_DOMAIN_ID 50

int cuDeviceGet(int* device, int ordinal) {
  if (!atomic_load(&initialized)) return FAKE_CUDA_ERROR_NOT_INITIALIZED;
  if (device == NULL || ordinal < 0 || ordinal > 7) return FAKE_CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return FAKE_CUDA_SUCCESS;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (!atomic_load(&initialized)) return FAKE_CUDA_ERROR_NOT_INITIALIZED;
  if (value == NULL || device < 0 || device > 7) return FAKE_CUDA_ERROR_INVALID_VALUE;
  const char* gpu = getenv("CHORUS_TEST_FAKE_GPU");
  switch (attribute) {
    case FAKE_ATTR_MULTIPROCESSOR_COUNT: *value = 8; return FAKE_CUDA_SUCCESS;
    case FAKE_ATTR_PCI_BUS_ID: *value = 0x10 + (gpu ? atoi(gpu) : 0) + device; return FAKE_CUDA_SUCCESS;
    case FAKE_ATTR_PCI_DEVICE_ID:
    case FAKE_ATTR_PCI_DOMAIN_ID: *value = 0; return FAKE_CUDA_SUCCESS;
    default: return FAKE_CUDA_ERROR_INVALID_VALUE;
  }
}

/* For the tests: how often cuInit was called (proves the library was loaded, and cuInit ran once). */
int chorusFakeCudaInitCalls(void) { return atomic_load(&initCalls); }

/* ---- primary contexts, streams, copies (core/cuda/net_staging.c) ------------------------------- */

#define FAKE_STREAM_NON_BLOCKING 0x1
static char fakeContexts[8];
static _Thread_local void* currentCtx;
static atomic_int retains, releases, streamsMade, streamsBlocking, streamsFreed, copies, copiesOffContext;

int cuDevicePrimaryCtxRetain(void** ctx, int device) {
  if (!atomic_load(&initialized)) return FAKE_CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == NULL || device < 0 || device > 7) return FAKE_CUDA_ERROR_INVALID_VALUE;
  *ctx = &fakeContexts[device];
  atomic_fetch_add(&retains, 1);
  return FAKE_CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int device) {
  if (device < 0 || device > 7) return FAKE_CUDA_ERROR_INVALID_VALUE;
  atomic_fetch_add(&releases, 1);
  return FAKE_CUDA_SUCCESS;
}

int cuCtxSetCurrent(void* ctx) {
  currentCtx = ctx;
  return FAKE_CUDA_SUCCESS;
}

int cuStreamCreate(void** stream, unsigned int flags) {
  if (stream == NULL || currentCtx == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
  *stream = malloc(1);
  atomic_fetch_add(&streamsMade, 1);
  if (!(flags & FAKE_STREAM_NON_BLOCKING)) atomic_fetch_add(&streamsBlocking, 1);
  return FAKE_CUDA_SUCCESS;
}

int cuStreamDestroy_v2(void* stream) {
  if (stream == NULL) return FAKE_CUDA_ERROR_INVALID_VALUE;
  free(stream);
  atomic_fetch_add(&streamsFreed, 1);
  return FAKE_CUDA_SUCCESS;
}

int cuStreamSynchronize(void* stream) { return stream == NULL ? FAKE_CUDA_ERROR_INVALID_VALUE : FAKE_CUDA_SUCCESS; }

int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t bytes, void* stream) {
  const char* fail = getenv("CHORUS_TEST_FAKE_MEMCPY_FAIL");
  if (stream == NULL || (fail != NULL && atoi(fail) == 1)) return FAKE_CUDA_ERROR_INVALID_VALUE;
  if (currentCtx == NULL) atomic_fetch_add(&copiesOffContext, 1);
  memcpy((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
  atomic_fetch_add(&copies, 1);
  return FAKE_CUDA_SUCCESS;
}

/* For the tests: out[0..7] = primary context retains, releases, streams made, of them blocking,
 * streams destroyed, copies, copies with no current context. */
void chorusFakeCudaCounts(int* out) {
  out[0] = atomic_load(&retains), out[1] = atomic_load(&releases), out[2] = atomic_load(&streamsMade);
  out[3] = atomic_load(&streamsBlocking), out[4] = atomic_load(&streamsFreed), out[5] = atomic_load(&copies);
  out[6] = atomic_load(&copiesOffContext);
}
