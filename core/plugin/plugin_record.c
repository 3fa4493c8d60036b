/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_record.c: the steps the tuner and profiler loaders share (plugin_record.h). */
#include "plugin/plugin_record.h"

#include <stdio.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/net_adapter.h"
#include "plugin/net_plugin.h"

int chrPluginRecordOpen(struct chrPluginRecord* rec, const char* prefix, const char* value) {
  snprintf(rec->label, sizeof(rec->label), "%s%s", value[0] ? value : prefix, value[0] ? "" : ".so");
  if (chrPluginOpen(prefix, value, &rec->dl) != 0) {
    snprintf(rec->failReason, sizeof(rec->failReason), "cannot open: %s", rec->dl.reason);
    return 0;
  }
  return 1;
}

void chrPluginRecordBorrow(struct chrPluginRecord* rec, const struct chrNet* net) {
  snprintf(rec->label, sizeof(rec->label), "net plugin %s", net->name);
  rec->dl = net->lib->dl;
  rec->borrowed = 1;
  rec->netKey = net->lib;
}

int chrPluginRecordFind(struct chrPluginRecord* rec, const char* const* symbols, int n, const void** table) {
  for (int i = 0; i < n; i++) {
    const void* t = chrPluginSymbol(&rec->dl, symbols[i]);
    if (t != NULL) {
      *table = t;
      return i;
    }
  }
  return -1;
}

void chrPluginRecordDescribe(const struct chrPluginRecord* rec, char* where, size_t cap) {
  chrPluginDescribe(&rec->dl, rec->label, rec->usable, rec->name, rec->version, where, cap);
}

ncclResult_t chrPluginRecordFailed(struct chrPluginRecord* rec, const char* kind, const char* what,
                                   const char* without, const char* reason, int strict) {
  char where[CHR_PLUGIN_PATH_MAX + 128];
  chrPluginRecordDescribe(rec, where, sizeof(where));
  if (strict)
    return chrFail(ncclInvalidUsage, "%s/Plugin: cannot use %s plugin '%s'%s: %s; failing because "
                   "CHORUS_PLUGIN_STRICT=1", kind, what, rec->label, where, reason);
  if (strcmp(rec->lastWarn, reason) != 0) {
    snprintf(rec->lastWarn, sizeof(rec->lastWarn), "%s", reason);
    WARN("%s/Plugin: cannot use %s plugin '%s'%s: %s; %s", kind, what, rec->label, where, reason, without);
  }
  return ncclSuccess;
}
