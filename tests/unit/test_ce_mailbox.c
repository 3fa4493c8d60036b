/*
 * test_ce_mailbox.c: the copy-engine rendezvous (core/cuda/ce_mailbox.h) between two processes, with
 * each process's CUDA streams played by threads that run queued operations in order (wait for a
 * word, write a word, copy, record and wait for a point in another stream), as chorus-ce-probe
 * queues them on GPUs. Both ranks send to each other and receive from each other, ITERS times, with
 * random delays on the host and in the streams so that either end comes first. Each transfer's data
 * is made on the sender's stream just before and checked on the receiver's stream just after, so a
 * copy that ran before its data was there, or over data not yet read, is a failure; so is a hang
 * (the test gives up after a time limit) or a slot used twice at once.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda/ce_mailbox.h"

#define ITERS 3000
#define WORDS 64
#define QUEUE 4096
#define LIMIT_SEC 60

struct Shared {
  struct chrCeMailbox box[2];  /* box[d]: rank d sends, the other receives */
  uint64_t src[2][WORDS];      /* rank r's send buffer */
  uint64_t dst[2][WORDS];      /* rank r's receive buffer */
  int failures;
  int stop;
};
static struct Shared* sh;
static int me;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
static double deadline;

/* The first failure of the run is reported; the waits it cuts short are not failures of their own. */
static void fail(const char* what, uint64_t k) {
  if (__atomic_exchange_n(&sh->stop, 1, __ATOMIC_ACQ_REL)) return;
  fprintf(stderr, "rank %d: transfer %llu: %s\n", me, (unsigned long long)k, what);
  __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
}

/* A stream: operations run in order by one thread. */
enum { OP_WAIT, OP_WRITE, OP_COPY, OP_FILL, OP_CHECK, OP_POINT, OP_WAITPOINT };
struct Op {
  int kind;
  uint64_t* word;           /* WAIT / WRITE */
  uint64_t value;
  uint64_t* to;             /* COPY / FILL / CHECK */
  const uint64_t* from;
  volatile uint64_t* point; /* POINT: *point = value; WAITPOINT: until *point >= value */
};
struct Stream {
  struct Op q[QUEUE];
  unsigned head, tail; /* under lock */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  pthread_t thread;
  int quit;
};

static uint64_t pattern(int rank, uint64_t k, int i) { return (uint64_t)rank << 56 ^ k << 20 ^ (uint64_t)i * 0x9e37u; }

static void jitter(unsigned* seed) {
  const int r = rand_r(seed) % 8;
  if (r == 0) usleep(rand_r(seed) % 200);
  else if (r == 1) sched_yield();
}

static int spinUntil(uint64_t* word, uint64_t value) {
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < value) {
    if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) || now() > deadline) return 0;
    sched_yield();
  }
  return 1;
}

static void* streamMain(void* arg) {
  struct Stream* s = (struct Stream*)arg;
  unsigned seed = (unsigned)(me * 7919 + (uintptr_t)s % 1000);
  for (;;) {
    pthread_mutex_lock(&s->lock);
    while (s->head == s->tail && !s->quit) pthread_cond_wait(&s->cv, &s->lock);
    if (s->head == s->tail && s->quit) {
      pthread_mutex_unlock(&s->lock);
      return NULL;
    }
    struct Op op = s->q[s->head % QUEUE];
    pthread_mutex_unlock(&s->lock);
    jitter(&seed);
    switch (op.kind) {
      case OP_WAIT:
        if (!spinUntil(op.word, op.value)) fail("a stream's wait never ended", op.value);
        break;
      case OP_WRITE: __atomic_store_n(op.word, op.value, __ATOMIC_RELEASE); break;
      case OP_COPY:
        for (int i = 0; i < WORDS; i++) __atomic_store_n(&op.to[i], __atomic_load_n(&op.from[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        break;
      case OP_FILL:
        for (int i = 0; i < WORDS; i++) __atomic_store_n(&op.to[i], pattern(me, op.value, i), __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        break;
      case OP_CHECK:
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        for (int i = 0; i < WORDS; i++)
          if (__atomic_load_n(&op.to[i], __ATOMIC_RELAXED) != pattern(1 - me, op.value, i)) {
            fail("received data is not the sender's", op.value);
            break;
          }
        break;
      case OP_POINT: __atomic_store_n(op.point, op.value, __ATOMIC_RELEASE); break;
      case OP_WAITPOINT:
        if (!spinUntil((uint64_t*)op.point, op.value)) fail("a stream's wait for the other stream never ended", op.value);
        break;
    }
    pthread_mutex_lock(&s->lock);
    s->head++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->lock);
  }
}

static void enqueue(struct Stream* s, struct Op op) {
  pthread_mutex_lock(&s->lock);
  while (s->tail - s->head >= QUEUE) pthread_cond_wait(&s->cv, &s->lock);
  s->q[s->tail++ % QUEUE] = op;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
}

static struct Stream mainStream, copyStream;
static volatile uint64_t ownPoint, copiedPoint; /* the "events" between this rank's two streams */
static uint64_t points;

/* A group of transfers (one launch: here a send and a receive) is queued in two passes, as
 * chorus-ce-probe does: first every transfer's ready word and one point of this rank's stream,
 * before any wait; then the posts, whose waits come after all of those. A wait queued before another
 * transfer's ready word or before the point a copy waits for makes a cycle when both ranks come
 * first on one transfer and second on the other: each stream then waits for the other rank's copy,
 * which waits for that rank's stream (the first version of the design did that, and hung here). */
static int prepareOne(int dir, int role, uint64_t k) {
  struct chrCeMailbox* mb = &sh->box[dir];
  while (!chrCeSlotFree(mb, k)) {
    if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) || now() > deadline) return 0;
    sched_yield();
  }
  enqueue(&mainStream, (struct Op){.kind = OP_WRITE, .word = &mb->ready[role][0], .value = k});
  return 1;
}

static void postOne(int dir, int role, uint64_t k, uint64_t groupPoint, unsigned* seed) {
  struct chrCeMailbox* mb = &sh->box[dir];
  jitter(seed);
  struct chrCePost mine, other;
  memset(&mine, 0, sizeof(mine));
  mine.bytes[0] = (unsigned char)(me + 1);
  mine.bytes[1] = (unsigned char)role;
  memcpy(&mine.bytes[8], &k, sizeof(k));
  if (chrCePost(mb, role, k, &mine, &other)) {
    enqueue(&mainStream, (struct Op){.kind = OP_WAIT, .word = &mb->done[role][0], .value = k});
    return;
  }
  uint64_t otherK;
  memcpy(&otherK, &other.bytes[8], sizeof(otherK));
  if (other.bytes[0] != (unsigned char)(2 - me) || other.bytes[1] != (unsigned char)(1 - role) || otherK != k)
    fail("the first end's post is not the one for this transfer", k);
  enqueue(&copyStream, (struct Op){.kind = OP_WAIT, .word = &mb->ready[1 - role][0], .value = k});
  enqueue(&copyStream, (struct Op){.kind = OP_WAITPOINT, .point = &ownPoint, .value = groupPoint});
  const int sender = dir, receiver = 1 - dir;
  enqueue(&copyStream, (struct Op){.kind = OP_COPY, .to = sh->dst[receiver], .from = sh->src[sender]});
  enqueue(&copyStream, (struct Op){.kind = OP_WRITE, .word = &mb->done[1 - role][0], .value = k});
  enqueue(&copyStream, (struct Op){.kind = OP_POINT, .point = &copiedPoint, .value = ++points});
  enqueue(&mainStream, (struct Op){.kind = OP_WAITPOINT, .point = &copiedPoint, .value = points});
  chrCeRelease(mb, k);
}

static int runRank(int rank) {
  me = rank;
  struct Stream* streams[2] = {&mainStream, &copyStream};
  for (int i = 0; i < 2; i++) {
    pthread_mutex_init(&streams[i]->lock, NULL);
    pthread_cond_init(&streams[i]->cv, NULL);
    if (pthread_create(&streams[i]->thread, NULL, streamMain, streams[i]) != 0) return 1;
  }
  unsigned seed = 12345u + (unsigned)rank * 777u;
  for (uint64_t k = 1; k <= ITERS && !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); k++) {
    /* the user's work: data for transfer k, made on the stream before the send */
    enqueue(&mainStream, (struct Op){.kind = OP_FILL, .to = sh->src[rank], .value = k});
    const int sendFirst = rand_r(&seed) % 2;
    const int dirs[2] = {sendFirst ? rank : 1 - rank, sendFirst ? 1 - rank : rank};
    const int roles[2] = {sendFirst ? CHR_CE_SEND : CHR_CE_RECV, sendFirst ? CHR_CE_RECV : CHR_CE_SEND};
    if (!prepareOne(dirs[0], roles[0], k) || !prepareOne(dirs[1], roles[1], k)) break;
    enqueue(&mainStream, (struct Op){.kind = OP_POINT, .point = &ownPoint, .value = k});
    for (int i = 0; i < 2; i++) postOne(dirs[i], roles[i], k, k, &seed);
    /* the user's work: reads what transfer k brought */
    enqueue(&mainStream, (struct Op){.kind = OP_CHECK, .to = sh->dst[rank], .value = k});
  }
  for (int i = 0; i < 2; i++) {
    pthread_mutex_lock(&streams[i]->lock);
    streams[i]->quit = 1;
    pthread_cond_broadcast(&streams[i]->cv);
    pthread_mutex_unlock(&streams[i]->lock);
  }
  for (int i = 0; i < 2; i++) pthread_join(streams[i]->thread, NULL);
  if (now() > deadline) fail("time limit: a transfer hung", 0);
  return __atomic_load_n(&sh->failures, __ATOMIC_ACQUIRE) ? 1 : 0;
}

int main(void) {
  sh = (struct Shared*)mmap(NULL, sizeof(struct Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  chrCeMailboxInit(&sh->box[0]);
  chrCeMailboxInit(&sh->box[1]);
  deadline = now() + LIMIT_SEC;
  pid_t kids[2];
  for (int r = 0; r < 2; r++) {
    kids[r] = fork();
    if (kids[r] < 0) return 1;
    if (kids[r] == 0) _exit(runRank(r));
  }
  int rc = 0;
  for (int r = 0; r < 2; r++) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  printf("ce mailbox: %d transfers each way between 2 processes, %d failures\n", ITERS, sh->failures);
  return rc || sh->failures ? 1 : 0;
}
