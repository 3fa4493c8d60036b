/*
 * config_load.c: builds one configuration store from the environment, the INI files and the defaults.
 *
 * Files are read from the strongest level to the weakest; a parameter takes the first value found
 * (env, then CHORUS_CONF|NCCL_CONF_FILE, ~/.config/chorus.ini, /etc/chorus.ini, ~/.nccl.conf,
 * /etc/nccl.conf, default). Within one file the last line wins. Problems (unknown key in a core
 * section, bad integer, unreadable named file, syntax error) are collected as text, never logged
 * here: the logger reads its own settings through this code, so logging from here would recurse.
 */
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_store.h"

static char* systemDir; /* tests only; NULL means /etc */

void chrConfigSetSystemDir(const char* dir) {
  free(systemDir);
  systemDir = dir ? strdup(dir) : NULL;
}

static void* xrealloc(void* p, size_t n) {
  void* q = realloc(p, n ? n : 1);
  if (!q) {
    /* Config is read before anything else can report an error; running on without it is worse. */
    fputs("chorus: out of memory while reading the configuration\n", stderr);
    abort();
  }
  return q;
}

static char* xstrdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

static char* xformat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static char* xformat(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char* s = xrealloc(NULL, (size_t)(n < 0 ? 0 : n) + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static void addProblem(chrConfigStore* store, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void addProblem(chrConfigStore* store, const char* fmt, ...) {
  char line[CHR_CONFIG_MAX_VALUE + 512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = strlen(line);
  line[len++] = '\n';
  line[len] = '\0';
  if (store->problemsLen + len + 1 > store->problemsCap) {
    store->problemsCap = (store->problemsLen + len + 1) * 2;
    store->problems = xrealloc(store->problems, store->problemsCap);
  }
  memcpy(store->problems + store->problemsLen, line, len + 1);
  store->problemsLen += len;
}

int chrConfigParseInt(const char* s, int64_t* out) {
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '\0') return -1;
  errno = 0;
  char* end;
  long long v = strtoll(s, &end, 0);
  if (errno == ERANGE || end == s) return -1;
  while (*end == ' ' || *end == '\t') end++;
  if (*end != '\0') return -1;
  *out = (int64_t)v;
  return 0;
}

/* Sets a parameter from `level` unless a stronger level already did. `where` is the text of problems. */
static void setParam(chrConfigStore* store, int id, const char* value, const char* source, int level,
                     const char* where) {
  chrParamSlot* slot = &store->params[id];
  if (slot->level < level) return; /* a stronger source already set it */
  const char* name = chrParamTable[id].name;
  if (strlen(value) > CHR_CONFIG_MAX_VALUE) {
    addProblem(store, "%s: value of %s is longer than %d bytes; ignored", where, name, CHR_CONFIG_MAX_VALUE);
    return;
  }
  int64_t v = 0;
  if (chrParamTable[id].isInt && chrConfigParseInt(value, &v) != 0) {
    addProblem(store, "%s: %s='%s' is not an integer; ignored", where, name, value);
    return;
  }
  free(slot->value);
  free(slot->source);
  slot->value = xstrdup(value);
  slot->source = xstrdup(source);
  slot->intValue = v;
  slot->level = level;
}

static void addRaw(chrConfigStore* store, const char* section, const char* key, const char* value,
                   const char* source, int level) {
  for (int i = 0; i < store->nRaw; i++) {
    chrRawEntry* e = &store->raw[i];
    if (strcasecmp(e->section, section) != 0 || strcmp(e->key, key) != 0) continue;
    if (e->level < level) return; /* set by a stronger file */
    free(e->value);
    free(e->source);
    e->value = xstrdup(value);
    e->source = xstrdup(source);
    return;
  }
  if (store->nRaw == store->capRaw) {
    store->capRaw = store->capRaw ? 2 * store->capRaw : 16;
    store->raw = xrealloc(store->raw, (size_t)store->capRaw * sizeof(*store->raw));
  }
  chrRawEntry* e = &store->raw[store->nRaw++];
  e->section = xstrdup(section);
  e->key = xstrdup(key);
  e->value = xstrdup(value);
  e->source = xstrdup(source);
  e->level = level;
}

/* ---- one INI file ------------------------------------------------------------------------------ */

/* State of one file being parsed. inih reads through our reader so that we know the line number of
 * every key (the packaged inih is built without line numbers) and can pass values longer than its
 * 200-byte line buffer: such a line reaches inih as "name=\x01" and the handler takes the real value
 * from longValue. The reader also strips leading blanks, which turns off inih's continuation lines
 * (an indented "NCCL_X=1" in a flat nccl.conf must stay a key of its own). */
typedef struct {
  chrConfigStore* store;
  FILE* file;
  const char* path;
  int level;
  int lineno;
  char* line;
  size_t lineCap;
  char* longValue;
} chrFileParse;

#define CHR_LONG_MARK "\x01"

static char* rstrip(char* s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
  return s;
}

static char* fileReader(char* out, int num, void* stream) {
  chrFileParse* fp = stream;
  ssize_t n = getline(&fp->line, &fp->lineCap, fp->file);
  if (n < 0) return NULL;
  fp->lineno++;
  char* s = fp->line;
  while (*s == ' ' || *s == '\t') s++;
  rstrip(s);
  size_t len = strlen(s);
  if ((int)len + 2 <= num) {
    memcpy(out, s, len);
    out[len] = '\n';
    out[len + 1] = '\0';
    return out;
  }
  /* Too long for inih's buffer. Comments pass as an empty comment; keys pass with a marker value. */
  if (s[0] == ';' || s[0] == '#') {
    snprintf(out, (size_t)num, ";\n");
    return out;
  }
  size_t keyLen = strcspn(s, "=:");
  if (s[0] == '[' || s[keyLen] == '\0' || (int)keyLen + 4 > num) {
    addProblem(fp->store, "%s:%d: line too long or malformed; ignored", fp->path, fp->lineno);
    snprintf(out, (size_t)num, ";\n");
    return out;
  }
  free(fp->longValue);
  fp->longValue = xstrdup(s + keyLen + 1);
  memcpy(out, s, keyLen);
  snprintf(out + keyLen, (size_t)num - keyLen, "=" CHR_LONG_MARK "\n");
  return out;
}

/* The value of a long line, cleaned like inih cleans short ones: blanks trimmed, and an inline
 * comment (';' after a blank) removed. */
static char* cleanLongValue(char* v) {
  while (*v == ' ' || *v == '\t') v++;
  for (char* p = v; *p; p++)
    if (*p == ';' && p > v && (p[-1] == ' ' || p[-1] == '\t')) {
      *p = '\0';
      break;
    }
  return rstrip(v);
}

static int findShortName(const char* section, const char* key) {
  for (int i = 0; i < CHR_P_COUNT; i++)
    if (strcasecmp(chrParamTable[i].section, section) == 0 && strcasecmp(chrParamShortName(i), key) == 0) return i;
  return -1;
}

static int findFullName(const char* key) {
  for (int i = 0; i < CHR_P_COUNT; i++)
    if (strcasecmp(chrParamTable[i].name, key) == 0) return i;
  return -1;
}

static int iniHandler(void* user, const char* section, const char* key, const char* value) {
  chrFileParse* fp = user;
  chrConfigStore* store = fp->store;
  if (strcmp(value, CHR_LONG_MARK) == 0 && fp->longValue) value = cleanLongValue(fp->longValue);
  char source[PATH_MAX + 32];
  snprintf(source, sizeof(source), "%s:%d", fp->path, fp->lineno);

  if (section[0] == '\0') {
    /* Before any [section]: full names, the flat nccl.conf format. Unknown names are kept: NCCL exports
     * every key of nccl.conf to the environment, and plugins (aws-ofi-nccl, ...) read theirs there. */
    int id = findFullName(key);
    if (id >= 0) setParam(store, id, value, source, fp->level, source);
    else addRaw(store, "", key, value, source, fp->level);
  } else if (chrConfigIsCoreSection(section)) {
    int id = findFullName(key);
    if (id < 0) id = findShortName(section, key);
    if (id >= 0) setParam(store, id, value, source, fp->level, source);
    else addProblem(store, "%s: unknown key '%s' in section [%s]; ignored", source, key, section);
  } else {
    addRaw(store, section, key, value, source, fp->level); /* a plugin's section, exported before its init */
  }
  return 1;
}

static void readFile(chrConfigStore* store, const char* path, int level, int mustExist) {
  FILE* f = fopen(path, "r");
  if (!f) {
    if (mustExist || errno != ENOENT) addProblem(store, "%s: cannot open: %s", path, strerror(errno));
    return;
  }
  chrFileParse fp = {.store = store, .file = f, .path = path, .level = level};
  int err = ini_parse_stream(fileReader, &fp, iniHandler, &fp);
  if (err > 0) addProblem(store, "%s:%d: syntax error (expected key=value, [section] or comment)", path, err);
  free(fp.line);
  free(fp.longValue);
  fclose(f);
}

/* ---- the whole store --------------------------------------------------------------------------- */

chrConfigStore* chrConfigBuildStore(void) {
  chrConfigStore* store = xrealloc(NULL, sizeof(*store));
  memset(store, 0, sizeof(*store));
  store->problems = xstrdup("");
  store->problemsCap = 1;
  for (int i = 0; i < CHR_P_COUNT; i++) store->params[i].level = CHR_LEVEL_NONE;

  /* 1. Environment. An empty variable counts as unset, as in NCCL. */
  for (int i = 0; i < CHR_P_COUNT; i++) {
    const char* v = getenv(chrParamTable[i].name);
    if (!v || !v[0]) continue;
    setParam(store, i, v, "env", CHR_LEVEL_ENV, "environment");
  }

  /* 2. Files, strongest first. These two variables locate the config, so they can only come from env. */
  const char* named = getenv("CHORUS_CONF");
  if (!named || !named[0]) named = getenv("NCCL_CONF_FILE");
  const char* home = getenv("HOME");
  const char* sys = systemDir ? systemDir : "/etc";
  char* paths[CHR_LEVEL_DEFAULT] = {0};
  if (named && named[0]) paths[CHR_LEVEL_CONF_FILE] = xstrdup(named);
  if (home && home[0]) {
    paths[CHR_LEVEL_USER_INI] = xformat("%s/.config/chorus.ini", home);
    paths[CHR_LEVEL_USER_NCCL] = xformat("%s/.nccl.conf", home);
  }
  paths[CHR_LEVEL_SYSTEM_INI] = xformat("%s/chorus.ini", sys);
  paths[CHR_LEVEL_SYSTEM_NCCL] = xformat("%s/nccl.conf", sys);
  for (int level = CHR_LEVEL_CONF_FILE; level < CHR_LEVEL_DEFAULT; level++) {
    if (!paths[level]) continue;
    /* The same file named twice (CHORUS_CONF=~/.config/chorus.ini) is read once, at its strongest level. */
    int dup = 0;
    for (int j = CHR_LEVEL_CONF_FILE; j < level && !dup; j++) dup = paths[j] && strcmp(paths[j], paths[level]) == 0;
    if (!dup) readFile(store, paths[level], level, level == CHR_LEVEL_CONF_FILE);
  }
  for (int level = 0; level < CHR_LEVEL_DEFAULT; level++) free(paths[level]);

  /* 3. Defaults for whatever is still unset. */
  for (int i = 0; i < CHR_P_COUNT; i++) {
    chrParamSlot* slot = &store->params[i];
    if (slot->level != CHR_LEVEL_NONE) continue;
    slot->value = xstrdup(chrParamTable[i].def);
    slot->source = xstrdup("default");
    slot->level = CHR_LEVEL_DEFAULT;
    if (chrParamTable[i].isInt && chrConfigParseInt(slot->value, &slot->intValue) != 0)
      addProblem(store, "params.def: default of %s ('%s') is not an integer", chrParamTable[i].name, slot->value);
  }
  return store;
}
