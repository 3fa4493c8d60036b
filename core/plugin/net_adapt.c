/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_adapt.c: what the v8..v10 net adapters share: the once-per-process init with a user count and
 * a dummy per-comm ctx, comm wrapping, the forwarders of every slot whose signature did not change
 * (they unwrap the comm and call the plugin's copy in lib->common), and the "already reported" mark.
 * Each net_vN.c supplies only what differs (lib->ops).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

#define COMM(p) ((struct chrNetAdaptComm*)(p))
#define CTX(p) ((struct chrNetAdaptCtx*)(p))
#define PLUGIN(p) (COMM(p)->lib->common) /* the plugin's common slots, from a wrapped comm */

static __thread int adapterReported;

ncclResult_t chrNetAdaptFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  adapterReported = 1;
  return chrFailAt(res, file, line, "%s", msg);
}

int chrNetAdaptTakeReported(void) {
  int was = adapterReported;
  adapterReported = 0;
  return was;
}

ncclResult_t chrNetMissingSlot(struct chrNetLib* lib, const char* slotName) {
  snprintf(lib->failReason, sizeof(lib->failReason), "its ncclNetPlugin_v%d table has a NULL %s slot", lib->version,
           slotName);
  return ncclInvalidUsage;
}

ncclResult_t chrNetAdaptNarrowVDevice(const struct chrNetLib* lib, const ncclNetVDeviceProps_v12_t* props, int maxDevs,
                                      int* ndevs, int* devs) {
  if (props->ndevs < 1 || props->ndevs > maxDevs)
    return chrNetAdaptFail(ncclInvalidUsage, "net plugin %s (ABI v%d) can fuse 1..%d devices into a vNIC, not %d",
                           lib->name, lib->version, maxDevs, props->ndevs);
  *ndevs = props->ndevs;
  for (int i = 0; i < maxDevs; i++) devs[i] = i < props->ndevs ? props->devs[i] : 0;
  return ncclSuccess;
}

/* ---- init and finalize ------------------------------------------------------------------------- */

/* The old init runs on the first comm only; its result is kept, so a failed init is not retried. */
static ncclResult_t adaptInit(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                              ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  (void)commId; /* the old plugin is not per communicator */
  *ctx = NULL;
  pthread_mutex_lock(&lib->initLock);
  if (!lib->initDone) {
    lib->initResult = lib->ops.initOld(lib, logFunction, profFunction);
    lib->initDone = 1;
  }
  ncclResult_t res = lib->initResult;
  if (res == ncclSuccess) lib->initRefs++;
  pthread_mutex_unlock(&lib->initLock);
  if (res != ncclSuccess) return res; /* the plugin's own failure: the loader reports it */

  struct chrNetAdaptCtx* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    pthread_mutex_lock(&lib->initLock);
    lib->initRefs--;
    pthread_mutex_unlock(&lib->initLock);
    return chrNetAdaptFail(ncclSystemError, "net adapter: out of memory for a comm context");
  }
  c->lib = lib;
  c->config.trafficClass = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  *ctx = c;
  return ncclSuccess;
}

/* The old plugin has no finalize: the last user leaving only drops the count. The plugin stays
 * initialised for the life of the process, as its ABI expects. */
static ncclResult_t adaptFinalize(void* ctx) {
  struct chrNetAdaptCtx* c = ctx;
  if (c == NULL) return ncclSuccess;
  pthread_mutex_lock(&c->lib->initLock);
  if (c->lib->initRefs > 0) c->lib->initRefs--;
  pthread_mutex_unlock(&c->lib->initLock);
  free(c);
  return ncclSuccess;
}

/* ---- connection setup: the plugin's comm comes back wrapped ------------------------------------ */

/* Wrap a comm the plugin returned (NULL stays NULL, meaning "not yet"). Without memory for the
 * wrapper the plugin's comm is closed again (closeRaw), so nothing leaks. */
static ncclResult_t wrapOrClose(struct chrNetLib* lib, void* raw, void** wrapped, ncclResult_t (*closeRaw)(void*)) {
  *wrapped = NULL;
  if (raw == NULL) return ncclSuccess;
  struct chrNetAdaptComm* w = malloc(sizeof(*w));
  if (w == NULL) {
    ncclResult_t res =
        chrNetAdaptFail(ncclSystemError, "net adapter: out of memory wrapping a comm of plugin %s", lib->name);
    closeRaw(raw);
    return res;
  }
  w->lib = lib;
  w->comm = raw;
  *wrapped = w;
  return ncclSuccess;
}

static ncclResult_t adaptListen(void* ctx, int dev, void* handle, void** listenComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *listenComm = NULL;
  CHECK(lib->common.listen(dev, handle, &raw));
  return wrapOrClose(lib, raw, listenComm, lib->common.closeListen);
}

static ncclResult_t adaptConnect(void* ctx, int dev, void* handle, void** sendComm,
                                 ncclNetDeviceHandle_v12_t** sendDevComm) {
  struct chrNetLib* lib = CTX(ctx)->lib;
  void* raw = NULL;
  *sendComm = NULL;
  CHECK(lib->ops.connect(lib, CTX(ctx), dev, handle, &raw, sendDevComm));
  return wrapOrClose(lib, raw, sendComm, lib->common.closeSend);
}

static ncclResult_t adaptAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  struct chrNetLib* lib = COMM(listenComm)->lib;
  void* raw = NULL;
  *recvComm = NULL;
  CHECK(lib->ops.accept(lib, COMM(listenComm)->comm, &raw, recvDevComm));
  return wrapOrClose(lib, raw, recvComm, lib->common.closeRecv);
}

/* ---- slots whose signature never changed: unwrap and call the plugin ----------------------------- */

static ncclResult_t adaptRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return PLUGIN(comm).regMr(COMM(comm)->comm, data, size, type, mhandle);
}

static ncclResult_t adaptRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                     void** mhandle) {
  return PLUGIN(comm).regMrDmaBuf(COMM(comm)->comm, data, size, type, offset, fd, mhandle);
}

static ncclResult_t adaptDeregMr(void* comm, void* mhandle) {
  return PLUGIN(comm).deregMr(COMM(comm)->comm, mhandle);
}

static ncclResult_t adaptIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return PLUGIN(recvComm).iflush(COMM(recvComm)->comm, n, data, sizes, mhandles, request);
}

static ncclResult_t adaptGetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  return PLUGIN(comm).getDeviceMr(COMM(comm)->comm, mhandle, dptr_mhandle);
}

static ncclResult_t adaptIrecvConsumed(void* recvComm, int n, void* request) {
  return PLUGIN(recvComm).irecvConsumed(COMM(recvComm)->comm, n, request);
}

/* The wrapper is freed whatever the plugin answers: the core never uses a closed comm again. */
static ncclResult_t closeWrapped(void* comm, ncclResult_t (*closeRaw)(void*)) {
  ncclResult_t res = closeRaw(COMM(comm)->comm);
  free(comm);
  return res;
}

static ncclResult_t adaptCloseSend(void* sendComm) { return closeWrapped(sendComm, PLUGIN(sendComm).closeSend); }
static ncclResult_t adaptCloseRecv(void* recvComm) { return closeWrapped(recvComm, PLUGIN(recvComm).closeRecv); }
static ncclResult_t adaptCloseListen(void* listenComm) {
  return closeWrapped(listenComm, PLUGIN(listenComm).closeListen);
}

/* ---- binding ------------------------------------------------------------------------------------ */

void chrNetAdaptBind(struct chrNetLib* lib, const void* native, const char* name, const struct chrNetAdaptOps* ops) {
  const struct chrNetCommonSlots* c = &lib->common;
  ncclNet_v12_t* n = &lib->table;
  memset(n, 0, sizeof(*n));
  n->name = name;
  n->devices = c->devices; /* no comm involved */
  n->listen = adaptListen;
  n->connect = adaptConnect;
  n->accept = adaptAccept;
  n->regMr = adaptRegMr;
  n->regMrDmaBuf = c->regMrDmaBuf ? adaptRegMrDmaBuf : NULL;
  n->deregMr = adaptDeregMr;
  n->isend = ops->isend;
  n->irecv = ops->irecv;
  n->iflush = c->iflush ? adaptIflush : NULL;
  n->test = c->test; /* requests are the plugin's own */
  n->closeSend = adaptCloseSend;
  n->closeRecv = adaptCloseRecv;
  n->closeListen = adaptCloseListen;
  n->getDeviceMr = c->getDeviceMr ? adaptGetDeviceMr : NULL;
  n->irecvConsumed = c->irecvConsumed ? adaptIrecvConsumed : NULL;
  n->finalize = adaptFinalize;
  n->setNetAttr = NULL; /* none before v11 */
  lib->ops = *ops;
  lib->native = native;
  lib->name = name;
  lib->init = adaptInit;
  lib->getProperties = ops->getProperties;
  lib->makeVDevice = ops->makeVDevice;
}
