/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kill: a rank SIGKILLs itself in the middle of a large all-reduce; every other rank must get an
 * error (from the call, or from ncclCommGetAsyncError) within CHORUS_TIMEOUT plus a margin, then
 * ncclCommAbort must return, and no process may hang.
 *
 *   test_kill <nranks> <victim> [--hosts K] [--bytes B] [--delay-ms D] [--deadline SEC]
 *
 * The ranks are forked by this file's own loop (not chrLaunchRanks, which counts a rank killed by a
 * signal as a failure): here the victim must end by SIGKILL and every survivor with status 0. The
 * victim's kill time and each survivor's error and abort times go through a shared anonymous mapping
 * (CLOCK_MONOTONIC is the same clock in every process), so the parent checks the bounds itself.
 * The delay before the kill is random (50-800 ms after the first large all-reduce starts) unless
 * --delay-ms fixes it; a failure prints the delay used, to reproduce it.
 * CHORUS_TIMEOUT defaults to 10 s here when the environment does not set it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "nccl.h"

#define MAX_RANKS 16
#define MARGIN_SEC 10.0 /* beyond CHORUS_TIMEOUT: scheduling on 2 loaded cores, abort, exit */

typedef struct {
  double startAt;              /* when the victim started its first large all-reduce */
  double killAt;               /* just before the victim's SIGKILL */
  double errorAt[MAX_RANKS];   /* when a survivor saw the error */
  double abortedAt[MAX_RANKS]; /* when its ncclCommAbort returned */
  int callResult[MAX_RANKS];   /* what the failing call returned */
  int asyncResult[MAX_RANKS];  /* ncclCommGetAsyncError after it */
  int abortResult[MAX_RANKS];
  int iterations[MAX_RANKS]; /* large all-reduces completed before the error */
} sharedState;

typedef struct {
  int nranks, victim, nhosts, delayMs, deadlineSec;
  size_t bytes;
  double timeoutSec;
  sharedState* shared;
} testArgs;

static int fail(int rank, const char* what, ncclResult_t res, ncclComm_t comm) {
  fprintf(stderr, "kill test: rank %d: %s: %s (%s)\n", rank, what, ncclGetErrorString(res), ncclGetLastError(comm));
  return 1;
}

static const testArgs* killerArgs;

static void* killer(void* unused) {
  (void)unused;
  const testArgs* a = killerArgs;
  while (a->shared->startAt == 0) chrLaunchSleepMs(1);
  chrLaunchSleepMs(a->delayMs);
  a->shared->killAt = chrLaunchNowSec();
  kill(getpid(), SIGKILL);
  return NULL;
}

static int rankMain(int rank, const ncclUniqueId* id, const testArgs* a) {
  sharedState* sh = a->shared;
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, a->nranks, *id, rank);
  if (res != ncclSuccess) return fail(rank, "ncclCommInitRank", res, NULL);
  /* Connected and working before anyone dies. */
  int x[1031];
  for (int i = 0; i < 1031; i++) x[i] = i + rank;
  res = ncclAllReduce(x, x, 1031, ncclInt32, ncclSum, comm, NULL);
  if (res != ncclSuccess) return fail(rank, "warm-up ncclAllReduce", res, comm);
  for (int i = 0; i < 1031; i++)
    if (x[i] != a->nranks * i + a->nranks * (a->nranks - 1) / 2) {
      fprintf(stderr, "kill test: rank %d: warm-up all-reduce element %d wrong\n", rank, i);
      return 1;
    }
  size_t count = a->bytes / sizeof(float);
  float* buf = calloc(count, sizeof(float));
  if (!buf) return fail(rank, "calloc", ncclSystemError, comm);
  if (rank == a->victim) {
    pthread_t th;
    killerArgs = a;
    if (pthread_create(&th, NULL, killer, NULL) != 0) return fail(rank, "pthread_create", ncclSystemError, comm);
    sh->startAt = chrLaunchNowSec();
  }
  /* Survivors: all-reduce until one fails (the victim runs until it is killed). */
  double giveUp = chrLaunchNowSec() + a->deadlineSec;
  int it = 0;
  for (; chrLaunchNowSec() < giveUp; it++) {
    res = ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, NULL);
    if (res != ncclSuccess) break;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
      res = async;
      break;
    }
  }
  sh->errorAt[rank] = chrLaunchNowSec();
  sh->iterations[rank] = it;
  sh->callResult[rank] = res;
  if (res == ncclSuccess || res == ncclInProgress) {
    fprintf(stderr, "kill test: rank %d: %d all-reduces, no error within %d s\n", rank, it, a->deadlineSec);
    return 1;
  }
  ncclResult_t async = ncclSuccess;
  ncclResult_t q = ncclCommGetAsyncError(comm, &async);
  sh->asyncResult[rank] = q == ncclSuccess ? (int)async : -1;
  int bad = 0;
  if (q != ncclSuccess || async == ncclSuccess || async == ncclInProgress) {
    fprintf(stderr, "kill test: rank %d: after %s from the call, ncclCommGetAsyncError returned %s with state %s\n",
            rank, ncclGetErrorString(res), ncclGetErrorString(q), ncclGetErrorString(async));
    bad = 1;
  }
  const char* last = ncclGetLastError(comm);
  if (!last || !*last) {
    fprintf(stderr, "kill test: rank %d: the error left no last-error text\n", rank);
    bad = 1;
  }
  sh->abortResult[rank] = ncclCommAbort(comm);
  sh->abortedAt[rank] = chrLaunchNowSec();
  free(buf);
  return bad || sh->abortResult[rank] != ncclSuccess;
}

static void runChild(int rank, int idFd, pid_t parent, const testArgs* a) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  if (a->nhosts > 1) {
    char host[32];
    snprintf(host, sizeof(host), "host%d", rank % a->nhosts);
    setenv("NCCL_HOSTID", host, 1);
  }
  ncclUniqueId id;
  if (chrLaunchReadFull(idFd, &id, sizeof(id)) != 0) _exit(1);
  close(idFd);
  int rc = rankMain(rank, &id, a);
  fflush(stderr);
  _exit(rc ? 1 : 0);
}

static void killAll(const pid_t* pids, const int* done, int n) {
  for (int r = 0; r < n; r++)
    if (pids[r] > 0 && !done[r]) kill(pids[r], SIGKILL);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <nranks> <victim> [--hosts K] [--bytes B] [--delay-ms D] [--deadline SEC]\n", argv[0]);
    return 2;
  }
  testArgs a = {atoi(argv[1]), atoi(argv[2]), 1, -1, 40, 64u << 20, 10, NULL};
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--hosts") == 0)
      a.nhosts = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--bytes") == 0)
      a.bytes = (size_t)strtod(argv[i + 1], NULL);
    else if (strcmp(argv[i], "--delay-ms") == 0)
      a.delayMs = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--deadline") == 0)
      a.deadlineSec = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (a.nranks < 2 || a.nranks > MAX_RANKS || a.victim < 0 || a.victim >= a.nranks || a.nhosts < 1 ||
      a.bytes < sizeof(float)) {
    fprintf(stderr, "%s: bad arguments\n", argv[0]);
    return 2;
  }
  setenv("CHORUS_TIMEOUT", "10", 0);
  a.timeoutSec = atof(getenv("CHORUS_TIMEOUT"));
  if (a.delayMs < 0) {
    srand((unsigned)(time(NULL) ^ getpid()));
    a.delayMs = 50 + rand() % 751;
  }
  a.shared = mmap(NULL, sizeof(sharedState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (a.shared == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  memset(a.shared, 0, sizeof(sharedState));

  pid_t pids[MAX_RANKS] = {0};
  int idFds[MAX_RANKS], done[MAX_RANKS] = {0}, status[MAX_RANKS] = {0};
  double endedAt[MAX_RANKS] = {0};
  pid_t parent = getpid();
  fflush(NULL);
  for (int r = 0; r < a.nranks; r++) {
    int fds[2];
    if (pipe(fds) != 0) {
      perror("pipe");
      killAll(pids, done, r);
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      killAll(pids, done, r);
      return 1;
    }
    if (pid == 0) {
      for (int q = 0; q < r; q++) close(idFds[q]);
      close(fds[1]);
      runChild(r, fds[0], parent, &a);
    }
    close(fds[0]);
    pids[r] = pid;
    idFds[r] = fds[1];
  }
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  signal(SIGPIPE, SIG_IGN);
  for (int r = 0; r < a.nranks; r++) {
    if (res == ncclSuccess && write(idFds[r], &id, sizeof(id)) != (ssize_t)sizeof(id)) res = ncclSystemError;
    close(idFds[r]);
  }
  int failed = 0;
  if (res != ncclSuccess) {
    fprintf(stderr, "kill test: ncclGetUniqueId failed: %s\n", ncclGetErrorString(res));
    killAll(pids, done, a.nranks);
    failed = 1;
  }

  /* Wait: the whole run within --deadline + the detection bound; after the victim's death, every
   * survivor within CHORUS_TIMEOUT + MARGIN_SEC. */
  const double bound = a.timeoutSec + MARGIN_SEC;
  double deadline = chrLaunchNowSec() + a.deadlineSec + bound, victimDiedAt = 0;
  int remaining = a.nranks, killed = failed;
  while (remaining > 0) {
    int progressed = 0;
    for (int r = 0; r < a.nranks; r++) {
      if (done[r]) continue;
      pid_t w = waitpid(pids[r], &status[r], WNOHANG);
      if (w == 0 || (w < 0 && errno == EINTR)) continue;
      done[r] = 1;
      endedAt[r] = chrLaunchNowSec();
      remaining--;
      progressed = 1;
      if (r == a.victim) victimDiedAt = endedAt[r];
    }
    double now = chrLaunchNowSec();
    if (!killed && (now > deadline || (victimDiedAt > 0 && now > victimDiedAt + bound))) {
      fprintf(stderr, "kill test: ranks still running %.1f s after the victim died (bound %.0f s):",
              victimDiedAt > 0 ? now - victimDiedAt : -1.0, bound);
      for (int r = 0; r < a.nranks; r++)
        if (!done[r]) fprintf(stderr, " %d", r);
      fprintf(stderr, " (killed)\n");
      killAll(pids, done, a.nranks);
      killed = failed = 1;
    }
    if (!progressed && remaining > 0) chrLaunchSleepMs(10);
  }

  sharedState* sh = a.shared;
  for (int r = 0; r < a.nranks; r++) {
    int st = status[r];
    if (r == a.victim) {
      if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL || sh->killAt == 0) {
        fprintf(stderr, "kill test: victim rank %d did not die by its own SIGKILL (status 0x%x)\n", r, st);
        failed = 1;
      }
      continue;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      if (WIFSIGNALED(st))
        fprintf(stderr, "kill test: rank %d killed by signal %d\n", r, WTERMSIG(st));
      else
        fprintf(stderr, "kill test: rank %d exited with status %d\n", r, WEXITSTATUS(st));
      failed = 1;
      continue;
    }
    double detect = sh->errorAt[r] - sh->killAt, abortTook = sh->abortedAt[r] - sh->errorAt[r];
    if (sh->killAt == 0 || detect > bound || abortTook > bound) {
      fprintf(stderr, "kill test: rank %d: error %.2f s after the kill, abort took %.2f s (bound %.0f s each)\n", r,
              detect, abortTook, bound);
      failed = 1;
    }
  }
  if (failed) {
    fprintf(stderr, "kill test: %d ranks, victim %d, hosts %d, %zu bytes, delay %d ms (--delay-ms %d to repeat)\n",
            a.nranks, a.victim, a.nhosts, a.bytes, a.delayMs, a.delayMs);
    for (int r = 0; r < a.nranks; r++)
      if (r != a.victim)
        fprintf(stderr, "  rank %d: %d all-reduces, call -> %s, async -> %d, abort -> %d, error at +%.2f s\n", r,
                sh->iterations[r], ncclGetErrorString((ncclResult_t)sh->callResult[r]), sh->asyncResult[r],
                sh->abortResult[r], sh->killAt ? sh->errorAt[r] - sh->killAt : -1.0);
  }
  if (getenv("CHORUS_KILL_VERBOSE")) {
    for (int r = 0; r < a.nranks; r++)
      if (r != a.victim)
        fprintf(stderr, "rank %d: %d iterations, %s after %.3f s, abort %.3f s\n", r, sh->iterations[r],
                ncclGetErrorString((ncclResult_t)sh->callResult[r]), sh->errorAt[r] - sh->killAt,
                sh->abortedAt[r] - sh->errorAt[r]);
  }
  munmap(a.shared, sizeof(sharedState));
  return failed;
}
