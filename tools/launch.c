/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.c: N ranks as N processes on one machine (see launch.h), and the environment-driven mode
 * for ranks that someone else started.
 */
#include "launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double chrLaunchNowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void chrLaunchSleepMs(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int chrLaunchReadFull(int fd, void* buf, size_t len) {
  char* p = buf;
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int chrLaunchFreeLoopbackPort(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof(a);
  int ok = fd >= 0 && bind(fd, (struct sockaddr*)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr*)&a, &l) == 0;
  if (fd >= 0) close(fd);
  return ok ? ntohs(a.sin_port) : -1;
}

static int writeFull(int fd, const void* buf, size_t len) {
  const char* p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Exit status of a child: 0..255 only, and a non-zero rankMain value must stay non-zero. */
static int exitCode(int rc) {
  if (rc == 0) return 0;
  return (rc & 0xff) ? (rc & 0xff) : 1;
}

/* Body of child `rank`: wait for the unique id, run the rank, leave without running atexit handlers
 * that belong to the parent's state (flushing stdio first, since _exit does not). */
static void runChild(int rank, int nranks, int nhosts, int idFd, pid_t parent, chrRankMain_t rankMain,
                     void* arg) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1); /* the parent died before prctl took effect */
  if (nhosts > 1) {
    char host[32];
    snprintf(host, sizeof(host), "host%d", rank % nhosts);
    setenv("NCCL_HOSTID", host, 1);
  }
  ncclUniqueId id;
  if (chrLaunchReadFull(idFd, &id, sizeof(id)) != 0) _exit(1); /* the parent failed to make an id; it reports */
  close(idFd);
  int rc = rankMain(rank, nranks, &id, arg);
  fflush(stdout);
  fflush(stderr);
  _exit(exitCode(rc));
}

static void killAll(const pid_t* pids, const int* done, int nranks) {
  for (int r = 0; r < nranks; r++)
    if (pids[r] > 0 && !done[r]) kill(pids[r], SIGKILL);
}

/* Describes how child `rank` ended; returns 1 if that is a failure. */
static int reportStatus(int rank, pid_t pid, int status, int killedByUs) {
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return 0;
    fprintf(stderr, "launch: rank %d (pid %d) exited with status %d\n", rank, (int)pid, WEXITSTATUS(status));
    return 1;
  }
  if (WIFSIGNALED(status)) {
    if (killedByUs && WTERMSIG(status) == SIGKILL) return 0; /* reported by the caller as a group */
    fprintf(stderr, "launch: rank %d (pid %d) killed by signal %d (%s)%s\n", rank, (int)pid, WTERMSIG(status),
            strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    return 1;
  }
  return 0;
}

int chrLaunchRanks(int nranks, int nhosts, int timeoutSec, chrRankMain_t rankMain, void* arg) {
  if (nranks < 1 || nhosts < 1 || rankMain == NULL) {
    fprintf(stderr, "launch: bad arguments (nranks %d, nhosts %d)\n", nranks, nhosts);
    return 1;
  }
  pid_t* pids = calloc((size_t)nranks, sizeof(pid_t));
  int* idFds = malloc((size_t)nranks * sizeof(int));
  int* done = calloc((size_t)nranks, sizeof(int));
  if (!pids || !idFds || !done) {
    fprintf(stderr, "launch: out of memory\n");
    free(pids);
    free(idFds);
    free(done);
    return 1;
  }
  for (int r = 0; r < nranks; r++) idFds[r] = -1;
  int failed = 0;
  pid_t parent = getpid();
  fflush(NULL); /* or buffered output would be printed once per child */

  /* 1. Fork every rank before touching the library (see launch.h for why). */
  for (int r = 0; r < nranks; r++) {
    int fds[2];
    if (pipe(fds) != 0) {
      fprintf(stderr, "launch: pipe for rank %d: %s\n", r, strerror(errno));
      failed = 1;
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "launch: fork for rank %d: %s\n", r, strerror(errno));
      close(fds[0]);
      close(fds[1]);
      failed = 1;
      break;
    }
    if (pid == 0) {
      /* Close the write ends this child inherited, so that each pipe's only writer is the parent
       * and a dead parent reads as end-of-file. */
      for (int q = 0; q < r; q++) close(idFds[q]);
      close(fds[1]);
      runChild(r, nranks, nhosts, fds[0], parent, rankMain, arg);
    }
    close(fds[0]);
    pids[r] = pid;
    idFds[r] = fds[1];
  }

  /* 2. Make the unique id (this process hosts the bootstrap root) and hand it to every rank. */
  if (!failed) {
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) {
      const char* last = ncclGetLastError(NULL);
      fprintf(stderr, "launch: ncclGetUniqueId failed: %s%s%s\n", ncclGetErrorString(res),
              last && *last ? ": " : "", last ? last : "");
      failed = 1;
    } else {
      /* A child that already died must not kill us with SIGPIPE; its death is reported below. */
      struct sigaction ign, old;
      memset(&ign, 0, sizeof(ign));
      ign.sa_handler = SIG_IGN;
      sigaction(SIGPIPE, &ign, &old);
      for (int r = 0; r < nranks; r++) (void)writeFull(idFds[r], &id, sizeof(id));
      sigaction(SIGPIPE, &old, NULL);
    }
  }
  for (int r = 0; r < nranks; r++)
    if (idFds[r] >= 0) close(idFds[r]);

  /* 3. Wait for all, with a deadline; the first failure takes the rest down. */
  int nforked = 0;
  for (int r = 0; r < nranks; r++)
    if (pids[r] > 0) nforked++;
  int killed = 0;
  if (failed) {
    killAll(pids, done, nranks);
    killed = 1;
  }
  double deadline = timeoutSec > 0 ? chrLaunchNowSec() + timeoutSec : 0;
  int remaining = nforked;
  int pollMs = 1;
  while (remaining > 0) {
    int progressed = 0;
    for (int r = 0; r < nranks; r++) {
      if (pids[r] <= 0 || done[r]) continue;
      int status;
      pid_t w = waitpid(pids[r], &status, WNOHANG);
      if (w == 0) continue;
      if (w < 0 && errno == EINTR) continue;
      done[r] = 1;
      remaining--;
      progressed = 1;
      if (w < 0) {
        fprintf(stderr, "launch: waitpid for rank %d: %s\n", r, strerror(errno));
        failed = 1;
      } else if (reportStatus(r, pids[r], status, killed)) {
        failed = 1;
      }
    }
    if (remaining == 0) break;
    if (failed && !killed) {
      fprintf(stderr, "launch: killing the %d rank(s) still running\n", remaining);
      killAll(pids, done, nranks);
      killed = 1;
    }
    if (!killed && deadline > 0 && chrLaunchNowSec() > deadline) {
      fprintf(stderr, "launch: deadline of %d s passed; ranks still running:", timeoutSec);
      for (int r = 0; r < nranks; r++)
        if (pids[r] > 0 && !done[r]) fprintf(stderr, " %d", r);
      fprintf(stderr, " (killed)\n");
      killAll(pids, done, nranks);
      killed = 1;
      failed = 1;
    }
    /* Back off to at most 20 ms between polls: the ranks need the CPU, not us. */
    if (!progressed) {
      chrLaunchSleepMs(pollMs);
      if (pollMs < 20) pollMs *= 2;
    } else {
      pollMs = 1;
    }
  }
  free(pids);
  free(idFds);
  free(done);
  return failed ? 1 : 0;
}

/* 1: set and a valid non-negative int; 0: unset; -1: set but not a number. */
static int envInt(const char* name, int* out) {
  const char* s = getenv(name);
  if (s == NULL || *s == '\0') return 0;
  char* end;
  long v = strtol(s, &end, 10);
  if (*end != '\0' || v < 0 || v > 1 << 24) {
    fprintf(stderr, "launch: %s=%s is not a valid number\n", name, s);
    return -1;
  }
  *out = (int)v;
  return 1;
}

static int envPair(const char* rankVar, const char* sizeVar, int* rank, int* nranks) {
  int r = envInt(rankVar, rank), s = envInt(sizeVar, nranks);
  if (r == 0 && s == 0) return 0;
  if (r < 0 || s < 0) return -1;
  if (r == 0 || s == 0) {
    fprintf(stderr, "launch: %s and %s must be set together\n", rankVar, sizeVar);
    return -1;
  }
  if (*nranks < 1 || *rank >= *nranks) {
    fprintf(stderr, "launch: %s=%d is not in [0, %s=%d)\n", rankVar, *rank, sizeVar, *nranks);
    return -1;
  }
  return 1;
}

int chrLaunchEnvRank(int* rank, int* nranks) {
  int found = envPair("CHORUS_RANK", "CHORUS_NRANKS", rank, nranks);
  if (found != 0) return found;
  return envPair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", rank, nranks);
}

static int getId(ncclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  ncclResult_t res = ncclGetUniqueId(id);
  if (res != ncclSuccess) {
    const char* last = ncclGetLastError(NULL);
    fprintf(stderr, "launch: ncclGetUniqueId failed: %s%s%s\n", ncclGetErrorString(res),
            last && *last ? ": " : "", last ? last : "");
    return 1;
  }
  return 0;
}

int chrLaunchFromEnv(chrRankMain_t rankMain, void* arg) {
  int rank = 0, nranks = 0;
  int found = chrLaunchEnvRank(&rank, &nranks);
  if (found == 0) {
    fprintf(stderr, "launch: no rank in the environment (CHORUS_RANK/CHORUS_NRANKS or mpirun)\n");
    return 1;
  }
  if (found < 0) return 1;
  const char* commId = getenv("NCCL_COMM_ID");
  if (nranks > 1 && (commId == NULL || *commId == '\0')) {
    fprintf(stderr, "launch: rank %d of %d: NCCL_COMM_ID=host:port must be set (the address rank 0 listens on)\n",
            rank, nranks);
    return 1;
  }
  ncclUniqueId id;
  if (getId(&id)) return 1;
  return rankMain(rank, nranks, &id, arg);
}

int chrLaunchRanksOrEnv(int nranks, int nhosts, int timeoutSec, chrRankMain_t rankMain, void* arg) {
  int rank = 0, envRanks = 0;
  int found = chrLaunchEnvRank(&rank, &envRanks);
  if (found < 0) return 1;
  if (found == 0) return chrLaunchRanks(nranks, nhosts, timeoutSec, rankMain, arg);
  if (envRanks != nranks) {
    fprintf(stderr, "launch: the environment says %d ranks but the program was asked for %d\n", envRanks, nranks);
    return 1;
  }
  return exitCode(chrLaunchFromEnv(rankMain, arg));
}

int chrLaunchSingle(chrRankMain_t rankMain, void* arg) {
  ncclUniqueId id;
  if (getId(&id)) return 1;
  return rankMain(0, 1, &id, arg);
}

struct threadRank {
  pthread_t thread;
  int rank, nranks, rc, started;
  const ncclUniqueId* id;
  chrRankMain_t rankMain;
  void* arg;
};

static pthread_barrier_t localBarrier;
static int localThreads; /* > 1 while chrLaunchThreads runs */

void chrLaunchLocalBarrier(void) {
  if (localThreads > 1) pthread_barrier_wait(&localBarrier);
}

static void* threadRankMain(void* p) {
  struct threadRank* t = p;
  t->rc = t->rankMain(t->rank, t->nranks, t->id, t->arg);
  if (t->rc != 0) {
    fprintf(stderr, "launch: rank %d (thread) failed with status %d; ending the process\n", t->rank, t->rc);
    fflush(NULL);
    _exit(t->rc);
  }
  return NULL;
}

int chrLaunchThreads(int nranks, chrRankMain_t rankMain, void* arg) {
  ncclUniqueId id;
  if (nranks < 1 || getId(&id)) return 1;
  struct threadRank* t = calloc((size_t)nranks, sizeof(*t));
  if (t == NULL) {
    fprintf(stderr, "launch: out of memory for %d rank threads\n", nranks);
    return 1;
  }
  int rc = 0;
  pthread_barrier_init(&localBarrier, NULL, (unsigned)nranks);
  localThreads = nranks;
  for (int r = 0; r < nranks; r++) {
    t[r] = (struct threadRank){.rank = r, .nranks = nranks, .id = &id, .rankMain = rankMain, .arg = arg};
    int err = pthread_create(&t[r].thread, NULL, threadRankMain, &t[r]);
    if (err != 0) {
      /* The ranks already started wait for this one in init: nothing can end them cleanly. */
      fprintf(stderr, "launch: cannot start the thread of rank %d: %s\n", r, strerror(err));
      _exit(1);
    }
  }
  for (int r = 0; r < nranks; r++) {
    pthread_join(t[r].thread, NULL);
    if (rc == 0 && t[r].rc != 0) rc = t[r].rc;
  }
  localThreads = 0;
  pthread_barrier_destroy(&localBarrier);
  free(t);
  return rc;
}
