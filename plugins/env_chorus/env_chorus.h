/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env_chorus.h: the reference env plugin's settings file (settings.c), used by env.c.
 * Internal to libnccl-env-chorus.so; nothing here is exported.
 */
#ifndef CHORUS_ENV_CHORUS_H_
#define CHORUS_ENV_CHORUS_H_

#include <stddef.h>

#define EC_PLUGIN_NAME "Chorus"
#define EC_FILE_VAR "CHORUS_ENV_PLUGIN_FILE" /* names the settings file; read with getenv */
#define EC_FILE_MAX (1 << 20)                /* largest settings file read, in bytes */

struct ecSetting {
  char* key;
  char* value;
};

/* The settings of one file, in file order; a key written twice keeps its last value. */
struct ecSettings {
  struct ecSetting* items;
  int n, cap;
};

/* Read `path`: lines "KEY=VALUE" (blanks around both trimmed, an optional leading "export "), blank
 * lines and lines starting with '#' or ';'. A regular file of at most EC_FILE_MAX bytes. Returns 0, or
 * -1 with what is wrong (naming file:line) in err and nothing kept. */
int ecSettingsRead(const char* path, struct ecSettings* out, char* err, size_t cap);

/* The value of `key` (exact case), or NULL. */
const char* ecSettingsFind(const struct ecSettings* s, const char* key);

void ecSettingsFree(struct ecSettings* s);

#endif /* CHORUS_ENV_CHORUS_H_ */
