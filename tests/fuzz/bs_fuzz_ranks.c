/* SPDX-License-Identifier: BSD-3-Clause */
/* bs_fuzz_ranks.c: the rank processes of the bootstrap fuzz test (bs_fuzz_ranks.h). */
#include "bs_fuzz_ranks.h"

/* ------------------------------------------------------------------------ data both sides check */

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void fillPattern(void* buf, size_t n, uint64_t key) {
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(mix64(key * 1000003ULL + i) >> 24);
}

int checkPattern(const void* buf, size_t n, uint64_t key) {
  const unsigned char* p = buf;
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(mix64(key * 1000003ULL + i) >> 24)) return 0;
  return 1;
}

int32_t reduceInput(int rank, size_t i) { return (int32_t)(mix64((uint64_t)rank << 40 | i) & 0xffff) - 0x8000; }

/* ------------------------------------------------------------------------ rank processes */

child kids[NRANKS];

/* Real traffic after the fuzzing: a bootstrap allgather and an ncclAllReduce, both checked exactly. */
void realTraffic(ncclComm_t comm, int rank) {
  struct chrBootstrap* bs = comm->bootstrap;
  const size_t agSize = 777;
  unsigned char* ag = malloc(NRANKS * agSize);
  memset(ag, 0xee, NRANKS * agSize);
  fillPattern(ag + rank * agSize, agSize, 9000 + (uint64_t)rank);
  if (chrBootstrapAllGather(bs, ag, agSize) != ncclSuccess) CFAIL("rank %d: bootstrap allgather failed: %s", rank, chrThreadLastError());
  for (int r = 0; r < NRANKS; r++)
    if (!checkPattern(ag + r * agSize, agSize, 9000 + (uint64_t)r)) CFAIL("rank %d: allgather slice of rank %d is wrong", rank, r);
  free(ag);

  const size_t count = 65537;
  int32_t* buf = malloc(count * sizeof(int32_t));
  for (size_t i = 0; i < count; i++) buf[i] = reduceInput(rank, i);
  ncclResult_t res = ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, NULL);
  if (res != ncclSuccess) CFAIL("rank %d: ncclAllReduce returned %d: %s", rank, (int)res, ncclGetLastError(comm));
  for (size_t i = 0; i < count; i++) {
    int32_t want = 0;
    for (int r = 0; r < NRANKS; r++) want += reduceInput(r, i);
    if (buf[i] != want) CFAIL("rank %d: allreduce element %zu is %d, expected %d", rank, i, buf[i], want);
  }
  free(buf);
}

void readId(int fd, ncclUniqueId* id) {
  size_t got = 0;
  while (got < sizeof(*id)) {
    ssize_t n = read(fd, (char*)id + got, sizeof(*id) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3); /* the parent failed before it had an id; it reports why */
    got += (size_t)n;
  }
}

ncclComm_t initRank(int rank, int inFd) {
  ncclUniqueId id;
  readId(inFd, &id);
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, NRANKS, id, rank);
  if (res != ncclSuccess) CFAIL("rank %d: ncclCommInitRank returned %d: %s", rank, (int)res, ncclGetLastError(NULL));
  return comm;
}

void destroyAndCheckFds(ncclComm_t comm, int rank, int fds0) {
  if (ncclCommDestroy(comm) != ncclSuccess) CFAIL("rank %d: ncclCommDestroy failed", rank);
  int fds1 = fuzzCountFds();
  for (int t = 0; t < 3000 && fds1 > fds0 + FD_SLACK; t += 20) {
    fuzzSleepMs(20);
    fds1 = fuzzCountFds();
  }
  if (fds1 > fds0 + FD_SLACK) CFAIL("rank %d: %d fds open before init, %d after destroy", rank, fds0, fds1);
}

/* root scenario: a plain rank; the fuzzing happens at the root while it waits in init. */
void rootRankMain(int rank, int inFd, int outFd) {
  (void)outFd;
  int fds0 = fuzzCountFds();
  ncclComm_t comm = initRank(rank, inFd);
  realTraffic(comm, rank);
  destroyAndCheckFds(comm, rank, fds0);
}

/* p2p scenario: the rank's helper thread sends `next` a tick every 200 ms until the parent says
 * stop; the main thread receives the ticks of `prev`, so it sits in chrBootstrapRecv (which is
 * what reads incoming connections) all the time the fuzzer works on its port. */
struct ticker {
  struct chrBootstrap* bs;
  int rank, inFd;
  int failed;
};

void* tickerMain(void* arg) {
  struct ticker* t = arg;
  int next = (t->rank + 1) % NRANKS;
  for (;;) {
    struct pollfd p = {.fd = t->inFd, .events = POLLIN};
    int rc = poll(&p, 1, 200);
    if (rc < 0 && errno == EINTR) continue;
    uint32_t v = 0;
    if (rc > 0) {
      char c = 0;
      ssize_t n = read(t->inFd, &c, 1);
      if (n != 1 || c != 'S') t->failed = 2; /* the parent is gone */
      v = 1;
    }
    if (chrBootstrapSend(t->bs, next, TAG_TICK, &v, sizeof(v)) != ncclSuccess) {
      t->failed = 1;
      return NULL;
    }
    if (v == 1) return NULL;
  }
}

void p2pRankMain(int rank, int inFd, int outFd) {
  int fds0 = fuzzCountFds();
  ncclComm_t comm = initRank(rank, inFd);
  struct chrBootstrap* bs = comm->bootstrap;
  /* Every pair connected and known before the fuzzing starts. */
  for (int p = 0; p < NRANKS; p++) {
    if (p == rank) continue;
    uint64_t v = mix64((uint64_t)rank * 100 + (uint64_t)p);
    if (chrBootstrapSend(bs, p, TAG_WARM, &v, sizeof(v)) != ncclSuccess) CFAIL("rank %d: warm-up send to %d failed", rank, p);
  }
  for (int p = 0; p < NRANKS; p++) {
    if (p == rank) continue;
    uint64_t v = 0;
    if (chrBootstrapRecv(bs, p, TAG_WARM, &v, sizeof(v)) != ncclSuccess || v != mix64((uint64_t)p * 100 + (uint64_t)rank))
      CFAIL("rank %d: warm-up receive from %d failed: %s", rank, p, chrThreadLastError());
  }
  chrSockAddr me;
  socklen_t len = sizeof(me);
  if (getsockname(bs->listenFd, &me.sa, &len) != 0) CFAIL("rank %d: getsockname: %s", rank, strerror(errno));
  if (write(outFd, &me, sizeof(me)) != (ssize_t)sizeof(me)) CFAIL("rank %d: cannot report its address", rank);
  int fdsWarm = fuzzCountFds();

  struct ticker t = {.bs = bs, .rank = rank, .inFd = inFd};
  pthread_t tid;
  if (pthread_create(&tid, NULL, tickerMain, &t) != 0) CFAIL("rank %d: pthread_create", rank);
  int prev = (rank + NRANKS - 1) % NRANKS;
  double end = fuzzNow() + PARENT_DEADLINE_SEC;
  for (;;) {
    uint32_t v = 0;
    if (chrBootstrapRecv(bs, prev, TAG_TICK, &v, sizeof(v)) != ncclSuccess)
      CFAIL("rank %d: receiving a tick from rank %d failed during the fuzzing: %s", rank, prev, chrThreadLastError());
    if (v == 1) break;
    if (v != 0) CFAIL("rank %d: tick from rank %d carries %u", rank, prev, v);
    if (fuzzNow() > end) CFAIL("rank %d: no stop after %d s", rank, PARENT_DEADLINE_SEC);
  }
  pthread_join(tid, NULL);
  if (t.failed) CFAIL("rank %d: sending ticks failed (%d): %s", rank, t.failed, chrThreadLastError());

  /* The parent's probe: a valid message on a fresh connection after all the garbage. */
  unsigned char probe[PROBE_SIZE];
  if (chrBootstrapRecv(bs, (rank + 1) % NRANKS, TAG_PROBE, probe, sizeof(probe)) != ncclSuccess)
    CFAIL("rank %d: the probe sent after the fuzzing did not arrive: %s", rank, chrThreadLastError());
  if (!checkPattern(probe, sizeof(probe), 7000 + (uint64_t)rank)) CFAIL("rank %d: the probe's bytes are wrong", rank);
  /* Every garbage connection was closed by now (the parent holds only the probe's). */
  int fdsNow = fuzzCountFds();
  if (fdsNow > fdsWarm + 1 + FD_SLACK)
    CFAIL("rank %d: %d fds open after the fuzzing, %d before it: dropped connections leak", rank, fdsNow, fdsWarm);
  realTraffic(comm, rank);
  destroyAndCheckFds(comm, rank, fds0);
}

void spawnRanks(rankMainFn fn) {
  for (int r = 0; r < NRANKS; r++) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) FUZZ_FAIL("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) FUZZ_FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      for (int k = 0; k < r; k++) {
        close(kids[k].toChild);
        close(kids[k].fromChild);
      }
      close(down[1]);
      close(up[0]);
      fn(r, down[0], up[1]);
      fflush(stdout);
      fflush(stderr);
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    kids[r] = (child){.pid = pid, .toChild = down[1], .fromChild = up[0], .status = -2};
  }
}

void sendIdTo(int r, const ncclUniqueId* id) {
  if (write(kids[r].toChild, id, sizeof(*id)) != (ssize_t)sizeof(*id)) FUZZ_FAIL("cannot hand rank %d the id", r);
}

/* Wait for every child until the deadline, kill what is left; fail unless all exited with 0. */
void reapRanks(double deadline) {
  int left = NRANKS;
  while (left > 0) {
    for (int r = 0; r < NRANKS; r++) {
      if (kids[r].status != -2) continue;
      int st;
      if (waitpid(kids[r].pid, &st, WNOHANG) == kids[r].pid) {
        kids[r].status = WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
        left--;
      }
    }
    if (left == 0) break;
    if (fuzzNow() > deadline) {
      for (int r = 0; r < NRANKS; r++)
        if (kids[r].status == -2) {
          kill(kids[r].pid, SIGKILL);
          waitpid(kids[r].pid, NULL, 0);
          kids[r].status = -1;
        }
      break;
    }
    fuzzSleepMs(10);
  }
  int bad = 0;
  for (int r = 0; r < NRANKS; r++) {
    if (kids[r].status == 0) continue;
    fprintf(stderr, "rank %d %s %d\n", r, kids[r].status == -1 ? "hung: killed at the deadline" : "exited with",
            kids[r].status);
    bad = 1;
  }
  for (int r = 0; r < NRANKS; r++) {
    close(kids[r].toChild);
    close(kids[r].fromChild);
  }
  if (bad) FUZZ_FAIL("a rank failed (see above)");
}

