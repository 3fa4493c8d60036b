/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: the exported tables ncclProfiler_v6 .. ncclProfiler_v1, so Chorus and NVIDIA's NCCL
 * from 2.23 on load this library (each takes the newest version it knows). Everything is
 * implemented once, for v6 (profiler.c); the older versions' descriptors are translated here.
 * v1..v3 init is told neither the communicator nor the rank: the rank comes with the events, and
 * the files are named after a number unique in the process instead of the communicator's id.
 */
#include <string.h>
#include <unistd.h>

#include "plugin/profiler.h"
#include "profiler_chorus.h"

#define PC_EXPORT __attribute__((visibility("default")))

/* ---- v5: v6's layout without the copy-engine events ---------------------------------------------- */

static ncclResult_t startV5(void* c, void** h, ncclProfilerEventDescr_v5_t* d) {
  return pcStartEvent(c, h, (ncclProfilerEventDescr_v6_t*)d);
}
static ncclResult_t recordV5(void* h, ncclProfilerEventState_v5_t s, ncclProfilerEventStateArgs_v5_t* a) {
  return pcRecordEventState(h, s, (ncclProfilerEventStateArgs_v6_t*)a);
}

/* ---- v4 ------------------------------------------------------------------------------------------ */

static ncclResult_t initV4(void** c, int* mask, const char* commName, uint64_t commHash, int nNodes, int nranks, int rank,
                           ncclDebugLogger_t logfn) {
  return pcInit(c, commHash, mask, commName, nNodes, nranks, rank, logfn);
}

static ncclResult_t startV4(void* c, void** h, ncclProfilerEventDescr_v4_t* in) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = in->type;
  d.parentObj = in->parentObj;
  d.rank = in->rank;
  switch (in->type) {
    case ncclProfileColl:
      d.coll.seqNumber = in->coll.seqNumber, d.coll.func = in->coll.func, d.coll.sendBuff = in->coll.sendBuff;
      d.coll.recvBuff = in->coll.recvBuff, d.coll.count = in->coll.count, d.coll.root = in->coll.root;
      d.coll.datatype = in->coll.datatype, d.coll.nChannels = in->coll.nChannels, d.coll.algo = in->coll.algo;
      d.coll.proto = in->coll.proto, d.coll.parentGroup = in->parentObj;
      break;
    case ncclProfileP2p:
      d.p2p.func = in->p2p.func, d.p2p.buff = in->p2p.buff, d.p2p.datatype = in->p2p.datatype;
      d.p2p.count = in->p2p.count, d.p2p.peer = in->p2p.peer, d.p2p.parentGroup = in->parentObj;
      break;
    default: memcpy(&d.proxyOp, &in->proxyOp, sizeof(in->coll)); /* the other members have v6's offsets */
  }
  return pcStartEvent(c, h, &d);
}
static ncclResult_t recordV4(void* h, ncclProfilerEventState_v4_t s, ncclProfilerEventStateArgs_v4_t* a) {
  return pcRecordEventState(h, s, (ncclProfilerEventStateArgs_v6_t*)a);
}

/* ---- v1..v3 -------------------------------------------------------------------------------------- */

static ncclResult_t initOld(void** c, int* mask) {
  static uint64_t counter;
  uint64_t id = ((uint64_t)getpid() << 16) | (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) & 0xffff);
  return pcInit(c, id, mask, NULL, 1, 0, -1, NULL);
}

static ncclResult_t recordOld(void* h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v3_t* a) {
  ncclProfilerEventStateArgs_v6_t args;
  memset(&args, 0, sizeof(args));
  if (a != NULL) args.proxyStep.transSize = a->proxyOp.transSize;
  return pcRecordEventState(h, s, &args);
}

/* The members v1..v3 share: proxyOp and proxyStep have v6's layout. */
#define COPY_PROXY(d, in)                                                                                     \
  do {                                                                                                        \
    if ((in)->type == ncclProfileProxyOp) {                                                                   \
      (d).proxyOp.pid = (in)->proxyOp.pid, (d).proxyOp.channelId = (in)->proxyOp.channelId;                   \
      (d).proxyOp.peer = (in)->proxyOp.peer, (d).proxyOp.nSteps = (in)->proxyOp.nSteps;                       \
      (d).proxyOp.chunkSize = (in)->proxyOp.chunkSize, (d).proxyOp.isSend = (in)->proxyOp.isSend;             \
    } else if ((in)->type == ncclProfileProxyStep) {                                                          \
      (d).proxyStep.step = (in)->proxyStep.step;                                                              \
    }                                                                                                         \
  } while (0)

static ncclResult_t startV3(void* c, void** h, ncclProfilerEventDescr_v3_t* in) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = in->type, d.parentObj = in->parentObj, d.rank = in->rank;
  if (in->type == ncclProfileColl) {
    d.coll.seqNumber = in->coll.seqNumber, d.coll.func = in->coll.func, d.coll.count = in->coll.count;
    d.coll.root = in->coll.root, d.coll.datatype = in->coll.datatype;
  } else if (in->type == ncclProfileP2p) {
    d.p2p.func = in->p2p.func, d.p2p.datatype = in->p2p.datatype, d.p2p.count = in->p2p.count, d.p2p.peer = in->p2p.peer;
  } else if (in->type == ncclProfileKernelCh) {
    d.kernelCh.channelId = in->kernelCh.channelId;
  } else {
    COPY_PROXY(d, in);
  }
  return pcStartEvent(c, h, &d);
}
static ncclResult_t recordV3(void* h, ncclProfilerEventState_v3_t s, ncclProfilerEventStateArgs_v3_t* a) {
  return recordOld(h, s, a);
}

static ncclResult_t startV2(void* c, void** h, ncclProfilerEventDescr_v2_t* in) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = in->type, d.parentObj = in->parentObj, d.rank = in->rank;
  if (in->type == ncclProfileColl) {
    d.coll.seqNumber = in->coll.seqNumber, d.coll.func = in->coll.func, d.coll.count = in->coll.count;
    d.coll.root = in->coll.root, d.coll.datatype = in->coll.datatype;
  } else if (in->type == ncclProfileP2p) {
    d.p2p.func = in->p2p.func, d.p2p.datatype = in->p2p.datatype, d.p2p.count = in->p2p.count, d.p2p.peer = in->p2p.peer;
  } else {
    COPY_PROXY(d, in);
  }
  return pcStartEvent(c, h, &d);
}
static ncclResult_t recordV2(void* h, ncclProfilerEventState_v2_t s, ncclProfilerEventStateArgs_v2_t* a) {
  return recordOld(h, s, (ncclProfilerEventStateArgs_v3_t*)a);
}

static const char* typeNameOf(int t) {
  static const char* const names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",
                                      "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t >= 0 && t < 12 ? names[t] : "Unknown";
}
static const char* funcNameOf(int f) { return f >= 0 && f <= 11 ? pcFuncNames[f] : "Unknown"; }

static ncclResult_t startV1(void* c, void** h, ncclProfilerEventDescr_v1_t* in) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = in->type, d.parentObj = in->parentObj, d.rank = in->rank;
  if (in->type == ncclProfileColl) {
    d.coll.seqNumber = in->coll.seqNumber, d.coll.func = funcNameOf(in->coll.func), d.coll.count = in->coll.count;
    d.coll.root = in->coll.root, d.coll.datatype = typeNameOf(in->coll.datatype);
  } else if (in->type == ncclProfileP2p) {
    d.p2p.func = funcNameOf(in->p2p.func), d.p2p.datatype = typeNameOf(in->p2p.datatype);
    d.p2p.count = in->p2p.count, d.p2p.peer = in->p2p.peer;
  } else {
    COPY_PROXY(d, in);
  }
  return pcStartEvent(c, h, &d);
}
static ncclResult_t recordV1(void* h, ncclProfilerEventState_v1_t s, ncclProfilerEventStateArgs_v1_t* a) {
  return recordOld(h, s, (ncclProfilerEventStateArgs_v3_t*)a);
}

/* ---- the tables ---------------------------------------------------------------------------------- */

PC_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {PC_PLUGIN_NAME, pcInit, pcStartEvent, pcStopEvent,
                                                     pcRecordEventState, pcFinalize};
PC_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {PC_PLUGIN_NAME, pcInit, startV5, pcStopEvent, recordV5, pcFinalize};
PC_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {PC_PLUGIN_NAME, initV4, startV4, pcStopEvent, recordV4, pcFinalize};
PC_EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {PC_PLUGIN_NAME, initOld, startV3, pcStopEvent, recordV3, pcFinalize};
PC_EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {PC_PLUGIN_NAME, initOld, startV2, pcStopEvent, recordV2, pcFinalize};
PC_EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {PC_PLUGIN_NAME, initOld, startV1, pcStopEvent, recordV1, pcFinalize};
