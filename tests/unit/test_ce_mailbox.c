/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ce_mailbox.c: the copy-engine rendezvous (hostdev/ce_mailbox.h) between processes, with each
 * process's CUDA streams played by threads that run queued operations in order (wait for a word,
 * write a word, copy, record a point of a stream and wait for it, and kernels), queued as the device
 * library (device/copy_engine/ce_sends.cu) queues them on GPUs.
 *
 * The programs are the ones NCCL runs without deadlock: a sequence of steps, each a random set of
 * transfers between ranks (a send at one end, the matching receive at the other), and each rank
 * closes its group after a random number of steps (so one rank may have a step's transfers in one
 * group and the next step's in another while its peer has both in one: NCCL completes such a
 * program), its calls within a group in any order. 2 and 3 ranks (processes), random delays on the host and in the streams, so that
 * either end of a transfer comes first. Each transfer's data is made on the sender's stream before
 * its group and checked on the receiver's after it, so a copy that ran before its data was there,
 * or over data not yet read, fails; so does a hang (a time limit) or a post read by the wrong
 * transfer.
 *
 * Found so far: a stream's wait queued before another transfer's signal or before the point its
 * copy waits for (each rank first on one transfer and second on the other: a cycle), and one copy
 * stream per rank (a rank second on two transfers of one group queues the copy whose signal comes
 * later first, and the other copy, which the signal waits for, behind it): so every signal and the
 * group's point are queued before any wait, and each peer and direction has a copy stream of its own.
 *
 * Both modes of the header run: the second end to post copies (as between threads of one process),
 * and the sender copies (between processes). In the sender mode a group's copies and waits are one
 * kernel on the user stream (the device library's launch kernel): it copies each send once its
 * receiver's buffer is published (by the sender's agent thread, which a receiver posting second
 * wakes through a futex, or by the sender's call) and waits for the rest; the group's first send
 * whose receiver posted first instead goes on the copy stream, queued after that kernel. Kernels
 * model the hardware: started, a kernel leaves its queue free, and the next operation of its own
 * stream holds the queue until it ends; a stream memory wait holds it until the word is reached.
 * The sender mode also runs with all of a rank's streams on one queue (CUDA_DEVICE_MAX_CONNECTIONS=1),
 * and with hosts that now and then wait for their stream to drain. Designs tried on the way and
 * caught here: the copies of a group one after another on the user stream (a copy waiting for one
 * receiver before a transfer that receiver waits for: hangs, 3 ranks); the copy stream's copy
 * queued before the group's kernel (one queue: hangs, and data read before it was there).
 *
 * Pull mode (the sender mode, plus: a receiver that finds its sender's post already there copies on
 * its own copy stream, ce_mailbox.h; device/copy_engine/ce_sends.cu, CHORUS_GPU_CE_PULL). Caught here: the sender's kernel
 * reading the slot's publish after the agent had published the slot's next transfer (a pulled
 * transfer's done word frees the slot before the sender's kernel has looked), so it copied this
 * transfer's data into the next one's buffer; the counts (every transfer copied exactly once) fail
 * without the kernel's seqlock read of the publish. With a first sender's bounded wait for its
 * receiver (CHORUS_GPU_CE_WAIT_US) beside pulls: a sender that found its receiver's post during the
 * wait pushed even when that post was a pull's (both copied; the GPUs' run k8 failed so); it must
 * stay first then.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostdev/ce_mailbox.h"

#define MAXR 3
#define STEPS 1500
#define RING 32    /* buffers per ordered pair: transfer k uses k % RING (more than a group can hold, and
                      not CHR_CE_SLOTS, so that a copy made for a slot's other transfer lands in a buffer of its own) */
#define WORDS 32
#define QUEUE 8192
#define LIMIT_SEC 120 /* a world that has not finished by then hung (times CHORUS_TEST_TIME_SCALE) */

struct Shared {
  struct chrCeMailbox box[MAXR][MAXR]; /* box[s][d]: rank s sends to rank d */
  uint64_t src[MAXR][MAXR][RING][WORDS];
  uint64_t dst[MAXR][MAXR][RING][WORDS];
  int failures;
  int stop;
  long ends;   /* transfer ends queued, both ranks together */
  long seconds; /* ... of them second to arrive (their copies) */
  long pushes;  /* ... of those, the sending end */
  long byKernel; /* sender mode: transfers the group's kernel copied (on the sender's user stream) */
  long byAgent; /* ... of them, published by the agent thread (the rest, by the sender's call) */
  long pulls;   /* pull mode: transfers the receiver copied on its copy stream (it came second to a sender first) */
  long pulledJobs; /* ... the sender's kernel jobs that found them pulled (so copied nothing) */
  uint32_t bell[MAXR]; /* sender mode: rank r's agent sleeps on bell[r] (a futex) */
};
static struct Shared* sh;
static int me, nRanks;
static int senderIssues; /* the mode of this run: 1 = the sender copies every transfer */
static int oneQueue;     /* 1: all of a rank's streams are one queue (its user stream's thread) */
static int receiverPulls; /* sender mode: a receiver second to a sender first copies on its own copy stream */
static int senderWaits;   /* sender mode: a sender first waits a little for its receiver's post (CHORUS_GPU_CE_WAIT_US) */
static double deadline;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* The first failure of a run is reported; the waits it cuts short are not failures of their own. */
static void fail(const char* what, int peer, uint64_t k) {
  if (__atomic_exchange_n(&sh->stop, 1, __ATOMIC_ACQ_REL)) return;
  fprintf(stderr, "%d ranks, rank %d, peer %d, transfer %llu: %s\n", nRanks, me, peer, (unsigned long long)k, what);
  __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
}

static int stopped(void) { return __atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) || now() > deadline; }

/* A stream: operations run in order by one thread. */
/* WAIT holds its queue until the word is reached (a stream memory wait); POLL and GROUP are kernels:
 * started, they leave the queue free, and only the next operation of their own stream waits for
 * them (which holds the queue: a hardware queue runs in order). */
enum { OP_WAIT, OP_WRITE, OP_COPY, OP_FILL, OP_CHECK, OP_GROUP, OP_POLL };
struct Group; /* sender mode: one kernel for a group's first-send copies and its waits */
struct Op {
  int kind, peer;
  uint64_t* word; /* WAIT (until *word >= value) / WRITE (*word = value) */
  uint64_t value;
  uint64_t* to;   /* COPY / FILL / CHECK */
  const uint64_t* from;
  uint64_t k;     /* FILL / CHECK: the transfer whose data it is */
  struct Group* group; /* GROUP (freed when it has run) */
  struct Stream* owner; /* the stream it was queued on (the queue it runs on may be shared) */
};
struct Stream {
  struct Op q[QUEUE];
  unsigned head, tail; /* under lock */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  pthread_t thread;
  int quit;
  unsigned seed;
  int busy; /* a kernel of this stream is running */
};

static uint64_t pattern(int from, int to, uint64_t k, int i) {
  return (uint64_t)from << 60 ^ (uint64_t)to << 56 ^ k << 16 ^ (uint64_t)i * 0x9e37u;
}

static void jitter(unsigned* seed) {
  const int r = rand_r(seed) % 16;
  if (r == 0) usleep(rand_r(seed) % 100);
  else if (r < 3) sched_yield();
}

static void describeWord(const uint64_t* w, char* out, size_t n) {
  for (int a = 0; a < MAXR; a++)
    for (int b = 0; b < MAXR; b++) {
      const struct chrCeMailbox* mb = &sh->box[a][b];
      const char* base = (const char*)mb;
      if ((const char*)w >= base && (const char*)w < base + sizeof *mb) {
        const size_t off = (size_t)((const char*)w - base);
        snprintf(out, n, "box[%d->%d] offset %zu (done at %zu, ready at %zu, dstK at %zu)", a, b, off,
                 offsetof(struct chrCeMailbox, done), offsetof(struct chrCeMailbox, ready), offsetof(struct chrCeMailbox, dstK));
        return;
      }
    }
  snprintf(out, n, "a local word");
}

/* A group's kernel (the device library's ce_kernels.cu): the copies of the transfers this rank
 * sends by kernel, each once its buffer is published and its receiver is ready (then done for the
 * receiver), and the waits for the done words of the rest, all progressing together; it ends when
 * all have. */
struct Group {
  int nJobs, nWaits;
  struct {
    int peer;
    uint64_t k, *dstK, *dstPtr, *ready, *done;
    uint64_t* senderDone; /* pull mode: done[SEND], which the receiver's pull writes */
    const uint64_t* from;
    int finished;
  } job[9];
  struct {
    int peer;
    uint64_t *word, value;
    int finished;
  } wait[9];
};

static void runGroupKernel(struct Group* g) {
  for (int left = g->nJobs + g->nWaits; left > 0 && !stopped();) {
    for (int i = 0; i < g->nJobs; i++) {
      if (g->job[i].finished || __atomic_load_n(g->job[i].dstK, __ATOMIC_ACQUIRE) < g->job[i].k ||
          __atomic_load_n(g->job[i].ready, __ATOMIC_ACQUIRE) < g->job[i].k)
        continue;
      /* The publish is read as a seqlock (dstPtr is written before dstK): a pulled transfer's done
       * word frees its slot before this job looks, so the agent may already have published the
       * slot's next transfer (dstK > k: this one was pulled, since only its copy or its pull ends it). */
      const uint64_t seen = __atomic_load_n(g->job[i].dstK, __ATOMIC_ACQUIRE);
      uint64_t* to = (uint64_t*)(uintptr_t)__atomic_load_n(g->job[i].dstPtr, __ATOMIC_ACQUIRE);
      if (__atomic_load_n(g->job[i].dstK, __ATOMIC_ACQUIRE) != seen) continue; /* published meanwhile: again */
      if (seen > g->job[i].k || (uintptr_t)to == CHR_CE_DST_PULLED) { /* the receiver copies: wait until it has */
        if (__atomic_load_n(g->job[i].senderDone, __ATOMIC_ACQUIRE) < g->job[i].k) continue;
        __atomic_add_fetch(&sh->pulledJobs, 1, __ATOMIC_RELAXED);
        g->job[i].finished = 1;
        left--;
        continue;
      }
      if (to == NULL) fail("a kernel copy found no published buffer", g->job[i].peer, g->job[i].k);
      else
        for (int w = 0; w < WORDS; w++)
          __atomic_store_n(&to[w], __atomic_load_n(&g->job[i].from[w], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
      __atomic_store_n(g->job[i].done, g->job[i].k, __ATOMIC_RELEASE);
      g->job[i].finished = 1;
      left--;
    }
    for (int i = 0; i < g->nWaits; i++)
      if (!g->wait[i].finished && __atomic_load_n(g->wait[i].word, __ATOMIC_ACQUIRE) >= g->wait[i].value) {
        g->wait[i].finished = 1;
        left--;
      }
    sched_yield();
  }
  for (int i = 0; i < g->nJobs; i++)
    if (!g->job[i].finished) {
      if (now() > deadline)
        fprintf(stderr, "at the time limit: rank %d group copy to %d of transfer %llu: published %llu, ready %llu\n", me,
                g->job[i].peer, (unsigned long long)g->job[i].k, (unsigned long long)*g->job[i].dstK,
                (unsigned long long)*g->job[i].ready);
      fail("a group's copy never ran", g->job[i].peer, g->job[i].k);
    }
  for (int i = 0; i < g->nWaits; i++)
    if (!g->wait[i].finished) {
      if (now() > deadline) {
        char what[160];
        describeWord(g->wait[i].word, what, sizeof what);
        fprintf(stderr, "at the time limit: rank %d group waits %s >= %llu, is %llu\n", me, what,
                (unsigned long long)g->wait[i].value, (unsigned long long)*g->wait[i].word);
      }
      fail("a group's wait never ended", g->wait[i].peer, g->wait[i].value);
    }
}

static void* kernelMain(void* arg) {
  struct Op* op = (struct Op*)arg;
  if (op->kind == OP_GROUP) {
    runGroupKernel(op->group);
    free(op->group);
  } else { /* POLL */
    while (__atomic_load_n(op->word, __ATOMIC_ACQUIRE) < op->value && !stopped()) sched_yield();
    if (__atomic_load_n(op->word, __ATOMIC_ACQUIRE) < op->value) fail("a poll kernel never ended", op->peer, op->value);
  }
  __atomic_store_n(&op->owner->busy, 0, __ATOMIC_RELEASE);
  free(op);
  return NULL;
}

static void* streamMain(void* arg) {
  struct Stream* s = (struct Stream*)arg;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    while (s->head == s->tail && !s->quit) pthread_cond_wait(&s->cv, &s->lock);
    if (s->head == s->tail && s->quit) {
      pthread_mutex_unlock(&s->lock);
      return NULL;
    }
    struct Op op = s->q[s->head % QUEUE];
    pthread_mutex_unlock(&s->lock);
    jitter(&s->seed);
    while (__atomic_load_n(&op.owner->busy, __ATOMIC_ACQUIRE) && !stopped()) sched_yield(); /* its stream's kernel */
    switch (op.kind) {
      case OP_GROUP:
      case OP_POLL: {
        struct Op* k = (struct Op*)malloc(sizeof *k);
        pthread_t t;
        if (k == NULL) {
          fail("out of memory", -1, 0);
          break;
        }
        *k = op;
        __atomic_store_n(&op.owner->busy, 1, __ATOMIC_RELEASE);
        if (pthread_create(&t, NULL, kernelMain, k) != 0) {
          fail("cannot start a kernel thread", -1, 0);
          __atomic_store_n(&op.owner->busy, 0, __ATOMIC_RELEASE);
          free(k);
          break;
        }
        pthread_detach(t);
        break;
      }
      case OP_WAIT:
        while (__atomic_load_n(op.word, __ATOMIC_ACQUIRE) < op.value && !stopped()) sched_yield();
        if (__atomic_load_n(op.word, __ATOMIC_ACQUIRE) < op.value) {
          char what[160];
          describeWord(op.word, what, sizeof what);
          if (now() > deadline) fprintf(stderr, "at the time limit: rank %d stream %p waits %s >= %llu, is %llu\n", me, (void*)s, what,
                  (unsigned long long)op.value, (unsigned long long)*op.word);
          fail("a stream's wait never ended", op.peer, op.value);
        }
        break;
      case OP_WRITE: __atomic_store_n(op.word, op.value, __ATOMIC_RELEASE); break;
      case OP_COPY:
        for (int i = 0; i < WORDS; i++) __atomic_store_n(&op.to[i], __atomic_load_n(&op.from[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        break;
      case OP_FILL:
        for (int i = 0; i < WORDS; i++) __atomic_store_n(&op.to[i], pattern(me, op.peer, op.k, i), __ATOMIC_RELAXED);
        break;
      case OP_CHECK:
        for (int i = 0; i < WORDS; i++)
          if (__atomic_load_n(&op.to[i], __ATOMIC_RELAXED) != pattern(op.peer, me, op.k, i)) {
            fail("received data is not the sender's", op.peer, op.k);
            break;
          }
        break;
    }
    pthread_mutex_lock(&s->lock);
    s->head++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
  }
}

static struct Stream mainStream;

static void enqueue(struct Stream* s, struct Op op) {
  op.owner = s;
  if (oneQueue) s = &mainStream;
  pthread_mutex_lock(&s->lock);
  while (s->tail - s->head >= QUEUE) pthread_cond_wait(&s->cv, &s->lock);
  s->q[s->tail++ % QUEUE] = op;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
}

/* This rank's streams: the user's, and a copy stream per peer and direction (copy[peer][role]).
 * Points between streams ("events") are words that only grow: mainReached is the user stream's,
 * copiedPoint[peer][role] each copy stream's. */
static struct Stream copyStream[MAXR][2];
static uint64_t groups;      /* host: groups queued so far */
static uint64_t mainReached; /* written by the user stream: the last group whose point it passed */
static uint64_t copiedPoint[MAXR][2], copies[MAXR][2];

/* One transfer of a group, from this rank's side. */
struct Xfer {
  int peer, role; /* role CHR_CE_SEND: this rank sends to peer */
  uint64_t k;     /* the transfer's number in its direction */
};

static struct chrCeMailbox* boxOf(const struct Xfer* x) {
  return x->role == CHR_CE_SEND ? &sh->box[me][x->peer] : &sh->box[x->peer][me];
}
static uint64_t* bufOf(const struct Xfer* x, int dst) {
  const int s = x->role == CHR_CE_SEND ? me : x->peer, d = x->role == CHR_CE_SEND ? x->peer : me;
  return dst ? sh->dst[s][d][x->k % RING] : sh->src[s][d][x->k % RING];
}

/* The copy of transfer x on its copy stream: after the peer's ready word and this rank's group point,
 * then done for the peer (and, sender mode, for this rank too: its user stream waits for it). */
static void queueCopy(const struct Xfer* x, uint64_t point) {
  struct chrCeMailbox* mb = boxOf(x);
  struct Stream* cs = &copyStream[x->peer][x->role];
  if (!senderIssues)
    enqueue(cs, (struct Op){.kind = OP_WAIT, .peer = x->peer, .word = &mb->ready[1 - x->role][0], .value = x->k});
  enqueue(cs, (struct Op){.kind = OP_WAIT, .peer = x->peer, .word = &mainReached, .value = point});
  if (senderIssues) /* a kernel polls the receiver's ready word: a stream memory wait would hold the queue */
    enqueue(cs, (struct Op){.kind = OP_POLL, .peer = x->peer, .word = &mb->ready[1 - x->role][0], .value = x->k});
  enqueue(cs, (struct Op){.kind = OP_COPY, .to = bufOf(x, 1), .from = bufOf(x, 0)});
  enqueue(cs, (struct Op){.kind = OP_WRITE, .word = chrCeDone(mb, 1 - x->role, x->k), .value = x->k});
  if (senderIssues) enqueue(cs, (struct Op){.kind = OP_WRITE, .word = chrCeDone(mb, x->role, x->k), .value = x->k});
  __atomic_add_fetch(&sh->seconds, 1, __ATOMIC_RELAXED);
  if (x->role == CHR_CE_SEND) __atomic_add_fetch(&sh->pushes, 1, __ATOMIC_RELAXED);
}

static void checkPost(const struct Xfer* x, const struct chrCePost* other) {
  uint64_t otherK;
  memcpy(&otherK, &other->bytes[8], sizeof(otherK));
  if (other->bytes[0] != (unsigned char)(x->peer + 1) || other->bytes[1] != (unsigned char)(1 - x->role) || otherK != x->k)
    fail("the other end's post is not the one for this transfer", x->peer, x->k);
}

/* Sender mode: this rank's first sends whose receiver's buffer is not yet published, per peer in
 * transfer order (a ring), guarded by agentLock; the user's thread appends, and whichever of it and
 * the agent holds the lock publishes every head whose receiver has posted (host work only). */
#define PENDING 64
static struct { struct Xfer x; uint64_t point; } pending[MAXR][PENDING];
static unsigned pendHead[MAXR], pendTail[MAXR];
static pthread_mutex_t agentLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t agentThread;
static int agentQuit;

/* Returns 1 when a head waits for the slot's transfer before to end (the agent then polls). */
static int publishReady(int byAgent) {
  int blocked = 0;
  pthread_mutex_lock(&agentLock);
  for (int p = 0; p < nRanks; p++)
    while (pendHead[p] != pendTail[p]) {
      const struct Xfer* x = &pending[p][pendHead[p] % PENDING].x;
      struct chrCePost other;
      if (!chrCeOtherPosted(boxOf(x), x->role, x->k, &other)) break;
      /* the slot's transfer before must be over (its copy reads the slot's published buffer); no
       * one waits for it under the lock, which the user's calls take */
      if (x->k > CHR_CE_SLOTS && __atomic_load_n(chrCeDone(boxOf(x), CHR_CE_RECV, x->k), __ATOMIC_ACQUIRE) < x->k - CHR_CE_SLOTS) {
        blocked = 1;
        break;
      }
      checkPost(x, &other);
      chrCePublishDst(boxOf(x), x->k, other.bytes[2] ? CHR_CE_DST_PULLED : (uint64_t)(uintptr_t)bufOf(x, 1));
      chrCeRelease(boxOf(x), x->k);
      if (byAgent) __atomic_add_fetch(&sh->byAgent, 1, __ATOMIC_RELAXED);
      pendHead[p]++;
    }
  pthread_mutex_unlock(&agentLock);
  return blocked;
}

static unsigned pendingLeft(void) {
  unsigned left = 0;
  pthread_mutex_lock(&agentLock);
  for (int p = 0; p < nRanks; p++) left += pendTail[p] - pendHead[p];
  pthread_mutex_unlock(&agentLock);
  return left;
}

static void ring(int rank) {
  __atomic_add_fetch(&sh->bell[rank], 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &sh->bell[rank], FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void* agentMain(void* unused) {
  (void)unused;
  for (;;) {
    const uint32_t seen = __atomic_load_n(&sh->bell[me], __ATOMIC_ACQUIRE);
    const int blocked = publishReady(1);
    if (__atomic_load_n(&agentQuit, __ATOMIC_ACQUIRE)) return NULL;
    if (blocked) { /* polls until the slot's transfer before ends */
      sched_yield();
      continue;
    }
    const struct timespec wait = {0, 1000000}; /* asleep until a bell, or a millisecond */
    syscall(SYS_futex, &sh->bell[me], FUTEX_WAIT, seen, &wait, NULL, 0);
  }
}

/* A group, queued in two passes: every transfer's ready word and the group's point of the user
 * stream, then the posts (a first end's wait on the user stream; a second end's copy on its copy
 * stream, after the peer's ready word and the group's point, then done for the peer and a point
 * the user stream waits for). Sender mode: a sender second copies on its copy stream from here; a
 * sender first copies on its user stream once its buffer is published (queued after the posts,
 * before any wait); every other end's user stream waits for its done word; a receiver that posts
 * second rings the sender's agent. */
static void runGroup(const struct Xfer* xs, int n, unsigned* seed) {
  for (int i = 0; i < n; i++)
    if (xs[i].role == CHR_CE_SEND)
      enqueue(&mainStream, (struct Op){.kind = OP_FILL, .peer = xs[i].peer, .to = bufOf(&xs[i], 0), .k = xs[i].k});
  for (int i = 0; i < n; i++) {
    struct chrCeMailbox* mb = boxOf(&xs[i]);
    while (!chrCeSlotFree(mb, xs[i].k))
      if (stopped()) {
        fprintf(stderr, "at the time limit: rank %d host waits for the slot of transfer %llu %s peer %d (state %llx)\n", me,
                (unsigned long long)xs[i].k, xs[i].role == CHR_CE_SEND ? "to" : "from", xs[i].peer,
                (unsigned long long)mb->state[xs[i].k % CHR_CE_SLOTS]);
        return;
      }
      else sched_yield();
    enqueue(&mainStream, (struct Op){.kind = OP_WRITE, .word = &mb->ready[xs[i].role][0], .value = xs[i].k});
  }
  const uint64_t point = ++groups;
  enqueue(&mainStream, (struct Op){.kind = OP_WRITE, .word = &mainReached, .value = point});
  struct Xfer firsts[9], waits[9], engine; /* sender mode: the kernel's copies and waits; the engine's */
  int nFirsts = 0, nWaits = 0, hasEngine = 0;
  for (int i = 0; i < n; i++) {
    const struct Xfer* x = &xs[i];
    struct chrCeMailbox* mb = boxOf(x);
    jitter(seed);
    struct chrCePost mine, other;
    memset(&mine, 0, sizeof(mine));
    mine.bytes[0] = (unsigned char)(me + 1);
    mine.bytes[1] = (unsigned char)x->role;
    memcpy(&mine.bytes[8], &x->k, sizeof(x->k));
    __atomic_add_fetch(&sh->ends, 1, __ATOMIC_RELAXED);
    /* Pull mode: a receiver that finds its sender posted (so it will come second), with no engine
     * copy in its group yet, says so in its post and copies on its own copy stream, queued after
     * the group's kernel as a sender's engine copy is. */
    const int pull = senderIssues && receiverPulls && x->role == CHR_CE_RECV && !hasEngine &&
                     chrCeOtherPosted(mb, x->role, x->k, &other);
    if (pull) mine.bytes[2] = 1;
    const int first = chrCePost(mb, x->role, x->k, &mine, &other);
    if (senderIssues) {
      if (x->role == CHR_CE_RECV) {
        waits[nWaits++] = *x;
        if (!first) {
          checkPost(x, &other);
          ring(x->peer); /* the sender came first: its agent publishes this buffer (or the pull's mark) */
        }
        if (pull && first) fail("a receiver that saw its sender's post came first", x->peer, x->k);
        if (pull) {
          engine = *x;
          hasEngine = 1;
          __atomic_add_fetch(&sh->pulls, 1, __ATOMIC_RELAXED);
        }
        continue;
      }
      /* A sender first may wait a while for its receiver's post and then copy as a second would;
       * but not a receive that will be pulled (its receiver saw this post and copies itself). */
      int second = !first;
      if (first && senderWaits && !hasEngine)
        for (const double until = now() + 200e-6; now() < until; sched_yield())
          if (chrCeOtherPosted(mb, x->role, x->k, &other)) {
            second = !other.bytes[2];
            break;
          }
      /* The receiver posted first and the slot's transfer before is over: the copy engine, queued
       * after the group's kernel (one per group: a copy waiting for its receiver holds the queues
       * its stream shares, so no other transfer of the group may sit behind it). */
      if (second && !hasEngine &&
          (x->k <= CHR_CE_SLOTS || __atomic_load_n(chrCeDone(mb, CHR_CE_RECV, x->k), __ATOMIC_ACQUIRE) >= x->k - CHR_CE_SLOTS)) {
        checkPost(x, &other);
        chrCeRelease(mb, x->k);
        engine = *x;
        hasEngine = 1;
        waits[nWaits++] = *x;
        continue;
      }
      if (second) checkPost(x, &other);
      firsts[nFirsts++] = *x; /* by the group's kernel, once its buffer is published */
      pthread_mutex_lock(&agentLock);
      const unsigned t = pendTail[x->peer]++;
      if (t - pendHead[x->peer] >= PENDING) fail("pending ring full", x->peer, x->k);
      pending[x->peer][t % PENDING].x = *x;
      pending[x->peer][t % PENDING].point = point;
      pthread_mutex_unlock(&agentLock);
      publishReady(0); /* the receiver may have posted since */
      continue;
    }
    if (first) {
      enqueue(&mainStream, (struct Op){.kind = OP_WAIT, .peer = x->peer, .word = chrCeDone(mb, x->role, x->k), .value = x->k});
      continue;
    }
    checkPost(x, &other);
    queueCopy(x, point);
    struct Stream* cs = &copyStream[x->peer][x->role];
    const uint64_t c = ++copies[x->peer][x->role];
    enqueue(cs, (struct Op){.kind = OP_WRITE, .word = &copiedPoint[x->peer][x->role], .value = c});
    enqueue(&mainStream, (struct Op){.kind = OP_WAIT, .peer = x->peer, .word = &copiedPoint[x->peer][x->role], .value = c});
    chrCeRelease(mb, x->k);
  }
  if (senderIssues && nFirsts + nWaits > 0) { /* one kernel for all: none waits behind another */
    struct Group* g = (struct Group*)calloc(1, sizeof *g);
    if (g == NULL) {
      fail("out of memory", -1, 0);
      return;
    }
    for (int i = 0; i < nFirsts; i++) {
      struct chrCeMailbox* mb = boxOf(&firsts[i]);
      const int slot = (int)(firsts[i].k % CHR_CE_SLOTS);
      g->job[i].peer = firsts[i].peer;
      g->job[i].k = firsts[i].k;
      g->job[i].dstK = &mb->dstK[slot];
      g->job[i].dstPtr = &mb->dstPtr[slot];
      g->job[i].ready = &mb->ready[CHR_CE_RECV][0];
      g->job[i].done = chrCeDone(mb, CHR_CE_RECV, firsts[i].k);
      g->job[i].senderDone = chrCeDone(mb, CHR_CE_SEND, firsts[i].k);
      g->job[i].from = bufOf(&firsts[i], 0);
      __atomic_add_fetch(&sh->byKernel, 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < nWaits; i++) {
      g->wait[i].peer = waits[i].peer;
      g->wait[i].word = chrCeDone(boxOf(&waits[i]), waits[i].role, waits[i].k);
      g->wait[i].value = waits[i].k;
    }
    g->nJobs = nFirsts;
    g->nWaits = nWaits;
    enqueue(&mainStream, (struct Op){.kind = OP_GROUP, .group = g});
  }
  if (hasEngine) queueCopy(&engine, point);
  for (int i = 0; i < n; i++)
    if (xs[i].role == CHR_CE_RECV)
      enqueue(&mainStream, (struct Op){.kind = OP_CHECK, .peer = xs[i].peer, .to = bufOf(&xs[i], 1), .k = xs[i].k});
}

/* The host waits until its user stream has run everything queued (cudaStreamSynchronize). */
static void drainMain(void) {
  for (;;) {
    pthread_mutex_lock(&mainStream.lock);
    const int idle = mainStream.head == mainStream.tail && !__atomic_load_n(&mainStream.busy, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&mainStream.lock);
    if (idle || stopped()) return;
    sched_yield();
  }
}

/* The program: STEPS steps of up to 3 random transfers (the same on every rank: one seed); a rank
 * ends its group after a step with probability 1/2, and after 3 steps at most (so that a pair has
 * at most 9 transfers in one group, fewer than RING). */
static int runRank(int rank) {
  me = rank;
  groups = mainReached = 0;
  memset(copiedPoint, 0, sizeof(copiedPoint));
  memset(copies, 0, sizeof(copies));
  struct Stream* all[1 + 2 * MAXR];
  int nStreams = 0;
  all[nStreams++] = &mainStream;
  for (int p = 0; p < nRanks; p++)
    for (int r = 0; r < 2; r++)
      if (p != rank) all[nStreams++] = &copyStream[p][r];
  for (int i = 0; i < nStreams; i++) {
    memset(all[i], 0, sizeof(*all[i]));
    all[i]->seed = 1000u * (unsigned)rank + (unsigned)i;
    pthread_mutex_init(&all[i]->lock, NULL);
    pthread_cond_init(&all[i]->cv, NULL);
    if (pthread_create(&all[i]->thread, NULL, streamMain, all[i]) != 0) {
      fprintf(stderr, "rank %d: cannot start a stream thread\n", rank);
      return 1;
    }
  }
  agentQuit = 0;
  if (senderIssues && pthread_create(&agentThread, NULL, agentMain, NULL) != 0) {
    fprintf(stderr, "rank %d: cannot start the agent thread\n", rank);
    return 1;
  }
  unsigned program = 777u, mine = 4242u + (unsigned)rank;
  uint64_t next[MAXR][MAXR] = {{0}}; /* transfers so far from s to d */
  struct Xfer group[9];
  int n = 0, steps = 0;
  for (int step = 0; step < STEPS && !stopped(); step++) {
    const int count = 1 + rand_r(&program) % 3;
    for (int t = 0; t < count; t++) {
      const int s = rand_r(&program) % nRanks;
      const int d = (s + 1 + rand_r(&program) % (nRanks - 1)) % nRanks;
      const uint64_t k = ++next[s][d];
      if (s == rank) group[n++] = (struct Xfer){.peer = d, .role = CHR_CE_SEND, .k = k};
      if (d == rank) group[n++] = (struct Xfer){.peer = s, .role = CHR_CE_RECV, .k = k};
    }
    if (++steps == 3 || rand_r(&mine) % 2 || step == STEPS - 1) {
      for (int i = n - 1; i > 0; i--) { /* a group's calls come in any order (NCCL: they run together) */
        const int j = rand_r(&mine) % (i + 1);
        const struct Xfer t = group[i];
        group[i] = group[j];
        group[j] = t;
      }
      /* ... but calls to one peer in one direction match in call order: the k-th send to a peer is
       * the k-th receive there. The numbers follow the calls, and the ready and done words, which
       * only grow, are written in that order. */
      for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
          if (group[j].peer == group[i].peer && group[j].role == group[i].role && group[j].k < group[i].k) {
            const uint64_t t = group[i].k;
            group[i].k = group[j].k;
            group[j].k = t;
          }
      runGroup(group, n, &mine);
      if (rand_r(&mine) % 8 == 0) drainMain(); /* as a program that reads its results now and then */
      n = 0;
      steps = 0;
    }
  }
  /* every buffer published before the streams stop (the agent goes on until the receivers have posted) */
  if (senderIssues) {
    while (pendingLeft() && !stopped()) usleep(100);
    __atomic_store_n(&agentQuit, 1, __ATOMIC_RELEASE);
    ring(me);
    pthread_join(agentThread, NULL);
  }
  for (int i = 0; i < nStreams; i++) {
    pthread_mutex_lock(&all[i]->lock);
    all[i]->quit = 1;
    pthread_cond_broadcast(&all[i]->cv);
    pthread_mutex_unlock(&all[i]->lock);
  }
  for (int i = 0; i < nStreams; i++) pthread_join(all[i]->thread, NULL);
  for (int i = 0; i < nStreams; i++) /* their last kernels */
    while (__atomic_load_n(&all[i]->busy, __ATOMIC_ACQUIRE)) sched_yield();
  if (now() > deadline) fail("time limit: a transfer hung", -1, 0);
  return __atomic_load_n(&sh->failures, __ATOMIC_ACQUIRE) ? 1 : 0;
}

static int runWorld(int ranks, int bySender, int oneQ, int pulls, int waits) {
  nRanks = ranks;
  senderIssues = bySender;
  oneQueue = oneQ;
  receiverPulls = pulls;
  senderWaits = waits;
  memset(sh, 0, sizeof(*sh));
  for (int s = 0; s < MAXR; s++)
    for (int d = 0; d < MAXR; d++) chrCeMailboxInit(&sh->box[s][d]);
  const char* scale = getenv("CHORUS_TEST_TIME_SCALE");
  deadline = now() + LIMIT_SEC * (scale && atoi(scale) > 1 ? atoi(scale) : 1);
  fflush(stdout); /* a child must not inherit (and print again) what the parent has buffered */
  pid_t kids[MAXR];
  for (int r = 0; r < ranks; r++) {
    kids[r] = fork();
    if (kids[r] < 0) {
      perror("fork");
      return 1;
    }
    if (kids[r] == 0) _exit(runRank(r));
  }
  int rc = 0;
  for (int r = 0; r < ranks; r++) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "%d ranks: rank %d %s %d\n", ranks, r, WIFEXITED(st) ? "exited with" : "died of signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      rc = 1;
    }
  }
  if (bySender)
    printf("ce mailbox, the sender copies%s%s%s: %d ranks, %d steps of random transfers, groups closed at random: %ld "
           "transfers, %ld on the copy stream (%ld pulled by the receiver), %ld by the group's kernel (buffer "
           "published by the agent %ld times); %d failures\n", pulls ? " or the receiver pulls" : "",
           waits ? ", a first sender waits for its receiver" : "", oneQ ? ", one queue per rank" : "", ranks, STEPS, sh->ends / 2, sh->seconds, sh->pulls,
           sh->byKernel - sh->pulledJobs, sh->byAgent, sh->failures);
  else
    printf("ce mailbox, the second issues: %d ranks, %d steps of random transfers, groups closed at random: %ld "
           "transfers, copied by the second end to post: %ld the sender, %ld the receiver; %d failures\n", ranks, STEPS,
           sh->ends / 2, sh->pushes, sh->seconds - sh->pushes, sh->failures);
  /* every transfer is copied once (sender mode: by its sender, both ways, and the agent published at
   * least once; pull mode: some by their receiver, whose sender's kernel then copied nothing) */
  const int counted = sh->ends == 2 * (sh->seconds + sh->byKernel - sh->pulledJobs) && sh->pulls == sh->pulledJobs &&
                      (!pulls || sh->pulls > 0) &&
                      (!bySender || (sh->pushes + sh->pulls == sh->seconds && sh->pushes > 0 &&
                                     sh->byKernel - sh->pulledJobs > 0 && sh->byAgent > 0));
  if (!counted)
    fprintf(stderr, "the counts do not add up: ends %ld, copy-stream copies %ld (pushes %ld, pulls %ld), kernel jobs %ld "
            "(%ld found pulled), agent publishes %ld\n", sh->ends, sh->seconds, sh->pushes, sh->pulls, sh->byKernel,
            sh->pulledJobs, sh->byAgent);
  return rc || sh->failures || !counted;
}

/* No arguments: every run. "RANKS SENDER ONE_QUEUE [PULL [WAIT]]" (e.g. "3 1 1 1 1"): that run alone. */
int main(int argc, char** argv) {
  sh = (struct Shared*)mmap(NULL, sizeof(struct Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  if (argc >= 4 && argc <= 6)
    return runWorld(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), argc >= 5 ? atoi(argv[4]) : 0,
                    argc == 6 ? atoi(argv[5]) : 0) ? 1 : 0;
  int rc = runWorld(2, 0, 0, 0, 0);
  rc |= runWorld(3, 0, 0, 0, 0);
  for (int pull = 0; pull < 2; pull++) {
    rc |= runWorld(2, 1, 0, pull, 0);
    rc |= runWorld(3, 1, 0, pull, 0);
    rc |= runWorld(2, 1, 1, pull, 0);
    rc |= runWorld(3, 1, 1, pull, 0);
  }
  rc |= runWorld(2, 1, 0, 1, 1); /* the bounded wait beside pulls (ce_sends.cu: a pulled receive stays first) */
  rc |= runWorld(3, 1, 1, 1, 1);
  return rc ? 1 : 0;
}
