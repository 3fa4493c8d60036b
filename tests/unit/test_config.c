/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config.c: configuration loading (env > files > default), INI sections, problems, plugin sections.
 * Usage: test_config <case>; test_config.cmake registers one ctest per case.
 */
#include "config_test_util.h"

/* Every level at once: each parameter is set down to a different level, so each must show the
 * value and the exact source of the strongest level that sets it. */
static void caseOrder(void) {
  char conf[512], userIni[512], sysIni[512], userNccl[512], sysNccl[512], src[600];
  testPath(conf, sizeof(conf), "named.ini");
  testPath(userIni, sizeof(userIni), ".config/chorus.ini");
  testPath(sysIni, sizeof(sysIni), "etc/chorus.ini");
  testPath(userNccl, sizeof(userNccl), ".nccl.conf");
  testPath(sysNccl, sizeof(sysNccl), "etc/nccl.conf");
  /* ALGO: env. PROTO: named file. HOSTID: ~/.config/chorus.ini. COMM_ID: /etc/chorus.ini.
   * SOCKET_IFNAME: ~/.nccl.conf. SOCKET_FAMILY: /etc/nccl.conf. NET: default. Every value is valid
   * (an invalid one would not be applied) and each level has its own. */
  writeTestFile("etc/nccl.conf",
                "NCCL_ALGO=nvls_tree\nNCCL_PROTO=^simple\nNCCL_HOSTID=sysnccl\nNCCL_COMM_ID=sysnccl\n"
                "NCCL_SOCKET_IFNAME=sysnccl\nNCCL_SOCKET_FAMILY=AF_INET6\nNCCL_BUFFSIZE=393216\n");
  writeTestFile(".nccl.conf",
                "NCCL_ALGO=collnet\nNCCL_PROTO=^ll\nNCCL_HOSTID=usernccl\nNCCL_COMM_ID=usernccl\n"
                "NCCL_SOCKET_IFNAME=usernccl\nNCCL_BUFFSIZE=327680\n");
  writeTestFile("etc/chorus.ini",
                "[core]\nALGO=nvls\nPROTO=ll128\nHOSTID=sysini\nCOMM_ID=sysini\nBUFFSIZE=262144\n");
  writeTestFile(".config/chorus.ini", "[core]\nalgo=pat\nproto=ll\nhostid=userini\nbuffsize=196608\n");
  writeTestFile("named.ini", "[core]\n; comment\nNCCL_ALGO=tree\nNCCL_PROTO=simple\nNCCL_BUFFSIZE=131072\n");
  setenv("CHORUS_CONF", conf, 1);
  setenv("NCCL_ALGO", "ring", 1);
  chrConfigReload();

  EXPECT_STR(chrParamStr(CHR_P_ALGO), "ring");
  EXPECT_STR(chrParamSource(CHR_P_ALGO), "env");
  EXPECT_STR(chrParamStr(CHR_P_PROTO), "simple");
  snprintf(src, sizeof(src), "%s:4", conf);
  EXPECT_STR(chrParamSource(CHR_P_PROTO), src);
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "userini");
  snprintf(src, sizeof(src), "%s:4", userIni);
  EXPECT_STR(chrParamSource(CHR_P_HOSTID), src);
  EXPECT_STR(chrParamStr(CHR_P_COMM_ID), "sysini");
  snprintf(src, sizeof(src), "%s:5", sysIni);
  EXPECT_STR(chrParamSource(CHR_P_COMM_ID), src);
  EXPECT_STR(chrParamStr(CHR_P_SOCKET_IFNAME), "usernccl");
  snprintf(src, sizeof(src), "%s:5", userNccl);
  EXPECT_STR(chrParamSource(CHR_P_SOCKET_IFNAME), src);
  EXPECT_STR(chrParamStr(CHR_P_SOCKET_FAMILY), "AF_INET6");
  snprintf(src, sizeof(src), "%s:6", sysNccl);
  EXPECT_STR(chrParamSource(CHR_P_SOCKET_FAMILY), src);
  EXPECT_STR(chrParamStr(CHR_P_NET), "");
  EXPECT_STR(chrParamSource(CHR_P_NET), "default");
  EXPECT(chrParamInt(CHR_P_BUFFSIZE) == 131072, "BUFFSIZE %lld", (long long)chrParamInt(CHR_P_BUFFSIZE));
  EXPECT(chrParamInt(CHR_P_TIMEOUT) == 0, "TIMEOUT %lld", (long long)chrParamInt(CHR_P_TIMEOUT));
  EXPECT_STR(chrParamSource(CHR_P_TIMEOUT), "default");
  EXPECT_STR(chrConfigProblems(), "");

  /* Env integers, and an empty env variable counts as unset. */
  setenv("NCCL_BUFFSIZE", "0x100000", 1);
  setenv("NCCL_PROTO", "", 1);
  chrConfigReload();
  EXPECT(chrParamInt(CHR_P_BUFFSIZE) == 1048576, "BUFFSIZE %lld", (long long)chrParamInt(CHR_P_BUFFSIZE));
  EXPECT_STR(chrParamSource(CHR_P_BUFFSIZE), "env");
  EXPECT_STR(chrParamStr(CHR_P_PROTO), "simple");

  /* Strings from an older load stay valid after a reload. */
  const char* old = chrParamStr(CHR_P_HOSTID);
  unsetenv("CHORUS_CONF");
  setenv("NCCL_HOSTID", "again", 1);
  chrConfigReload();
  EXPECT_STR(old, "userini");
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "again");
  /* Without CHORUS_CONF, PROTO comes from the next level down. */
  EXPECT_STR(chrParamStr(CHR_P_PROTO), "ll");
}

/* CHORUS_CONF wins over NCCL_CONF_FILE; NCCL_CONF_FILE alone works; a named file that is missing is a problem. */
static void caseNamedFile(void) {
  char a[512], b[512], missing[512], src[600];
  testPath(a, sizeof(a), "a.ini");
  testPath(b, sizeof(b), "b.conf");
  testPath(missing, sizeof(missing), "missing.ini");
  writeTestFile("a.ini", "[core]\nHOSTID=from-chorus-conf\n");
  writeTestFile("b.conf", "# flat file\nNCCL_HOSTID=from-nccl-conf-file\nNCCL_NET=x\n");
  setenv("CHORUS_CONF", a, 1);
  setenv("NCCL_CONF_FILE", b, 1);
  chrConfigReload();
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "from-chorus-conf");
  EXPECT_STR(chrParamStr(CHR_P_NET), ""); /* b.conf is not read when CHORUS_CONF is set */
  unsetenv("CHORUS_CONF");
  chrConfigReload();
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "from-nccl-conf-file");
  snprintf(src, sizeof(src), "%s:2", b);
  EXPECT_STR(chrParamSource(CHR_P_HOSTID), src);
  setenv("NCCL_CONF_FILE", missing, 1);
  chrConfigReload();
  EXPECT(strstr(chrConfigProblems(), missing) && strstr(chrConfigProblems(), "cannot open"), "problems: %s",
         chrConfigProblems());
  EXPECT_STR(chrParamSource(CHR_P_HOSTID), "default");
}

/* NCCL's flat format: comments, blank and indented lines, unknown keys kept for the environment. */
static void caseFlat(void) {
  char path[512], src[600];
  testPath(path, sizeof(path), ".nccl.conf");
  writeTestFile(".nccl.conf",
                "# NCCL flat file\n"
                "NCCL_DEBUG=WARN\n"
                "\n"
                "   NCCL_SOCKET_IFNAME=eth0\n"
                "  NCCL_IB_HCA=mlx5_0\n"
                "NCCL_BUFFSIZE = 1048576\n"
                "NCCL_COMM_ID=10.0.0.1:1234\n");
  chrConfigReload();
  EXPECT_STR(chrParamStr(CHR_P_DEBUG), "WARN");
  EXPECT_STR(chrParamStr(CHR_P_SOCKET_IFNAME), "eth0");
  snprintf(src, sizeof(src), "%s:4", path);
  EXPECT_STR(chrParamSource(CHR_P_SOCKET_IFNAME), src);
  EXPECT(chrParamInt(CHR_P_BUFFSIZE) == 1048576, "BUFFSIZE %lld", (long long)chrParamInt(CHR_P_BUFFSIZE));
  EXPECT_STR(chrParamStr(CHR_P_COMM_ID), "10.0.0.1:1234");
  EXPECT_STR(chrConfigProblems(), "");

  /* NCCL_IB_HCA is not ours: it is kept as a top-level key and exported, as NCCL does with nccl.conf. */
  unsetenv("NCCL_IB_HCA");
  chrConfigExportSection("");
  EXPECT(getenv("NCCL_IB_HCA") && strcmp(getenv("NCCL_IB_HCA"), "mlx5_0") == 0, "NCCL_IB_HCA=%s",
         getenv("NCCL_IB_HCA") ? getenv("NCCL_IB_HCA") : "(unset)");
}

/* Short keys inside sections, full names anywhere, case-insensitive; a short key in the wrong core
 * section is unknown there. */
static void caseSections(void) {
  char path[512];
  testPath(path, sizeof(path), "s.ini");
  writeTestFile("s.ini",
                "[Core]\n"
                "debug_subsys = INIT,NET\n"
                "NCCL_MAX_NCHANNELS = 8\n"
                "[net]\n"
                "net_plugin = ib,socket ; inline comment\n"
                "NET = IB\n"
                "[tuner]\n"
                "tuner_plugin = /opt/x.so\n"
                "[profiler]\n"
                "PROFILER_PLUGIN = none\n"
                "[net]\n"
                "algo = ring\n");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  EXPECT_STR(chrParamStr(CHR_P_DEBUG_SUBSYS), "INIT,NET");
  EXPECT(chrParamInt(CHR_P_MAX_NCHANNELS) == 8, "MAX_NCHANNELS %lld", (long long)chrParamInt(CHR_P_MAX_NCHANNELS));
  EXPECT_STR(chrParamStr(CHR_P_NET_PLUGIN), "ib,socket");
  EXPECT_STR(chrParamStr(CHR_P_NET), "IB");
  EXPECT_STR(chrParamStr(CHR_P_TUNER_PLUGIN), "/opt/x.so");
  EXPECT_STR(chrParamStr(CHR_P_PROFILER_PLUGIN), "none");
  EXPECT_STR(chrParamStr(CHR_P_ALGO), ""); /* "algo" belongs to [core], not [net] */
  char expect[700];
  snprintf(expect, sizeof(expect),
           "%s:12: unknown key 'algo' in section [net]; ignored (closest known name: ALGO in [core])\n", path);
  EXPECT_STR(chrConfigProblems(), expect);
}

/* Unknown keys and bad integers are reported (with file:line) and not applied; the next level applies.
 * A line that is not key=value rejects its whole file (test_config_check covers that in detail). */
static void caseProblems(void) {
  char path[512], bad[512];
  testPath(path, sizeof(path), "p.ini");
  testPath(bad, sizeof(bad), ".config/chorus.ini");
  writeTestFile(".nccl.conf", "NCCL_BUFFSIZE=77777\n");
  writeTestFile("p.ini",
                "[core]\n"
                "NO_SUCH_KEY = 1\n"
                "BUFFSIZE = 12abc\n"
                "TIMEOUT = 99999999999999999999999\n"
                "MIN_NCHANNELS = 3\n");
  writeTestFile(".config/chorus.ini", "[core]\nmax_nchannels = 5\nthis line has no equals sign\n");
  setenv("CHORUS_CONF", path, 1);
  setenv("CHORUS_BOOTSTRAP_TIMEOUT", "soon", 1);
  chrConfigReload();
  const char* p = chrConfigProblems();
  char line[700];
  snprintf(line, sizeof(line), "%s:2: unknown key 'NO_SUCH_KEY' in section [core]; ignored", path);
  EXPECT(strstr(p, line), "problems:\n%s", p);
  snprintf(line, sizeof(line), "%s:3: NCCL_BUFFSIZE='12abc' is not an integer; accepted: an integer from", path);
  EXPECT(strstr(p, line), "problems:\n%s", p);
  snprintf(line, sizeof(line), "%s:4: CHORUS_TIMEOUT='99999999999999999999999' is not an integer", path);
  EXPECT(strstr(p, line), "problems:\n%s", p);
  snprintf(line, sizeof(line), "%s:3: expected key = value", bad);
  EXPECT(strstr(p, line), "problems:\n%s", p);
  EXPECT(strstr(p, "environment: CHORUS_BOOTSTRAP_TIMEOUT='soon' is not an integer"), "problems:\n%s", p);
  EXPECT(chrParamInt(CHR_P_BUFFSIZE) == 77777, "BUFFSIZE %lld", (long long)chrParamInt(CHR_P_BUFFSIZE));
  EXPECT(chrParamInt(CHR_P_TIMEOUT) == 0, "TIMEOUT %lld", (long long)chrParamInt(CHR_P_TIMEOUT));
  EXPECT(chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT) == 0, "BOOTSTRAP_TIMEOUT %lld",
         (long long)chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT));
  EXPECT(chrParamInt(CHR_P_MIN_NCHANNELS) == 3, "a bad value stopped the rest of its file");
  EXPECT(chrParamInt(CHR_P_MAX_NCHANNELS) == 2, "a key of a malformed file was applied");
}

typedef struct {
  char text[4096];
} Collected;

static void collect(void* arg, const char* key, const char* value, const char* source) {
  Collected* c = arg;
  size_t len = strlen(c->text);
  snprintf(c->text + len, sizeof(c->text) - len, "%s=%s@%s\n", key, value, source);
}

static void collectSection(void* arg, const char* section) {
  Collected* c = arg;
  size_t len = strlen(c->text);
  snprintf(c->text + len, sizeof(c->text) - len, "[%s]", section);
}

/* Plugin sections: raw keys with file:line, in file order; the stronger file wins; export keeps env. */
static void casePluginSections(void) {
  char path[512], user[512], expect[2048];
  testPath(path, sizeof(path), "plug.ini");
  testPath(user, sizeof(user), ".config/chorus.ini");
  writeTestFile(".config/chorus.ini", "[net.socket]\nNCCL_SOCKET_NTHREADS=1\nFI_EXTRA_ONLY_HERE=yes\n");
  writeTestFile(".nccl.conf", "NCCL_NSOCKS_PERTHREAD=99\nNCCL_FLAT_ONLY=flat\n");
  writeTestFile("plug.ini",
                "[net.socket]\n"
                "NCCL_NSOCKS_PERTHREAD = 4\n"
                "NCCL_SOCKET_NTHREADS = 2\n"
                "[tuner.table]\n"
                "CHORUS_TUNER_TABLE = /x/table.csv\n");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  Collected c = {{0}};
  chrConfigForEachInSection("net.socket", collect, &c);
  snprintf(expect, sizeof(expect),
           "NCCL_NSOCKS_PERTHREAD=4@%s:2\nNCCL_SOCKET_NTHREADS=2@%s:3\nFI_EXTRA_ONLY_HERE=yes@%s:3\n", path, path, user);
  EXPECT_STR(c.text, expect);
  Collected s = {{0}};
  chrConfigForEachSection(collectSection, &s);
  EXPECT_STR(s.text, "[net.socket][tuner.table]");
  EXPECT_STR(chrConfigProblems(), "");

  setenv("NCCL_SOCKET_NTHREADS", "7", 1);
  unsetenv("NCCL_NSOCKS_PERTHREAD");
  chrConfigExportSection("net.socket");
  EXPECT_STR(getenv("NCCL_NSOCKS_PERTHREAD"), "4");
  EXPECT_STR(getenv("NCCL_SOCKET_NTHREADS"), "7"); /* already set: not overwritten */
  EXPECT(getenv("CHORUS_TUNER_TABLE") == NULL, "another section was exported");
  /* Top-level keys of flat files go along, after the section's own (which win). */
  EXPECT_STR(getenv("NCCL_FLAT_ONLY"), "flat");
}

/* Keys exported for plugins are named like the settings of NCCL, Chorus and the network libraries:
 * a file cannot set LD_PRELOAD or PATH for the process; each refused key is a note naming it. */
static void caseExportNames(void) {
  char path[512];
  testPath(path, sizeof(path), "export.ini");
  writeTestFile(".nccl.conf", "LD_PRELOAD=/tmp/evil.so\nNCCL_FLAT_OK=1\n");
  writeTestFile("export.ini", "[net.ofi]\nFI_PROVIDER=tcp\nOFI_NCCL_X=2\nPATH=/evil\nLD_LIBRARY_PATH=/evil\n");
  setenv("CHORUS_CONF", path, 1);
  unsetenv("LD_PRELOAD");
  char* oldPath = strdup(getenv("PATH") ? getenv("PATH") : "");
  chrConfigReload();
  chrConfigExportSection("net.ofi");
  EXPECT_STR(getenv("FI_PROVIDER"), "tcp");
  EXPECT_STR(getenv("OFI_NCCL_X"), "2");
  EXPECT_STR(getenv("NCCL_FLAT_OK"), "1");
  EXPECT(getenv("LD_PRELOAD") == NULL, "LD_PRELOAD exported: %s", getenv("LD_PRELOAD"));
  EXPECT_STR(getenv("PATH"), oldPath);
  const char* p = chrConfigProblems();
  EXPECT(strstr(p, "key LD_PRELOAD is not exported") && strstr(p, "key PATH of [net.ofi] is not exported") &&
             strstr(p, "key LD_LIBRARY_PATH of [net.ofi] is not exported"),
         "problems: %s", p);
  EXPECT(chrConfigValidate() == ncclSuccess, "a refused export is a note, not an error");
  free(oldPath);
}

/* Only regular files of at most 1 MiB are read: a device, a directory, a FIFO (whose open must not
 * wait for a writer), an unreadable /proc file and a large file each fail with the reason. */
static void caseSpecialFiles(void) {
  char dir[512], fifo[512], big[512];
  testPath(dir, sizeof(dir), "adir");
  testPath(fifo, sizeof(fifo), "afifo");
  testPath(big, sizeof(big), "big.ini");
  mkdir(dir, 0755);
  EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
  char* content = malloc(CHR_CONFIG_MAX_FILE + 64);
  memset(content, ';', CHR_CONFIG_MAX_FILE + 62);
  content[CHR_CONFIG_MAX_FILE + 62] = '\n';
  content[CHR_CONFIG_MAX_FILE + 63] = '\0';
  writeTestFile("big.ini", content);
  free(content);
  const struct {
    const char* path;
    const char* why;
  } cases[] = {{"/dev/zero", "not read (a character device)"}, {dir, "not read (a directory)"},
               {fifo, "not read (a FIFO)"}, {"/proc/self/mem", "cannot read: "},
               {big, "not read (larger than 1048576 bytes)"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    setenv("CHORUS_CONF", cases[i].path, 1);
    chrConfigReload();
    EXPECT(strstr(chrConfigProblems(), cases[i].why) != NULL, "%s: problems: %s", cases[i].path, chrConfigProblems());
    EXPECT(chrConfigValidate() != ncclSuccess, "%s: the configuration was accepted", cases[i].path);
  }
}

/* Values longer than inih's line buffer work up to 4 KiB; longer ones are a problem. */
static void caseLongValue(void) {
  char path[512];
  testPath(path, sizeof(path), "long.ini");
  size_t n = 3000, big = 5000;
  char* content = malloc(n + big + 200);
  char* p = content;
  p += sprintf(p, "[core]\nCOMM_ID = ");
  memset(p, 'a', n), p += n;
  p += sprintf(p, "  ; trailing comment\nHOSTID=");
  memset(p, 'b', big), p += big;
  p += sprintf(p, "\nNCCL_NET=after\n");
  writeTestFile("long.ini", content);
  free(content);
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  EXPECT(strlen(chrParamStr(CHR_P_COMM_ID)) == n, "COMM_ID length %zu", strlen(chrParamStr(CHR_P_COMM_ID)));
  EXPECT(strspn(chrParamStr(CHR_P_COMM_ID), "a") == n, "COMM_ID content");
  EXPECT_STR(chrParamStr(CHR_P_HOSTID), "");
  EXPECT(strstr(chrConfigProblems(), "HOSTID is longer than 4096 bytes"), "problems: %s", chrConfigProblems());
  EXPECT_STR(chrParamStr(CHR_P_NET), "after");
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    void (*run)(void);
  } cases[] = {{"order", caseOrder},       {"named_file", caseNamedFile},       {"flat", caseFlat},
               {"sections", caseSections}, {"problems", caseProblems},          {"plugin_sections", casePluginSections},
               {"long_value", caseLongValue},  {"export_names", caseExportNames},   {"special_files", caseSpecialFiles}};
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
