/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_test_util.h: helpers shared by the config/log unit tests (header-only, static functions).
 * Each test isolates itself: a fresh temp HOME, a temp "system" dir instead of /etc, and no
 * parameter variables inherited from the caller's environment.
 */
#ifndef CHORUS_CONFIG_TEST_UTIL_H_
#define CHORUS_CONFIG_TEST_UTIL_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_store.h"
#include "config/param.h"

#define CHR_TEST_HELPER static __attribute__((unused))

static int testFailures;

#define EXPECT(cond, ...)                                          \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                \
      fputc('\n', stderr);                                         \
      testFailures++;                                              \
    }                                                              \
  } while (0)

#define EXPECT_STR(actual, expected)                                                     \
  do {                                                                                   \
    const char* a_ = (actual);                                                           \
    const char* e_ = (expected);                                                         \
    EXPECT(a_ && strcmp(a_, e_) == 0, "got '%s', expected '%s'", a_ ? a_ : "(null)", e_); \
  } while (0)

static char testDir[256];

CHR_TEST_HELPER void testPath(char* out, size_t size, const char* name) { snprintf(out, size, "%s/%s", testDir, name); }

/* Writes `content` to testDir/name (creating subfolders one level deep as needed). */
CHR_TEST_HELPER void writeTestFile(const char* name, const char* content) {
  char path[512];
  testPath(path, sizeof(path), name);
  char* slash = strrchr(path, '/');
  if (slash && slash > path + strlen(testDir)) {
    *slash = '\0';
    char* inner = path + strlen(testDir) + 1;
    for (char* p = inner; *p; p++)
      if (*p == '/') {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
      }
    mkdir(path, 0755);
    *slash = '/';
  }
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  fputs(content, f);
  fclose(f);
}

CHR_TEST_HELPER char* readWholeFile(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char* buf = malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len - 1 == 0) buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  fclose(f);
  return buf;
}

CHR_TEST_HELPER void removeTree(const char* dir) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* Fresh temp dir as HOME, testDir/etc as the system dir, no inherited parameter variables. */
CHR_TEST_HELPER void isolateConfig(void) {
  snprintf(testDir, sizeof(testDir), "/tmp/chorus-cfgtest-XXXXXX");
  if (!mkdtemp(testDir)) {
    perror("mkdtemp");
    exit(2);
  }
  for (int i = 0; i < CHR_P_COUNT; i++) unsetenv(chrParamName((chrParamId)i));
  unsetenv("CHORUS_CONF");
  unsetenv("NCCL_CONF_FILE");
  setenv("HOME", testDir, 1);
  char etc[512];
  testPath(etc, sizeof(etc), "etc");
  mkdir(etc, 0755);
  chrConfigSetSystemDir(etc);
  chrConfigReload();
}

CHR_TEST_HELPER int finishTest(void) {
  if (testFailures == 0) removeTree(testDir);
  else fprintf(stderr, "%d check(s) failed; files kept in %s\n", testFailures, testDir);
  return testFailures ? 1 : 0;
}

#endif /* CHORUS_CONFIG_TEST_UTIL_H_ */
