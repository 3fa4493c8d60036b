/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_v2.c: presents a v2 profiler plugin as v6.
 *
 * As v3 (profiler_v3.c), with coll.trafficBytes (the bytes the collective moves on this rank, which
 * the core computes into the descriptor's extras) and without KernelCh and NetPlugin events (their
 * bits are not supported, so they never start).
 */
#include <string.h>

#include "plugin/profiler_adapter.h"

#define OLD(lib) ((const ncclProfiler_v2_t*)(lib)->native)
#define CTX(c) ((struct chrProfAdaptCtx*)(c))

static ncclResult_t startV2(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  const ncclProfilerEventDescr_v6_t* in = &d->d;
  const char* name = CTX(ctx)->hasName ? CTX(ctx)->commName : NULL;
  ncclProfilerEventDescr_v2_t out;
  memset(&out, 0, sizeof(out));
  out.type = (uint8_t)in->type;
  out.parentObj = in->parentObj;
  out.rank = in->rank;
  switch (in->type) {
    case ncclProfileColl:
      out.parentObj = in->coll.parentGroup;
      out.coll.name = name;
      out.coll.commHash = CTX(ctx)->commHash;
      out.coll.seqNumber = in->coll.seqNumber;
      out.coll.func = in->coll.func;
      out.coll.sendBuff = in->coll.sendBuff;
      out.coll.recvBuff = in->coll.recvBuff;
      out.coll.count = in->coll.count;
      out.coll.root = in->coll.root;
      out.coll.datatype = in->coll.datatype;
      out.coll.trafficBytes = d->trafficBytes;
      out.coll.nMaxChannels = in->coll.nChannels;
      out.coll.nWarps = in->coll.nWarps;
      out.coll.algo = in->coll.algo;
      out.coll.proto = in->coll.proto;
      break;
    case ncclProfileP2p:
      out.parentObj = in->p2p.parentGroup;
      out.p2p.name = name;
      out.p2p.commHash = CTX(ctx)->commHash;
      out.p2p.func = in->p2p.func;
      out.p2p.buff = in->p2p.buff;
      out.p2p.datatype = in->p2p.datatype;
      out.p2p.count = in->p2p.count;
      out.p2p.peer = in->p2p.peer;
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
    case ncclProfileGroup:
    case ncclProfileProxyCtrl: break;
    default: *handle = NULL; return ncclSuccess; /* not a v2 event */
  }
  return OLD(lib)->startEvent(CTX(ctx)->ctx, handle, &out);
}

static ncclResult_t stopV2(struct chrProfLib* lib, void* handle) { return OLD(lib)->stopEvent(handle); }

static ncclResult_t recordV2(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  ncclProfilerEventStateArgs_v3_t old; /* v2's args have v3's layout */
  if (!chrProfAdaptOldState(state, args, &old)) return ncclSuccess;
  return OLD(lib)->recordEventState(handle, state, (ncclProfilerEventStateArgs_v2_t*)&old);
}

ncclResult_t chrProfAdaptV2(struct chrProfLib* lib, const ncclProfiler_v2_t* t) {
  lib->rec.version = 2;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x003f; /* Group .. ProxyCtrl */
  chrProfAdaptBindOld(lib, t->init, t->finalize);
  lib->startEvent = startV2;
  lib->stopEvent = stopV2;
  lib->recordEventState = recordV2;
  return ncclSuccess;
}
