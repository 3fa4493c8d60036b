/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * way_log.c: way_log.h.
 */
#include "way_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl.h"

static char wayLog[256];

void chrWayLogStart(const char* tag) {
  const char* w = getenv("CHORUS_TEST_EXPECT_WAY");
  if (w == NULL || *w == 0) return;
  const char* tmp = getenv("TMPDIR");
  snprintf(wayLog, sizeof wayLog, "%s/chorus-test-way-%d-%s.log", tmp && *tmp ? tmp : "/tmp", (int)getpid(), tag);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "P2P", 1);
  setenv("NCCL_DEBUG_FILE", wayLog, 1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit(); /* a parent's ncclGetUniqueId may have read the settings before a fork */
#pragma GCC diagnostic pop
}

int chrWayLogVerdict(const char* path, int rank, char want, int report) {
  char needle[64], line[1024];
  snprintf(needle, sizeof needle, "rank %d: copy-engine transfers: ", rank);
  unsigned long long engine = 0, kernel = 0, direct = 0, fd = 0, staged = 0, pulled = 0;
  int found = 0;
  FILE* f = fopen(path, "r");
  while (f && !found && fgets(line, sizeof line, f)) {
    const char* at = strstr(line, needle);
    found = at && sscanf(at + strlen(needle), "sends %llu by the engine, %llu by kernel; receives %llu direct, "
                         "%llu by file descriptor, %llu staged, %llu pulled", &engine, &kernel, &direct, &fd, &staged,
                         &pulled) == 6;
  }
  if (f) fclose(f);
  const int ok = want == '-' ? direct + fd + staged + pulled == 0
                 : want == 'd' ? direct > 0 && fd + staged == 0
                 : want == 'f' ? fd > 0 && direct + staged == 0
                 : want == 's' ? staged > 0 && direct + fd == 0
                 : want == 'p' ? pulled > 0 && staged == 0
                 : want == '*';
  if (ok && (found || want == '-')) {
    if (found && report) printf("rank %d: sends %llu by the engine, %llu by kernel; receives %llu direct, %llu by descriptor, "
                      "%llu staged, %llu pulled\n", rank, engine, kernel, direct, fd, staged, pulled);
    return 0;
  }
  if (!report) return 1;
  fprintf(stderr, "FAIL rank %d: copy-engine counts %s (sends %llu engine, %llu kernel; receives %llu direct, %llu "
          "by descriptor, %llu staged, %llu pulled), expected '%c'\n", rank, found ? "wrong" : "not logged", engine,
          kernel, direct, fd, staged, pulled, want);
  return 1;
}

int chrWayLogCheck(int first, int count) {
  if (wayLog[0] == 0) return 0;
  const char* w = getenv("CHORUS_TEST_EXPECT_WAY");
  int failures = 0;
  for (int r = first; r < first + count; r++)
    failures += chrWayLogVerdict(wayLog, r, strlen(w) > (size_t)r ? w[r] : w[0], 1);
  unlink(wayLog);
  return failures;
}
