/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_support.h: settings from the environment and random nonces, for plugins (plugins/support).
 *
 * Plugins read their settings with getenv, as NCCL plugins do (the core exports a plugin's INI
 * section into the environment before its init). Like socket/socket.h these helpers never log: they
 * say what went wrong and the plugin reports it with its own logger and prefix.
 */
#ifndef CHORUS_PLUGIN_SUPPORT_H_
#define CHORUS_PLUGIN_SUPPORT_H_

#include <stddef.h>

/* An integer setting (strtol base 0: 12, 0x1f, 017; blanks after it are allowed). Unset or empty:
 * *out = def, returns 0. A value that is not a whole number in [lo, hi] is refused, never clamped:
 * *out = def, returns -1, and err (errLen bytes; may be NULL) says `NAME="v" is not a whole number
 * in lo..hi`. Pass LONG_MIN..LONG_MAX to ask only for an integer. */
int chrPluginEnvLong(const char* name, long lo, long hi, long def, long* out, char* err, size_t errLen);

/* A string setting copied into out (len bytes); unset: "". A value of len bytes or more does not fit:
 * out = "", returns -1. */
int chrPluginEnvStr(const char* name, char* out, size_t len);

/* len random bytes for nonces and ids: getrandom, else /dev/urandom, else bits of the clock, the
 * address and the pid (enough to tell connections apart, which is all a nonce here is for). */
void chrPluginRandom(void* buf, size_t len);

#endif /* CHORUS_PLUGIN_SUPPORT_H_ */
