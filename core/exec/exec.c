/*
 * exec.c: the host executor's progress loop.
 *
 * Per channel, three counters walk each link: receives posted (up to CHR_STEPS ahead of the
 * consumer), receives completed, sends posted and sends completed. A step runs when its receive has
 * completed and a send slot is free; it reads the received slot and the local input in one pass and
 * writes the output and the next send slot (chrReduce with two outputs).
 * A task that makes no progress for CHORUS_TIMEOUT seconds fails: a dead peer is an error, not a hang.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comm/comm.h"
#include "config/param.h"
#include "exec/exec.h"
#include "exec/idle.h"
#include "log/check.h"
#include "log/log.h"

struct chanState {
  struct chrLink* send;
  struct chrLink* recv;
  uint64_t nSteps, step;
  uint64_t nRecvs, recvPosted, recvDone, recvConsumed;
  uint64_t sendPosted, sendDone;
  size_t recvBytes[CHR_STEPS];
};

struct commRun {
  struct ncclComm* comm;
  struct chrCollTask* task; /* current */
  struct chrCollTask* last; /* last task of this comm in the list */
  struct chanState ch[CHR_MAX_CHANNELS];
  uint64_t lastProgressNs;
  int done;
};

/* Resolve the reduction op now: a device-resident PreMulSum scalar is read when the collective runs. */
static ncclResult_t resolveOp(struct chrCollTask* t) {
  if (t->func != ncclFuncAllReduce && t->func != ncclFuncReduce && t->func != ncclFuncReduceScatter)
    return ncclSuccess;
  if ((int)t->userOp < ncclNumOps) return chrRedOpFromBuiltin(t->userOp, t->type, t->comm->nRanks, &t->op);
  struct chrUserRedOp* u = &t->comm->userOps[(int)t->userOp - ncclNumOps];
  const void* scalar = u->residence == ncclScalarDevice ? u->scalarPtr : u->scalar;
  return chrRedOpPreMulSum(t->type, scalar, &t->op);
}

static void runStep(const struct chrCollTask* t, const struct chrStep* st, void* sendSlot, const void* recvSlot) {
  const chrRedOp* op = &t->op;
  size_t bytes = st->count * t->typeSize;
  if (st->local != NULL) {
    if (st->final && op->kind == chrRedSumPostDiv) {
      void* out = st->out ? st->out : sendSlot;
      chrReduce(op, out, NULL, recvSlot, st->local, st->count);
      chrReducePost(op, out, out, st->count);
      if (sendSlot && out != sendSlot) memcpy(sendSlot, out, bytes);
    } else {
      void* dst0 = st->out ? st->out : sendSlot;
      void* dst1 = st->out ? sendSlot : NULL;
      if (dst0) chrReduce(op, dst0, dst1, recvSlot, st->local, st->count);
    }
  } else {
    if (st->out && st->out != recvSlot) memcpy(st->out, recvSlot, bytes);
    if (sendSlot) memcpy(sendSlot, recvSlot, bytes);
  }
}

/* One pass over one channel. Sets *progressed when anything moved. */
static ncclResult_t channelProgress(struct chrCollTask* t, int c, struct chanState* cs, int* progressed) {
  while (cs->recvPosted < cs->nRecvs && cs->recvPosted < cs->recvConsumed + CHR_STEPS) {
    CHECK(cs->recv->ops->post(cs->recv, (int)(cs->recvPosted % CHR_STEPS), cs->recv->stepSize));
    cs->recvPosted++;
    *progressed = 1;
  }
  while (cs->sendDone < cs->sendPosted) {
    int done = 0;
    size_t bytes = 0;
    CHECK(cs->send->ops->test(cs->send, (int)(cs->sendDone % CHR_STEPS), &done, &bytes));
    if (!done) break;
    cs->sendDone++;
    *progressed = 1;
  }
  while (cs->recvDone < cs->recvPosted) {
    int done = 0;
    size_t bytes = 0;
    int slot = (int)(cs->recvDone % CHR_STEPS);
    CHECK(cs->recv->ops->test(cs->recv, slot, &done, &bytes));
    if (!done) break;
    cs->recvBytes[slot] = bytes;
    cs->recvDone++;
    *progressed = 1;
  }
  while (cs->step < cs->nSteps) {
    struct chrStep st;
    t->algo->step(t, c, cs->step, &st);
    const void* recvSlot = NULL;
    void* sendSlot = NULL;
    if (st.recv) {
      if (cs->recvConsumed >= cs->recvDone) break;
      int slot = (int)(cs->recvConsumed % CHR_STEPS);
      size_t expect = st.count * t->typeSize;
      if (cs->recvBytes[slot] != expect)
        return chrFail(ncclRemoteError, "%s: rank %d sent %zu bytes on channel %d step %llu, expected %zu (ranks disagree on the call?)",
                       t->algo->name, cs->recv->peer, cs->recvBytes[slot], c, (unsigned long long)cs->step, expect);
      recvSlot = cs->recv->slots[slot];
    }
    if (st.send) {
      if (cs->sendPosted - cs->sendDone >= CHR_STEPS) break;
      sendSlot = cs->send->slots[cs->sendPosted % CHR_STEPS];
    }
    runStep(t, &st, sendSlot, recvSlot);
    if (st.send) {
      CHECK(cs->send->ops->post(cs->send, (int)(cs->sendPosted % CHR_STEPS), st.count * t->typeSize));
      cs->sendPosted++;
    }
    if (st.recv) cs->recvConsumed++;
    cs->step++;
    *progressed = 1;
    /* Keep receives flowing while computing a long run of steps. */
    if (st.recv && cs->recvPosted < cs->nRecvs && cs->recvPosted < cs->recvConsumed + CHR_STEPS) break;
  }
  return ncclSuccess;
}

static int channelDone(const struct chanState* cs) {
  return cs->step == cs->nSteps && cs->sendDone == cs->sendPosted && cs->recvConsumed == cs->nRecvs;
}

/* Single rank: the result is the local input through the op. */
static void runSingleRank(struct chrCollTask* t) {
  if (t->count == 0) return;
  chrReduce(&t->op, t->recvbuff, NULL, NULL, t->sendbuff, t->count);
  chrReducePost(&t->op, t->recvbuff, t->recvbuff, t->count);
}

static ncclResult_t startTask(struct commRun* run) {
  struct chrCollTask* t = run->task;
  CHECK(resolveOp(t));
  memset(run->ch, 0, sizeof(run->ch));
  if (t->comm->nRanks == 1) {
    runSingleRank(t);
    return ncclSuccess;
  }
  CHECK(chrTransportConnectRing(t->comm, t->nChannels));
  for (int c = 0; c < t->nChannels; c++) {
    struct chanState* cs = &run->ch[c];
    cs->send = t->comm->channels[c].ringSend;
    cs->recv = t->comm->channels[c].ringRecv;
    t->algo->counts(t, c, &cs->nSteps, &cs->nRecvs);
  }
  return ncclSuccess;
}

static ncclResult_t taskProgress(struct commRun* run, int* progressed, int* finished) {
  struct chrCollTask* t = run->task;
  *finished = 1;
  if (t->comm->nRanks == 1) return ncclSuccess;
  for (int c = 0; c < t->nChannels; c++) {
    struct chanState* cs = &run->ch[c];
    if (channelDone(cs)) continue;
    CHECK(channelProgress(t, c, cs, progressed));
    if (!channelDone(cs)) *finished = 0;
  }
  return ncclSuccess;
}

static struct chrCollTask* nextOfComm(struct chrCollTask* t, struct chrCollTask* last) {
  if (t == last) return NULL;
  for (t = t->next; t != NULL; t = t->next)
    if (t->comm == last->comm) return t;
  return NULL;
}

static ncclResult_t failRun(struct commRun* run, ncclResult_t res) {
  chrCommSetAsyncError(run->comm, res);
  run->done = 1;
  return res;
}

struct connectJob {
  struct ncclComm* comm;
  int nChannels;
  ncclResult_t res;
  char error[1024];
  pthread_t thread;
};

static void* connectThread(void* arg) {
  struct connectJob* job = arg;
  job->res = chrTransportConnectRing(job->comm, job->nChannels);
  snprintf(job->error, sizeof(job->error), "%s", chrThreadLastError());
  return NULL;
}

/* Connect every comm's links before running anything. Connecting is collective and blocks, so when
 * one thread drives several comms (ncclCommInitAll, nccl-tests -g) each comm connects on its own
 * thread; otherwise comm A would wait for a peer that this very thread must drive in comm B. */
static ncclResult_t connectAll(struct commRun* runs, int nComms, struct chrCollTask* list) {
  struct connectJob* jobs = calloc((size_t)nComms, sizeof(*jobs));
  if (jobs == NULL) return chrFail(ncclSystemError, "out of memory connecting %d communicators", nComms);
  int nJobs = 0;
  for (int i = 0; i < nComms; i++) {
    int need = 0;
    for (struct chrCollTask* t = list; t; t = t->next)
      if (t->comm == runs[i].comm && t->comm->nRanks > 1 && t->nChannels > need) need = t->nChannels;
    int missing = 0;
    for (int c = 0; c < need; c++)
      if (!runs[i].comm->channels[c].ringSend || !runs[i].comm->channels[c].ringRecv) missing = 1;
    if (missing) { jobs[nJobs].comm = runs[i].comm; jobs[nJobs].nChannels = need; nJobs++; }
  }
  ncclResult_t first = ncclSuccess;
  if (nJobs == 1) {
    first = chrTransportConnectRing(jobs[0].comm, jobs[0].nChannels);
    if (first != ncclSuccess) chrCommSetAsyncError(jobs[0].comm, first);
  } else if (nJobs > 1) {
    int started = 0;
    for (; started < nJobs; started++)
      if (pthread_create(&jobs[started].thread, NULL, connectThread, &jobs[started]) != 0) break;
    if (started < nJobs) first = chrFail(ncclSystemError, "cannot start a thread to connect communicator %d", started);
    for (int j = 0; j < started; j++) {
      pthread_join(jobs[j].thread, NULL);
      if (jobs[j].res == ncclSuccess) continue;
      chrSetLastError("%s", jobs[j].error);
      chrCommSetAsyncError(jobs[j].comm, jobs[j].res);
      if (first == ncclSuccess) first = jobs[j].res;
    }
  }
  free(jobs);
  return first;
}

ncclResult_t chrExecTasks(struct chrCollTask* list) {
  int nComms = 0;
  for (struct chrCollTask* t = list; t; t = t->next) {
    int seen = 0;
    for (struct chrCollTask* u = list; u != t; u = u->next)
      if (u->comm == t->comm) { seen = 1; break; }
    if (!seen) nComms++;
  }
  if (nComms == 0) return ncclSuccess;
  struct commRun* runs = calloc((size_t)nComms, sizeof(*runs));
  if (runs == NULL) return chrFail(ncclSystemError, "out of memory starting %d communicators' work", nComms);
  int k = 0;
  for (struct chrCollTask* t = list; t; t = t->next) {
    int i;
    for (i = 0; i < k; i++)
      if (runs[i].comm == t->comm) break;
    if (i == k) { runs[k].comm = t->comm; runs[k].task = t; k++; }
    runs[i].last = t;
  }

  ncclResult_t first = connectAll(runs, nComms, list);
  if (first != ncclSuccess) {
    free(runs);
    return first;
  }
  uint64_t timeoutNs = (uint64_t)chrParamInt(CHR_P_TIMEOUT) * 1000000000ull;
  uint64_t now = chrNowNs();
  for (int i = 0; i < nComms; i++) {
    runs[i].lastProgressNs = now;
    ncclResult_t res = startTask(&runs[i]);
    if (res != ncclSuccess && first == ncclSuccess) first = failRun(&runs[i], res);
    else if (res != ncclSuccess) failRun(&runs[i], res);
  }
  int active = nComms;
  uint64_t idleSince = chrNowNs();
  while (active > 0) {
    int anyProgress = 0;
    active = 0;
    for (int i = 0; i < nComms; i++) {
      struct commRun* run = &runs[i];
      if (run->done) continue;
      if (run->comm->abortFlag) {
        ncclResult_t res = chrFail(ncclRemoteError, "collective interrupted: communicator %p was aborted", (void*)run->comm);
        if (first == ncclSuccess) first = res;
        failRun(run, res);
        continue;
      }
      int progressed = 0, finished = 0;
      ncclResult_t res = taskProgress(run, &progressed, &finished);
      while (res == ncclSuccess && finished) {
        run->task = nextOfComm(run->task, run->last);
        if (run->task == NULL) { run->done = 1; break; }
        progressed = 1;
        res = startTask(run);
        if (res == ncclSuccess) res = taskProgress(run, &progressed, &finished);
      }
      if (res != ncclSuccess) {
        if (first == ncclSuccess) first = res;
        failRun(run, res);
        continue;
      }
      if (run->done) continue;
      active++;
      uint64_t t = chrNowNs();
      if (progressed) {
        run->lastProgressNs = t;
        anyProgress = 1;
      } else if (timeoutNs && t - run->lastProgressNs > timeoutNs) {
        res = chrFail(ncclTimeout, "%s on comm %p rank %d: no progress for %lld s (peer dead or stuck? CHORUS_TIMEOUT)",
                      run->task->algo->name, (void*)run->comm, run->comm->rank, (long long)(timeoutNs / 1000000000ull));
        if (first == ncclSuccess) first = res;
        failRun(run, res);
      }
    }
    if (anyProgress) idleSince = chrNowNs();
    else if (active > 0) chrIdleWait(chrNowNs() - idleSince);
  }
  free(runs);
  return first;
}
