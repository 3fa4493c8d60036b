/*
 * net_v8.c: presents a v8 net plugin as v12.
 *
 * What changes (reference §2.6): as for v9 (init with the logger only, once per process with a
 * user count and a dummy ctx per comm; no config, no profiler, phandles dropped; comms wrapped to
 * remember the library; no finalize, no setNetAttr), and in addition:
 *  - sizes are int: a transfer above 2^30 bytes is refused with ncclInternalError (the properties
 *    tell the core maxP2pBytes = 2^30, so it splits larger ones), and irecv's size array is converted;
 *  - irecv never sees NCCL_NET_OPTIONAL_RECV_COMPLETION: *request is reset to NULL first;
 *  - no makeVDevice; the properties gain forceFlush 0, vProps {1, {dev}}, maxP2pBytes 2^30,
 *    maxCollBytes 2^29, maxMultiRequestSize 1, railId = planeId = -1.
 */
#include <stdlib.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define OLD(lib) ((const ncclNet_v8_t*)(lib)->native)
#define COMM(p) ((struct chrNetAdaptComm*)(p))
#define CTX(p) ((struct chrNetAdaptCtx*)(p))

static ncclResult_t callOldInit(struct chrNetLib* lib, ncclDebugLogger_t logFunction,
                                ncclProfilerCallback_t profFunction) {
  (void)profFunction; /* v8 has no profiler hook */
  return OLD(lib)->init(logFunction);
}

static ncclResult_t initV8(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return chrNetAdaptInitOnce(lib, ctx, config, logFunction, profFunction, callOldInit);
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

static ncclResult_t listenV8(void* ctx, int dev, void* handle, void** listenComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *listenComm = NULL;
  CHECK(OLD(lib)->listen(dev, handle, &raw));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, listenComm);
  if (res != ncclSuccess) OLD(lib)->closeListen(raw);
  return res;
}

static ncclResult_t connectV8(void* ctx, int dev, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v12_t** sendDevComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *sendComm = NULL;
  CHECK(OLD(lib)->connect(dev, handle, &raw, (ncclNetDeviceHandle_v8_t**)sendDevComm));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, sendComm);
  if (res != ncclSuccess) OLD(lib)->closeSend(raw);
  return res;
}

static ncclResult_t acceptV8(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  struct chrNetLib* lib = COMM(listenComm)->lib;
  void* raw = NULL;
  *recvComm = NULL;
  CHECK(OLD(lib)->accept(COMM(listenComm)->comm, &raw, (ncclNetDeviceHandle_v8_t**)recvDevComm));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, recvComm);
  if (res != ncclSuccess) OLD(lib)->closeRecv(raw);
  return res;
}

static ncclResult_t regMrV8(void* comm, void* data, size_t size, int type, void** mhandle) {
  return OLD(COMM(comm)->lib)->regMr(COMM(comm)->comm, data, size, type, mhandle);
}

static ncclResult_t regMrDmaBufV8(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) {
  return OLD(COMM(comm)->lib)->regMrDmaBuf(COMM(comm)->comm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t deregMrV8(void* comm, void* mhandle) {
  return OLD(COMM(comm)->lib)->deregMr(COMM(comm)->comm, mhandle);
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

static ncclResult_t iflushV8(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return OLD(COMM(recvComm)->lib)->iflush(COMM(recvComm)->comm, n, data, sizes, mhandles, request);
}

/* The wrapper is freed whatever the plugin answers: the core never uses a closed comm again. */
static ncclResult_t closeSendV8(void* sendComm) {
  ncclResult_t res = OLD(COMM(sendComm)->lib)->closeSend(COMM(sendComm)->comm);
  free(sendComm);
  return res;
}

static ncclResult_t closeRecvV8(void* recvComm) {
  ncclResult_t res = OLD(COMM(recvComm)->lib)->closeRecv(COMM(recvComm)->comm);
  free(recvComm);
  return res;
}

static ncclResult_t closeListenV8(void* listenComm) {
  ncclResult_t res = OLD(COMM(listenComm)->lib)->closeListen(COMM(listenComm)->comm);
  free(listenComm);
  return res;
}

static ncclResult_t getDeviceMrV8(void* comm, void* mhandle, void** dptr_mhandle) {
  return OLD(COMM(comm)->lib)->getDeviceMr(COMM(comm)->comm, mhandle, dptr_mhandle);
}

static ncclResult_t irecvConsumedV8(void* recvComm, int n, void* request) {
  return OLD(COMM(recvComm)->lib)->irecvConsumed(COMM(recvComm)->comm, n, request);
}

ncclResult_t chrNetAdaptV8(struct chrNetLib* lib, const ncclNet_v8_t* t) {
  lib->version = 8;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  ncclNet_v12_t* n = &lib->table;
  memset(n, 0, sizeof(*n));
  n->name = t->name;
  n->devices = t->devices; /* same signature in every version, no comm involved */
  n->listen = listenV8;
  n->connect = connectV8;
  n->accept = acceptV8;
  n->regMr = regMrV8;
  n->regMrDmaBuf = t->regMrDmaBuf ? regMrDmaBufV8 : NULL;
  n->deregMr = deregMrV8;
  n->isend = isendV8;
  n->irecv = irecvV8;
  n->iflush = t->iflush ? iflushV8 : NULL;
  n->test = t->test; /* requests are the plugin's own */
  n->closeSend = closeSendV8;
  n->closeRecv = closeRecvV8;
  n->closeListen = closeListenV8;
  n->getDeviceMr = t->getDeviceMr ? getDeviceMrV8 : NULL;
  n->irecvConsumed = t->irecvConsumed ? irecvConsumedV8 : NULL;
  n->finalize = chrNetAdaptFinalize;
  n->setNetAttr = NULL;
  lib->native = t;
  lib->name = t->name;
  lib->init = initV8;
  lib->getProperties = getPropertiesV8;
  lib->makeVDevice = NULL; /* v8 has no such slot */
  return ncclSuccess;
}
