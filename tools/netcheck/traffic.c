/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * traffic.c: the checked traffic of chorus-netcheck.
 *
 * Each rank has `comms` send connections to the other rank and `comms` receive connections from
 * it. One thread (the "proxy" thread, not the one that loaded the plugin, as in NCCL) drives all of
 * them in one loop, the way a host proxy does:
 *   - connection setup races with data: connect() and accept() of every comm are polled in the same
 *     loop that already moves data on the comms that are up, on both ranks at once;
 *   - each connection follows its schedule (schedule.c) with many requests in flight (comm 0: the
 *     --depth, comm 1: NCCL_NET_MAX_REQUESTS, comm 2: one at a time), grouped receives when
 *     maxRecvs > 1, posted sizes larger than sent, sometimes the optional-completion hint;
 *   - a NULL request is retried with the same arguments before anything later is posted;
 *   - in-flight requests are test()ed in a random order every round (a later one before an earlier
 *     one), sometimes with sizes = NULL for sends;
 *   - buffers are registered per slot (and re-registered when they grow), every 7th message uses a
 *     buffer registered just for it, and sub-ranges are registered and released in between.
 * Every completed receive is checked byte by byte, with its reported size and the guard bytes behind
 * it; a misplaced message is named by whose payload it holds.
 *
 * With GPU memory (--mem cuda or cuda-host, on a device that advertises it: gpurules.c) the slot
 * buffers are GPU memory registered as such; a send is filled on the host and copied in, a receive
 * buffer is set to the guard byte all through before it is posted, and after a receive with bytes
 * completes, its flush is tested to completion (the slot stays in flight meanwhile) before the
 * buffers are copied back to the host and checked as above. A connection whose GPU registration the
 * plugin refused goes on in host memory; each buffer knows which memory it is.
 */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/log.h"
#include "netcheck.h"

#define NC_MAX_SLOTS (NC_MAX_DEPTH * NC_MAX_GROUP)
#define NC_GUARD_BYTE 0xA5
#define NC_INFLIGHT_BYTES (48u << 20) /* per connection, so a deep pipe of large messages stays in memory */

typedef struct {
  char* base;
  size_t cap;
  void* mh;
  int gpu;       /* GPU memory (gpumem.c), registered through gpurules.c */
  uintptr_t raw; /* GPU memory: what ncGpuFree takes */
} ncBuf;

typedef struct {
  int busy;   /* taken by the request being posted or in flight */
  int posted; /* the plugin accepted it: req is valid */
  void* req;
  uint64_t id; /* send: message number; recv: group index */
  int useTmp;
  int flushing; /* a receive is done and its iflush request (flushReq) in flight; req is dead */
  int flushFailed;
  void* flushReq;
  int got[NC_MAX_GROUP]; /* a receive: the sizes test() reported */
  ncBuf own[NC_MAX_GROUP]; /* long-lived, registered once (again when grown) */
  ncBuf tmp[NC_MAX_GROUP]; /* registered for this request only */
  char* data[NC_MAX_GROUP];
  size_t postSize[NC_MAX_GROUP];
  void* mh[NC_MAX_GROUP];
  int tags[NC_MAX_GROUP];
  size_t bytes; /* posted bytes, for the connection's in-flight budget */
  double postedAt;
} ncSlot;

typedef struct {
  int index;
  int isSend;
  int fromRank;
  void* listen;
  void* comm;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  int up, dead;
  ncSchedule sched;
  int depth;
  int nSlots;
  ncSlot* slots;
  int pending; /* slot whose post returned NULL and must be retried first, or -1 */
  int gpu;     /* new buffers are GPU memory (0 from the plugin's first refusal on) */
  uint64_t next; /* send: next message; recv: next group */
  int g, p;      /* send: group and position of message `next` */
  int inflight;
  size_t inflightBytes;
  uint64_t completed, total;
  uint64_t nullRetries;
  uint64_t rng;
} ncConn;

typedef struct {
  ncRank* r;
  ncConn conns[2 * NC_MAX_COMMS];
  int nConns;
  double lastProgress;
  uint64_t rng;
  char* scratch; /* GPU memory: host copy of one buffer, for filling and checking */
  size_t scratchLen;
} ncTraffic_t;

const char* ncLastError(void) {
  const char* e = chrThreadLastError();
  return e[0] ? e : "(no error text)";
}

static const char* dirName(const ncTraffic_t* t, const ncConn* c, char* buf, size_t len) {
  snprintf(buf, len, "rank %d %s comm %d (%s rank %d)", t->r->rank, c->isSend ? "send" : "recv", c->index,
           c->isSend ? "to" : "from", 1 - t->r->rank);
  return buf;
}

/* Clock a plugin call: one that sleeps a second or more breaks the non-blocking rule. */
#define TIMED(t, c, what, call)                                                                          \
  ({                                                                                                     \
    ncCallClock clk_;                                                                                    \
    ncCallClockStart(&clk_);                                                                             \
    ncclResult_t r_ = (call);                                                                            \
    ncCallClockStop(&clk_);                                                                              \
    char d_[96];                                                                                         \
    ncCheckCall(dirName(t, c, d_, sizeof(d_)), what, &clk_);                                             \
    r_;                                                                                                  \
  })

static void killConn(ncTraffic_t* t, ncConn* c, ncRule rule, const char* what) {
  char d[96];
  ncFail(rule, "%s: %s failed: %s", dirName(t, c, d, sizeof(d)), what, ncLastError());
  c->dead = 1;
}

/* ---------------------------------------------------------------- buffers */

/* The buffer's memory, without its registration. */
static void freeMem(ncBuf* b) {
  if (b->gpu) ncGpuFree(b->raw);
  else free(b->base);
  b->base = NULL;
  b->cap = 0;
  b->gpu = 0;
  b->raw = 0;
}

/* GPU memory for b, registered through gpurules.c: 0, or -1 when the connection must go on in host
 * memory (the plugin refused, or netcheck found no memory; either is recorded). */
static int regGpuBuf(ncTraffic_t* t, ncConn* c, ncBuf* b, size_t cap) {
  char d[96];
  dirName(t, c, d, sizeof(d));
  uintptr_t raw = 0;
  char* p = ncGpuAlloc(cap, &raw);
  if (p == NULL) {
    ncFail(NC_R_GPU_REG, "%s: netcheck found no %zu bytes of GPU memory (not the plugin's fault): %s", d, cap, ncGpuError());
    return -1;
  }
  if (ncGpuReg(t->r, c->comm, d, p, cap, &b->mh) != 0) {
    ncGpuFree(raw);
    return -1;
  }
  *b = (ncBuf){.base = p, .cap = cap, .mh = b->mh, .gpu = 1, .raw = raw};
  return 0;
}

static void deregBuf(ncTraffic_t* t, ncConn* c, ncBuf* b) {
  if (b->mh != NULL && c->comm != NULL) {
    char d[96];
    if (b->gpu) ncGpuDereg(t->r, c->comm, dirName(t, c, d, sizeof(d)), b->mh);
    else {
      ncclResult_t res = chrNetDeregMr(t->r->net, c->comm, b->mh);
      ncCheck(NC_R_MR, res == ncclSuccess, "deregMr returned %d: %s", (int)res, ncLastError());
    }
  }
  b->mh = NULL;
}

static int regBuf(ncTraffic_t* t, ncConn* c, ncBuf* b, size_t need) {
  if (b->cap >= need && b->base != NULL) return 0;
  if (b->mh != NULL && b->gpu) {
    deregBuf(t, c, b);
  } else if (b->mh != NULL) {
    ncclResult_t res = TIMED(t, c, "deregMr", chrNetDeregMr(t->r->net, c->comm, b->mh));
    ncCheck(NC_R_MR, res == ncclSuccess, "deregMr of a %zu-byte buffer returned %d: %s", b->cap, (int)res, ncLastError());
    b->mh = NULL;
  }
  freeMem(b);
  size_t cap = need < 4096 ? 4096 : need;
  if (c->gpu && regGpuBuf(t, c, b, cap) == 0) return 0;
  c->gpu = 0; /* from here this connection's new buffers are host memory */
  if (posix_memalign((void**)&b->base, 4096, cap) != 0) {
    b->base = NULL;
    b->cap = 0;
    return -1;
  }
  b->cap = cap;
  ncclResult_t res = TIMED(t, c, "regMr", chrNetRegMr(t->r->net, c->comm, b->base, cap, NCCL_PTR_HOST, &b->mh));
  if (res != ncclSuccess) {
    killConn(t, c, NC_R_MR, "regMr");
    return -1;
  }
  ncPass(NC_R_MR);
  return 0;
}

static void dropBuf(ncTraffic_t* t, ncConn* c, ncBuf* b) {
  deregBuf(t, c, b);
  freeMem(b);
}

/* Register and release a sub-range of an idle slot buffer (registration churn), in the buffer's memory. */
static void churn(ncTraffic_t* t, ncConn* c) {
  for (int i = 0; i < c->nSlots; i++) {
    ncSlot* s = &c->slots[(i + (int)(ncRand(&t->rng) % (uint64_t)c->nSlots)) % c->nSlots];
    if (s->busy || s->own[0].cap < 8192) continue;
    size_t off = (size_t)(ncRand(&t->rng) % (s->own[0].cap / 4096)) * 4096;
    size_t len = 1 + (size_t)(ncRand(&t->rng) % (s->own[0].cap - off));
    void* mh = NULL;
    if (s->own[0].gpu) { /* at any 64-byte offset: a dma-buf registration then starts inside its fd's pages */
      char d[96];
      dirName(t, c, d, sizeof(d));
      off += (size_t)(ncRand(&t->rng) % 64) * 64 % (s->own[0].cap - off);
      len = 1 + (size_t)(ncRand(&t->rng) % (s->own[0].cap - off));
      if (ncGpuReg(t->r, c->comm, d, s->own[0].base + off, len, &mh) == 0) ncGpuDereg(t->r, c->comm, d, mh);
      return;
    }
    ncclResult_t res = TIMED(t, c, "regMr", chrNetRegMr(t->r->net, c->comm, s->own[0].base + off, len, NCCL_PTR_HOST, &mh));
    ncCheck(NC_R_MR, res == ncclSuccess, "regMr of a %zu-byte sub-range returned %d: %s", len, (int)res, ncLastError());
    if (res == ncclSuccess) {
      res = TIMED(t, c, "deregMr", chrNetDeregMr(t->r->net, c->comm, mh));
      ncCheck(NC_R_MR, res == ncclSuccess, "deregMr of a sub-range returned %d: %s", (int)res, ncLastError());
    }
    return;
  }
}

static ncBuf* slotBuf(ncSlot* s, int k) { return s->useTmp ? &s->tmp[k] : &s->own[k]; }

/* Give the slot's buffer k room for `need` bytes at a 64-byte multiple offset; returns the data pointer. */
static char* slotBuffer(ncTraffic_t* t, ncConn* c, ncSlot* s, int k, size_t need, uint64_t salt, void** mh) {
  size_t off = (size_t)(salt % 4) * 64;
  ncBuf* b = slotBuf(s, k);
  if (s->useTmp) dropBuf(t, c, b); /* a fresh registration for this message */
  if (regBuf(t, c, b, need + off) != 0) return NULL;
  *mh = b->mh;
  return b->base + off;
}

/* netcheck's own copy to or from GPU memory failed: not the plugin's doing, but nothing of this
 * connection can be checked any more. */
static void copyFailed(ncTraffic_t* t, ncConn* c, const char* what) {
  char d[96];
  ncFail(NC_R_GPU_DATA, "%s: netcheck's copy %s GPU memory failed (not the plugin's fault): %s", dirName(t, c, d, sizeof(d)),
         what, ncGpuError());
  c->dead = 1;
}

/* ---------------------------------------------------------------- posting */

static int freeSlot(ncConn* c) {
  for (int i = 0; i < c->nSlots; i++)
    if (!c->slots[i].busy) return i;
  return -1;
}

static void noteRequest(ncTraffic_t* t, ncConn* c, ncSlot* s) {
  char d[96];
  for (int k = 0; k < t->nConns; k++) {
    ncConn* o = &t->conns[k];
    for (int i = 0; i < o->nSlots; i++) {
      ncSlot* x = &o->slots[i];
      if (x != s && x->posted && x->req == s->req) {
        ncFail(NC_R_REQ_UNIQUE, "%s: request %p was handed out while still in flight on %s comm %d", dirName(t, c, d, sizeof(d)),
               s->req, o->isSend ? "send" : "recv", o->index);
        return;
      }
    }
  }
  ncPass(NC_R_REQ_UNIQUE);
}

/* Post (or retry) the next send. Returns 1 if the plugin accepted it. */
static int postSend(ncTraffic_t* t, ncConn* c) {
  int si = c->pending >= 0 ? c->pending : freeSlot(c);
  if (si < 0) return 0;
  ncSlot* s = &c->slots[si];
  const ncGroup* g = &c->sched.groups[c->g];
  int bi = g->order[c->p];
  size_t size = g->sizes[bi];
  if (c->pending < 0 && c->inflight > 0 && c->inflightBytes + size > NC_INFLIGHT_BYTES) return 0;
  if (c->pending < 0) { /* a new message: fill its buffer */
    memset(s, 0, offsetof(ncSlot, own));
    s->busy = 1;
    s->id = c->next;
    s->useTmp = (c->next % 7) == 3;
    s->data[0] = slotBuffer(t, c, s, 0, size, c->next, &s->mh[0]);
    if (s->data[0] == NULL) return 0;
    uint64_t key = ncMsgKey(ncOpt.seed, c->fromRank, c->index, c->next);
    if (!slotBuf(s, 0)->gpu) {
      ncFill(s->data[0], size, key);
    } else { /* filled on the host, copied in */
      ncFill(t->scratch, size, key);
      if (ncGpuWrite(s->data[0], t->scratch, size) != 0) {
        copyFailed(t, c, "to");
        return 0;
      }
    }
    s->postSize[0] = size;
    s->tags[0] = g->tags[bi];
    s->bytes = size;
  }
  void* req = NULL;
  ncclResult_t res = TIMED(t, c, "isend",
                           chrNetIsend(t->r->net, c->comm, s->data[0], size, s->tags[0], s->mh[0], NULL, &req));
  if (res != ncclSuccess) {
    killConn(t, c, NC_R_CALL_RC, "isend");
    return 0;
  }
  ncPass(NC_R_CALL_RC);
  if (req == NULL) { /* "try again later": the same message goes first next time */
    c->pending = si;
    c->nullRetries++;
    return 0;
  }
  c->pending = -1;
  s->req = req;
  s->posted = 1;
  s->postedAt = ncNow();
  noteRequest(t, c, s);
  c->inflight++;
  c->inflightBytes += s->bytes;
  c->next++;
  if (++c->p == g->n) {
    c->p = 0;
    c->g++;
  }
  return 1;
}

static int postRecv(ncTraffic_t* t, ncConn* c) {
  int si = c->pending >= 0 ? c->pending : freeSlot(c);
  if (si < 0) return 0;
  ncSlot* s = &c->slots[si];
  const ncGroup* g = &c->sched.groups[c->next];
  size_t bytes = 0;
  for (int i = 0; i < g->n; i++) bytes += g->sizes[i] + g->extra[i];
  if (c->pending < 0 && c->inflight > 0 && c->inflightBytes + bytes > NC_INFLIGHT_BYTES) return 0;
  if (c->pending < 0) {
    memset(s, 0, offsetof(ncSlot, own));
    s->bytes = bytes;
    s->busy = 1;
    s->id = c->next;
    s->useTmp = (c->next % 7) == 5;
    for (int i = 0; i < g->n; i++) {
      size_t posted = g->sizes[i] + g->extra[i];
      s->data[i] = slotBuffer(t, c, s, i, posted + NC_GUARD, c->next * 8 + (uint64_t)i, &s->mh[i]);
      if (s->data[i] == NULL) return 0;
      if (!slotBuf(s, i)->gpu) {
        memset(s->data[i] + g->sizes[i], NC_GUARD_BYTE, posted + NC_GUARD - g->sizes[i]);
      } else if (ncGpuSet(s->data[i], NC_GUARD_BYTE, posted + NC_GUARD) != 0) {
        /* All of it: bytes a flush failed to deliver must not pass for an older message's. */
        copyFailed(t, c, "to");
        return 0;
      }
      s->postSize[i] = posted;
      s->tags[i] = g->tags[i];
    }
  }
  void* req = NULL;
  if (g->n == 1 && (ncRand(&c->rng) & 3) == 0) req = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION;
  ncclResult_t res = TIMED(t, c, "irecv",
                           chrNetIrecv(t->r->net, c->comm, g->n, (void**)s->data, s->postSize, s->tags, s->mh, NULL, &req));
  if (res != ncclSuccess) {
    killConn(t, c, NC_R_CALL_RC, "irecv");
    return 0;
  }
  ncPass(NC_R_CALL_RC);
  if (req == NULL) {
    c->pending = si;
    c->nullRetries++;
    return 0;
  }
  c->pending = -1;
  s->req = req;
  s->posted = 1;
  s->postedAt = ncNow();
  noteRequest(t, c, s);
  c->inflight++;
  c->inflightBytes += s->bytes;
  c->next++;
  return 1;
}

/* ---------------------------------------------------------------- checking completions */

/* Whose payload is this? Looks at messages near `msg` on every connection from the same rank. */
static int identify(ncTraffic_t* t, const char* data, size_t len, int fromRank, int* commOut, uint64_t* msgOut,
                    uint64_t msg) {
  size_t probe = len < 64 ? len : 64;
  if (probe < 8) return 0;
  for (int comm = 0; comm < ncOpt.comms; comm++) {
    uint64_t lo = msg > 64 ? msg - 64 : 0;
    for (uint64_t m = lo; m < msg + 64; m++) {
      if (comm == *commOut && m == msg) continue;
      if (ncVerify(data, probe, ncMsgKey(ncOpt.seed, fromRank, comm, m)) == probe) {
        *commOut = comm;
        *msgOut = m;
        return 1;
      }
    }
  }
  return 0;
}

static void checkSend(ncTraffic_t* t, ncConn* c, ncSlot* s, int reported, int sizesGiven) {
  char d[96];
  size_t size = s->postSize[0];
  if (sizesGiven && reported != -1)
    ncCheck(NC_R_TEST_SIZE, (size_t)reported == size, "%s: test() of the send of message %llu reported %d bytes, %zu were sent",
            dirName(t, c, d, sizeof(d)), (unsigned long long)s->id, reported, size);
  uint64_t key = ncMsgKey(ncOpt.seed, c->fromRank, c->index, s->id);
  const char* data = s->data[0];
  if (slotBuf(s, 0)->gpu) { /* read back what the plugin left in GPU memory */
    if (ncGpuRead(t->scratch, data, size) != 0) {
      copyFailed(t, c, "from");
      return;
    }
    data = t->scratch;
  }
  size_t head = size < 64 ? size : 64;
  size_t bad = ncVerify(data, head, key);
  if (bad == head && size > 64) {
    size_t tailOff = size - 64;
    for (size_t j = tailOff; j < size && bad == head; j++)
      if ((uint8_t)data[j] != ncPatternByte(key, j)) bad = j;
  }
  ncCheck(NC_R_DATA_SENDBUF, bad == head, "%s: the plugin changed byte %zu of the %zu-byte send buffer of message %llu",
          dirName(t, c, d, sizeof(d)), bad, size, (unsigned long long)s->id);
}

static void checkRecv(ncTraffic_t* t, ncConn* c, ncSlot* s, const int* sizes) {
  char d[96];
  dirName(t, c, d, sizeof(d));
  const ncGroup* g = &c->sched.groups[s->id];
  for (int i = 0; i < g->n; i++) {
    int p = 0;
    while (g->order[p] != i) p++;
    uint64_t msg = g->firstMsg + (uint64_t)p;
    size_t sent = g->sizes[i];
    const char* data = s->data[i];
    int gpu = slotBuf(s, i)->gpu, good = 1;
    if (gpu) { /* flushed (or failed to) by now: read back what GPU memory holds */
      if (ncGpuRead(t->scratch, data, s->postSize[i] + NC_GUARD) != 0) {
        copyFailed(t, c, "from");
        return;
      }
      data = t->scratch;
    }
    char where[160];
    if (g->n > 1) snprintf(where, sizeof(where), "receive of message %llu (group %llu, buffer %d of %d, tag %d, posted %zu)",
                           (unsigned long long)msg, (unsigned long long)s->id, i, g->n, g->tags[i], s->postSize[i]);
    else snprintf(where, sizeof(where), "receive of message %llu (posted %zu)", (unsigned long long)msg, s->postSize[i]);

    if (sizes[i] == -1) ncFail(NC_R_TEST_SIZE, "%s: %s: test() said done but reported no size", d, where);
    else ncCheck(NC_R_TEST_SIZE, (size_t)sizes[i] == sent, "%s: %s: test() reported %d bytes, the sender sent %zu", d,
                 where, sizes[i], sent);

    uint64_t key = ncMsgKey(ncOpt.seed, c->fromRank, c->index, msg);
    size_t bad = ncVerify(data, sent, key);
    if (bad == sent) {
      ncPass(NC_R_DATA_BYTES);
      ncPass(NC_R_DATA_ORDER);
      if (g->n > 1) ncPass(NC_R_GROUPED);
    } else {
      good = 0;
      int comm = c->index;
      uint64_t other = msg;
      if (identify(t, data, sent, c->fromRank, &comm, &other, msg)) {
        int inGroup = comm == c->index && other >= g->firstMsg && other < g->firstMsg + (uint64_t)g->n;
        if (inGroup)
          ncFail(NC_R_GROUPED, "%s: %s holds message %llu, sent with tag %d", d, where, (unsigned long long)other,
                 g->tags[g->order[other - g->firstMsg]]);
        else if (comm == c->index)
          ncFail(NC_R_DATA_ORDER, "%s: %s holds message %llu", d, where, (unsigned long long)other);
        else
          ncFail(NC_R_DATA_ORDER, "%s: %s holds message %llu of comm %d", d, where, (unsigned long long)other, comm);
      } else {
        size_t wrong = 0;
        for (size_t j = bad; j < sent; j++) wrong += (uint8_t)data[j] != ncPatternByte(key, j);
        ncFail(NC_R_DATA_BYTES, "%s: %s of %zu bytes: byte %zu is 0x%02x, expected 0x%02x (%zu bytes differ)", d, where,
               sent, bad, (uint8_t)data[bad], ncPatternByte(key, bad), wrong);
      }
    }
    size_t end = s->postSize[i] + NC_GUARD, firstBad = end;
    for (size_t j = sent; j < end; j++)
      if ((uint8_t)data[j] != NC_GUARD_BYTE) {
        firstBad = j;
        break;
      }
    ncCheck(NC_R_DATA_BOUNDS, firstBad == end, "%s: %s: byte %zu was written, %zu bytes were sent%s", d, where, firstBad,
            sent, firstBad >= s->postSize[i] ? " (past the posted buffer)" : "");
    good &= firstBad == end;
    /* A failed flush was named already; what it left behind says nothing more. */
    if (gpu && !s->flushFailed)
      ncCheck(NC_R_GPU_DATA, good, "%s: %s into GPU memory: wrong once %s (data.* says which bytes)", d, where,
              sent > 0 ? "its iflush completed" : "test() said done");
  }
}

/* A request is over: its slot is free again. */
static void finishSlot(ncTraffic_t* t, ncConn* c, ncSlot* s) {
  if (s->useTmp)
    for (int i = 0; i < NC_MAX_GROUP; i++) dropBuf(t, c, &s->tmp[i]);
  s->busy = 0;
  s->posted = 0;
  s->req = NULL;
  s->flushing = 0;
  s->flushReq = NULL;
  c->inflight--;
  c->inflightBytes -= s->bytes;
  c->completed++;
  ncPass(NC_R_PROGRESS);
}

static const char* flushWho(const ncTraffic_t* t, const ncConn* c, const ncSlot* s, char* buf, size_t len) {
  char d[96];
  snprintf(buf, len, "%s, receive %llu", dirName(t, c, d, sizeof(d)), (unsigned long long)s->id);
  return buf;
}

/* A receive completed with these sizes: flush it when all its buffers are GPU memory (as NCCL, which
 * flushes GPUDirect receives only). Returns 1 when the slot now waits for its flush. */
static int startFlush(ncTraffic_t* t, ncConn* c, ncSlot* s) {
  const ncGroup* g = &c->sched.groups[s->id];
  int gpuBufs = 0, sane = 1;
  for (int i = 0; i < g->n; i++) {
    gpuBufs += slotBuf(s, i)->gpu;
    sane &= s->got[i] >= 0; /* test.size has failed already: no size to flush */
  }
  if (gpuBufs < g->n || !sane) return 0;
  char who[160];
  int st = ncGpuFlushStart(t->r, c->comm, flushWho(t, c, s, who, sizeof(who)), g->n, (void**)s->data, s->got, s->mh,
                           &s->flushReq);
  s->flushFailed = st < 0;
  s->flushing = st == 1;
  s->req = NULL; /* the receive request is dead; the slot stays in flight for its flush */
  return s->flushing;
}

/* Test one in-flight request (or the flush of a completed receive); returns 1 on progress. */
static int testSlot(ncTraffic_t* t, ncConn* c, ncSlot* s) {
  if (s->flushing) {
    char who[160];
    int st = ncGpuFlushTest(t->r, flushWho(t, c, s, who, sizeof(who)), s->flushReq);
    if (st == 0) return 0;
    s->flushFailed = st < 0;
    checkRecv(t, c, s, s->got);
    finishSlot(t, c, s);
    return 1;
  }
  int sizes[NC_MAX_GROUP];
  for (int i = 0; i < NC_MAX_GROUP; i++) sizes[i] = -1;
  int sizesGiven = !(c->isSend && (ncRand(&c->rng) & 7) == 0);
  int done = 0;
  ncclResult_t res = TIMED(t, c, "test", chrNetTest(t->r->net, s->req, &done, sizesGiven ? sizes : NULL));
  if (res != ncclSuccess) {
    killConn(t, c, NC_R_CALL_RC, "test");
    return 0;
  }
  ncPass(NC_R_CALL_RC);
  char d[96];
  ncCheck(NC_R_TEST_DONE, done == 0 || done == 1, "%s: test() set done to %d", dirName(t, c, d, sizeof(d)), done);
  if (!done) return 0;
  if (c->isSend) {
    checkSend(t, c, s, sizes[0], sizesGiven);
  } else {
    memcpy(s->got, sizes, sizeof(s->got));
    if (startFlush(t, c, s)) return 1;
    checkRecv(t, c, s, s->got);
  }
  finishSlot(t, c, s);
  return 1;
}

/* ---------------------------------------------------------------- the loop */

static int connStep(ncTraffic_t* t, ncConn* c) {
  ncclNetDeviceHandle_v12_t* devHandle = NULL;
  ncclResult_t res;
  if (c->isSend) res = TIMED(t, c, "connect", chrNetConnect(t->r->net, ncOpt.dev, c->handle, &c->comm, &devHandle));
  else res = TIMED(t, c, "accept", chrNetAccept(t->r->net, c->listen, &c->comm, &devHandle));
  if (res != ncclSuccess) {
    killConn(t, c, NC_R_CONN_COMPLETE, c->isSend ? "connect" : "accept");
    return 0;
  }
  if (c->comm == NULL) return 0;
  c->up = 1;
  ncPass(NC_R_CONN_COMPLETE);
  if (!c->isSend && c->index % 2 == 0) { /* NCCL closes the listen comm right away; odd comms keep it */
    res = chrNetCloseListen(t->r->net, c->listen);
    ncCheck(NC_R_CLOSE, res == ncclSuccess, "closeListen returned %d: %s", (int)res, ncLastError());
    c->listen = NULL;
  }
  return 1;
}

static int finished(const ncConn* c) { return c->dead || (c->up && c->completed == c->total && c->inflight == 0); }

/* A hang with a flush in flight is the flush's: name it (once per connection). */
static int flushStuck(ncTraffic_t* t, ncConn* c) {
  for (int i = 0; i < c->nSlots; i++) {
    ncSlot* s = &c->slots[i];
    if (!s->flushing) continue;
    char who[160];
    ncFail(NC_R_GPU_FLUSH, "%s: its iflush request did not complete in %.0f s", flushWho(t, c, s, who, sizeof(who)),
           ncOpt.timeoutSec);
    return 1;
  }
  return 0;
}

static void reportHang(ncTraffic_t* t) {
  char d[96];
  int reported = 0;
  for (int k = 0; k < t->nConns; k++) {
    ncConn* c = &t->conns[k];
    if (finished(c)) continue;
    if (!c->up) {
      if (reported++ < 3) ncFail(NC_R_CONN_COMPLETE, "%s: %s still not complete after %.0f s", dirName(t, c, d, sizeof(d)),
                                 c->isSend ? "connect" : "accept", ncOpt.timeoutSec);
    } else if (flushStuck(t, c)) {
      reported++;
    } else if (reported++ < 3) {
      ncFail(NC_R_PROGRESS, "%s: nothing completed for %.0f s; %d requests in flight, %llu of %llu done, %s%llu NULL retries",
             dirName(t, c, d, sizeof(d)), ncOpt.timeoutSec, c->inflight, (unsigned long long)c->completed,
             (unsigned long long)c->total, c->pending >= 0 ? "a post waiting for retry, " : "",
             (unsigned long long)c->nullRetries);
    }
    c->dead = 1;
  }
}

static void* proxyMain(void* arg) {
  ncTraffic_t* t = arg;
  t->lastProgress = ncNow();
  unsigned idle = 0, round = 0;
  for (;;) {
    int progress = 0, open = 0;
    for (int k = 0; k < t->nConns; k++) {
      ncConn* c = &t->conns[k];
      if (finished(c)) continue;
      open++;
      if (!c->up) {
        progress |= connStep(t, c);
        continue;
      }
      int limit = c->isSend ? c->depth * t->r->maxGroup : c->depth;
      if (limit > c->nSlots) limit = c->nSlots;
      while (!c->dead && c->next < (c->isSend ? c->sched.nMsgs : (uint64_t)c->sched.nGroups) &&
             (c->pending >= 0 || c->inflight < limit)) {
        int ok = c->isSend ? postSend(t, c) : postRecv(t, c);
        if (!ok) break;
        progress = 1;
      }
      /* Test everything in flight, in a random order. */
      int order[NC_MAX_SLOTS], n = 0;
      for (int i = 0; i < c->nSlots; i++)
        if (c->slots[i].posted) order[n++] = i;
      for (int i = n - 1; i > 0; i--) {
        int j = (int)(ncRand(&t->rng) % (uint64_t)(i + 1));
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
      }
      for (int i = 0; i < n && !c->dead; i++) progress |= testSlot(t, c, &c->slots[order[i]]);
      if ((++round & 63) == 0 && !c->dead) churn(t, c);
    }
    if (open == 0) break;
    double now = ncNow();
    if (progress) {
      t->lastProgress = now;
      idle = 0;
      continue;
    }
    if (now - t->lastProgress > ncOpt.timeoutSec) {
      reportHang(t);
      break;
    }
    if (++idle < 200) sched_yield();
    else usleep(50);
  }
  return NULL;
}

static int depthOf(int index) {
  if (index == 1) return NC_MAX_DEPTH;
  if (index == 2) return 1;
  return ncOpt.depth;
}

void ncTraffic(ncRank* r) {
  ncTraffic_t* t = calloc(1, sizeof(*t));
  if (t == NULL) return;
  t->r = r;
  t->rng = ncOpt.seed ^ (0x1234567ULL * (uint64_t)(r->rank + 1));
  int K = ncOpt.comms;
  void* listens[NC_MAX_COMMS];
  char mine[NC_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE], theirs[NC_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
  if (ncExchangeHandles(r, K, listens, mine, theirs) != 0) {
    free(t);
    return;
  }
  for (int k = 0; k < 2 * K; k++) {
    ncConn* c = &t->conns[t->nConns++];
    c->isSend = k < K;
    c->index = k % K;
    c->fromRank = c->isSend ? r->rank : 1 - r->rank;
    c->depth = depthOf(c->index);
    c->pending = -1;
    c->gpu = r->gpu.on;
    c->rng = ncOpt.seed + (uint64_t)k * 7919;
    if (c->isSend) memcpy(c->handle, theirs[c->index], NCCL_NET_HANDLE_MAXSIZE);
    else c->listen = listens[c->index];
    uint64_t schedSeed = ncOpt.seed ^ (0xabcdef12345ULL * (uint64_t)(c->fromRank + 1)) ^ ((uint64_t)c->index << 32);
    if (ncScheduleBuild(&c->sched, schedSeed, r->maxGroup, ncOpt.scale, c->fromRank) != 0) {
      c->dead = 1;
      continue;
    }
    c->total = c->isSend ? c->sched.nMsgs : (uint64_t)c->sched.nGroups;
    c->nSlots = c->isSend ? c->depth * r->maxGroup : c->depth;
    if (c->nSlots > NC_MAX_SLOTS) c->nSlots = NC_MAX_SLOTS;
    c->slots = calloc((size_t)c->nSlots, sizeof(ncSlot));
    if (c->slots == NULL) c->dead = 1;
    if (c->sched.maxPosted + NC_GUARD > t->scratchLen) t->scratchLen = c->sched.maxPosted + NC_GUARD;
  }
  if (r->gpu.on && (t->scratch = malloc(t->scratchLen)) == NULL) {
    ncFail(NC_R_GPU_DATA, "rank %d: no host memory for a %zu-byte copy of a GPU buffer", r->rank, t->scratchLen);
    for (int k = 0; k < t->nConns; k++) t->conns[k].gpu = 0;
  }
  if (r->maxGroup < 2) ncSkip(NC_R_GROUPED, "the plugin reports maxRecvs = 1");

  /* The data path runs on its own thread, not the one that loaded the plugin and listened. */
  pthread_t proxy;
  if (pthread_create(&proxy, NULL, proxyMain, t) != 0) proxyMain(t);
  else pthread_join(proxy, NULL);

  if (r->rank == 0) {
    uint64_t msgs = 0, bytes = 0, retries = 0, groups = 0;
    for (int k = 0; k < t->nConns; k++) {
      ncConn* c = &t->conns[k];
      retries += c->nullRetries;
      if (c->isSend || c->sched.groups == NULL) continue;
      msgs += c->sched.nMsgs;
      bytes += c->sched.bytes;
      for (int g = 0; g < c->sched.nGroups; g++) groups += c->sched.groups[g].n > 1;
    }
    printf("checked traffic: %d comms each way, %llu messages (%llu grouped receives) and %.1f MiB into rank 0, "
           "%llu NULL requests retried\n",
           K, (unsigned long long)msgs, (unsigned long long)groups, (double)bytes / (1 << 20), (unsigned long long)retries);
    ncGpuReport(r, stdout);
    fflush(stdout);
  }

  /* Both ranks are done (or gave up) before anything is closed: a send that completed may still be
   * on its way to a receiver that is alive. */
  if (ncOobBarrier(r->oob, ncOpt.timeoutSec * 4 + 60) != 0)
    ncFail(NC_R_PEER, "rank %d: the other rank did not finish the traffic phase", r->rank);
  /* As NCCL tears down: deregister, close; memory an abandoned request may still use is freed last. */
  for (int k = 0; k < t->nConns; k++) {
    ncConn* c = &t->conns[k];
    for (int i = 0; i < c->nSlots; i++)
      for (int b = 0; b < NC_MAX_GROUP; b++) {
        deregBuf(t, c, &c->slots[i].own[b]);
        deregBuf(t, c, &c->slots[i].tmp[b]);
      }
    ncclResult_t res = ncclSuccess;
    if (c->comm) res = c->isSend ? chrNetCloseSend(r->net, c->comm) : chrNetCloseRecv(r->net, c->comm);
    ncCheck(NC_R_CLOSE, res == ncclSuccess, "%s returned %d: %s", c->isSend ? "closeSend" : "closeRecv", (int)res, ncLastError());
    if (c->listen) {
      res = chrNetCloseListen(r->net, c->listen);
      ncCheck(NC_R_CLOSE, res == ncclSuccess, "closeListen returned %d: %s", (int)res, ncLastError());
    }
    for (int i = 0; i < c->nSlots; i++)
      for (int b = 0; b < NC_MAX_GROUP; b++) {
        freeMem(&c->slots[i].own[b]);
        freeMem(&c->slots[i].tmp[b]);
      }
    free(c->slots);
    ncScheduleFree(&c->sched);
  }
  free(t->scratch);
  free(t);
}
