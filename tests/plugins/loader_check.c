/* SPDX-License-Identifier: BSD-3-Clause */
/* loader_check.c: checks shared by the plugin loader tests (loader_check.h). */
#include "loader_check.h"

#include <string.h>

char* readLog(void) {
  const char* path = getenv("NCCL_DEBUG_FILE");
  EXPECT(path != NULL && path[0] != '\0', "the test needs NCCL_DEBUG_FILE");
  FILE* f = fopen(path, "r");
  if (f == NULL) return strdup("");
  char* buf = NULL;
  size_t cap = 0;
  FILE* mem = open_memstream(&buf, &cap);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) fwrite(chunk, 1, n, mem);
  fclose(f);
  fclose(mem);
  return buf;
}

int countLines(const char* text, const char* a, const char* b) {
  int count = 0;
  const char* line = text;
  while (*line) {
    const char* end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char* copy = strndup(line, len);
    if (strstr(copy, a) && (b == NULL || strstr(copy, b))) count++;
    free(copy);
    if (!end) break;
    line = end + 1;
  }
  return count;
}

const char* argValue(const char* arg, const char* key) {
  size_t n = strlen(key);
  return strncmp(arg, key, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* The common checks on the log and the last error: err=, log=, nolog=, warns=. */
void checkLog(int argc, char** argv) {
  char* log = readLog();
  const char* v;
  int warns = -1;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "err"))) EXPECT(strstr(chrThreadLastError(), v), "last error lacks '%s': %s", v,
                                               chrThreadLastError());
    if ((v = argValue(argv[i], "log"))) EXPECT(strstr(log, v), "log lacks '%s':\n%s", v, log);
    if ((v = argValue(argv[i], "nolog"))) EXPECT(!strstr(log, v), "log has '%s':\n%s", v, log);
    if ((v = argValue(argv[i], "warns"))) warns = atoi(v);
  }
  if (warns >= 0) EXPECT(countLines(log, "NCCL WARN", NULL) == warns, "expected %d WARN lines:\n%s", warns, log);
  free(log);
}
