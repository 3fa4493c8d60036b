/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_adapter.h: private to core/plugin. One loaded profiler library, and the adapters that
 * make an older ABI version look like v6.
 *
 * stopEvent and recordEventState have no context argument, so every v6 slot is reached through the
 * library (lib->startEvent(lib, ...) etc.): an adapter finds its plugin's own table there. Nothing
 * lives in file statics, so two libraries of one version share nothing.
 *
 *   v6  bound directly (profiler.c)
 *   v5  the same slots and layout; copy-engine events never reach it (profiler_v5.c)
 *   v4  8-bit type, no API events, Coll/P2p parent = Group, old init (profiler_v4.c)
 *   v3  init (ctx, mask) only: an adapter context keeps commName/commHash for the Coll/P2p
 *       descriptors; 16-byte state args; states after ProxyCtrlAppendEnd dropped (profiler_v3.c)
 *   v2  as v3 with trafficBytes, no KernelCh/NetPlugin (profiler_v2.c)
 *   v1  as v2 with numbers instead of strings, op, isCollnet/isNvls (profiler_v1.c)
 * v1..v3 share init, finalize and the state translation (profiler_adapt.c).
 */
#ifndef CHORUS_PROFILER_ADAPTER_H_
#define CHORUS_PROFILER_ADAPTER_H_

#include "util/plugin_open.h"
#include "plugin/plugin_record.h"
#include "plugin/profiler_plugin.h"

struct chrProfLib {
  struct chrPluginRecord rec; /* label, handle, usable or why not, version, name, refs (plugin_record.h) */
  const void* native;              /* the plugin's own ncclProfiler_vN_t */
  int supported;                   /* event bits the version knows */

  /* The v6 interface, with the library first. */
  ncclResult_t (*init)(struct chrProfLib* lib, void** ctx, uint64_t commId, int* mask, const char* commName,
                       int nNodes, int nRanks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d);
  ncclResult_t (*stopEvent)(struct chrProfLib* lib, void* handle);
  ncclResult_t (*recordEventState)(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                                   ncclProfilerEventStateArgs_v6_t* args);
  ncclResult_t (*finalize)(struct chrProfLib* lib, void* ctx);

  /* v1..v3: the old init(ctx, mask) and the plugin's stop/record/finalize, for profiler_adapt.c. */
  ncclResult_t (*oldInit)(void** context, int* eActivationMask);
  ncclResult_t (*oldFinalize)(void* context);
};

/* The context a v1..v3 adapter hands out: the plugin's own, and what its descriptors carry that its
 * init was not told. */
struct chrProfAdaptCtx {
  void* ctx;
  uint64_t commHash;
  char commName[128];
  int hasName;
};

ncclResult_t chrProfBindV6(struct chrProfLib* lib, const ncclProfiler_v6_t* t);
ncclResult_t chrProfAdaptV5(struct chrProfLib* lib, const ncclProfiler_v5_t* t);
ncclResult_t chrProfAdaptV4(struct chrProfLib* lib, const ncclProfiler_v4_t* t);
ncclResult_t chrProfAdaptV3(struct chrProfLib* lib, const ncclProfiler_v3_t* t);
ncclResult_t chrProfAdaptV2(struct chrProfLib* lib, const ncclProfiler_v2_t* t);
ncclResult_t chrProfAdaptV1(struct chrProfLib* lib, const ncclProfiler_v1_t* t);

/* Shared by v1..v3: keep the old init/finalize and fill lib->init/finalize with forwarders that wrap
 * the context (struct chrProfAdaptCtx). */
void chrProfAdaptBindOld(struct chrProfLib* lib, ncclResult_t (*oldInit)(void**, int*),
                         ncclResult_t (*oldFinalize)(void*));

/* v1..v3 know the states up to ProxyCtrlAppendEnd and 16-byte args ({transSize, steps} for proxy
 * events, appendedProxyOps for ProxyCtrl). Returns 0 when the state must be dropped; else fills out.
 * The three versions' args unions have the same layout. */
int chrProfAdaptOldState(ncclProfilerEventState_t state, const ncclProfilerEventStateArgs_v6_t* in,
                         ncclProfilerEventStateArgs_v3_t* out);

/* A NULL mandatory slot makes the library unusable: writes the reason, returns ncclInvalidUsage. */
ncclResult_t chrProfMissingSlot(struct chrProfLib* lib, const char* slotName);
#define CHR_PROF_REQUIRE_SLOTS(lib, t)                                                   \
  do {                                                                                   \
    if ((t)->name == NULL) return chrProfMissingSlot((lib), "name");                     \
    if ((t)->init == NULL) return chrProfMissingSlot((lib), "init");                     \
    if ((t)->startEvent == NULL) return chrProfMissingSlot((lib), "startEvent");         \
    if ((t)->stopEvent == NULL) return chrProfMissingSlot((lib), "stopEvent");           \
    if ((t)->recordEventState == NULL) return chrProfMissingSlot((lib), "recordEventState"); \
    if ((t)->finalize == NULL) return chrProfMissingSlot((lib), "finalize");             \
  } while (0)

#endif /* CHORUS_PROFILER_ADAPTER_H_ */
