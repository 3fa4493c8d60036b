/*
 * plugin_info.c: chrPluginsDescribe for chorus-info, one section per plugin kind.
 * The tuner and profiler loaders add their describe calls here.
 */
#include "plugin/plugin_info.h"

#include "plugin/net_plugin.h"

void chrPluginsDescribe(FILE* out) {
  chrNetDescribe(out);
}
