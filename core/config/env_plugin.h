/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env_plugin.h: the env plugin (NCCL_ENV_PLUGIN), the environment as the configuration reads it.
 *
 * One library per process, chosen by NCCL_ENV_PLUGIN (read with the real getenv: a name, a path,
 * STATIC_PLUGIN, or "none"; unset: libnccl-env.so) by the search rule of plugin_open.h, loaded and
 * initialised once, before the first configuration store is built, and finalized at process exit.
 * While it is in use, every parameter of params.def (and CHORUS_CONF / NCCL_CONF_FILE, which locate
 * the config file) is asked of its getEnv instead of getenv, and chorus-info shows "env plugin" as
 * the source of those values. When none can be used, getenv is.
 *
 * The config loader (config/config_load.c) is the one caller of chrEnvSourceOpen and chrEnvGet, so the
 * env plugin's loader lives here in config/, not with the other loaders in plugin/ (see the top of
 * env_plugin.c).
 */
#ifndef CHORUS_CONFIG_ENV_PLUGIN_H_
#define CHORUS_CONFIG_ENV_PLUGIN_H_

#include <stdio.h>

#define CHR_ENV_FAILURE_MAX 12288 /* label, file and reason: up to 4 KiB each */

/* What the config loader is told about the environment it reads, decided once per process. */
struct chrEnvSource {
  int plugin;        /* 1: an env plugin answers chrEnvGet */
  const char* label; /* the source of the values read through it: "env plugin", or "env" */
  /* "" or why a plugin that was asked for or found is not used: "cannot use env plugin '<label>'
   * (<file>...): <reason>". The config loader reports it (a WARN through chrConfigValidate), */
  char failure[CHR_ENV_FAILURE_MAX];
  int strict; /* and makes it an error of the configuration under CHORUS_PLUGIN_STRICT=1 when this is 1 */
};

/* Loads the env plugin on the first call (thread-safe; logs nothing), then returns the outcome. */
const struct chrEnvSource* chrEnvSourceOpen(void);

/* The value of the variable `name` as the configuration sees it: the plugin's getEnv while one is in
 * use (not after its finalize), else getenv. A copy the caller frees; NULL when unset. Calls are
 * serialised here, so the plugin's getEnv never runs on two threads at once. */
char* chrEnvGet(const char* name);

/* Lines the plugin logged (and the loader's own INFO line) while the configuration was being built,
 * when the logger could not run: written now through the logger. chrConfigValidate calls it. */
void chrEnvPluginFlushLog(void);

/* For chorus-info: NCCL_ENV_PLUGIN, the library in use or why there is none, its name and version. */
void chrEnvPluginDescribe(FILE* out);

#endif /* CHORUS_CONFIG_ENV_PLUGIN_H_ */
