/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prof_exec.c: the profiler's events of the host executor (ProxyOp, ProxyStep) and of device
 * launches (KernelCh); see profile.h for when each starts and stops.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commstate/comm.h"
#include "hostdev/task.h"
#include "profile/profile.h"
#include "transport/transport.h"

_Static_assert(sizeof(((struct chrProfLinkOp*)0)->step) / sizeof(struct chrProfStepEv) == CHR_STEPS,
               "one ProxyStep slot per staging slot");

void chrProfOpStart(struct chrProfLinkOp* lo, struct chrCollTask* t, int channel, struct chrLink* link,
                    uint64_t nSteps, size_t chunkBytes) {
  struct chrProfiler* prof = t->comm->profiler;
  memset(lo, 0, sizeof(*lo));
  if (prof == NULL) return;
  struct chrProfDescr d;
  memset(&d, 0, sizeof(d));
  d.d.proxyOp.pid = getpid();
  d.d.proxyOp.channelId = (uint8_t)channel;
  d.d.proxyOp.peer = link->peer;
  d.d.proxyOp.nSteps = nSteps > (uint64_t)INT32_MAX ? INT32_MAX : (int)nSteps;
  d.d.proxyOp.chunkSize = chunkBytes > (size_t)INT32_MAX ? INT32_MAX : (int)chunkBytes;
  d.d.proxyOp.isSend = link->isSend;
  lo->prof = prof;
  lo->link = link;
  chrProfilerStart(prof, ncclProfileProxyOp, t->profColl, &d, &lo->op);
  chrProfilerRecord(prof, lo->op, ncclProfilerProxyOpInProgress_v4, NULL);
  lo->steps = chrProfOn(CHR_PROF_NEED_STEP) != 0;
}

void chrProfOpStop(struct chrProfLinkOp* lo) {
  if (lo->prof == NULL) return;
  for (int s = 0; s < CHR_STEPS; s++)
    if (lo->step[s].open) {
      lo->link->phandle[s] = NULL;
      chrProfilerStop(lo->prof, lo->step[s].ref.handle);
      lo->step[s].open = 0;
    }
  chrProfilerStop(lo->prof, lo->op);
  lo->prof = NULL;
}

void chrProfStepStart(struct chrProfLinkOp* lo, struct chrLink* link, int slot, uint64_t step, int isSend) {
  if (!lo->steps) return;
  struct chrProfStepEv* ev = &lo->step[slot];
  struct chrProfDescr d;
  memset(&d, 0, sizeof(d));
  d.d.proxyStep.step = step > (uint64_t)INT32_MAX ? INT32_MAX : (int)step;
  ev->ref.prof = lo->prof;
  chrProfilerStart(lo->prof, ncclProfileProxyStep, lo->op, &d, &ev->ref.handle);
  ev->open = 1;
  link->phandle[slot] = &ev->ref; /* the net plugin's events of this transfer hang below it */
  ncclProfilerEventStateArgs_v6_t args = {0};
  chrProfilerRecord(lo->prof, ev->ref.handle,
                    isSend ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait, &args);
}

void chrProfStepState(struct chrProfLinkOp* lo, int slot, ncclProfilerEventState_t state, size_t bytes) {
  struct chrProfStepEv* ev = &lo->step[slot];
  if (!ev->open) return;
  ncclProfilerEventStateArgs_v6_t args = {0};
  args.proxyStep.transSize = bytes;
  chrProfilerRecord(lo->prof, ev->ref.handle, state, &args);
}

void chrProfStepStop(struct chrProfLinkOp* lo, struct chrLink* link, int slot) {
  struct chrProfStepEv* ev = &lo->step[slot];
  if (!ev->open) return;
  link->phandle[slot] = NULL;
  chrProfilerStop(lo->prof, ev->ref.handle);
  ev->open = 0;
}

/* ---- KernelCh ----------------------------------------------------------------------------------- */

struct kernelEvents {
  struct chrProfiler* prof;
  int n;
  void* handle[]; /* per task and channel, in list order */
};

static uint64_t realtimeNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void* chrProfKernelBegin(struct ncclComm* comm, struct chrCollTask* list) {
  if (comm->profiler == NULL) return NULL;
  int n = 0;
  for (struct chrCollTask* t = list; t; t = t->next)
    if (t->comm == comm && !t->noop) n += t->nChannels;
  if (n == 0) return NULL;
  struct kernelEvents* ev = calloc(1, sizeof(*ev) + (size_t)n * sizeof(void*));
  if (ev == NULL) return NULL; /* no events rather than a failed launch */
  ev->prof = comm->profiler;
  uint64_t now = realtimeNs();
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm || t->noop) continue;
    for (int c = 0; c < t->nChannels; c++) {
      struct chrProfDescr d;
      memset(&d, 0, sizeof(d));
      d.d.kernelCh.channelId = (uint8_t)chrDevTaskChannel(t, c);
      d.d.kernelCh.pTimer = now;
      chrProfilerStart(ev->prof, ncclProfileKernelCh, t->profColl, &d, &ev->handle[ev->n++]);
    }
  }
  return ev;
}

void chrProfKernelEnd(void* state) {
  struct kernelEvents* ev = state;
  if (ev == NULL) return;
  ncclProfilerEventStateArgs_v6_t args = {0};
  args.kernelCh.pTimer = realtimeNs();
  for (int i = 0; i < ev->n; i++) {
    chrProfilerRecord(ev->prof, ev->handle[i], ncclProfilerKernelChStop, &args);
    chrProfilerStop(ev->prof, ev->handle[i]);
  }
  free(ev);
}
