/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config_log.c: NCCL_DEBUG / NCCL_DEBUG_SUBSYS / NCCL_DEBUG_FILE, line format, thread safety,
 * config problems printed as WARN, and the per-thread last error.
 * Usage: test_config_log <case>; test_config.cmake registers one ctest per case.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "config_test_util.h"
#include "log/log.h"

/* Points the log at a fresh file (name with %p) and re-reads the settings. Returns the expanded path. */
static void logToFile(const char* name, char* expanded, size_t size) {
  char pattern[512];
  snprintf(pattern, sizeof(pattern), "%s/%s.%%p", testDir, name);
  setenv("NCCL_DEBUG_FILE", pattern, 1);
  snprintf(expanded, size, "%s/%s.%d", testDir, name, (int)getpid());
  chrLogReset();
}

static int countLinesWith(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static void emitSample(void) {
  INFO(NCCL_INIT, "sample-init");
  INFO(NCCL_NET, "sample-net");
  INFO(NCCL_COLL, "sample-coll");
  TRACE(NCCL_NET, "sample-trace");
  WARN("sample-warn %d", 42);
}

static void caseLevelsAndSubsys(void) {
  char path[600];
  char host[256];
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = '\0';
  if (strchr(host, '.')) *strchr(host, '.') = '\0';

  setenv("NCCL_DEBUG", "info", 1); /* case-insensitive */
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  logToFile("info", path, sizeof(path));
  emitSample();
  char* text = readWholeFile(path);
  EXPECT(text != NULL, "no log file %s", path);
  if (!text) return;
  char prefix[400];
  snprintf(prefix, sizeof(prefix), "%s:%d:%d [0] NCCL INFO sample-init\n", host, (int)getpid(),
           (int)syscall(SYS_gettid));
  EXPECT(strstr(text, prefix), "expected line '%s' in:\n%s", prefix, text);
  EXPECT(countLinesWith(text, "NCCL INFO sample-net\n") == 1, "%s", text);
  EXPECT(!strstr(text, "sample-coll"), "COLL not in NCCL_DEBUG_SUBSYS:\n%s", text);
  EXPECT(!strstr(text, "sample-trace"), "TRACE above INFO:\n%s", text);
  EXPECT(strstr(text, "test_config_log.c:") && strstr(text, " NCCL WARN sample-warn 42\n"), "%s", text);
  /* The settings that are not defaults are reported once, under ENV... which is not in INIT,NET. */
  EXPECT(!strstr(text, "set by environment"), "%s", text);
  free(text);

  /* ^ form and TRACE: everything but INIT. ENV is now on, so the env settings are listed. */
  setenv("NCCL_DEBUG", "TRACE", 1);
  setenv("NCCL_DEBUG_SUBSYS", "^INIT", 1);
  logToFile("trace", path, sizeof(path));
  emitSample();
  text = readWholeFile(path);
  EXPECT(text != NULL, "no log file %s", path);
  if (!text) return;
  EXPECT(!strstr(text, "sample-init"), "%s", text);
  EXPECT(strstr(text, "NCCL INFO sample-net\n") && strstr(text, "NCCL INFO sample-coll\n"), "%s", text);
  EXPECT(strstr(text, "test_config_log.c:") && strstr(text, "NCCL TRACE sample-trace\n"), "%s", text);
  EXPECT(strstr(text, "NCCL INFO NCCL_DEBUG_SUBSYS set by environment to ^INIT\n"), "%s", text);
  free(text);

  /* WARN level: only warnings. */
  setenv("NCCL_DEBUG", "WARN", 1);
  unsetenv("NCCL_DEBUG_SUBSYS");
  logToFile("warn", path, sizeof(path));
  emitSample();
  text = readWholeFile(path);
  EXPECT(text && countLinesWith(text, "\n") == 1 && strstr(text, "NCCL WARN sample-warn 42\n"), "%s",
         text ? text : "(none)");
  free(text);
  EXPECT(chrLogEnabled(NCCL_LOG_WARN, NCCL_ALL) && !chrLogEnabled(NCCL_LOG_INFO, NCCL_ALL), "enabled");

  /* Unset: nothing at all, and no file is created. */
  unsetenv("NCCL_DEBUG");
  logToFile("none", path, sizeof(path));
  emitSample();
  EXPECT(access(path, F_OK) != 0, "log file created with NCCL_DEBUG unset");
  EXPECT(!chrLogEnabled(NCCL_LOG_WARN, NCCL_ALL), "WARN enabled with NCCL_DEBUG unset");
}

/* NCCL_DEBUG_FILE that cannot be opened: lines go to stdout, after a warning saying so. */
static void caseFileFallback(void) {
  char out[600];
  testPath(out, sizeof(out), "stdout.txt");
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  FILE* f = freopen(out, "w", stdout);
  EXPECT(f != NULL, "freopen");
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_FILE", "/nonexistent-dir/chorus/%h.log", 1);
  chrLogReset();
  INFO(NCCL_INIT, "to-stdout");
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  char* text = readWholeFile(out);
  EXPECT(text && strstr(text, "NCCL WARN NCCL_DEBUG_FILE: cannot open '/nonexistent-dir/chorus/") &&
             strstr(text, "NCCL INFO to-stdout\n"),
         "%s", text ? text : "(none)");
  free(text);
}

/* Config problems reach the log as WARN lines from chrConfigValidate (communicator init), not when
 * the log starts; an unknown key is warned about once, however often the log restarts. */
static void caseProblemsLogged(void) {
  char conf[512], path[600];
  testPath(conf, sizeof(conf), "bad.ini");
  writeTestFile("bad.ini", "[core]\nbogus_key = 1\n");
  setenv("CHORUS_CONF", conf, 1);
  setenv("NCCL_DEBUG", "WARN", 1);
  logToFile("problems", path, sizeof(path));
  INFO(NCCL_INIT, "trigger");
  char* text = readWholeFile(path);
  EXPECT(text == NULL || !strstr(text, "bogus_key"), "warned before init:\n%s", text);
  free(text);
  for (int i = 0; i < 2; i++) {
    EXPECT(chrConfigValidate() == ncclSuccess, "an unknown key is an error: %s", chrThreadLastError());
    chrLogReset();
  }
  text = readWholeFile(path);
  char expect[700];
  snprintf(expect, sizeof(expect),
           "NCCL WARN config: %s:2: unknown key 'bogus_key' in section [core]; ignored (closest known name: ", conf);
  EXPECT(text && countLinesWith(text, expect) == 1, "expected '%s' once in:\n%s", expect, text ? text : "(none)");
  free(text);
}

#define LOG_THREADS 4
#define LOG_LINES 300

static void* logLines(void* arg) {
  long t = (long)arg;
  for (int i = 0; i < LOG_LINES; i++) INFO(NCCL_COLL, "thread %ld line %d payload-%0100d", t, i, i);
  return NULL;
}

/* Lines of concurrent threads never interleave: each is complete, and none is lost. */
static void caseThreads(void) {
  char path[600];
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "COLL", 1);
  logToFile("threads", path, sizeof(path));
  pthread_t th[LOG_THREADS];
  for (long t = 0; t < LOG_THREADS; t++) pthread_create(&th[t], NULL, logLines, (void*)t);
  for (int t = 0; t < LOG_THREADS; t++) pthread_join(th[t], NULL);
  char* text = readWholeFile(path);
  EXPECT(text != NULL, "no log");
  if (!text) return;
  int good = 0, lines = 0;
  for (char* line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    lines++;
    long t;
    int i, j;
    const char* body = strstr(line, "NCCL INFO thread ");
    if (body && sscanf(body, "NCCL INFO thread %ld line %d payload-%d", &t, &i, &j) == 3 && i == j &&
        strlen(strstr(line, "payload-")) == strlen("payload-") + 100)
      good++;
  }
  EXPECT(lines == LOG_THREADS * LOG_LINES && good == lines, "%d lines, %d intact", lines, good);
  free(text);
}

typedef struct {
  const char* message;
  char seen[1100];
  char seenAfterOther[1100];
  pthread_barrier_t* barrier;
} FailArgs;

static void* failInThread(void* arg) {
  FailArgs* a = arg;
  EXPECT_STR(chrThreadLastError(), "");
  ncclResult_t r = chrFail(ncclInvalidUsage, "%s", a->message);
  EXPECT(r == ncclInvalidUsage, "chrFail returned %d", r);
  snprintf(a->seen, sizeof(a->seen), "%s", chrThreadLastError());
  pthread_barrier_wait(a->barrier); /* both threads have failed before either looks again */
  snprintf(a->seenAfterOther, sizeof(a->seenAfterOther), "%s", chrThreadLastError());
  return NULL;
}

/* The last error is per thread; long messages are cut at 1023 bytes. */
static void caseLastError(void) {
  setenv("NCCL_DEBUG", "WARN", 1);
  char path[600];
  logToFile("lasterror", path, sizeof(path));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  FailArgs a = {.message = "first thread failed", .barrier = &barrier};
  FailArgs b = {.message = "second thread failed", .barrier = &barrier};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, failInThread, &a);
  pthread_create(&tb, NULL, failInThread, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  EXPECT_STR(a.seen, "first thread failed");
  EXPECT_STR(a.seenAfterOther, "first thread failed");
  EXPECT_STR(b.seen, "second thread failed");
  EXPECT_STR(b.seenAfterOther, "second thread failed");
  EXPECT_STR(chrThreadLastError(), "");

  char* text = readWholeFile(path);
  EXPECT(text && strstr(text, "NCCL WARN first thread failed\n") && strstr(text, "NCCL WARN second thread failed\n"),
         "%s", text ? text : "(none)");
  free(text);

  char big[2000];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  chrSetLastError("%s", big);
  EXPECT(strlen(chrThreadLastError()) == 1023, "length %zu", strlen(chrThreadLastError()));
  chrClearLastError();
  EXPECT_STR(chrThreadLastError(), "");
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    void (*run)(void);
  } cases[] = {{"levels", caseLevelsAndSubsys}, {"file_fallback", caseFileFallback},
               {"problems_logged", caseProblemsLogged}, {"threads", caseThreads}, {"last_error", caseLastError}};
  if (argc != 2) {
    fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (strcmp(argv[1], cases[i].name) != 0) continue;
    isolateConfig();
    cases[i].run();
    return finishTest();
  }
  fprintf(stderr, "unknown case '%s'\n", argv[1]);
  return 2;
}
