/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/env.h: every env plugin ABI version, and the unversioned names. The core speaks v2; a v1
 * table is called through a small adapter in core/config/env_plugin.c that drops the logger.
 */
#ifndef CHORUS_PLUGIN_ENV_H_
#define CHORUS_PLUGIN_ENV_H_

#include "plugin/env_v1.h"
#include "plugin/env_v2.h"

typedef ncclEnv_v2_t ncclEnv_t;

/* Name of the object an env plugin built against these headers exports, as a string (for dlsym). */
#define NCCL_ENV_PLUGIN_SYMBOL "ncclEnvPlugin_v2"

#endif /* CHORUS_PLUGIN_ENV_H_ */
