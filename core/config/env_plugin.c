/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env_plugin.c: the env plugin loader (env_plugin.h), the only code that calls an env plugin's slots.
 *
 * Layering. The configuration (config/) is a bottom layer, and the env plugin must be in place
 * before its first store is built, which the logger may start from anywhere. So this loader lives in
 * config/, beside its one caller, the config loader, and needs nothing above that layer: libc,
 * util/plugin_open.c (the library search, itself libc only), the ABI headers and the logger's entry
 * point; and it never logs while a store is being built. A hook registered from above could not
 * promise to be in place before that first build (only a constructor could, and a static link drops
 * an object nothing refers to).
 *
 * Versions. ncclEnvPlugin_v2 is called as it is; a v1 table is copied into a v2 one whose init is
 * initV1, which drops the logger (v1's init has none).
 *
 * Failures. NCCL's README says a plugin whose init fails gives way to the plain environment, while
 * NCCL 2.30.7 returns the error. Chorus does what it does for its other plugins: a plugin that was
 * asked for (NCCL_ENV_PLUGIN set) or found (libnccl-env.so with an env table) and cannot be used (not
 * found, no symbol, a NULL slot, init failing) gets one WARN and getenv is read instead; with
 * CHORUS_PLUGIN_STRICT=1 it is an error of the configuration, so communicator init fails. An absent
 * libnccl-env.so is the normal case and says nothing; one that opens without an env table is WARNed,
 * never an error. The config loader reports all of it (chrEnvSource.failure), through
 * chrConfigValidate, as it reports every problem of a load.
 *
 * Logging. While a store is being built the logger cannot run (it reads its own settings from that
 * store), so the logger handed to a v2 init keeps what the plugin logs from inside init and getEnv,
 * and chrEnvPluginFlushLog writes it later. Logged from anywhere else, it goes out at once.
 */
#include "config/env_plugin.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log/log.h"
#include "nccl.h"
#include "plugin/env.h"
#include "util/plugin_open.h"

#define ENV_PREFIX "libnccl-env"
#define ENV_KEPT_LINES 32 /* lines kept while the logger cannot run; more are counted, not kept */
#define ENV_LINE_MAX 1024

#ifndef NCCL_SUFFIX
#define NCCL_SUFFIX ""
#endif

/* The one env plugin of the process. Written once by load(); then only `finalized` changes. */
static struct {
  char value[CHR_PLUGIN_PATH_MAX]; /* NCCL_ENV_PLUGIN, trimmed ("" when unset) */
  char label[CHR_PLUGIN_PATH_MAX + 8]; /* the value, or the default name, for messages */
  chrPluginLib dl;
  int disabled;              /* NCCL_ENV_PLUGIN=none */
  int version;               /* ABI version of the table found; 0: none */
  ncclEnv_v2_t table;        /* what is called: the v2 table, or the v1 one with initV1 */
  const ncclEnv_v1_t* v1;    /* the v1 table behind initV1 */
  int finalized;             /* finalize ran: getenv from now on (guarded by envLock) */
  struct chrEnvSource source;
} env;
static pthread_once_t envOnce = PTHREAD_ONCE_INIT;
static pthread_mutex_t envLock = PTHREAD_MUTEX_INITIALIZER; /* getEnv calls against each other and finalize */

/* ---- the logger handed to the plugin ----------------------------------------------------------- */

struct keptLine {
  ncclDebugLogLevel level;
  unsigned long flags;
  char file[128];
  int line;
  char text[ENV_LINE_MAX];
};
static struct keptLine kept[ENV_KEPT_LINES];
static int nKept, nDropped;
static pthread_mutex_t keptLock = PTHREAD_MUTEX_INITIALIZER;
static __thread int deferring; /* > 0 while this thread runs the plugin for the config loader */

static void keepLine(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* text) {
  pthread_mutex_lock(&keptLock);
  if (nKept < ENV_KEPT_LINES) {
    struct keptLine* k = &kept[nKept++];
    k->level = level;
    k->flags = flags;
    snprintf(k->file, sizeof(k->file), "%s", file ? file : "?");
    k->line = line;
    snprintf(k->text, sizeof(k->text), "%s", text);
  } else {
    nDropped++;
  }
  pthread_mutex_unlock(&keptLock);
}

static void pluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void pluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char text[ENV_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (deferring) keepLine(level, flags, file, line, text);
  else chrLog(level, flags, file, line, "%s", text);
}

/* The loader's own INFO lines: it runs inside the first store build, so they are kept too. */
#define KEEP_INFO(...) pluginLog(NCCL_LOG_INFO, NCCL_INIT | NCCL_ENV, __FILE__, __LINE__, __VA_ARGS__)

void chrEnvPluginFlushLog(void) {
  /* Copied out first: logging under keptLock could wait on the logger's init, which may be running
   * a store build whose plugin call waits on keptLock. */
  struct keptLine* lines = NULL;
  pthread_mutex_lock(&keptLock);
  int n = nKept, dropped = nDropped;
  if (n > 0 && (lines = malloc((size_t)n * sizeof(*lines))) != NULL) memcpy(lines, kept, (size_t)n * sizeof(*lines));
  nKept = nDropped = 0;
  pthread_mutex_unlock(&keptLock);
  for (int i = 0; lines != NULL && i < n; i++)
    chrLog(lines[i].level, lines[i].flags, lines[i].file, lines[i].line, "%s", lines[i].text);
  if (dropped > 0)
    WARN("ENV/Plugin: %d more lines the env plugin logged while the configuration loaded were dropped", dropped);
  free(lines);
}

/* ---- loading ------------------------------------------------------------------------------------ */

static ncclResult_t initV1(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix, ncclDebugLogger_t log) {
  (void)log; /* v1 takes no logger */
  return env.v1->init(major, minor, patch, suffix);
}

/* A plugin that cannot be used: why, for the config loader; strict: CHORUS_PLUGIN_STRICT=1 makes it an error. */
static void failed(int strict, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void failed(int strict, const char* fmt, ...) {
  char reason[CHR_PLUGIN_REASON_MAX + 64], where[CHR_PLUGIN_PATH_MAX + 128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  chrPluginDescribe(&env.dl, env.label, env.version > 0, env.table.name ? env.table.name : "?", env.version, where,
                    sizeof(where));
  snprintf(env.source.failure, sizeof(env.source.failure), "cannot use env plugin '%s'%s: %s", env.label, where,
           reason);
  env.source.strict = strict;
}

/* Binds the table of `version` into env.table. Returns the name of a NULL slot, or NULL when all are set. */
static const char* bindTable(const void* t, int version) {
  if (version == 2) {
    env.table = *(const ncclEnv_v2_t*)t;
    if (env.table.init == NULL) return "init";
  } else {
    env.v1 = t;
    env.table = (ncclEnv_v2_t){env.v1->name, initV1, env.v1->finalize, env.v1->getEnv};
    if (env.v1->init == NULL) return "init";
  }
  if (env.table.name == NULL) return "name";
  if (env.table.finalize == NULL) return "finalize";
  return env.table.getEnv == NULL ? "getEnv" : NULL;
}

static void finalizeAtExit(void) {
  pthread_mutex_lock(&envLock);
  ncclResult_t res = ncclSuccess;
  if (!env.finalized) res = env.table.finalize();
  env.finalized = 1;
  pthread_mutex_unlock(&envLock);
  if (res != ncclSuccess)
    WARN("ENV/Plugin: env plugin %s (ABI v%d): finalize returned %d", env.table.name, env.version, (int)res);
}

/* Finds, binds and initialises the plugin NCCL_ENV_PLUGIN names, or says in env.source why not. */
static void openPlugin(void) {
  const char* v = getenv("NCCL_ENV_PLUGIN"); /* the one variable never asked of the plugin */
  if (v == NULL) v = "";
  chrPluginTrimCopy(env.value, sizeof(env.value), v, v + strlen(v));
  const int asked = env.value[0] != '\0';
  snprintf(env.label, sizeof(env.label), "%s%s", asked ? env.value : ENV_PREFIX, asked ? "" : ".so");
  if (strcasecmp(env.value, "none") == 0) {
    env.disabled = 1;
    KEEP_INFO("ENV/Plugin: env plugins disabled (NCCL_ENV_PLUGIN=none); parameters are read with getenv");
    return;
  }
  if (chrPluginOpen(ENV_PREFIX, env.value, &env.dl) != 0) {
    if (asked) failed(1, "cannot open: %s", env.dl.reason);
    else KEEP_INFO("ENV/Plugin: no env plugin (" ENV_PREFIX ".so not found); parameters are read with getenv");
    return;
  }
  static const char* const symbols[] = {"ncclEnvPlugin_v2", "ncclEnvPlugin_v1"};
  const void* table = NULL;
  for (int i = 0; i < 2 && table == NULL; i++)
    if ((table = chrPluginSymbol(&env.dl, symbols[i])) != NULL) env.version = 2 - i;
  if (table == NULL) {
    failed(asked, "no ncclEnvPlugin_v2..v1 symbol");
    return;
  }
  const char* nullSlot = bindTable(table, env.version);
  if (nullSlot != NULL) {
    failed(1, "its ncclEnvPlugin_v%d table has a NULL %s slot", env.version, nullSlot);
    return;
  }
  ncclResult_t res = env.table.init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX, pluginLog);
  if (res != ncclSuccess) {
    failed(1, "init returned %d", (int)res);
    return;
  }
  env.source.plugin = 1;
  env.source.label = "env plugin";
  atexit(finalizeAtExit); /* NCCL finalizes its env plugin at exit too */
  KEEP_INFO("ENV/Plugin: loaded env plugin '%s' from %s (ABI v%d); parameters are read through its getEnv",
            env.table.name, env.dl.path, env.version);
}

static void load(void) {
  env.source.label = "env";
  deferring++; /* this runs inside the first store build: nothing may log */
  openPlugin();
  deferring--;
}

const struct chrEnvSource* chrEnvSourceOpen(void) {
  pthread_once(&envOnce, load);
  return &env.source;
}

char* chrEnvGet(const char* name) {
  pthread_once(&envOnce, load);
  pthread_mutex_lock(&envLock);
  const char* value;
  if (env.source.plugin && !env.finalized) {
    deferring++;
    value = env.table.getEnv(name);
    deferring--;
  } else {
    value = getenv(name);
  }
  char* copy = value != NULL ? strdup(value) : NULL; /* before the next getEnv of this name may free it */
  pthread_mutex_unlock(&envLock);
  if (value != NULL && copy == NULL) {
    /* The configuration is read before anything can report an error (as config_load.c does). */
    fputs("chorus: out of memory while reading the configuration\n", stderr);
    abort();
  }
  return copy;
}

/* ---- description for chorus-info --------------------------------------------------------------- */

void chrEnvPluginDescribe(FILE* out) {
  pthread_once(&envOnce, load);
  fprintf(out, "env plugin (NCCL_ENV_PLUGIN=%s):\n", env.value);
  if (env.disabled)
    fprintf(out, "  none: env plugins disabled; parameters are read with getenv\n");
  else if (env.source.plugin)
    fprintf(out, "  %s: %s: name %s, ABI v%d; parameters are read through its getEnv (source \"env plugin\")\n",
            env.label, env.dl.path, env.table.name, env.version);
  else if (env.source.failure[0])
    fprintf(out, "  %s; parameters are read with getenv\n", env.source.failure);
  else
    fprintf(out, "  no %s (tried %s); parameters are read with getenv\n", env.label, env.dl.tried);
}
