/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group.h: NCCL group semantics. Every call is a group of one; ncclGroupStart/End batch many calls
 * over many communicators, issued at the outermost ncclGroupEnd. Group state is per thread.
 */
#ifndef CHORUS_GROUP_H_
#define CHORUS_GROUP_H_

#include "hostdev/task.h"

/* ncclGroupStart, ncclGroupEnd, ncclGroupSimulateEnd (api/group_api.c is their entry point). */
ncclResult_t chrGroupStart(void);
ncclResult_t chrGroupEnd(void);
ncclResult_t chrGroupSimulateEnd(ncclSimInfo_t* simInfo);
/* Take a checked task (malloc'ed; the group owns it from here). Outside a group it runs now. */
ncclResult_t chrGroupEnqueue(struct chrCollTask* task);
/* Inside a group: communicator init is deferred to the outermost ncclGroupEnd, where all deferred
 * inits of the thread run concurrently (one thread cannot otherwise init several ranks). */
int chrGroupDepth(void);
ncclResult_t chrGroupDeferInit(struct ncclComm* comm);
/* A split, shrink, window registration, suspend or resume inside a group (comm/lifecycle.h): run at the
 * outermost ncclGroupEnd. Takes a reference on the parent; a child, if any, is also deferred like an init. */
struct chrCommJob;
ncclResult_t chrGroupDeferCommJob(const struct chrCommJob* job);
/* ncclCommAbort: drop this thread's queued tasks, deferred inits and deferred calls of `comm` (an aborted comm
 * runs nothing more). */
void chrGroupDiscardComm(struct ncclComm* comm);
/* ncclCommRevoke: drop only this thread's queued tasks of `comm` (its queued splits and the like
 * still run: a revoked comm remains a parent). */
void chrGroupDiscardTasks(struct ncclComm* comm);
/* A call inside a group failed its checks: the whole group fails at ncclGroupEnd. */
void chrGroupNoteError(ncclResult_t res);

#endif
