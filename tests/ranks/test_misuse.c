/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_misuse.c: a program's mistakes with a communicator are errors with a message, never a crash,
 * a hang or a wrong result. One rank per process.
 *
 *   test_misuse register N H    ncclCommRegister/Deregister: handles given back in any order; a handle
 *                               deregistered twice, a pointer never handed out (small, on the stack,
 *                               shaped like a handle), NULL, and another communicator's handle are
 *                               ncclInvalidArgument; handles left at destroy are freed with the comm
 *   test_misuse twothreads N H  two threads of rank 0 call ncclAllReduce on one comm at once: one runs,
 *                               the other gets ncclInvalidUsage naming the cause; the others' ranks
 *                               join only after the refusal, and the result and the comm stay right
 *   test_misuse rootgone        a process makes an id with ncclGetUniqueId, hands it on and exits: the
 *                               rank that inits with it fails at once, naming the cause (not a wait)
 *   test_misuse rootgave MODE   the process that made the id gives its rank 0 up (MODE abort: a
 *                               non-blocking init aborted at once; badconfig: an init that fails its
 *                               config check) and stays alive; then rank 1's init fails within
 *                               seconds, naming the root, instead of waiting for rank 0 for ever
 *   test_misuse idreuse N       N ranks init, all-reduce and destroy a comm, then init again with the
 *                               same id, whose root ended with the first comm: each fails at once
 *   test_misuse sharedgpu N H MODE [BUS]   ranks on one GPU of one host (the stand-in CUDA driver's GPU
 *                               0 unless MODE is distinct, or the real one), BUS: the GPU to be named:
 *                               MODE refused: init fails with ncclInvalidUsage naming two ranks, the GPU
 *                               and CHORUS_SHARED_GPU; allowed (CHORUS_SHARED_GPU=1 set) and distinct
 *                               (each rank on a GPU of its own): init and an all-reduce succeed
 *   test_misuse initall DEVS    ncclCommInitAll over the devices listed ("0,0": refused; "0,1": runs)
 *   test_misuse shmsmall N      N ranks of one host: a small all-to-all and a 4-byte all-reduce; each
 *                               rank's shared memory (RssShmem) stays under 2 MiB + 128 KiB per peer:
 *                               links hold what they carried, not 8 MiB each
 *   test_misuse shmfull N       (with /dev/shm a 4 MiB tmpfs) an all-reduce of 32 MiB needs more
 *                               shared memory than there is: every rank gets an error naming the cause
 *   test_misuse secret MODE     (NCCL_COMM_ID, CHORUS_COMM_SECRET set) a stranger that knows the address
 *                               but not the secret (MODE none: unset; wrong: another one) tries to take
 *                               rank 1 of a 2-rank job first: refused, naming the secret; the job runs
 *   test_misuse mismatch N H MODE  (CHORUS_CHECK_CALLS=1) the last rank makes another call than the
 *                               others: MODE type (float vs int32, same bytes), op (sum vs max), root,
 *                               coll (all-reduce vs broadcast), extra (one call more), alltoall (vs
 *                               all-gather of the same bytes); every rank fails naming its call and the
 *                               other's. MODE same: identical calls run and are right
 * H: hosts acted out (1: shm; N: every rank its own host, net).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h"

static int registerRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL, other = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(ncclCommSplit(comm, 0, rank, &other, NULL) == ncclSuccess);
  static char bufs[4][4096];
  void* h[4];
  for (int i = 0; i < 4; i++) EXPECT(ncclCommRegister(comm, bufs[i], sizeof(bufs[i]), &h[i]) == ncclSuccess);
  EXPECT(ncclCommDeregister(comm, h[2]) == ncclSuccess);
  EXPECT(ncclCommDeregister(comm, h[0]) == ncclSuccess);
  /* Twice: the handle is gone. */
  EXPECT(ncclCommDeregister(comm, h[2]) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(comm), "not a registration of this communicator") != NULL);
  /* Never handed out: a small number, a stack address holding what a handle might hold, NULL. */
  EXPECT(ncclCommDeregister(comm, (void*)16) == ncclInvalidArgument);
  uint64_t fake[8];
  memcpy(fake, h[1], sizeof(void*));
  for (int i = 1; i < 8; i++) fake[i] = 0x52454721u;
  EXPECT(ncclCommDeregister(comm, fake) == ncclInvalidArgument);
  EXPECT(ncclCommDeregister(comm, NULL) == ncclInvalidArgument);
  /* Another communicator's handle, then on its own communicator. */
  void* ho = NULL;
  EXPECT(ncclCommRegister(other, bufs[0], sizeof(bufs[0]), &ho) == ncclSuccess);
  EXPECT(ncclCommDeregister(comm, ho) == ncclInvalidArgument);
  EXPECT(ncclCommDeregister(other, ho) == ncclSuccess);
  /* The comm works as before; h[1] and h[3] are left for the destroy to free. */
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1000) == 0);
  EXPECT(ncclCommDestroy(other) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  printf("rank %d: bad deregistrations refused, the comm intact\n", rank);
  return 0;
}

/* twothreads: pipes made before the ranks are forked; rank 0 writes one byte per other rank once one
 * of its two calls was refused. */
static int joinPipe[2];

enum { COUNT = 1 << 16 };

struct caller {
  ncclComm_t comm;
  int rank, nranks;
  int32_t* buf;
  ncclResult_t res;
  char error[512];
  int done;
  pthread_mutex_t* lock;
  pthread_cond_t* cond;
};

static void* callAllReduce(void* p) {
  struct caller* c = p;
  rankFill(c->buf, COUNT, 2, c->rank);
  c->res = ncclAllReduce(c->buf, c->buf, COUNT, ncclInt32, ncclSum, c->comm, NULL);
  snprintf(c->error, sizeof(c->error), "%s", c->res == ncclSuccess ? "" : ncclGetLastError(NULL));
  pthread_mutex_lock(c->lock);
  c->done = 1;
  pthread_cond_broadcast(c->cond);
  pthread_mutex_unlock(c->lock);
  return NULL;
}

static int twoThreadsRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1000) == 0); /* links up */
  if (rank != 0) {
    char c;
    EXPECT(chrLaunchReadFull(joinPipe[0], &c, 1) == 0);
    EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 2, COUNT) == 0);
  } else {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    struct caller c[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
      memset(&c[i], 0, sizeof(c[i]));
      c[i].comm = comm, c[i].rank = rank, c[i].nranks = nranks, c[i].lock = &lock, c[i].cond = &cond;
      c[i].buf = malloc(COUNT * sizeof(int32_t));
      EXPECT(c[i].buf != NULL);
    }
    for (int i = 0; i < 2; i++) EXPECT(pthread_create(&th[i], NULL, callAllReduce, &c[i]) == 0);
    /* The call that won cannot finish before the other ranks join, so the first to return is the
     * refused one. */
    pthread_mutex_lock(&lock);
    while (!c[0].done && !c[1].done) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    int refused = c[0].done ? 0 : 1;
    EXPECT(c[refused].res == ncclInvalidUsage);
    EXPECT(strstr(c[refused].error, "another thread is running a call on this communicator") != NULL);
    printf("rank 0: thread %d refused: %s\n", refused, c[refused].error);
    for (int r = 1; r < nranks; r++) EXPECT(write(joinPipe[1], "j", 1) == 1);
    for (int i = 0; i < 2; i++) EXPECT(pthread_join(th[i], NULL) == 0);
    EXPECT(c[1 - refused].res == ncclSuccess);
    EXPECT(rankCheckSum(c[1 - refused].buf, COUNT, 2, NULL, nranks) == 0);
    for (int i = 0; i < 2; i++) free(c[i].buf);
  }
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 3, 5000) == 0); /* still usable */
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int rootGone(void) {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t maker = fork();
  if (maker < 0) return 1;
  if (maker == 0) { /* makes the id, hands it on, exits */
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess || write(fds[1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
    _exit(0);
  }
  ncclUniqueId id;
  EXPECT(chrLaunchReadFull(fds[0], &id, sizeof(id)) == 0);
  int status = 0;
  EXPECT(waitpid(maker, &status, 0) == maker && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ncclComm_t comm = NULL;
  double t0 = chrLaunchNowSec();
  ncclResult_t res = ncclCommInitRank(&comm, 2, id, 1);
  EXPECT(res == ncclRemoteError);
  EXPECT(strstr(ncclGetLastError(NULL), "the root of this unique id") != NULL &&
         strstr(ncclGetLastError(NULL), "is gone") != NULL);
  printf("init failed after %.2f s: %s\n", chrLaunchNowSec() - t0, ncclGetLastError(NULL));
  return 0;
}

static int rootGave(const char* mode) {
  int idPipe[2], donePipe[2];
  if (pipe(idPipe) != 0 || pipe(donePipe) != 0) return 1;
  pid_t maker = fork();
  if (maker < 0) return 1;
  if (maker == 0) { /* makes the id, gives its rank 0 up, stays until rank 1 has its answer */
    if (strcmp(mode, "badconfig") == 0) setenv("NCCL_BUFFSIZE", "1", 1); /* below the minimum: init fails */
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess || write(idPipe[1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
    ncclComm_t comm = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = strcmp(mode, "abort") == 0 ? 0 : 1;
    ncclResult_t res = ncclCommInitRankConfig(&comm, 2, id, 0, &config);
    if (strcmp(mode, "abort") == 0 && comm != NULL) ncclCommAbort(comm);
    else if (res == ncclSuccess) _exit(2); /* the bad config was taken */
    /* Rank 1 starts only now: had it joined first, the rendezvous could complete before the abort. */
    if (write(idPipe[1], "g", 1) != 1) _exit(1);
    char c;
    chrLaunchReadFull(donePipe[0], &c, 1);
    _exit(0);
  }
  ncclUniqueId id;
  char gaveUp;
  int bad = chrLaunchReadFull(idPipe[0], &id, sizeof(id)) != 0 || chrLaunchReadFull(idPipe[0], &gaveUp, 1) != 0;
  ncclComm_t comm = NULL;
  double t0 = chrLaunchNowSec();
  ncclResult_t res = bad ? ncclSystemError : ncclCommInitRank(&comm, 2, id, 1);
  const char* err = ncclGetLastError(NULL);
  printf("rank 1: init returned %s after %.2f s: %s\n", ncclGetErrorString(res), chrLaunchNowSec() - t0, err);
  /* The root tells rank 1 why, or (when rank 1 came after it ended) is gone: either names the root. */
  bad |= res == ncclSuccess || (strstr(err, "rank 0 gave up its init") == NULL && strstr(err, "the root") == NULL);
  if (bad) kill(maker, SIGKILL); /* it would wait for us */
  else bad = write(donePipe[1], "d", 1) != 1;
  int status = 0;
  bad |= waitpid(maker, &status, 0) != maker || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return bad;
}

static int idReuseRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1000) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclRemoteError);
  EXPECT(strstr(ncclGetLastError(NULL), "used up by an earlier communicator") != NULL);
  printf("rank %d: the second init with the id failed: %s\n", rank, ncclGetLastError(NULL));
  return 0;
}

static const char* sharedGpuBus; /* the GPU the refusal must name, when known (the stand-in driver's) */

static int sharedGpuRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const char* mode = arg;
  char gpu[16];
  snprintf(gpu, sizeof(gpu), "%d", strcmp(mode, "distinct") == 0 ? rank : 0);
  setenv("CHORUS_TEST_FAKE_GPU", gpu, 1); /* read by the stand-in driver */
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  if (strcmp(mode, "refused") == 0) {
    EXPECT(res == ncclInvalidUsage);
    const char* err = ncclGetLastError(NULL);
    EXPECT(strstr(err, "are both on GPU ") != NULL && strstr(err, "CHORUS_SHARED_GPU=1") != NULL);
    EXPECT(sharedGpuBus == NULL || strstr(err, sharedGpuBus) != NULL);
    printf("rank %d: init refused: %s\n", rank, err);
    if (comm != NULL) EXPECT(ncclCommDestroy(comm) == ncclSuccess);
    return 0;
  }
  EXPECT(res == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1000) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int initAllDevs(const char* list) {
  int devs[8], n = 0;
  for (const char* p = list; *p && n < 8; p += strspn(p, ","), n++) {
    devs[n] = atoi(p);
    p += strcspn(p, ",");
  }
  ncclComm_t comms[8] = {0};
  ncclResult_t res = ncclCommInitAll(comms, n, devs);
  int shared = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) shared |= devs[i] == devs[j];
  const char* allow = getenv("CHORUS_SHARED_GPU");
  if (shared && (allow == NULL || strcmp(allow, "1") != 0)) {
    EXPECT(res == ncclInvalidUsage);
    EXPECT(strstr(ncclGetLastError(NULL), "are both on GPU") != NULL);
    printf("ncclCommInitAll(%s) refused: %s\n", list, ncclGetLastError(NULL));
  } else {
    EXPECT(res == ncclSuccess);
  }
  for (int i = 0; i < n; i++)
    if (comms[i] != NULL) EXPECT(ncclCommDestroy(comms[i]) == ncclSuccess);
  return 0;
}

/* kB of shared memory this process has mapped and touched (its own segments and its peers'). */
static long rssShmemKb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "RssShmem: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

static int shmSmallRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  enum { PER_PEER = 64 };
  int32_t* send = malloc(sizeof(int32_t) * PER_PEER * nranks);
  int32_t* recv = malloc(sizeof(int32_t) * PER_PEER * nranks);
  EXPECT(send && recv);
  for (int p = 0; p < nranks; p++)
    for (int i = 0; i < PER_PEER; i++) send[p * PER_PEER + i] = rank * 100000 + p * 1000 + i;
  EXPECT(ncclAlltoAll(send, recv, PER_PEER, ncclInt32, comm, NULL) == ncclSuccess);
  for (int p = 0; p < nranks; p++)
    for (int i = 0; i < PER_PEER; i++) EXPECT(recv[p * PER_PEER + i] == p * 100000 + rank * 1000 + i);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1) == 0);
  long kb = rssShmemKb(), limit = 2048 + 128L * (nranks - 1);
  printf("rank %d: %ld kB of shared memory after a small all-to-all on %d ranks (limit %ld kB)\n", rank, kb, nranks,
         limit);
  EXPECT(kb >= 0 && kb <= limit);
  free(send);
  free(recv);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int shmFullRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 1000) == 0); /* small: fits */
  size_t count = (size_t)8 << 20; /* 32 MiB: full 512 KiB steps on every slot */
  int32_t* buf = calloc(count, sizeof(int32_t));
  EXPECT(buf != NULL);
  ncclResult_t res = ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, NULL);
  const char* err = ncclGetLastError(comm);
  printf("rank %d: the large all-reduce returned %s: %s\n", rank, ncclGetErrorString(res), err);
  EXPECT(res != ncclSuccess);
  /* A rank that ran out names the cause; the others see it fail. */
  EXPECT(strstr(err, "/dev/shm is full or a memory limit is reached") != NULL ||
         strstr(err, "the peer closed its end") != NULL || strstr(err, "exited") != NULL);
  free(buf);
  EXPECT(ncclCommAbort(comm) == ncclSuccess);
  return 0;
}

/* secret: process 2 is the stranger; rank 1 joins once it has been refused. */
static int strangerDone[2];

static int secretRank(int idx, int nprocs, const ncclUniqueId* id, void* arg) {
  const char* mode = arg;
  ncclComm_t comm = NULL;
  if (idx == 2) {
    if (strcmp(mode, "none") == 0) unsetenv("CHORUS_COMM_SECRET");
    else setenv("CHORUS_COMM_SECRET", "not-the-job-secret", 1);
    ncclResult_t res = ncclCommInitRank(&comm, 2, *id, 1);
    printf("stranger: init returned %s: %s\n", ncclGetErrorString(res), ncclGetLastError(NULL));
    EXPECT(res == ncclInvalidUsage);
    EXPECT(strstr(ncclGetLastError(NULL), "wrong secret") != NULL);
    EXPECT(write(strangerDone[1], "s", 1) == 1);
    return 0;
  }
  if (idx == 1) {
    char c;
    EXPECT(chrLaunchReadFull(strangerDone[0], &c, 1) == 0);
  }
  EXPECT(ncclCommInitRank(&comm, 2, *id, idx) == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, idx, NULL, 2, 1, 1000) == 0);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

static int secretJob(const char* mode) {
  char commId[64];
  int port = chrLaunchFreeLoopbackPort();
  if (port < 0 || pipe(strangerDone) != 0) return 1;
  snprintf(commId, sizeof(commId), "127.0.0.1:%d", port);
  setenv("NCCL_COMM_ID", commId, 1); /* before the processes fork or the library reads its config */
  setenv("CHORUS_COMM_SECRET", "job-secret-7d1f", 1);
  return chrLaunchRanks(3, 1, 60, secretRank, (void*)mode);
}

static int mismatchRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const char* mode = arg;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRank(&comm, nranks, *id, rank) == ncclSuccess);
  EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 1, 100) == 0); /* matched calls pass the check */
  const int odd = rank == nranks - 1;
  enum { N = 1024 };
  float* a = calloc((size_t)N * nranks, sizeof(float));
  float* b = calloc((size_t)N * nranks, sizeof(float));
  EXPECT(a && b);
  ncclResult_t res;
  if (strcmp(mode, "type") == 0)
    res = ncclAllReduce(a, b, N, odd ? ncclInt32 : ncclFloat32, ncclSum, comm, NULL);
  else if (strcmp(mode, "op") == 0)
    res = ncclAllReduce(a, b, N, ncclFloat32, odd ? ncclMax : ncclSum, comm, NULL);
  else if (strcmp(mode, "root") == 0)
    res = ncclBroadcast(a, b, N, ncclFloat32, odd ? 1 : 0, comm, NULL);
  else if (strcmp(mode, "coll") == 0)
    res = odd ? ncclBroadcast(a, b, N, ncclFloat32, 0, comm, NULL) : ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, NULL);
  else if (strcmp(mode, "alltoall") == 0)
    res = odd ? ncclAllGather(a, b, N, ncclFloat32, comm, NULL) : ncclAlltoAll(a, b, N, ncclFloat32, comm, NULL);
  else if (strcmp(mode, "extra") == 0) {
    EXPECT(ncclGroupStart() == ncclSuccess);
    EXPECT(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess);
    if (odd) EXPECT(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess);
    res = ncclGroupEnd();
  } else {
    res = ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, NULL);
  }
  free(a);
  free(b);
  if (strcmp(mode, "same") == 0) {
    EXPECT(res == ncclSuccess);
    EXPECT(rankAllReduceChecked(comm, rank, NULL, nranks, 2, 1000) == 0);
    EXPECT(ncclCommDestroy(comm) == ncclSuccess);
    return 0;
  }
  const char* err = ncclGetLastError(comm);
  printf("rank %d: %s: %s\n", rank, ncclGetErrorString(res), err);
  EXPECT(res == ncclInvalidUsage);
  EXPECT(strstr(err, "CHORUS_CHECK_CALLS: the ranks of comm") != NULL && strstr(err, "disagree") != NULL);
  /* Both calls named (or, for one call more, both counts). */
  EXPECT(strstr(err, strcmp(mode, "extra") == 0 ? "collective calls in this group, rank" : "call #1 is ") != NULL);
  EXPECT(strstr(err, strcmp(mode, "extra") == 0 ? " makes " : ", but rank ") != NULL);
  EXPECT(ncclCommAbort(comm) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "rootgone") == 0) return rootGone();
  if (argc >= 3 && strcmp(argv[1], "rootgave") == 0) return rootGave(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "initall") == 0) return initAllDevs(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "secret") == 0) return secretJob(argv[2]);
  if (argc < 3) {
    fprintf(stderr, "usage: test_misuse register|twothreads|idreuse|shmsmall|shmfull N [H] | sharedgpu N H MODE [BUS] | mismatch N H MODE | rootgone | rootgave abort|badconfig | initall DEVS | secret none|wrong\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int hosts = argc > 3 ? atoi(argv[3]) : 1;
  if (strcmp(argv[1], "register") == 0) return chrLaunchRanks(n, hosts, 60, registerRank, NULL);
  if (strcmp(argv[1], "twothreads") == 0) {
    if (pipe(joinPipe) != 0) return 1;
    return chrLaunchRanks(n, hosts, 60, twoThreadsRank, NULL);
  }
  if (strcmp(argv[1], "idreuse") == 0) return chrLaunchRanks(n, hosts, 60, idReuseRank, NULL);
  if (strcmp(argv[1], "mismatch") == 0 && argc > 4) return chrLaunchRanks(n, hosts, 60, mismatchRank, argv[4]);
  if (strcmp(argv[1], "shmsmall") == 0) return chrLaunchRanks(n, 1, 120, shmSmallRank, NULL);
  if (strcmp(argv[1], "shmfull") == 0) return chrLaunchRanks(n, 1, 120, shmFullRank, NULL);
  if (strcmp(argv[1], "sharedgpu") == 0 && argc > 4) {
    sharedGpuBus = argc > 5 ? argv[5] : NULL;
    return chrLaunchRanks(n, hosts, 60, sharedGpuRank, argv[4]);
  }
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
