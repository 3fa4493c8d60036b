/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof_api.c: the profiler's API-level and group-level events (profile.h), and the per-communicator
 * init/finalize of the profiler plugin.
 *
 * GroupApi events are per thread (groups are per thread) and per communicator (a plugin context is
 * per communicator): this thread's open ones live in a small table, each holding a reference on its
 * communicator so it cannot be freed before the event stops.
 */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "commstate/comm.h"
#include "hostdev/task.h"
#include "log/check.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "profile/profile.h"

#define MAX_GROUP_API 64 /* communicators with a GroupApi event open in one group of one thread */

__thread int chrProfGroupApiOpen;
static __thread struct {
  struct ncclComm* comm;
  void* handle;
} groupApi[MAX_GROUP_API];

ncclResult_t chrProfAttach(struct ncclComm* comm) {
  struct chrProfCommInfo info;
  memset(&info, 0, sizeof(info));
  info.commHash = comm->commHash;
  info.commName = comm->config.commName;
  info.nNodes = comm->nNodes;
  info.nRanks = comm->nRanks;
  info.rank = comm->rank;
  info.net = comm->net;
  return chrProfilerOpen(&info, &comm->profiler);
}

ncclResult_t chrProfDetach(struct ncclComm* comm) {
  ncclResult_t res = chrProfilerClose(comm->profiler);
  comm->profiler = NULL;
  return res;
}

static int isP2p(const struct chrCollTask* t) { return t->func == ncclFuncSend || t->func == ncclFuncRecv; }

/* This thread's GroupApi event of comm, opened on first use (inside groupDepth groups). NULL when
 * there is none to give. */
static void* groupApiOf(struct ncclComm* comm, int groupDepth) {
  for (int i = 0; i < chrProfGroupApiOpen; i++)
    if (groupApi[i].comm == comm) return groupApi[i].handle;
  if (!chrProfOn(CHR_PROF_NEED_API)) return NULL;
  if (chrProfGroupApiOpen == MAX_GROUP_API) return NULL;
  struct chrProfDescr d;
  memset(&d, 0, sizeof(d));
  d.d.groupApi.graphCaptured = false;
  d.d.groupApi.groupDepth = groupDepth + 1; /* 1: the implicit group of a bare call */
  void* h = NULL;
  chrProfilerStart(comm->profiler, ncclProfileGroupApi, NULL, &d, &h);
  if (h == NULL) return NULL;
  chrProfilerRecord(comm->profiler, h, ncclProfilerGroupStartApiStop, NULL);
  chrCommRetain(comm);
  groupApi[chrProfGroupApiOpen].comm = comm;
  groupApi[chrProfGroupApiOpen].handle = h;
  chrProfGroupApiOpen++;
  return h;
}

void chrProfApiStart(struct chrCollTask* t, int groupDepth) {
  struct chrProfiler* prof = t->comm->profiler;
  t->profApi = NULL;
  if (prof == NULL) return;
  void* parent = groupApiOf(t->comm, groupDepth);
  int p2p = isP2p(t);
  if (!chrProfOn(p2p ? CHR_PROF_NEED_P2P_API : CHR_PROF_NEED_COLL_API)) return;
  struct chrProfDescr d;
  memset(&d, 0, sizeof(d));
  if (p2p) {
    d.d.p2pApi.func = chrProfFuncName(t->func);
    d.d.p2pApi.count = t->count;
    d.d.p2pApi.datatype = chrProfTypeName(t->type);
    d.d.p2pApi.stream = t->stream;
  } else {
    d.d.collApi.func = chrProfFuncName(t->func);
    d.d.collApi.count = t->count;
    d.d.collApi.datatype = chrProfTypeName(t->type);
    d.d.collApi.root = t->root < 0 ? 0 : t->root;
    d.d.collApi.stream = t->stream;
  }
  chrProfilerStart(prof, p2p ? ncclProfileP2pApi : ncclProfileCollApi, parent, &d, &t->profApi);
}

void chrProfApiStop(struct chrCollTask* t) { chrProfilerStop(t->comm->profiler, t->profApi); }

void chrProfGroupEndBegin(void) {
  for (int i = 0; i < chrProfGroupApiOpen; i++)
    chrProfilerRecord(groupApi[i].comm->profiler, groupApi[i].handle, ncclProfilerGroupEndApiStart, NULL);
}

void chrProfGroupEndFinish(void) {
  int n = chrProfGroupApiOpen;
  chrProfGroupApiOpen = 0;
  for (int i = 0; i < n; i++) {
    chrProfilerStop(groupApi[i].comm->profiler, groupApi[i].handle);
    chrCommRelease(groupApi[i].comm);
  }
}

void chrProfGroupApiDiscard(struct ncclComm* comm) {
  for (int i = 0; i < chrProfGroupApiOpen; i++) {
    if (groupApi[i].comm != comm) continue;
    chrProfilerStop(comm->profiler, groupApi[i].handle);
    groupApi[i] = groupApi[--chrProfGroupApiOpen];
    chrCommRelease(comm);
    return;
  }
}

/* The bytes a collective moves on this rank, as v1/v2's trafficBytes: the whole buffer for the
 * gathering and scattering collectives, the count otherwise. */
static size_t trafficBytes(const struct chrCollTask* t) {
  size_t bytes = t->count * t->typeSize;
  if (t->func == ncclFuncAllGather || t->func == ncclFuncReduceScatter) bytes *= (size_t)t->comm->nRanks;
  return bytes;
}

static void startTask(struct chrCollTask* t, void* group) {
  struct chrProfiler* prof = t->comm->profiler;
  struct chrProfDescr d;
  memset(&d, 0, sizeof(d));
  d.func = (int)t->func;
  d.datatype = (int)t->type;
  uint8_t nChannels = (uint8_t)(t->nChannels > 255 ? 255 : t->nChannels);
  if (isP2p(t)) {
    d.d.p2p.func = chrProfFuncName(t->func);
    d.d.p2p.buff = t->func == ncclFuncSend ? (void*)t->sendbuff : t->recvbuff;
    d.d.p2p.datatype = chrProfTypeName(t->type);
    d.d.p2p.count = t->count;
    d.d.p2p.peer = t->root;
    d.d.p2p.nChannels = nChannels;
    d.d.p2p.parentGroup = group;
    chrProfilerStart(prof, ncclProfileP2p, t->profApi, &d, &t->profColl);
    return;
  }
  d.op = (int)t->userOp;
  d.algo = t->algo;
  d.proto = t->proto;
  d.trafficBytes = trafficBytes(t);
  d.d.coll.seqNumber = prof->seq[t->func]++;
  d.d.coll.func = chrProfFuncName(t->func);
  d.d.coll.sendBuff = t->sendbuff;
  d.d.coll.recvBuff = t->recvbuff;
  d.d.coll.count = t->count;
  d.d.coll.root = t->root < 0 ? 0 : t->root;
  d.d.coll.datatype = chrProfTypeName(t->type);
  d.d.coll.nChannels = nChannels;
  d.d.coll.nWarps = 0; /* the host executor has no warps; kernels report theirs nowhere */
  d.d.coll.algo = chrAlgoName(t->algo);
  d.d.coll.proto = chrProtoName(t->proto);
  d.d.coll.parentGroup = group;
  chrProfilerStart(prof, ncclProfileColl, t->profApi, &d, &t->profColl);
}

void chrProfTasksPlanned(struct chrCollTask* list) {
  for (struct chrCollTask* t = list; t; t = t->next) {
    int first = 1;
    for (struct chrCollTask* u = list; u != t && first; u = u->next) first = u->comm != t->comm;
    if (!first || t->comm->profiler == NULL) continue;
    struct chrProfiler* prof = t->comm->profiler;
    struct chrProfDescr d;
    memset(&d, 0, sizeof(d));
    void* group = NULL;
    if (chrProfOn(CHR_PROF_NEED_GROUP)) chrProfilerStart(prof, ncclProfileGroup, NULL, &d, &group);
    for (struct chrCollTask* u = t; u; u = u->next) {
      if (u->comm != t->comm) continue;
      u->profColl = NULL;
      if (!chrProfOn(isP2p(u) ? CHR_PROF_NEED_P2P : CHR_PROF_NEED_COLL)) continue;
      startTask(u, group);
      chrProfilerStop(prof, u->profColl); /* enqueued; the handle stays its children's parent */
    }
    chrProfilerStop(prof, group);
  }
}
