/*
 * net_v9.c: presents a v9 net plugin as v12.
 *
 * What changes (reference §2.6): v9's init (logger only) runs once per process, so the first comm
 * calls it and later comms only count (chrNetAdaptInitOnce); each comm gets a dummy ctx. There is
 * no comm config (trafficClass is dropped) and no profiler: the profiler callback and the phandles
 * of isend/irecv are dropped. listen/connect have no ctx, so the comms handed back are wrapped to
 * remember the library. No finalize (the count drops) and no setNetAttr. The properties gain
 * maxMultiRequestSize = 1 and railId = planeId = -1.
 */
#include <stdlib.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define OLD(lib) ((const ncclNet_v9_t*)(lib)->native)
#define COMM(p) ((struct chrNetAdaptComm*)(p))
#define CTX(p) ((struct chrNetAdaptCtx*)(p))

static ncclResult_t callOldInit(struct chrNetLib* lib, ncclDebugLogger_t logFunction,
                                ncclProfilerCallback_t profFunction) {
  (void)profFunction; /* v9 has no profiler hook */
  return OLD(lib)->init(logFunction);
}

static ncclResult_t initV9(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return chrNetAdaptInitOnce(lib, ctx, config, logFunction, profFunction, callOldInit);
}

static ncclResult_t getPropertiesV9(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v9_t p;
  memset(&p, 0, sizeof(p));
  CHECK(OLD(lib)->getProperties(dev, &p));
  memset(props, 0, sizeof(*props));
  CHR_NET_COPY_BASE_PROPS(props, &p);
  props->forceFlush = p.forceFlush;
  props->vProps.ndevs = p.vProps.ndevs;
  for (int i = 0; i < p.vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V9; i++) props->vProps.devs[i] = p.vProps.devs[i];
  props->maxP2pBytes = p.maxP2pBytes;
  props->maxCollBytes = p.maxCollBytes;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}

static ncclResult_t makeVDeviceV9(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props) {
  if (props->ndevs < 1 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V9)
    return chrNetAdaptFail(ncclInvalidUsage, "net plugin %s (ABI v9) can fuse 1..%d devices into a vNIC, not %d",
                           lib->name, NCCL_NET_MAX_DEVS_PER_NIC_V9, props->ndevs);
  ncclNetVDeviceProps_v9_t p = {.ndevs = props->ndevs};
  for (int i = 0; i < props->ndevs; i++) p.devs[i] = props->devs[i];
  return OLD(lib)->makeVDevice(d, &p);
}

static ncclResult_t listenV9(void* ctx, int dev, void* handle, void** listenComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *listenComm = NULL;
  CHECK(OLD(lib)->listen(dev, handle, &raw));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, listenComm);
  if (res != ncclSuccess) OLD(lib)->closeListen(raw);
  return res;
}

static ncclResult_t connectV9(void* ctx, int dev, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v12_t** sendDevComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *sendComm = NULL;
  CHECK(OLD(lib)->connect(dev, handle, &raw, (ncclNetDeviceHandle_v9_t**)sendDevComm));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, sendComm);
  if (res != ncclSuccess) OLD(lib)->closeSend(raw);
  return res;
}

static ncclResult_t acceptV9(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  struct chrNetLib* lib = COMM(listenComm)->lib;
  void* raw = NULL;
  *recvComm = NULL;
  CHECK(OLD(lib)->accept(COMM(listenComm)->comm, &raw, (ncclNetDeviceHandle_v9_t**)recvDevComm));
  ncclResult_t res = chrNetAdaptWrap(lib, raw, recvComm);
  if (res != ncclSuccess) OLD(lib)->closeRecv(raw);
  return res;
}

static ncclResult_t regMrV9(void* comm, void* data, size_t size, int type, void** mhandle) {
  return OLD(COMM(comm)->lib)->regMr(COMM(comm)->comm, data, size, type, mhandle);
}

static ncclResult_t regMrDmaBufV9(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) {
  return OLD(COMM(comm)->lib)->regMrDmaBuf(COMM(comm)->comm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t deregMrV9(void* comm, void* mhandle) {
  return OLD(COMM(comm)->lib)->deregMr(COMM(comm)->comm, mhandle);
}

static ncclResult_t isendV9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) {
  (void)phandle; /* v9 has no profiler handles */
  return OLD(COMM(sendComm)->lib)->isend(COMM(sendComm)->comm, data, size, tag, mhandle, request);
}

static ncclResult_t irecvV9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** phandles, void** request) {
  (void)phandles;
  return OLD(COMM(recvComm)->lib)->irecv(COMM(recvComm)->comm, n, data, sizes, tags, mhandles, request);
}

static ncclResult_t iflushV9(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return OLD(COMM(recvComm)->lib)->iflush(COMM(recvComm)->comm, n, data, sizes, mhandles, request);
}

/* The wrapper is freed whatever the plugin answers: the core never uses a closed comm again. */
static ncclResult_t closeSendV9(void* sendComm) {
  ncclResult_t res = OLD(COMM(sendComm)->lib)->closeSend(COMM(sendComm)->comm);
  free(sendComm);
  return res;
}

static ncclResult_t closeRecvV9(void* recvComm) {
  ncclResult_t res = OLD(COMM(recvComm)->lib)->closeRecv(COMM(recvComm)->comm);
  free(recvComm);
  return res;
}

static ncclResult_t closeListenV9(void* listenComm) {
  ncclResult_t res = OLD(COMM(listenComm)->lib)->closeListen(COMM(listenComm)->comm);
  free(listenComm);
  return res;
}

static ncclResult_t getDeviceMrV9(void* comm, void* mhandle, void** dptr_mhandle) {
  return OLD(COMM(comm)->lib)->getDeviceMr(COMM(comm)->comm, mhandle, dptr_mhandle);
}

static ncclResult_t irecvConsumedV9(void* recvComm, int n, void* request) {
  return OLD(COMM(recvComm)->lib)->irecvConsumed(COMM(recvComm)->comm, n, request);
}

ncclResult_t chrNetAdaptV9(struct chrNetLib* lib, const ncclNet_v9_t* t) {
  lib->version = 9;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  ncclNet_v12_t* n = &lib->table;
  memset(n, 0, sizeof(*n));
  n->name = t->name;
  n->devices = t->devices; /* same signature in every version, no comm involved */
  n->listen = listenV9;
  n->connect = connectV9;
  n->accept = acceptV9;
  n->regMr = regMrV9;
  n->regMrDmaBuf = t->regMrDmaBuf ? regMrDmaBufV9 : NULL;
  n->deregMr = deregMrV9;
  n->isend = isendV9;
  n->irecv = irecvV9;
  n->iflush = t->iflush ? iflushV9 : NULL;
  n->test = t->test; /* requests are the plugin's own */
  n->closeSend = closeSendV9;
  n->closeRecv = closeRecvV9;
  n->closeListen = closeListenV9;
  n->getDeviceMr = t->getDeviceMr ? getDeviceMrV9 : NULL;
  n->irecvConsumed = t->irecvConsumed ? irecvConsumedV9 : NULL;
  n->finalize = chrNetAdaptFinalize;
  n->setNetAttr = NULL;
  lib->native = t;
  lib->name = t->name;
  lib->init = initV9;
  lib->getProperties = getPropertiesV9;
  lib->makeVDevice = t->makeVDevice ? makeVDeviceV9 : NULL;
  return ncclSuccess;
}
