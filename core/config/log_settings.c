/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_settings.c: what the logger asks of the configuration (log/log.h, "what the logger asks of the
 * configuration"). The logger sits under config/ and reads NCCL_DEBUG, NCCL_DEBUG_SUBSYS and
 * NCCL_DEBUG_FILE through these calls, so it needs nothing of the parameter table.
 */
#include <string.h>

#include "config/param.h"
#include "log/log.h"

void chrLogSettingsRead(struct chrLogSettings* out) {
  out->level = chrParamStr(CHR_P_DEBUG);
  out->subsys = chrParamStr(CHR_P_DEBUG_SUBSYS);
  out->file = chrParamStr(CHR_P_DEBUG_FILE);
}

void chrLogSettingsReport(void) {
  if (!chrLogEnabled(NCCL_LOG_INFO, NCCL_ENV)) return;
  for (int i = 0; i < CHR_P_COUNT; i++) {
    const char* source = chrParamSource((chrParamId)i);
    if (strcmp(source, "default") == 0) continue;
    INFO(NCCL_ENV, "%s set by %s to %s", chrParamName((chrParamId)i),
         strcmp(source, "env") == 0 ? "environment" : source, chrParamShown((chrParamId)i));
  }
}

void chrLogSettingsReload(void) { chrConfigReload(); }
