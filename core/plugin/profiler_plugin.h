/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_plugin.h: the core's only door to profiler plugins.
 *
 * A profiler library is loaded once per process (NCCL_PROFILER_PLUGIN: a name, a path, or "none";
 * unset: libnccl-profiler.so, and when that gives no profiler, the net plugin library the
 * communicator uses) and stays loaded; each communicator that uses it gets its own context from the
 * plugin's init and finalizes it at destroy. Whatever ABI version the library exports (v1 .. v6),
 * the core sees the v6 interface: older plugins are wrapped by the adapters in profiler_v1.c ..
 * profiler_v5.c, which translate each descriptor to their version's layout and drop the events and
 * states their version does not know.
 *
 * The activation mask: every plugin init gets &chrProfMask, one process-wide int, and writes the
 * event bits it wants there; the event points (core/profile/profile.h) re-read it with a relaxed
 * atomic load, so a process without a profiler pays one test of a zero int per event point.
 *
 * Threading: chrProfilerOpen/Close are thread-safe; the event calls may come from any thread (the
 * plugin must be thread-safe, as the ABI says). Errors the plugin returns from event calls are
 * ignored (traced), as in NCCL.
 */
#ifndef CHORUS_PROFILER_PLUGIN_H_
#define CHORUS_PROFILER_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "plugin/profiler.h"

struct chrNet;
struct chrProfLib; /* one loaded profiler library (private to core/plugin) */

/* The process-wide activation mask the plugins write (0 while no profiler is loaded). */
extern int chrProfMask;

/* Every event type Chorus can send (the copy-engine events never happen: Chorus has none). */
#define CHR_PROF_ALL_EVENTS 0x0fff

/* A profiler plugin initialised for one communicator. */
struct chrProfiler {
  struct chrProfLib* lib;
  void* ctx;            /* what init returned (an adapter's wrapper for v1..v3) */
  int version;          /* ABI version the library exports: 1 .. 6 */
  int supported;        /* event bits this version knows; the others are never started */
  const char* name;
  uint64_t commHash;
  int rank;
  uint64_t seq[ncclNumFuncs]; /* seqNumber of the next Coll/P2p event, per function */
};

/* The descriptor the core builds: the v6 one first (so a pointer to it is a pointer to the v6
 * descriptor), then the numbers that v1/v2 need and v6 does not carry. Every startEvent the core
 * makes goes through one of these. */
struct chrProfDescr {
  ncclProfilerEventDescr_v6_t d;
  int func;            /* ncclFunc_t (Coll, P2p) */
  int datatype;        /* ncclDataType_t */
  int op;              /* ncclRedOp_t (Coll) */
  int algo, proto;     /* NCCL_ALGO_* / NCCL_PROTO_* numbers (Coll) */
  size_t trafficBytes; /* bytes the collective moves on this rank (Coll) */
};

/* What a communicator tells the profiler's init. */
struct chrProfCommInfo {
  uint64_t commHash;
  const char* commName; /* may be NULL */
  int nNodes, nRanks, rank;
  const struct chrNet* net; /* the communicator's net plugin or NULL: searched when nothing else gives one */
};

/* Find and initialise the profiler for a communicator. *out = NULL (and ncclSuccess) when there is
 * none to use: NCCL_PROFILER_PLUGIN=none, nothing found (INFO), or one that was asked for and cannot
 * be used (one WARN with the file and the exact reason: dlerror text, no ncclProfiler_v6..v1 symbol, a
 * NULL slot, init failing). With CHORUS_PLUGIN_STRICT=1 those failures are errors of this call
 * (ncclInvalidUsage). Free with chrProfilerClose. */
ncclResult_t chrProfilerOpen(const struct chrProfCommInfo* info, struct chrProfiler** out);

/* Finalize the communicator's context and free prof. NULL is accepted. The library stays loaded. */
ncclResult_t chrProfilerClose(struct chrProfiler* prof);

/* The event calls (profiler_calls.c). Start fills d->d.type/parentObj/rank from its arguments and
 * sets *handle (NULL when the plugin drops the event). Stop and record accept a NULL handle. */
void chrProfilerStart(struct chrProfiler* prof, uint64_t type, void* parent, struct chrProfDescr* d, void** handle);
void chrProfilerStop(struct chrProfiler* prof, void* handle);
void chrProfilerRecord(struct chrProfiler* prof, void* handle, ncclProfilerEventState_t state,
                       ncclProfilerEventStateArgs_v6_t* args);

/* What the core hands a net plugin as the phandle of one isend/irecv: the ProxyStep event the
 * transfer belongs to (handle may be NULL: the plugin dropped it or ProxyStep is off). */
struct chrProfNetParent {
  struct chrProfiler* prof;
  void* handle;
};

/* The callback every net plugin gets at init (net.c): a net plugin's own events become NetPlugin
 * events whose parent is the ProxyStep that pHandle (the phandle of isend/irecv) names. */
ncclResult_t chrProfilerNetCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

/* The names descriptors carry (profiler_adapt.c): "AllReduce", "Send", ... and "ncclFloat32", ...
 * ("Unknown" out of range). Static strings. */
const char* chrProfFuncName(int func);
const char* chrProfTypeName(int datatype);

/* For chorus-info: NCCL_PROFILER_PLUGIN, the library found or why none is usable (calls no init). */
void chrProfilerDescribe(FILE* out);

#endif /* CHORUS_PROFILER_PLUGIN_H_ */
