/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_v9.c: presents a v9 net plugin as v12.
 *
 * What changes from v12: v9's init (logger only) runs once per process, so the first comm
 * calls it and later comms only count; each comm gets a dummy ctx. There is no comm config
 * (trafficClass is dropped) and no profiler: the profiler callback and the phandles of isend/irecv
 * are dropped. listen/connect have no ctx, so the comms handed back are wrapped to remember the
 * library. No finalize (the count drops) and no setNetAttr. The properties gain
 * maxMultiRequestSize = 1 and railId = planeId = -1. The parts every old version shares are in
 * net_adapt.c; this file has only what is v9's own.
 */
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define OLD(lib) ((const ncclNet_v9_t*)(lib)->native)
#define COMM(p) ((struct chrNetAdaptComm*)(p))

static ncclResult_t initOld(struct chrNetLib* lib, ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  (void)profFunction; /* v9 has no profiler hook */
  return OLD(lib)->init(logFunction);
}

static ncclResult_t getPropertiesV9(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v9_t p;
  memset(&p, 0, sizeof(p));
  CHECK(OLD(lib)->getProperties(dev, &p));
  CHR_NET_PROPS_FROM_V9(props, &p, NCCL_NET_MAX_DEVS_PER_NIC_V9);
  return ncclSuccess;
}

static ncclResult_t makeVDeviceV9(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props) {
  ncclNetVDeviceProps_v9_t p;
  CHECK(chrNetAdaptNarrowVDevice(lib, props, NCCL_NET_MAX_DEVS_PER_NIC_V9, &p.ndevs, p.devs));
  return OLD(lib)->makeVDevice(d, &p);
}

/* connect and accept get and give the plugin's own comms; net_adapt.c wraps them. */
static ncclResult_t connectV9(struct chrNetLib* lib, const struct chrNetAdaptCtx* ctx, int dev, void* handle,
                              void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  (void)ctx; /* v9 has no comm config */
  return OLD(lib)->connect(dev, handle, sendComm, (ncclNetDeviceHandle_v9_t**)sendDevComm);
}

static ncclResult_t acceptV9(struct chrNetLib* lib, void* listenComm, void** recvComm,
                             ncclNetDeviceHandle_v12_t** recvDevComm) {
  return OLD(lib)->accept(listenComm, recvComm, (ncclNetDeviceHandle_v9_t**)recvDevComm);
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

ncclResult_t chrNetAdaptV9(struct chrNetLib* lib, const ncclNet_v9_t* t) {
  lib->version = 9;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  CHR_NET_COPY_COMMON_SLOTS(&lib->common, t);
  const struct chrNetAdaptOps ops = {.initOld = initOld, .connect = connectV9, .accept = acceptV9,
                                     .isend = isendV9, .irecv = irecvV9, .getProperties = getPropertiesV9,
                                     .makeVDevice = t->makeVDevice ? makeVDeviceV9 : NULL};
  chrNetAdaptBind(lib, t, t->name, &ops);
  return ncclSuccess;
}
