/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h: NCCL-style logging (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE) and last-error text.
 *
 * Rule (docs/design.md, "Errors and logs"): the code that first detects an error logs its exact cause once, with chrFail();
 * code that only passes an error on logs nothing more.
 */
#ifndef CHORUS_LOG_H_
#define CHORUS_LOG_H_

#include <stdarg.h>
#include <stdint.h>
#include "plugin/common.h"

/* The logger. Also handed to plugins as their ncclDebugLogger_t, so its signature is fixed. */
void chrLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* 1 when a message of this level and subsystem would be printed (cheap; use to skip costly formatting). */
int chrLogEnabled(ncclDebugLogLevel level, unsigned long flags);

/* Forget the parsed NCCL_DEBUG settings so the next log call re-reads them (ncclResetDebugInit).
 * Reloads the configuration first (chrLogSettingsReload), so changed environment variables are seen. */
void chrLogReset(void);

/* The device number shown in the "[dev]" column of this thread's lines (default 0). */
void chrLogSetDevice(int dev);

#define WARN(...) chrLog(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define INFO(flags, ...) chrLog(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)
#define TRACE(flags, ...) chrLog(NCCL_LOG_TRACE, (flags), __FILE__, __LINE__, __VA_ARGS__)

/* Last error: per thread. The API layer copies it to the communicator when a call on a comm fails
 * (see chrCommNoteError in commstate/comm.h). Both setters keep the message up to 1023 bytes. */
void chrSetLastError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void chrSetLastErrorV(const char* fmt, va_list ap);
const char* chrThreadLastError(void); /* "" when none */
/* Errors are numbered process-wide; the thread's last error has this number (0: none). A comm keeps
 * the number of the error it copied, so ncclGetLastError(comm) can return the newer of the two. */
uint64_t chrThreadLastErrorSeq(void);
uint64_t chrNextErrorSeq(void);
void chrClearLastError(void);

/* The enumerator's name ("ncclRemoteError"), for messages; "unknown result" for other values. */
const char* chrResultName(ncclResult_t res);

/* Log `fmt` as a WARN with the caller's file:line, store it as the thread's last error, return `res`. */
ncclResult_t chrFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define chrFail(res, ...) chrFailAt((res), __FILE__, __LINE__, __VA_ARGS__)

/* ---- what the logger asks of the configuration -------------------------------------------------
 * Declared here, answered one layer up by config/log_settings.c: the logger sits under config/
 * (docs/design.md, "Layout") and knows no parameter table. Each call may load the configuration,
 * which never logs while it loads. */
struct chrLogSettings {
  const char* level;  /* NCCL_DEBUG */
  const char* subsys; /* NCCL_DEBUG_SUBSYS */
  const char* file;   /* NCCL_DEBUG_FILE */
};
/* The current values, never NULL ("" when unset); valid for the life of the process. */
void chrLogSettingsRead(struct chrLogSettings* out);
/* One INFO ENV line per parameter that is not at its default (the logger calls it once it works). */
void chrLogSettingsReport(void);
/* Re-read the environment and the files (chrLogReset). */
void chrLogSettingsReload(void);

#endif /* CHORUS_LOG_H_ */
