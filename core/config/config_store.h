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
  CHR_LEVEL_ENV = 0,
  CHR_LEVEL_CONF_FILE = 1,   /* CHORUS_CONF, else NCCL_CONF_FILE */
  CHR_LEVEL_USER_INI = 2,    /* $HOME/.config/chorus.ini */
  CHR_LEVEL_SYSTEM_INI = 3,  /* /etc/chorus.ini */
  CHR_LEVEL_USER_NCCL = 4,   /* $HOME/.nccl.conf */
  CHR_LEVEL_SYSTEM_NCCL = 5, /* /etc/nccl.conf */
  CHR_LEVEL_DEFAULT = 6,
  CHR_LEVEL_NONE = 7
};

#define CHR_CONFIG_MAX_VALUE 4096 /* longest value accepted, in bytes, without the NUL */

typedef struct {
  char* value;      /* never NULL once the store is built */
  int64_t intValue; /* parsed value of an INT parameter */
  char* source;     /* "env", "default" or "<path>:<line>" */
  int level;
} chrParamSlot;

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
  char* problems; /* "" or lines ending in '\n' */
  size_t problemsLen, problemsCap;
  struct chrConfigStore* retired; /* the store this one replaced (kept alive on purpose) */
} chrConfigStore;

/* Static description of a parameter (from params.def). */
typedef struct {
  const char* name;
  int isInt;
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

/* Tests only: read the system files (chorus.ini, nccl.conf) from `dir` instead of /etc (NULL: /etc).
 * Takes effect at the next load or reload. */
void chrConfigSetSystemDir(const char* dir);

#endif /* CHORUS_CONFIG_STORE_H_ */
