/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_check.c: is the configuration usable? Checks of single values for the loader, and
 * chrConfigValidate, which reports the result of a load at communicator init.
 *
 * Every value is checked as it is loaded (config_load.c), so a load is checked exactly once and
 * chrConfigValidate only reads the verdict of the current store: cheap enough for every init.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_store.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "config/env_plugin.h"
#include "config/net_settings.h"
#include "socket/socket.h"

/* ---- one value --------------------------------------------------------------------------------- */

static int checkInt(int id, const char* value, int64_t* out, char* why, size_t cap) {
  const chrParamDesc* d = &chrParamTable[id];
  int64_t v;
  const char* what = NULL;
  if (chrConfigParseInt(value, &v) != 0) what = "is not an integer";
  else if (v < d->min || v > d->max) what = "is out of range";
  if (what) {
    snprintf(why, cap, "%s; accepted: an integer from %lld to %lld", what, (long long)d->min, (long long)d->max);
    return -1;
  }
  *out = v;
  return 0;
}

/* CHORUS_TRANSPORT: the modes transport/connect.c knows ("" is auto). */
static int checkTransport(const char* value, char* why, size_t cap) {
  if (value[0] == '\0' || !strcmp(value, "auto") || !strcmp(value, "net") || !strcmp(value, "shm")) return 0;
  snprintf(why, cap, "is not a transport; accepted: auto, net, shm");
  return -1;
}

static int checkFamily(const char* value, char* why, size_t cap) {
  int family;
  chrSockErr err;
  if (chrSockParseFamily(value, &family, &err) == ncclSuccess) return 0;
  snprintf(why, cap, "is not valid: %s", err.msg);
  return -1;
}

static int checkAlgoProto(int id, const char* value, char* why, size_t cap) {
  char what[400];
  ncclResult_t res = id == CHR_P_ALGO ? chrAlgoSettingCheck(value, what, sizeof(what))
                                      : chrProtoSettingCheck(value, what, sizeof(what));
  if (res == ncclSuccess) return 0;
  snprintf(why, cap, "is not valid: %s", what);
  return -1;
}

/* CHORUS_COST_*: the cost model's latencies and bandwidths. Zero or a negative value would let an
 * algorithm look free (or divide by zero); the upper bound only catches a unit slip (ns for us). */
#define CHR_COST_VALUE_MAX 1e6
static int checkCostNumber(const char* value, char* why, size_t cap) {
  double v;
  if (chrConfigParseNumber(value, &v) == 0 && v > 0 && v <= CHR_COST_VALUE_MAX) return 0;
  snprintf(why, cap, "is not valid; accepted: a decimal number above 0 and at most %g", CHR_COST_VALUE_MAX);
  return -1;
}

/* NCCL_NET_GDR_LEVEL, NCCL_NETDEVS_POLICY: the topology's settings (net_settings.h). */
static int checkNetSetting(int id, const char* value, char* why, size_t cap) {
  int a, b;
  return id == CHR_P_NET_GDR_LEVEL ? chrConfigParseGdrLevel(value, &a, why, cap)
                                   : chrConfigParseNetDevsPolicy(value, &a, &b, why, cap);
}

int chrConfigCheckValue(int id, const char* value, int64_t* intValue, char* why, size_t cap) {
  if (chrParamTable[id].isInt) return checkInt(id, value, intValue, why, cap);
  switch (id) {
    case CHR_P_ALGO:
    case CHR_P_PROTO: return checkAlgoProto(id, value, why, cap);
    case CHR_P_TRANSPORT: return checkTransport(value, why, cap);
    case CHR_P_SOCKET_FAMILY: return checkFamily(value, why, cap);
    case CHR_P_NET_GDR_LEVEL:
    case CHR_P_NETDEVS_POLICY: return checkNetSetting(id, value, why, cap);
    case CHR_P_COST_SHM_RING_SIMPLE_LATENCY_US:
    case CHR_P_COST_SHM_RING_SIMPLE_BANDWIDTH_GBS:
    case CHR_P_COST_SHM_TREE_SIMPLE_LATENCY_US:
    case CHR_P_COST_SHM_TREE_SIMPLE_BANDWIDTH_GBS:
    case CHR_P_COST_NET_RING_SIMPLE_LATENCY_US:
    case CHR_P_COST_NET_RING_SIMPLE_BANDWIDTH_GBS:
    case CHR_P_COST_NET_TREE_SIMPLE_LATENCY_US:
    case CHR_P_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS: return checkCostNumber(value, why, cap);
    /* NCCL_DEBUG and NCCL_DEBUG_SUBSYS are not checked: NCCL ignores what it does not know there, and
     * an init that failed over a log setting could not even log why. The rest are free text. */
    default: return 0;
  }
}

/* ---- the verdict, at init ---------------------------------------------------------------------- */

/* Unknown names already warned about, by this process (a reload must not repeat them). */
static pthread_mutex_t warnedLock = PTHREAD_MUTEX_INITIALIZER;
static char** warned;
static int nWarned, capWarned;
/* The last store whose notes went out: the common case (no reload since) costs one atomic load. */
static _Atomic(const chrConfigStore*) notedStore;

static int alreadyWarned(const char* name) {
  for (int i = 0; i < nWarned; i++)
    if (strcmp(warned[i], name) == 0) return 1;
  if (nWarned == capWarned) {
    int cap = capWarned ? 2 * capWarned : 16;
    char** grown = realloc(warned, (size_t)cap * sizeof(*grown));
    if (!grown) return 0; /* out of memory: the worst outcome is the same warning again */
    warned = grown;
    capWarned = cap;
  }
  char* copy = strdup(name);
  if (copy) warned[nWarned++] = copy;
  return 0;
}

static void warnUnknownNames(const chrConfigStore* store) {
  if (atomic_load_explicit(&notedStore, memory_order_acquire) == store) return;
  pthread_mutex_lock(&warnedLock);
  if (atomic_load_explicit(&notedStore, memory_order_relaxed) != store) {
    for (int i = 0; i < store->nNotes; i++)
      if (!alreadyWarned(store->notes[i].name)) WARN("config: %s", store->notes[i].text);
    atomic_store_explicit(&notedStore, store, memory_order_release);
  }
  pthread_mutex_unlock(&warnedLock);
}

ncclResult_t chrConfigValidate(void) {
  const chrConfigStore* store = chrConfigCurrent();
  chrEnvPluginFlushLog(); /* what the env plugin logged while the store was built, when nothing could log */
  warnUnknownNames(store);
  if (store->errors.len == 0) return ncclSuccess;
  /* One message with every error, so the last error alone tells the whole story; '\n' -> "; ". */
  char text[1024];
  size_t o = 0;
  for (const char* p = store->errors.text; *p && o + 3 < sizeof(text); p++) {
    if (*p != '\n') text[o++] = *p;
    else if (p[1]) text[o++] = ';', text[o++] = ' ';
  }
  text[o] = '\0';
  return chrFail(ncclInvalidUsage, "config: %s", text);
}
