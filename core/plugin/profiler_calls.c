/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler_calls.c: the event calls of profiler_plugin.h, the only place the core calls into a
 * profiler plugin after chrProfilerOpen. Each one goes through the library's v6 interface (the
 * plugin's own table, or its version's adapter). What a plugin returns from an event call changes
 * nothing (as in NCCL): it is traced, never logged as a failure. Events the plugin's version does not
 * know are refused here, so an adapter only ever sees its own version's events.
 */
#include <stdlib.h>

#include "log/log.h"
#include "plugin/profiler_adapter.h"
#include "plugin/profiler_plugin.h"

void chrProfilerStart(struct chrProfiler* prof, uint64_t type, void* parent, struct chrProfDescr* d, void** handle) {
  *handle = NULL;
  if (prof == NULL || !(prof->supported & (int)type)) return;
  d->d.type = type;
  d->d.parentObj = parent;
  d->d.rank = prof->rank;
  ncclResult_t res = prof->lib->startEvent(prof->lib, prof->ctx, handle, d);
  if (res != ncclSuccess) {
    TRACE(NCCL_PROFILE, "profiler %s: startEvent(type 0x%llx) returned %d", prof->name, (unsigned long long)type,
          (int)res);
    *handle = NULL; /* a failed start is never stopped */
  }
}

void chrProfilerStop(struct chrProfiler* prof, void* handle) {
  if (prof == NULL || handle == NULL) return;
  ncclResult_t res = prof->lib->stopEvent(prof->lib, handle);
  if (res != ncclSuccess) TRACE(NCCL_PROFILE, "profiler %s: stopEvent returned %d", prof->name, (int)res);
}

void chrProfilerRecord(struct chrProfiler* prof, void* handle, ncclProfilerEventState_t state,
                       ncclProfilerEventStateArgs_v6_t* args) {
  if (prof == NULL || handle == NULL) return;
  ncclResult_t res = prof->lib->recordEventState(prof->lib, handle, state, args);
  if (res != ncclSuccess)
    TRACE(NCCL_PROFILE, "profiler %s: recordEventState(%d) returned %d", prof->name, (int)state, (int)res);
}

/* The handle a net plugin holds for one of its events: the profiler that started it and the
 * plugin's own handle (a net event's stop and update come without the phandle). */
struct netEvent {
  struct chrProfiler* prof;
  void* handle;
};

ncclResult_t chrProfilerNetCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (eHandle == NULL) return ncclSuccess;
  if (type == NCCL_PROFILER_NET_EVENT_START) {
    *eHandle = NULL;
    const struct chrProfNetParent* parent = pHandle;
    if (parent == NULL || parent->prof == NULL) return ncclSuccess;
    if (!(__atomic_load_n(&chrProfMask, __ATOMIC_RELAXED) & ncclProfileNetPlugin)) return ncclSuccess;
    struct chrProfDescr d = {0};
    d.d.netPlugin.id = pluginId;
    d.d.netPlugin.data = extData;
    void* h = NULL;
    chrProfilerStart(parent->prof, ncclProfileNetPlugin, parent->handle, &d, &h);
    if (h == NULL) return ncclSuccess;
    struct netEvent* ev = malloc(sizeof(*ev));
    if (ev == NULL) {
      chrProfilerStop(parent->prof, h);
      return ncclSuccess;
    }
    ev->prof = parent->prof;
    ev->handle = h;
    *eHandle = ev;
    return ncclSuccess;
  }
  struct netEvent* ev = *eHandle;
  if (ev == NULL) return ncclSuccess;
  if (type == NCCL_PROFILER_NET_EVENT_UPDATE || type == NCCL_PROFILER_NET_EVENT_UPDATE_AND_STOP) {
    ncclProfilerEventStateArgs_v6_t args = {0};
    args.netPlugin.data = extData;
    chrProfilerRecord(ev->prof, ev->handle, ncclProfilerNetPluginUpdate, &args);
  }
  if (type == NCCL_PROFILER_NET_EVENT_STOP || type == NCCL_PROFILER_NET_EVENT_UPDATE_AND_STOP) {
    chrProfilerStop(ev->prof, ev->handle);
    free(ev);
    *eHandle = NULL;
  }
  return ncclSuccess;
}
