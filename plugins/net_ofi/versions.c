/*
 * versions.c: the exported tables ncclNetPlugin_v12 .. ncclNetPlugin_v8.
 *
 * The plugin is implemented once, as the v12 table. Every older table is a set of shims that reach
 * the implementation only through that one table (OFI_IMPL), so they can be replaced by shared shims
 * that take any v12 table: they copy the property struct into the older layout, drop the profiler
 * handles (v9 and older), take int sizes (v8), and map the per-process init of v8..v10 onto one
 * context made by the v12 init (v10's connect also takes the comm config, which is not needed here).
 */
#include <string.h>
#include "ofi_plugin.h"
#include "plugin/net_v10.h"
#include "plugin/net_v11.h"
#include "plugin/net_v12.h"
#include "plugin/net_v8.h"
#include "plugin/net_v9.h"

#define OFI_PLUGIN_NAME "OFI"

/* ---------------------------------------------------------------- v12: the implementation */

OFI_API const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = OFI_PLUGIN_NAME,
    .init = ofiInit,
    .devices = ofiDevices,
    .getProperties = ofiGetProperties,
    .listen = ofiListen,
    .connect = ofiConnect,
    .accept = ofiAccept,
    .regMr = ofiRegMr,
    .regMrDmaBuf = ofiRegMrDmaBuf,
    .deregMr = ofiDeregMr,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    .iflush = ofiIflush,
    .test = ofiTest,
    .closeSend = ofiCloseSend,
    .closeRecv = ofiCloseRecv,
    .closeListen = ofiCloseListen,
    .getDeviceMr = ofiGetDeviceMr,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = ofiFinalize,
    .setNetAttr = NULL,
};

#define OFI_IMPL (&ncclNetPlugin_v12)

/* Slots whose signatures are the same in every version from v8 to v12. */
#define OFI_SAME_SLOTS                                                                                 \
  .devices = ofiDevices, .regMr = ofiRegMr, .regMrDmaBuf = ofiRegMrDmaBuf, .deregMr = ofiDeregMr,  \
  .iflush = ofiIflush, .test = ofiTest, .closeSend = ofiCloseSend, .closeRecv = ofiCloseRecv,       \
  .closeListen = ofiCloseListen, .getDeviceMr = ofiGetDeviceMr, .irecvConsumed = NULL

/* ---------------------------------------------------------------- per-process init (v8..v10) */

static pthread_mutex_t legacyLock = PTHREAD_MUTEX_INITIALIZER;
static void* legacyCtx = NULL;

static ncclResult_t initLegacy(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&legacyLock);
  if (legacyCtx == NULL) {
    ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    res = OFI_IMPL->init(&legacyCtx, 0, &cfg, logFunction, profFunction);
  }
  pthread_mutex_unlock(&legacyLock);
  return res;
}

static void* legacy(void) {
  pthread_mutex_lock(&legacyLock);
  void* c = legacyCtx;
  pthread_mutex_unlock(&legacyLock);
  return c;
}

/* ---------------------------------------------------------------- v11 (props without rail/plane ids) */

#define OFI_COPY_PROPS_V9(dst, src)                      \
  do {                                                   \
    (dst)->name = (src).name;                            \
    (dst)->pciPath = (src).pciPath;                      \
    (dst)->guid = (src).guid;                            \
    (dst)->ptrSupport = (src).ptrSupport;                \
    (dst)->regIsGlobal = (src).regIsGlobal;              \
    (dst)->forceFlush = (src).forceFlush;                \
    (dst)->speed = (src).speed;                          \
    (dst)->port = (src).port;                            \
    (dst)->latency = (src).latency;                      \
    (dst)->maxComms = (src).maxComms;                    \
    (dst)->maxRecvs = (src).maxRecvs;                    \
    (dst)->netDeviceType = (src).netDeviceType;          \
    (dst)->netDeviceVersion = (src).netDeviceVersion;    \
    (dst)->vProps.ndevs = 1;                             \
    (dst)->vProps.devs[0] = (src).vProps.devs[0];        \
    (dst)->maxP2pBytes = (src).maxP2pBytes;              \
    (dst)->maxCollBytes = (src).maxCollBytes;            \
  } while (0)

static ncclResult_t getPropertiesV11(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = OFI_IMPL->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  OFI_COPY_PROPS_V9(props, p);
  props->maxMultiRequestSize = p.maxMultiRequestSize;
  return ncclSuccess;
}

static ncclResult_t initV11(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  ncclNetCommConfig_v12_t c = {config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return OFI_IMPL->init(ctx, commId, &c, logFunction, profFunction);
}

static ncclResult_t connectV11(void* ctx, int dev, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v11_t** sendDevComm) {
  return OFI_IMPL->connect(ctx, dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV11(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** recvDevComm) {
  return OFI_IMPL->accept(listenComm, recvComm, NULL);
}

OFI_API const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = OFI_PLUGIN_NAME,
    .init = initV11,
    .getProperties = getPropertiesV11,
    .listen = ofiListen,
    .connect = connectV11,
    .accept = acceptV11,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    OFI_SAME_SLOTS,
    .makeVDevice = NULL,
    .finalize = ofiFinalize,
    .setNetAttr = NULL,
};

/* ---------------------------------------------------------------- v10 (per-process init) */

static ncclResult_t initV10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return initLegacy(logFunction, profFunction);
}

static ncclResult_t getPropertiesV10(int dev, ncclNetProperties_v10_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = OFI_IMPL->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  OFI_COPY_PROPS_V9(props, p);
  return ncclSuccess;
}

static ncclResult_t listenLegacy(int dev, void* handle, void** listenComm) {
  return OFI_IMPL->listen(legacy(), dev, handle, listenComm);
}

static ncclResult_t connectV10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v10_t** sendDevComm) {
  return OFI_IMPL->connect(legacy(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptLegacy(void* listenComm, void** recvComm, ncclNetDeviceHandle_v10_t** recvDevComm) {
  /* v8..v10 device handle types are the same struct as v12's */
  return OFI_IMPL->accept(listenComm, recvComm, NULL);
}

OFI_API const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = OFI_PLUGIN_NAME,
    .init = initV10,
    .getProperties = getPropertiesV10,
    .listen = listenLegacy,
    .connect = connectV10,
    .accept = acceptLegacy,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    OFI_SAME_SLOTS,
    .makeVDevice = NULL,
};

/* ---------------------------------------------------------------- v9 (no profiler handles) */

static ncclResult_t initV9(ncclDebugLogger_t logFunction) { return initLegacy(logFunction, NULL); }

static ncclResult_t getPropertiesV9(int dev, ncclNetProperties_v9_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = OFI_IMPL->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  OFI_COPY_PROPS_V9(props, p);
  return ncclSuccess;
}

static ncclResult_t connectV9(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v9_t** sendDevComm) {
  return OFI_IMPL->connect(legacy(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV9(void* listenComm, void** recvComm, ncclNetDeviceHandle_v9_t** recvDevComm) {
  return OFI_IMPL->accept(listenComm, recvComm, NULL);
}

static ncclResult_t isendV9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return OFI_IMPL->isend(sendComm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                            void** request) {
  return OFI_IMPL->irecv(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}

OFI_API const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = OFI_PLUGIN_NAME,
    .init = initV9,
    .getProperties = getPropertiesV9,
    .listen = listenLegacy,
    .connect = connectV9,
    .accept = acceptV9,
    .isend = isendV9,
    .irecv = irecvV9,
    OFI_SAME_SLOTS,
    .makeVDevice = NULL,
};

/* ---------------------------------------------------------------- v8 (int sizes, base properties) */

static ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = OFI_IMPL->getProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  props->name = p.name;
  props->pciPath = p.pciPath;
  props->guid = p.guid;
  props->ptrSupport = p.ptrSupport;
  props->regIsGlobal = p.regIsGlobal;
  props->speed = p.speed;
  props->port = p.port;
  props->latency = p.latency;
  props->maxComms = p.maxComms;
  props->maxRecvs = p.maxRecvs;
  props->netDeviceType = p.netDeviceType;
  props->netDeviceVersion = p.netDeviceVersion;
  return ncclSuccess;
}

static ncclResult_t connectV8(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v8_t** sendDevComm) {
  return OFI_IMPL->connect(legacy(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV8(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm) {
  return OFI_IMPL->accept(listenComm, recvComm, NULL);
}

static ncclResult_t isendV8(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
  if (size < 0) {
    OFI_WARN("isend: negative size %d", size);
    return ncclInternalError;
  }
  return OFI_IMPL->isend(sendComm, data, (size_t)size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV8(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                            void** request) {
  size_t wide[OFI_MAX_RECVS];
  if (n < 1 || n > OFI_MAX_RECVS || sizes == NULL) {
    OFI_WARN("irecv: bad arguments (n %d, sizes %p)", n, (void*)sizes);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      OFI_WARN("irecv: negative size %d for buffer %d", sizes[i], i);
      return ncclInternalError;
    }
    wide[i] = (size_t)sizes[i];
  }
  return OFI_IMPL->irecv(recvComm, n, data, wide, tags, mhandles, NULL, request);
}

OFI_API const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = OFI_PLUGIN_NAME,
    .init = initV9,
    .getProperties = getPropertiesV8,
    .listen = listenLegacy,
    .connect = connectV8,
    .accept = acceptV8,
    .isend = isendV8,
    .irecv = irecvV8,
    OFI_SAME_SLOTS,
};
