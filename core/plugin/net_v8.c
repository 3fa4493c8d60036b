/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_v8.c: presents a v8 net plugin as v12.
 *
 * What changes from v12: as for v9 (init with the logger only, once per process with a
 * user count and a dummy ctx per comm; no config, no profiler, phandles dropped; comms wrapped to
 * remember the library; no finalize, no setNetAttr), and in addition:
 *  - sizes are int: a transfer above 2^30 bytes is refused with ncclInternalError (the properties
 *    tell the core maxP2pBytes = 2^30, so it splits larger ones), and irecv's size array is converted;
 *  - irecv never sees NCCL_NET_OPTIONAL_RECV_COMPLETION: *request is reset to NULL first;
 *  - no makeVDevice; the properties gain forceFlush 0, vProps {1, {dev}}, maxP2pBytes 2^30,
 *    maxCollBytes 2^29, maxMultiRequestSize 1, railId = planeId = -1.
 * The parts every old version shares are in net_adapt.c; this file has only what is v8's own.
 */
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define OLD(lib) ((const ncclNet_v8_t*)(lib)->native)
#define COMM(p) ((struct chrNetAdaptComm*)(p))

static ncclResult_t initOld(struct chrNetLib* lib, ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  (void)profFunction; /* v8 has no profiler hook */
  return OLD(lib)->init(logFunction);
}

static ncclResult_t getPropertiesV8(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v8_t p;
  memset(&p, 0, sizeof(p));
  CHECK(OLD(lib)->getProperties(dev, &p));
  memset(props, 0, sizeof(*props));
  CHR_NET_COPY_BASE_PROPS(props, &p);
  props->forceFlush = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = CHR_NET_V8_MAX_P2P_BYTES;
  props->maxCollBytes = CHR_NET_V8_MAX_COLL_BYTES;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}

/* connect and accept get and give the plugin's own comms; net_adapt.c wraps them. */
static ncclResult_t connectV8(struct chrNetLib* lib, const struct chrNetAdaptCtx* ctx, int dev, void* handle,
                              void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  (void)ctx; /* v8 has no comm config */
  return OLD(lib)->connect(dev, handle, sendComm, (ncclNetDeviceHandle_v8_t**)sendDevComm);
}

static ncclResult_t acceptV8(struct chrNetLib* lib, void* listenComm, void** recvComm,
                             ncclNetDeviceHandle_v12_t** recvDevComm) {
  return OLD(lib)->accept(listenComm, recvComm, (ncclNetDeviceHandle_v8_t**)recvDevComm);
}

static ncclResult_t isendV8(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                            void** request) {
  (void)phandle; /* v8 has no profiler handles */
  *request = NULL;
  if (size > CHR_NET_V8_MAX_P2P_BYTES)
    return chrNetAdaptFail(ncclInternalError, "net plugin %s (ABI v8) takes at most 2^30 bytes per send, got %zu",
                           COMM(sendComm)->lib->name, size);
  return OLD(COMM(sendComm)->lib)->isend(COMM(sendComm)->comm, data, (int)size, tag, mhandle, request);
}

static ncclResult_t irecvV8(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                            void** phandles, void** request) {
  (void)phandles;
  /* v8 cannot complete a receive early on the core's word: it always gets a plain NULL request. */
  *request = NULL;
  struct chrNetLib* lib = COMM(recvComm)->lib;
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS)
    return chrNetAdaptFail(ncclInternalError, "net plugin %s (ABI v8): irecv of %d buffers", lib->name, n);
  int intSizes[NCCL_NET_MAX_REQUESTS];
  for (int i = 0; i < n; i++) {
    if (sizes[i] > CHR_NET_V8_MAX_P2P_BYTES)
      return chrNetAdaptFail(ncclInternalError,
                             "net plugin %s (ABI v8) takes at most 2^30 bytes per receive, got %zu (buffer %d)",
                             lib->name, sizes[i], i);
    intSizes[i] = (int)sizes[i];
  }
  return OLD(lib)->irecv(COMM(recvComm)->comm, n, data, intSizes, tags, mhandles, request);
}

ncclResult_t chrNetAdaptV8(struct chrNetLib* lib, const ncclNet_v8_t* t) {
  lib->version = 8;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  CHR_NET_COPY_COMMON_SLOTS(&lib->common, t);
  const struct chrNetAdaptOps ops = {.initOld = initOld, .connect = connectV8, .accept = acceptV8,
                                     .isend = isendV8, .irecv = irecvV8, .getProperties = getPropertiesV8,
                                     .makeVDevice = NULL /* v8 has no such slot */};
  chrNetAdaptBind(lib, t, t->name, &ops);
  return ncclSuccess;
}
