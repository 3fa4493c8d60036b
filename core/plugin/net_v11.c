/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_v11.c: presents a v11 net plugin as v12.
 *
 * v11 differs from v12 only in its properties (no railId/planeId, vProps of 4 devices) and the
 * matching makeVDevice argument; init is already per communicator. So every other slot is the
 * plugin's own function: the slots whose argument types differ only by version suffix
 * (connect/accept device handles, init config, setNetAttr attributes) have identical layouts,
 * checked below, and are called through the v12 type.
 */
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

_Static_assert(sizeof(ncclNetDeviceHandle_v11_t) == sizeof(ncclNetDeviceHandle_v12_t), "device handle layout");
_Static_assert(sizeof(ncclNetAttr_v11_t) == sizeof(ncclNetAttr_v12_t), "net attr layout");
_Static_assert(sizeof(ncclNetCommConfig_v11_t) == sizeof(ncclNetCommConfig_v12_t), "comm config layout");

#define OLD(lib) ((const ncclNet_v11_t*)(lib)->native)

static ncclResult_t initV11(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  ncclNetCommConfig_v11_t oldConfig = {.trafficClass = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return OLD(lib)->init(ctx, commId, &oldConfig, logFunction, profFunction);
}

static ncclResult_t getPropertiesV11(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  ncclNetProperties_v11_t p;
  memset(&p, 0, sizeof(p));
  CHECK(OLD(lib)->getProperties(dev, &p));
  CHR_NET_PROPS_FROM_V9(props, &p, NCCL_NET_MAX_DEVS_PER_NIC_V11);
  props->maxMultiRequestSize = p.maxMultiRequestSize; /* the one field v11 added */
  return ncclSuccess;
}

static ncclResult_t makeVDeviceV11(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props) {
  ncclNetVDeviceProps_v11_t p;
  CHECK(chrNetAdaptNarrowVDevice(lib, props, NCCL_NET_MAX_DEVS_PER_NIC_V11, &p.ndevs, p.devs));
  return OLD(lib)->makeVDevice(d, &p);
}

typedef ncclResult_t (*connectV12_t)(void*, int, void*, void**, ncclNetDeviceHandle_v12_t**);
typedef ncclResult_t (*acceptV12_t)(void*, void**, ncclNetDeviceHandle_v12_t**);
typedef ncclResult_t (*setNetAttrV12_t)(void*, ncclNetAttr_v12_t*);

ncclResult_t chrNetAdaptV11(struct chrNetLib* lib, const ncclNet_v11_t* t) {
  lib->version = 11;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  ncclNet_v12_t* n = &lib->table;
  memset(n, 0, sizeof(*n));
  n->name = t->name;
  n->devices = t->devices;
  n->listen = t->listen;
  n->connect = (connectV12_t)t->connect;
  n->accept = (acceptV12_t)t->accept;
  n->regMr = t->regMr;
  n->regMrDmaBuf = t->regMrDmaBuf;
  n->deregMr = t->deregMr;
  n->isend = t->isend;
  n->irecv = t->irecv;
  n->iflush = t->iflush;
  n->test = t->test;
  n->closeSend = t->closeSend;
  n->closeRecv = t->closeRecv;
  n->closeListen = t->closeListen;
  n->getDeviceMr = t->getDeviceMr;
  n->irecvConsumed = t->irecvConsumed;
  n->finalize = t->finalize;
  n->setNetAttr = (setNetAttrV12_t)t->setNetAttr;
  lib->native = t;
  lib->name = t->name;
  lib->init = initV11;
  lib->getProperties = getPropertiesV11;
  lib->makeVDevice = t->makeVDevice ? makeVDeviceV11 : NULL;
  return ncclSuccess;
}
