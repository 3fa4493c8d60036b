/*
 * test_profiler_loader.c: conformance tests of the profiler plugin loader (core/plugin/profiler*.c):
 * where the library comes from and what happens when it cannot be used. One scenario per process;
 * the ctest entry (tests/plugins/profiler.cmake) sets NCCL_PROFILER_PLUGIN and the rest.
 *
 *   test_profiler_loader open [checks]   one chrProfilerOpen, then checks:
 *        net=1           open the net plugin (NCCL_NET_PLUGIN) first and hand it to the loader
 *        rc=<int>        expected result (default 0)       null=1   expect no profiler
 *        pick=<s>        name of the profiler expected     version=<N>  its ABI version
 *        mask=<int>      the activation mask expected after init
 *        again=1         open and close a second time (repeat failures must not WARN again)
 *        err=<s> log=<s> nolog=<s> warns=<N>   the last error / the log (NCCL_DEBUG_FILE) contain s /
 *                        lack s / hold N WARN lines
 *   test_profiler_loader describe out=<s> ...   chrProfilerDescribe output contains each s
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"
#include "plugin/net_plugin.h"
#include "plugin/profiler_plugin.h"

#define EXPECT(cond, ...)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

#define OK(call)                                                                                  \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    EXPECT(r_ == ncclSuccess, "%s returned %d (last error: %s)", #call, (int)r_, chrThreadLastError()); \
  } while (0)

static char* readLog(void) {
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

static int countLines(const char* text, const char* a, const char* b) {
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

static const char* argValue(const char* arg, const char* key) {
  size_t n = strlen(key);
  return strncmp(arg, key, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/* The common checks on the log and the last error: err=, log=, nolog=, warns=. */
static void checkLog(int argc, char** argv) {
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

static int runOpen(int argc, char** argv) {
  int wantRc = 0, wantNull = 0, again = 0, version = -1, useNet = 0, mask = -1, checkMask = 0;
  const char *pick = NULL, *v;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "rc"))) wantRc = atoi(v);
    else if ((v = argValue(argv[i], "pick"))) pick = v;
    else if ((v = argValue(argv[i], "version"))) version = atoi(v);
    else if ((v = argValue(argv[i], "null"))) wantNull = atoi(v);
    else if ((v = argValue(argv[i], "again"))) again = atoi(v);
    else if ((v = argValue(argv[i], "net"))) useNet = atoi(v);
    else if ((v = argValue(argv[i], "mask"))) mask = (int)strtol(v, NULL, 0), checkMask = 1;
  }
  struct chrNet* net = NULL;
  if (useNet) {
    OK(chrNetOpen(0x77ull, NULL, -1, &net));
    EXPECT(net != NULL, "no net plugin");
  }
  for (int round = 0; round < (again ? 2 : 1); round++) {
    struct chrProfCommInfo info;
    memset(&info, 0, sizeof(info));
    info.commHash = 0x77ull + (uint64_t)round;
    info.commName = "loader";
    info.nNodes = 1;
    info.nRanks = 2;
    info.rank = 1;
    info.net = net;
    struct chrProfiler* p = (struct chrProfiler*)1;
    ncclResult_t rc = chrProfilerOpen(&info, &p);
    EXPECT((int)rc == wantRc, "chrProfilerOpen returned %d, expected %d (last error: %s)", (int)rc, wantRc,
           chrThreadLastError());
    EXPECT(rc == ncclSuccess || p == NULL, "a failed open left a profiler");
    if (rc != ncclSuccess) continue;
    if (wantNull) {
      EXPECT(p == NULL, "expected no profiler, got %s", p ? p->name : "");
      continue;
    }
    EXPECT(p != NULL, "no profiler");
    if (pick) EXPECT(strcmp(p->name, pick) == 0, "picked %s, expected %s", p->name, pick);
    if (version >= 0) EXPECT(p->version == version, "version %d, expected %d", p->version, version);
    if (checkMask) EXPECT(chrProfMask == mask, "mask 0x%x, expected 0x%x", chrProfMask, mask);
    OK(chrProfilerClose(p));
  }
  if (net) OK(chrNetClose(net));
  checkLog(argc, argv);
  return 0;
}

static int runDescribe(int argc, char** argv) {
  char* text = NULL;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  chrProfilerDescribe(out);
  fclose(out);
  const char* v;
  for (int i = 2; i < argc; i++)
    if ((v = argValue(argv[i], "out"))) EXPECT(strstr(text, v), "description lacks '%s':\n%s", v, text);
  free(text);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "open") == 0) return runOpen(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "describe") == 0) return runDescribe(argc, argv);
  fprintf(stderr, "usage: %s open [checks] | describe [out=...]\n", argv[0]);
  return 2;
}
