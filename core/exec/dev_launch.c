/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_launch.c: a comm's launches for a group's planned GPU tasks, made whole here (dev_launch.h);
 * the device library checks and queues them as they are.
 *
 * Two launches: the collectives' works, channel by channel in call order, then the sends and
 * receives (lane k's sends on channel 2k, its receives on 2k + 1). Every rank cuts the collectives
 * into kernels at the same places, and a rank's sends and receives always share a kernel. A device
 * channel runs its works strictly in order, so point-to-point works go in rounds: in round d rank r
 * sends to r + d and receives from r - d, each send meeting its receive in the same round whatever
 * order the user gave; a rank's copies to itself go first on their channel.
 *
 * Copy-engine works (CHR_WORK_ENGINE: sends of CHORUS_GPU_CE_MIN_BYTES, 2-rank broadcasts, the
 * gather half of 2-rank all-reduces, large copies to itself) leave the kernels: transfers to other
 * ranks go to the point-to-point launch's ceSends, the collectives' (class 1: broadcasts and
 * all-reduces) first, then the sends' (class 0), each in call order, because the device library
 * pairs the k-th send from A to B with the k-th receive at B from A of the same class; NCCL does not
 * order a rank's collectives against its sends across groups. Both ends decide from the bytes alone,
 * never under graph capture, whose replays would skip the mailbox's rendezvous. docs/design.md ("GPU
 * buffers: ranks of one process on one GPU", Launch and Engine sends) has the rest.
 */
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/dev_state.h"
#include "exec/dev_launch.h"
#include "hostdev/algo_ids.h" /* CHR_PROTO_* */
#include "log/check.h"
#include "log/log.h"

/* A work on its way into a launch, with what orders it: its channel, its round (ring distance to
 * the peer in the direction of the transfer; -1 a rank's copy to itself; -3 and -2 the copy-engine
 * transfers of collectives and of sends, which sort those classes apart), its call order and its
 * place among the works of one call. Sorted so, every list is in the order the launch runs. */
struct entry {
  int channel, delta, order, idx;
  struct chrWork work;
};

struct entries {
  struct entry* at;
  int n, cap;
};

static int byChannelRound(const void* a, const void* b) {
  const struct entry* x = a;
  const struct entry* y = b;
  if (x->channel != y->channel) return x->channel < y->channel ? -1 : 1;
  if (x->delta != y->delta) return x->delta < y->delta ? -1 : 1;
  if (x->order != y->order) return x->order < y->order ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The usual launch (one call, its channels ascending) is made in order: no sort then. */
static int inOrder(const struct entries* l) {
  for (int i = 1; i < l->n; i++)
    if (byChannelRound(&l->at[i - 1], &l->at[i]) > 0) return 0;
  return 1;
}

static ncclResult_t add(struct entries* l, int channel, int delta, int order, int idx, const struct chrWork* w) {
  if (channel < 0 || channel >= CHR_DEV_MAX_CHANNELS)
    return chrFail(ncclInternalError, "a work on channel %d (at most %d)", channel, CHR_DEV_MAX_CHANNELS);
  if (l->n == l->cap) {
    const int cap = l->cap ? 2 * l->cap : 16;
    struct entry* grown = realloc(l->at, sizeof(*grown) * (size_t)cap);
    if (grown == NULL) return chrFail(ncclSystemError, "out of memory for a launch of %d works", cap);
    l->at = grown;
    l->cap = cap;
  }
  l->at[l->n++] = (struct entry){.channel = channel, .delta = delta, .order = order, .idx = idx, .work = *w};
  return ncclSuccess;
}

/* Works of a task that have something to do (empty channels of a small collective are left out; every
 * rank leaves out the same ones). */
static int workRuns(const struct chrWork* w) { return w->pattern != CHR_PAT_NONE && w->len > 0; }

static int isP2pTask(const struct chrCollTask* t) { return t->func == ncclFuncSend || t->func == ncclFuncRecv; }

/* The first work of a task that has something to do; NULL when none does. */
static const struct chrWork* firstRun(const struct chrCollTask* t) {
  for (int c = 0; c < t->nChannels; c++)
    if (workRuns(&t->works[c])) return &t->works[c];
  return NULL;
}

/* A task that moves its whole buffer in one engine work instead of lane or ring works (header
 * comment): ceMin bytes or more (CHORUS_GPU_CE_MIN_BYTES; 0: never), outside graph capture. A task
 * that moves nothing never gets here (no-op). */
static int engineSized(const struct chrCollTask* t, uint64_t ceMin, int capturing) {
  return ceMin > 0 && !capturing && !t->noop && t->count > 0 && (uint64_t)t->count * (uint64_t)t->typeSize >= ceMin &&
         firstRun(t) != NULL;
}

/* A send to another rank or a receive from one as one engine work. A rank's send to itself keeps
 * the self-copy pairing below. */
static int isEngineP2p(const struct chrCollTask* t, const struct ncclComm* comm, uint64_t ceMin, int capturing) {
  return isP2pTask(t) && t->root != comm->rank && engineSized(t, ceMin, capturing);
}

/* A broadcast of two ranks as one engine transfer from the root to the other rank (and, at the root,
 * an engine copy of its own buffer when the call is out of place): it contributes nothing to the
 * collectives' launch. */
static int isEngineBcast(const struct chrCollTask* t, const struct ncclComm* comm, uint64_t ceMin, int capturing) {
  return t->func == ncclFuncBroadcast && comm->nRanks == 2 && t->onDevice && engineSized(t, ceMin, capturing);
}

/* A 2-rank all-reduce as a reduce-scatter on the kernels and the reduced halves crossing on the copy
 * engine (header comment): arMin bytes or more (CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES; 0: never), an
 * even count (two equal halves), outside graph capture, and planned as SIMPLE ring works (not the
 * pair exchange, LL or the tree), whose links, step and reduction the reduce-scatter keeps. */
static int isEngineAllReduce(const struct chrCollTask* t, const struct ncclComm* comm, uint64_t arMin, int capturing) {
  if (t->func != ncclFuncAllReduce || comm->nRanks != 2 || !t->onDevice || t->noop || arMin == 0 || capturing) return 0;
  if (t->count == 0 || t->count % 2 != 0 || (uint64_t)t->count * (uint64_t)t->typeSize < arMin) return 0;
  if (t->algo != CHR_ALGO_RING || t->proto != CHR_PROTO_SIMPLE || t->pairExchange || t->works == NULL) return 0;
  for (int c = 0; c < t->nChannels; c++)
    if (t->works[c].pattern != CHR_PAT_RING_ALLREDUCE) return 0;
  return firstRun(t) != NULL;
}

/* An engine work: `count` elements of t's type in one piece (the whole buffer buf), sent to `peer`
 * (isSend) from buf or received from it into buf, as a send or receive (pattern and func) whatever
 * t's function, and as one: it only copies (Sum, no scalar). Its one link names the peer, the
 * direction and the transfer class (the device library matches transfers per peer, direction and
 * class) and no connection: the bytes go from buffer to buffer, through no slot, so a step is the
 * whole buffer. */
static struct chrWork engineP2pWork(const struct chrCollTask* t, int peer, int isSend, const void* buf, uint64_t count,
                                    int cls) {
  struct chrWork w = *firstRun(t);
  w.pattern = (uint8_t)(isSend ? CHR_PAT_P2P_SEND : CHR_PAT_P2P_RECV);
  w.func = (uint8_t)(isSend ? ncclFuncSend : ncclFuncRecv);
  w.flags = CHR_WORK_ENGINE;
  w.op = chrRedSum;
  w.opArg = 0;
  w.proto = CHR_PROTO_SIMPLE;
  w.dist = 0;
  w.call = 0;
  w.nLinks = 1;
  memset(w.links, 0, sizeof(w.links));
  w.links[0] = (struct chrWorkLink){.peer = peer, .isSend = (uint8_t)isSend, .p2p = 1, .conn = (uint8_t)cls};
  w.start = 0;
  w.len = w.count = count;
  w.chunkElems = w.len;
  w.typeSize = (uint8_t)t->typeSize;
  w.sendbuff = isSend ? (uint64_t)(uintptr_t)buf : 0;
  w.recvbuff = isSend ? 0 : (uint64_t)(uintptr_t)buf;
  return w;
}

/* A rank's sends to itself and receives from itself, the k-th of one with the k-th of the other (as
 * NCCL matches them), when their bytes agree: such a pair becomes local copies (selfCopies) instead
 * of a transfer through the lanes, where it would run on the same CTAs as the transfers to the
 * peers, before them (round 0), so that the two were serial (all-to-all on 2 GPUs: 0.6 of NCCL). */
static int selfTask(const struct chrCollTask* t, const struct ncclComm* comm, ncclFunc_t func) {
  return t->comm == comm && !t->noop && t->func == func && t->root == comm->rank;
}

/* Sets selfPair on the comm's tasks; every one is overwritten, so none keeps an earlier launch's pair. */
static void pairSelfTasks(const struct ncclComm* comm, struct chrCollTask* list) {
  for (struct chrCollTask* t = list; t; t = t->next)
    if (t->comm == comm) t->selfPair = NULL;
  if (!chrParamInt(CHR_P_GPU_SELF_COPY)) return;
  struct chrCollTask *s = list, *r = list;
  for (;;) {
    while (s && !selfTask(s, comm, ncclFuncSend)) s = s->next;
    while (r && !selfTask(r, comm, ncclFuncRecv)) r = r->next;
    if (!s || !r) break;
    if (s->count * s->typeSize == r->count * r->typeSize && s->nChannels == r->nChannels) {
      s->selfPair = r;
      r->selfPair = s;
    }
    s = s->next;
    r = r->next;
  }
}

/* A paired receive: its send does the copies. */
static int isPairedRecv(const struct chrCollTask* t) { return t->selfPair && t->func == ncclFuncRecv; }

/* Lane c of a paired send as up to two local copies, half on the lane's send channel and half on
 * its receive channel, so that both of the lane's CTAs copy. A pair of at least `engineMin` bytes
 * (CHORUS_GPU_SELF_COPY_ENGINE; 0: never) is instead one copy of the whole buffer, on lane 0's send
 * channel, flagged for the device launcher to run as a separate copy beside the kernel: on the CTAs
 * it came before the peers' transfers, so the two took turns (all-to-all on 2 GPUs: half the bytes
 * are the rank's own). None in place. Returns how many (0-2) went to out. */
static int selfCopies(const struct chrCollTask* send, const struct chrCollTask* recv, int c, uint64_t engineMin,
                      struct chrWork* out, int* channels) {
  if (send->sendbuff == recv->recvbuff) return 0; /* in place: the bytes are already there */
  const struct chrWork* w = &send->works[c];
  const uint64_t ts = (uint64_t)w->typeSize;
  const int engine = engineMin > 0 && (uint64_t)send->count * ts >= engineMin;
  if (engine && c > 0) return 0;
  const uint64_t start = engine ? 0 : w->start, len = engine ? (uint64_t)send->count : w->len;
  const uint64_t align = chrAlignElems(w->typeSize);
  uint64_t first = engine ? len : chrRoundUp(chrDivUp(len, 2), align); /* the second half starts aligned */
  if (first > len) first = len;
  const uint64_t part[2] = {first, len - first};
  int k = 0;
  for (int h = 0; h < 2; h++) {
    if (part[h] == 0) continue;
    struct chrWork* l = &out[k];
    *l = *w;
    l->pattern = CHR_PAT_LOCAL;
    l->proto = CHR_PROTO_SIMPLE; /* one step, copied by the whole CTA */
    l->flags = (uint8_t)(engine ? CHR_WORK_ENGINE : 0);
    l->nLinks = 0;
    memset(l->links, 0, sizeof(l->links));
    const uint64_t off = (start + (h ? first : 0)) * ts;
    l->sendbuff = (uint64_t)(uintptr_t)send->sendbuff + off;
    l->recvbuff = (uint64_t)(uintptr_t)recv->recvbuff + off;
    l->start = 0;
    l->len = part[h];
    channels[k] = chrDevTaskChannel(send, c) + h;
    k++;
  }
  return k;
}

/* The engine works of a broadcast of two ranks (isEngineBcast), to out (2 at most; returns how
 * many): at the root a send of its buffer to the other rank and, out of place, one engine copy of
 * the whole buffer to its own output (selfCopies' engine copy, flagged as a rank's copy to itself,
 * the only local work a launch of several ranks takes); at the other rank the receive. Class
 * CHR_WORK_CLASS_COLL: numbered apart from the point-to-point calls' transfers. */
static int engineBcastWorks(const struct chrCollTask* t, const struct ncclComm* comm, struct chrWork* out) {
  if (t->root != comm->rank) {
    out[0] = engineP2pWork(t, t->root, 0, t->recvbuff, t->count, CHR_WORK_CLASS_COLL);
    return 1;
  }
  out[0] = engineP2pWork(t, 1 - comm->rank, 1, t->sendbuff, t->count, CHR_WORK_CLASS_COLL);
  if (t->sendbuff == t->recvbuff) return 1;
  int channel;
  const int k = selfCopies(t, t, 0, 1, &out[1], &channel); /* engineMin 1 byte: the whole buffer at once */
  if (k == 1) out[1].func = ncclFuncSend;
  return 1 + k;
}

/* The works of an engine all-reduce (isEngineAllReduce) of rank r with peer p = 1 - r, halves of
 * half = count / 2 elements. rs[c] (t->nChannels of them): channel c's work of a reduce-scatter of
 * recvcount half, as plan/works.c makes one from the all-reduce's (same links, reduction, step, ring
 * position): input the whole sendbuff (block b at b * half), output block r of recvbuff (in place,
 * NCCL's in-place reduce-scatter layout), its share of the half by chrChannelRange; one of len 0 is
 * left out. out[0], out[1]: the send of block r of recvbuff to p and the receive of block p from p,
 * class CHR_WORK_CLASS_COLL (numbered with the broadcasts' transfers). Returns 2 (out's works). */
static int engineAllReduceWorks(const struct chrCollTask* t, const struct ncclComm* comm, struct chrWork* rs,
                                struct chrWork* out) {
  const int r = comm->rank, p = 1 - r;
  const uint64_t half = (uint64_t)t->count / 2, ts = (uint64_t)t->typeSize;
  char* recv = (char*)t->recvbuff;
  for (int c = 0; c < t->nChannels; c++) {
    struct chrWork* w = &rs[c];
    *w = t->works[c];
    w->pattern = CHR_PAT_RING_REDUCESCATTER;
    w->func = ncclFuncReduceScatter;
    w->count = half;
    w->recvbuff = (uint64_t)(uintptr_t)(recv + (uint64_t)r * half * ts);
    chrChannelRange(half, t->nChannels, c, chrAlignElems(t->typeSize), &w->start, &w->len);
  }
  out[0] = engineP2pWork(t, p, 1, recv + (uint64_t)r * half * ts, half, CHR_WORK_CLASS_COLL);
  out[1] = engineP2pWork(t, p, 0, recv + (uint64_t)p * half * ts, half, CHR_WORK_CLASS_COLL);
  return 2;
}


/* What a task becomes in a launch, decided once from its bytes and the copy-engine floors. */
enum role { ROLE_KERNEL, ROLE_ENGINE_BCAST, ROLE_ENGINE_ALLREDUCE, ROLE_ENGINE_P2P };

struct floors {
  uint64_t selfCopy; /* CHORUS_GPU_SELF_COPY_ENGINE */
  uint64_t p2p;      /* CHORUS_GPU_CE_MIN_BYTES, 0 where the comm has no copy engine */
  uint64_t bcast;    /* CHORUS_GPU_CE_BCAST_MIN_BYTES, or p2p's */
  uint64_t allReduce; /* CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES */
  int capturing;
};

static enum role roleOf(const struct chrCollTask* t, const struct ncclComm* comm, const struct floors* f) {
  if (isEngineAllReduce(t, comm, f->allReduce, f->capturing)) return ROLE_ENGINE_ALLREDUCE;
  if (isEngineBcast(t, comm, f->bcast, f->capturing)) return ROLE_ENGINE_BCAST;
  if (isEngineP2p(t, comm, f->p2p, f->capturing)) return ROLE_ENGINE_P2P;
  return ROLE_KERNEL;
}

/* A copy-engine work of a launch: a copy to itself to `copies`, a transfer to `ce`. */
static ncclResult_t addEngine(struct entries* copies, struct entries* ce, int delta, int order, int idx,
                              const struct chrWork* w) {
  return add(chrWorkIsTransfer(w) ? ce : copies, 0, delta, order, idx, w);
}

/* One task's works into the lists: the collectives' launch (coll) or the point-to-point launch
 * (kernel works p2p, copy-engine works copies and ce). seq: the task's place in the group; *call:
 * the next collective call's number (the launcher cuts kernels between calls). */
static ncclResult_t addTask(struct chrCollTask* t, const struct ncclComm* comm, const struct floors* f, int seq,
                            int* call, struct entries* coll, struct entries* p2p, struct entries* copies,
                            struct entries* ce) {
  struct chrWork engine[2], rs[CHR_DEV_MAX_CHANNELS], self[2];
  int selfChannels[2];
  switch (roleOf(t, comm, f)) {
    case ROLE_ENGINE_BCAST: { /* no collective work and no call number: both ranks leave out the same calls */
      const int n = engineBcastWorks(t, comm, engine);
      for (int i = 0; i < n; i++) CHECK(addEngine(copies, ce, -3, seq, i, &engine[i]));
      return ncclSuccess;
    }
    case ROLE_ENGINE_ALLREDUCE: { /* the reduce-scatter at the call's place; the halves cross after it */
      const int n = engineAllReduceWorks(t, comm, rs, engine);
      for (int c = 0; c < t->nChannels; c++) {
        if (!workRuns(&rs[c])) continue;
        rs[c].call = *call;
        CHECK(add(coll, chrDevTaskChannel(t, c), 0, *call, c, &rs[c]));
      }
      (*call)++;
      for (int i = 0; i < n; i++) CHECK(addEngine(copies, ce, -3, seq, i, &engine[i]));
      return ncclSuccess;
    }
    case ROLE_ENGINE_P2P: {
      const int isSend = t->func == ncclFuncSend;
      engine[0] = engineP2pWork(t, t->root, isSend, isSend ? t->sendbuff : t->recvbuff, t->count, CHR_WORK_CLASS_P2P);
      return addEngine(copies, ce, -2, seq, 0, &engine[0]);
    }
    case ROLE_KERNEL: break;
  }
  if (!isP2pTask(t)) {
    for (int c = 0; c < t->nChannels; c++) {
      if (!workRuns(&t->works[c])) continue;
      struct chrWork w = t->works[c];
      w.call = *call;
      CHECK(add(coll, chrDevTaskChannel(t, c), 0, *call, c, &w));
    }
    (*call)++;
    return ncclSuccess;
  }
  const int n = comm->nRanks;
  for (int c = 0; c < t->nChannels; c++) {
    if (!workRuns(&t->works[c])) continue;
    if (t->selfPair) { /* a paired send: the copies, before the channel's transfers */
      const int k = selfCopies(t, t->selfPair, c, f->selfCopy, self, selfChannels);
      for (int i = 0; i < k; i++)
        if (self[i].flags & CHR_WORK_ENGINE) CHECK(add(copies, selfChannels[i], -1, seq, 2 * c + i, &self[i]));
        else CHECK(add(p2p, selfChannels[i], -1, seq, 2 * c + i, &self[i]));
      continue;
    }
    const int delta = t->func == ncclFuncSend ? (t->root - comm->rank + n) % n : (comm->rank - t->root + n) % n;
    CHECK(add(p2p, chrDevTaskChannel(t, c), delta, seq, c, &t->works[c]));
  }
  return ncclSuccess;
}

/* A launch from its lists, sorted, in one allocation (*mem, freed by chrDevFreeLaunch). On each
 * channel the works the launcher cuts by call come first: collectives, or a rank's copies to itself
 * (round -1, ahead of every transfer). */
static ncclResult_t finish(struct entries* kernel, struct entries* copies, struct entries* ce, int capturing,
                           struct chrDevLaunch* out, struct chrWork** mem) {
  struct entries* lists[3] = {kernel, copies, ce};
  int total = 0;
  for (int i = 0; i < 3; i++) {
    if (!inOrder(lists[i])) qsort(lists[i]->at, (size_t)lists[i]->n, sizeof(struct entry), byChannelRound);
    total += lists[i]->n;
  }
  memset(out, 0, sizeof(*out));
  out->capturing = capturing;
  if (total == 0) return ncclSuccess;
  struct chrWork* w = malloc(sizeof(struct chrWork) * (size_t)total);
  if (w == NULL) return chrFail(ncclSystemError, "out of memory for a launch of %d works", total);
  *mem = w;
  for (int i = 0; i < total; i++) {
    const struct entry* e = i < kernel->n ? &kernel->at[i]
                            : i < kernel->n + copies->n ? &copies->at[i - kernel->n]
                                                        : &ce->at[i - kernel->n - copies->n];
    w[i] = e->work;
    if (i >= kernel->n) continue;
    const int ch = e->channel;
    if (chrWorkIsTransfer(&e->work) == 0 && out->nCut[ch] != out->nWorks[ch])
      return chrFail(ncclInternalError, "channel %d: a work of pattern %d after the channel's transfers", ch,
                     e->work.pattern);
    out->nCut[ch] += !chrWorkIsTransfer(&e->work);
    out->nWorks[ch]++;
    if (ch + 1 > out->nChannels) out->nChannels = ch + 1;
  }
  out->works = w;
  out->copies = w + kernel->n;
  out->nCopies = copies->n;
  out->ceSends = w + kernel->n + copies->n;
  out->nCeSends = ce->n;
  return ncclSuccess;
}

ncclResult_t chrDevBuildLaunch(struct ncclComm* comm, struct chrCollTask* list, int capturing, struct chrDevLaunchPlan* p) {
  memset(p, 0, sizeof(*p));
  pairSelfTasks(comm, list);
  const uint64_t ceOn = chrDevCommEngineAllowed(comm) ? 1 : 0;
  const uint64_t ceBcastOwn = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_BCAST_MIN_BYTES);
  struct floors f = {.selfCopy = (uint64_t)chrParamInt(CHR_P_GPU_SELF_COPY_ENGINE),
                     .p2p = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_MIN_BYTES),
                     .allReduce = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_ALLREDUCE_MIN_BYTES),
                     .capturing = capturing};
  f.bcast = ceBcastOwn > 0 ? ceBcastOwn : f.p2p;
  struct entries coll = {0}, none = {0}, p2p = {0}, copies = {0}, ce = {0};
  ncclResult_t res = ncclSuccess;
  int seq = 0, call = 0;
  for (struct chrCollTask* t = list; t && res == ncclSuccess; t = t->next, seq++)
    if (t->comm == comm && !t->noop && !isPairedRecv(t))
      res = addTask(t, comm, &f, seq, &call, &coll, &p2p, &copies, &ce);
  if (res == ncclSuccess) res = finish(&coll, &none, &none, capturing, &p->coll, &p->mem[0]);
  if (res == ncclSuccess) res = finish(&p2p, &copies, &ce, capturing, &p->p2p, &p->mem[1]);
  free(coll.at);
  free(p2p.at);
  free(copies.at);
  free(ce.at);
  if (res != ncclSuccess) chrDevFreeLaunch(p);
  return res;
}

void chrDevFreeLaunch(struct chrDevLaunchPlan* p) {
  free(p->mem[0]);
  free(p->mem[1]);
  memset(p, 0, sizeof(*p));
}
