/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * param.h: reading configuration parameters.
 *
 * Order that decides a value: the environment (the env plugin's getEnv, when NCCL_ENV_PLUGIN gives
 * one: config/env_plugin.h), then NCCL_CONF_FILE / CHORUS_CONF, then
 * ~/.config/chorus.ini, then /etc/chorus.ini, then the flat NCCL files ~/.nccl.conf and /etc/nccl.conf,
 * then the default in params.def. Files are INI (inih); keys before any [section] are full names.
 * A value that is not valid is not applied (the next level decides) and makes chrConfigValidate fail.
 * Everything is read once, on first use; chrConfigReload() re-reads (tests, ncclResetDebugInit).
 * A getenv() of a parameter anywhere else in the core is a bug.
 */
#ifndef CHORUS_PARAM_H_
#define CHORUS_PARAM_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

typedef enum {
#define CHR_PARAM(id, name, type, def, section, help) CHR_P_##id,
#include "config/params.def"
#undef CHR_PARAM
  CHR_P_COUNT
} chrParamId;

/* Values. Thread-safe; load the config on first call. Str never returns NULL ("" when empty). */
int64_t chrParamInt(chrParamId id);
const char* chrParamStr(chrParamId id);
/* The value as logs and chorus-info show it: a secret (CHORUS_COMM_SECRET) only as "(set)" or "". */
const char* chrParamShown(chrParamId id);
/* A STR parameter that holds a decimal number (its check at load made sure): its value; 0 when it is
 * not a number (a parameter without such a check). */
double chrParamNumber(chrParamId id);

/* Where the value came from: "env", "env plugin", "default", or "<file>:<line>". Valid for the life of
 * the process. */
const char* chrParamSource(chrParamId id);
const char* chrParamName(chrParamId id);
const char* chrParamHelp(chrParamId id);
const char* chrParamSection(chrParamId id);
const char* chrParamDefault(chrParamId id);
int chrParamIsInt(chrParamId id);
int chrParamLookup(const char* name); /* id, or -1; accepts the full name only */
const char* chrParamShortName(chrParamId id); /* name without NCCL_/CHORUS_: its key inside its section */

/* Keys of a plugin's section (e.g. "net.socket"), in file order. */
typedef void (*chrSectionVisitor)(void* arg, const char* key, const char* value, const char* source);
void chrConfigForEachInSection(const char* section, chrSectionVisitor visit, void* arg);
/* Every section name found in the files that is not a core section (for chorus-info). Keys found before
 * any [section] that are not parameters of the table (e.g. NCCL_IB_HCA in a flat nccl.conf) are kept
 * under the section name "" (not visited here; use chrConfigForEachInSection("")). */
void chrConfigForEachSection(void (*visit)(void* arg, const char* section), void* arg);

/* Export a plugin section to the environment before the plugin's init: setenv for each key,
 * never overwriting a variable that is already set. Then the top-level keys that are not parameters
 * (section "", e.g. NCCL_IB_HCA in a flat nccl.conf) are exported the same way, as NCCL exports every
 * key of nccl.conf; the section's own keys win over them. Section "" exports only the top-level keys. */
void chrConfigExportSection(const char* section);

/* Re-read environment and files. Strings handed out before stay valid: the old values are retired,
 * not freed. Concurrent readers see either the old or the new set. */
void chrConfigReload(void);

/* Problems of the current load, one per line, or "": errors (a value that is not valid, a malformed
 * or unreadable file) and unknown names (a CHORUS_ variable or a key of a core section). */
const char* chrConfigProblems(void);

/* Is the configuration usable? Called at every communicator init. Unknown names get one WARN each,
 * once per process, with the closest known name. Errors (a value that is not a number, out of range,
 * or not valid for its parameter; a malformed or unreadable file) fail with ncclInvalidUsage: a WARN
 * and the last error name each one (file:line or environment, the value, what is accepted).
 * The check itself ran when the config was loaded, so this is cheap. */
ncclResult_t chrConfigValidate(void);

#endif /* CHORUS_PARAM_H_ */
