/* SPDX-License-Identifier: BSD-3-Clause */
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
#include "loader_check.h"

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
