/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_info.c: chrPluginsDescribe for chorus-info, one section per plugin kind.
 */
#include "plugin/plugin_info.h"

#include "config/env_plugin.h"
#include "plugin/net_plugin.h"
#include "plugin/profiler_plugin.h"
#include "plugin/tuner_plugin.h"

void chrPluginsDescribe(FILE* out) {
  chrEnvPluginDescribe(out);
  chrNetDescribe(out);
  chrTunerDescribe(out);
  chrProfilerDescribe(out);
}
