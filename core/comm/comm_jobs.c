/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_jobs.c: the calls over a communicator's bootstrap that a group defers to its outermost
 * ncclGroupEnd: splits, shrinks, window registrations, suspends and resumes (struct chrCommJob,
 * comm/lifecycle.h).
 *
 * The jobs of one communicator run in call order on a thread of their own: they share its bootstrap,
 * whose exchanges every rank must make in the same order, while the jobs of different communicators
 * (several ranks driven by one thread, comms from ncclCommInitAll) wait for each other's exchanges.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "comm/lifecycle.h"
#include "comm/window.h"
#include "commstate/comm.h"
#include "log/check.h"
#include "log/log.h"

struct parentRun { /* the jobs of one communicator, run in call order on one thread */
  struct chrCommJob* jobs;
  int n;
  struct ncclComm* parent;
  ncclResult_t res;
  char error[1024];
  pthread_t thread;
};

static ncclResult_t runJob(struct chrCommJob* job) {
  if (job->kind == CHR_JOB_WINDOW)
    return chrWindowExchange(job->parent, job->winBuff, job->winSize, job->flags, job->seq, job->winOut);
  if (job->kind == CHR_JOB_SUSPEND) return chrCommSuspendExchange(job->parent, job->flags, job->seq);
  if (job->kind == CHR_JOB_RESUME) return chrCommResumeExchange(job->parent, job->seq);
  int nranks = 0, rank = -1;
  ncclUniqueId id;
  ncclResult_t res;
  if (job->kind == CHR_JOB_SHRINK) {
    if (job->flags == NCCL_SHRINK_ABORT) chrShrinkAbortParent(job->parent);
    res = chrShrinkExchange(job->parent, job->exclude, job->nExclude, job->seq, &nranks, &rank, &id);
  } else {
    res = chrSplitExchange(job->parent, job->color, job->key, job->seq, &nranks, &rank, &id);
  }
  if (res == ncclSuccess && job->child != NULL) {
    job->child->cudaDev = job->parent->cudaDev;
    res = chrCommInitLaunch(job->child, nranks, &id, rank, 1);
    if (res == ncclInProgress) res = ncclSuccess;
  } else if (res != ncclSuccess && job->child != NULL) {
    chrCommSetAsyncError(job->child, res);
  }
  return res;
}

static void* parentThread(void* arg) {
  struct parentRun* run = arg;
  run->res = ncclSuccess;
  for (int i = 0; i < run->n; i++) {
    if (run->jobs[i].parent != run->parent) continue;
    ncclResult_t res = runJob(&run->jobs[i]);
    if (res != ncclSuccess && run->res == ncclSuccess) {
      run->res = res;
      snprintf(run->error, sizeof(run->error), "%s", chrThreadLastError());
    }
  }
  return NULL;
}

ncclResult_t chrCommRunJobs(struct chrCommJob* jobs, int n) {
  if (n == 0) return ncclSuccess;
  struct parentRun* runs = calloc((size_t)n, sizeof(*runs));
  if (runs == NULL) return chrFail(ncclSystemError, "ncclGroupEnd: out of memory running %d deferred calls", n);
  int nRuns = 0;
  for (int i = 0; i < n; i++) {
    int seen = 0;
    for (int k = 0; k < nRuns; k++) seen |= runs[k].parent == jobs[i].parent;
    if (seen) continue;
    runs[nRuns].jobs = jobs;
    runs[nRuns].n = n;
    runs[nRuns].parent = jobs[i].parent;
    nRuns++;
  }
  ncclResult_t first = ncclSuccess;
  int started = 0;
  for (; started < nRuns; started++)
    if (pthread_create(&runs[started].thread, NULL, parentThread, &runs[started]) != 0) break;
  if (started < nRuns) first = chrFail(ncclSystemError, "ncclGroupEnd: cannot start a thread for a deferred call");
  for (int k = 0; k < started; k++) {
    pthread_join(runs[k].thread, NULL);
    if (runs[k].res != ncclSuccess && first == ncclSuccess) {
      first = runs[k].res;
      chrSetLastError("%s", runs[k].error);
    }
  }
  /* Jobs that never ran (no thread) leave their children in error, not forever in progress. */
  for (int k = started; k < nRuns; k++)
    for (int i = 0; i < n; i++)
      if (jobs[i].parent == runs[k].parent && jobs[i].child) chrCommSetAsyncError(jobs[i].child, first);
  free(runs);
  return first;
}
