/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_v5.c: presents a v5 profiler plugin as v6.
 *
 * v5 is v6 without the copy-engine events: the same init, the same 112-byte descriptor for every
 * event v5 knows, the same 8-byte state args. Its supported bits leave out CeColl/CeSync/CeBatch, so
 * those events and states never reach it; everything else is passed through as it is.
 */
#include "plugin/profiler_adapter.h"

#define OLD(lib) ((const ncclProfiler_v5_t*)(lib)->native)

static ncclResult_t initV5(struct chrProfLib* lib, void** ctx, uint64_t commId, int* mask, const char* commName,
                           int nNodes, int nRanks, int rank, ncclDebugLogger_t logfn) {
  return OLD(lib)->init(ctx, commId, mask, commName, nNodes, nRanks, rank, logfn);
}

static ncclResult_t startV5(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  _Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == sizeof(ncclProfilerEventDescr_v6_t), "v5 layout is v6's");
  return OLD(lib)->startEvent(ctx, handle, (ncclProfilerEventDescr_v5_t*)&d->d);
}

static ncclResult_t stopV5(struct chrProfLib* lib, void* handle) { return OLD(lib)->stopEvent(handle); }

static ncclResult_t recordV5(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  return OLD(lib)->recordEventState(handle, state, (ncclProfilerEventStateArgs_v5_t*)args);
}

static ncclResult_t finalizeV5(struct chrProfLib* lib, void* ctx) { return OLD(lib)->finalize(ctx); }

ncclResult_t chrProfAdaptV5(struct chrProfLib* lib, const ncclProfiler_v5_t* t) {
  lib->rec.version = 5;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x0fff; /* Group .. KernelLaunch */
  lib->init = initV5;
  lib->startEvent = startV5;
  lib->stopEvent = stopV5;
  lib->recordEventState = recordV5;
  lib->finalize = finalizeV5;
  return ncclSuccess;
}
