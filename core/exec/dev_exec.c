/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_exec.c: launching device tasks (dev_exec.h).
 *
 * Per comm and group, two launches (exec/dev_launch.c makes them whole): the collectives', then
 * the sends and receives with the copy engine's work.
 *
 * Streams: the launch goes to the first task's stream, the group's other streams joined before and
 * after; outside graph capture a rank first waits for its previous launch, so its kernels never run
 * side by side. docs/design.md ("GPU buffers: ranks of one process on one GPU", Launch and Engine
 * sends) has the rest.
 */
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "cuda/device_lib.h"
#include "exec/dev_exec.h"
#include "exec/dev_launch.h"
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

#define MAX_STREAMS 64

static void markPeers(unsigned char* need, int nRanks, const struct chrWork* works, int n) {
  for (int i = 0; i < n; i++)
    for (int l = 0; l < works[i].nLinks && l < CHR_WORK_MAX_LINKS; l++)
      if (works[i].links[l].peer >= 0 && works[i].links[l].peer < nRanks) need[works[i].links[l].peer] = 1;
}

static int kernelWorks(const struct chrDevLaunch* l) {
  int n = 0;
  for (int c = 0; c < l->nChannels; c++) n += l->nWorks[c];
  return n;
}

/* Every peer the plan's works name gets connected first (IPC mode: the first time, this waits for the
 * peer's own first GPU call). */
static ncclResult_t connectPeers(struct ncclComm* comm, const struct chrDevLaunchPlan* plan) {
  if (!chrDevCommConnectsLazily(comm)) return ncclSuccess; /* group mode: connected from the start (no scan per launch) */
  unsigned char* need = calloc((size_t)comm->nRanks, 1);
  if (need == NULL) return chrFail(ncclSystemError, "out of memory for %d ranks", comm->nRanks);
  markPeers(need, comm->nRanks, plan->coll.works, kernelWorks(&plan->coll));
  markPeers(need, comm->nRanks, plan->p2p.works, kernelWorks(&plan->p2p));
  markPeers(need, comm->nRanks, plan->p2p.ceSends, plan->p2p.nCeSends);
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
  if (res == ncclSuccess && plan.coll.nChannels > 0) {
    what = "launching collectives";
    res = chrDevCommLaunch(comm, &plan.coll, s0);
  }
  if (res == ncclSuccess && (plan.p2p.nChannels > 0 || plan.p2p.nCopies > 0 || plan.p2p.nCeSends > 0)) {
    what = "launching sends and receives";
    res = chrDevCommLaunch(comm, &plan.p2p, s0);
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
