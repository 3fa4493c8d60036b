/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_own_cores.c: ranks learn at init whether any two ranks of their host may run on one CPU
 * (util/cpu_mask.h), and only ranks on CPUs of their own poll without yielding (util/idle.h).
 * Two ranks are forked per case, each bound as the case says before ncclCommInitRank.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "commstate/comm.h"
#include "nccl.h"
#include "util/cpu_mask.h"
#include "util/idle.h"

static int failures;
#define EXPECT(cond)                                                                            \
  do {                                                                                          \
    if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } \
  } while (0)

static void masksCases(void) {
  struct chrCpuMask a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.known = b.known = 1;
  EXPECT(!chrCpuMasksDisjoint(&a, &b)); /* empty masks run nowhere: not "own" CPUs */
  a.bits[0] = 0x1;
  b.bits[15] = 1ull << 63; /* CPU 1023 */
  EXPECT(chrCpuMasksDisjoint(&a, &b));
  b.bits[0] = 0x3;
  EXPECT(!chrCpuMasksDisjoint(&a, &b));
  b.bits[0] = 0x2;
  EXPECT(chrCpuMasksDisjoint(&a, &b));
  b.known = 0;
  EXPECT(!chrCpuMasksDisjoint(&a, &b));
  struct chrCpuMask mine;
  chrCpuMaskOfThread(&mine);
  EXPECT(mine.known);
  EXPECT(!chrCpuMasksDisjoint(&mine, &mine));
}

static void idleCases(void) {
  /* On CPUs of its own a rank spins (0) until its budget is spent, then blocks (1), without yields. */
  EXPECT(chrIdlePoll(0, 2000000) == 0);
  EXPECT(chrIdlePoll(1999999, 2000000) == 0);
  EXPECT(chrIdlePoll(2000000, 2000000) == 1);
  /* Shared CPUs: a short spin, then yields, then blocking after 2 ms (util/idle.h). */
  EXPECT(chrIdlePoll(0, 0) == 0);
  EXPECT(chrIdlePoll(2000000, 0) == 1);
}

/* One rank (a fresh process, so that it reads CHORUS_OWN_CORE_SPIN_US itself): bound to `cpu`
 * (-1: left as it is), reports its spin budget in microseconds through its exit status (255: failed). */
static int rankMain(const char* idHex, int rank, int cpu) {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof id.internal; i++) {
    unsigned v;
    if (sscanf(idHex + 2 * i, "%2x", &v) != 1) return 255;
    id.internal[i] = (char)v;
  }
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return 255;
  }
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(NULL));
    return 255;
  }
  const uint64_t us = comm->ownCoreSpinNs / 1000;
  ncclCommDestroy(comm);
  return us > 254 ? 254 : (int)us;
}

/* Both ranks' spin budgets (us, capped at 254) with the given bindings and CHORUS_OWN_CORE_SPIN_US. */
static void runCase(const char* name, int cpu0, int cpu1, const char* spinUs, int want) {
  if (spinUs) setenv("CHORUS_OWN_CORE_SPIN_US", spinUs, 1);
  else unsetenv("CHORUS_OWN_CORE_SPIN_US");
  ncclUniqueId id;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
  char idHex[2 * sizeof id.internal + 1];
  for (size_t i = 0; i < sizeof id.internal; i++) sprintf(idHex + 2 * i, "%02x", (unsigned char)id.internal[i]);
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      char rank[8], cpu[16];
      snprintf(rank, sizeof rank, "%d", r);
      snprintf(cpu, sizeof cpu, "%d", r == 0 ? cpu0 : cpu1);
      execl("/proc/self/exe", "test_own_cores", "rank", idHex, rank, cpu, (char*)NULL);
      _exit(255);
    }
  }
  for (int r = 0; r < 2; r++) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    const int got = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (got != want) {
      fprintf(stderr, "FAIL case %s rank %d: spin budget %d us, expected %d\n", name, r, got, want);
      failures++;
    }
  }
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "rank") == 0) return rankMain(argv[2], atoi(argv[3]), atoi(argv[4]));
  setenv("CHORUS_SHARED_GPU", "1", 1); /* on a GPU machine both ranks take GPU 0: allowed here */
  masksCases();
  idleCases();
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT(sched_getaffinity(0, sizeof set, &set) == 0);
  int cpus[2] = {-1, -1}, n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &set)) cpus[n++] = c;
  runCase("one CPU for both", cpus[0], cpus[0], NULL, 0);
  runCase("one bound, one free", cpus[0], -1, NULL, 0);
  if (n == 2) {
    runCase("a CPU each, budget 200 us", cpus[0], cpus[1], "200", 200);
    runCase("a CPU each, budget 0", cpus[0], cpus[1], "0", 0);
    runCase("a CPU each, default budget", cpus[0], cpus[1], NULL, 254); /* 2000 us, capped */
  } else {
    printf("one CPU only: the cases with a CPU per rank are skipped\n");
  }
  if (failures) return 1;
  printf("own cores: all cases passed\n");
  return 0;
}
