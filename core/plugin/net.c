/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net.c: loading net plugins and opening one per communicator (the loader half of net_plugin.h).
 *
 * NCCL_NET_PLUGIN gives the candidates in order. When it does not name Chorus's socket plugin, that
 * one follows the list as the fallback, as NCCL falls back to its built-in transports when no plugin
 * it was given can run (none found, no symbol, init failed, no device). A candidate is loaded the
 * first time a search reaches it (so a working first candidate never makes the later ones WARN), at
 * most once per process; the result, usable or not and why, is kept in its struct chrNetLib. The one registry of
 * candidates is process-wide and guarded by netLock; everything a loaded library needs (adapter
 * state, init count) lives in its own chrNetLib.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"
#include "plugin/net_plugin.h"
#include "plugin/profiler_plugin.h"

#define NET_PREFIX "libnccl-net"
#define NET_MAX_CANDIDATES 14 /* as NCCL: the list has at most 14 names */
#define NET_FALLBACK "socket"  /* Chorus's own plugin, after the list */

static pthread_mutex_t netLock = PTHREAD_MUTEX_INITIALIZER;
static int netParsed;     /* candidates parsed from NCCL_NET_PLUGIN */
static int netDisabled;   /* NCCL_NET_PLUGIN=none */
static int netDisabledLogged;
static int netCount;
static struct chrNetLib* netLibs[NET_MAX_CANDIDATES + 1]; /* the list, then the fallback */

/* ---- v12 native binding ------------------------------------------------------------------------ */

#define NATIVE(lib) ((const ncclNet_v12_t*)(lib)->native)

static ncclResult_t initV12(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                            ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction) {
  return NATIVE(lib)->init(ctx, commId, config, logFunction, profFunction);
}

static ncclResult_t getPropertiesV12(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props) {
  return NATIVE(lib)->getProperties(dev, props);
}

static ncclResult_t makeVDeviceV12(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props) {
  return NATIVE(lib)->makeVDevice(d, props);
}

/* A v12 plugin is called directly: its table is copied as is. */
ncclResult_t chrNetBindV12(struct chrNetLib* lib, const ncclNet_v12_t* t) {
  lib->version = 12;
  CHR_NET_REQUIRE_SLOTS(lib, t);
  lib->table = *t;
  lib->native = t;
  lib->name = t->name;
  lib->init = initV12;
  lib->getProperties = getPropertiesV12;
  lib->makeVDevice = t->makeVDevice ? makeVDeviceV12 : NULL;
  return ncclSuccess;
}

/* ---- loading ------------------------------------------------------------------------------------ */

static ncclResult_t addCandidate(const char* name, int fallback) {
  struct chrNetLib* lib = calloc(1, sizeof(*lib));
  if (lib == NULL) return chrFail(ncclSystemError, "NET/Plugin: out of memory for the plugin list");
  snprintf(lib->candidate, sizeof(lib->candidate), "%s", name);
  lib->fallback = fallback;
  pthread_mutex_init(&lib->initLock, NULL);
  netLibs[netCount++] = lib;
  return ncclSuccess;
}

/* Split NCCL_NET_PLUGIN into candidates, once per process. "none" (alone) disables net plugins. */
static ncclResult_t parseCandidates(void) {
  if (netParsed) return ncclSuccess;
  const char* value = chrParamStr(CHR_P_NET_PLUGIN);
  char one[CHR_PLUGIN_PATH_MAX];
  chrPluginTrimCopy(one, sizeof(one), value, value + strlen(value));
  if (strcasecmp(one, "none") == 0) {
    netDisabled = 1;
    netParsed = 1;
    return ncclSuccess;
  }
  const char* p = value;
  do {
    const char* comma = strchr(p, ',');
    const char* end = comma ? comma : p + strlen(p);
    chrPluginTrimCopy(one, sizeof(one), p, end);
    p = comma ? comma + 1 : NULL;
    /* An empty entry means the default library name (libnccl-net.so), but only when it is the whole
     * value; stray commas are ignored, and so is a "none" inside a longer list. */
    if ((one[0] == '\0' && (comma != NULL || netCount > 0)) || strcasecmp(one, "none") == 0) continue;
    if (netCount == NET_MAX_CANDIDATES) {
      WARN("NET/Plugin: NCCL_NET_PLUGIN lists more than %d plugins; ignoring '%s' and the rest", NET_MAX_CANDIDATES,
           one);
      break;
    }
    CHECK(addCandidate(one, 0));
  } while (p != NULL);
  int listed = 0;
  for (int i = 0; i < netCount; i++) listed |= strcasecmp(netLibs[i]->candidate, NET_FALLBACK) == 0;
  if (!listed) CHECK(addCandidate(NET_FALLBACK, 1));
  netParsed = 1;
  return ncclSuccess;
}

/* Find the newest table the library exports and bind it. Fills failReason when there is none. */
static void probeTable(struct chrNetLib* lib) {
  static const char* const symbols[] = {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10",
                                        "ncclNetPlugin_v9", "ncclNetPlugin_v8"};
  /* CHORUS_NET_PLUGIN_ABI caps the version (to drive a plugin as an older core would). */
  int maxAbi = (int)chrParamInt(CHR_P_NET_PLUGIN_ABI);
  for (int i = 0; i < 5; i++) {
    if (maxAbi > 0 && 12 - i > maxAbi) continue;
    const void* t = chrPluginSymbol(&lib->dl, symbols[i]);
    if (t == NULL) continue;
    ncclResult_t res;
    switch (12 - i) {
      case 12: res = chrNetBindV12(lib, t); break;
      case 11: res = chrNetAdaptV11(lib, t); break;
      case 10: res = chrNetAdaptV10(lib, t); break;
      case 9: res = chrNetAdaptV9(lib, t); break;
      default: res = chrNetAdaptV8(lib, t); break;
    }
    lib->usable = (res == ncclSuccess);
    return;
  }
  const char* older = NULL;
  if (chrPluginSymbol(&lib->dl, "ncclNetPlugin_v7") != NULL) older = "ncclNetPlugin_v7";
  else if (chrPluginSymbol(&lib->dl, "ncclNetPlugin_v6") != NULL) older = "ncclNetPlugin_v6";
  if (older != NULL)
    snprintf(lib->failReason, sizeof(lib->failReason),
             "no ncclNetPlugin_v12..v8 symbol (it exports %s, an ABI older than Chorus supports)", older);
  else
    snprintf(lib->failReason, sizeof(lib->failReason), "no ncclNetPlugin_v12..v8 symbol");
  if (maxAbi > 0)
    snprintf(lib->failReason + strlen(lib->failReason), sizeof(lib->failReason) - strlen(lib->failReason),
             " of ABI version %d or older (CHORUS_NET_PLUGIN_ABI)", maxAbi);
}

/* Load a candidate the first time it is needed. Logs nothing: the caller knows whether the failure
 * is a fallback (WARN), an error (strict) or just a description (chorus-info). */
static void ensureLoaded(struct chrNetLib* lib, int* justLoaded) {
  *justLoaded = 0;
  if (lib->dl.tried[0] != '\0') return;
  if (chrPluginOpen(NET_PREFIX, lib->candidate, &lib->dl) != 0) {
    snprintf(lib->failReason, sizeof(lib->failReason), "cannot open: %s", lib->dl.reason);
    if (lib->dl.tried[0] == '\0')
      snprintf(lib->dl.tried, sizeof(lib->dl.tried), "%.*s", (int)sizeof(lib->dl.tried) - 1, lib->candidate);
    return;
  }
  probeTable(lib);
  if (lib->usable) *justLoaded = 1;
}

/* What the user typed, or the default library name for an empty entry. */
static const char* candidateLabel(const struct chrNetLib* lib) {
  return lib->candidate[0] ? lib->candidate : NET_PREFIX ".so";
}

/* One candidate failed: WARN once per distinct reason and fall back, or (strict) fail. next is the
 * candidate tried after it (NULL: none). */
static ncclResult_t candidateFailed(struct chrNetLib* lib, const char* reason, int strict, const struct chrNetLib* next) {
  /* Name the file when it differs from what the user wrote (when it could not be opened, the reason
   * names every try), and the plugin's name and version once known. */
  char where[CHR_PLUGIN_PATH_MAX + 128] = "";
  int showPath = lib->dl.path[0] && strcmp(lib->dl.path, lib->candidate) != 0;
  if (showPath && lib->usable) snprintf(where, sizeof(where), " (%s: %s, ABI v%d)", lib->dl.path, lib->name, lib->version);
  else if (showPath) snprintf(where, sizeof(where), " (%s)", lib->dl.path);
  else if (lib->usable) snprintf(where, sizeof(where), " (%s, ABI v%d)", lib->name, lib->version);
  if (strict)
    return chrFail(ncclInvalidUsage, "NET/Plugin: cannot use net plugin '%s'%s: %s; failing because "
                   "CHORUS_PLUGIN_STRICT=1", candidateLabel(lib), where, reason);
  if (strcmp(lib->lastWarn, reason) != 0) {
    snprintf(lib->lastWarn, sizeof(lib->lastWarn), "%s", reason);
    WARN("NET/Plugin: cannot use net plugin '%s'%s: %s; %s", candidateLabel(lib), where, reason,
         next == NULL ? "no more candidates"
         : next->fallback ? "falling back to Chorus's socket plugin (CHORUS_PLUGIN_STRICT=1 makes this an error)"
                          : "trying the next one");
  }
  return ncclSuccess;
}

/* Initialise a loaded library for one communicator and check it has a usable device. On failure
 * writes why into reason (the plugin's ctx, if any, is finalized again). */
static ncclResult_t initForComm(struct chrNetLib* lib, uint64_t commHash, int trafficClass, struct chrNet** out,
                                char* reason, size_t reasonCap) {
  char section[64 + 8] = "net.";
  size_t len = strlen(section);
  for (const char* c = lib->name; *c && len + 1 < sizeof(section); c++) section[len++] = (char)tolower((unsigned char)*c);
  section[len] = '\0';
  chrConfigExportSection(section); /* plugins written for NCCL read their settings from the environment */

  ncclNetCommConfig_v12_t config = {.trafficClass = trafficClass};
  void* ctx = NULL;
  ncclResult_t res = lib->init(lib, &ctx, commHash, &config, chrLog, chrProfilerNetCallback);
  chrNetAdaptTakeReported();
  if (res != ncclSuccess) {
    snprintf(reason, reasonCap, "init returned %d", (int)res);
    return ncclSystemError;
  }
  int ndev = 0;
  res = lib->table.devices(&ndev);
  if (res != ncclSuccess || ndev <= 0) {
    if (res != ncclSuccess) snprintf(reason, reasonCap, "devices() returned %d", (int)res);
    else snprintf(reason, reasonCap, "devices() returned %d devices", ndev);
    goto fail_finalize;
  }
  ncclNetProperties_v12_t props;
  memset(&props, 0, sizeof(props));
  res = lib->getProperties(lib, 0, &props);
  chrNetAdaptTakeReported();
  if (res != ncclSuccess) {
    snprintf(reason, reasonCap, "getProperties(0) returned %d", (int)res);
    goto fail_finalize;
  }
  int typeOk = props.netDeviceType == NCCL_NET_DEVICE_HOST ||
               (props.netDeviceType == NCCL_NET_DEVICE_UNPACK && props.netDeviceVersion == NCCL_NET_DEVICE_UNPACK_VERSION);
  if (!typeOk) {
    snprintf(reason, reasonCap, "device 0 has an unsupported offload type %d (version 0x%x)", (int)props.netDeviceType,
             props.netDeviceVersion);
    goto fail_finalize;
  }
  struct chrNet* net = calloc(1, sizeof(*net));
  if (net == NULL) {
    snprintf(reason, reasonCap, "out of memory");
    goto fail_finalize;
  }
  net->ncclNet = &lib->table;
  net->ctx = ctx;
  net->ndev = ndev;
  net->version = lib->version;
  net->name = lib->name;
  net->path = lib->dl.path;
  net->commHash = commHash;
  net->lib = lib;
  *out = net;
  return ncclSuccess;

fail_finalize:
  if (lib->table.finalize != NULL) lib->table.finalize(ctx);
  chrNetAdaptTakeReported();
  return ncclSystemError;
}

static void appendTried(char* buf, size_t cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendTried(char* buf, size_t cap, const char* fmt, ...) {
  size_t used = strnlen(buf, cap);
  if (used + 3 >= cap) return;
  if (used > 0) {
    memcpy(buf + used, "; ", 3);
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, cap - used, fmt, ap);
  va_end(ap);
}

static ncclResult_t openLocked(uint64_t commHash, const char* netName, int trafficClass, struct chrNet** out) {
  CHECK(parseCandidates());
  if (netDisabled) {
    if (!netDisabledLogged) INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: net plugins disabled (NCCL_NET_PLUGIN=none)");
    netDisabledLogged = 1;
    return ncclSuccess;
  }
  const char* wanted = (netName != NULL && netName[0] != '\0') ? netName : chrParamStr(CHR_P_NET);
  int strict = chrParamInt(CHR_P_PLUGIN_STRICT) != 0;
  char tried[2048] = "";
  char reason[512];
  int nameMatched = 0;

  for (int i = 0; i < netCount; i++) {
    struct chrNetLib* lib = netLibs[i];
    const struct chrNetLib* next = i + 1 < netCount ? netLibs[i + 1] : NULL;
    int justLoaded;
    ensureLoaded(lib, &justLoaded);
    if (justLoaded)
      INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: loaded net plugin '%s' from %s (ABI v%d)", lib->name, lib->dl.path,
           lib->version);
    if (!lib->usable) {
      appendTried(tried, sizeof(tried), "'%s': %s", candidateLabel(lib), lib->failReason);
      CHECK(candidateFailed(lib, lib->failReason, strict, next));
      continue;
    }
    if (wanted[0] != '\0' && strcasecmp(lib->name, wanted) != 0) {
      appendTried(tried, sizeof(tried), "'%s': named %s, not %s", candidateLabel(lib), lib->name, wanted);
      continue;
    }
    nameMatched = 1;
    if (initForComm(lib, commHash, trafficClass, out, reason, sizeof(reason)) == ncclSuccess) {
      INFO(NCCL_INIT | NCCL_NET, "NET/Plugin: comm 0x%llx uses net plugin %s (ABI v%d, %d device%s)",
           (unsigned long long)commHash, lib->name, lib->version, (*out)->ndev, (*out)->ndev == 1 ? "" : "s");
      return ncclSuccess;
    }
    appendTried(tried, sizeof(tried), "'%s' (%s): %s", candidateLabel(lib), lib->name, reason);
    CHECK(candidateFailed(lib, reason, strict, next));
  }
  if (wanted[0] != '\0' && !nameMatched)
    return chrFail(ncclInvalidUsage, "NET/Plugin: no net plugin named '%s' (NCCL_NET / config.netName); tried: %s",
                   wanted, tried[0] ? tried : "nothing (NCCL_NET_PLUGIN is empty)");
  return chrFail(ncclSystemError, "NET/Plugin: no usable net plugin; tried: %s",
                 tried[0] ? tried : "nothing (NCCL_NET_PLUGIN is empty)");
}

ncclResult_t chrNetOpen(uint64_t commHash, const char* netName, int trafficClass, struct chrNet** out) {
  if (out == NULL) return chrFail(ncclInternalError, "chrNetOpen: NULL output");
  *out = NULL;
  pthread_mutex_lock(&netLock);
  ncclResult_t res = openLocked(commHash, netName, trafficClass, out);
  pthread_mutex_unlock(&netLock);
  return res;
}

ncclResult_t chrNetClose(struct chrNet* net) {
  if (net == NULL) return ncclSuccess;
  ncclResult_t res = ncclSuccess;
  if (net->ncclNet->finalize != NULL) {
    res = net->ncclNet->finalize(net->ctx);
    if (res != ncclSuccess && !chrNetAdaptTakeReported())
      res = chrFail(res, "net plugin %s: finalize returned %d", net->name, (int)res);
  }
  TRACE(NCCL_NET, "net %s: closed ctx %p of comm 0x%llx", net->name, net->ctx, (unsigned long long)net->commHash);
  free(net);
  return res;
}

/* ---- description for chorus-info --------------------------------------------------------------- */

void chrNetDescribe(FILE* out) {
  pthread_mutex_lock(&netLock);
  if (parseCandidates() != ncclSuccess) {
    fprintf(out, "net plugins: cannot read NCCL_NET_PLUGIN\n");
    pthread_mutex_unlock(&netLock);
    return;
  }
  fprintf(out, "net plugins (NCCL_NET_PLUGIN=%s):\n", chrParamStr(CHR_P_NET_PLUGIN));
  if (netDisabled) fprintf(out, "  none: net plugins disabled\n");
  for (int i = 0; i < netCount; i++) {
    struct chrNetLib* lib = netLibs[i];
    int justLoaded;
    ensureLoaded(lib, &justLoaded);
    const char* role = lib->fallback ? " (the fallback)" : "";
    if (lib->usable)
      fprintf(out, "  %s%s: %s: name %s, ABI v%d\n", candidateLabel(lib), role, lib->dl.path, lib->name, lib->version);
    else
      fprintf(out, "  %s%s: not usable%s%s%s: %s\n", candidateLabel(lib), role, lib->dl.path[0] ? " (" : "",
              lib->dl.path, lib->dl.path[0] ? ")" : "", lib->failReason);
  }
  pthread_mutex_unlock(&netLock);
}
