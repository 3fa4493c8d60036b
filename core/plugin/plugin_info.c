/*
 * plugin_info.c: chrPluginsDescribe for chorus-info, one section per plugin kind.
 * The profiler loader adds its describe call here.
 */
#include "plugin/plugin_info.h"

#include "plugin/net_plugin.h"
#include "plugin/tuner_plugin.h"

void chrPluginsDescribe(FILE* out) {
  chrNetDescribe(out);
  chrTunerDescribe(out);
}
