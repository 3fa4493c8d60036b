/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_load.c: builds one configuration store from the environment, the INI files and the defaults.
 *
 * Files are read from the strongest level to the weakest; a parameter takes the first value found
 * (env, then CHORUS_CONF|NCCL_CONF_FILE, ~/.config/chorus.ini, /etc/chorus.ini, ~/.nccl.conf,
 * /etc/nccl.conf, default). Within one file the last line wins. A value that is not valid (see
 * chrConfigCheckValue) is not applied, so the next level decides, and it is an error. A malformed file
 * is applied not at all: a half-read file would leave a configuration nobody wrote. Errors and unknown
 * names are collected, never logged here: the logger reads its own settings through this code, so
 * logging from here would recurse. chrConfigValidate (config_check.c) reports them.
 *
 * "The environment" is what chrEnvGet answers (config/env_plugin.c): an env plugin's getEnv when
 * NCCL_ENV_PLUGIN gives one (the source of its values is then "env plugin"), else getenv. Every
 * parameter is asked, and so are CHORUS_CONF and NCCL_CONF_FILE, which a plugin standing for the
 * environment must be able to set; HOME is not a setting and is read with getenv.
 *
 * inih is linked statically (see the top CMakeLists.txt), so the library needs nothing but libc.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#ifdef CHORUS_INI_MIN
#include "config/ini_min.h"
#else
#include <ini.h>
#endif
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_store.h"
#include "config/env_plugin.h"

#define CHR_STR2(x) #x
#define CHR_STR(x) CHR_STR2(x)

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

/* Appends `line` and a '\n'. */
static void textAppend(chrConfigText* t, const char* line) {
  size_t len = strlen(line);
  if (t->len + len + 2 > t->cap) {
    t->cap = (t->len + len + 2) * 2;
    t->text = xrealloc(t->text, t->cap);
  }
  memcpy(t->text + t->len, line, len);
  t->len += len;
  t->text[t->len++] = '\n';
  t->text[t->len] = '\0';
}

void chrConfigAddError(chrConfigStore* store, const char* fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  textAppend(&store->problems, line);
  textAppend(&store->errors, line);
}

void chrConfigAddNote(chrConfigStore* store, const char* name, const char* fmt, ...) {
  for (int i = 0; i < store->nNotes; i++)
    if (strcmp(store->notes[i].name, name) == 0) return; /* the same mistake twice in one load */
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  textAppend(&store->problems, line);
  if (store->nNotes == store->capNotes) {
    store->capNotes = store->capNotes ? 2 * store->capNotes : 8;
    store->notes = xrealloc(store->notes, (size_t)store->capNotes * sizeof(*store->notes));
  }
  store->notes[store->nNotes].name = xstrdup(name);
  store->notes[store->nNotes].text = xstrdup(line);
  store->nNotes++;
}

/* A value as quoted in a message: at most 120 bytes, control bytes as '?', so a problem stays one line. */
static void quoteValue(char* out, size_t cap, const char* value) {
  size_t n = strlen(value), keep = n < cap - 1 ? n : cap - 4;
  for (size_t i = 0; i < keep; i++) out[i] = (unsigned char)value[i] < 0x20 || value[i] == 0x7f ? '?' : value[i];
  if (keep < n) memcpy(out + keep, "...", 4);
  else out[keep] = '\0';
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

int chrConfigParseNumber(const char* s, double* out) {
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '\0') return -1;
  errno = 0;
  char* end;
  double v = strtod(s, &end);
  if (errno == ERANGE || end == s || !isfinite(v)) return -1; /* "inf", "nan" and overflow are not numbers here */
  while (*end == ' ' || *end == '\t') end++;
  if (*end != '\0') return -1;
  *out = v;
  return 0;
}

/* Sets a parameter from `level` unless a stronger level already did. `where` is the text of problems.
 * A value that is not valid is an error and is not applied: the weaker levels still decide. */
static void setParam(chrConfigStore* store, int id, const char* value, const char* source, int level,
                     const char* where) {
  chrParamSlot* slot = &store->params[id];
  if (slot->level < level) return; /* a stronger source already set it */
  const char* name = chrParamTable[id].name;
  if (strlen(value) > CHR_CONFIG_MAX_VALUE) {
    chrConfigAddError(store, "%s: value of %s is longer than %d bytes", where, name, CHR_CONFIG_MAX_VALUE);
    return;
  }
  int64_t v = 0;
  char why[512], quoted[128];
  if (chrConfigCheckValue(id, value, &v, why, sizeof(why)) != 0) {
    quoteValue(quoted, sizeof(quoted), value);
    chrConfigAddError(store, "%s: %s='%s' %s", where, name, quoted, why);
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

/* One key=value of a file, kept until the whole file is known to be well formed. */
typedef struct {
  char* section;
  char* key;
  char* value;
  int lineno;
} chrFileKey;

/* State of one file being parsed. inih reads through our reader so that we know the line number of
 * every key (the packaged inih is built without line numbers) and can pass values longer than its
 * 200-byte line buffer: such a line reaches inih as "name=\x01" and the handler takes the real value
 * from longValue. The reader also strips leading blanks, which turns off inih's continuation lines
 * (an indented "NCCL_X=1" in a flat nccl.conf must stay a key of its own), and it finds malformed
 * lines itself, to say what is wrong with them (inih only gives a line number). */
typedef struct {
  FILE* file;
  int lineno;
  char* line;
  size_t lineCap;
  char* longValue;
  size_t bytes;      /* read so far */
  int readError;     /* errno of a failed read, 0 if none */
  int badLine;       /* first malformed line, 0 if none */
  char badWhat[160]; /* what is wrong with it */
  chrFileKey* keys;
  int nKeys, capKeys;
} chrFileParse;

#define CHR_LONG_MARK "\x01"

static char* rstrip(char* s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
  return s;
}

/* What is wrong with a stripped line, or NULL. Stricter than inih: "key: value" is not accepted,
 * because nccl.conf has only key=value and a ':' is more likely part of a value (host:port). */
static const char* malformedLine(const char* s) {
  if (s[0] == '\0' || s[0] == ';' || s[0] == '#') return NULL;
  if (s[0] == '[') return strchr(s, ']') ? NULL : "'[' without a closing ']'";
  if (s[0] == '=') return "no key before '='";
  if (!strchr(s, '=')) return "expected key = value, [section] or a comment; this line has no '='";
  return NULL;
}

static void markBad(chrFileParse* fp, const char* what) {
  fp->badLine = fp->lineno;
  snprintf(fp->badWhat, sizeof(fp->badWhat), "%s", what);
}

static char* fileReader(char* out, int num, void* stream) {
  chrFileParse* fp = stream;
  if (fp->badLine) return NULL; /* the file will not be applied: stop at its first bad line */
  errno = 0;
  ssize_t n = getline(&fp->line, &fp->lineCap, fp->file);
  if (n < 0) {
    if (ferror(fp->file)) fp->readError = errno ? errno : EIO;
    return NULL;
  }
  fp->bytes += (size_t)n;
  if (fp->bytes > CHR_CONFIG_MAX_FILE) { /* it grew past its size as read (a /proc file, one being written) */
    markBad(fp, "the file is larger than " CHR_STR(CHR_CONFIG_MAX_FILE) " bytes");
    return NULL;
  }
  fp->lineno++;
  char* s = fp->line;
  if (fp->lineno == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3; /* a UTF-8 byte order mark */
  while (*s == ' ' || *s == '\t') s++;
  rstrip(s);
  const char* bad = malformedLine(s);
  if (bad) {
    markBad(fp, bad);
    return NULL;
  }
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
  if (s[0] == '[' || (int)keyLen + 4 > num) {
    markBad(fp, s[0] == '[' ? "section name too long" : "key too long");
    return NULL;
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

/* inih's callback: only remembers the key; applyKey runs once the whole file has parsed. */
static int iniHandler(void* user, const char* section, const char* key, const char* value) {
  chrFileParse* fp = user;
  if (strcmp(value, CHR_LONG_MARK) == 0 && fp->longValue) value = cleanLongValue(fp->longValue);
  if (fp->nKeys == fp->capKeys) {
    fp->capKeys = fp->capKeys ? 2 * fp->capKeys : 16;
    fp->keys = xrealloc(fp->keys, (size_t)fp->capKeys * sizeof(*fp->keys));
  }
  fp->keys[fp->nKeys++] = (chrFileKey){xstrdup(section), xstrdup(key), xstrdup(value), fp->lineno};
  return 1;
}

/* Keys that are not parameters are exported to the environment for plugins, but only those named like
 * the settings of NCCL, Chorus and the network libraries: a file cannot set LD_PRELOAD. */
static int exportable(chrConfigStore* store, const char* source, const chrFileKey* k) {
  if (chrConfigExportable(k->key)) return 1;
  chrConfigAddNote(store, k->key, "%s: key %s%s%s%s is not exported to the environment: a file exports only names "
                   "starting with %s", source, k->key, k->section[0] ? " of [" : "", k->section,
                   k->section[0] ? "]" : "", chrConfigExportablePrefixes());
  return 0;
}

static void applyKey(chrConfigStore* store, const char* path, int level, const chrFileKey* k) {
  char source[PATH_MAX + 32], name[300], hint[200];
  snprintf(source, sizeof(source), "%s:%d", path, k->lineno);
  if (k->section[0] == '\0') {
    /* Before any [section]: full names, the flat nccl.conf format. Unknown names are kept: NCCL exports
     * every key of nccl.conf to the environment, and plugins (aws-ofi-nccl, ...) read theirs there.
     * Only an unknown CHORUS_ name is surely a mistake (NCCL has hundreds of variables). */
    int id = findFullName(k->key);
    if (id >= 0) {
      setParam(store, id, k->value, source, level, source);
      return;
    }
    if (strcasecmp(k->key, "NCCL_ENV_PLUGIN") == 0) { /* chosen before any file is read (env_plugin.c) */
      chrConfigAddNote(store, k->key, "%s: NCCL_ENV_PLUGIN has no effect in a file: the env plugin is chosen from "
                       "the environment before any file is read", source);
      return;
    }
    if (!exportable(store, source, k)) return;
    addRaw(store, "", k->key, k->value, source, level);
    if (strncasecmp(k->key, "CHORUS_", 7) == 0 && !chrConfigKnownName(k->key, 0)) {
      chrConfigClosestName(k->key, NULL, hint, sizeof(hint));
      chrConfigAddNote(store, k->key, "%s: unknown key %s, exported to the environment as it is (closest known "
                       "name: %s)", source, k->key, hint);
    }
  } else if (chrConfigIsCoreSection(k->section)) {
    int id = findFullName(k->key);
    if (id < 0) id = findShortName(k->section, k->key);
    if (id >= 0) {
      setParam(store, id, k->value, source, level, source);
      return;
    }
    snprintf(name, sizeof(name), "%s/%s", k->section, k->key);
    for (char* p = name; *p; p++) *p = (char)tolower((unsigned char)*p);
    chrConfigClosestName(k->key, k->section, hint, sizeof(hint));
    chrConfigAddNote(store, name, "%s: unknown key '%s' in section [%s]; ignored (closest known name: %s)", source,
                     k->key, k->section, hint);
  } else if (exportable(store, source, k)) {
    addRaw(store, k->section, k->key, k->value, source, level); /* a plugin's section, exported before its init */
  }
}

static const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/* Opens path for reading when it is a regular file of at most CHR_CONFIG_MAX_FILE bytes. O_NONBLOCK:
 * opening a FIFO must not wait for a writer. NULL with errno ENOENT when it does not exist; NULL after
 * an error naming the reason otherwise. */
static FILE* openConfigFile(chrConfigStore* store, const char* path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT) chrConfigAddError(store, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  const char* why = NULL;
  if (fstat(fd, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = fileKind(st.st_mode);
  else if (st.st_size > CHR_CONFIG_MAX_FILE) why = "larger than " CHR_STR(CHR_CONFIG_MAX_FILE) " bytes";
  FILE* f = why ? NULL : fdopen(fd, "r");
  if (f == NULL) {
    if (why == NULL) why = strerror(errno);
    chrConfigAddError(store, "%s: not read (%s): a configuration file must be a regular file of at most %d bytes",
                      path, why, CHR_CONFIG_MAX_FILE);
    close(fd);
    errno = 0;
  }
  return f;
}

static void readFile(chrConfigStore* store, const char* path, int level, int mustExist) {
  FILE* f = openConfigFile(store, path);
  if (!f) {
    if (mustExist && errno == ENOENT) chrConfigAddError(store, "%s: cannot open: %s", path, strerror(ENOENT));
    return;
  }
  chrFileParse fp = {.file = f};
  int err = ini_parse_stream(fileReader, &fp, iniHandler, &fp);
  if (!fp.badLine && fp.readError != 0) /* /proc/self/mem and the like: regular, yet unreadable */
    chrConfigAddError(store, "%s: cannot read: %s; nothing from this file is applied", path, strerror(fp.readError));
  else if (fp.badLine)
    chrConfigAddError(store, "%s:%d: %s; nothing from this file is applied", path, fp.badLine, fp.badWhat);
  else if (err > 0) /* inih's grammar has a corner ours let through */
    chrConfigAddError(store, "%s:%d: syntax error; nothing from this file is applied", path, err);
  else if (err < 0)
    chrConfigAddError(store, "%s: cannot read (error %d); nothing from this file is applied", path, err);
  else
    for (int i = 0; i < fp.nKeys; i++) applyKey(store, path, level, &fp.keys[i]);
  for (int i = 0; i < fp.nKeys; i++) {
    free(fp.keys[i].section);
    free(fp.keys[i].key);
    free(fp.keys[i].value);
  }
  free(fp.keys);
  free(fp.line);
  free(fp.longValue);
  fclose(f);
}

/* A CHORUS_ variable that nothing reads is a typo or a leftover: note it with the closest name.
 * Keys of the files' plugin sections are skipped: exporting them puts them in the environment. */
static void noteUnknownEnv(chrConfigStore* store) {
  extern char** environ;
  for (char** e = environ; e && *e; e++) {
    const char* eq = strchr(*e, '=');
    if (strncmp(*e, "CHORUS_", 7) != 0 || !eq || eq[1] == '\0') continue; /* empty counts as unset */
    char name[256], hint[200];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
    if (chrConfigKnownName(name, 1)) continue;
    int inFile = 0;
    for (int i = 0; i < store->nRaw && !inFile; i++) inFile = strcmp(store->raw[i].key, name) == 0;
    if (inFile) continue;
    chrConfigClosestName(name, NULL, hint, sizeof(hint));
    chrConfigAddNote(store, name, "environment: unknown variable %s ignored (closest known name: %s)", name, hint);
  }
}

/* ---- the whole store --------------------------------------------------------------------------- */

chrConfigStore* chrConfigBuildStore(void) {
  chrConfigStore* store = xrealloc(NULL, sizeof(*store));
  memset(store, 0, sizeof(*store));
  store->problems = (chrConfigText){xstrdup(""), 0, 1};
  store->errors = (chrConfigText){xstrdup(""), 0, 1};
  for (int i = 0; i < CHR_P_COUNT; i++) store->params[i].level = CHR_LEVEL_NONE;

  /* 1. Environment (or the env plugin). An empty variable counts as unset, as in NCCL. */
  const struct chrEnvSource* env = chrEnvSourceOpen();
  for (int i = 0; i < CHR_P_COUNT; i++) {
    char* v = chrEnvGet(chrParamTable[i].name);
    if (v && v[0]) setParam(store, i, v, env->label, CHR_LEVEL_ENV, env->plugin ? "env plugin" : "environment");
    free(v);
  }

  /* 2. Files, strongest first. These two variables locate the config, so they can only come from the
   * environment (or the env plugin, which stands for it). */
  char* named = chrEnvGet("CHORUS_CONF");
  if (!named || !named[0]) {
    free(named);
    named = chrEnvGet("NCCL_CONF_FILE");
  }
  const char* home = getenv("HOME"); /* where the user's files are, not a setting */
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
  free(named);
  noteUnknownEnv(store);

  /* 3. Defaults for whatever is still unset. */
  for (int i = 0; i < CHR_P_COUNT; i++) {
    chrParamSlot* slot = &store->params[i];
    if (slot->level != CHR_LEVEL_NONE) continue;
    slot->value = xstrdup(chrParamTable[i].def);
    slot->source = xstrdup("default");
    slot->level = CHR_LEVEL_DEFAULT;
    char why[512];
    if (chrConfigCheckValue(i, slot->value, &slot->intValue, why, sizeof(why)) != 0) /* a bug in params.def */
      chrConfigAddError(store, "params.def: default of %s '%s' %s", chrParamTable[i].name, slot->value, why);
  }

  /* 4. An env plugin that was asked for and is not used: a warning, or under CHORUS_PLUGIN_STRICT=1
   * (as this store says, read with getenv since the plugin is not used) an error (env_plugin.c). */
  if (env->failure[0] && env->strict && store->params[CHR_P_PLUGIN_STRICT].intValue != 0)
    chrConfigAddError(store, "%s; failing because CHORUS_PLUGIN_STRICT=1", env->failure);
  else if (env->failure[0])
    chrConfigAddNote(store, "NCCL_ENV_PLUGIN", "%s; reading the environment with getenv instead", env->failure);
  return store;
}
