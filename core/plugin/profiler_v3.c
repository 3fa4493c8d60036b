/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_v3.c: presents a v3 profiler plugin as v6.
 *
 * What changes from v4: init(context, mask) only, so the adapter context (profiler_adapt.c) keeps
 * the communicator's name and hash for the Coll and P2p descriptors, which carry them in v3;
 * coll.nChannels is nMaxChannels; kernelCh has no pTimer; the state args are 16 bytes and the states
 * after ProxyCtrlAppendEnd (ProxyOpInProgress_v4, SendPeerWait_v4, NetPluginUpdate, KernelChStop)
 * are dropped. Coll/P2p's parentObj is the Group event.
 */
#include <string.h>

#include "plugin/profiler_adapter.h"

#define OLD(lib) ((const ncclProfiler_v3_t*)(lib)->native)
#define CTX(c) ((struct chrProfAdaptCtx*)(c))

static ncclResult_t startV3(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  const ncclProfilerEventDescr_v6_t* in = &d->d;
  const char* name = CTX(ctx)->hasName ? CTX(ctx)->commName : NULL;
  ncclProfilerEventDescr_v3_t out;
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
    case ncclProfileKernelCh: out.kernelCh.channelId = in->kernelCh.channelId; break;
    case ncclProfileNetPlugin:
      out.netPlugin.id = in->netPlugin.id;
      out.netPlugin.data = in->netPlugin.data;
      break;
    case ncclProfileGroup:
    case ncclProfileProxyCtrl: break;
    default: *handle = NULL; return ncclSuccess; /* not a v3 event */
  }
  return OLD(lib)->startEvent(CTX(ctx)->ctx, handle, &out);
}

static ncclResult_t stopV3(struct chrProfLib* lib, void* handle) { return OLD(lib)->stopEvent(handle); }

static ncclResult_t recordV3(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  ncclProfilerEventStateArgs_v3_t old;
  if (!chrProfAdaptOldState(state, args, &old)) return ncclSuccess;
  return OLD(lib)->recordEventState(handle, state, &old);
}

ncclResult_t chrProfAdaptV3(struct chrProfLib* lib, const ncclProfiler_v3_t* t) {
  lib->rec.version = 3;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x00ff; /* Group .. NetPlugin */
  chrProfAdaptBindOld(lib, t->init, t->finalize);
  lib->startEvent = startV3;
  lib->stopEvent = stopV3;
  lib->recordEventState = recordV3;
  return ncclSuccess;
}
