/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bs_fuzz_ranks.h: the rank side of test_fuzz_bootstrap.c: the settings both sides share, the data
 * both check, and the rank processes (forked before any library call, handed the unique id through
 * a pipe, then init, real traffic checked exactly, no fd leaked) with their spawning and reaping.
 * The fuzzer's side is test_fuzz_bootstrap.c.
 */
#ifndef CHORUS_TESTS_BS_FUZZ_RANKS_H_
#define CHORUS_TESTS_BS_FUZZ_RANKS_H_

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_internal.h"
#include "commstate/comm.h"
#include "fuzz_util.h"
#include "log/log.h"
#include "nccl.h"
#include "socket/socket.h"

#define NRANKS 3
#define ROOT_MIN_MESSAGES 30000 /* asserted per scenario; with the net plugin's >= 10^5 in all */
#define P2P_MIN_MESSAGES 40000
#define REACT_TIMEOUT_MS 10000  /* a message that must be refused gets its reaction within this */
#define CONNECT_TIMEOUT_MS 10000
#define PARENT_DEADLINE_SEC 30  /* children still running then are killed: a hang */
#define FD_SLACK 2              /* fds a rank may hold beyond its count before (a small bound) */
#define ROOT_STALL 16           /* connections held open mid-hello at once */
#define ROOT_HOLD 1100          /* idle connections, more than the root keeps pending (1024) */
#define P2P_STALL 4             /* per rank; the rank accepts 2 * nranks + 16 connections */
#define P2P_HOLD (2 * NRANKS + 16 + 8) /* idle connections per rank, more than it keeps */

/* User tags of the ranks' own traffic in the p2p scenario. Fuzz messages that happen to be
 * well-formed always carry a tag outside +-2^24, which real traffic never uses. */
#define TAG_WARM 11
#define TAG_TICK 12
#define TAG_PROBE 13
#define REAL_TAG_LIMIT (1 << 24)
#define PROBE_SIZE 64

typedef struct {
  pid_t pid;
  int toChild;   /* parent writes: the unique id, then control bytes */
  int fromChild; /* parent reads: what the child reports (its listen address) */
  int status;    /* exit code, 100 + signal, -1 killed at the deadline */
} child;
#define CFAIL(...) FUZZ_FAIL(__VA_ARGS__)
typedef void (*rankMainFn)(int rank, int inFd, int outFd);

extern child kids[NRANKS];

uint64_t mix64(uint64_t x);
void fillPattern(void* buf, size_t n, uint64_t key);
int checkPattern(const void* buf, size_t n, uint64_t key);
int32_t reduceInput(int rank, size_t i);
void realTraffic(ncclComm_t comm, int rank);
void readId(int fd, ncclUniqueId* id);
ncclComm_t initRank(int rank, int inFd);
void destroyAndCheckFds(ncclComm_t comm, int rank, int fds0);
void rootRankMain(int rank, int inFd, int outFd);
void* tickerMain(void* arg);
void p2pRankMain(int rank, int inFd, int outFd);
void spawnRanks(rankMainFn fn);
void sendIdTo(int r, const ncclUniqueId* id);
void reapRanks(double deadline);

#endif /* CHORUS_TESTS_BS_FUZZ_RANKS_H_ */
