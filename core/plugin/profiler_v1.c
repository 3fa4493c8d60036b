/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_v1.c: presents a v1 profiler plugin as v6.
 *
 * As v2 (profiler_v2.c), but func, datatype, algo and proto are numbers (ncclFunc_t, ncclDataType_t,
 * NCCL_ALGO_*, NCCL_PROTO_*), which the core keeps beside the v6 descriptor (struct chrProfDescr),
 * coll carries the reduction op, and isCollnet/isNvls are 0 (Chorus has neither).
 */
#include <string.h>

#include "plugin/profiler_adapter.h"

#define OLD(lib) ((const ncclProfiler_v1_t*)(lib)->native)
#define CTX(c) ((struct chrProfAdaptCtx*)(c))

static ncclResult_t startV1(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  const ncclProfilerEventDescr_v6_t* in = &d->d;
  const char* name = CTX(ctx)->hasName ? CTX(ctx)->commName : NULL;
  ncclProfilerEventDescr_v1_t out;
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
      out.coll.func = (uint8_t)d->func;
      out.coll.sendBuff = in->coll.sendBuff;
      out.coll.recvBuff = in->coll.recvBuff;
      out.coll.count = in->coll.count;
      out.coll.root = in->coll.root;
      out.coll.datatype = (uint8_t)d->datatype;
      out.coll.op = (uint32_t)d->op;
      out.coll.trafficBytes = d->trafficBytes;
      out.coll.nMaxChannels = in->coll.nChannels;
      out.coll.nWarps = in->coll.nWarps;
      out.coll.algo = (uint8_t)d->algo;
      out.coll.proto = (uint8_t)d->proto;
      out.coll.isCollnet = 0;
      out.coll.isNvls = 0;
      break;
    case ncclProfileP2p:
      out.parentObj = in->p2p.parentGroup;
      out.p2p.name = name;
      out.p2p.commHash = CTX(ctx)->commHash;
      out.p2p.func = (uint8_t)d->func;
      out.p2p.buff = in->p2p.buff;
      out.p2p.datatype = (uint8_t)d->datatype;
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
    default: *handle = NULL; return ncclSuccess; /* not a v1 event */
  }
  return OLD(lib)->startEvent(CTX(ctx)->ctx, handle, &out);
}

static ncclResult_t stopV1(struct chrProfLib* lib, void* handle) { return OLD(lib)->stopEvent(handle); }

static ncclResult_t recordV1(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  ncclProfilerEventStateArgs_v3_t old; /* v1's args have v3's layout */
  if (!chrProfAdaptOldState(state, args, &old)) return ncclSuccess;
  return OLD(lib)->recordEventState(handle, state, (ncclProfilerEventStateArgs_v1_t*)&old);
}

ncclResult_t chrProfAdaptV1(struct chrProfLib* lib, const ncclProfiler_v1_t* t) {
  lib->rec.version = 1;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x003f; /* Group .. ProxyCtrl */
  chrProfAdaptBindOld(lib, t->init, t->finalize);
  lib->startEvent = startV1;
  lib->stopEvent = stopV1;
  lib->recordEventState = recordV1;
  return ncclSuccess;
}
