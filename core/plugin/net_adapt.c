/*
 * net_adapt.c: pieces shared by the v8..v10 net adapters: the once-per-process init with a user
 * count, the dummy per-comm ctx, comm wrapping, and the "already reported" mark.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"

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

ncclResult_t chrNetAdaptInitOnce(struct chrNetLib* lib, void** ctx, ncclNetCommConfig_v12_t* config,
                                 ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction,
                                 ncclResult_t (*callOld)(struct chrNetLib* lib, ncclDebugLogger_t logFunction,
                                                         ncclProfilerCallback_t profFunction)) {
  *ctx = NULL;
  pthread_mutex_lock(&lib->initLock);
  if (!lib->initDone) {
    lib->initResult = callOld(lib, logFunction, profFunction);
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
ncclResult_t chrNetAdaptFinalize(void* ctx) {
  struct chrNetAdaptCtx* c = ctx;
  if (c == NULL) return ncclSuccess;
  pthread_mutex_lock(&c->lib->initLock);
  if (c->lib->initRefs > 0) c->lib->initRefs--;
  pthread_mutex_unlock(&c->lib->initLock);
  free(c);
  return ncclSuccess;
}

ncclResult_t chrNetAdaptWrap(struct chrNetLib* lib, void* comm, void** wrapped) {
  *wrapped = NULL;
  if (comm == NULL) return ncclSuccess;
  struct chrNetAdaptComm* w = malloc(sizeof(*w));
  if (w == NULL)
    return chrNetAdaptFail(ncclSystemError, "net adapter: out of memory wrapping a comm of plugin %s", lib->name);
  w->lib = lib;
  w->comm = comm;
  *wrapped = w;
  return ncclSuccess;
}

ncclResult_t chrNetMissingSlot(struct chrNetLib* lib, const char* slotName) {
  snprintf(lib->failReason, sizeof(lib->failReason), "its ncclNetPlugin_v%d table has a NULL %s slot", lib->version,
           slotName);
  return ncclInvalidUsage;
}
