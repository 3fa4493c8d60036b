/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * args.h: the command-line values of the tools (chorus-perf, chorus-info, chorus-netcheck), read
 * strictly: a value with anything after the number ("64X"), a sign where none is allowed or a value
 * out of range is refused, never taken as its leading digits the way atoi or strtod alone would.
 * Each parser returns 0 and sets *out on success, -1 (leaving *out alone) otherwise; the caller
 * names the option in its message.
 */
#ifndef CHORUS_TOOLS_ARGS_H_
#define CHORUS_TOOLS_ARGS_H_

#include <stddef.h>
#include <stdint.h>

/* A byte count: a number (decimals allowed) with an optional K, M or G suffix (powers of 1024) and
 * an optional B after it. */
int chrArgSize(const char* s, size_t* out);

/* A decimal integer in [lo, hi]. */
int chrArgInt(const char* s, long lo, long hi, int* out);

/* A finite number; the caller checks its range. */
int chrArgDouble(const char* s, double* out);

/* An unsigned 64-bit integer, decimal, 0x hexadecimal or 0 octal; no sign. */
int chrArgU64(const char* s, uint64_t* out);

/* Prints "chorus-<tool> <version>" (Chorus's version, chorus.h) on stdout, for --version. */
void chrArgPrintVersion(const char* tool);

#endif /* CHORUS_TOOLS_ARGS_H_ */
