/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_v10.c: presents a v10 net plugin as v12.
 *
 * What changes from v12: v10's init runs once per process, so the first comm calls it and
 * later comms only count; each comm gets a dummy ctx that holds its config, which v10 takes at
 * connect instead of init. listen/connect have no ctx, so the comms handed back are wrapped to
 * remember the library. No finalize (the count drops) and no setNetAttr. The properties gain
 * maxMultiRequestSize = 1 and railId = planeId = -1. The parts every old version shares are in
 * net_adapt.c; this file has only what is v10's own.
 */
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define OLD(lib) ((const ncclNet_v10_t*)(lib)->native)
#define COMM(p) ((struct chrNetAdaptComm*)(p))

static ncclResult_t initOld(struct chrNetLib* lib, ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return OLD(lib)->init(logFunction, profFunction);
}

static ncclResult_t getPropertiesV10(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v10_t p;
  memset(&p, 0, sizeof(p));
  CHECK(OLD(lib)->getProperties(dev, &p));
  CHR_NET_PROPS_FROM_V9(props, &p, NCCL_NET_MAX_DEVS_PER_NIC_V10);
  return ncclSuccess;
}

static ncclResult_t makeVDeviceV10(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props) {
  ncclNetVDeviceProps_v10_t p;
  CHECK(chrNetAdaptNarrowVDevice(lib, props, NCCL_NET_MAX_DEVS_PER_NIC_V10, &p.ndevs, p.devs));
  return OLD(lib)->makeVDevice(d, &p);
}

/* connect and accept get and give the plugin's own comms; net_adapt.c wraps them. The comm's
 * config, given to init in v12, reaches v10 here. */
static ncclResult_t connectV10(struct chrNetLib* lib, const struct chrNetAdaptCtx* ctx, int dev, void* handle,
                               void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  ncclNetCommConfig_v10_t config = {.trafficClass = ctx->config.trafficClass};
  return OLD(lib)->connect(dev, &config, handle, sendComm, (ncclNetDeviceHandle_v10_t**)sendDevComm);
}

static ncclResult_t acceptV10(struct chrNetLib* lib, void* listenComm, void** recvComm,
                              ncclNetDeviceHandle_v12_t** recvDevComm) {
  return OLD(lib)->accept(listenComm, recvComm, (ncclNetDeviceHandle_v10_t**)recvDevComm);
}

static ncclResult_t isendV10(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) {
  return OLD(COMM(sendComm)->lib)->isend(COMM(sendComm)->comm, data, size, tag, mhandle, phandle, request);
}

static ncclResult_t irecvV10(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** phandles, void** request) {
  return OLD(COMM(recvComm)->lib)->irecv(COMM(recvComm)->comm, n, data, sizes, tags, mhandles, phandles, request);
}

ncclResult_t chrNetAdaptV10(struct chrNetLib* lib, const ncclNet_v10_t* t) {
  lib->version = 10;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  CHR_NET_COPY_COMMON_SLOTS(&lib->common, t);
  const struct chrNetAdaptOps ops = {.initOld = initOld, .connect = connectV10, .accept = acceptV10,
                                     .isend = isendV10, .irecv = irecvV10, .getProperties = getPropertiesV10,
                                     .makeVDevice = t->makeVDevice ? makeVDeviceV10 : NULL};
  chrNetAdaptBind(lib, t, t->name, &ops);
  return ncclSuccess;
}
