/*
 * test_bootstrap.c: the bootstrap (core/bootstrap) with real processes on loopback.
 *
 * usage: test_bootstrap <scenario>. Each scenario forks child processes that play ranks (or bad
 * clients); each child checks its own outcome (results, error texts, timing) and exits with 0 when it
 * saw what it should. The parent checks the exit statuses and kills children that outlive its own
 * deadline. The environment (from test_bootstrap.cmake) sets CHORUS_BOOTSTRAP_TIMEOUT=3,
 * CHORUS_TIMEOUT=5 (both times CHORUS_TEST_TIME_SCALE), NCCL_SOCKET_IFNAME=lo; scenarios that need
 * other values setenv them in the child and reload the config there.
 *
 * Timing: every window this test allows for scheduling (how long a failure may take, how long the
 * parent waits) is multiplied by CHORUS_TEST_TIME_SCALE (1 normally, more in slow builds such as the
 * sanitizer one). The order in which children reach the root is set by when the parent starts them
 * (see "children bookkeeping"), not by sleeps.
 */
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

/* CHORUS_TEST_TIME_SCALE (read in main): how much slower than a plain build this build may be. */
static int gScale = 1;
static double scaled(double sec) { return sec * gScale; }
static int64_t testDeadline(int sec) { return chrSockDeadlineSec((int64_t)sec * gScale); }

#define CFAIL(code, ...)                              \
  do {                                                \
    fprintf(stderr, "[pid %d] ", (int)getpid());      \
    fprintf(stderr, __VA_ARGS__);                     \
    fprintf(stderr, " (last error: %s)\n", chrThreadLastError()); \
    _exit(code);                                      \
  } while (0)

static double nowSec(void) { return (double)chrSockNowNs() / 1e9; }

static int countFds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the DIR's own fd */
}

/* Wait up to ms for the fd count to come back to `want` (a root thread may still be closing). */
static int fdsSettle(int want, int ms) {
  int n = countFds();
  for (int t = 0; t < ms && n != want; t += 20) {
    usleep(20000);
    n = countFds();
  }
  return n;
}

/* A free loopback port for NCCL_COMM_ID. */
static int freePort(void) {
  chrSockAddr a, b;
  int fd = -1;
  chrSockAddrParse("127.0.0.1:0", AF_INET, &a, NULL);
  if (chrSockListen(&a, 1, &fd, &b, NULL) != ncclSuccess) return -1;
  chrSockClose(&fd);
  return chrSockAddrPort(&b);
}

/* Child setup: re-read the config after the parent's setenv calls. */
static void childEnv(const char* bootstrapTimeout, const char* commId) {
  if (bootstrapTimeout) setenv("CHORUS_BOOTSTRAP_TIMEOUT", bootstrapTimeout, 1);
  if (commId)
    setenv("NCCL_COMM_ID", commId, 1);
  else
    unsetenv("NCCL_COMM_ID");
  chrConfigReload();
}

/* ---- children bookkeeping ----
 *
 * Every child is forked while this process runs no thread but the main one, and waits on a pipe until
 * the parent starts it; only then does the parent make the unique id (which starts the bootstrap root
 * thread in this process) and send it. fork() copies every lock as it is at that instant, so forking
 * while the root thread runs can hand the child a lock held by a thread the child does not have: with
 * ASan, whose allocator (unlike glibc's malloc) is not made safe around fork(), the root thread is often
 * inside malloc, and the child then blocks for ever on its first allocation. Starting children one by
 * one also lets a scenario decide exactly in which order they reach the root.
 */

struct kids {
  pid_t pid[MAX_CHILDREN];
  int startFd[MAX_CHILDREN]; /* write end of the child's start pipe; -1 once it was told to start */
  int status[MAX_CHILDREN];  /* -2 while running; exit code, 100 + signal, or -1 when killed at the deadline */
  int n;
  double deadline; /* the parent's deadline for all of them, from the first fork */
};

typedef void (*childFn)(int idx, void* arg);

static int gBaseThreads = 1; /* threads of this process before any bootstrap call (main counts them) */

static int threadCount(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  int n = -1;
  while (fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  fclose(f);
  return n;
}

/* A root thread from an earlier round ends right after it sent its table or abort: wait for that
 * before forking again. A root that never ends is a bug in itself. */
static void waitNoOtherThreads(void) {
  double until = nowSec() + scaled(10);
  int n;
  while ((n = threadCount()) > gBaseThreads) {
    if (nowSec() > until) {
      fprintf(stderr, "this process still runs %d threads (%d expected): a bootstrap root that never ended?\n", n,
              gBaseThreads);
      exit(1);
    }
    usleep(10000);
  }
}

/* Fork child k->n, which runs fn(idx, arg) once started; the id it is started with is stored in
 * *idSlot first (in the child's copy of the memory) when idSlot is not NULL. */
static void spawn(struct kids* k, childFn fn, void* arg, ncclUniqueId* idSlot) {
  waitNoOtherThreads();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  pid_t p = fork();
  if (p < 0) {
    perror("fork");
    exit(2);
  }
  if (p == 0) {
    /* Only the parent may hold a write end, so that a parent that gives up reads as end-of-file. */
    for (int i = 0; i < k->n; i++)
      if (k->startFd[i] >= 0) close(k->startFd[i]);
    close(fds[1]);
    ncclUniqueId id;
    size_t got = 0;
    while (got < sizeof(id)) {
      ssize_t r = read(fds[0], (char*)&id + got, sizeof(id) - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) _exit(E_NOSTART);
      got += (size_t)r;
    }
    close(fds[0]);
    if (idSlot != NULL) *idSlot = id;
    fn(k->n, arg);
    _exit(OK);
  }
  close(fds[0]);
  if (k->n == 0) k->deadline = nowSec() + scaled(PARENT_DEADLINE_SEC);
  k->pid[k->n] = p;
  k->startFd[k->n] = fds[1];
  k->status[k->n] = -2;
  k->n++;
}

/* Tell child i to start, with this id (ignored by children spawned without an id slot). */
static void startKid(struct kids* k, int i, const ncclUniqueId* id) {
  if (k->startFd[i] < 0) return;
  /* A child that died already must not kill us with SIGPIPE; reap() reports it. */
  struct sigaction ign, old;
  memset(&ign, 0, sizeof(ign));
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  ssize_t w;
  do w = write(k->startFd[i], id, sizeof(*id)); /* less than PIPE_BUF: all or nothing */
  while (w < 0 && errno == EINTR);
  sigaction(SIGPIPE, &old, NULL);
  close(k->startFd[i]);
  k->startFd[i] = -1;
}

static void startAll(struct kids* k, const ncclUniqueId* id) {
  for (int i = 0; i < k->n; i++) startKid(k, i, id);
}

/* Record the children that have exited. */
static void pollKids(struct kids* k) {
  for (int i = 0; i < k->n; i++) {
    if (k->status[i] != -2) continue;
    int st;
    if (waitpid(k->pid[i], &st, WNOHANG) == k->pid[i])
      k->status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
  }
}

/* Wait (up to the parent's deadline) until child i, or child j when j >= 0, has exited: a scenario's
 * way to let one child finish with the root before the next one arrives. 1 when one did. */
static int waitKidExit(struct kids* k, int i, int j) {
  for (;;) {
    pollKids(k);
    if (k->status[i] != -2 || (j >= 0 && k->status[j] != -2)) return 1;
    if (nowSec() > k->deadline) return 0;
    usleep(10000);
  }
}

/* Wait for all children until the parent's deadline; kill the rest. Children never started are
 * released with end-of-file and exit with E_NOSTART. Returns how many were killed. */
static int reap(struct kids* k) {
  for (int i = 0; i < k->n; i++)
    if (k->startFd[i] >= 0) {
      close(k->startFd[i]);
      k->startFd[i] = -1;
    }
  int hung = 0;
  for (;;) {
    pollKids(k);
    int left = 0;
    for (int i = 0; i < k->n; i++) left += k->status[i] == -2;
    if (left == 0) break;
    if (nowSec() > k->deadline) {
      for (int i = 0; i < k->n; i++)
        if (k->status[i] == -2) {
          kill(k->pid[i], SIGKILL);
          waitpid(k->pid[i], NULL, 0);
          k->status[i] = -1;
          hung++;
        }
      break;
    }
    usleep(10000);
  }
  return hung;
}

static int failures = 0;
static void expectStatus(const char* scenario, struct kids* k, int i, int want) {
  if (k->status[i] != want) {
    fprintf(stderr, "%s: child %d exited with %d, expected %d%s\n", scenario, i, k->status[i], want,
            k->status[i] == -1 ? " (hung: killed at the parent's deadline)" : "");
    failures++;
  }
}

/* ---- deterministic data every rank can check ---- */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
static void fillPattern(void* buf, size_t n, uint64_t seed) {
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(mix(seed * 1000003ULL + i) >> 24);
}
static int checkPattern(const void* buf, size_t n, uint64_t seed) {
  const unsigned char* p = buf;
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(mix(seed * 1000003ULL + i) >> 24)) return 0;
  return 1;
}

#define INFO_SIZE 173 /* odd on purpose */
#define AG_SIZE 1001

/* ---- a normal rank: init, check infos, allgather, barrier, close, no fds left ---- */

struct rankArg {
  ncclUniqueId id;
  int useId; /* 0: compute the id in the child (NCCL_COMM_ID) */
  const char* commId;
  int nranks;
  int rankOf[MAX_CHILDREN]; /* child index -> rank */
};

/* Everything a rank does after a successful init; closes bs and frees all. */
static void afterInit(struct chrBootstrap* bs, int rank, int nranks, char* all, int fds0) {
  if (chrBootstrapRank(bs) != rank || chrBootstrapNranks(bs) != nranks) CFAIL(E_DATA, "rank/nranks wrong");
  for (int r = 0; r < nranks; r++)
    if (!checkPattern(all + (size_t)r * INFO_SIZE, INFO_SIZE, (uint64_t)r + 1))
      CFAIL(E_DATA, "rank %d: info of rank %d is wrong", rank, r);
  char* ag = malloc((size_t)nranks * AG_SIZE);
  memset(ag, 0xee, (size_t)nranks * AG_SIZE);
  fillPattern(ag + (size_t)rank * AG_SIZE, AG_SIZE, 5000 + (uint64_t)rank);
  if (chrBootstrapAllGather(bs, ag, AG_SIZE) != ncclSuccess) CFAIL(E_P2P, "rank %d: allgather failed", rank);
  for (int r = 0; r < nranks; r++)
    if (!checkPattern(ag + (size_t)r * AG_SIZE, AG_SIZE, 5000 + (uint64_t)r))
      CFAIL(E_DATA, "rank %d: allgather slice of rank %d is wrong", rank, r);
  /* A second allgather right away: tags are reused, order must hold. */
  fillPattern(ag + (size_t)rank * AG_SIZE, AG_SIZE, 7000 + (uint64_t)rank);
  if (chrBootstrapAllGather(bs, ag, AG_SIZE) != ncclSuccess) CFAIL(E_P2P, "rank %d: allgather 2 failed", rank);
  for (int r = 0; r < nranks; r++)
    if (!checkPattern(ag + (size_t)r * AG_SIZE, AG_SIZE, 7000 + (uint64_t)r))
      CFAIL(E_DATA, "rank %d: allgather 2 slice of rank %d is wrong", rank, r);
  for (int i = 0; i < 3; i++)
    if (chrBootstrapBarrier(bs) != ncclSuccess) CFAIL(E_P2P, "rank %d: barrier failed", rank);
  chrBootstrapClose(bs);
  free(ag);
  free(all);
  int fds1 = fdsSettle(fds0, (int)scaled(3000)); /* rank 0 of an NCCL_COMM_ID id also ran the root */
  if (fds1 != fds0) CFAIL(E_FD, "rank %d: %d fds open before init, %d after close", rank, fds0, fds1);
}

static void normalRank(int rank, int nranks, const ncclUniqueId* id) {
  int fds0 = countFds();
  char myInfo[INFO_SIZE];
  char* all = malloc((size_t)nranks * INFO_SIZE);
  fillPattern(myInfo, INFO_SIZE, (uint64_t)rank + 1);
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(id, rank, nranks, myInfo, INFO_SIZE, all, NULL, &bs) != ncclSuccess)
    CFAIL(E_INIT, "rank %d/%d: init failed", rank, nranks);
  afterInit(bs, rank, nranks, all, fds0);
}

static void rankChild(int idx, void* p) {
  struct rankArg* a = p;
  ncclUniqueId id = a->id;
  childEnv(NULL, a->commId);
  if (!a->useId) {
    if (chrBootstrapGetUniqueId(&id) != ncclSuccess) CFAIL(E_INIT, "GetUniqueId failed");
  }
  normalRank(a->rankOf[idx], a->nranks, &id);
}

/* rendezvous for 1, 2, 3, 4, 8 ranks, with a root thread in the parent and with NCCL_COMM_ID. */
static void scenarioRendezvous(int onlyCommId) {
  int sizes[] = {1, 2, 3, 4, 8};
  int fds0 = countFds();
  /* One NCCL_COMM_ID for every round, as a job that makes several communicators would: each round's
   * rank 0 binds the port the previous round's root just released. */
  char commId[64];
  snprintf(commId, sizeof(commId), "127.0.0.1:%d", freePort());
  for (int withCommId = onlyCommId; withCommId < 2; withCommId++) {
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      struct rankArg a;
      memset(&a, 0, sizeof(a));
      a.nranks = sizes[s];
      a.commId = withCommId ? commId : NULL;
      a.useId = !withCommId;
      /* Start the ranks in reverse so that rank 0 (the root, with NCCL_COMM_ID) comes last. */
      for (int i = 0; i < a.nranks; i++) a.rankOf[i] = a.nranks - 1 - i;
      struct kids k = {.n = 0};
      for (int i = 0; i < a.nranks; i++) spawn(&k, rankChild, &a, withCommId ? NULL : &a.id);
      if (!withCommId && chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
        fprintf(stderr, "GetUniqueId failed: %s\n", chrThreadLastError());
        failures++;
        reap(&k);
        return;
      }
      startAll(&k, &a.id);
      reap(&k);
      for (int i = 0; i < a.nranks; i++) expectStatus(withCommId ? "rendezvous(NCCL_COMM_ID)" : "rendezvous", &k, i, OK);
    }
  }
  /* Every root thread of this process has finished and closed its sockets. */
  int fds1 = fdsSettle(fds0, (int)scaled(3000));
  if (fds1 != fds0) {
    fprintf(stderr, "rendezvous: parent has %d fds, %d before (root threads leaked sockets?)\n", fds1, fds0);
    failures++;
  }
}

/* Two ids at once: their roots run side by side in this process; the ids differ. */
static void scenarioConcurrentRoots(void) {
  struct rankArg a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  a.useId = b.useId = 1;
  a.nranks = 3;
  b.nranks = 4;
  struct kids k = {.n = 0};
  /* rankOf is per child index, so fill both tables for every index. */
  for (int i = 0; i < 7; i++) {
    a.rankOf[i] = i;
    b.rankOf[i] = i - 3;
  }
  for (int i = 0; i < 3; i++) spawn(&k, rankChild, &a, &a.id);
  for (int i = 3; i < 7; i++) spawn(&k, rankChild, &b, &b.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess || chrBootstrapGetUniqueId(&b.id) != ncclSuccess) {
    fprintf(stderr, "GetUniqueId failed\n");
    failures++;
    reap(&k);
    return;
  }
  if (memcmp(&a.id, &b.id, sizeof(a.id)) == 0) {
    fprintf(stderr, "two unique ids are equal\n");
    failures++;
  }
  /* Interleave the two groups. */
  for (int i = 0; i < 4; i++) {
    if (i < 3) startKid(&k, i, &a.id);
    startKid(&k, 3 + i, &b.id);
  }
  reap(&k);
  for (int i = 0; i < 7; i++) expectStatus("concurrent_roots", &k, i, OK);
}

/* ---- p2p ---- */

#define MIB (1 << 20)

struct pairArg {
  struct chrBootstrap* bs;
  int peer;
  ncclResult_t res;
};
static void* threadRecvMany(void* p) {
  struct pairArg* a = p;
  char* buf = malloc(4096);
  for (int i = 0; i < 50 && a->res == ncclSuccess; i++) {
    a->res = chrBootstrapRecv(a->bs, a->peer, 1000 + i, buf, 4096);
    if (a->res == ncclSuccess && !checkPattern(buf, 4096, 900000 + (uint64_t)a->peer * 1000 + i)) a->res = ncclInternalError;
  }
  free(buf);
  return NULL;
}

static void p2pChild(int idx, void* p) {
  struct rankArg* a = p;
  int rank = a->rankOf[idx], n = a->nranks;
  childEnv(NULL, NULL);
  struct chrBootstrap* bs = NULL;
  int fds0 = countFds();
  if (chrBootstrapInit(&a->id, rank, n, NULL, 0, NULL, NULL, &bs) != ncclSuccess) CFAIL(E_INIT, "init");
  char* big = malloc(MIB);
  char* got = malloc(MIB);
  char one = 0x5a, oneIn = 0;
  if (rank == 0 || rank == 1) {
    int peer = 1 - rank;
    /* Both send first (1 MiB, more than socket buffers), then receive: must not deadlock. */
    fillPattern(big, MIB, 100 + (uint64_t)rank);
    if (chrBootstrapSend(bs, peer, 9, big, MIB) != ncclSuccess) CFAIL(E_P2P, "send 1MiB");
    if (chrBootstrapSend(bs, peer, 7, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send 1");
    if (chrBootstrapSend(bs, peer, 5, NULL, 0) != ncclSuccess) CFAIL(E_P2P, "send 0");
    if (chrBootstrapSend(bs, peer, 11, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send 1 (tag 11)");
    /* Received in another order than sent. */
    if (chrBootstrapRecv(bs, peer, 5, NULL, 0) != ncclSuccess) CFAIL(E_P2P, "recv 0");
    if (chrBootstrapRecv(bs, peer, 7, &oneIn, 1) != ncclSuccess || oneIn != one) CFAIL(E_P2P, "recv 1");
    if (chrBootstrapRecv(bs, peer, 9, got, MIB) != ncclSuccess) CFAIL(E_P2P, "recv 1MiB");
    if (!checkPattern(got, MIB, 100 + (uint64_t)peer)) CFAIL(E_DATA, "1 MiB payload wrong");
    /* Wrong size: an error that says so. */
    if (chrBootstrapRecv(bs, peer, 11, got, 2) != ncclInvalidUsage) CFAIL(E_P2P, "wrong-size recv not refused");
    if (!strstr(chrThreadLastError(), "expected 2 bytes")) CFAIL(E_TEXT, "wrong-size text");
  }
  /* Self messages. */
  if (chrBootstrapSend(bs, rank, 3, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send self");
  if (chrBootstrapRecv(bs, rank, 3, &oneIn, 1) != ncclSuccess || oneIn != one) CFAIL(E_P2P, "recv self");
  /* One thread receives from the previous rank while the main thread sends to the next. */
  int next = (rank + 1) % n, prev = (rank - 1 + n) % n;
  struct pairArg ra = {bs, prev, ncclSuccess};
  pthread_t t;
  pthread_create(&t, NULL, threadRecvMany, &ra);
  for (int i = 0; i < 50; i++) {
    fillPattern(big, 4096, 900000 + (uint64_t)rank * 1000 + i);
    if (chrBootstrapSend(bs, next, 1000 + i, big, 4096) != ncclSuccess) CFAIL(E_P2P, "threaded send %d", i);
  }
  pthread_join(t, NULL);
  if (ra.res != ncclSuccess) CFAIL(E_P2P, "threaded recv");
  if (chrBootstrapBarrier(bs) != ncclSuccess) CFAIL(E_P2P, "barrier");
  chrBootstrapClose(bs);
  free(big);
  free(got);
  if (countFds() != fds0) CFAIL(E_FD, "fds leaked: %d -> %d", fds0, countFds());
}

static void scenarioP2p(void) {
  struct rankArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  for (int i = 0; i < 3; i++) a.rankOf[i] = i;
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, p2pChild, &a, &a.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
    failures++;
    reap(&k);
    return;
  }
  startAll(&k, &a.id);
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("p2p", &k, i, OK);
}

/* p2p failures: a peer that closes, a peer that never sends (timeout), the abort flag. */
static volatile uint32_t gAbort = 0;
static void* setAbortLater(void* p) {
  usleep(300000);
  __atomic_store_n(&gAbort, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void p2pFailChild(int idx, void* p) {
  struct rankArg* a = p;
  int rank = a->rankOf[idx];
  childEnv(NULL, NULL);
  /* Rank 2 waits for rank 0 without a deadline (it must outlive rank 0's own 2 s wait for it). */
  setenv("CHORUS_TIMEOUT", rank == 2 ? "0" : "2", 1);
  chrConfigReload();
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&a->id, rank, 3, NULL, 0, NULL, &gAbort, &bs) != ncclSuccess) CFAIL(E_INIT, "init");
  char c = 1;
  if (rank == 1) {
    /* Say hello to rank 0 (so it knows this connection), then leave. */
    if (chrBootstrapSend(bs, 0, 1, &c, 1) != ncclSuccess) CFAIL(E_P2P, "send");
    chrBootstrapClose(bs);
    return;
  }
  if (rank == 0) {
    if (chrBootstrapRecv(bs, 1, 1, &c, 1) != ncclSuccess) CFAIL(E_P2P, "recv");
    double t0 = nowSec();
    if (chrBootstrapRecv(bs, 1, 2, &c, 1) != ncclRemoteError) CFAIL(E_P2P, "recv from a closed rank did not fail");
    /* Seen either way: its connection to us closed, or nobody listens at its address any more. */
    if (!strstr(chrThreadLastError(), "rank 1 closed its connection") && !strstr(chrThreadLastError(), "rank 1 is gone"))
      CFAIL(E_TEXT, "closed text");
    if (nowSec() - t0 > scaled(1.5)) CFAIL(E_TIME, "closed peer noticed after %.1f s", nowSec() - t0);
    /* Rank 2 never sends: the timeout, with who and what. */
    t0 = nowSec();
    if (chrBootstrapRecv(bs, 2, 4, &c, 1) != ncclTimeout) CFAIL(E_P2P, "recv did not time out");
    double dt = nowSec() - t0;
    if (dt < 1.8 || dt > 2 + scaled(2)) CFAIL(E_TIME, "timeout after %.1f s, expected 2", dt);
    if (!strstr(chrThreadLastError(), "waiting for rank 2 (tag 4")) CFAIL(E_TEXT, "timeout text");
    /* Abort: a blocked receive returns soon after the flag is set. */
    pthread_t t;
    pthread_create(&t, NULL, setAbortLater, NULL);
    t0 = nowSec();
    if (chrBootstrapRecv(bs, 2, 5, &c, 1) != ncclInternalError) CFAIL(E_P2P, "abort did not stop recv");
    if (nowSec() - t0 > scaled(1.0)) CFAIL(E_TIME, "abort noticed after %.1f s", nowSec() - t0);
    pthread_join(t, NULL);
    if (chrBootstrapSend(bs, 2, 6, &c, 1) != ncclInternalError) CFAIL(E_P2P, "send after abort");
    if (chrBootstrapSend(bs, 7, 6, &c, 1) != ncclInvalidArgument) CFAIL(E_P2P, "peer out of range");
    /* Tell rank 2 we are done (abort set: use a raw close instead). */
    chrBootstrapClose(bs);
    return;
  }
  /* rank 2: wait until rank 0 goes away (its close), then leave. */
  if (chrBootstrapRecv(bs, 0, 99, &c, 1) == ncclSuccess) CFAIL(E_P2P, "unexpected message");
  chrBootstrapClose(bs);
}

static void scenarioP2pFailures(void) {
  struct rankArg a;
  memset(&a, 0, sizeof(a));
  for (int i = 0; i < 3; i++) a.rankOf[i] = i;
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, p2pFailChild, &a, &a.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
    failures++;
    reap(&k);
    return;
  }
  startAll(&k, &a.id);
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("p2p_failures", &k, i, OK);
}

/* ---- bad clients at init ---- */

struct badArg {
  ncclUniqueId id;
  int nranks;
  int kind[MAX_CHILDREN]; /* what child i does */
  int rankOf[MAX_CHILDREN];
  const char* expect[MAX_CHILDREN]; /* expected error text for failing kinds */
  int nranksOf[MAX_CHILDREN];       /* nranks this child claims (0: nranks) */
  double waitMaxSec;                /* how long K_WAIT_FAIL may take to fail */
};

enum {
  K_GOOD,          /* a normal rank that must succeed */
  K_REJECTED,      /* init must fail quickly with expect[] in the text */
  K_WRONG_SECRET,  /* uses the id with one secret byte flipped; must be rejected */
  K_GARBAGE,       /* raw socket: sends garbage bytes */
  K_EARLY_CLOSE,   /* raw socket: connects and closes at once */
  K_PARTIAL,       /* raw socket: half a hello, then holds the connection a while */
  K_HUGE_INFO,     /* raw socket: valid magic and secret, info size 1 GiB: rejected */
  K_WAIT_FAIL,     /* a rank that must fail with expect[] (root's timeout or abort), timed */
  K_EXIT_IN_INIT,  /* starts init, _exit()s 0.5 s later while waiting */
  K_GOOD_OR_TAKEN  /* duplicate rank: either succeeds or is rejected as taken */
};

static int rawConnect(const ncclUniqueId* id) {
  struct chrBsId bid;
  memcpy(&bid, id->internal, sizeof(bid));
  int fd = -1;
  if (chrSockConnect(&bid.root, testDeadline(3), NULL, &fd, NULL) != ncclSuccess) CFAIL(E_OTHER, "raw connect");
  return fd;
}

static void* exitLater(void* p) {
  usleep((useconds_t)scaled(500000)); /* the other ranks are in by then */
  _exit(OK);
  return NULL;
}

static void expectInitFails(const ncclUniqueId* id, int rank, int nranks, const char* text, double maxSec) {
  struct chrBootstrap* bs = NULL;
  char info[INFO_SIZE], *all = malloc((size_t)(nranks > 0 ? nranks : 1) * INFO_SIZE);
  memset(info, 0, sizeof(info));
  double t0 = nowSec();
  int fds0 = countFds();
  ncclResult_t r = chrBootstrapInit(id, rank, nranks, info, INFO_SIZE, all, NULL, &bs);
  double dt = nowSec() - t0;
  free(all);
  if (r == ncclSuccess) CFAIL(E_INIT, "rank %d: init succeeded, expected failure '%s'", rank, text);
  if (bs != NULL) CFAIL(E_OTHER, "failed init left *out set");
  if (!strstr(chrThreadLastError(), text)) CFAIL(E_TEXT, "rank %d: error text lacks '%s'", rank, text);
  if (dt > maxSec) CFAIL(E_TIME, "rank %d: failure took %.1f s (max %.1f)", rank, dt, maxSec);
  if (countFds() != fds0) CFAIL(E_FD, "failed init leaked fds: %d -> %d", fds0, countFds());
}

static void badChild(int idx, void* p) {
  struct badArg* a = p;
  int rank = a->rankOf[idx];
  int nranks = a->nranksOf[idx] ? a->nranksOf[idx] : a->nranks;
  childEnv(NULL, NULL);
  switch (a->kind[idx]) {
    case K_GOOD:
      normalRank(rank, a->nranks, &a->id);
      return;
    case K_REJECTED:
      expectInitFails(&a->id, rank, nranks, a->expect[idx], scaled(2.0));
      return;
    case K_WRONG_SECRET: {
      ncclUniqueId bad = a->id;
      ((struct chrBsId*)bad.internal)->secret ^= 0x10;
      expectInitFails(&bad, rank, a->nranks, a->expect[idx], scaled(2.0));
      return;
    }
    case K_WAIT_FAIL:
      expectInitFails(&a->id, rank, a->nranks, a->expect[idx], a->waitMaxSec);
      return;
    case K_EXIT_IN_INIT: {
      pthread_t t;
      pthread_create(&t, NULL, exitLater, NULL);
      char info[INFO_SIZE], *all = malloc((size_t)a->nranks * INFO_SIZE);
      struct chrBootstrap* bs = NULL;
      memset(info, 0, sizeof(info));
      chrBootstrapInit(&a->id, rank, a->nranks, info, INFO_SIZE, all, NULL, &bs);
      CFAIL(E_OTHER, "init returned before the exit");
    }
    case K_GOOD_OR_TAKEN: {
      struct chrBootstrap* bs = NULL;
      char info[INFO_SIZE], *all = malloc((size_t)a->nranks * INFO_SIZE);
      fillPattern(info, INFO_SIZE, (uint64_t)rank + 1);
      int fds0 = countFds();
      ncclResult_t r = chrBootstrapInit(&a->id, rank, a->nranks, info, INFO_SIZE, all, NULL, &bs);
      if (r == ncclSuccess) {
        afterInit(bs, rank, a->nranks, all, fds0);
        _exit(OK);
      }
      free(all);
      if (!strstr(chrThreadLastError(), "rank 2 is already taken")) CFAIL(E_TEXT, "duplicate text");
      _exit(1); /* "rejected", counted by the parent */
    }
    case K_GARBAGE: {
      int fd = rawConnect(&a->id);
      char junk[300];
      fillPattern(junk, sizeof(junk), 42);
      chrSockSendAll(fd, junk, sizeof(junk), testDeadline(2), NULL, NULL);
      usleep(300000);
      chrSockClose(&fd);
      return;
    }
    case K_EARLY_CLOSE: {
      int fd = rawConnect(&a->id);
      chrSockClose(&fd);
      return;
    }
    case K_PARTIAL: {
      int fd = rawConnect(&a->id);
      struct chrBsHello h;
      memset(&h, 0, sizeof(h));
      h.magic = CHR_BS_HELLO_MAGIC;
      chrSockSendAll(fd, &h, sizeof(h) / 2, testDeadline(2), NULL, NULL);
      usleep(1500000);
      chrSockClose(&fd);
      return;
    }
    case K_HUGE_INFO: {
      int fd = rawConnect(&a->id);
      struct chrBsId bid;
      memcpy(&bid, a->id.internal, sizeof(bid));
      struct chrBsHello h;
      memset(&h, 0, sizeof(h));
      h.magic = CHR_BS_HELLO_MAGIC;
      h.version = CHR_BS_WIRE_VERSION;
      h.secret = bid.secret;
      h.rank = 0;
      h.nranks = a->nranks;
      h.infoSize = 1u << 30;
      h.listenAddr = bid.root;
      chrSockSendAll(fd, &h, sizeof(h), testDeadline(2), NULL, NULL);
      struct chrBsReply rep;
      if (chrSockRecvAll(fd, &rep, sizeof(rep), testDeadline(3), NULL, NULL) != ncclSuccess ||
          rep.magic != CHR_BS_REPLY_MAGIC || rep.type != CHR_BS_REPLY_REJECT || rep.payloadSize > 1024)
        CFAIL(E_OTHER, "huge info: no reject");
      char text[1025];
      chrSockRecvAll(fd, text, (size_t)rep.payloadSize, testDeadline(3), NULL, NULL);
      text[rep.payloadSize] = '\0';
      if (!strstr(text, "info size")) CFAIL(E_TEXT, "huge info reject text: %s", text);
      chrSockClose(&fd);
      return;
    }
  }
}

/* Fork nkids children of badChild, waiting to be started with the id. */
static void spawnBad(struct kids* k, struct badArg* a, int nkids) {
  for (int i = 0; i < nkids; i++) spawn(k, badChild, a, &a->id);
}

static void expectAll(const char* name, struct kids* k, const int* want) {
  for (int i = 0; i < k->n; i++) expectStatus(name, k, i, want[i]);
}

static int newId(ncclUniqueId* id) {
  if (chrBootstrapGetUniqueId(id) != ncclSuccess) {
    fprintf(stderr, "GetUniqueId: %s\n", chrThreadLastError());
    failures++;
    return 0;
  }
  return 1;
}

/* A process with a flipped secret byte is told why; the genuine ranks go on and succeed. */
static void scenarioWrongSecret(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  int kinds[] = {K_WRONG_SECRET, K_GOOD, K_GOOD, K_GOOD};
  int ranks[] = {1, 0, 1, 2};
  for (int i = 0; i < 4; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: root rejected rank 1: wrong secret (unique id from another ncclGetUniqueId?)";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 4);
  if (newId(&a.id)) {
    /* Rank 2 only once the wrong one has its answer: the root is still waiting when it comes. */
    for (int i = 0; i < 3; i++) startKid(&k, i, &a.id);
    waitKidExit(&k, 0, -1);
    startKid(&k, 3, &a.id);
  }
  reap(&k);
  int want[] = {OK, OK, OK, OK};
  expectAll("wrong_secret", &k, want);
}

/* Garbage, early close, half a hello, an oversized hello: dropped or rejected; the ranks succeed. */
static void scenarioGarbage(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  int kinds[] = {K_GARBAGE, K_EARLY_CLOSE, K_PARTIAL, K_HUGE_INFO, K_GOOD, K_GOOD, K_GOOD};
  int ranks[] = {0, 0, 0, 0, 0, 1, 2};
  for (int i = 0; i < 7; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 7);
  if (newId(&a.id)) {
    /* Rank 2 once the garbage, the early close and the oversized hello are through (the half hello
     * is still pending then): the root has dealt with them while it waited. */
    for (int i = 0; i < 6; i++) startKid(&k, i, &a.id);
    waitKidExit(&k, 0, -1);
    waitKidExit(&k, 1, -1);
    waitKidExit(&k, 3, -1);
    startKid(&k, 6, &a.id);
  }
  reap(&k);
  int want[7] = {0};
  expectAll("garbage", &k, want);
}

/* A rank that exits while init waits: the others hear about it at once, not at the timeout. */
static void scenarioExitDuringInit(void) {
  setenv("CHORUS_BOOTSTRAP_TIMEOUT", "20", 1); /* the root (in this process) reads it at GetUniqueId */
  chrConfigReload();
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 4; /* rank 2 never comes, so init is still waiting when rank 3 exits */
  a.waitMaxSec = scaled(5.0);
  int kinds[] = {K_WAIT_FAIL, K_WAIT_FAIL, K_EXIT_IN_INIT};
  int ranks[] = {0, 1, 3};
  for (int i = 0; i < 3; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: rank 3 closed its bootstrap connection during init";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 3);
  if (newId(&a.id)) startAll(&k, &a.id);
  reap(&k);
  int want[] = {OK, OK, OK};
  expectAll("exit_during_init", &k, want);
}

/* Rank out of range, rank given twice, nranks that differs: rejected with the reason; others succeed. */
static void scenarioBadRank(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 4;
  /* Rank 2 twice; and rank 4 claiming nranks 5, after the others set nranks 4. Rank 3 comes last so
   * that the root still waits when the bad ones arrive. */
  int kinds[] = {K_GOOD, K_GOOD, K_GOOD_OR_TAKEN, K_GOOD_OR_TAKEN, K_GOOD, K_REJECTED};
  int ranks[] = {0, 1, 2, 2, 3, 4};
  for (int i = 0; i < 6; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: root rejected rank 4: nranks 5 differs from nranks 4";
  }
  a.nranksOf[5] = 5;
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 6);
  if (newId(&a.id)) {
    for (int i = 0; i < 4; i++) startKid(&k, i, &a.id);
    /* One rank 2 was refused as taken, so the other one is in and nranks is 4: now rank 4 with
     * nranks 5; once it is refused, rank 3 completes the set. */
    waitKidExit(&k, 2, 3);
    startKid(&k, 5, &a.id);
    waitKidExit(&k, 5, -1);
    startKid(&k, 4, &a.id);
  }
  reap(&k);
  expectStatus("bad_rank", &k, 0, OK);
  expectStatus("bad_rank", &k, 1, OK);
  expectStatus("bad_rank", &k, 4, OK);
  expectStatus("bad_rank", &k, 5, OK);
  int ok2 = (k.status[2] == OK) + (k.status[3] == OK), rej2 = (k.status[2] == 1) + (k.status[3] == 1);
  if (ok2 != 1 || rej2 != 1) {
    fprintf(stderr, "bad_rank: duplicate rank 2: statuses %d and %d, expected one 0 and one 1\n", k.status[2],
            k.status[3]);
    failures++;
  }
}

/* The root itself refuses a rank out of range (a hello sent by hand: the API refuses it earlier). */
static void outOfRangeChild(int idx, void* p) {
  struct badArg* a = p;
  childEnv(NULL, NULL);
  if (idx < 2) {
    normalRank(idx, 2, &a->id);
    return;
  }
  /* The API checks first. */
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&a->id, 5, 2, NULL, 0, NULL, NULL, &bs) != ncclInvalidArgument) CFAIL(E_INIT, "api range");
  int fd = rawConnect(&a->id);
  struct chrBsId bid;
  memcpy(&bid, a->id.internal, sizeof(bid));
  struct chrBsHello h;
  memset(&h, 0, sizeof(h));
  h.magic = CHR_BS_HELLO_MAGIC;
  h.version = CHR_BS_WIRE_VERSION;
  h.secret = bid.secret;
  h.rank = 5;
  h.nranks = 2;
  h.infoSize = INFO_SIZE;
  h.listenAddr = bid.root;
  chrSockSendAll(fd, &h, sizeof(h), testDeadline(2), NULL, NULL);
  struct chrBsReply rep;
  if (chrSockRecvAll(fd, &rep, sizeof(rep), testDeadline(3), NULL, NULL) != ncclSuccess ||
      rep.type != CHR_BS_REPLY_REJECT || rep.payloadSize > 1024)
    CFAIL(E_OTHER, "out of range: no reject");
  char text[1025];
  chrSockRecvAll(fd, text, (size_t)rep.payloadSize, testDeadline(3), NULL, NULL);
  text[rep.payloadSize] = '\0';
  if (!strstr(text, "rank 5 out of range (nranks 2)")) CFAIL(E_TEXT, "out-of-range text: %s", text);
  chrSockClose(&fd);
}

static void scenarioOutOfRange(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, outOfRangeChild, &a, &a.id);
  if (newId(&a.id)) {
    /* Rank 1 once the bad hello was refused: the root is still waiting when it comes. */
    startKid(&k, 0, &a.id);
    startKid(&k, 2, &a.id);
    waitKidExit(&k, 2, -1);
    startKid(&k, 1, &a.id);
  }
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("out_of_range", &k, i, OK);
}

/* Ranks 2 and 5 of 8 never come (5 is there but with a wrong secret): everyone else fails at the
 * timeout with the list of missing ranks. */
static void scenarioMissing(void) {
  int timeoutSec = (int)chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT);
  char timedOut[128];
  snprintf(timedOut, sizeof(timedOut), "bootstrap: timed out after %d s waiting for ranks 2,5 (of 8)", timeoutSec);
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 8;
  a.waitMaxSec = timeoutSec + scaled(2.0);
  int ranks[] = {0, 1, 3, 4, 6, 7, 5};
  for (int i = 0; i < 7; i++) {
    a.kind[i] = i < 6 ? K_WAIT_FAIL : K_WRONG_SECRET;
    a.rankOf[i] = ranks[i];
    a.expect[i] = i < 6 ? timedOut : "bootstrap: root rejected rank 5: wrong secret";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 7);
  double t0 = nowSec();
  if (newId(&a.id)) startAll(&k, &a.id);
  reap(&k);
  int want[7] = {0};
  expectAll("missing", &k, want);
  if (nowSec() - t0 < timeoutSec - 0.5) {
    fprintf(stderr, "missing: ranks failed before the timeout\n");
    failures++;
  }
}

/* An id that is not one: refused with a clear text. */
static void scenarioBadId(void) {
  ncclUniqueId id;
  memset(&id, 0x41, sizeof(id));
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&id, 0, 1, NULL, 0, NULL, NULL, &bs) != ncclInvalidArgument ||
      !strstr(chrThreadLastError(), "not one made by ncclGetUniqueId")) {
    fprintf(stderr, "bad_id: %s\n", chrThreadLastError());
    failures++;
  }
}

int main(int argc, char** argv) {
  const char* s = argc > 1 ? argv[1] : "rendezvous";
  const char* scale = getenv("CHORUS_TEST_TIME_SCALE");
  if (scale != NULL && atoi(scale) > 1) gScale = atoi(scale);
  gBaseThreads = threadCount();
  if (!strcmp(s, "rendezvous")) scenarioRendezvous(0);
  /* Only the NCCL_COMM_ID half: no root thread in the parent, so every child's heap is its own
   * (handy under valgrind --trace-children, where inherited root state would look leaked). */
  else if (!strcmp(s, "rendezvous_commid")) scenarioRendezvous(1);
  else if (!strcmp(s, "concurrent_roots")) scenarioConcurrentRoots();
  else if (!strcmp(s, "p2p")) scenarioP2p();
  else if (!strcmp(s, "p2p_failures")) scenarioP2pFailures();
  else if (!strcmp(s, "wrong_secret")) scenarioWrongSecret();
  else if (!strcmp(s, "garbage")) scenarioGarbage();
  else if (!strcmp(s, "exit_during_init")) scenarioExitDuringInit();
  else if (!strcmp(s, "bad_rank")) scenarioBadRank();
  else if (!strcmp(s, "out_of_range")) scenarioOutOfRange();
  else if (!strcmp(s, "missing")) scenarioMissing();
  else if (!strcmp(s, "bad_id")) scenarioBadId();
  else {
    fprintf(stderr, "unknown scenario %s\n", s);
    return 2;
  }
  if (failures) fprintf(stderr, "test_bootstrap %s: %d failures\n", s, failures);
  return failures ? 1 : 0;
}
