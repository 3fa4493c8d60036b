/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: ncclNetPlugin_v11 .. ncclNetPlugin_v8, built from the plugin's chrNetPluginV12
 * (net_versions.h says what each version changes). The tables are filled by a constructor, so slots
 * the v12 table leaves NULL stay NULL here too and the name is the plugin's own.
 */
#include <pthread.h>
#include <string.h>

#include "net_versions.h"
#include "props_copy.h"

#define IMPL (&chrNetPluginV12)
#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- per-process init (v8..v10) */

static pthread_mutex_t legacyLock = PTHREAD_MUTEX_INITIALIZER;
static void* legacyCtx;
static int legacyReady;
static ncclDebugLogger_t legacyLogger;

#define NC_WARN(...)                                                                                  \
  do {                                                                                                \
    if (legacyLogger) legacyLogger(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "NET/%s : " __VA_ARGS__); \
  } while (0)

/* The first call makes the one context that v8..v10 calls share; later calls (a core that loads the
 * table again) succeed without a second v12 init. A failed init leaves nothing behind and may be
 * retried. */
static ncclResult_t legacyInit(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&legacyLock);
  if (!legacyReady) {
    ncclNetCommConfig_v12_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    void* ctx = NULL;
    res = IMPL->init(&ctx, 0, &config, logFunction, profFunction);
    if (res == ncclSuccess) {
      legacyCtx = ctx;
      legacyLogger = logFunction;
      legacyReady = 1;
    }
  }
  pthread_mutex_unlock(&legacyLock);
  return res;
}

static void* legacyContext(void) {
  pthread_mutex_lock(&legacyLock);
  void* ctx = legacyCtx;
  pthread_mutex_unlock(&legacyLock);
  return ctx;
}

static ncclResult_t listenLegacy(int dev, void* handle, void** listenComm) {
  return IMPL->listen(legacyContext(), dev, handle, listenComm);
}

/* ---------------------------------------------------------------- v11 */

static ncclResult_t initV11(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t logFunction,
                            ncclProfilerCallback_t profFunction) {
  ncclNetCommConfig_v12_t c = {config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return IMPL->init(ctx, commId, &c, logFunction, profFunction);
}

static ncclResult_t getPropertiesV11(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v12_t p;
  memset(&p, 0, sizeof(p));
  ncclResult_t res = IMPL->getProperties(dev, &p);
  if (res == ncclSuccess) chrNetPropsToV11(&p, props);
  return res;
}

static ncclResult_t makeVDeviceV11(int* d, ncclNetVDeviceProps_v11_t* props) {
  ncclNetVDeviceProps_v12_t p;
  if (props == NULL || chrNetVPropsFromV11(props, &p) != 0) return ncclInvalidUsage;
  return IMPL->makeVDevice(d, &p);
}

/* ncclNetAttr_v11_t and _v12_t have the same fields in the same order (44 bytes). */
_Static_assert(sizeof(ncclNetAttr_v11_t) == sizeof(ncclNetAttr_v12_t), "net attribute layouts differ");
static ncclResult_t setNetAttrV11(void* ctx, ncclNetAttr_v11_t* netAttr) {
  ncclNetAttr_v12_t a;
  if (netAttr == NULL) return ncclInternalError;
  memcpy(&a, netAttr, sizeof(a));
  return IMPL->setNetAttr(ctx, &a);
}

/* ---------------------------------------------------------------- v10 */

static ncclResult_t initV10(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return legacyInit(logFunction, profFunction);
}

static ncclResult_t getPropertiesV10(int dev, ncclNetProperties_v10_t* props) {
  ncclNetProperties_v12_t p;
  memset(&p, 0, sizeof(p));
  ncclResult_t res = IMPL->getProperties(dev, &p);
  if (res == ncclSuccess) chrNetPropsToV10(&p, props);
  return res;
}

static ncclResult_t connectV10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                               ncclNetDeviceHandle_v10_t** sendDevComm) {
  (void)config; /* the v12 connect has no config: the traffic class of v10 is not passed on */
  return IMPL->connect(legacyContext(), dev, handle, sendComm, sendDevComm);
}

static ncclResult_t makeVDeviceV10(int* d, ncclNetVDeviceProps_v10_t* props) {
  ncclNetVDeviceProps_v12_t p;
  if (props == NULL || chrNetVPropsFromV10(props, &p) != 0) return ncclInvalidUsage;
  return IMPL->makeVDevice(d, &p);
}

/* ---------------------------------------------------------------- v9 */

static ncclResult_t initV9(ncclDebugLogger_t logFunction) { return legacyInit(logFunction, NULL); }

static ncclResult_t getPropertiesV9(int dev, ncclNetProperties_v9_t* props) {
  ncclNetProperties_v12_t p;
  memset(&p, 0, sizeof(p));
  ncclResult_t res = IMPL->getProperties(dev, &p);
  if (res == ncclSuccess) chrNetPropsToV9(&p, props);
  return res;
}

static ncclResult_t connectLegacy(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v9_t** sendDevComm) {
  return IMPL->connect(legacyContext(), dev, handle, sendComm, sendDevComm);
}

static ncclResult_t isendV9(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return IMPL->isend(sendComm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV9(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                            void** request) {
  return IMPL->irecv(recvComm, n, data, sizes, tags, mhandles, NULL, request);
}

static ncclResult_t makeVDeviceV9(int* d, ncclNetVDeviceProps_v9_t* props) {
  ncclNetVDeviceProps_v12_t p;
  if (props == NULL || chrNetVPropsFromV9(props, &p) != 0) return ncclInvalidUsage;
  return IMPL->makeVDevice(d, &p);
}

/* ---------------------------------------------------------------- v8 */

static ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props) {
  ncclNetProperties_v12_t p;
  memset(&p, 0, sizeof(p));
  ncclResult_t res = IMPL->getProperties(dev, &p);
  if (res == ncclSuccess) chrNetPropsToV8(&p, props);
  return res;
}

static ncclResult_t isendV8(void* sendComm, void* data, int size, int tag, void* mhandle, void** request) {
  if (size < 0) {
    NC_WARN("isend: negative size %d", IMPL->name, size);
    return ncclInternalError;
  }
  return IMPL->isend(sendComm, data, (size_t)size, tag, mhandle, NULL, request);
}

static ncclResult_t irecvV8(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                            void** request) {
  size_t wide[CHR_NET_COMMON_MAX_RECVS];
  if (n < 1 || n > CHR_NET_COMMON_MAX_RECVS || sizes == NULL || request == NULL) {
    NC_WARN("irecv: bad arguments (n %d, sizes %p, request %p)", IMPL->name, n, (void*)sizes, (void*)request);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      NC_WARN("irecv: negative size %d for buffer %d", IMPL->name, sizes[i], i);
      return ncclInternalError;
    }
    wide[i] = (size_t)sizes[i];
  }
  *request = NULL; /* a v8 core leaves no optional-completion hint here; never let junk read as one */
  return IMPL->irecv(recvComm, n, data, wide, tags, mhandles, NULL, request);
}

/* ---------------------------------------------------------------- the tables */

EXPORT ncclNet_v11_t ncclNetPlugin_v11;
EXPORT ncclNet_v10_t ncclNetPlugin_v10;
EXPORT ncclNet_v9_t ncclNetPlugin_v9;
EXPORT ncclNet_v8_t ncclNetPlugin_v8;

/* Slots with the same signature in every version, copied as they are (NULL stays NULL). */
#define COPY_SAME_SLOTS(t)                           \
  do {                                               \
    (t)->name = IMPL->name;                          \
    (t)->devices = IMPL->devices;                    \
    (t)->accept = IMPL->accept;                      \
    (t)->regMr = IMPL->regMr;                        \
    (t)->regMrDmaBuf = IMPL->regMrDmaBuf;            \
    (t)->deregMr = IMPL->deregMr;                    \
    (t)->iflush = IMPL->iflush;                      \
    (t)->test = IMPL->test;                          \
    (t)->closeSend = IMPL->closeSend;                \
    (t)->closeRecv = IMPL->closeRecv;                \
    (t)->closeListen = IMPL->closeListen;            \
    (t)->getDeviceMr = IMPL->getDeviceMr;            \
    (t)->irecvConsumed = IMPL->irecvConsumed;        \
  } while (0)

__attribute__((constructor)) static void fillOlderTables(void) {
  ncclNet_v11_t* t11 = &ncclNetPlugin_v11;
  COPY_SAME_SLOTS(t11);
  t11->init = initV11;
  t11->getProperties = getPropertiesV11;
  t11->listen = IMPL->listen;
  t11->connect = IMPL->connect;
  t11->isend = IMPL->isend;
  t11->irecv = IMPL->irecv;
  t11->makeVDevice = IMPL->makeVDevice ? makeVDeviceV11 : NULL;
  t11->finalize = IMPL->finalize;
  t11->setNetAttr = IMPL->setNetAttr ? setNetAttrV11 : NULL;

  ncclNet_v10_t* t10 = &ncclNetPlugin_v10;
  COPY_SAME_SLOTS(t10);
  t10->init = initV10;
  t10->getProperties = getPropertiesV10;
  t10->listen = listenLegacy;
  t10->connect = connectV10;
  t10->isend = IMPL->isend;
  t10->irecv = IMPL->irecv;
  t10->makeVDevice = IMPL->makeVDevice ? makeVDeviceV10 : NULL;

  ncclNet_v9_t* t9 = &ncclNetPlugin_v9;
  COPY_SAME_SLOTS(t9);
  t9->init = initV9;
  t9->getProperties = getPropertiesV9;
  t9->listen = listenLegacy;
  t9->connect = connectLegacy;
  t9->isend = isendV9;
  t9->irecv = irecvV9;
  t9->makeVDevice = IMPL->makeVDevice ? makeVDeviceV9 : NULL;

  ncclNet_v8_t* t8 = &ncclNetPlugin_v8;
  COPY_SAME_SLOTS(t8);
  t8->init = initV9;
  t8->getProperties = getPropertiesV8;
  t8->listen = listenLegacy;
  t8->connect = connectLegacy;
  t8->isend = isendV8;
  t8->irecv = irecvV8;
}
