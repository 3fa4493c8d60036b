/*
 * versions.c: the exported tables ncclNetPlugin_v12 .. ncclNetPlugin_v8.
 *
 * Everything is implemented once, with the v12 signatures. Older tables are thin shims: they copy the
 * property struct into the older layout, drop the profiler handles (v9 and older), take int sizes (v8),
 * and map the per-process init of v8..v10 onto one shared legacy context (v10's connect also takes
 * the comm config, which this plugin does not need).
 */
#include <string.h>
#include "plugin/net_v10.h"
#include "plugin/net_v11.h"
#include "plugin/net_v12.h"
#include "plugin/net_v8.h"
#include "plugin/net_v9.h"
#include "socket_plugin.h"

#define NS_PLUGIN_NAME "Socket"

/* Slots whose signatures are the same in every version from v8 to v12. */
#define NS_MR_SLOTS .regMr = nsRegMr, .regMrDmaBuf = nsRegMrDmaBuf, .deregMr = nsDeregMr
#define NS_DATA_TAIL_SLOTS                                                                             \
  .iflush = nsIflush, .test = nsTest, .closeSend = nsCloseSend, .closeRecv = nsCloseRecv,           \
  .closeListen = nsCloseListen, .getDeviceMr = nsGetDeviceMr, .irecvConsumed = NULL

/* ---------------------------------------------------------------- v12 */

NS_API const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = NS_PLUGIN_NAME,
    .init = nsInit,
    .devices = nsDevices,
    .getProperties = nsGetProperties,
    .listen = nsListen,
    .connect = nsConnect,
    .accept = nsAccept,
    NS_MR_SLOTS,
    .isend = nsIsend,
    .irecv = nsIrecv,
    NS_DATA_TAIL_SLOTS,
    .makeVDevice = NULL,
    .finalize = nsFinalize,
    .setNetAttr = NULL,
};

/* ---------------------------------------------------------------- v11 (props without rail/plane ids) */

/* Fields common to v9..v11 property structs, copied from the v12 ones. */
#define NS_COPY_PROPS_V9(dst, src)               \
  do {                                           \
    (dst)->name = (src).name;                    \
    (dst)->pciPath = (src).pciPath;              \
    (dst)->guid = (src).guid;                    \
    (dst)->ptrSupport = (src).ptrSupport;        \
    (dst)->regIsGlobal = (src).regIsGlobal;      \
    (dst)->forceFlush = (src).forceFlush;        \
    (dst)->speed = (src).speed;                  \
    (dst)->port = (src).port;                    \
    (dst)->latency = (src).latency;              \
    (dst)->maxComms = (src).maxComms;            \
    (dst)->maxRecvs = (src).maxRecvs;            \
    (dst)->netDeviceType = (src).netDeviceType;  \
    (dst)->netDeviceVersion = (src).netDeviceVersion; \
    (dst)->vProps.ndevs = 1;                     \
    (dst)->vProps.devs[0] = (src).vProps.devs[0]; \
    (dst)->maxP2pBytes = (src).maxP2pBytes;      \
    (dst)->maxCollBytes = (src).maxCollBytes;    \
  } while (0)

static ncclResult_t getPropertiesV11(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = nsGetProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  NS_COPY_PROPS_V9(props, p);
  props->maxMultiRequestSize = p.maxMultiRequestSize;
  return ncclSuccess;
}

static ncclResult_t initV11(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  ncclNetCommConfig_v12_t c = {config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return nsInit(ctx, commId, &c, logFunction, profFunction);
}

static ncclResult_t connectV11(void* ctx, int dev, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v11_t** sendDevComm) {
  return nsConnect(ctx, dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV11(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** recvDevComm) {
  return nsAccept(listenComm, recvComm, NULL);
}

NS_API const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = NS_PLUGIN_NAME,
    .init = initV11,
    .devices = nsDevices,
    .getProperties = getPropertiesV11,
    .listen = nsListen,
    .connect = connectV11,
    .accept = acceptV11,
    NS_MR_SLOTS,
    .isend = nsIsend,
    .irecv = nsIrecv,
    NS_DATA_TAIL_SLOTS,
    .makeVDevice = NULL,
    .finalize = nsFinalize,
    .setNetAttr = NULL,
};

/* ---------------------------------------------------------------- v10 (per-process init) */

static ncclResult_t initV10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return nsInitLegacy(logFunction, profFunction);
}

static ncclResult_t getPropertiesV10(int dev, ncclNetProperties_v10_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = nsGetProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  NS_COPY_PROPS_V9(props, p);
  return ncclSuccess;
}

static ncclResult_t listenLegacy(int dev, void* handle, void** listenComm) {
  return nsListen(nsLegacyCtx(), dev, handle, listenComm);
}

static ncclResult_t connectV10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v10_t** sendDevComm) {
  return nsConnect(nsLegacyCtx(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV10(void* listenComm, void** recvComm, ncclNetDeviceHandle_v10_t** recvDevComm) {
  return nsAccept(listenComm, recvComm, NULL);
}

NS_API const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = NS_PLUGIN_NAME,
    .init = initV10,
    .devices = nsDevices,
    .getProperties = getPropertiesV10,
    .listen = listenLegacy,
    .connect = connectV10,
    .accept = acceptV10,
    NS_MR_SLOTS,
    .isend = nsIsend,
    .irecv = nsIrecv,
    NS_DATA_TAIL_SLOTS,
    .makeVDevice = NULL,
};

/* ---------------------------------------------------------------- v9 (no profiler handles) */

static ncclResult_t initV9(ncclDebugLogger_t logFunction) { return nsInitLegacy(logFunction, NULL); }

static ncclResult_t getPropertiesV9(int dev, ncclNetProperties_v9_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = nsGetProperties(dev, &p);
  if (res != ncclSuccess) return res;
  memset(props, 0, sizeof(*props));
  NS_COPY_PROPS_V9(props, p);
  return ncclSuccess;
}

static ncclResult_t connectV9(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v9_t** sendDevComm) {
  return nsConnect(nsLegacyCtx(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV9(void* listenComm, void** recvComm, ncclNetDeviceHandle_v9_t** recvDevComm) {
  return nsAccept(listenComm, recvComm, NULL);
}

static ncclResult_t isendV9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return nsIsend(sendComm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                            void** request) {
  return nsIrecv(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}

NS_API const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = NS_PLUGIN_NAME,
    .init = initV9,
    .devices = nsDevices,
    .getProperties = getPropertiesV9,
    .listen = listenLegacy,
    .connect = connectV9,
    .accept = acceptV9,
    NS_MR_SLOTS,
    .isend = isendV9,
    .irecv = irecvV9,
    NS_DATA_TAIL_SLOTS,
    .makeVDevice = NULL,
};

/* ---------------------------------------------------------------- v8 (int sizes, base properties) */

static ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props) {
  ncclNetProperties_v12_t p;
  ncclResult_t res = nsGetProperties(dev, &p);
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
  return nsConnect(nsLegacyCtx(), dev, handle, sendComm, NULL);
}

static ncclResult_t acceptV8(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm) {
  return nsAccept(listenComm, recvComm, NULL);
}

static ncclResult_t isendV8(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
  if (size < 0) {
    NS_WARN("isend: negative size %d", size);
    return ncclInternalError;
  }
  return nsIsend(sendComm, data, (size_t)size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV8(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                            void** request) {
  size_t wide[NS_MAX_RECVS];
  if (n < 1 || n > NS_MAX_RECVS || sizes == NULL) {
    NS_WARN("irecv: bad arguments (n %d, sizes %p)", n, (void*)sizes);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      NS_WARN("irecv: negative size %d for buffer %d", sizes[i], i);
      return ncclInternalError;
    }
    wide[i] = (size_t)sizes[i];
  }
  return nsIrecv(recvComm, n, data, wide, tags, mhandles, NULL, request);
}

NS_API const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = NS_PLUGIN_NAME,
    .init = initV9,
    .devices = nsDevices,
    .getProperties = getPropertiesV8,
    .listen = listenLegacy,
    .connect = connectV8,
    .accept = acceptV8,
    NS_MR_SLOTS,
    .isend = isendV8,
    .irecv = irecvV8,
    NS_DATA_TAIL_SLOTS,
};
