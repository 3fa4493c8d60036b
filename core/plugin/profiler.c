/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler.c: loading the profiler plugin and initialising it per communicator (the loader half of
 * profiler_plugin.h).
 *
 * Where the profiler comes from (NCCL's rule):
 *   NCCL_PROFILER_PLUGIN=none   no profiler
 *   NCCL_PROFILER_PLUGIN=<v>    the library <v> by the search rule of plugin_open.h (prefix libnccl-profiler)
 *   unset or empty              libnccl-profiler.so; when that does not give a profiler, the net plugin
 *                               library the communicator uses is searched for the same symbols
 * In the library the newest of ncclProfiler_v6 .. _v1 is bound (older versions through their
 * adapter). The library is loaded the first time a communicator needs it and stays loaded; the
 * outcome, usable or not and why, is kept in its struct chrProfLib, so a failure is not retried and
 * is WARNed once per distinct reason. Each communicator gets its own context from the plugin's init
 * (which writes the process-wide activation mask chrProfMask) and finalizes it at destroy. Every
 * record is guarded by profLock.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"
#include "plugin/net_plugin.h"
#include "plugin/profiler_adapter.h"
#include "plugin/profiler_plugin.h"

#define PROF_PREFIX "libnccl-profiler"
#define PROF_MAX_NET_LIBS 16 /* net plugin libraries searched for a profiler */

int chrProfMask; /* written by the plugins' init (and later, through the pointer they keep) */

static pthread_mutex_t profLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrProfLib* primary;                    /* NCCL_PROFILER_PLUGIN, or libnccl-profiler.so */
static struct chrProfLib* fromNet[PROF_MAX_NET_LIBS]; /* net plugin libraries searched so far */
static int nFromNet;
static int disabledLogged;
static char lastNone[CHR_PLUGIN_PATH_MAX + CHR_PLUGIN_REASON_MAX + 512];

/* ---- v6 native binding ------------------------------------------------------------------------- */

#define NATIVE(lib) ((const ncclProfiler_v6_t*)(lib)->native)

static ncclResult_t initV6(struct chrProfLib* lib, void** ctx, uint64_t commId, int* mask, const char* commName,
                           int nNodes, int nRanks, int rank, ncclDebugLogger_t logfn) {
  return NATIVE(lib)->init(ctx, commId, mask, commName, nNodes, nRanks, rank, logfn);
}
static ncclResult_t startV6(struct chrProfLib* lib, void* ctx, void** handle, struct chrProfDescr* d) {
  return NATIVE(lib)->startEvent(ctx, handle, &d->d);
}
static ncclResult_t stopV6(struct chrProfLib* lib, void* handle) { return NATIVE(lib)->stopEvent(handle); }
static ncclResult_t recordV6(struct chrProfLib* lib, void* handle, ncclProfilerEventState_t state,
                             ncclProfilerEventStateArgs_v6_t* args) {
  return NATIVE(lib)->recordEventState(handle, state, args);
}
static ncclResult_t finalizeV6(struct chrProfLib* lib, void* ctx) { return NATIVE(lib)->finalize(ctx); }

ncclResult_t chrProfBindV6(struct chrProfLib* lib, const ncclProfiler_v6_t* t) {
  lib->rec.version = 6;
  CHR_PROF_REQUIRE_SLOTS(lib, t);
  lib->native = t;
  lib->rec.name = t->name;
  lib->supported = 0x7fff;
  lib->init = initV6;
  lib->startEvent = startV6;
  lib->stopEvent = stopV6;
  lib->recordEventState = recordV6;
  lib->finalize = finalizeV6;
  return ncclSuccess;
}

/* ---- loading ------------------------------------------------------------------------------------ */

static void probeTable(struct chrProfLib* lib) {
  static const char* const symbols[] = {"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4",
                                        "ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"};
  const void* t = NULL;
  const int i = chrPluginRecordFind(&lib->rec, symbols, 6, &t);
  if (i >= 0) {
    ncclResult_t res;
    switch (6 - i) {
      case 6: res = chrProfBindV6(lib, t); break;
      case 5: res = chrProfAdaptV5(lib, t); break;
      case 4: res = chrProfAdaptV4(lib, t); break;
      case 3: res = chrProfAdaptV3(lib, t); break;
      case 2: res = chrProfAdaptV2(lib, t); break;
      default: res = chrProfAdaptV1(lib, t); break;
    }
    lib->rec.usable = (res == ncclSuccess);
    return;
  }
  snprintf(lib->rec.failReason, sizeof(lib->rec.failReason), "no ncclProfiler_v6..v1 symbol");
}

static void profSetting(char* value, size_t cap) {
  const char* v = chrParamStr(CHR_P_PROFILER_PLUGIN);
  chrPluginTrimCopy(value, cap, v, v + strlen(v));
}

static struct chrProfLib* ensurePrimary(const char* value) {
  if (primary != NULL) return primary;
  struct chrProfLib* lib = calloc(1, sizeof(*lib));
  if (lib == NULL) return NULL;
  if (chrPluginRecordOpen(&lib->rec, PROF_PREFIX, value)) probeTable(lib);
  primary = lib;
  return lib;
}

static struct chrProfLib* ensureFromNet(const struct chrNet* net) {
  for (int i = 0; i < nFromNet; i++)
    if (fromNet[i]->rec.netKey == net->lib) return fromNet[i];
  if (nFromNet == PROF_MAX_NET_LIBS) return NULL;
  struct chrProfLib* lib = calloc(1, sizeof(*lib));
  if (lib == NULL) return NULL;
  chrPluginRecordBorrow(&lib->rec, net);
  probeTable(lib);
  fromNet[nFromNet++] = lib;
  return lib;
}


static ncclResult_t profFailed(struct chrProfLib* lib, const char* reason, int strict) {
  return chrPluginRecordFailed(&lib->rec, "PROFILER", "profiler", "running without a profiler", reason, strict);
}

static void noProfiler(const char* fmt, const char* a, const char* b) {
  char text[sizeof(lastNone)];
  snprintf(text, sizeof(text), fmt, a, b);
  if (strcmp(text, lastNone) == 0) return;
  snprintf(lastNone, sizeof(lastNone), "%s", text);
  INFO(NCCL_INIT | NCCL_PROFILE, "PROFILER/Plugin: %s", text);
}

static ncclResult_t initForComm(struct chrProfLib* lib, const struct chrProfCommInfo* info, struct chrProfiler** out,
                                char* reason, size_t reasonCap) {
  char section[64 + 10] = "profiler.";
  size_t len = strlen(section);
  for (const char* c = lib->rec.name; *c && len + 1 < sizeof(section); c++) section[len++] = (char)tolower((unsigned char)*c);
  section[len] = '\0';
  chrConfigExportSection(section); /* plugins written for NCCL read their settings from the environment */

  struct chrProfiler* prof = calloc(1, sizeof(*prof));
  if (prof == NULL) {
    snprintf(reason, reasonCap, "out of memory");
    return ncclSystemError;
  }
  void* ctx = NULL;
  ncclResult_t res = lib->init(lib, &ctx, info->commHash, &chrProfMask, info->commName, info->nNodes, info->nRanks,
                               info->rank, chrLog);
  if (res != ncclSuccess) {
    free(prof);
    snprintf(reason, reasonCap, "init returned %d", (int)res);
    return ncclSystemError;
  }
  prof->lib = lib;
  prof->ctx = ctx;
  prof->version = lib->rec.version;
  prof->supported = lib->supported & CHR_PROF_ALL_EVENTS;
  prof->name = lib->rec.name;
  prof->commHash = info->commHash;
  prof->rank = info->rank;
  lib->rec.refs++;
  *out = prof;
  return ncclSuccess;
}

static ncclResult_t openLocked(const struct chrProfCommInfo* info, struct chrProfiler** out) {
  char value[CHR_PLUGIN_PATH_MAX];
  profSetting(value, sizeof(value));
  if (strcasecmp(value, "none") == 0) {
    if (!disabledLogged)
      INFO(NCCL_INIT | NCCL_PROFILE, "PROFILER/Plugin: profiler plugins disabled (NCCL_PROFILER_PLUGIN=none)");
    disabledLogged = 1;
    return ncclSuccess;
  }
  int strict = chrParamInt(CHR_P_PLUGIN_STRICT) != 0;
  struct chrProfLib* lib = ensurePrimary(value);
  if (lib == NULL) return chrFail(ncclSystemError, "PROFILER/Plugin: out of memory loading the profiler plugin");

  if (!lib->rec.usable) {
    if (value[0] != '\0') return profFailed(lib, lib->rec.failReason, strict);
    if (lib->rec.dl.handle != NULL && strcmp(lib->rec.lastWarn, lib->rec.failReason) != 0) {
      snprintf(lib->rec.lastWarn, sizeof(lib->rec.lastWarn), "%s", lib->rec.failReason);
      WARN("PROFILER/Plugin: %s (%s) is not a usable profiler plugin: %s; ignoring it", lib->rec.label, lib->rec.dl.path,
           lib->rec.failReason);
    }
    const char* why = lib->rec.dl.handle != NULL ? "not usable" : "not found";
    if (info->net == NULL) {
      noProfiler("no profiler plugin (" PROF_PREFIX ".so %s; NCCL_PROFILER_PLUGIN unset; %s)", why,
                 "this communicator has no net plugin library to search");
      return ncclSuccess;
    }
    lib = ensureFromNet(info->net);
    if (lib == NULL)
      return chrFail(ncclSystemError, "PROFILER/Plugin: cannot search net plugin %s for a profiler", info->net->name);
    if (!lib->rec.usable) {
      char text[CHR_PLUGIN_PATH_MAX + CHR_PLUGIN_REASON_MAX + 128];
      snprintf(text, sizeof(text), "net plugin library %s has %s", lib->rec.dl.path, lib->rec.failReason);
      noProfiler("no profiler plugin (" PROF_PREFIX ".so %s; NCCL_PROFILER_PLUGIN unset; %s)", why, text);
      return ncclSuccess;
    }
  }
  if (!lib->rec.announced) {
    lib->rec.announced = 1;
    INFO(NCCL_INIT | NCCL_PROFILE, "PROFILER/Plugin: loaded profiler plugin '%s' from %s%s (ABI v%d)", lib->rec.name,
         lib->rec.dl.path, lib->rec.borrowed ? " (the net plugin's library)" : "", lib->rec.version);
  }
  char reason[512];
  if (initForComm(lib, info, out, reason, sizeof(reason)) != ncclSuccess) return profFailed(lib, reason, strict);
  INFO(NCCL_INIT | NCCL_PROFILE, "PROFILER/Plugin: comm 0x%llx rank %d uses profiler plugin %s (ABI v%d), event mask 0x%x",
       (unsigned long long)info->commHash, info->rank, lib->rec.name, lib->rec.version,
       __atomic_load_n(&chrProfMask, __ATOMIC_RELAXED));
  return ncclSuccess;
}

ncclResult_t chrProfilerOpen(const struct chrProfCommInfo* info, struct chrProfiler** out) {
  if (out == NULL || info == NULL) return chrFail(ncclInternalError, "chrProfilerOpen: NULL argument");
  *out = NULL;
  pthread_mutex_lock(&profLock);
  ncclResult_t res = openLocked(info, out);
  pthread_mutex_unlock(&profLock);
  return res;
}

ncclResult_t chrProfilerClose(struct chrProfiler* prof) {
  if (prof == NULL) return ncclSuccess;
  /* A plugin whose init left its context NULL has declined this communicator (NVIDIA's Inspector
   * does so without a CUDA driver); NCCL never finalizes such a context, and plugins rely on it. */
  ncclResult_t res = prof->ctx != NULL ? prof->lib->finalize(prof->lib, prof->ctx) : ncclSuccess;
  if (res != ncclSuccess)
    res = chrFail(res, "profiler plugin %s (ABI v%d): finalize returned %d for comm 0x%llx", prof->name, prof->version,
                  (int)res, (unsigned long long)prof->commHash);
  pthread_mutex_lock(&profLock);
  prof->lib->rec.refs--;
  pthread_mutex_unlock(&profLock);
  TRACE(NCCL_PROFILE, "profiler %s: finalized ctx %p of comm 0x%llx", prof->name, prof->ctx,
        (unsigned long long)prof->commHash);
  free(prof);
  return res;
}

/* ---- description for chorus-info --------------------------------------------------------------- */

void chrProfilerDescribe(FILE* out) {
  char value[CHR_PLUGIN_PATH_MAX];
  pthread_mutex_lock(&profLock);
  profSetting(value, sizeof(value));
  fprintf(out, "profiler plugin (NCCL_PROFILER_PLUGIN=%s):\n", value);
  if (strcasecmp(value, "none") == 0) {
    fprintf(out, "  none: profiler plugins disabled\n");
  } else {
    struct chrProfLib* lib = ensurePrimary(value);
    if (lib == NULL)
      fprintf(out, "  out of memory\n");
    else if (lib->rec.usable)
      fprintf(out, "  %s: %s: name %s, ABI v%d\n", lib->rec.label, lib->rec.dl.path, lib->rec.name, lib->rec.version);
    else if (value[0] == '\0' && lib->rec.dl.handle == NULL)
      fprintf(out, "  no %s (tried %s); each communicator's net plugin library is searched for a profiler\n",
              lib->rec.label, lib->rec.dl.tried);
    else
      fprintf(out, "  %s: not usable%s%s%s: %s%s\n", lib->rec.label, lib->rec.dl.path[0] ? " (" : "", lib->rec.dl.path,
              lib->rec.dl.path[0] ? ")" : "", lib->rec.failReason,
              value[0] ? "" : "; each communicator's net plugin library is searched instead");
  }
  pthread_mutex_unlock(&profLock);
}
