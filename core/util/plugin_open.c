/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_open.c: the generic plugin library search (see plugin_open.h for the rules).
 */
#include "util/plugin_open.h"
#include "util/own_dir.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Append a formatted piece to a bounded string, keeping it NUL-terminated (truncates silently). */
static void appendf(char* buf, size_t cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char* buf, size_t cap, const char* fmt, ...) {
  size_t used = strnlen(buf, cap);
  if (used + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, cap - used, fmt, ap);
  va_end(ap);
}

static char libraryDir[CHR_PLUGIN_PATH_MAX];
static int libraryIsProgram; /* the core is linked statically into a program (tools, tests) */
static pthread_once_t libraryDirOnce = PTHREAD_ONCE_INIT;

static void findLibraryDir(void) {
  /* Any function of this library works: it is in the object that holds the core. */
  chrOwnDir((const void*)&chrPluginOpen, libraryDir, sizeof(libraryDir), &libraryIsProgram);
}

const char* chrPluginLibraryDir(void) {
  pthread_once(&libraryDirOnce, findLibraryDir);
  return libraryDir;
}

/* One dlopen attempt; on success records the resolved path, on failure the dlerror text. */
static int tryOpen(chrPluginLib* lib, const char* name) {
  appendf(lib->tried, sizeof(lib->tried), "%s%s", lib->tried[0] ? ", " : "", name);
  dlerror(); /* clear a stale error */
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    /* glibc's message starts with the name it tried; add the name only when it does not. */
    const char* err = dlerror();
    if (err == NULL) err = "unknown dlopen error";
    int named = strncmp(err, name, strlen(name)) == 0;
    appendf(lib->reason, sizeof(lib->reason), "%s%s%s%s", lib->reason[0] ? "; " : "", named ? "" : name,
            named ? "" : ": ", err);
    return -1;
  }
  lib->handle = handle;
  struct link_map* map = NULL;
  const char* opened = name;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL && map->l_name[0])
    opened = map->l_name;
  /* Log the canonical file, not "bin/../lib/x.so". */
  char canonical[PATH_MAX];
  if (strchr(opened, '/') != NULL && realpath(opened, canonical) != NULL) opened = canonical;
  snprintf(lib->path, sizeof(lib->path), "%s", opened);
  return 0;
}

/* A bare name goes through the loader search path first, then the directory of libchorus. A program
 * with the core linked in statically (chorus-info, tests) sits in <prefix>/bin, so for it the
 * plugins are looked for in <prefix>/lib too. */
static int tryName(chrPluginLib* lib, const char* name) {
  if (tryOpen(lib, name) == 0) return 0;
  if (strchr(name, '/') != NULL) return -1;
  const char* dir = chrPluginLibraryDir();
  if (dir[0] == '\0') return -1;
  char full[CHR_PLUGIN_PATH_MAX];
  if (snprintf(full, sizeof(full), "%s/%s", dir, name) >= (int)sizeof(full)) return -1;
  if (tryOpen(lib, full) == 0) return 0;
  if (!libraryIsProgram) return -1;
  if (snprintf(full, sizeof(full), "%s/../lib/%s", dir, name) >= (int)sizeof(full)) return -1;
  return tryOpen(lib, full);
}

/* "lib*.so" names are taken as complete library names and get no prefix added. */
static int looksLikeLibName(const char* v) {
  size_t len = strlen(v);
  return len >= 6 && strncmp(v, "lib", 3) == 0 && strcmp(v + len - 3, ".so") == 0;
}

int chrPluginOpen(const char* prefix, const char* value, chrPluginLib* lib) {
  memset(lib, 0, sizeof(*lib));
  char name[CHR_PLUGIN_PATH_MAX];

  if (value == NULL || value[0] == '\0') {
    snprintf(name, sizeof(name), "%s.so", prefix);
    return tryName(lib, name);
  }
  if (strcasecmp(value, "STATIC_PLUGIN") == 0) {
    appendf(lib->tried, sizeof(lib->tried), "(main program)");
    dlerror();
    lib->handle = dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle == NULL) {
      const char* err = dlerror();
      appendf(lib->reason, sizeof(lib->reason), "(main program): %s", err ? err : "unknown dlopen error");
      return -1;
    }
    snprintf(lib->path, sizeof(lib->path), "(main program)");
    return 0;
  }
  if (tryName(lib, value) == 0) return 0;
  if (strchr(value, '/') == NULL && !looksLikeLibName(value)) {
    if (snprintf(name, sizeof(name), "%s-%s.so", prefix, value) < (int)sizeof(name) && tryName(lib, name) == 0)
      return 0;
  }
  return -1;
}

void chrPluginClose(chrPluginLib* lib) {
  if (lib->handle != NULL && strcmp(lib->path, "(main program)") != 0) dlclose(lib->handle);
  lib->handle = NULL;
}

void* chrPluginSymbol(chrPluginLib* lib, const char* symbol) {
  if (lib->handle == NULL) return NULL;
  return dlsym(lib->handle, symbol);
}

void chrPluginTrimCopy(char* dst, size_t cap, const char* begin, const char* end) {
  while (begin < end && isspace((unsigned char)*begin)) begin++;
  while (end > begin && isspace((unsigned char)end[-1])) end--;
  size_t len = (size_t)(end - begin);
  if (len >= cap) len = cap - 1;
  memcpy(dst, begin, len);
  dst[len] = '\0';
}

void chrPluginDescribe(const chrPluginLib* lib, const char* label, int usable, const char* name, int version,
                       char* out, size_t cap) {
  int showPath = lib->path[0] && strcmp(lib->path, label) != 0;
  out[0] = '\0';
  if (showPath && usable) snprintf(out, cap, " (%s: %s, ABI v%d)", lib->path, name, version);
  else if (showPath) snprintf(out, cap, " (%s)", lib->path);
  else if (usable) snprintf(out, cap, " (%s, ABI v%d)", name, version);
}
