/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profile.h: the core's profiler event points (the files of core/profile), on top of the plugin door
 * plugin/profiler_plugin.h.
 *
 * Cost when nothing listens: every event point is guarded by chrProfOn(bits), one relaxed load and
 * test of the process-wide mask int, which is 0 unless a profiler plugin's init wrote bits into it.
 * Per-step points of the host executor test a pointer the operation's start left NULL instead.
 *
 * Which events exist (parents in brackets; NCCL's rules, see plugin/profiler_v6.h):
 *   GroupApi      per thread and communicator, from the first API call of an outermost group (or
 *                 of a bare call) to the end of ncclGroupEnd; states GroupStartApiStop at its start
 *                 (ncclGroupStart has returned by then) and GroupEndApiStart when ncclGroupEnd begins
 *   CollApi/P2pApi per API call, stopped when the call is handed to its group [GroupApi]
 *   Group         per communicator at group end, around its tasks' Coll/P2p events
 *   Coll/P2p      per task at group end, once planned (seqNumber, algo, proto, nChannels known);
 *                 stopped at once: "enqueued" [CollApi/P2pApi; parentGroup = Group]
 *   ProxyOp       per task, channel and link in the host executor; InProgress_v4 [Coll/P2p]
 *   ProxyStep     per transfer on a link [ProxyOp]; send SendGPUWait (the step's data is being
 *                 computed) -> SendPeerWait_v4 -> SendWait (posted) -> stop (the slot is free again);
 *                 recv RecvWait (posted) -> RecvFlushWait -> RecvGPUWait (arrived, transSize) ->
 *                 stop (consumed)
 *   NetPlugin     the net plugin's own events, through chrProfilerNetCallback [ProxyStep]
 *   KernelCh      per device task and channel, one start/stop around the launch (the host does not
 *                 see the kernel run), pTimer = host CLOCK_REALTIME ns [Coll/P2p]
 * Not produced: ProxyCtrl, KernelLaunch and the copy-engine events.
 */
#ifndef CHORUS_PROFILE_H_
#define CHORUS_PROFILE_H_

#include <stdint.h>
#include "plugin/profiler_plugin.h"

struct ncclComm;
struct chrCollTask;
struct chrLink;

/* The mask bits that make each event exist. As in NCCL, a child's bit creates its ancestors, the
 * API events included: with only Coll asked for, each Coll event still gets its CollApi parent,
 * which gets its GroupApi parent, so a plugin can nest what it records. */
#define CHR_PROF_NEED_STEP (ncclProfileProxyStep | ncclProfileNetPlugin)
#define CHR_PROF_NEED_OP (ncclProfileProxyOp | CHR_PROF_NEED_STEP)
#define CHR_PROF_NEED_BELOW_TASK (CHR_PROF_NEED_OP | ncclProfileKernelCh)
#define CHR_PROF_NEED_COLL (ncclProfileColl | CHR_PROF_NEED_BELOW_TASK)
#define CHR_PROF_NEED_P2P (ncclProfileP2p | CHR_PROF_NEED_BELOW_TASK)
#define CHR_PROF_NEED_TASK (ncclProfileColl | ncclProfileP2p | CHR_PROF_NEED_BELOW_TASK)
#define CHR_PROF_NEED_GROUP (ncclProfileGroup | CHR_PROF_NEED_TASK)
#define CHR_PROF_NEED_COLL_API (ncclProfileCollApi | CHR_PROF_NEED_COLL)
#define CHR_PROF_NEED_P2P_API (ncclProfileP2pApi | CHR_PROF_NEED_P2P)
#define CHR_PROF_NEED_API \
  (ncclProfileGroupApi | ncclProfileKernelLaunch | CHR_PROF_NEED_COLL_API | CHR_PROF_NEED_P2P_API | CHR_PROF_NEED_GROUP)

/* The one test every event point makes first. */
static inline int chrProfOn(int bits) { return __atomic_load_n(&chrProfMask, __ATOMIC_RELAXED) & bits; }

/* GroupApi events this thread has open (0 unless a profiler listens): ncclGroupEnd tests it. */
extern __thread int chrProfGroupApiOpen;

/* ---- API and group (prof_api.c) ---- */

/* Communicator init/destroy: open the profiler for comm (after its net plugin) / finalize it. */
ncclResult_t chrProfAttach(struct ncclComm* comm);
ncclResult_t chrProfDetach(struct ncclComm* comm);

/* An API call made task t (guard: chrProfOn(CHR_PROF_NEED_API)) inside groupDepth groups
 * (chrGroupDepth): open this thread's GroupApi event of t's communicator if needed and start the
 * CollApi/P2pApi event (t->profApi). */
void chrProfApiStart(struct chrCollTask* t, int groupDepth);
/* The call was handed to its group: stop its CollApi/P2pApi event (t->profApi stays the parent of
 * the task's Coll/P2p event). */
void chrProfApiStop(struct chrCollTask* t);
/* The outermost group end begins / is over (guard: chrProfGroupApiOpen). */
void chrProfGroupEndBegin(void);
void chrProfGroupEndFinish(void);
/* ncclCommAbort: close this thread's GroupApi event of comm. */
void chrProfGroupApiDiscard(struct ncclComm* comm);

/* The tasks of a group are planned (guard: chrProfOn(CHR_PROF_NEED_GROUP)): Group and Coll/P2p
 * events, per communicator in list order; each task keeps its Coll/P2p handle in t->profColl. */
void chrProfTasksPlanned(struct chrCollTask* list);

/* ---- host executor (prof_exec.c) ---- */

/* One ProxyStep event in flight; its ref is what the net plugin gets as phandle. */
struct chrProfStepEv {
  struct chrProfNetParent ref;
  int open;
};

/* The events of one link of one task's channel. prof == NULL: not profiled (the state is zeroed with
 * the executor's, so that is the default). */
struct chrProfLinkOp {
  struct chrProfiler* prof;
  struct chrLink* link;
  void* op;
  int steps; /* ProxyStep events wanted */
  struct chrProfStepEv step[8]; /* by slot (CHR_STEPS) */
};

/* Start the ProxyOp of a link (guard: chrProfOn(CHR_PROF_NEED_OP)); nSteps transfers of at most
 * chunkBytes. */
void chrProfOpStart(struct chrProfLinkOp* lo, struct chrCollTask* t, int channel, struct chrLink* link,
                    uint64_t nSteps, size_t chunkBytes);
/* Stop it, and any step still open (error paths). Safe to call again. */
void chrProfOpStop(struct chrProfLinkOp* lo);
/* Steps (guard: lo->prof). Start sets the link's phandle for the slot; stop clears it. */
void chrProfStepStart(struct chrProfLinkOp* lo, struct chrLink* link, int slot, uint64_t step, int isSend);
void chrProfStepState(struct chrProfLinkOp* lo, int slot, ncclProfilerEventState_t state, size_t bytes);
void chrProfStepStop(struct chrProfLinkOp* lo, struct chrLink* link, int slot);

/* ---- device launches (prof_exec.c) ---- */

/* KernelCh events of comm's device tasks in list (guard: chrProfOn(ncclProfileKernelCh)): begin
 * before the launch, end after it (on failure too). */
void* chrProfKernelBegin(struct ncclComm* comm, struct chrCollTask* list);
void chrProfKernelEnd(void* state);

#endif /* CHORUS_PROFILE_H_ */
