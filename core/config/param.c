/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * param.c: the parameter table (from params.def) and the read side of the configuration:
 * lazy, thread-safe loading of the current store, value and metadata getters, plugin sections.
 * Building a store (environment, INI files) is in config_load.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_store.h"

#define CHR_SHORT_NAME(n) \
  (strncmp((n), "NCCL_", 5) == 0 ? (n) + 5 : strncmp((n), "CHORUS_", 7) == 0 ? (n) + 7 : (n))
/* The type column is STR or INT(min, max): pasting a prefix onto it gives either a plain name or a
 * call of one of these function-like macros, so each row is written once and read here. */
#define CHR_IS_INT_INT(lo, hi) 1
#define CHR_IS_INT_STR 0
#define CHR_MIN_INT(lo, hi) (lo)
#define CHR_MIN_STR 0
#define CHR_MAX_INT(lo, hi) (hi)
#define CHR_MAX_STR 0

const chrParamDesc chrParamTable[CHR_P_COUNT] = {
#define CHR_PARAM(id, name, type, def, section, help) \
  [CHR_P_##id] = {name, CHR_IS_INT_##type, CHR_MIN_##type, CHR_MAX_##type, def, section, help},
#include "config/params.def"
#undef CHR_PARAM
};

static _Atomic(chrConfigStore*) currentStore;
static pthread_mutex_t loadMutex = PTHREAD_MUTEX_INITIALIZER;

const chrConfigStore* chrConfigCurrent(void) {
  chrConfigStore* store = atomic_load_explicit(&currentStore, memory_order_acquire);
  if (store) return store;
  pthread_mutex_lock(&loadMutex);
  store = atomic_load_explicit(&currentStore, memory_order_relaxed);
  if (!store) {
    store = chrConfigBuildStore();
    atomic_store_explicit(&currentStore, store, memory_order_release);
  }
  pthread_mutex_unlock(&loadMutex);
  return store;
}

void chrConfigReload(void) {
  pthread_mutex_lock(&loadMutex);
  chrConfigStore* fresh = chrConfigBuildStore();
  /* The old store stays reachable (and allocated) so pointers handed out earlier remain valid. */
  fresh->retired = atomic_load_explicit(&currentStore, memory_order_relaxed);
  atomic_store_explicit(&currentStore, fresh, memory_order_release);
  pthread_mutex_unlock(&loadMutex);
}

static int validId(chrParamId id) { return (int)id >= 0 && id < CHR_P_COUNT; }

int64_t chrParamInt(chrParamId id) {
  if (!validId(id)) return 0;
  return chrConfigCurrent()->params[id].intValue;
}

const char* chrParamStr(chrParamId id) {
  if (!validId(id)) return "";
  return chrConfigCurrent()->params[id].value;
}

const char* chrParamShown(chrParamId id) {
  const char* v = chrParamStr(id);
  if (id == CHR_P_COMM_SECRET) return v[0] ? "(set)" : "";
  return v;
}

double chrParamNumber(chrParamId id) {
  double v = 0;
  if (!validId(id) || chrConfigParseNumber(chrConfigCurrent()->params[id].value, &v) != 0) return 0;
  return v;
}

const char* chrParamSource(chrParamId id) {
  if (!validId(id)) return "";
  return chrConfigCurrent()->params[id].source;
}

const char* chrParamName(chrParamId id) { return validId(id) ? chrParamTable[id].name : ""; }
const char* chrParamHelp(chrParamId id) { return validId(id) ? chrParamTable[id].help : ""; }
const char* chrParamSection(chrParamId id) { return validId(id) ? chrParamTable[id].section : ""; }
const char* chrParamDefault(chrParamId id) { return validId(id) ? chrParamTable[id].def : ""; }
int chrParamIsInt(chrParamId id) { return validId(id) ? chrParamTable[id].isInt : 0; }

int chrParamLookup(const char* name) {
  if (!name) return -1;
  for (int i = 0; i < CHR_P_COUNT; i++)
    if (strcmp(chrParamTable[i].name, name) == 0) return i;
  return -1;
}

void chrConfigForEachInSection(const char* section, chrSectionVisitor visit, void* arg) {
  if (!section || !visit) return;
  const chrConfigStore* store = chrConfigCurrent();
  for (int i = 0; i < store->nRaw; i++) {
    const chrRawEntry* e = &store->raw[i];
    if (strcasecmp(e->section, section) == 0) visit(arg, e->key, e->value, e->source);
  }
}

void chrConfigForEachSection(void (*visit)(void* arg, const char* section), void* arg) {
  if (!visit) return;
  const chrConfigStore* store = chrConfigCurrent();
  for (int i = 0; i < store->nRaw; i++) {
    const char* section = store->raw[i].section;
    if (section[0] == '\0') continue; /* top-level keys: not a section */
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = strcasecmp(store->raw[j].section, section) == 0;
    if (!seen) visit(arg, section);
  }
}

static void exportOne(void* arg, const char* key, const char* value, const char* source) {
  (void)arg;
  (void)source;
  setenv(key, value, 0); /* 0: a variable the user already set wins */
}

void chrConfigExportSection(const char* section) {
  if (!section) return;
  chrConfigForEachInSection(section, exportOne, NULL);
  /* Then the top-level keys that are not parameters: NCCL exports all of nccl.conf before any plugin
   * loads, and plugins built for NCCL count on it. The section's own keys were set first, so they win. */
  if (section[0] != '\0') chrConfigForEachInSection("", exportOne, NULL);
}

const char* chrConfigProblems(void) { return chrConfigCurrent()->problems.text; }

/* Short names are computed from the table rather than stored in it (params.def gives only the full name). */
const char* chrParamShortName(chrParamId id) { return validId(id) ? CHR_SHORT_NAME(chrParamTable[id].name) : ""; }

int chrConfigIsCoreSection(const char* section) {
  static const char* const fixed[] = {"core", "net", "tuner", "profiler"};
  for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
    if (strcasecmp(section, fixed[i]) == 0) return 1;
  for (int i = 0; i < CHR_P_COUNT; i++)
    if (strcasecmp(section, chrParamTable[i].section) == 0) return 1;
  return 0;
}
