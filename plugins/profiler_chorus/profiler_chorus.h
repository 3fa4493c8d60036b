/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_chorus.h: the reference profiler's per-communicator context and records (profiler.c),
 * its Chrome-trace writer (trace.c) and its summary (summary.c). Internal to
 * libnccl-profiler-chorus.so; nothing here is exported.
 */
#ifndef CHORUS_PROFILER_CHORUS_H_
#define CHORUS_PROFILER_CHORUS_H_

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "plugin/profiler_v6.h"

#define PC_PLUGIN_NAME "Chorus"
/* Default events: the API, group and operation levels, proxy ops and device channels. ProxyStep
 * (one per transfer) and NetPlugin are left to CHORUS_PROFILER_MASK: they are many. */
#define PC_DEFAULT_MASK                                                                                    \
  (ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileGroup | ncclProfileColl |    \
   ncclProfileP2p | ncclProfileProxyOp | ncclProfileKernelCh)
#define PC_POOL 4096        /* Coll/P2p records kept per communicator (see profiler.c) */
#define PC_MAX_TRACKS 1024  /* named tracks per communicator */
#define PC_SUMMARY_ROWS 256 /* (function, size bucket) rows per communicator */

/* A Coll or P2p event: lives in the context's pool until finalize or until the pool wraps, because
 * its children (ProxyOp, KernelCh) start after it stopped (stop = "enqueued"). */
struct pcOp {
  int kind;             /* PC_KIND_OP */
  struct pcCtx* ctx;
  int func;             /* index into pcFuncNames, -1 unknown */
  int isP2p, peer;
  uint64_t seq;
  size_t count, typeSize;
  uint64_t startNs, endNs; /* end: the last stop of the op or a child */
  int emitted;
  uint64_t id;          /* async id in the trace */
};

struct pcRow {
  int func;
  uint64_t bucket;      /* size bucket: bytes rounded up to a power of two */
  uint64_t count;
  double bytes;         /* sum of nccl-tests' S */
  double seconds;
};

struct pcCtx {
  pthread_mutex_t lock;
  uint64_t commId;
  char commName[128];
  int nNodes, nRanks, rank; /* nRanks 0: not told (ABI v1..v3) */
  int* mask;
  ncclDebugLogger_t log;
  char dir[1024];
  /* trace */
  FILE* trace;
  int traceFailed, firstEvent;
  char tracePath[1200];
  int tracks[PC_MAX_TRACKS], nTracks;
  /* Coll/P2p records */
  struct pcOp pool[PC_POOL];
  uint64_t nOps;
  /* summary */
  struct pcRow rows[PC_SUMMARY_ROWS];
  int nRows;
};

extern const char* const pcFuncNames[];
int pcFuncByName(const char* name);
size_t pcTypeSizeByName(const char* name);
uint64_t pcNowNs(void);

/* trace.c (caller holds ctx->lock) */
void pcTraceOpen(struct pcCtx* ctx);
void pcTraceComplete(struct pcCtx* ctx, int tid, const char* trackName, const char* name, const char* cat,
                     uint64_t startNs, uint64_t endNs, const char* argsJson);
void pcTraceAsync(struct pcCtx* ctx, uint64_t id, const char* name, const char* cat, uint64_t startNs, uint64_t endNs,
                  const char* argsJson);
void pcTraceClose(struct pcCtx* ctx);

/* summary.c (caller holds ctx->lock) */
void pcSummaryAdd(struct pcCtx* ctx, const struct pcOp* op);
void pcSummaryWrite(struct pcCtx* ctx);
double pcBusFactor(int func, int nRanks);

/* profiler.c: the v6 implementation; versions.c wraps it for v1..v5. */
ncclResult_t pcInit(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                    int nranks, int rank, ncclDebugLogger_t logfn);
ncclResult_t pcStartEvent(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
ncclResult_t pcStopEvent(void* eHandle);
ncclResult_t pcRecordEventState(void* eHandle, ncclProfilerEventState_v6_t eState,
                                ncclProfilerEventStateArgs_v6_t* eStateArgs);
ncclResult_t pcFinalize(void* context);

#endif /* CHORUS_PROFILER_CHORUS_H_ */
