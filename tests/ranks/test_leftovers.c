/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_leftovers: when every rank of a job is killed (SIGKILL, as the OOM killer does), nothing of it
 * stays in /dev/shm.
 *
 *   test_leftovers <nranks> [rounds]
 *
 * Each round forks nranks ranks that connect and tear down shm links without pause (a split, an
 * all-reduce on the child, the child destroyed, again), so that a kill lands in the middle of link
 * setup as often as in the data path; after a delay that grows round by round (0 to ~300 ms, plus
 * random jitter) all of them are SIGKILLed at once. Then /dev/shm must hold no name made by any of
 * them (their names carry their pid). Names found are removed, so a failure does not leak into later
 * runs, and printed.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"

#define MAX_RANKS 16

static void rankLoop(int rank, int nranks, int idFd) {
  ncclUniqueId id;
  if (chrLaunchReadFull(idFd, &id, sizeof(id)) != 0) _exit(2);
  ncclComm_t comm = NULL;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) _exit(3);
  static float buf[1 << 16];
  for (;;) {
    ncclComm_t child = NULL;
    if (ncclCommSplit(comm, 0, rank, &child, NULL) != ncclSuccess) _exit(4);
    if (ncclAllReduce(buf, buf, 1 << 16, ncclFloat, ncclSum, child, NULL) != ncclSuccess) _exit(5);
    if (ncclCommDestroy(child) != ncclSuccess) _exit(6);
  }
}

/* Count (and remove) the /dev/shm names of these pids. */
static int leftovers(const pid_t* pids, int n) {
  int found = 0;
  DIR* dir = opendir("/dev/shm");
  if (dir == NULL) return 0;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    for (int r = 0; r < n; r++) {
      char prefix[64];
      snprintf(prefix, sizeof(prefix), "chorus-shm-%d-", (int)pids[r]);
      if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
      char path[512];
      snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
      fprintf(stderr, "left behind: %s\n", path);
      unlink(path);
      found++;
    }
  }
  closedir(dir);
  return found;
}

int main(int argc, char** argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  int rounds = argc > 2 ? atoi(argv[2]) : 12;
  if (nranks < 2 || nranks > MAX_RANKS || rounds < 1) {
    fprintf(stderr, "usage: test_leftovers <nranks 2..%d> [rounds]\n", MAX_RANKS);
    return 2;
  }
  srand((unsigned)time(NULL) ^ (unsigned)getpid());
  int total = 0;
  for (int round = 0; round < rounds; round++) {
    pid_t pids[MAX_RANKS];
    int fds[MAX_RANKS];
    pid_t parent = getpid();
    fflush(NULL);
    for (int r = 0; r < nranks; r++) {
      int p[2];
      if (pipe(p) != 0) return 1;
      pids[r] = fork();
      if (pids[r] < 0) return 1;
      if (pids[r] == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        close(p[1]);
        rankLoop(r, nranks, p[0]);
      }
      close(p[0]);
      fds[r] = p[1];
    }
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
      return 1;
    }
    for (int r = 0; r < nranks; r++) {
      if (write(fds[r], &id, sizeof(id)) != (ssize_t)sizeof(id)) return 1;
      close(fds[r]);
    }
    int delayMs = round * 25 + rand() % 20;
    chrLaunchSleepMs(delayMs);
    for (int r = 0; r < nranks; r++) kill(pids[r], SIGKILL);
    int early = 0;
    for (int r = 0; r < nranks; r++) {
      int status = 0;
      waitpid(pids[r], &status, 0);
      if (!WIFSIGNALED(status)) early++;
    }
    /* The kills go out one by one, so a rank may see a killed peer first and end with an error (a dead
     * peer is an error at once): fine, only what is left behind counts. */
    (void)early;
    int n = leftovers(pids, nranks);
    if (n) fprintf(stderr, "round %d (killed after %d ms): %d names left in /dev/shm\n", round, delayMs, n);
    total += n;
  }
  return total == 0 ? 0 : 1;
}
