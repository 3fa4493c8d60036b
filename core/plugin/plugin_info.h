/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_info.h: a human-readable description of the plugins, for chorus-info.
 * Implemented by the plugin loader (core/plugin/); until it is, chorus-info links a weak stub.
 */
#ifndef CHORUS_PLUGIN_INFO_H_
#define CHORUS_PLUGIN_INFO_H_

#include <stdio.h>

/* Writes to `out`, for each plugin kind (env, net, tuner, profiler): what was asked for (parameter value),
 * the library found or the exact reason none could be used, its name and ABI version. Does not
 * require a communicator; may load and unload the plugins to find out. */
void chrPluginsDescribe(FILE* out);

#endif /* CHORUS_PLUGIN_INFO_H_ */
