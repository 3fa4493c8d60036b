/* SPDX-License-Identifier: BSD-3-Clause */
/* bootstrap_kids.c: the bootstrap tests' shared harness (bootstrap_kids.h). */
#include "bootstrap_kids.h"

/* CHORUS_TEST_TIME_SCALE (read in main): how much slower than a plain build this build may be. */
int gScale = 1;
double scaled(double sec) { return sec * gScale; }
int64_t testDeadline(int sec) { return chrSockDeadlineSec((int64_t)sec * gScale); }

double nowSec(void) { return (double)chrSockNowNs() / 1e9; }

int countFds(void) {
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
int fdsSettle(int want, int ms) {
  int n = countFds();
  for (int t = 0; t < ms && n != want; t += 20) {
    usleep(20000);
    n = countFds();
  }
  return n;
}

/* A free loopback port for NCCL_COMM_ID. */
int freePort(void) {
  chrSockAddr a, b;
  int fd = -1;
  chrSockAddrParse("127.0.0.1:0", AF_INET, &a, NULL);
  if (chrSockListen(&a, 1, &fd, &b, NULL) != ncclSuccess) return -1;
  chrSockClose(&fd);
  return chrSockAddrPort(&b);
}

/* Child setup: re-read the config after the parent's setenv calls. */
void childEnv(const char* bootstrapTimeout, const char* commId) {
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

int gBaseThreads = 1; /* threads of this process before any bootstrap call (main counts them) */

int threadCount(void) {
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
void waitNoOtherThreads(void) {
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
void spawn(struct kids* k, childFn fn, void* arg, ncclUniqueId* idSlot) {
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
void startKid(struct kids* k, int i, const ncclUniqueId* id) {
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

void startAll(struct kids* k, const ncclUniqueId* id) {
  for (int i = 0; i < k->n; i++) startKid(k, i, id);
}

/* Record the children that have exited. */
void pollKids(struct kids* k) {
  for (int i = 0; i < k->n; i++) {
    if (k->status[i] != -2) continue;
    int st;
    if (waitpid(k->pid[i], &st, WNOHANG) == k->pid[i])
      k->status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
  }
}

/* Wait (up to the parent's deadline) until child i, or child j when j >= 0, has exited: a scenario's
 * way to let one child finish with the root before the next one arrives. 1 when one did. */
int waitKidExit(struct kids* k, int i, int j) {
  for (;;) {
    pollKids(k);
    if (k->status[i] != -2 || (j >= 0 && k->status[j] != -2)) return 1;
    if (nowSec() > k->deadline) return 0;
    usleep(10000);
  }
}

/* Wait for all children until the parent's deadline; kill the rest. Children never started are
 * released with end-of-file and exit with E_NOSTART. Returns how many were killed. */
int reap(struct kids* k) {
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

int failures = 0;
void expectStatus(const char* scenario, struct kids* k, int i, int want) {
  if (k->status[i] != want) {
    fprintf(stderr, "%s: child %d exited with %d, expected %d%s\n", scenario, i, k->status[i], want,
            k->status[i] == -1 ? " (hung: killed at the parent's deadline)" : "");
    failures++;
  }
}

/* ---- deterministic data every rank can check ---- */

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
void fillPattern(void* buf, size_t n, uint64_t seed) {
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(mix(seed * 1000003ULL + i) >> 24);
}
int checkPattern(const void* buf, size_t n, uint64_t seed) {
  const unsigned char* p = buf;
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(mix(seed * 1000003ULL + i) >> 24)) return 0;
  return 1;
}

/* ---- a normal rank: init, check infos, allgather, barrier, close, no fds left ---- */

/* Everything a rank does after a successful init; closes bs and frees all. */
void afterInit(struct chrBootstrap* bs, int rank, int nranks, char* all, int fds0) {
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

void normalRank(int rank, int nranks, const ncclUniqueId* id) {
  int fds0 = countFds();
  char myInfo[INFO_SIZE];
  char* all = malloc((size_t)nranks * INFO_SIZE);
  fillPattern(myInfo, INFO_SIZE, (uint64_t)rank + 1);
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(id, rank, nranks, myInfo, INFO_SIZE, all, NULL, &bs) != ncclSuccess)
    CFAIL(E_INIT, "rank %d/%d: init failed", rank, nranks);
  afterInit(bs, rank, nranks, all, fds0);
}

void rankChild(int idx, void* p) {
  struct rankArg* a = p;
  ncclUniqueId id = a->id;
  childEnv(NULL, a->commId);
  if (!a->useId) {
    if (chrBootstrapGetUniqueId(&id) != ncclSuccess) CFAIL(E_INIT, "GetUniqueId failed");
  }
  normalRank(a->rankOf[idx], a->nranks, &id);
}

