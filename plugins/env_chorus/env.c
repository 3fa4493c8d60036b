/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.c: the reference env plugin, libnccl-env-chorus.so. It answers getEnv from a KEY=VALUE file
 * named by CHORUS_ENV_PLUGIN_FILE (say, a site-wide settings file), and with getenv for names the
 * file does not have: the file wins over the environment. It exports ncclEnvPlugin_v2 and _v1, so
 * Chorus and NVIDIA's NCCL from 2.28.7 on load it.
 *
 * The settings are read once, by init, and do not change until finalize: every answer points into
 * them, so it stays valid as long as the ABI asks (until finalize). Nothing is written after init,
 * so getEnv is safe from any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "env_chorus.h"
#include "plugin/env.h"

#define EC_EXPORT __attribute__((visibility("default")))

static struct ecSettings settings;
static int ready; /* init succeeded and finalize has not run */

static ncclResult_t initV2(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix,
                           ncclDebugLogger_t log) {
  (void)ncclMajor;
  (void)ncclMinor;
  (void)ncclPatch;
  (void)suffix;
  const char* path = getenv(EC_FILE_VAR);
  if (path == NULL || path[0] == '\0') {
    if (log) log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "Chorus env plugin: " EC_FILE_VAR " is not set");
    return ncclInvalidUsage;
  }
  ecSettingsFree(&settings); /* a second init reads the file again */
  ready = 0;
  char err[512];
  if (ecSettingsRead(path, &settings, err, sizeof(err)) != 0) {
    if (log) log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, "Chorus env plugin: %s", err);
    return ncclInvalidUsage;
  }
  ready = 1;
  if (log) log(NCCL_LOG_INFO, NCCL_INIT | NCCL_ENV, __FILE__, __LINE__, "Chorus env plugin: %d settings from %s",
               settings.n, path);
  return ncclSuccess;
}

static ncclResult_t initV1(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix) {
  return initV2(ncclMajor, ncclMinor, ncclPatch, suffix, NULL); /* v1 gives no logger */
}

static ncclResult_t finalize(void) {
  ready = 0;
  ecSettingsFree(&settings);
  return ncclSuccess;
}

static const char* getEnv(const char* name) {
  if (name == NULL) return NULL;
  const char* v = ready ? ecSettingsFind(&settings, name) : NULL;
  return v != NULL ? v : getenv(name);
}

EC_EXPORT const ncclEnv_v2_t ncclEnvPlugin_v2 = {
    .name = EC_PLUGIN_NAME,
    .init = initV2,
    .finalize = finalize,
    .getEnv = getEnv,
};

EC_EXPORT const ncclEnv_v1_t ncclEnvPlugin_v1 = {
    .name = EC_PLUGIN_NAME,
    .init = initV1,
    .finalize = finalize,
    .getEnv = getEnv,
};
