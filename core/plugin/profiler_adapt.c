/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_adapt.c: what the profiler adapters share. v1..v3 have one init (context, mask) and
 * finalize: the forwarders here wrap the plugin's context in a struct chrProfAdaptCtx that also
 * keeps the communicator's name and hash, which those versions' Coll/P2p descriptors carry. Also the
 * state translation of v1..v3 and the names the descriptors use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/profiler_adapter.h"

ncclResult_t chrProfMissingSlot(struct chrProfLib* lib, const char* slotName) {
  snprintf(lib->rec.failReason, sizeof(lib->rec.failReason), "its ncclProfiler_v%d table has a NULL %s slot", lib->rec.version,
           slotName);
  return ncclInvalidUsage;
}

static ncclResult_t adaptInit(struct chrProfLib* lib, void** ctx, uint64_t commId, int* mask, const char* commName,
                              int nNodes, int nRanks, int rank, ncclDebugLogger_t logfn) {
  (void)nNodes;
  (void)nRanks;
  (void)rank;
  (void)logfn; /* v1..v3 are told none of these */
  *ctx = NULL;
  struct chrProfAdaptCtx* c = calloc(1, sizeof(*c));
  if (c == NULL) return chrFail(ncclSystemError, "profiler adapter: out of memory for a communicator context");
  c->commHash = commId;
  if (commName != NULL) {
    snprintf(c->commName, sizeof(c->commName), "%s", commName);
    c->hasName = 1;
  }
  ncclResult_t res = lib->oldInit(&c->ctx, mask);
  if (res != ncclSuccess) {
    free(c);
    return res; /* the plugin's own failure: the loader reports it */
  }
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t adaptFinalize(struct chrProfLib* lib, void* ctx) {
  struct chrProfAdaptCtx* c = ctx;
  if (c == NULL) return ncclSuccess;
  ncclResult_t res = lib->oldFinalize(c->ctx);
  free(c);
  return res;
}

void chrProfAdaptBindOld(struct chrProfLib* lib, ncclResult_t (*oldInit)(void**, int*),
                         ncclResult_t (*oldFinalize)(void*)) {
  lib->oldInit = oldInit;
  lib->oldFinalize = oldFinalize;
  lib->init = adaptInit;
  lib->finalize = adaptFinalize;
}

int chrProfAdaptOldState(ncclProfilerEventState_t state, const ncclProfilerEventStateArgs_v6_t* in,
                         ncclProfilerEventStateArgs_v3_t* out) {
  if ((int)state > (int)ncclProfilerProxyCtrlAppendEnd) return 0; /* v4 and later states */
  memset(out, 0, sizeof(*out));
  if (in == NULL) return 1;
  if (state >= ncclProfilerProxyCtrlIdle) out->proxyCtrl.appendedProxyOps = in->proxyCtrl.appendedProxyOps;
  else out->proxyOp.transSize = in->proxyStep.transSize;
  return 1;
}

const char* chrProfFuncName(int func) {
  static const char* const names[ncclNumFuncs] = {
      "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "Send", "Recv",
      "AlltoAll", "Scatter", "Gather", "AllGatherV", "PutSignal", "Signal", "WaitSignal"};
  return func >= 0 && func < ncclNumFuncs ? names[func] : "Unknown";
}

const char* chrProfTypeName(int datatype) {
  static const char* const names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",
                                      "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return datatype >= 0 && datatype < (int)(sizeof(names) / sizeof(names[0])) ? names[datatype] : "Unknown";
}
