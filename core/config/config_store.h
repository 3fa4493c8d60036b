/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_store.h: internal layout of one loaded configuration (env + files + defaults).
 *
 * A store is built in one go by chrConfigBuildStore() and never changed afterwards. Reload builds a
 * new store and retires the old one without freeing it, so a string handed out by chrParamStr() or
 * chrParamSource() stays valid for the life of the process, even across chrConfigReload().
 * Nothing here logs: the logger reads its own settings through this code (see log/log.c).
 */
#ifndef CHORUS_CONFIG_STORE_H_
#define CHORUS_CONFIG_STORE_H_

#include <stddef.h>
#include <stdint.h>
#include "config/param.h"

/* Where a value came from, from the strongest to the weakest. Lower wins. */
enum {
  CHR_LEVEL_ENV = 0,         /* the environment, or the env plugin standing for it */
  CHR_LEVEL_CONF_FILE = 1,   /* CHORUS_CONF, else NCCL_CONF_FILE */
  CHR_LEVEL_USER_INI = 2,    /* $HOME/.config/chorus.ini */
  CHR_LEVEL_SYSTEM_INI = 3,  /* /etc/chorus.ini */
  CHR_LEVEL_USER_NCCL = 4,   /* $HOME/.nccl.conf */
  CHR_LEVEL_SYSTEM_NCCL = 5, /* /etc/nccl.conf */
  CHR_LEVEL_DEFAULT = 6,
  CHR_LEVEL_NONE = 7
};

#define CHR_CONFIG_MAX_VALUE 4096 /* longest value accepted, in bytes, without the NUL */
#define CHR_CONFIG_MAX_FILE 1048576 /* largest configuration file read, in bytes */

typedef struct {
  char* value;      /* never NULL once the store is built */
  int64_t intValue; /* parsed value of an INT parameter */
  char* source;     /* "env", "env plugin", "default" or "<path>:<line>" */
  int level;
} chrParamSlot;

/* Growing text of lines, each ending in '\n'; "" when empty. */
typedef struct {
  char* text;
  size_t len, cap;
} chrConfigText;

/* An unknown name (environment variable or key in a file): warned once per process per `name`. */
typedef struct {
  char* name; /* what makes two notes the same mistake: "CHORUS_X", or "<section>/<key>" lower case */
  char* text; /* the whole warning, with the closest known name */
} chrConfigNote;

/* One key of a plugin section (or a top-level key that is not a parameter: section ""). */
typedef struct {
  char* section;
  char* key;
  char* value;
  char* source;
  int level;
} chrRawEntry;

typedef struct chrConfigStore {
  chrParamSlot params[CHR_P_COUNT];
  chrRawEntry* raw;
  int nRaw, capRaw;
  chrConfigText problems; /* everything below, in the order found (chorus-info prints it) */
  chrConfigText errors;   /* what makes chrConfigValidate fail: bad values, malformed or unreadable files */
  chrConfigNote* notes;   /* unknown names: warnings only */
  int nNotes, capNotes;
  struct chrConfigStore* retired; /* the store this one replaced (kept alive on purpose) */
} chrConfigStore;

/* Static description of a parameter (from params.def). */
typedef struct {
  const char* name;
  int isInt;
  int64_t min, max; /* valid range of an INT parameter */
  const char* def;
  const char* section;
  const char* help;
} chrParamDesc;

extern const chrParamDesc chrParamTable[CHR_P_COUNT];

/* The current store, loading it on first use. Never NULL (allocation failure aborts). */
const chrConfigStore* chrConfigCurrent(void);

/* Builds a store from the environment and files. Never returns NULL (aborts on out-of-memory). */
chrConfigStore* chrConfigBuildStore(void);

/* 1 when `section` (case-insensitive) is a core section: core, net, tuner, profiler or one named in params.def. */
int chrConfigIsCoreSection(const char* section);

/* Parse a whole string as an integer (base 0, surrounding blanks allowed). 0 on success, -1 if not a number. */
int chrConfigParseInt(const char* s, int64_t* out);

/* Parse a whole string as a finite decimal number (strtod, surrounding blanks allowed). 0 on success. */
int chrConfigParseNumber(const char* s, double* out);

/* Problems, for the loader. An error makes chrConfigValidate fail; a note is an unknown name. */
void chrConfigAddError(chrConfigStore* store, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void chrConfigAddNote(chrConfigStore* store, const char* name, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* config_check.c: checks one value of parameter `id` (the range of an INT, the syntax of a STR that has
 * one). 0 when valid (*intValue set for an INT); -1 with what is wrong and what is accepted in `why`
 * (e.g. "is out of range; accepted: an integer from 1 to 64"). Never logs. */
int chrConfigCheckValue(int id, const char* value, int64_t* intValue, char* why, size_t cap);

/* config_names.c: names that Chorus reads but that are not in params.def (CHORUS_CONF, the launcher's
 * CHORUS_RANK, the socket plugin's CHORUS_SOCKET_*): 1 if `name` is one of them or a parameter.
 * exactCase: 1 for the environment (getenv is exact), 0 for keys in files (read case-insensitively). */
int chrConfigKnownName(const char* name, int exactCase);
/* 1 if a key of a file may be exported to the environment for plugins: names of NCCL, Chorus and the
 * libraries net plugins are built on (libfabric, UCX, verbs, SHARP, ...); never LD_PRELOAD, PATH and
 * the like, which a config file must not be able to set for the whole process. */
int chrConfigExportable(const char* name);
/* The prefixes chrConfigExportable accepts, as one line for messages. */
const char* chrConfigExportablePrefixes(void);
/* The known name closest to `key` (edit distance, case-insensitive), for a message. section NULL or "":
 * among full names; else also among the short keys, written "<key> in [<section>]" when the key
 * belongs to another section. */
void chrConfigClosestName(const char* key, const char* section, char* out, size_t cap);

/* Tests only: read the system files (chorus.ini, nccl.conf) from `dir` instead of /etc (NULL: /etc).
 * Takes effect at the next load or reload. */
void chrConfigSetSystemDir(const char* dir);

#endif /* CHORUS_CONFIG_STORE_H_ */
