/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec.c: the host executor's progress loop.
 *
 * A task runs as one work per channel: the step program of hostdev/work.h, the same one the CUDA kernels
 * run. Per link, counters walk the CHR_STEPS
 * slots: receives posted (up to CHR_STEPS ahead of the consumer), completed and consumed; sends
 * posted and completed. The step sequence of a link continues from one task to the next (link->seq,
 * the same count on both ends), so a send that finishes with its data still unconsumed in the
 * connection's buffer, the peer's receive not posted yet, leaves no confusion about slots: the next
 * task on that link starts at the next slot. A send step is done when its slot can be written again
 * (transport.h), so a send of up to CHR_STEPS steps (NCCL_BUFFSIZE bytes) completes without the
 * receiver, on every transport: the eager limit. A step runs when each of its receives has completed and each of its sends
 * has a free slot; it reads the received slots and the local input in one pass and writes the output
 * and the send slots.
 *
 * Order: tasks of one communicator start in call order, and a task starts only when no earlier
 * unfinished task of that communicator uses any of its links, so two operations never interleave
 * on a link, while operations on different links (send/recv to different peers in one group) run
 * together. Tasks of different communicators progress in the same loop, so one thread can drive
 * many communicators without deadlock. A dead peer is an error, not a hang: its transport reports it
 * (shm checks the peer's process, net the closed connection). A slow peer is waited for as NCCL does,
 * unless CHORUS_TIMEOUT > 0: then a task that makes no progress for that many seconds fails.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "exec/exec.h"
#include "exec/reduce.h"
#include "util/futex.h"
#include "util/idle.h"
#include "log/check.h"
#include "log/log.h"
#include "exec/direct.h"
#include "exec/links.h"
#include "profile/profile.h"

struct linkState {
  struct chrLink* link;
  int isSend;
  uint64_t base;                                       /* link->seq when the task started */
  uint64_t nRecvs, recvPosted, recvDone, recvConsumed; /* recv links */
  uint64_t sendPosted, sendDone;                       /* send links */
  size_t recvBytes[CHR_STEPS];
  struct chrDirectLink direct; /* steps that move user memory without the slots (direct.h) */
  struct chrProfLinkOp prof; /* profiler events of this link (prof.prof NULL: none) */
};

struct chanState {
  int nLinks;
  struct linkState links[CHR_WORK_MAX_LINKS];
  uint64_t nSteps, step;
};

struct taskRun {
  struct chrCollTask* task;
  int started, finished;
  int profiled; /* its ProxyOp events were started */
  struct chanState* ch; /* task->nChannels entries */
};

struct commRun {
  struct ncclComm* comm;
  int nTasks, nFinished;
  struct taskRun* tasks; /* in call order */
  uint64_t lastProgressNs;
  int failed;
};

/* The reduction, from the work (so the host runs exactly the op encoding the kernels get). A
 * device-resident PreMulSum scalar is read now, when the collective runs. Functions that do not
 * reduce copy, which a Sum with no first operand does. */
static ncclResult_t resolveOp(struct chrCollTask* t) {
  const struct chrWork* w = &t->works[0];
  switch ((chrRedKind)w->op) {
    case chrRedSum: CHECK(chrRedOpFromBuiltin(ncclSum, t->type, 1, &t->op)); break;
    case chrRedProd: CHECK(chrRedOpFromBuiltin(ncclProd, t->type, 1, &t->op)); break;
    case chrRedMax: CHECK(chrRedOpFromBuiltin(ncclMax, t->type, 1, &t->op)); break;
    case chrRedMin: CHECK(chrRedOpFromBuiltin(ncclMin, t->type, 1, &t->op)); break;
    case chrRedSumPostDiv:
      CHECK(chrRedOpFromBuiltin(ncclAvg, t->type, (int)w->opArg, &t->op));
      if (t->op.kind != chrRedSumPostDiv) return chrFail(ncclInternalError, "work: SumPostDiv on a float type");
      break;
    case chrRedPreMulSum: {
      const void* scalar = (w->flags & CHR_WORK_SCALAR_PTR) ? (const void*)(uintptr_t)w->opArg : (const void*)&w->opArg;
      CHECK(chrRedOpPreMulSum(t->type, scalar, &t->op));
      break;
    }
    default: return chrFail(ncclInternalError, "work: unknown reduction %d", (int)w->op);
  }
  t->opNoPre = t->op;
  if (t->op.kind == chrRedPreMulSum) t->opNoPre.kind = chrRedSum;
  return ncclSuccess;
}

/* v = recv[0] OP .. OP recv[k-1] OP pre(local), written to out and to the nSlots send slots (the
 * step's sends that go through a slot); copiesInput: chrStepCopiesInput (v is the input unchanged). */
static void runStep(const struct chrCollTask* t, const struct chrStep* st, int copiesInput, int nSlots, void** sendSlots,
                    const void** recvSlots) {
  size_t bytes = st->count * t->typeSize;
  const void* local = st->localOff >= 0 ? (const char*)t->sendbuff + (size_t)st->localOff * t->typeSize : NULL;
  void* outs[CHR_STEP_MAX_LINKS + 1];
  int nOuts = 0;
  if (st->outOff >= 0) outs[nOuts++] = (char*)t->recvbuff + (size_t)st->outOff * t->typeSize;
  for (int i = 0; i < nSlots; i++) outs[nOuts++] = sendSlots[i];
  if (nOuts == 0 || st->count == 0) return;
  int nTerms = st->nRecv + (local != NULL);
  int needPost = st->final && t->op.kind == chrRedSumPostDiv;
  void* dst1 = (nOuts > 1 && !needPost) ? outs[1] : NULL;
  int done = dst1 ? 2 : 1;
  if (nTerms == 0) return;
  if (copiesInput) {
    /* The local term alone (the first step of all-gathers and broadcasts): a copy, none in place. */
    for (int i = 0; i < nOuts; i++)
      if (outs[i] != local) memcpy(outs[i], local, bytes);
    return;
  }
  if (local) {
    const void* first = st->nRecv > 0 ? recvSlots[0] : NULL;
    /* Partial sums from further receives are added before the local term's final pass. */
    if (st->nRecv > 1) {
      chrReduce(&t->opNoPre, outs[0], NULL, recvSlots[0], recvSlots[1], st->count);
      for (int k = 2; k < st->nRecv; k++) chrReduce(&t->opNoPre, outs[0], NULL, outs[0], recvSlots[k], st->count);
      first = outs[0];
    }
    chrReduce(&t->op, outs[0], dst1, first, local, st->count);
  } else if (st->nRecv == 1) {
    /* Forwarding (all-gather, broadcast, the down pass of trees): one read of the slot, two writes. */
    if (dst1) chrReduce(&t->opNoPre, outs[0], dst1, NULL, recvSlots[0], st->count);
    else memcpy(outs[0], recvSlots[0], bytes);
  } else {
    chrReduce(&t->opNoPre, outs[0], dst1, recvSlots[0], recvSlots[1], st->count);
    for (int k = 2; k < st->nRecv; k++) chrReduce(&t->opNoPre, outs[0], dst1, outs[0], recvSlots[k], st->count);
  }
  if (needPost) chrReducePost(&t->op, outs[0], outs[0], st->count);
  for (int i = done; i < nOuts; i++) memcpy(outs[i], outs[0], bytes);
}

static int slotOf(const struct linkState* ls, uint64_t k) { return (int)((ls->base + k) % CHR_STEPS); }

/* "the receive of channel 1 from rank 0, via net device 1 (chrv1)": a link as error messages name it. */
static void linkText(const struct chrLink* l, char* out, size_t size) {
  snprintf(out, size, "the %s of channel %d %s rank %d, via %s", l->isSend ? "send" : "receive", l->channel,
           l->isSend ? "to" : "from", l->peer, l->via);
}

/* The thread's last error gains "; <lead> <link>". */
static void appendLink(const char* lead, const struct chrLink* l) {
  char cause[768], where[160];
  snprintf(cause, sizeof(cause), "%s", chrThreadLastError());
  linkText(l, where, sizeof(where));
  chrSetLastError("%s; %s %s", cause, lead, where);
}

/* A transport call on link l failed with res: its text (the transport set it) gains the link, so that
 * a cut NIC is named however its failure shows. */
static ncclResult_t linkFailed(const struct chrLink* l, ncclResult_t res) {
  appendLink("on", l);
  return res;
}

/* Link i of channel c of task t. */
static ncclResult_t linkProgress(const struct chrCollTask* t, int c, struct chanState* cs, int i, int* progressed) {
  struct linkState* ls = &cs->links[i];
  struct chrLink* l = ls->link;
  if (ls->isSend) {
    while (ls->sendDone < ls->sendPosted) {
      int done = 0;
      size_t bytes = 0;
      int slot = slotOf(ls, ls->sendDone);
      ncclResult_t res = l->ops->test(l, slot, &done, &bytes);
      if (res != ncclSuccess) return linkFailed(l, res);
      if (!done) break;
      if (ls->prof.prof) chrProfStepStop(&ls->prof, l, slot);
      ls->sendDone++;
      *progressed = 1;
    }
    return ncclSuccess;
  }
  while (ls->recvPosted < ls->nRecvs && ls->recvPosted < ls->recvConsumed + CHR_STEPS) {
    int slot = slotOf(ls, ls->recvPosted);
    if (ls->prof.prof) chrProfStepStart(&ls->prof, l, slot, ls->recvPosted, 0);
    size_t bytes = 0;
    void* mh = NULL;
    char* into = chrDirectRecvInto(&ls->direct, t, c, i, cs->nSteps, &bytes, &mh);
    ls->direct.into[slot] = into;
    ncclResult_t res = into ? l->ops->postUser(l, slot, into, bytes, mh) : l->ops->post(l, slot, l->stepSize);
    if (res != ncclSuccess) return linkFailed(l, res);
    if (into) t->comm->directSteps++;
    ls->recvPosted++;
    *progressed = 1;
  }
  while (ls->recvDone < ls->recvPosted) {
    int done = 0;
    size_t bytes = 0;
    int slot = slotOf(ls, ls->recvDone);
    ncclResult_t res = l->ops->test(l, slot, &done, &bytes);
    if (res != ncclSuccess) return linkFailed(l, res);
    if (!done) break;
    ls->recvBytes[slot] = bytes;
    if (ls->prof.prof) {
      chrProfStepState(&ls->prof, slot, ncclProfilerProxyStepRecvFlushWait, bytes); /* host memory: no flush */
      chrProfStepState(&ls->prof, slot, ncclProfilerProxyStepRecvGPUWait, bytes);
    }
    ls->recvDone++;
    *progressed = 1;
  }
  return ncclSuccess;
}

/* Posts send link ls's next step: `from` user memory (registered as mh), or its slot when NULL. */
static ncclResult_t postSend(struct chrCollTask* t, struct linkState* ls, size_t bytes, const char* from, void* mh) {
  const int slot = slotOf(ls, ls->sendPosted);
  if (ls->prof.prof) {
    chrProfStepState(&ls->prof, slot, ncclProfilerProxyStepSendPeerWait_v4, bytes); /* the slot was free */
    chrProfStepState(&ls->prof, slot, ncclProfilerProxyStepSendWait, bytes);
  }
  ncclResult_t res = from ? ls->link->ops->postUser(ls->link, slot, (void*)from, bytes, mh)
                          : ls->link->ops->post(ls->link, slot, bytes);
  if (res != ncclSuccess) return linkFailed(ls->link, res);
  if (from) t->comm->directSteps++;
  ls->sendPosted++;
  return ncclSuccess;
}

/* One pass over one channel of a task. */
static ncclResult_t channelProgress(struct chrCollTask* t, int c, struct chanState* cs, int* progressed) {
  for (int i = 0; i < cs->nLinks; i++) CHECK(linkProgress(t, c, cs, i, progressed));
  while (cs->step < cs->nSteps) {
    struct chrStep st;
    chrWorkStep(&t->works[c], t->comm->ringOrder, cs->step, &st);
    const void* recvSlots[CHR_STEP_MAX_LINKS];
    void* sendSlots[CHR_STEP_MAX_LINKS]; /* the sends through a slot */
    const char* sendFrom[CHR_STEP_MAX_LINKS]; /* per send: user memory it goes from directly, or NULL */
    void* sendMh[CHR_STEP_MAX_LINKS];
    size_t expect = st.count * t->typeSize;
    int ready = 1, nSlots = 0, recvDirect = 0;
    for (int i = 0; i < st.nRecv && ready; i++) {
      struct linkState* ls = &cs->links[st.recv[i]];
      if (ls->recvConsumed >= ls->recvDone) { ready = 0; break; }
      int slot = slotOf(ls, ls->recvConsumed);
      if (ls->recvBytes[slot] != expect)
        return chrFail(ncclRemoteError, "pattern %d: rank %d sent %zu bytes on channel %d step %llu, expected %zu (ranks disagree on the call?)",
                       (int)t->works[c].pattern, ls->link->peer, ls->recvBytes[slot], c, (unsigned long long)cs->step, expect);
      recvDirect = ls->direct.into[slot] != NULL; /* the data is in the output already (one receive) */
      recvSlots[i] = recvDirect ? ls->direct.into[slot] : ls->link->slots[slot];
    }
    for (int i = 0; i < st.nSend && ready; i++) {
      struct linkState* ls = &cs->links[st.send[i]];
      if (ls->sendPosted - ls->sendDone >= CHR_STEPS) { ready = 0; break; }
      sendFrom[i] = chrDirectSendFrom(&ls->direct, t, &st, &sendMh[i]);
      if (sendFrom[i] != NULL) continue;
      const int slot = slotOf(ls, ls->sendPosted);
      if (ls->link->ops->prepare) CHECK(ls->link->ops->prepare(ls->link, slot, expect));
      sendSlots[nSlots++] = ls->link->slots[slot];
    }
    if (!ready) break;
    for (int i = 0; i < st.nSend; i++) { /* a send step waits for its data while the step computes it */
      struct linkState* ls = &cs->links[st.send[i]];
      if (ls->prof.prof) chrProfStepStart(&ls->prof, ls->link, slotOf(ls, ls->sendPosted), ls->sendPosted, 1);
    }
    /* Sends of the input itself go before the step runs (direct.h); the others after it. */
    const int inputFirst = chrStepCopiesInput(t, &st);
    for (int i = 0; i < st.nSend && inputFirst; i++)
      if (sendFrom[i]) CHECK(postSend(t, &cs->links[st.send[i]], expect, sendFrom[i], sendMh[i]));
    if (recvDirect) /* received straight into the output: only the sends through a slot need the bytes */
      for (int i = 0; i < nSlots; i++) memcpy(sendSlots[i], recvSlots[0], expect);
    else
      runStep(t, &st, inputFirst, nSlots, sendSlots, recvSlots);
    for (int i = 0; i < st.nSend; i++)
      if (!(inputFirst && sendFrom[i])) CHECK(postSend(t, &cs->links[st.send[i]], expect, sendFrom[i], sendMh[i]));
    for (int i = 0; i < st.nRecv; i++) {
      struct linkState* ls = &cs->links[st.recv[i]];
      int slot = slotOf(ls, ls->recvConsumed);
      if (ls->link->ops->release) CHECK(ls->link->ops->release(ls->link, slot));
      if (ls->prof.prof) chrProfStepStop(&ls->prof, ls->link, slot);
      ls->recvConsumed++;
    }
    cs->step++;
    *progressed = 1;
    /* Re-post freed receive slots before computing a long run of steps. */
    if (st.nRecv > 0) break;
  }
  return ncclSuccess;
}

static int channelDone(const struct chanState* cs) {
  if (cs->step < cs->nSteps) return 0;
  for (int i = 0; i < cs->nLinks; i++) {
    const struct linkState* ls = &cs->links[i];
    if (ls->isSend ? ls->sendDone != ls->sendPosted : ls->recvConsumed != ls->nRecvs) return 0;
  }
  return 1;
}

static ncclResult_t startTask(struct taskRun* tr) {
  struct chrCollTask* t = tr->task;
  CHECK(resolveOp(t));
  for (int c = 0; c < t->nChannels; c++) {
    struct chanState* cs = &tr->ch[c];
    const struct chrWork* w = &t->works[c];
    uint64_t nRecvs[CHR_WORK_MAX_LINKS];
    cs->step = 0;
    cs->nLinks = w->nLinks;
    /* Only the links the work uses: a state is a few hundred bytes, and small calls are many. */
    memset(cs->links, 0, (size_t)cs->nLinks * sizeof(cs->links[0]));
    chrWorkCounts(w, &cs->nSteps, nRecvs);
    for (int i = 0; i < cs->nLinks; i++) {
      struct linkState* ls = &cs->links[i];
      const struct chrWorkLink* use = &w->links[i];
      ls->link = chrLinkFind(t->comm, c, use);
      if (ls->link == NULL)
        return chrFail(ncclInternalError, "channel %d has no %s link %s rank %d", c, use->isSend ? "send" : "recv",
                       use->isSend ? "to" : "from", use->peer);
      ls->isSend = use->isSend;
      ls->nRecvs = use->isSend ? 0 : nRecvs[i];
      ls->base = ls->link->seq;
    }
  }
  tr->started = 1;
  return ncclSuccess;
}

static int usesLink(const struct taskRun* tr, const struct chrLink* link) {
  for (int c = 0; c < tr->task->nChannels; c++)
    for (int i = 0; i < tr->ch[c].nLinks; i++)
      if (tr->ch[c].links[i].link == link) return 1;
  return 0;
}

/* May task k start? Only if no earlier unfinished task uses one of its links. Its links are known
 * once started, so start it speculatively and check. */
static ncclResult_t tryStart(struct commRun* run, int k, int* started) {
  struct taskRun* tr = &run->tasks[k];
  *started = 0;
  CHECK(startTask(tr));
  for (int j = 0; j < k; j++) {
    struct taskRun* earlier = &run->tasks[j];
    if (earlier->finished) continue;
    for (int c = 0; c < tr->task->nChannels; c++)
      for (int i = 0; i < tr->ch[c].nLinks; i++)
        if (usesLink(earlier, tr->ch[c].links[i].link)) { tr->started = 0; return ncclSuccess; }
  }
  *started = 1;
  return ncclSuccess;
}

/* Profiler: the ProxyOp events of a task that starts, one per channel and link. A send link's
 * transfer count is not kept by the executor, so it is counted from the step program here. */
static void profOpsStart(struct taskRun* tr) {
  struct chrCollTask* t = tr->task;
  size_t chunkBytes = t->chunkElems * t->typeSize;
  for (int c = 0; c < t->nChannels; c++) {
    struct chanState* cs = &tr->ch[c];
    uint64_t nSends[CHR_WORK_MAX_LINKS] = {0};
    for (int i = 0; i < cs->nLinks; i++)
      if (cs->links[i].isSend) {
        for (uint64_t k = 0; k < cs->nSteps; k++) {
          struct chrStep st;
          chrWorkStep(&t->works[c], t->comm->ringOrder, k, &st);
          for (int j = 0; j < st.nSend; j++) nSends[st.send[j]]++;
        }
        break;
      }
    for (int i = 0; i < cs->nLinks; i++) {
      struct linkState* ls = &cs->links[i];
      uint64_t n = ls->isSend ? nSends[i] : ls->nRecvs;
      if (n > 0) chrProfOpStart(&ls->prof, t, c, ls->link, n, chunkBytes); /* a link this task leaves idle: none */
    }
  }
}

static void profOpsStop(struct taskRun* tr, int channel) {
  for (int c = channel < 0 ? 0 : channel; c < (channel < 0 ? tr->task->nChannels : channel + 1); c++)
    for (int i = 0; i < tr->ch[c].nLinks; i++) chrProfOpStop(&tr->ch[c].links[i].prof);
}

static ncclResult_t taskProgress(struct taskRun* tr, int* progressed) {
  struct chrCollTask* t = tr->task;
  int finished = 1;
  for (int c = 0; c < t->nChannels; c++) {
    struct chanState* cs = &tr->ch[c];
    if (channelDone(cs)) continue;
    CHECK(channelProgress(t, c, cs, progressed));
    if (!channelDone(cs)) finished = 0;
    else if (tr->profiled) profOpsStop(tr, c); /* the channel's last transfer is done */
  }
  if (finished) {
    if (tr->profiled) profOpsStop(tr, -1);
    /* Every link appears once in a task (ring links per channel; trees use a send and a receive link
     * per peer), so each link's sequence moves on by exactly what this task walked. */
    for (int c = 0; c < t->nChannels; c++)
      for (int i = 0; i < tr->ch[c].nLinks; i++) {
        struct linkState* ls = &tr->ch[c].links[i];
        ls->link->seq = ls->base + (ls->isSend ? ls->sendPosted : ls->nRecvs);
        chrDirectStop(&ls->direct, ls->link);
      }
    tr->finished = 1;
    *progressed = 1;
  }
  return ncclSuccess;
}

/* One pass over a communicator: start what may start, progress what runs. */
static ncclResult_t commProgress(struct commRun* run, int* progressed) {
  for (int k = 0; k < run->nTasks; k++) {
    struct taskRun* tr = &run->tasks[k];
    if (tr->finished) continue;
    if (!tr->started) {
      int started = 0;
      CHECK(tryStart(run, k, &started));
      if (!started) continue;
      *progressed = 1;
      for (int c = 0; c < tr->task->nChannels; c++)
        for (int i = 0; i < tr->ch[c].nLinks; i++) chrDirectStart(&tr->ch[c].links[i].direct, tr->ch[c].links[i].link, tr->task);
      if (chrProfOn(CHR_PROF_NEED_OP) && tr->task->comm->profiler) {
        profOpsStart(tr);
        tr->profiled = 1;
      }
    }
    CHECK(taskProgress(tr, progressed));
    if (tr->finished) run->nFinished++;
  }
  return ncclSuccess;
}

/* A failed task's links: registrations released, and a link with a direct request still out is
 * retired (closed, and gone from the comm), so the plugin cannot touch the user's memory after the
 * call has returned. The comm has failed, so nothing uses the link again. */
static void failLinks(struct taskRun* tr) {
  for (int c = 0; c < tr->task->nChannels; c++)
    for (int i = 0; i < tr->ch[c].nLinks; i++) {
      struct linkState* ls = &tr->ch[c].links[i];
      const int out = ls->isSend ? ls->sendPosted > ls->sendDone : ls->recvPosted > ls->recvDone;
      const int direct = ls->direct.on;
      chrDirectStop(&ls->direct, ls->link);
      if (direct && out) chrLinksRetire(tr->task->comm, ls->link);
    }
}

static ncclResult_t failRun(struct commRun* run, ncclResult_t res) {
  for (int k = 0; k < run->nTasks; k++) { /* every profiler event started is stopped, failed or not */
    if (run->tasks[k].profiled) profOpsStop(&run->tasks[k], -1);
    if (run->tasks[k].started && !run->tasks[k].finished) failLinks(&run->tasks[k]);
  }
  chrCommSetAsyncError(run->comm, res);
  run->failed = 1;
  return res;
}

/* The run state of one call lives in a per-thread scratch area that grows and is reused, so the
 * launch path allocates nothing once warm (a thread runs one group at a time). */
static __thread char* scratch;
static __thread size_t scratchSize;
static pthread_key_t scratchKey; /* frees a thread's scratch when the thread exits */
static pthread_once_t scratchKeyOnce = PTHREAD_ONCE_INIT;

static void scratchKeyCreate(void) { pthread_key_create(&scratchKey, free); }

/* `bytes` of the thread's scratch, the first `zeroed` of them zeroed. */
static void* scratchGet(size_t bytes, size_t zeroed) {
  if (bytes > scratchSize) {
    size_t size = bytes < 4096 ? 4096 : bytes * 2;
    char* p = realloc(scratch, size);
    if (p == NULL) return NULL;
    scratch = p;
    scratchSize = size;
    pthread_once(&scratchKeyOnce, scratchKeyCreate);
    pthread_setspecific(scratchKey, scratch);
  }
  memset(scratch, 0, zeroed);
  return scratch;
}

#define ALIGN_UP(x) (((x) + 63) & ~(size_t)63)

/* Group the list by communicator, keeping call order inside each. */
static ncclResult_t buildRuns(struct chrCollTask* list, struct commRun** out, int* nOut) {
  int nComms = 0, nTasks = 0, nChannels = 0;
  for (struct chrCollTask* t = list; t; t = t->next) {
    nTasks++;
    nChannels += t->nChannels;
  }
  size_t runsBytes = ALIGN_UP((size_t)nTasks * sizeof(struct commRun));
  size_t tasksBytes = ALIGN_UP((size_t)nTasks * sizeof(struct taskRun));
  /* The channel states are not zeroed here: a task's are set up when it is tried (startTask). */
  char* mem = scratchGet(runsBytes + tasksBytes + (size_t)nChannels * sizeof(struct chanState), runsBytes + tasksBytes);
  if (mem == NULL) return chrFail(ncclSystemError, "out of memory starting %d operations", nTasks);
  struct commRun* runs = (struct commRun*)mem;
  struct taskRun* taskRuns = (struct taskRun*)(mem + runsBytes);
  struct chanState* chans = (struct chanState*)(mem + runsBytes + tasksBytes);
  for (struct chrCollTask* t = list; t; t = t->next) {
    int i;
    for (i = 0; i < nComms; i++)
      if (runs[i].comm == t->comm) break;
    if (i == nComms) runs[nComms++].comm = t->comm;
    runs[i].nTasks++;
  }
  int used = 0;
  for (int i = 0; i < nComms; i++) {
    runs[i].tasks = taskRuns + used;
    used += runs[i].nTasks;
    runs[i].nTasks = 0;
  }
  for (struct chrCollTask* t = list; t; t = t->next)
    for (int i = 0; i < nComms; i++)
      if (runs[i].comm == t->comm) {
        struct taskRun* tr = &runs[i].tasks[runs[i].nTasks++];
        tr->task = t;
        tr->ch = chans;
        chans += t->nChannels;
        break;
      }
  *out = runs;
  *nOut = nComms;
  return ncclSuccess;
}

/* Sleep until a peer moves one of the links the runs wait on, or a communicator is aborted (at most
 * 100 ms, so that dead peers and CHORUS_TIMEOUT are still looked at). Returns 0 when it slept or
 * there was nothing to wait for after all, -1 when a link cannot sleep (the caller naps instead). */
#define SLEEP_MAX_NS 100000000ull

static void disarm(struct chrLink** armed, int n) {
  for (int i = 0; i < n; i++) armed[i]->ops->sleepDisarm(armed[i]);
}

static int sleepOnLinks(struct commRun* runs, int nComms) {
  struct chrFutexWord words[CHR_FUTEX_MAX_WORDS];
  struct chrLink* armed[CHR_FUTEX_MAX_WORDS];
  int nWords = 0, nArmed = 0;
  for (int i = 0; i < nComms; i++) {
    struct commRun* run = &runs[i];
    if (run->failed || run->nFinished == run->nTasks) continue;
    if (nWords == CHR_FUTEX_MAX_WORDS) goto cannot;
    words[nWords++] = (struct chrFutexWord){(const volatile uint32_t*)&run->comm->abortFlag, 0, 0};
    for (int k = 0; k < run->nTasks; k++) {
      struct taskRun* tr = &run->tasks[k];
      if (!tr->started || tr->finished) continue;
      for (int c = 0; c < tr->task->nChannels; c++)
        for (int l = 0; l < tr->ch[c].nLinks; l++) {
          struct linkState* ls = &tr->ch[c].links[l];
          uint64_t pending = ls->isSend ? ls->sendDone : ls->recvDone;
          if (pending >= (ls->isSend ? ls->sendPosted : ls->recvPosted)) continue;
          if (ls->link->ops->sleepArm == NULL || nWords == CHR_FUTEX_MAX_WORDS) goto cannot;
          int got = ls->link->ops->sleepArm(ls->link, slotOf(ls, pending), &words[nWords]);
          if (got < 0) goto cannot;
          if (got == 0) { /* it moved: no sleep */
            disarm(armed, nArmed);
            return 0;
          }
          armed[nArmed++] = ls->link;
          nWords++;
        }
    }
  }
  if (nArmed == 0) goto cannot;
  int slept = chrFutexWaitAny(words, nWords, SLEEP_MAX_NS);
  disarm(armed, nArmed);
  return slept < 0 ? -1 : 0;
cannot:
  disarm(armed, nArmed);
  return -1;
}

/* The links a stalled run waits on, for its error: every one with a step posted and not done (a cut
 * NIC stalls its own links, and the others once the peer stops), as "A, and B"; 0 when none. */
static int waitedLinks(const struct commRun* run, char* out, size_t size) {
  int n = 0;
  size_t used = 0;
  out[0] = '\0';
  for (int k = 0; k < run->nTasks; k++) {
    const struct taskRun* tr = &run->tasks[k];
    if (!tr->started || tr->finished) continue;
    for (int c = 0; c < tr->task->nChannels; c++)
      for (int i = 0; i < tr->ch[c].nLinks; i++) {
        const struct linkState* ls = &tr->ch[c].links[i];
        if (!(ls->isSend ? ls->sendDone < ls->sendPosted : ls->recvDone < ls->recvPosted)) continue;
        char where[160];
        linkText(ls->link, where, sizeof(where));
        int w = snprintf(out + used, size - used, "%s%s", n ? ", and " : "", where);
        if (w < 0 || (size_t)w >= size - used) return n; /* no room for more: the first ones stand */
        used += (size_t)w;
        n++;
      }
  }
  return n;
}

/* A run that fails after making no progress for a while (its peer went away during the stall: the
 * peer may have timed out on the link that stalled): the error also names the link it waited on. */
#define STALL_NOTE_NS 1000000000ull
static void noteStall(const struct commRun* run) {
  const uint64_t now = chrNowNs();
  char links[512], cause[768];
  if (run->lastProgressNs == 0 || now - run->lastProgressNs < STALL_NOTE_NS || waitedLinks(run, links, sizeof(links)) == 0)
    return;
  snprintf(cause, sizeof(cause), "%s", chrThreadLastError());
  chrSetLastError("%s; before it, no progress for %.1f s, waiting on %s", cause,
                  (double)(now - run->lastProgressNs) / 1e9, links);
}

ncclResult_t chrExecTasks(struct chrCollTask* list) {
  if (list == NULL) return ncclSuccess;
  struct commRun* runs = NULL;
  int nComms = 0;
  CHECK(buildRuns(list, &runs, &nComms));
  ncclResult_t first = chrLinksConnectForTasks(list);
  if (first != ncclSuccess) return first;
  uint64_t timeoutNs = (uint64_t)chrParamInt(CHR_P_TIMEOUT) * 1000000000ull;
  /* The clock is read only in passes without progress (a busy call makes millions of passes): a run
   * that progressed notes 0, and its first idle pass after that counts as its last progress. */
  uint64_t idleSince = 0;
  uint64_t ownCoreSpinNs = UINT64_MAX; /* every comm's ranks on CPUs of their own, or 0 (util/idle.h) */
  for (int i = 0; i < nComms; i++) {
    runs[i].lastProgressNs = 0;
    if (runs[i].comm->ownCoreSpinNs < ownCoreSpinNs) ownCoreSpinNs = runs[i].comm->ownCoreSpinNs;
  }
  int active = nComms;
  while (active > 0) {
    int anyProgress = 0;
    active = 0;
    for (int i = 0; i < nComms; i++) {
      struct commRun* run = &runs[i];
      if (run->failed || run->nFinished == run->nTasks) continue;
      ncclResult_t res = ncclSuccess;
      if (run->comm->abortFlag)
        res = chrFail(ncclRemoteError, "operation interrupted: communicator %p was aborted", (void*)run->comm);
      int progressed = 0;
      if (res == ncclSuccess) res = commProgress(run, &progressed);
      if (res == ncclSuccess && !progressed && timeoutNs) {
        const uint64_t t = chrNowNs();
        if (run->lastProgressNs == 0) run->lastProgressNs = t;
        if (t - run->lastProgressNs > timeoutNs) {
          char links[512];
          const int waited = waitedLinks(run, links, sizeof(links));
          res = chrFail(ncclTimeout, "comm %p rank %d: no progress for %lld s%s%s (peer dead or stuck? CHORUS_TIMEOUT)",
                        (void*)run->comm, run->comm->rank, (long long)(timeoutNs / 1000000000ull),
                        waited ? "; waiting on " : "", waited ? links : "");
        }
      }
      if (res != ncclSuccess) {
        if (res != ncclTimeout) noteStall(run);
        if (first == ncclSuccess) first = res;
        failRun(run, res);
        continue;
      }
      if (progressed) {
        run->lastProgressNs = 0;
        anyProgress = 1;
      }
      if (run->nFinished < run->nTasks) active++;
    }
    if (anyProgress) {
      idleSince = 0;
    } else if (active > 0) {
      const uint64_t now = chrNowNs();
      if (idleSince == 0) idleSince = now;
      if (chrIdlePoll(now - idleSince, ownCoreSpinNs) && sleepOnLinks(runs, nComms) < 0) chrIdleNap();
    }
  }
  return first;
}
