/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_adapter.h: private to core/plugin. One loaded tuner library, and the adapters that make an
 * older ABI version look like v6.
 *
 * The v6 init has no "self" argument, so it goes through lib->init, which takes the library
 * explicitly. getCollInfo and finalize have a context: an adapter that must find its library again
 * hands out its own context (struct chrTunerAdaptCtx) wrapping the plugin's. Nothing lives in file
 * statics, so two libraries of one version share nothing.
 *
 *   v6  bound directly (tuner.c)
 *   v5  the same slots without getChunkSize: copied, no wrapping (tuner_v5.c)
 *   v4  old init (no commId, domain info, constants) and destroy; getCollInfo as v6 (tuner_v4.c)
 *   v3  as v4, getCollInfo without regBuff (tuner_v3.c)
 *   v2  as v4, getCollInfo answers with a choice that the adapter writes into the table (tuner_v2.c)
 * v2..v4 share init and destroy (tuner_adapt.c); their files supply only getCollInfo.
 */
#ifndef CHORUS_TUNER_ADAPTER_H_
#define CHORUS_TUNER_ADAPTER_H_

#include "util/plugin_open.h"
#include "plugin/plugin_record.h"
#include "plugin/tuner.h"

struct chrTunerLib {
  struct chrPluginRecord rec; /* label, handle, usable or why not, version, name, refs (plugin_record.h) */
  const void* native;           /* the plugin's own ncclTuner_vN_t */

  ncclTuner_v6_t table;         /* what the wrappers call (init slot NULL: use lib->init) */
  ncclResult_t (*init)(struct chrTunerLib* lib, void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                       ncclTunerConstants_v6_t* constants);

  /* v2..v4: the old init and destroy, called by the shared forwarders of tuner_adapt.c. */
  ncclResult_t (*oldInit)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*oldDestroy)(void* context);
};

/* The context a v2..v4 adapter hands out: its library, the plugin's own context, and the choices
 * already refused (v2), so a plugin repeating one is WARNed once per communicator. */
struct chrTunerAdaptCtx {
  struct chrTunerLib* lib;
  void* ctx;
  unsigned refusedWarned;
};

/* Bind the plugin's table into lib (fills table, init, version, name, native). Return ncclSuccess,
 * or an error after writing the reason into lib->failReason. */
ncclResult_t chrTunerBindV6(struct chrTunerLib* lib, const ncclTuner_v6_t* t);
ncclResult_t chrTunerAdaptV5(struct chrTunerLib* lib, const ncclTuner_v5_t* t);
ncclResult_t chrTunerAdaptV4(struct chrTunerLib* lib, const ncclTuner_v4_t* t);
ncclResult_t chrTunerAdaptV3(struct chrTunerLib* lib, const ncclTuner_v3_t* t);
ncclResult_t chrTunerAdaptV2(struct chrTunerLib* lib, const ncclTuner_v2_t* t);

/* Shared by the v2..v4 adapters: keep the old init/destroy and fill lib->init and the table's
 * finalize with the forwarders that wrap the context; the caller sets table.getCollInfo. */
void chrTunerAdaptBindOld(struct chrTunerLib* lib, const void* native, const char* name,
                          ncclResult_t (*oldInit)(size_t, size_t, ncclDebugLogger_t, void**),
                          ncclResult_t (*oldDestroy)(void*));

/* An adapter that refuses a call itself (strict mode) sets the thread's last error and this mark, so
 * the wrapper passes the error on without replacing the text. Take clears the mark. */
void chrTunerAdaptMarkReported(void);
int chrTunerAdaptTakeReported(void);

/* A NULL mandatory slot makes the library unusable: writes the reason, returns ncclInvalidUsage. */
ncclResult_t chrTunerMissingSlot(struct chrTunerLib* lib, const char* slotName);
#define CHR_TUNER_REQUIRE(lib, t, slot) \
  do {                                  \
    if ((t)->slot == NULL) return chrTunerMissingSlot((lib), #slot); \
  } while (0)

#endif /* CHORUS_TUNER_ADAPTER_H_ */
