/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_v4.c: presents a v4 profiler plugin as v6.
 *
 * What changes from v6: init takes (context, mask, commName, commHash, nNodes, nranks, rank,
 * logger); the descriptor's type is 8 bits (the other offsets are v6's) and it is 104 bytes; there
 * are no API-level events (their bits are not supported, so they never start); a Coll or P2p event's
 * parentObj is the Group event, which v6 carries as coll.parentGroup / p2p.parentGroup. The state
 * args are v6's.
 */
#include <string.h>

#include "plugin/profiler_adapter.h"

#define OLD(lib) ((const ncclProfiler_v4_t*)(lib)->native)

static ncclResult_t initV4(struct chrProfLib* lib, void** ctx, uint64_t commId, int* mask, const char* commName,
                           int nNodes, int nRanks, int rank, ncclDebugLogger_t logfn) {
  return OLD(lib)->init(ctx, mask, commName, commId, nNodes, nRanks, rank, logfn);
}

static ncclResult_t startV4(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  const ncclProfilerEventDescr_v6_t* in = &d->d;
  ncclProfilerEventDescr_v4_t out;
  memset(&out, 0, sizeof(out));
  out.type = (uint8_t)in->type;
  out.parentObj = in->parentObj;
  out.rank = in->rank;
  switch (in->type) {
    case ncclProfileColl:
      out.parentObj = in->coll.parentGroup;
      out.coll.seqNumber = in->coll.seqNumber;
      out.coll.func = in->coll.func;
      out.coll.sendBuff = in->coll.sendBuff;
      out.coll.recvBuff = in->coll.recvBuff;
      out.coll.count = in->coll.count;
      out.coll.root = in->coll.root;
      out.coll.datatype = in->coll.datatype;
      out.coll.nChannels = in->coll.nChannels;
      out.coll.nWarps = in->coll.nWarps;
      out.coll.algo = in->coll.algo;
      out.coll.proto = in->coll.proto;
      break;
    case ncclProfileP2p:
      out.parentObj = in->p2p.parentGroup;
      out.p2p.func = in->p2p.func;
      out.p2p.buff = in->p2p.buff;
      out.p2p.datatype = in->p2p.datatype;
      out.p2p.count = in->p2p.count;
      out.p2p.peer = in->p2p.peer;
      out.p2p.nChannels = in->p2p.nChannels;
      break;
    case ncclProfileProxyOp:
      out.proxyOp.pid = in->proxyOp.pid;
      out.proxyOp.channelId = in->proxyOp.channelId;
      out.proxyOp.peer = in->proxyOp.peer;
      out.proxyOp.nSteps = in->proxyOp.nSteps;
      out.proxyOp.chunkSize = in->proxyOp.chunkSize;
      out.proxyOp.isSend = in->proxyOp.isSend;
      break;
    case ncclProfileProxyStep: out.proxyStep.step = in->proxyStep.step; break;
    case ncclProfileKernelCh:
      out.kernelCh.channelId = in->kernelCh.channelId;
      out.kernelCh.pTimer = in->kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      out.netPlugin.id = in->netPlugin.id;
      out.netPlugin.data = in->netPlugin.data;
      break;
    case ncclProfileGroup:
    case ncclProfileProxyCtrl: break;
    default: *handle = NULL; return ncclSuccess; /* not a v4 event */
  }
  return OLD(lib)->startEvent(ctx, handle, &out);
}

static ncclResult_t stopV4(struct chrProfLib* lib, void* handle) { return OLD(lib)->stopEvent(handle); }

static ncclResult_t recordV4(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  if ((int)state > (int)ncclProfilerKernelChStop) return ncclSuccess; /* v5 and later states */
  return OLD(lib)->recordEventState(handle, state, (ncclProfilerEventStateArgs_v4_t*)args);
}

static ncclResult_t finalizeV4(struct chrProfLib* lib, void* ctx) { return OLD(lib)->finalize(ctx); }

ncclResult_t chrProfAdaptV4(struct chrProfLib* lib, const ncclProfiler_v4_t* t) {
  lib->rec.version = 4;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x00ff; /* Group .. NetPlugin */
  lib->init = initV4;
  lib->startEvent = startV4;
  lib->stopEvent = stopV4;
  lib->recordEventState = recordV4;
  lib->finalize = finalizeV4;
  return ncclSuccess;
}
