/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/env_v1.h: env plugin ABI version 1 (NCCL 2.28.7). FROZEN.
 *
 * An env plugin is a shared library that exports the object
 *     const ncclEnv_v1_t ncclEnvPlugin_v1;
 * It stands in for the process environment: the core asks its getEnv for every setting it reads,
 * instead of calling getenv. The library is chosen by NCCL_ENV_PLUGIN, which is always read with the
 * real getenv (see env_v2.h for the rules the core follows). A library may export several versions;
 * the core takes the newest it knows.
 * Differences from v2: init has no logger argument.
 */
#ifndef CHORUS_PLUGIN_ENV_V1_H_
#define CHORUS_PLUGIN_ENV_V1_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"

/* The object ncclEnvPlugin_v1 (32 bytes on 64-bit, 4 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* Called once per process, before the first getEnv, with the core's NCCL version (major, minor,
   * patch) and version suffix (NCCL_SUFFIX, "" when none). A failure means the plugin is not used. */
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix);

  /* Called once at process exit (atexit), after the last getEnv. */
  ncclResult_t (*finalize)(void);

  /* The value of the variable `name`, or NULL when it is unset. The string must stay valid until
   * getEnv is called again for the same name, or finalize. */
  const char* (*getEnv)(const char* name);
} ncclEnv_v1_t;

#ifdef __cplusplus
static_assert(sizeof(ncclEnv_v1_t) == 4 * sizeof(void*), "ncclEnv_v1_t is 4 pointer slots");
static_assert(offsetof(ncclEnv_v1_t, getEnv) == 3 * sizeof(void*), "getEnv is slot 3");
#else
_Static_assert(sizeof(ncclEnv_v1_t) == 4 * sizeof(void*), "ncclEnv_v1_t is 4 pointer slots");
_Static_assert(offsetof(ncclEnv_v1_t, getEnv) == 3 * sizeof(void*), "getEnv is slot 3");
#endif

#endif /* CHORUS_PLUGIN_ENV_V1_H_ */
