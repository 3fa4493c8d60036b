/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.c: reading the KEY=VALUE file of the reference env plugin (env_chorus.h). The whole file
 * is checked before anything of it is kept: a half-read file would give settings nobody wrote.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env_chorus.h"

static char* trim(char* s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
  return s;
}

static int validKey(const char* k) {
  if (!(isalpha((unsigned char)k[0]) || k[0] == '_')) return 0;
  for (const char* p = k; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}

/* Sets key to value, replacing an earlier value. -1: out of memory. */
static int put(struct ecSettings* s, const char* key, const char* value) {
  for (int i = 0; i < s->n; i++) {
    if (strcmp(s->items[i].key, key) != 0) continue;
    char* v = strdup(value);
    if (v == NULL) return -1;
    free(s->items[i].value);
    s->items[i].value = v;
    return 0;
  }
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    struct ecSetting* grown = realloc(s->items, (size_t)cap * sizeof(*grown));
    if (grown == NULL) return -1;
    s->items = grown;
    s->cap = cap;
  }
  char* k = strdup(key);
  char* v = strdup(value);
  if (k == NULL || v == NULL) {
    free(k);
    free(v);
    return -1;
  }
  s->items[s->n++] = (struct ecSetting){k, v};
  return 0;
}

/* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it. */
static FILE* openRegular(const char* path, char* err, size_t cap) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  const char* why = NULL;
  if (fstat(fd, &st) != 0) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_size > EC_FILE_MAX) why = "larger than 1 MiB";
  FILE* f = why ? NULL : fdopen(fd, "r");
  if (f == NULL) {
    snprintf(err, cap, "%s: not read: %s", path, why ? why : strerror(errno));
    close(fd);
  }
  return f;
}

int ecSettingsRead(const char* path, struct ecSettings* out, char* err, size_t cap) {
  memset(out, 0, sizeof(*out));
  FILE* f = openRegular(path, err, cap);
  if (f == NULL) return -1;
  struct ecSettings s = {0};
  char* line = NULL;
  size_t lineCap = 0, bytes = 0;
  int lineno = 0, bad = 0;
  ssize_t n;
  while (!bad && (n = getline(&line, &lineCap, f)) >= 0) {
    lineno++;
    bytes += (size_t)n;
    char* text = trim(line);
    if (bytes > EC_FILE_MAX) {
      snprintf(err, cap, "%s: larger than 1 MiB", path);
      bad = 1;
    } else if (text[0] == '\0' || text[0] == '#' || text[0] == ';') {
      continue;
    } else {
      if (strncmp(text, "export ", 7) == 0) text = trim(text + 7);
      char* eq = strchr(text, '=');
      if (eq == NULL) {
        snprintf(err, cap, "%s:%d: expected KEY=VALUE", path, lineno);
        bad = 1;
        continue;
      }
      *eq = '\0';
      char* key = trim(text);
      if (!validKey(key)) {
        snprintf(err, cap, "%s:%d: '%.64s' is not a variable name", path, lineno, key);
        bad = 1;
      } else if (put(&s, key, trim(eq + 1)) != 0) {
        snprintf(err, cap, "%s: out of memory", path);
        bad = 1;
      }
    }
  }
  if (!bad && ferror(f)) {
    snprintf(err, cap, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
    bad = 1;
  }
  free(line);
  fclose(f);
  if (bad) {
    ecSettingsFree(&s);
    return -1;
  }
  *out = s;
  return 0;
}

const char* ecSettingsFind(const struct ecSettings* s, const char* key) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->items[i].key, key) == 0) return s->items[i].value;
  return NULL;
}

void ecSettingsFree(struct ecSettings* s) {
  for (int i = 0; i < s->n; i++) {
    free(s->items[i].key);
    free(s->items[i].value);
  }
  free(s->items);
  memset(s, 0, sizeof(*s));
}
