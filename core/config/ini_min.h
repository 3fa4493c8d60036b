/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ini_min.h: a minimal stand-in for inih's ini_parse_stream, used only where libinih is not
 * installed (CHORUS_INI_MIN, set by CMake): GPU machines without the package can still build the
 * whole library. config_load.c checks every line's shape itself before the parser sees it, so this
 * reader needs only the common grammar: [section], key = value (or key: value), ';' and '#' comments
 * at the start of a line, ';' comments after whitespace, surrounding whitespace trimmed.
 */
#ifndef CHORUS_CONFIG_INI_MIN_H_
#define CHORUS_CONFIG_INI_MIN_H_

typedef char* (*chrIniReader)(char* str, int num, void* stream);
typedef int (*chrIniHandler)(void* user, const char* section, const char* name, const char* value);

/* As inih: 0 on success, else the number of the first line with an error (parsing goes on). */
int chrIniParseStream(chrIniReader reader, void* stream, chrIniHandler handler, void* user);

#define ini_parse_stream chrIniParseStream

#endif /* CHORUS_CONFIG_INI_MIN_H_ */
