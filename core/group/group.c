/*
 * group.c: ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.
 */
#include <stdlib.h>
#include "api/api.h"
#include "comm/comm.h"
#include "exec/exec.h"
#include "group/group.h"
#include "log/check.h"
#include "log/log.h"

#define MAX_DEFERRED_INITS 1024

static __thread int groupDepth;
static __thread struct chrCollTask* taskHead;
static __thread struct chrCollTask* taskTail;
static __thread ncclResult_t groupError;
static __thread struct ncclComm* deferredInits[MAX_DEFERRED_INITS];
static __thread int nDeferredInits;

int chrGroupDepth(void) { return groupDepth; }

void chrGroupNoteError(ncclResult_t res) {
  if (groupDepth > 0 && groupError == ncclSuccess) groupError = res;
}

static void freeTasks(struct chrCollTask* t) {
  while (t) {
    struct chrCollTask* next = t->next;
    atomic_fetch_sub(&t->comm->busy, 1);
    free(t);
    t = next;
  }
}

ncclResult_t chrGroupEnqueue(struct chrCollTask* task) {
  task->next = NULL;
  atomic_fetch_add(&task->comm->busy, 1);
  if (groupDepth == 0) {
    ncclResult_t res = chrExecTasks(task);
    freeTasks(task);
    return res;
  }
  if (taskTail) taskTail->next = task;
  else taskHead = task;
  taskTail = task;
  return ncclSuccess;
}

ncclResult_t chrGroupDeferInit(struct ncclComm* comm) {
  if (nDeferredInits == MAX_DEFERRED_INITS)
    return chrFail(ncclInvalidUsage, "more than %d communicator inits in one group", MAX_DEFERRED_INITS);
  deferredInits[nDeferredInits++] = comm;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  chrClearLastError();
  groupDepth++;
  return ncclSuccess;
}

/* Wait for the deferred inits of a blocking group; non-blocking comms keep initialising and are
 * polled with ncclCommGetAsyncError. */
static ncclResult_t finishDeferredInits(void) {
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < nDeferredInits; i++) {
    struct ncclComm* comm = deferredInits[i];
    if (!comm->config.blocking) { if (first == ncclSuccess) first = ncclInProgress; continue; }
    ncclResult_t res = chrCommInitWait(comm);
    if (res != ncclSuccess && CHR_IS_ERROR(first) == 0) first = res;
  }
  nDeferredInits = 0;
  return first;
}

static ncclResult_t groupEndCommon(void) {
  if (groupDepth == 0)
    return chrFail(ncclInvalidUsage, "ncclGroupEnd: not inside a group (missing ncclGroupStart)");
  if (--groupDepth > 0) return ncclSuccess;
  struct chrCollTask* tasks = taskHead;
  taskHead = taskTail = NULL;
  ncclResult_t initRes = finishDeferredInits();
  if (groupError != ncclSuccess) {
    ncclResult_t res = groupError;
    groupError = ncclSuccess;
    freeTasks(tasks);
    chrSetLastError("group failed: a call inside it returned %s (%d); no operation of the group was run",
                    pncclGetErrorString(res), (int)res);
    return res;
  }
  if (CHR_IS_ERROR(initRes)) { freeTasks(tasks); return initRes; }
  ncclResult_t res = chrExecTasks(tasks);
  freeTasks(tasks);
  if (res != ncclSuccess) return res;
  return initRes;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  return groupEndCommon();
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  if (simInfo == NULL) return chrFail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (simInfo->magic != 0x74685283u)
    return chrFail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo not initialized via NCCL_SIM_INFO_INITIALIZER");
  if (groupDepth == 0)
    return chrFail(ncclInvalidUsage, "ncclGroupSimulateEnd: not inside a group (missing ncclGroupStart)");
  if (groupDepth > 1) { groupDepth--; return ncclSuccess; }
  groupDepth = 0;
  float total = 0.0f;
  for (struct chrCollTask* t = taskHead; t; t = t->next) total += t->estimatedUs;
  freeTasks(taskHead);
  taskHead = taskTail = NULL;
  ncclResult_t res = groupError;
  groupError = ncclSuccess;
  ncclResult_t initRes = finishDeferredInits();
  simInfo->estimatedTime = total;
  if (res != ncclSuccess) return res;
  return CHR_IS_ERROR(initRes) ? initRes : ncclSuccess;
}
