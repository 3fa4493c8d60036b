/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner.c: loading the tuner plugin and initialising it per communicator (the loader half of
 * tuner_plugin.h).
 *
 * Where the tuner comes from (NCCL's rule):
 *   NCCL_TUNER_PLUGIN=none   no tuner
 *   NCCL_TUNER_PLUGIN=<v>    the library <v> by the search rule of plugin_open.h (prefix libnccl-tuner)
 *   unset or empty           libnccl-tuner.so; when that does not give a tuner, the net plugin library
 *                            the communicator uses is searched for the same symbols
 * In the library the newest of ncclTunerPlugin_v6 .. _v2 is bound (older versions through their
 * adapter). The library is loaded the first time a communicator needs it and stays loaded; the
 * outcome, usable or not and why, is kept in its struct chrTunerLib, so a failure is not retried and
 * is WARNed once per distinct reason. Each communicator gets its own context from the plugin's init
 * and holds a reference (lib->rec.refs) until chrTunerClose. Every record is guarded by tunerLock.
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
#include "plugin/tuner_adapter.h"
#include "plugin/tuner_plugin.h"

#define TUNER_PREFIX "libnccl-tuner"
#define TUNER_MAX_NET_LIBS 16 /* net plugin libraries searched for a tuner (NCCL_NET_PLUGIN has at most 14) */

static pthread_mutex_t tunerLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrTunerLib* primary;                    /* NCCL_TUNER_PLUGIN, or libnccl-tuner.so */
static struct chrTunerLib* fromNet[TUNER_MAX_NET_LIBS]; /* net plugin libraries searched so far */
static int nFromNet;
static int disabledLogged;
static char lastNone[CHR_PLUGIN_PATH_MAX + CHR_PLUGIN_REASON_MAX + 512]; /* last "no tuner" INFO, so repeats stay quiet */

/* ---- v6 native binding ------------------------------------------------------------------------- */

#define NATIVE(lib) ((const ncclTuner_v6_t*)(lib)->native)

static ncclResult_t initV6(struct chrTunerLib* lib, void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                           ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                           ncclTunerConstants_v6_t* constants) {
  return NATIVE(lib)->init(ctx, commId, nRanks, nNodes, logFunction, nvlDomainInfo, constants);
}

/* A v6 plugin is called directly: its table is copied as is (getChunkSize may be NULL). */
ncclResult_t chrTunerBindV6(struct chrTunerLib* lib, const ncclTuner_v6_t* t) {
  lib->rec.version = 6;
  CHR_TUNER_REQUIRE(lib, t, name);
  CHR_TUNER_REQUIRE(lib, t, init);
  CHR_TUNER_REQUIRE(lib, t, getCollInfo);
  CHR_TUNER_REQUIRE(lib, t, finalize);
  lib->table = *t;
  lib->table.init = NULL; /* every version goes through lib->init */
  lib->native = t;
  lib->rec.name = t->name;
  lib->init = initV6;
  return ncclSuccess;
}

/* ---- loading ------------------------------------------------------------------------------------ */

/* Find the newest table the library exports and bind it. Fills failReason when there is none. */
static void probeTable(struct chrTunerLib* lib) {
  static const char* const symbols[] = {"ncclTunerPlugin_v6", "ncclTunerPlugin_v5", "ncclTunerPlugin_v4",
                                        "ncclTunerPlugin_v3", "ncclTunerPlugin_v2"};
  const void* t = NULL;
  const int i = chrPluginRecordFind(&lib->rec, symbols, 5, &t);
  if (i >= 0) {
    ncclResult_t res;
    switch (6 - i) {
      case 6: res = chrTunerBindV6(lib, t); break;
      case 5: res = chrTunerAdaptV5(lib, t); break;
      case 4: res = chrTunerAdaptV4(lib, t); break;
      case 3: res = chrTunerAdaptV3(lib, t); break;
      default: res = chrTunerAdaptV2(lib, t); break;
    }
    lib->rec.usable = (res == ncclSuccess);
    return;
  }
  if (chrPluginSymbol(&lib->rec.dl, "ncclTunerPlugin_v1") != NULL)
    snprintf(lib->rec.failReason, sizeof(lib->rec.failReason),
             "no ncclTunerPlugin_v6..v2 symbol (it exports ncclTunerPlugin_v1, an ABI older than Chorus supports)");
  else
    snprintf(lib->rec.failReason, sizeof(lib->rec.failReason), "no ncclTunerPlugin_v6..v2 symbol");
}

/* The NCCL_TUNER_PLUGIN value, trimmed ("" when unset). */
static void tunerSetting(char* value, size_t cap) {
  const char* v = chrParamStr(CHR_P_TUNER_PLUGIN);
  chrPluginTrimCopy(value, cap, v, v + strlen(v));
}

/* The record of NCCL_TUNER_PLUGIN (or the default name), loaded on first use. NULL: out of memory. */
static struct chrTunerLib* ensurePrimary(const char* value) {
  if (primary != NULL) return primary;
  struct chrTunerLib* lib = calloc(1, sizeof(*lib));
  if (lib == NULL) return NULL;
  if (chrPluginRecordOpen(&lib->rec, TUNER_PREFIX, value)) probeTable(lib);
  primary = lib;
  return lib;
}

/* The record of the net plugin library `net` uses, searched on first use. NULL: out of memory or
 * too many net libraries. */
static struct chrTunerLib* ensureFromNet(const struct chrNet* net) {
  for (int i = 0; i < nFromNet; i++)
    if (fromNet[i]->rec.netKey == net->lib) return fromNet[i];
  if (nFromNet == TUNER_MAX_NET_LIBS) return NULL;
  struct chrTunerLib* lib = calloc(1, sizeof(*lib));
  if (lib == NULL) return NULL;
  chrPluginRecordBorrow(&lib->rec, net);
  probeTable(lib);
  fromNet[nFromNet++] = lib;
  return lib;
}

/* A tuner that was found or asked for cannot be used: WARN once per distinct reason and go on
 * without a tuner, or (strict) fail. */
static ncclResult_t tunerFailed(struct chrTunerLib* lib, const char* reason, int strict) {
  return chrPluginRecordFailed(&lib->rec, "TUNER", "tuner", "planning with the core's own cost model", reason, strict);
}

/* Nothing provides a tuner and nothing was asked for: one INFO line per distinct situation. */
static void noTuner(const char* fmt, const char* a, const char* b) {
  char text[sizeof(lastNone)];
  snprintf(text, sizeof(text), fmt, a, b);
  if (strcmp(text, lastNone) == 0) return;
  snprintf(lastNone, sizeof(lastNone), "%s", text);
  INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: %s", text);
}

/* Initialise a usable library for one communicator. On failure writes why into reason. */
static ncclResult_t initForComm(struct chrTunerLib* lib, struct chrTunerCommInfo* info, struct chrTuner** out,
                                char* reason, size_t reasonCap) {
  char section[64 + 8] = "tuner.";
  size_t len = strlen(section);
  for (const char* c = lib->rec.name; *c && len + 1 < sizeof(section); c++) section[len++] = (char)tolower((unsigned char)*c);
  section[len] = '\0';
  chrConfigExportSection(section); /* plugins written for NCCL read their settings from the environment */

  void* ctx = NULL;
  ncclResult_t res = lib->init(lib, &ctx, info->commHash, info->nRanks, info->nNodes, chrLog, &info->nvlDomain,
                               &info->constants);
  if (res != ncclSuccess) {
    snprintf(reason, reasonCap, "init returned %d", (int)res); /* no comm id: a repeat stays quiet */
    return ncclSystemError;
  }
  struct chrTuner* tuner = calloc(1, sizeof(*tuner));
  if (tuner == NULL) {
    lib->table.finalize(ctx);
    snprintf(reason, reasonCap, "out of memory");
    return ncclSystemError;
  }
  tuner->table = &lib->table;
  tuner->ctx = ctx;
  tuner->version = lib->rec.version;
  tuner->name = lib->rec.name;
  tuner->path = lib->rec.dl.path;
  tuner->commHash = info->commHash;
  tuner->lib = lib;
  lib->rec.refs++;
  *out = tuner;
  return ncclSuccess;
}

static ncclResult_t openLocked(struct chrTunerCommInfo* info, struct chrTuner** out) {
  char value[CHR_PLUGIN_PATH_MAX];
  tunerSetting(value, sizeof(value));
  if (strcasecmp(value, "none") == 0) {
    if (!disabledLogged) INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: tuner plugins disabled (NCCL_TUNER_PLUGIN=none)");
    disabledLogged = 1;
    return ncclSuccess;
  }
  int strict = chrParamInt(CHR_P_PLUGIN_STRICT) != 0;
  struct chrTunerLib* lib = ensurePrimary(value);
  if (lib == NULL) return chrFail(ncclSystemError, "TUNER/Plugin: out of memory loading the tuner plugin");

  if (!lib->rec.usable) {
    /* Asked for by name or path: that is the tuner, and it cannot be used. */
    if (value[0] != '\0') return tunerFailed(lib, lib->rec.failReason, strict);
    /* libnccl-tuner.so, not asked for: a library that opens but is not a tuner is worth a WARN
     * (not an error, even strict); one that is absent is the normal case. Then the net library. */
    if (lib->rec.dl.handle != NULL && strcmp(lib->rec.lastWarn, lib->rec.failReason) != 0) {
      snprintf(lib->rec.lastWarn, sizeof(lib->rec.lastWarn), "%s", lib->rec.failReason);
      WARN("TUNER/Plugin: %s (%s) is not a usable tuner plugin: %s; ignoring it", lib->rec.label, lib->rec.dl.path,
           lib->rec.failReason);
    }
    const char* why = lib->rec.dl.handle != NULL ? "not usable" : "not found";
    if (info->net == NULL) {
      noTuner("no tuner plugin (" TUNER_PREFIX ".so %s; NCCL_TUNER_PLUGIN unset; %s)", why,
              "this communicator has no net plugin library to search");
      return ncclSuccess;
    }
    lib = ensureFromNet(info->net);
    if (lib == NULL) return chrFail(ncclSystemError, "TUNER/Plugin: cannot search net plugin %s for a tuner",
                                    info->net->name);
    if (!lib->rec.usable) {
      char text[CHR_PLUGIN_PATH_MAX + CHR_PLUGIN_REASON_MAX + 128];
      snprintf(text, sizeof(text), "net plugin library %s has %s", lib->rec.dl.path,
               strstr(lib->rec.failReason, "no ncclTunerPlugin") == lib->rec.failReason ? "no ncclTunerPlugin_v6..v2 symbol"
                                                                                 : lib->rec.failReason);
      noTuner("no tuner plugin (" TUNER_PREFIX ".so %s; NCCL_TUNER_PLUGIN unset; %s)", why, text);
      return ncclSuccess;
    }
  }
  if (!lib->rec.announced) {
    lib->rec.announced = 1;
    INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: loaded tuner plugin '%s' from %s%s (ABI v%d)", lib->rec.name,
         lib->rec.dl.path, lib->rec.borrowed ? " (the net plugin's library)" : "", lib->rec.version);
  }
  char reason[512];
  if (initForComm(lib, info, out, reason, sizeof(reason)) != ncclSuccess) return tunerFailed(lib, reason, strict);
  INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: comm 0x%llx uses tuner plugin %s (ABI v%d)",
       (unsigned long long)info->commHash, lib->rec.name, lib->rec.version);
  return ncclSuccess;
}

ncclResult_t chrTunerOpen(struct chrTunerCommInfo* info, struct chrTuner** out) {
  if (out == NULL || info == NULL) return chrFail(ncclInternalError, "chrTunerOpen: NULL argument");
  *out = NULL;
  pthread_mutex_lock(&tunerLock);
  ncclResult_t res = openLocked(info, out);
  pthread_mutex_unlock(&tunerLock);
  return res;
}

ncclResult_t chrTunerClose(struct chrTuner* tuner) {
  if (tuner == NULL) return ncclSuccess;
  ncclResult_t res = tuner->table->finalize(tuner->ctx);
  if (res != ncclSuccess)
    res = chrFail(res, "tuner plugin %s (ABI v%d): finalize returned %d for comm 0x%llx", tuner->name, tuner->version,
                  (int)res, (unsigned long long)tuner->commHash);
  pthread_mutex_lock(&tunerLock);
  tuner->lib->rec.refs--;
  pthread_mutex_unlock(&tunerLock);
  TRACE(NCCL_TUNING, "tuner %s: finalized ctx %p of comm 0x%llx", tuner->name, tuner->ctx,
        (unsigned long long)tuner->commHash);
  free(tuner);
  return res;
}

int chrTunerLibRefs(const struct chrTuner* tuner) {
  if (tuner == NULL) return 0;
  pthread_mutex_lock(&tunerLock);
  int refs = tuner->lib->rec.refs;
  pthread_mutex_unlock(&tunerLock);
  return refs;
}

/* ---- description for chorus-info --------------------------------------------------------------- */

void chrTunerDescribe(FILE* out) {
  char value[CHR_PLUGIN_PATH_MAX];
  pthread_mutex_lock(&tunerLock);
  tunerSetting(value, sizeof(value));
  fprintf(out, "tuner plugin (NCCL_TUNER_PLUGIN=%s):\n", value);
  if (strcasecmp(value, "none") == 0) {
    fprintf(out, "  none: tuner plugins disabled\n");
  } else {
    struct chrTunerLib* lib = ensurePrimary(value);
    if (lib == NULL)
      fprintf(out, "  out of memory\n");
    else if (lib->rec.usable)
      fprintf(out, "  %s: %s: name %s, ABI v%d\n", lib->rec.label, lib->rec.dl.path, lib->rec.name, lib->rec.version);
    else if (value[0] == '\0' && lib->rec.dl.handle == NULL) /* the usual case: nothing asked for, none there */
      fprintf(out, "  no %s (tried %s); each communicator's net plugin library is searched for a tuner, and "
              "without one the planner's cost model decides\n", lib->rec.label, lib->rec.dl.tried);
    else
      fprintf(out, "  %s: not usable%s%s%s: %s%s\n", lib->rec.label, lib->rec.dl.path[0] ? " (" : "", lib->rec.dl.path,
              lib->rec.dl.path[0] ? ")" : "", lib->rec.failReason,
              value[0] ? "" : "; each communicator's net plugin library is searched instead");
  }
  pthread_mutex_unlock(&tunerLock);
}
