/* SPDX-License-Identifier: BSD-3-Clause */
/* ini_min.c: the minimal INI reader used without libinih (ini_min.h). Empty otherwise. */
#ifdef CHORUS_INI_MIN
#include <ctype.h>
#include <string.h>
#include "config/ini_min.h"

static char* trim(char* s) {
  while (*s && isspace((unsigned char)*s)) s++;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* Cuts a ';' comment that follows whitespace. */
static void cutInlineComment(char* s) {
  for (char* p = s; *p; p++)
    if (*p == ';' && p > s && isspace((unsigned char)p[-1])) {
      *p = '\0';
      return;
    }
}

int chrIniParseStream(chrIniReader reader, void* stream, chrIniHandler handler, void* user) {
  char line[4096], section[256] = "";
  int lineno = 0, firstError = 0;
  while (reader(line, (int)sizeof(line), stream) != NULL) {
    lineno++;
    char* s = trim(line);
    if (*s == '\0' || *s == ';' || *s == '#') continue;
    int bad = 0;
    if (*s == '[') {
      char* end = strchr(s, ']');
      if (end == NULL) {
        bad = 1;
      } else {
        *end = '\0';
        strncpy(section, trim(s + 1), sizeof(section) - 1);
        section[sizeof(section) - 1] = '\0';
      }
    } else {
      char* sep = strpbrk(s, "=:");
      if (sep == NULL || sep == s) {
        bad = 1;
      } else {
        *sep = '\0';
        char* value = sep + 1;
        cutInlineComment(value);
        bad = !handler(user, section, trim(s), trim(value));
      }
    }
    if (bad && firstError == 0) firstError = lineno;
  }
  return firstError;
}
#endif /* CHORUS_INI_MIN */
