/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/env_v2.h: env plugin ABI version 2 (as in NCCL 2.30). FROZEN.
 *
 * An env plugin is a shared library that exports the object
 *     const ncclEnv_v2_t ncclEnvPlugin_v2;
 * It stands in for the process environment: the core asks its getEnv for every setting it reads,
 * instead of calling getenv. A library may export several versions (ncclEnvPlugin_v2, _v1); the core
 * takes the newest it knows.
 *
 * How the core uses it:
 *  - NCCL_ENV_PLUGIN, read with the real getenv, names the library (a name, a path, STATIC_PLUGIN or
 *    "none"); unset, libnccl-env.so is tried. When no plugin can be used the core reads getenv.
 *  - init is called once per process, before the first getEnv; finalize once, at process exit.
 *  - getEnv may be called many times for the same name (every reload of the configuration asks again).
 *    The core copies each answer at once and never calls getEnv from two threads at a time.
 */
#ifndef CHORUS_PLUGIN_ENV_V2_H_
#define CHORUS_PLUGIN_ENV_V2_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"

/* The object ncclEnvPlugin_v2 (32 bytes on 64-bit, 4 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* Called once per process, before the first getEnv.
   *   ncclMajor, ncclMinor, ncclPatch  the NCCL version the core implements (NCCL_MAJOR, ...)
   *   suffix                           its version suffix (NCCL_SUFFIX), "" when none
   *   logFunction                      the core's logger (thread-safe); the plugin may keep it
   * A failure means the plugin is not used. */
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix,
                       ncclDebugLogger_t logFunction);

  /* Called once at process exit (atexit), after the last getEnv. */
  ncclResult_t (*finalize)(void);

  /* The value of the variable `name`, or NULL when it is unset. The string must stay valid until
   * getEnv is called again for the same name, or finalize. */
  const char* (*getEnv)(const char* name);
} ncclEnv_v2_t;

#ifdef __cplusplus
static_assert(sizeof(ncclEnv_v2_t) == 4 * sizeof(void*), "ncclEnv_v2_t is 4 pointer slots");
static_assert(offsetof(ncclEnv_v2_t, getEnv) == 3 * sizeof(void*), "getEnv is slot 3");
#else
_Static_assert(sizeof(ncclEnv_v2_t) == 4 * sizeof(void*), "ncclEnv_v2_t is 4 pointer slots");
_Static_assert(offsetof(ncclEnv_v2_t, getEnv) == 3 * sizeof(void*), "getEnv is slot 3");
#endif

#endif /* CHORUS_PLUGIN_ENV_V2_H_ */
