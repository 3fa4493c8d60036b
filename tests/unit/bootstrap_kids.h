/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_kids.h: what the bootstrap tests (test_bootstrap.c: ranks that should succeed;
 * test_bootstrap_bad.c: bad clients) share: child processes started one by one and reaped against a
 * deadline, the scaled time windows, fd and thread counts, deterministic data, and a normal rank
 * (init, check the infos, allgather, barrier, close, no fd left). bootstrap_kids.c says more.
 */
#ifndef CHORUS_TESTS_BOOTSTRAP_KIDS_H_
#define CHORUS_TESTS_BOOTSTRAP_KIDS_H_

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_internal.h"
#include "config/param.h"
#include "log/log.h"
#include "socket/socket.h"

#define PARENT_DEADLINE_SEC 40 /* times the time scale; the ctest TIMEOUT (60, scaled too) is longer */
#define MAX_CHILDREN 16

/* Exit codes of children. E_NOSTART: the parent gave up before telling this child to start. */
enum {
  OK = 0, E_INIT = 10, E_DATA = 11, E_P2P = 12, E_TEXT = 13, E_TIME = 14, E_FD = 15, E_OTHER = 16, E_NOSTART = 17
};

#define CFAIL(code, ...)                              \
  do {                                                \
    fprintf(stderr, "[pid %d] ", (int)getpid());      \
    fprintf(stderr, __VA_ARGS__);                     \
    fprintf(stderr, " (last error: %s)\n", chrThreadLastError()); \
    _exit(code);                                      \
  } while (0)

struct kids {
  pid_t pid[MAX_CHILDREN];
  int startFd[MAX_CHILDREN]; /* write end of the child's start pipe; -1 once it was told to start */
  int status[MAX_CHILDREN];  /* -2 while running; exit code, 100 + signal, or -1 when killed at the deadline */
  int n;
  double deadline; /* the parent's deadline for all of them, from the first fork */
};

typedef void (*childFn)(int idx, void* arg);

#define INFO_SIZE 173 /* odd on purpose */
#define AG_SIZE 1001

struct rankArg {
  ncclUniqueId id;
  int useId; /* 0: compute the id in the child (NCCL_COMM_ID) */
  const char* commId;
  int nranks;
  int rankOf[MAX_CHILDREN]; /* child index -> rank */
};

extern int gScale;
extern int gBaseThreads;
extern int failures;
double scaled(double sec);
int64_t testDeadline(int sec);
double nowSec(void);
int countFds(void);
int fdsSettle(int want, int ms);
int freePort(void);
void childEnv(const char* bootstrapTimeout, const char* commId);
int threadCount(void);
void waitNoOtherThreads(void);
void spawn(struct kids* k, childFn fn, void* arg, ncclUniqueId* idSlot);
void startKid(struct kids* k, int i, const ncclUniqueId* id);
void startAll(struct kids* k, const ncclUniqueId* id);
void pollKids(struct kids* k);
int waitKidExit(struct kids* k, int i, int j);
int reap(struct kids* k);
void expectStatus(const char* scenario, struct kids* k, int i, int want);
uint64_t mix(uint64_t x);
void fillPattern(void* buf, size_t n, uint64_t seed);
int checkPattern(const void* buf, size_t n, uint64_t seed);
void afterInit(struct chrBootstrap* bs, int rank, int nranks, char* all, int fds0);
void normalRank(int rank, int nranks, const ncclUniqueId* id);
void rankChild(int idx, void* p);

#endif /* CHORUS_TESTS_BOOTSTRAP_KIDS_H_ */
