/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group.c: ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd (their entry points: api/group_api.c).
 *
 * Group state is per thread: the queued tasks, the inits and the calls over a communicator's
 * bootstrap (struct chrCommJob) deferred to the outermost end, and the first error of a call inside the group (which fails the
 * whole group: nothing of it runs).
 *
 * Lifetime: a queued task holds a reference on its communicator (comm->refs), so ncclCommAbort from
 * another thread, while this thread still has tasks of that comm in an open group, can return at
 * once: the comm is freed when the last reference goes (the group's end discards the tasks of an
 * aborted comm). comm->busy counts calls that are running, which abort waits for (they stop within
 * one progress pass once the abort flag is up).
 */
#include <stdlib.h>
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "exec/dev_exec.h"
#include "exec/exec.h"
#include "config/param.h"
#include "group/check_calls.h"
#include "group/group.h"
#include "group/task_pool.h"
#include "plan/plan.h"
#include "profile/profile.h"
#include "log/check.h"
#include "log/log.h"

#define MAX_DEFERRED_INITS 1024

static __thread int groupDepth;
static __thread struct chrCollTask* taskHead;
static __thread struct chrCollTask* taskTail;
static __thread ncclResult_t groupError;
static __thread struct ncclComm* deferredInits[MAX_DEFERRED_INITS];
static __thread int nDeferredInits;
static __thread struct chrCommJob* commJobs;
static __thread int nCommJobs, commJobsCap;

int chrGroupDepth(void) { return groupDepth; }

void chrGroupNoteError(ncclResult_t res) {
  if (groupDepth > 0 && groupError == ncclSuccess) groupError = res;
}

static void freeTasks(struct chrCollTask* t) {
  while (t) {
    struct chrCollTask* next = t->next;
    chrCommRelease(t->comm);
    chrTaskFree(t);
    t = next;
  }
}

/* The planner sees every task of the group before anything runs: a task it cannot plan fails the
 * whole group. */
static ncclResult_t planTasks(struct chrCollTask* list) {
  for (struct chrCollTask* t = list; t; t = t->next) {
    ncclResult_t res = chrPlanTask(t);
    if (res != ncclSuccess) {
      chrCommNoteError(t->comm);
      return res;
    }
  }
  return ncclSuccess;
}

/* One thread at a time runs calls on a comm (NCCL's rule too; two at once would interleave their
 * steps on the same links). A comm's runner is the thread running its calls: the address of that
 * thread's runnerToken, 0 when none. */
static __thread char runnerToken;

static void releaseComms(struct chrCollTask* list, const struct chrCollTask* end) {
  const uintptr_t me = (uintptr_t)&runnerToken;
  for (struct chrCollTask* t = list; t != end; t = t->next) {
    uintptr_t mine = me;
    atomic_compare_exchange_strong(&t->comm->runner, &mine, 0);
  }
}

static ncclResult_t claimComms(struct chrCollTask* list) {
  const uintptr_t me = (uintptr_t)&runnerToken;
  for (struct chrCollTask* t = list; t; t = t->next) {
    uintptr_t none = 0;
    if (atomic_compare_exchange_strong(&t->comm->runner, &none, me) || none == me) continue;
    releaseComms(list, t);
    ncclResult_t res = chrFail(ncclInvalidUsage,
                               "%s on comm %p rank %d: another thread is running a call on this communicator; a "
                               "communicator takes calls from one thread at a time (as in NCCL)",
                               chrProfFuncName((int)t->func), (void*)t->comm, t->comm->rank);
    chrCommNoteError(t->comm);
    return res;
  }
  return ncclSuccess;
}

/* Plan, then run a list of tasks: running calls are counted on their comms (abort waits for them).
 * Tasks on GPU buffers are launched first (they return at once, kernels run on their streams), then
 * the host executor runs the host tasks to completion. The list is reordered (host tasks first, then
 * device tasks); it still holds every task, for freeTasks. */
static ncclResult_t runClaimed(struct chrCollTask** list) {
  struct chrCollTask* devTasks = NULL;
  ncclResult_t res = chrDevPartition(list, &devTasks);
  if (res != ncclSuccess) {
    chrCommNoteError((*list)->comm);
    return res;
  }
  CHECK(planTasks(*list));
  if (chrProfOn(CHR_PROF_NEED_GROUP)) chrProfTasksPlanned(*list);
  for (struct chrCollTask* t = *list; t; t = t->next) atomic_fetch_add(&t->comm->busy, 1);
  if (devTasks) res = chrDevExecTasks(devTasks);
  if (*list != devTasks) {
    struct chrCollTask* hostTail = *list;
    while (hostTail->next != devTasks) hostTail = hostTail->next;
    hostTail->next = NULL; /* the host executor runs to the end of its list */
    ncclResult_t hostRes = chrExecTasks(*list);
    hostTail->next = devTasks;
    if (res == ncclSuccess) res = hostRes;
  }
  for (struct chrCollTask* t = *list; t; t = t->next) atomic_fetch_sub(&t->comm->busy, 1);
  return res;
}

static ncclResult_t runTasks(struct chrCollTask** list) {
  CHECK(claimComms(*list));
  ncclResult_t res = chrParamInt(CHR_P_CHECK_CALLS) ? chrCheckCalls(*list) : ncclSuccess;
  if (res == ncclSuccess) res = runClaimed(list);
  releaseComms(*list, NULL);
  return res;
}

ncclResult_t chrGroupEnqueue(struct chrCollTask* task) {
  task->next = NULL;
  chrCommRetain(task->comm);
  if (task->profApi) chrProfApiStop(task); /* the call is enqueued */
  if (groupDepth == 0) {
    if (chrProfGroupApiOpen) chrProfGroupEndBegin();
    ncclResult_t res = runTasks(&task);
    freeTasks(task);
    if (chrProfGroupApiOpen) chrProfGroupEndFinish();
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

ncclResult_t chrGroupDeferCommJob(const struct chrCommJob* job) {
  if (nCommJobs == commJobsCap) {
    int cap = commJobsCap ? 2 * commJobsCap : 16;
    struct chrCommJob* jobs = realloc(commJobs, sizeof(*jobs) * (size_t)cap);
    if (jobs == NULL) return chrFail(ncclSystemError, "out of memory queueing a call in a group");
    commJobs = jobs;
    commJobsCap = cap;
  }
  if (job->child) CHECK(chrGroupDeferInit(job->child));
  chrCommRetain(job->parent);
  commJobs[nCommJobs++] = *job;
  return ncclSuccess;
}

void chrGroupDiscardTasks(struct ncclComm* comm) {
  if (chrProfGroupApiOpen) chrProfGroupApiDiscard(comm);
  struct chrCollTask* keep = NULL;
  struct chrCollTask* keepTail = NULL;
  for (struct chrCollTask* t = taskHead; t;) {
    struct chrCollTask* next = t->next;
    t->next = NULL;
    if (t->comm == comm) {
      freeTasks(t);
    } else {
      if (keepTail) keepTail->next = t;
      else keep = t;
      keepTail = t;
    }
    t = next;
  }
  taskHead = keep;
  taskTail = keepTail;
}

void chrGroupDiscardComm(struct ncclComm* comm) {
  chrGroupDiscardTasks(comm);
  int n = 0;
  for (int i = 0; i < nDeferredInits; i++)
    if (deferredInits[i] != comm) deferredInits[n++] = deferredInits[i];
  nDeferredInits = n;
  n = 0;
  for (int i = 0; i < nCommJobs; i++) {
    struct chrCommJob* j = &commJobs[i];
    if (j->parent != comm && j->child != comm) {
      commJobs[n++] = *j;
      continue;
    }
    /* A job of an aborted parent never runs: its child fails (a window stays NULL); one whose child
     * is aborted still takes part in the parent's exchange (the other ranks expect it), as
     * NCCL_SPLIT_NOCOLOR. */
    if (j->parent == comm) {
      if (j->child) chrCommSetAsyncError(j->child, ncclInvalidUsage);
      chrCommRelease(j->parent);
      free(j->exclude);
    } else {
      j->child = NULL;
      j->color = NCCL_SPLIT_NOCOLOR;
      commJobs[n++] = *j;
    }
  }
  nCommJobs = n;
}

ncclResult_t chrGroupStart(void) {
  chrClearLastError();
  groupDepth++;
  return ncclSuccess;
}

/* Run the deferred calls over the comms' bootstraps (comm/comm_jobs.c), then wait for the deferred inits of
 * blocking comms; non-blocking comms keep initialising and are polled with ncclCommGetAsyncError. */
static ncclResult_t finishDeferred(void) {
  ncclResult_t first = ncclSuccess;
  if (nCommJobs > 0) {
    first = chrCommRunJobs(commJobs, nCommJobs);
    for (int i = 0; i < nCommJobs; i++) {
      chrCommRelease(commJobs[i].parent);
      free(commJobs[i].exclude);
    }
    nCommJobs = 0;
  }
  for (int i = 0; i < nDeferredInits; i++) {
    struct ncclComm* comm = deferredInits[i];
    if (!comm->config.blocking) {
      if (first == ncclSuccess) first = ncclInProgress;
      continue;
    }
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
  ncclResult_t initRes = finishDeferred();
  if (groupError != ncclSuccess) {
    ncclResult_t res = groupError;
    groupError = ncclSuccess;
    freeTasks(tasks);
    chrSetLastError("group failed: a call inside it returned %s (%d); no operation of the group was run",
                    pncclGetErrorString(res), (int)res);
    return res;
  }
  if (CHR_IS_ERROR(initRes)) { freeTasks(tasks); return initRes; }
  ncclResult_t res = tasks ? runTasks(&tasks) : ncclSuccess;
  freeTasks(tasks);
  if (res != ncclSuccess) return res;
  return initRes;
}

ncclResult_t chrGroupEnd(void) {
  /* GroupApi events (profile.h) are open only when a profiler listens: one test otherwise. */
  if (chrProfGroupApiOpen == 0 || groupDepth != 1) return groupEndCommon();
  chrProfGroupEndBegin();
  ncclResult_t res = groupEndCommon();
  chrProfGroupEndFinish();
  return res;
}

ncclResult_t chrGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo == NULL) return chrFail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (simInfo->magic != 0x74685283u)
    return chrFail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo not initialized via NCCL_SIM_INFO_INITIALIZER");
  if (groupDepth == 0)
    return chrFail(ncclInvalidUsage, "ncclGroupSimulateEnd: not inside a group (missing ncclGroupStart)");
  if (groupDepth > 1) { groupDepth--; return ncclSuccess; }
  groupDepth = 0;
  if (chrProfGroupApiOpen) {
    chrProfGroupEndBegin();
    chrProfGroupEndFinish(); /* nothing runs, so nothing below the API events */
  }
  float total = 0.0f;
  ncclResult_t planRes = planTasks(taskHead);
  for (struct chrCollTask* t = taskHead; t && planRes == ncclSuccess; t = t->next) total += t->estimatedUs;
  freeTasks(taskHead);
  taskHead = taskTail = NULL;
  ncclResult_t res = groupError;
  groupError = ncclSuccess;
  ncclResult_t initRes = finishDeferred();
  simInfo->estimatedTime = total;
  if (res != ncclSuccess) return res;
  if (planRes != ncclSuccess) return planRes;
  return CHR_IS_ERROR(initRes) ? initRes : ncclSuccess;
}
