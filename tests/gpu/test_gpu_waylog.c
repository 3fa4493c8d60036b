/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_waylog.c (gpu.waylog, runs anywhere): way_log.c's reading of the copy-engine counts lines,
 * against logs written here: every letter that must pass and some that must fail, a rank whose line
 * is missing, and two ranks' lines in one log (one process, two communicators).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "way_log.h"

static int failures;

static void expect(const char* path, int rank, char want, int pass) {
  const int got = chrWayLogVerdict(path, rank, want, 0) == 0;
  if (got != pass) {
    fprintf(stderr, "FAIL: rank %d against '%c' %s, expected %s\n", rank, want, got ? "passed" : "failed",
            pass ? "to pass" : "to fail");
    failures++;
  }
}

int main(void) {
  char path[] = "/tmp/chorus-waylog-XXXXXX";
  const int fd = mkstemp(path);
  FILE* f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) {
    perror("gpu.waylog: a temporary log");
    return 1;
  }
  fprintf(f, "host:1:2 [0] NCCL INFO comm 0x1 rank 0: copy-engine transfers: sends 5 by the engine, 2 by kernel; "
             "receives 7 direct, 0 by file descriptor, 0 staged, 0 pulled; 0 peers' buffers opened (0.000 ms), 0 "
             "exported (0.000 ms)\n");
  fprintf(f, "host:1:3 [1] NCCL INFO some other line that mentions rank 1: and nothing else\n");
  fprintf(f, "host:1:3 [1] NCCL INFO comm 0x2 rank 1: copy-engine transfers: sends 0 by the engine, 0 by kernel; "
             "receives 3 direct, 0 by file descriptor, 0 staged, 4 pulled; 1 peers' buffers opened (0.100 ms), 0 "
             "exported (0.000 ms)\n");
  fprintf(f, "host:1:4 [2] NCCL INFO comm 0x3 rank 2: copy-engine transfers: sends 1 by the engine, 0 by kernel; "
             "receives 0 direct, 2 by file descriptor, 0 staged, 0 pulled; 0 peers' buffers opened (0.000 ms), 2 "
             "exported (0.300 ms)\n");
  fprintf(f, "host:1:5 [3] NCCL INFO comm 0x4 rank 3: copy-engine transfers: sends 0 by the engine, 0 by kernel; "
             "receives 0 direct, 0 by file descriptor, 6 staged, 0 pulled; 0 peers' buffers opened (0.000 ms), 0 "
             "exported (0.000 ms)\n");
  fclose(f);
  expect(path, 0, 'd', 1);
  expect(path, 0, '*', 1);
  expect(path, 0, 'p', 0);
  expect(path, 0, '-', 0);
  expect(path, 1, 'p', 1);
  expect(path, 1, 'd', 1); /* direct with no descriptor or staging: pulls beside it are allowed */
  expect(path, 1, 's', 0);
  expect(path, 2, 'f', 1);
  expect(path, 2, 'd', 0);
  expect(path, 3, 's', 1);
  expect(path, 3, 'p', 0);
  expect(path, 4, '-', 1); /* no line: nothing went by the engine */
  expect(path, 4, '*', 0);
  expect(path, 4, 'd', 0);
  expect(path, 0, '?', 0); /* an unknown letter never passes */
  unlink(path);
  printf("gpu.waylog: 15 verdicts, %d wrong\n", failures);
  return failures ? 1 : 0;
}
