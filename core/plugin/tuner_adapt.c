/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_adapt.c: what the v2..v4 tuner adapters share. Their init and destroy have one signature
 * (no commId, domain info or constants; the context is the last argument of init), so one pair of
 * forwarders serves all three: init wraps the plugin's context in a struct chrTunerAdaptCtx that
 * remembers the library, and finalize calls the old destroy and frees the wrapper. Each tuner_vN.c
 * supplies only its getCollInfo.
 */
#include <stdio.h>
#include <stdlib.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/tuner_adapter.h"

static __thread int adapterReported;

void chrTunerAdaptMarkReported(void) { adapterReported = 1; }

int chrTunerAdaptTakeReported(void) {
  int was = adapterReported;
  adapterReported = 0;
  return was;
}

ncclResult_t chrTunerMissingSlot(struct chrTunerLib* lib, const char* slotName) {
  snprintf(lib->rec.failReason, sizeof(lib->rec.failReason), "its ncclTunerPlugin_v%d table has a NULL %s slot", lib->rec.version,
           slotName);
  return ncclInvalidUsage;
}

/* The old init knows nothing of commId, the domains or the constants: they are dropped (the
 * constants stay the core's own). */
static ncclResult_t adaptInit(struct chrTunerLib* lib, void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                              ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                              ncclTunerConstants_v6_t* constants) {
  (void)commId;
  (void)nvlDomainInfo;
  (void)constants;
  *ctx = NULL;
  struct chrTunerAdaptCtx* c = calloc(1, sizeof(*c));
  if (c == NULL) return chrFail(ncclSystemError, "tuner adapter: out of memory for a communicator context");
  c->lib = lib;
  ncclResult_t res = lib->oldInit(nRanks, nNodes, logFunction, &c->ctx);
  if (res != ncclSuccess) {
    free(c);
    return res; /* the plugin's own failure: the loader reports it */
  }
  *ctx = c;
  return ncclSuccess;
}

/* The wrapper is freed whatever destroy answers: the core never uses the context again. */
static ncclResult_t adaptFinalize(void* ctx) {
  struct chrTunerAdaptCtx* c = ctx;
  if (c == NULL) return ncclSuccess;
  ncclResult_t res = c->lib->oldDestroy(c->ctx);
  free(c);
  return res;
}

void chrTunerAdaptBindOld(struct chrTunerLib* lib, const void* native, const char* name,
                          ncclResult_t (*oldInit)(size_t, size_t, ncclDebugLogger_t, void**),
                          ncclResult_t (*oldDestroy)(void*)) {
  lib->native = native;
  lib->rec.name = name;
  lib->oldInit = oldInit;
  lib->oldDestroy = oldDestroy;
  lib->init = adaptInit;
  lib->table.name = name;
  lib->table.init = NULL; /* needs the library: lib->init */
  lib->table.finalize = adaptFinalize;
  lib->table.getChunkSize = NULL; /* only v6 has it */
}
