/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config_check.c: chrConfigValidate, the check a communicator init runs first: values that are
 * not valid, unknown names (one WARN each per process, with the closest name), malformed files (not
 * applied at all), and an init that fails on them.
 * Usage: test_config_check <case>; test_config_check.cmake registers one ctest per case.
 */
#include "config_test_util.h"
#include "log/log.h"
#include "nccl.h"

static char logPath[600];

/* WARN lines go to a file of the test dir, which later checks read. */
static void logToFile(void) {
  char pattern[512];
  snprintf(pattern, sizeof(pattern), "%s/log.%%p", testDir);
  snprintf(logPath, sizeof(logPath), "%s/log.%d", testDir, (int)getpid());
  setenv("NCCL_DEBUG", "WARN", 1);
  setenv("NCCL_DEBUG_FILE", pattern, 1);
  chrLogReset();
}

static int countIn(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static int logCount(const char* needle) {
  char* text = readWholeFile(logPath);
  int n = text ? countIn(text, needle) : 0;
  free(text);
  return n;
}

/* Sets one variable, reloads, and expects init's check to fail naming all of `needles` (NULL-ended). */
static void expectInvalid(const char* name, const char* value, const char* const* needles) {
  setenv(name, value, 1);
  chrConfigReload();
  chrClearLastError();
  ncclResult_t res = chrConfigValidate();
  const char* err = chrThreadLastError();
  EXPECT(res == ncclInvalidUsage, "%s=%s: result %d", name, value, res);
  for (const char* const* n = needles; *n; n++) {
    EXPECT(strstr(err, *n) != NULL, "%s=%s: last error lacks '%s': %s", name, value, *n, err);
    EXPECT(logCount(*n) > 0, "%s=%s: no WARN with '%s'", name, value, *n);
  }
  int id = chrParamLookup(name);
  EXPECT(strcmp(chrParamSource((chrParamId)id), "env") != 0, "%s=%s was applied", name, value);
  unsetenv(name);
  chrConfigReload();
}

static void caseAlgoProto(void) {
  logToFile();
  EXPECT(chrConfigValidate() == ncclSuccess, "default config fails: %s", chrThreadLastError());
  expectInvalid("NCCL_ALGO", "foo",
                (const char* const[]){"environment: NCCL_ALGO='foo'", "unknown algorithm \"foo\"", "tree, ring", NULL});
  expectInvalid("NCCL_PROTO", "bar",
                (const char* const[]){"NCCL_PROTO='bar'", "unknown protocol \"bar\"", "ll, ll128, simple", NULL});
  expectInvalid("NCCL_ALGO", "allreduce:",
                (const char* const[]){"NCCL_ALGO='allreduce:'", "empty list", "tree, ring", NULL});
  expectInvalid("CHORUS_TRANSPORT", "tcp", (const char* const[]){"CHORUS_TRANSPORT='tcp'", "auto, net, shm", NULL});
  expectInvalid("NCCL_SOCKET_FAMILY", "ipx", (const char* const[]){"NCCL_SOCKET_FAMILY='ipx'", "AF_INET6", NULL});
  expectInvalid("NCCL_NET_GDR_LEVEL", "NEAR", (const char* const[]){"NCCL_NET_GDR_LEVEL='NEAR'", "PIX, PXB", "0-4", NULL});
  expectInvalid("NCCL_NET_GDR_LEVEL", "phb", (const char* const[]){"NCCL_NET_GDR_LEVEL='phb'", NULL});
  expectInvalid("NCCL_NETDEVS_POLICY", "MAX:0", (const char* const[]){"NCCL_NETDEVS_POLICY='MAX:0'", "AUTO, ALL, MAX:N", NULL});
  expectInvalid("NCCL_NETDEVS_POLICY", "MAX:2x", (const char* const[]){"NCCL_NETDEVS_POLICY='MAX:2x'", NULL});
  expectInvalid("NCCL_NETDEVS_POLICY", "some", (const char* const[]){"NCCL_NETDEVS_POLICY='some'", NULL});
  /* Valid ones pass. */
  setenv("NCCL_ALGO", "allreduce:tree;ring", 1);
  setenv("NCCL_PROTO", "^ll128", 1);
  setenv("CHORUS_TRANSPORT", "shm", 1);
  setenv("NCCL_NET_GDR_LEVEL", "3", 1);
  setenv("NCCL_NETDEVS_POLICY", "max:4", 1);
  chrConfigReload();
  EXPECT(chrConfigValidate() == ncclSuccess, "valid settings fail: %s", chrThreadLastError());
  unsetenv("NCCL_NET_GDR_LEVEL");
  unsetenv("NCCL_NETDEVS_POLICY");
  EXPECT_STR(chrParamStr(CHR_P_ALGO), "allreduce:tree;ring");
}

static void caseRanges(void) {
  logToFile();
  expectInvalid("NCCL_BUFFSIZE", "-1",
                (const char* const[]){"NCCL_BUFFSIZE='-1' is out of range", "from 32768 to 1073741824", NULL});
  expectInvalid("NCCL_MAX_NCHANNELS", "0",
                (const char* const[]){"NCCL_MAX_NCHANNELS='0' is out of range", "from 1 to 64", NULL});
  expectInvalid("CHORUS_TIMEOUT", "soon", (const char* const[]){"CHORUS_TIMEOUT='soon' is not an integer", NULL});
  expectInvalid("NCCL_SHM_DISABLE", "2", (const char* const[]){"NCCL_SHM_DISABLE='2'", "from 0 to 1", NULL});
  /* A bad value is not applied: the next level (here the default) decides, unclamped. */
  setenv("NCCL_BUFFSIZE", "1", 1);
  chrConfigReload();
  EXPECT(chrParamInt(CHR_P_BUFFSIZE) == 4194304, "BUFFSIZE %lld", (long long)chrParamInt(CHR_P_BUFFSIZE));
  /* The ends of a range are valid. */
  setenv("NCCL_BUFFSIZE", "32768", 1);
  setenv("NCCL_MAX_NCHANNELS", "64", 1);
  chrConfigReload();
  EXPECT(chrConfigValidate() == ncclSuccess, "ends of ranges: %s", chrThreadLastError());
  /* Every INT parameter has a range that holds its default; no STR parameter has one. */
  for (int i = 0; i < CHR_P_COUNT; i++) {
    const chrParamDesc* d = &chrParamTable[i];
    int64_t def = 0;
    if (d->isInt)
      EXPECT(d->min <= d->max && chrConfigParseInt(d->def, &def) == 0 && def >= d->min && def <= d->max,
             "%s: default %s outside [%lld, %lld]", d->name, d->def, (long long)d->min, (long long)d->max);
    else
      EXPECT(d->min == 0 && d->max == 0, "%s is a string with a range", d->name);
  }
}

/* A bad value in a file: named by file:line; the file's other keys still apply. */
static void caseFileValue(void) {
  char path[512], want[700];
  testPath(path, sizeof(path), "v.ini");
  writeTestFile("v.ini", "[core]\nhostid = h1\nmax_nchannels = 100\nNCCL_ALGO = rign\n");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  chrClearLastError();
  EXPECT(chrConfigValidate() == ncclInvalidUsage, "bad file values accepted");
  snprintf(want, sizeof(want), "%s:3: NCCL_MAX_NCHANNELS='100' is out of range", path);
  EXPECT(strstr(chrThreadLastError(), want), "last error: %s", chrThreadLastError());
  snprintf(want, sizeof(want), "%s:4: NCCL_ALGO='rign'", path);
  EXPECT(strstr(chrThreadLastError(), want), "last error: %s", chrThreadLastError());
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "h1");
  EXPECT(chrParamInt(CHR_P_MAX_NCHANNELS) == 2, "MAX_NCHANNELS %lld", (long long)chrParamInt(CHR_P_MAX_NCHANNELS));
}

/* The verdict belongs to a load: it does not change until the next reload. */
static void caseCached(void) {
  setenv("NCCL_PROTO", "bar", 1);
  chrConfigReload();
  unsetenv("NCCL_PROTO");
  for (int i = 0; i < 1000; i++)
    if (chrConfigValidate() != ncclInvalidUsage) {
      EXPECT(0, "call %d: the verdict changed without a reload", i);
      break;
    }
  chrConfigReload();
  EXPECT(chrConfigValidate() == ncclSuccess, "after reload: %s", chrThreadLastError());
}

/* The check runs at init: a one-rank communicator fails to start, before any collective. */
static void caseInitFails(void) {
  static const char* const bad[][2] = {{"NCCL_ALGO", "foo"}, {"NCCL_BUFFSIZE", "-1"}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv(bad[i][0], bad[i][1], 1);
    chrConfigReload();
    ncclUniqueId id;
    EXPECT(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId: %s", ncclGetLastError(NULL));
    ncclComm_t comm = NULL;
    ncclResult_t res = ncclCommInitRank(&comm, 1, id, 0);
    EXPECT(res == ncclInvalidUsage && comm == NULL, "%s=%s: init gave %d", bad[i][0], bad[i][1], res);
    char want[100];
    snprintf(want, sizeof(want), "%s='%s'", bad[i][0], bad[i][1]);
    EXPECT(strstr(ncclGetLastError(NULL), want), "last error: %s", ncclGetLastError(NULL));
    if (comm) ncclCommDestroy(comm);
    unsetenv(bad[i][0]);
  }
  chrConfigReload();
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess,
         "a valid config fails: %s", ncclGetLastError(NULL));
  if (comm) ncclCommDestroy(comm);
}

/* Unknown CHORUS_ variables and unknown keys of core sections: one WARN per name per process, with the
 * closest known name; they are warnings, not errors. Unknown NCCL_ variables are not ours to judge. */
static void caseUnknownNames(void) {
  char path[512];
  testPath(path, sizeof(path), "u.ini");
  writeTestFile("u.ini", "[core]\nbuffsiz = 65536\n[net]\nalgo = ring\n[net.socket]\nCHORUS_PLUGIN_KEY = 1\n");
  setenv("CHORUS_CONF", path, 1);
  setenv("CHORUS_TIMOUT", "5", 1);
  setenv("CHORUS_SOCKET_BUFSIZE", "65536", 1); /* read by the socket plugin: known */
  setenv("NCCL_NOT_A_CHORUS_THING", "1", 1);
  setenv("CHORUS_PLUGIN_KEY", "1", 1); /* a key of a plugin section, exported before the plugin's init */
  logToFile();
  for (int round = 0; round < 3; round++) {
    chrConfigReload();
    chrLogReset();
    EXPECT(chrConfigValidate() == ncclSuccess, "round %d: unknown names are errors: %s", round, chrThreadLastError());
  }
  EXPECT(logCount("CHORUS_TIMOUT") == 1, "CHORUS_TIMOUT warned %d times", logCount("CHORUS_TIMOUT"));
  EXPECT(logCount("unknown variable CHORUS_TIMOUT ignored (closest known name: CHORUS_TIMEOUT)") == 1, "suggestion");
  EXPECT(logCount("'buffsiz' in section [core]; ignored (closest known name: BUFFSIZE)") == 1, "buffsiz");
  EXPECT(logCount("'algo' in section [net]; ignored (closest known name: ALGO in [core])") == 1, "algo");
  EXPECT(logCount("NCCL_NOT_A_CHORUS_THING") == 0, "an NCCL_ variable was warned about");
  EXPECT(logCount("CHORUS_SOCKET_BUFSIZE") == 0, "a plugin's variable was warned about");
  EXPECT(logCount("CHORUS_PLUGIN_KEY") == 0, "a plugin section's key was warned about");
  if (testFailures) {
    char* text = readWholeFile(logPath);
    fprintf(stderr, "log:\n%s", text ? text : "(none)");
    free(text);
  }
}

/* A malformed file: nothing of it applies or reaches the environment; init's check names file:line. */
static void expectRejected(const char* name, const char* content, const char* what) {
  char path[512], want[700];
  testPath(path, sizeof(path), name);
  writeTestFile(name, content);
  setenv("CHORUS_CONF", path, 1);
  unsetenv("NCCL_MALFORMED_KEY");
  chrConfigReload();
  chrClearLastError();
  EXPECT(chrConfigValidate() == ncclInvalidUsage, "%s accepted", name);
  snprintf(want, sizeof(want), "%s:%s", path, what);
  EXPECT(strstr(chrThreadLastError(), want), "%s: last error lacks '%s': %s", name, want, chrThreadLastError());
  EXPECT(strstr(chrConfigProblems(), want), "%s: problems lack '%s': %s", name, want, chrConfigProblems());
  EXPECT_STR(chrParamSource(CHR_P_HOSTID), "default");
  chrConfigExportSection("net.socket");
  chrConfigExportSection("");
  EXPECT(getenv("NCCL_MALFORMED_KEY") == NULL, "%s: a key of a rejected file was exported", name);
}

static void caseMalformed(void) {
  expectRejected("section.ini", "[core]\nhostid = h\n[net.socket\nNCCL_MALFORMED_KEY = 1\n",
                 "3: '[' without a closing ']'");
  expectRejected("noequals.ini", "[net.socket]\nNCCL_MALFORMED_KEY = 1\n[core]\nhostid = h\njust some words\n",
                 "5: expected key = value");
  expectRejected("colon.ini", "; comment\nNCCL_HOSTID=h\nNCCL_MALFORMED_KEY=1\nNCCL_NET: x\n", "4: expected key = value");
  expectRejected("nokey.ini", "NCCL_HOSTID=h\nNCCL_MALFORMED_KEY=1\n = x\n", "3: no key before '='");
  /* The same content, well formed, applies (the test above is not vacuous); a byte order mark is fine. */
  char path[512];
  testPath(path, sizeof(path), "good.ini");
  writeTestFile("good.ini", "\xEF\xBB\xBF[core]\nhostid = h\n[net.socket]\nNCCL_MALFORMED_KEY = 1\n");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  EXPECT(chrConfigValidate() == ncclSuccess, "good file: %s", chrThreadLastError());
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "h");
  chrConfigExportSection("net.socket");
  EXPECT_STR(getenv("NCCL_MALFORMED_KEY"), "1");
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    void (*run)(void);
  } cases[] = {{"algo_proto", caseAlgoProto},     {"ranges", caseRanges},       {"file_value", caseFileValue},
               {"cached", caseCached},            {"init_fails", caseInitFails}, {"unknown_names", caseUnknownNames},
               {"malformed", caseMalformed}};
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
