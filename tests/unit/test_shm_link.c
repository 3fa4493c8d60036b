/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shm_link.c: the shm transport (core/transport/shm_link.c) between real processes.
 *
 * usage: test_shm_link <scenario>
 *   data            two ranks connect both directions over a real bootstrap and stream hundreds of
 *                   "tasks" of random step counts and sizes (0 bytes included) through the slots,
 *                   driven exactly as the executor drives links; the consumer is randomly slow, so
 *                   a sender that overwrote an unconsumed slot would show as corrupt data
 *   flow            the receiver posts CHR_STEPS slots and stops consuming: the sender must stop at
 *                   CHR_STEPS completed and 2 * CHR_STEPS written steps; then everything arrives intact
 *   kill_sender     the sending peer SIGKILLs itself mid-stream (and stays a zombie, unreaped):
 *   kill_receiver   likewise the receiving peer; the survivor gets ncclRemoteError "... exited"
 *                   within 2 s (CHORUS_TIMEOUT is 30 s here)
 *   close           the receiving peer closes its link and stays alive: the sender gets "closed"
 *   byref           as data, with half the sends posted by reference (the sender's own memory, which
 *                   it poisons as soon as the send reports done) and half the receives landing in
 *                   user memory: any mix of the two arrives intact, so a send done before the
 *                   receiver read it shows as corrupt data (where the receiver may not read the
 *                   sender's memory, regUser declines and the scenario checks the slots only)
 *   byref_bad       a step by reference at an address the sender does not map fails the receiver
 *                   with an error naming the read; one sent while the receiver says it cannot read
 *                   fails it too
 *   validate        one process: bad setup messages (magic, pid/fd, name, sizes, key, ranks) are refused,
 *                   a bad size in the header is refused, nothing leaks (fds, /dev/shm names); the
 *                   segment goes by descriptor, and by a name only when the descriptor is unreachable
 * Every scenario also checks that no /dev/shm name of its processes is left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "config/param.h"
#include "util/futex.h"
#include "util/idle.h"
#include "log/log.h"
#include "transport/shm_link.h"
#include "transport/transport_ctx.h"
#include "../test_mix.h"

#define S CHR_STEPS
#define STEP 4096
#define DRIVER_STALL_NS 10000000000ull /* the driver's own deadline: 10 s without progress */

#define FAIL(...)                                                                       \
  do {                                                                                  \
    fprintf(stderr, "[pid %d] %s:%d: ", (int)getpid(), __FILE__, __LINE__);             \
    fprintf(stderr, __VA_ARGS__);                                                       \
    fprintf(stderr, " (last error: %s)\n", chrThreadLastError());                       \
    _exit(1);                                                                           \
  } while (0)

static double nowSec(void) { return (double)chrNowNs() / 1e9; }

/* CHORUS_TEST_TIME_SCALE (read in main): timing windows are multiplied by it in slow builds. */
static int gScale = 1;

/* ---- data pattern: every byte depends on (source rank, task, step, position) ---- */


static size_t stepBytes(int src, uint64_t task, uint64_t step) {
  uint64_t h = chrTestFinalMix((uint64_t)src * 1000003u + task * 7919u + step);
  if (h % 17 == 0) return 0;
  if (h % 5 == 0) return STEP;
  return (size_t)(h >> 8) % STEP + 1;
}

static void fillStep(unsigned char* p, size_t n, int src, uint64_t task, uint64_t step) {
  uint64_t h = chrTestFinalMix(((uint64_t)src << 48) ^ (task << 20) ^ step);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(h + i * 131 + (i >> 8));
}

static int checkStep(const unsigned char* p, size_t n, int src, uint64_t task, uint64_t step) {
  uint64_t h = chrTestFinalMix(((uint64_t)src << 48) ^ (task << 20) ^ step);
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(h + i * 131 + (i >> 8))) return 0;
  return 1;
}

/* ---- a driver that walks links exactly as core/exec/exec.c does ---- */

struct driver {
  struct chrLink* send; /* NULL: no send side */
  struct chrLink* recv; /* NULL: no recv side */
  int me, peer;
  uint64_t task, nSend, nRecv;
  uint64_t recvPosted, recvDone, recvConsumed, sendPosted, sendDone;
  size_t recvBytes[S];
  int slowConsumer;   /* randomly hold back consumption */
  uint64_t consumeCap; /* consume at most this many steps (flow test), ~0 otherwise */
  unsigned rng;
  /* byref: user memory per slot, and its registrations (NULL: the link declined) */
  int byRef;
  void* sendMh;
  void* recvMh;
  unsigned char sendUser[S][STEP];
  unsigned char recvUser[S][STEP];
  int sentByRef[S];
  unsigned char* recvInto[S];
};

static void startTask(struct driver* d, uint64_t task, uint64_t nSend, uint64_t nRecv) {
  d->task = task;
  d->nSend = d->send ? nSend : 0;
  d->nRecv = d->recv ? nRecv : 0;
  d->recvPosted = d->recvDone = d->recvConsumed = d->sendPosted = d->sendDone = 0;
}

static int taskDone(const struct driver* d) {
  return d->recvConsumed == d->nRecv && d->sendPosted == d->nSend && d->sendDone == d->sendPosted;
}

/* One pass. Returns the result of the first failing transport call; *progressed when anything moved. */
static ncclResult_t drive(struct driver* d, int* progressed) {
  struct chrLink* r = d->recv;
  struct chrLink* s = d->send;
  ncclResult_t res;
  while (d->recvPosted < d->nRecv && d->recvPosted < d->recvConsumed + S) {
    int slot = (int)(d->recvPosted % S);
    d->recvInto[slot] = d->recvMh && rand_r(&d->rng) % 2 ? d->recvUser[slot] : NULL;
    if (d->recvInto[slot])
      res = r->ops->postUser(r, slot, d->recvInto[slot], stepBytes(d->peer, d->task, d->recvPosted), d->recvMh);
    else
      res = r->ops->post(r, slot, r->stepSize);
    if (res != ncclSuccess) return res;
    d->recvPosted++;
    *progressed = 1;
  }
  while (d->sendDone < d->sendPosted) {
    int done = 0;
    size_t bytes = 0;
    int slot = (int)(d->sendDone % S);
    if ((res = s->ops->test(s, slot, &done, &bytes)) != ncclSuccess) return res;
    if (!done) break;
    if (d->sentByRef[slot]) memset(d->sendUser[slot], 0xA5, STEP); /* free again: a late read sees this */
    d->sendDone++;
    *progressed = 1;
  }
  while (d->recvDone < d->recvPosted) {
    int done = 0;
    size_t bytes = 0;
    int slot = (int)(d->recvDone % S);
    if ((res = r->ops->test(r, slot, &done, &bytes)) != ncclSuccess) return res;
    if (!done) break;
    d->recvBytes[slot] = bytes;
    d->recvDone++;
    *progressed = 1;
  }
  while (d->recvConsumed < d->recvDone && d->recvConsumed < d->consumeCap) {
    if (d->slowConsumer && rand_r(&d->rng) % 4 == 0) {
      if (rand_r(&d->rng) % 16 == 0) usleep(200);
      break;
    }
    int slot = (int)(d->recvConsumed % S);
    size_t want = stepBytes(d->peer, d->task, d->recvConsumed);
    if (d->recvBytes[slot] != want)
      FAIL("task %llu step %llu: received %zu bytes, sent %zu", (unsigned long long)d->task,
           (unsigned long long)d->recvConsumed, d->recvBytes[slot], want);
    const unsigned char* got = d->recvInto[slot] ? d->recvInto[slot] : (const unsigned char*)r->slots[slot];
    if (!checkStep(got, want, d->peer, d->task, d->recvConsumed))
      FAIL("task %llu step %llu: corrupt data in slot %d (overwritten before it was consumed?)",
           (unsigned long long)d->task, (unsigned long long)d->recvConsumed, slot);
    if (r->ops->release && (res = r->ops->release(r, slot)) != ncclSuccess) return res;
    d->recvConsumed++;
    *progressed = 1;
    if (d->recvPosted < d->nRecv) break; /* re-post first, as the executor does */
  }
  while (d->sendPosted < d->nSend && d->sendPosted - d->sendDone < S) {
    int slot = (int)(d->sendPosted % S);
    size_t n = stepBytes(d->me, d->task, d->sendPosted);
    d->sentByRef[slot] = d->sendMh && rand_r(&d->rng) % 2;
    if (d->sentByRef[slot]) {
      fillStep(d->sendUser[slot], n, d->me, d->task, d->sendPosted);
      res = s->ops->postUser(s, slot, d->sendUser[slot], n, d->sendMh);
    } else {
      fillStep((unsigned char*)s->slots[slot], n, d->me, d->task, d->sendPosted);
      res = s->ops->post(s, slot, n);
    }
    if (res != ncclSuccess) return res;
    d->sendPosted++;
    *progressed = 1;
  }
  return ncclSuccess;
}

/* Drive until the task is done; an error or a 10 s stall fails the process. */
static void runTask(struct driver* d) {
  uint64_t idleSince = chrNowNs();
  while (!taskDone(d)) {
    int progressed = 0;
    if (drive(d, &progressed) != ncclSuccess) FAIL("task %llu failed", (unsigned long long)d->task);
    if (progressed) {
      idleSince = chrNowNs();
    } else {
      if (chrNowNs() - idleSince > DRIVER_STALL_NS) FAIL("task %llu: no progress for 10 s", (unsigned long long)d->task);
      chrIdleWait(chrNowNs() - idleSince);
    }
  }
}

/* ---- processes ---- */

static int shmNamesOf(pid_t pid) {
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "chorus-shm-%d-", (int)pid);
  DIR* dir = opendir("/dev/shm");
  if (dir == NULL) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(dir);
  return n;
}

static int countFds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1;
}

static ncclUniqueId gId;

/* A transport context with just what chrShmConnectPair reads: rank and bootstrap. */
static void joinComm(struct chrTransportCtx* ctx, int rank) {
  memset(ctx, 0, sizeof(*ctx));
  ctx->rank = rank;
  ctx->nRanks = 2;
  if (chrBootstrapInit(&gId, rank, 2, NULL, 0, NULL, NULL, &ctx->bootstrap) != ncclSuccess) FAIL("bootstrap init");
}

/* Connect: wantSend/wantRecv say which directions this rank has (peer = the other rank). */
static void connectLinks(struct chrTransportCtx* ctx, int wantSend, int wantRecv, struct driver* d) {
  int peer = 1 - ctx->rank;
  memset(d, 0, sizeof(*d));
  d->me = ctx->rank;
  d->peer = peer;
  d->consumeCap = ~0ull;
  d->rng = 12345u + (unsigned)ctx->rank;
  if (chrShmConnectPair(ctx, 0, wantSend ? peer : -1, wantRecv ? peer : -1, STEP, wantSend ? &d->send : NULL,
                        wantRecv ? &d->recv : NULL) != ncclSuccess)
    FAIL("connect");
  if ((wantSend && d->send == NULL) || (wantRecv && d->recv == NULL)) FAIL("connect returned no link");
  if (shmNamesOf(getpid()) != 0) FAIL("a /dev/shm name of this process is still there after connecting");
}

static void closeLinks(struct chrTransportCtx* ctx, struct driver* d) {
  if (chrBootstrapBarrier(ctx->bootstrap) != ncclSuccess) FAIL("barrier"); /* both done before closing */
  if (d->send) d->send->ops->close(d->send);
  if (d->recv) d->recv->ops->close(d->recv);
  chrBootstrapClose(ctx->bootstrap);
}

static void rankData(int rank) {
  struct chrTransportCtx ctx;
  struct driver d;
  joinComm(&ctx, rank);
  connectLinks(&ctx, 1, 1, &d);
  d.slowConsumer = 1;
  for (uint64_t task = 0; task < 600; task++) {
    uint64_t n = chrTestFinalMix(task) % (3 * S + 4); /* 0 .. 3S+3 steps: wraps, restarts at slot 0 each task */
    startTask(&d, task, n, n);
    runTask(&d);
  }
  closeLinks(&ctx, &d);
}

/* Registers this rank's user memory with its links once both ends are connected (the receiver
 * decides at connect whether it may read the sender's memory). */
static void registerUser(struct chrTransportCtx* ctx, struct driver* d) {
  if (chrBootstrapBarrier(ctx->bootstrap) != ncclSuccess) FAIL("barrier");
  if (d->send->ops->regUser(d->send, d->sendUser, sizeof(d->sendUser), &d->sendMh) != ncclSuccess) FAIL("regUser send");
  if (d->recv->ops->regUser(d->recv, d->recvUser, sizeof(d->recvUser), &d->recvMh) != ncclSuccess) FAIL("regUser recv");
  if ((d->sendMh == NULL) != (d->recvMh == NULL)) FAIL("one direction reads by reference, the other not");
  if (d->sendMh == NULL) printf("rank %d: the peers cannot read each other's memory here: slots only\n", ctx->rank);
}

static void rankByRef(int rank) {
  struct chrTransportCtx ctx;
  struct driver* d = calloc(1, sizeof(*d));
  if (d == NULL) FAIL("out of memory");
  joinComm(&ctx, rank);
  connectLinks(&ctx, 1, 1, d);
  registerUser(&ctx, d);
  d->slowConsumer = 1;
  for (uint64_t task = 0; task < 600; task++) {
    uint64_t n = chrTestFinalMix(task + 77) % (3 * S + 4);
    startTask(d, task, n, n);
    runTask(d);
  }
  d->send->ops->deregUser(d->send, d->sendMh);
  d->recv->ops->deregUser(d->recv, d->recvMh);
  closeLinks(&ctx, d);
  free(d);
}

/* Rank 0 sends two steps by reference: one at an address it does not map, then (after the receiver
 * has said it cannot read) a good one. Rank 1 must fail each receive with an error, not crash. */
static void rankByRefBad(int rank) {
  struct chrTransportCtx ctx;
  struct driver* d = calloc(1, sizeof(*d));
  if (d == NULL) FAIL("out of memory");
  joinComm(&ctx, rank);
  connectLinks(&ctx, rank == 0, rank == 1, d);
  struct chrShmLink* sl = (rank == 0 ? d->send : d->recv)->priv;
  if (chrBootstrapBarrier(ctx.bootstrap) != ncclSuccess) FAIL("barrier"); /* the receiver has probed */
  if (atomic_load(&sl->hdr->peerReads) != CHR_SHM_READS_YES) {
    printf("rank %d: the peers cannot read each other's memory here: nothing to check\n", rank);
    closeLinks(&ctx, d);
    free(d);
    return;
  }
  for (int round = 0; round < 2; round++) {
    if (rank == 0) {
      void* where = round == 0 ? (void*)(uintptr_t)0x1000 : (void*)d->sendUser[0];
      if (d->send->ops->postUser(d->send, round, where, 64, where) != ncclSuccess) FAIL("post by reference");
    } else {
      if (round == 1) atomic_store(&sl->hdr->peerReads, CHR_SHM_READS_NO);
      if (d->recv->ops->post(d->recv, round, STEP) != ncclSuccess) FAIL("post");
      int done = 0;
      size_t bytes = 0;
      ncclResult_t res = ncclSuccess;
      double until = nowSec() + 10.0 * gScale;
      while (res == ncclSuccess && !done && nowSec() < until) res = d->recv->ops->test(d->recv, round, &done, &bytes);
      const char* err = chrThreadLastError();
      const char* want = round == 0 ? "reading 64 bytes of its memory" : "cannot read it";
      if (res != ncclRemoteError || strstr(err, want) == NULL)
        FAIL("round %d: receive gave %d (%s), expected ncclRemoteError naming \"%s\"", round, (int)res, err, want);
    }
    if (chrBootstrapBarrier(ctx.bootstrap) != ncclSuccess) FAIL("barrier");
  }
  closeLinks(&ctx, d);
  free(d);
}

static void rankFlow(int rank) {
  struct chrTransportCtx ctx;
  struct driver d;
  joinComm(&ctx, rank);
  connectLinks(&ctx, rank == 0, rank == 1, &d);
  uint64_t n = 6 * S;
  startTask(&d, 7, n, n);
  if (rank == 1) {
    d.consumeCap = 0; /* post the first S slots, consume nothing */
    double until = nowSec() + 0.5;
    while (nowSec() < until) {
      int p = 0;
      if (drive(&d, &p) != ncclSuccess) FAIL("receiver");
      usleep(1000);
    }
    if (d.recvPosted != S) FAIL("receiver posted %llu slots, expected %d", (unsigned long long)d.recvPosted, S);
    d.consumeCap = ~0ull;
  } else {
    double until = nowSec() + 0.3; /* well inside the receiver's pause */
    while (nowSec() < until) {
      int p = 0;
      if (drive(&d, &p) != ncclSuccess) FAIL("sender");
      usleep(1000);
    }
    if (d.sendDone != S || d.sendPosted != 2 * S)
      FAIL("while the receiver consumed nothing the sender got %llu steps done and %llu written; expected %d and %d",
           (unsigned long long)d.sendDone, (unsigned long long)d.sendPosted, S, 2 * S);
  }
  runTask(&d); /* now everything flows, and the receiver checks every byte */
  closeLinks(&ctx, &d);
}

/* Sleepers: each side waits for its peer by sleeping on the futex word of what it waits for, at once
 * and as often as it can, while the peer posts and releases after random short pauses. A wake the
 * poster misses (its look at the sleeping flag passing the sleeper's last look at the counter) leaves
 * the sleeper asleep with the step there: the long wait ends by its timeout and the test fails. */
static void rankSleepers(int rank) {
  struct chrTransportCtx ctx;
  struct driver d;
  joinComm(&ctx, rank);
  connectLinks(&ctx, 1, 1, &d);
  const uint64_t waitNs = 10000000000ull * (uint64_t)gScale;
  int slept = 0, polled = 0;
  for (uint64_t task = 0; task < 4000; task++) {
    startTask(&d, task, 1 + task % 3, 1 + task % 3);
    while (!taskDone(&d)) {
      for (int spin = rand_r(&d.rng) % 2000; spin > 0; spin--) __asm__ volatile("" ::: "memory");
      int progressed = 0;
      if (drive(&d, &progressed) != ncclSuccess) FAIL("task %llu failed", (unsigned long long)task);
      if (progressed) continue;
      struct chrLink* l = d.recvDone < d.recvPosted ? d.recv : d.sendDone < d.sendPosted ? d.send : NULL;
      if (l == NULL) continue; /* waits on nothing posted: drive again */
      int slot = (int)((l == d.recv ? d.recvDone : d.sendDone) % S);
      struct chrFutexWord w;
      int got = l->ops->sleepArm(l, slot, &w);
      if (got != 1) {
        polled++;
        continue;
      }
      int woke = chrFutexWaitAny(&w, 1, waitNs);
      l->ops->sleepDisarm(l);
      if (woke == 0) FAIL("task %llu: slept %llu s on the %s of slot %d: a wake was lost", (unsigned long long)task,
                          (unsigned long long)(waitNs / 1000000000ull), l == d.recv ? "receive" : "send", slot);
      if (woke < 0) polled++;
      else slept++;
    }
  }
  printf("rank %d: slept %d times, polled %d times\n", rank, slept, polled);
  fflush(stdout);
  closeLinks(&ctx, &d);
}

/* The survivor (rank 0) runs a long task; rank 1 dies or closes partway. */
static void rankPeerGone(int rank, int survivorSends, int closeInstead) {
  struct chrTransportCtx ctx;
  struct driver d;
  joinComm(&ctx, rank);
  int sends = rank == 0 ? survivorSends : !survivorSends;
  connectLinks(&ctx, sends, !sends, &d);
  uint64_t n = 40 * S;
  startTask(&d, 3, n, n);
  if (rank == 1) {
    uint64_t stopAt = 2 * S + 3;
    while ((sends ? d.sendDone : d.recvConsumed) < stopAt) {
      int p = 0;
      if (drive(&d, &p) != ncclSuccess) FAIL("peer before stopping");
      if (!p) sched_yield();
    }
    if (closeInstead) {
      if (d.send) d.send->ops->close(d.send);
      if (d.recv) d.recv->ops->close(d.recv);
      sleep(3); /* alive, but gone from the link */
      _exit(0);
    }
    raise(SIGKILL);
  }
  uint64_t lastProgress = chrNowNs();
  ncclResult_t res = ncclSuccess;
  while (res == ncclSuccess) {
    int p = 0;
    res = drive(&d, &p);
    if (taskDone(&d)) FAIL("the task finished although the peer stopped");
    if (p) lastProgress = chrNowNs();
    else if (chrNowNs() - lastProgress > DRIVER_STALL_NS) FAIL("no error 10 s after the peer stopped");
    else chrIdleWait(chrNowNs() - lastProgress);
  }
  double waited = (double)(chrNowNs() - lastProgress) / 1e9;
  if (res != ncclRemoteError) FAIL("expected ncclRemoteError, got %d", (int)res);
  const char* want = closeInstead ? "closed its end" : "exited";
  if (strstr(chrThreadLastError(), want) == NULL) FAIL("the error does not say \"%s\"", want);
  if (waited > 2.0 * gScale) FAIL("the error came %.2f s after the last progress (want < %d s)", waited, 2 * gScale);
  if (d.send) d.send->ops->close(d.send);
  if (d.recv) d.recv->ops->close(d.recv);
  chrBootstrapClose(ctx.bootstrap);
}

/* ---- validate: one process, both ends ---- */

static void expectAttachFails(const struct chrShmInfo* info, int myRank, int peer, ncclResult_t want, const char* what) {
  struct chrLink* s = (struct chrLink*)0x1;
  int needName = 0;
  ncclResult_t res = chrShmSendAttach(myRank, peer, 3, STEP, info, &s, &needName);
  if (res != want) FAIL("%s: got %d, expected %d", what, (int)res, (int)want);
  if (s != NULL) FAIL("%s: a link was returned on failure", what);
}

static int validate(void) {
  int fds0 = countFds();
  struct chrLink* r = NULL;
  struct chrLink* s = NULL;
  struct chrShmInfo info, bad;
  int needName = 0;
  if (chrShmRecvCreate(1, 0, 3, 1000, &r, &info) != ncclInvalidArgument) FAIL("step size 1000 accepted");
  if (chrShmRecvCreate(1, 0, 3, STEP, &r, &info) != ncclSuccess) FAIL("create");
  if (shmNamesOf(getpid()) != 0) FAIL("the segment has a name in /dev/shm before anyone asked for one");
  if (info.name[0] != '\0' || info.fd < 0 || info.pid != getpid()) FAIL("the segment is not offered by descriptor");

  /* By descriptor: bad descriptors are refused or answered with a request for a name. */
  bad = info; bad.fd = -3;
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "negative fd");
  bad = info; bad.pid = 0;
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "pid 0");
  int devNull = open("/dev/null", O_RDWR | O_CLOEXEC);
  bad = info; bad.fd = devNull; /* opens, but is not a segment of the right size */
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "a descriptor that is not the segment");
  close(devNull);
  bad = info; bad.pid = 999999999; /* no such process: unreachable, so ask for a name */
  s = (struct chrLink*)0x1;
  if (chrShmSendAttach(0, 1, 3, STEP, &bad, &s, &needName) != ncclSuccess || s != NULL || !needName)
    FAIL("an unreachable descriptor did not ask for a name");
  if (chrShmRecvPublishName(r, &info) != ncclSuccess) FAIL("publish name");
  if (shmNamesOf(getpid()) != 1) FAIL("the published name is not in /dev/shm");

  /* By name: every check on the name. */
  bad = info; bad.magic ^= 1;
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "bad magic");
  bad = info; snprintf(bad.name, sizeof(bad.name), "/chorus-shm-../../etc/passwd");
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "name with dots and slashes");
  bad = info; snprintf(bad.name, sizeof(bad.name), "/other-%d", 1);
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "name without the prefix");
  bad = info; memset(bad.name, 'a', sizeof(bad.name)); memcpy(bad.name, CHR_SHM_NAME_PREFIX, strlen(CHR_SHM_NAME_PREFIX));
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "name without a terminator");
  bad = info; snprintf(bad.name, sizeof(bad.name), "%sdoes-not-exist", CHR_SHM_NAME_PREFIX);
  expectAttachFails(&bad, 0, 1, ncclSystemError, "missing segment");
  bad = info; bad.stepSize *= 2; bad.segmentSize = CHR_SHM_DATA_OFFSET + 2ull * S * bad.stepSize;
  expectAttachFails(&bad, 0, 1, ncclInvalidUsage, "other step size");
  bad = info; bad.segmentSize += 4096;
  expectAttachFails(&bad, 0, 1, ncclInvalidUsage, "other segment size");
  bad = info; bad.key ^= 0x100;
  expectAttachFails(&bad, 0, 1, ncclRemoteError, "wrong key");
  expectAttachFails(&info, 2, 1, ncclRemoteError, "wrong sender rank");
  expectAttachFails(&info, 0, 5, ncclRemoteError, "wrong receiver rank");
  if (shmNamesOf(getpid()) != 1) FAIL("a failed attach removed (or added) a name");

  if (chrShmSendAttach(0, 1, 3, STEP, &info, &s, &needName) != ncclSuccess || s == NULL) FAIL("attach by name");
  chrShmRecvAttached(r);
  if (shmNamesOf(getpid()) != 0) FAIL("the name is still there after attaching");

  /* Both ends in this process: a step goes through, zero-copy (same physical memory). */
  int done = 0;
  size_t bytes = 0;
  if (r->ops->post(r, 0, STEP) != ncclSuccess) FAIL("recv post");
  if (r->ops->test(r, 0, &done, &bytes) != ncclSuccess || done) FAIL("recv done before anything was sent");
  memcpy(s->slots[0], "hello", 5);
  if (s->ops->post(s, 0, 5) != ncclSuccess) FAIL("send post");
  if (s->ops->test(s, 0, &done, &bytes) != ncclSuccess || !done) FAIL("a first send waited for the receiver");
  if (r->ops->test(r, 0, &done, &bytes) != ncclSuccess || !done || bytes != 5 || memcmp(r->slots[0], "hello", 5) != 0)
    FAIL("recv after send: done %d bytes %zu", done, bytes);
  /* The second use of slot 0 goes to the other half; the third must wait until the first is consumed. */
  if (s->ops->post(s, 0, 3) != ncclSuccess) FAIL("send post 2");
  if (s->ops->test(s, 0, &done, &bytes) != ncclSuccess || done) FAIL("slot 0 reported free with use 0 unconsumed");
  if (r->ops->release(r, 0) != ncclSuccess) FAIL("release");
  if (s->ops->test(s, 0, &done, &bytes) != ncclSuccess || !done) FAIL("slot 0 not free after the release");
  if (s->ops->post(s, 0, STEP + 1) == ncclSuccess) FAIL("a post larger than a slot was accepted");

  /* A size larger than a slot, written into the header by a (broken) sender, is refused. */
  struct chrShmLink* sl = r->priv;
  if (r->ops->post(r, 1, STEP) != ncclSuccess) FAIL("recv post 1");
  atomic_store(&sl->hdr->fill[1][0].bytes, (uint64_t)1 << 40);
  atomic_store(&sl->hdr->fill[1][0].filled, 1);
  if (r->ops->test(r, 1, &done, &bytes) != ncclRemoteError) FAIL("a bogus size was accepted");

  s->ops->close(s);
  r->ops->close(r);
  if (countFds() != fds0) FAIL("fds: %d before, %d after", fds0, countFds());

  /* A segment created and never attached disappears on close, named or not. */
  if (chrShmRecvCreate(1, 0, 3, STEP, &r, &info) != ncclSuccess) FAIL("create 2");
  if (chrShmRecvPublishName(r, &info) != ncclSuccess) FAIL("publish name 2");
  r->ops->close(r);
  if (shmNamesOf(getpid()) != 0) FAIL("close left the name of an unattached segment");
  if (countFds() != fds0) FAIL("fds after create 2: %d before, %d after", fds0, countFds());
  return 0;
}

/* ---- main ---- */

typedef void (*rankFn)(int rank);
static void rankKillSender(int rank) { rankPeerGone(rank, 0, 0); }
static void rankKillReceiver(int rank) { rankPeerGone(rank, 1, 0); }
static void rankClose(int rank) { rankPeerGone(rank, 1, 1); }

/* Run two ranks. The survivor (rank 0) is reaped first, so a killed rank 1 stays a zombie meanwhile:
 * the transport must see through that.
 * Both are forked before the unique id is made, and get it through a pipe: making it starts the
 * bootstrap root thread in this process, and a fork while that thread runs can hand the child a lock
 * the thread holds (with ASan, the allocator's), which the child then waits on for ever. */
static int runPair(rankFn fn, int expectKill) {
  pid_t pids[2];
  int idFd[2];
  for (int r = 0; r < 2; r++) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    fflush(stdout);
    fflush(stderr);
    pids[r] = fork();
    if (pids[r] < 0) return 1;
    if (pids[r] == 0) {
      if (r == 1) close(idFd[0]);
      close(fds[1]);
      size_t got = 0;
      while (got < sizeof(gId)) {
        ssize_t n = read(fds[0], (char*)&gId + got, sizeof(gId) - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(1); /* the parent could not make the id */
        got += (size_t)n;
      }
      close(fds[0]);
      fn(r);
      _exit(0);
    }
    close(fds[0]);
    idFd[r] = fds[1];
  }
  int idOk = chrBootstrapGetUniqueId(&gId) == ncclSuccess;
  if (!idOk) fprintf(stderr, "GetUniqueId: %s\n", chrThreadLastError());
  for (int r = 0; r < 2; r++) {
    /* 128 bytes, less than PIPE_BUF: all or nothing; a child cannot have died before reading it. */
    if (idOk && write(idFd[r], &gId, sizeof(gId)) != (ssize_t)sizeof(gId)) idOk = 0;
    close(idFd[r]);
  }
  if (!idOk) {
    for (int r = 0; r < 2; r++) waitpid(pids[r], NULL, 0);
    return 1;
  }
  int fails = 0;
  double deadline = nowSec() + 40.0 * gScale;
  for (int r = 0; r < 2; r++) {
    int st = 0;
    pid_t w;
    while ((w = waitpid(pids[r], &st, WNOHANG)) == 0 && nowSec() < deadline) usleep(10000);
    if (w == 0) {
      fprintf(stderr, "rank %d (pid %d) still running at the deadline: killed\n", r, (int)pids[r]);
      kill(pids[0], SIGKILL);
      kill(pids[1], SIGKILL);
      waitpid(pids[r], &st, 0);
      fails++;
      continue;
    }
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    if (r == 1 && expectKill) {
      if (!killed) { fprintf(stderr, "rank 1 was expected to die by SIGKILL\n"); fails++; }
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, st);
      fails++;
    }
  }
  for (int r = 0; r < 2; r++)
    if (shmNamesOf(pids[r]) != 0) {
      fprintf(stderr, "rank %d (pid %d) left a name in /dev/shm\n", r, (int)pids[r]);
      fails++;
    }
  return fails != 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s data|flow|kill_sender|kill_receiver|close|byref|byref_bad|sleepers|validate\n", argv[0]);
    return 2;
  }
  const char* sc = argv[1];
  const char* scale = getenv("CHORUS_TEST_TIME_SCALE");
  if (scale != NULL && atoi(scale) > 1) gScale = atoi(scale);
  if (strcmp(sc, "data") == 0) return runPair(rankData, 0);
  if (strcmp(sc, "flow") == 0) return runPair(rankFlow, 0);
  if (strcmp(sc, "kill_sender") == 0) return runPair(rankKillSender, 1);
  if (strcmp(sc, "kill_receiver") == 0) return runPair(rankKillReceiver, 1);
  if (strcmp(sc, "close") == 0) return runPair(rankClose, 0);
  if (strcmp(sc, "byref") == 0) return runPair(rankByRef, 0);
  if (strcmp(sc, "byref_bad") == 0) return runPair(rankByRefBad, 0);
  if (strcmp(sc, "sleepers") == 0) return runPair(rankSleepers, 0);
  if (strcmp(sc, "validate") == 0) return validate();
  fprintf(stderr, "unknown scenario %s\n", sc);
  return 2;
}
