/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_exec.c: launching device tasks (dev_exec.h).
 *
 * Per comm and group, two launches: the collectives' works, channel by channel in call order, then
 * the sends and receives (lane k's sends on channel 2k, its receives on 2k + 1). Every rank cuts the
 * collectives into kernels at the same places, and a rank's sends and receives always share a
 * kernel. A device channel runs its works strictly in order, so point-to-point works go in rounds:
 * in round d rank r sends to r + d and receives from r - d, each send meeting its receive in the
 * same round whatever order the user gave.
 *
 * Engine works (CHR_WORK_ENGINE: sends of CHORUS_GPU_CE_MIN_BYTES, 2-rank broadcasts, the gather
 * half of 2-rank all-reduces) go first on channel 0 of the point-to-point launch, in call order,
 * because the device library pairs the k-th send from A to B with the k-th receive at B from A of
 * the same class. Broadcasts and all-reduces are class 1, sends class 0: NCCL does not order a
 * rank's collectives against its sends across groups. Both ends decide from the bytes alone; never
 * under graph capture, whose replays would skip the mailbox's rendezvous.
 *
 * Streams: the launch goes to the first task's stream, the group's other streams joined before and
 * after; outside graph capture a rank first waits for its previous launch, so its kernels never run
 * side by side. docs/design.md ("GPU buffers: ranks of one process on one GPU", Launch and Engine
 * sends) has the rest.
 */
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/dev_state.h"
#include "cuda/device_lib.h"
#include "exec/dev_exec.h"
#include "hostdev/algo_ids.h" /* CHR_PROTO_* */
#include "profile/profile.h"
#include "log/check.h"
#include "log/log.h"

static int movesNoBytes(const struct chrCollTask* t) { return t->count == 0; }

static int commHas(struct chrCollTask* list, const struct ncclComm* comm, int device) {
  for (struct chrCollTask* t = list; t; t = t->next)
    if (t->comm == comm && !movesNoBytes(t) && (t->onDevice != 0) == device) return 1;
  return 0;
}

ncclResult_t chrDevPartition(struct chrCollTask** list, struct chrCollTask** devTasks) {
  *devTasks = NULL;
  int anyDevice = 0;
  for (struct chrCollTask* t = *list; t; t = t->next) anyDevice |= t->onDevice;
  int anyAttached = 0;
  for (struct chrCollTask* t = *list; t && !anyDevice && !anyAttached; t = t->next) anyAttached |= t->comm->dev != NULL;
  if (!anyDevice && !anyAttached) return ncclSuccess; /* host only: the list stays as it is */
  for (struct chrCollTask* t = *list; t; t = t->next) {
    if (!t->onDevice) continue;
    if (commHas(*list, t->comm, 0))
      return chrFail(ncclInvalidUsage, "comm %p rank %d: one group holds calls on host buffers and on GPU buffers "
                     "(not supported: issue them in separate groups)", (void*)t->comm, t->comm->rank);
  }
  for (struct chrCollTask* t = *list; t; t = t->next)
    if (!t->onDevice && movesNoBytes(t))
      t->noop = commHas(*list, t->comm, 1) || (t->comm->dev != NULL && !commHas(*list, t->comm, 0));
  struct chrCollTask *hostHead = NULL, *hostTail = NULL, *devHead = NULL, *devTail = NULL;
  for (struct chrCollTask* t = *list; t;) {
    struct chrCollTask* next = t->next;
    t->next = NULL;
    if (t->onDevice || t->noop) {
      if (devTail) devTail->next = t;
      else devHead = t;
      devTail = t;
    } else {
      if (hostTail) hostTail->next = t;
      else hostHead = t;
      hostTail = t;
    }
    t = next;
  }
  if (hostTail) hostTail->next = devHead;
  *list = hostHead ? hostHead : devHead;
  *devTasks = devHead;
  return ncclSuccess;
}

/* A point-to-point work in a launch: its channel (lane k: sends on 2k, receives on 2k + 1), round
 * (the ring distance to the peer, counted in the direction of the transfer; -1 for a rank's copy
 * to itself, -2 for an engine send or receive, -3 for the engine works of a broadcast or of an
 * all-reduce), call order, and its place among the works of one call (idx: the order they were made
 * in). */
struct p2pEntry {
  int channel, delta, order, idx;
  struct chrWork work;
};

/* Channel by channel, and within a channel by round: in round d every rank sends to rank + d and
 * receives from rank - d, so the ends of every connection meet in the same order on both sides. */
static int byChannelRound(const void* a, const void* b) {
  const struct p2pEntry* x = a;
  const struct p2pEntry* y = b;
  if (x->channel != y->channel) return x->channel < y->channel ? -1 : 1;
  if (x->delta != y->delta) return x->delta < y->delta ? -1 : 1;
  if (x->order != y->order) return x->order < y->order ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
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

ncclResult_t chrDevBuildLaunch(struct ncclComm* comm, struct chrCollTask* list, int capturing, struct chrDevLaunchPlan* p) {
  int n = comm->nRanks, nP2p = 0, total = 0;
  memset(p, 0, sizeof(*p));
  pairSelfTasks(comm, list);
  const uint64_t engineMin = (uint64_t)chrParamInt(CHR_P_GPU_SELF_COPY_ENGINE);
  const uint64_t ceOn = chrDevCommEngineAllowed(comm) ? 1 : 0;
  const uint64_t ceMin = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_MIN_BYTES);
  const uint64_t ceBcastOwn = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_BCAST_MIN_BYTES);
  const uint64_t ceBcastMin = ceBcastOwn > 0 ? ceBcastOwn : ceMin;
  const uint64_t ceArMin = ceOn * (uint64_t)chrParamInt(CHR_P_GPU_CE_ALLREDUCE_MIN_BYTES);
  struct chrWork copies[2];
  struct chrWork rs[CHR_DEV_MAX_CHANNELS]; /* an engine all-reduce's reduce-scatter works */
  int copyChannels[2];
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm || t->noop || isPairedRecv(t)) continue;
    if (isEngineAllReduce(t, comm, ceArMin, capturing)) { /* reduce-scatter works, and 2 engine works on channel 0 */
      const int nEngine = engineAllReduceWorks(t, comm, rs, copies);
      p->nP2p[0] += nEngine;
      nP2p += nEngine;
      if (p->p2pChannels < 1) p->p2pChannels = 1;
      for (int c = 0; c < t->nChannels; c++) {
        if (!workRuns(&rs[c])) continue;
        const int ch = chrDevTaskChannel(t, c);
        if (ch >= CHR_DEV_MAX_CHANNELS)
          return chrFail(ncclInternalError, "comm %p: a work on channel %d (at most %d)", (void*)comm, ch,
                         CHR_DEV_MAX_CHANNELS);
        p->nColl[ch]++;
        total++;
        if (ch + 1 > p->collChannels) p->collChannels = ch + 1;
      }
      continue;
    }
    const int nEngine = isEngineBcast(t, comm, ceBcastMin, capturing) ? engineBcastWorks(t, comm, copies)
                        : isEngineP2p(t, comm, ceMin, capturing) ? 1 : 0;
    if (nEngine > 0) { /* on channel 0 of the point-to-point launch */
      p->nP2p[0] += nEngine;
      nP2p += nEngine;
      if (p->p2pChannels < 1) p->p2pChannels = 1;
      continue;
    }
    const struct chrCollTask* selfRecv = t->selfPair;
    for (int c = 0; c < t->nChannels; c++) {
      if (!workRuns(&t->works[c])) continue;
      int nCh = 1;
      copyChannels[0] = chrDevTaskChannel(t, c);
      if (selfRecv) nCh = selfCopies(t, selfRecv, c, engineMin, copies, copyChannels);
      for (int i = 0; i < nCh; i++) {
        const int ch = copyChannels[i];
        if (ch >= CHR_DEV_MAX_CHANNELS)
          return chrFail(ncclInternalError, "comm %p: a work on channel %d (at most %d)", (void*)comm, ch,
                         CHR_DEV_MAX_CHANNELS);
        if (isP2pTask(t)) {
          p->nP2p[ch]++;
          nP2p++;
          if (ch + 1 > p->p2pChannels) p->p2pChannels = ch + 1;
          continue;
        }
        p->nColl[ch]++;
        total++;
        if (ch + 1 > p->collChannels) p->collChannels = ch + 1;
      }
    }
  }
  p->coll = total ? malloc(sizeof(struct chrWork) * (size_t)total) : NULL;
  p->p2p = nP2p ? malloc(sizeof(struct chrWork) * (size_t)nP2p) : NULL;
  struct p2pEntry* order = nP2p ? malloc(sizeof(struct p2pEntry) * (size_t)nP2p) : NULL;
  if ((total && !p->coll) || (nP2p && (!p->p2p || !order))) {
    free(order);
    chrDevFreeLaunch(p);
    return chrFail(ncclSystemError, "out of memory launching %d works", total + nP2p);
  }
  int at[CHR_DEV_MAX_CHANNELS];
  for (int c = 0, sum = 0; c < CHR_DEV_MAX_CHANNELS; c++) {
    at[c] = sum;
    sum += p->nColl[c];
  }
  int k = 0, seq = 0, call = 0;
  for (struct chrCollTask* t = list; t; t = t->next, seq++) {
    if (t->comm != comm || t->noop || isPairedRecv(t)) continue;
    if (isEngineBcast(t, comm, ceBcastMin, capturing)) {
      /* ahead of the point-to-point engine works on channel 0, in call order; no collective works and
       * no call number (both ranks leave out the same calls: they decide from the same bytes) */
      const int nEngine = engineBcastWorks(t, comm, copies);
      for (int i = 0; i < nEngine; i++)
        order[k++] = (struct p2pEntry){.channel = 0, .delta = -3, .order = seq, .idx = i, .work = copies[i]};
      continue;
    }
    if (isEngineAllReduce(t, comm, ceArMin, capturing)) {
      /* the reduce-scatter at the call's place and with its number; the halves' transfers on channel 0
       * with the broadcasts' (class 1, call order among the collectives): the point-to-point launch
       * follows the collectives' on the stream, so they start once the reduced halves are written */
      const int nEngine = engineAllReduceWorks(t, comm, rs, copies);
      for (int c = 0; c < t->nChannels; c++) {
        if (!workRuns(&rs[c])) continue;
        struct chrWork* w = &p->coll[at[t->chanBase + c]++];
        *w = rs[c];
        w->call = call;
      }
      call++;
      for (int i = 0; i < nEngine; i++)
        order[k++] = (struct p2pEntry){.channel = 0, .delta = -3, .order = seq, .idx = i, .work = copies[i]};
      continue;
    }
    if (!isP2pTask(t)) { /* the launcher cuts between calls, never inside one */
      for (int c = 0; c < t->nChannels; c++) {
        if (!workRuns(&t->works[c])) continue;
        struct chrWork* w = &p->coll[at[t->chanBase + c]++];
        *w = t->works[c];
        w->call = call;
      }
      call++;
      continue;
    }
    if (isEngineP2p(t, comm, ceMin, capturing)) { /* on channel 0 ahead of the rest, in call order */
      const int isSend = t->func == ncclFuncSend;
      const struct chrWork w = engineP2pWork(t, t->root, isSend, isSend ? t->sendbuff : t->recvbuff, t->count,
                                             CHR_WORK_CLASS_P2P);
      order[k++] = (struct p2pEntry){.channel = 0, .delta = -2, .order = seq, .idx = 0, .work = w};
      continue;
    }
    const struct chrCollTask* selfRecv = t->selfPair;
    for (int c = 0; c < t->nChannels; c++) {
      if (!workRuns(&t->works[c])) continue;
      if (selfRecv) { /* the launcher runs a channel's copies before its transfers; so does the plan */
        const int nCopies = selfCopies(t, selfRecv, c, engineMin, copies, copyChannels);
        for (int i = 0; i < nCopies; i++)
          order[k++] = (struct p2pEntry){.channel = copyChannels[i], .delta = -1, .order = seq, .idx = 2 * c + i,
                                         .work = copies[i]};
        continue;
      }
      int isSend = t->func == ncclFuncSend;
      struct p2pEntry* e = &order[k++];
      e->channel = chrDevTaskChannel(t, c);
      e->delta = isSend ? (t->root - comm->rank + n) % n : (comm->rank - t->root + n) % n;
      e->order = seq;
      e->idx = c;
      e->work = t->works[c];
    }
  }
  if (nP2p) qsort(order, (size_t)nP2p, sizeof(*order), byChannelRound);
  for (int i = 0; i < nP2p; i++) p->p2p[i] = order[i].work;
  free(order);
  return ncclSuccess;
}

void chrDevFreeLaunch(struct chrDevLaunchPlan* p) {
  free(p->coll);
  free(p->p2p);
  p->coll = p->p2p = NULL;
}

#define MAX_STREAMS 64

/* Every peer the plan's works name gets connected first (IPC mode: the first time, this waits for the
 * peer's own first GPU call). */
static ncclResult_t connectPeers(struct ncclComm* comm, const struct chrDevLaunchPlan* plan) {
  if (!chrDevCommConnectsLazily(comm)) return ncclSuccess; /* group mode: connected from the start (no scan per launch) */
  unsigned char* need = calloc((size_t)comm->nRanks, 1);
  if (need == NULL) return chrFail(ncclSystemError, "out of memory for %d ranks", comm->nRanks);
  int nColl = 0;
  for (int c = 0; c < CHR_DEV_MAX_CHANNELS; c++) nColl += plan->nColl[c];
  int nP2p = 0;
  for (int c = 0; c < CHR_DEV_MAX_CHANNELS; c++) nP2p += plan->nP2p[c];
  for (int i = 0; i < nColl + nP2p; i++) {
    const struct chrWork* w = i < nColl ? &plan->coll[i] : &plan->p2p[i - nColl];
    for (int l = 0; l < w->nLinks && l < CHR_WORK_MAX_LINKS; l++)
      if (w->links[l].peer >= 0 && w->links[l].peer < comm->nRanks) need[w->links[l].peer] = 1;
  }
  ncclResult_t res = chrDevCommConnect(comm, need);
  free(need);
  return res;
}

static ncclResult_t launchComm(struct ncclComm* comm, struct chrCollTask* list) {
  const struct chrDevLib* lib = chrDevLibGet();
  cudaStream_t streams[MAX_STREAMS];
  int nStreams = 0;
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm || t->noop) continue;
    int known = 0;
    for (int i = 0; i < nStreams && !known; i++) known = streams[i] == t->stream;
    if (known) continue;
    if (nStreams == MAX_STREAMS)
      return chrFail(ncclInvalidUsage, "comm %p: more than %d streams in one group", (void*)comm, MAX_STREAMS);
    streams[nStreams++] = t->stream;
  }
  if (nStreams == 0) return ncclSuccess; /* only calls that move nothing */
  CHECK(chrDevCommAttach(comm));
  CHECK(chrDevCommPoll(comm));
  if (comm->abortFlag) return chrFail(ncclRemoteError, "operation interrupted: communicator %p was aborted", (void*)comm);
  struct chrDevRankState* st = comm->dev;
  const int dev = comm->cudaDev;
  cudaStream_t s0 = streams[0];
  /* Asked before the plan is made: a captured launch keeps its sends on the kernels (engine sends
   * meet in a host mailbox, which a graph's replays would not repeat). */
  int capturing = 0;
  ncclResult_t res = lib->streamCapturing(dev, s0, &capturing);
  if (res != ncclSuccess)
    return chrFail(res, "comm %p rank %d: querying graph capture on GPU %d failed: %s", (void*)comm, comm->rank, dev,
                   lib->lastError());
  struct chrDevLaunchPlan plan;
  CHECK(chrDevBuildLaunch(comm, list, capturing, &plan));
  res = connectPeers(comm, &plan);
  if (res != ncclSuccess) {
    chrDevFreeLaunch(&plan);
    return res;
  }
  const char* what = "joining the group's streams";
  for (int i = 1; i < nStreams && res == ncclSuccess; i++) {
    res = lib->eventRecord(dev, st->join, streams[i]);
    if (res == ncclSuccess) res = lib->streamWaitEvent(dev, s0, st->join);
  }
  if (res == ncclSuccess && !capturing && st->lastRecorded && st->lastStream != s0) {
    what = "ordering after the rank's previous launch";
    res = lib->streamWaitEvent(dev, s0, st->last);
  }
  if (res == ncclSuccess && plan.collChannels > 0) {
    what = "launching collectives";
    res = chrDevCommLaunch(comm, plan.coll, plan.nColl, plan.collChannels, s0);
  }
  if (res == ncclSuccess && plan.p2pChannels > 0) {
    what = "launching sends and receives";
    res = chrDevCommLaunch(comm, plan.p2p, plan.nP2p, plan.p2pChannels, s0);
  }
  if (res == ncclSuccess && nStreams > 1) {
    what = "joining the group's streams after the launch";
    res = lib->eventRecord(dev, st->join, s0);
    for (int i = 1; i < nStreams && res == ncclSuccess; i++) res = lib->streamWaitEvent(dev, streams[i], st->join);
  }
  if (res == ncclSuccess && !capturing) {
    what = "recording the launch";
    res = lib->eventRecord(dev, st->last, s0);
    if (res == ncclSuccess) {
      st->lastStream = s0;
      st->lastRecorded = 1;
    }
  }
  if (res != ncclSuccess)
    res = chrFail(res, "comm %p rank %d: %s on GPU %d failed: %s", (void*)comm, comm->rank, what, dev, lib->lastError());
  chrDevFreeLaunch(&plan);
  return res;
}

/* A comm's failure in this group: other ranks may have launched their part, so this rank is out of
 * step with them (a refusal before anything was launched leaves the comm usable). */
static void noteFailure(struct ncclComm* comm, ncclResult_t res) {
  if (res != ncclInvalidUsage && res != ncclInvalidArgument) chrCommSetAsyncError(comm, res);
  else chrCommNoteError(comm);
}

static int firstOfComm(struct chrCollTask* list, struct chrCollTask* t) {
  for (struct chrCollTask* u = list; u != t; u = u->next)
    if (u->comm == t->comm) return 0;
  return 1;
}

static int commHasWork(struct chrCollTask* list, const struct ncclComm* comm) {
  for (struct chrCollTask* t = list; t; t = t->next)
    if (t->comm == comm && !t->noop) return 1;
  return 0;
}

/* The first task of each comm in the list into *firsts (few, or an allocation when the group has
 * more comms), in the order of the comms' hashes (call order among equal ones), the same in every
 * process: a comm whose ranks span hosts connects new GPU ends in its launch and waits there for its
 * peers (dev_net.h), and two processes that put the same comms of a group in other orders would each
 * wait for the other's second; so would kernels of several comms queued on one stream in other orders. */
static ncclResult_t commsInOrder(struct chrCollTask* list, struct chrCollTask** few, int nFew,
                                 struct chrCollTask*** firsts, int* nComms) {
  struct chrCollTask** arr = few;
  int n = 0, cap = nFew;
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (!firstOfComm(list, t)) continue;
    if (n == cap) { /* the usual group fits in few: no allocation on the launch path */
      struct chrCollTask** grown = malloc(sizeof(*grown) * (size_t)cap * 2);
      if (grown == NULL) {
        if (arr != few) free(arr);
        return chrFail(ncclSystemError, "out of memory for a group of more than %d communicators", n);
      }
      memcpy(grown, arr, sizeof(*grown) * (size_t)n);
      if (arr != few) free(arr);
      arr = grown;
      cap *= 2;
    }
    int i = n++;
    for (; i > 0 && arr[i - 1]->comm->commHash > t->comm->commHash; i--) arr[i] = arr[i - 1];
    arr[i] = t;
  }
  *firsts = arr;
  *nComms = n;
  return ncclSuccess;
}

ncclResult_t chrDevExecTasks(struct chrCollTask* list) {
  ncclResult_t first = ncclSuccess;
  struct chrCollTask* few[16];
  struct chrCollTask** firsts = NULL;
  int nComms = 0;
  CHECK(commsInOrder(list, few, 16, &firsts, &nComms));
  /* Every comm attaches before any connects: in IPC mode an attach sends the rank's blob to its peers,
   * and a thread that drives several ranks of one comm must send all of theirs before it waits for
   * one. A comm that fails here launches nothing. */
  for (int i = 0; i < nComms; i++) {
    struct chrCollTask* t = firsts[i];
    if (!commHasWork(list, t->comm) || t->comm->dev) continue;
    ncclResult_t res = chrDevCommAttach(t->comm);
    if (res != ncclSuccess) {
      noteFailure(t->comm, res);
      if (first == ncclSuccess) first = res;
    }
  }
  for (int i = 0; i < nComms; i++) {
    struct chrCollTask* t = firsts[i];
    if (commHasWork(list, t->comm) && t->comm->dev == NULL) continue; /* its attach failed above */
    void* kernelEvents = chrProfOn(ncclProfileKernelCh) ? chrProfKernelBegin(t->comm, list) : NULL;
    ncclResult_t res = launchComm(t->comm, list);
    if (kernelEvents) chrProfKernelEnd(kernelEvents);
    if (res != ncclSuccess) {
      noteFailure(t->comm, res);
      if (first == ncclSuccess) first = res;
    }
  }
  if (firsts != few) free(firsts);
  return first;
}
