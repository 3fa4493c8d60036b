/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.h: choosing how a task runs: algorithm, channels, chunk size, and the time estimate that
 * ncclGroupSimulateEnd reports, and the tuner plugin's part in that (plan/tuner_hook.c).
 */
#ifndef CHORUS_PLAN_H_
#define CHORUS_PLAN_H_

#include "hostdev/task.h"
#include "plugin/tuner.h"

struct ncclComm;

/* The double binary tree's works: two trees, an up and a down lane each (plan/works.c); tree t's
 * links use point-to-point connection index t. GPU buffers may run several such copies, each its
 * own four lanes and two connection indices. */
#define CHR_TREE_LANES 4

/* The algorithms a call may use: NCCL_ALGO's for `func`, within `runnable` (the algorithms that can
 * run this call, as bits 1 << CHR_ALGO_*). When that leaves none, the ring, as NCCL does: its tuning
 * re-enables the ring for a function NCCL_ALGO left without one (NCCL_ALGO=tree and a broadcast);
 * said once per function at INFO. */
ncclResult_t chrPlanAlgos(ncclFunc_t func, unsigned runnable, unsigned* mask);

/* Choose algorithm, protocol, channels and step size, then write the task's works (chrPlanWorks). */
ncclResult_t chrPlanTask(struct chrCollTask* task);
/* The same for a task on GPU buffers (plan/plan_dev.c): the device group's slots and channels. */
ncclResult_t chrPlanDevTask(struct chrCollTask* task);
/* A v6 tuner's step size for the planned task (comm->tunerChunkHook), clamped to [one page (or the
 * slot, if smaller), the slot] and rounded down to whole elements: t->chunkElems. */
ncclResult_t chrPlanTunerChunk(struct chrCollTask* task, size_t bytes, size_t slot);
/* The task's works, one per channel (plan/works.c); replaces any it had. */
ncclResult_t chrPlanWorks(struct chrCollTask* task);
/* Binary tree over positions 0..n-1 rooted at 0 (the double binary tree's shape; -1: none). */
void chrBinaryTree(int p, int n, int* parent, int* c0, int* c1);

/* The tuning constants a v5+ tuner's init gets: Chorus's model for this communicator (plan/plan.c). */
void chrPlanTunerConstants(const struct ncclComm* comm, ncclTunerConstants_v6_t* constants);
/* Open the tuner plugin for a communicator (after its topology and net plugin are known) and, when
 * there is one, set comm->tuner and the planner's hooks. Fails only in strict mode or on a broken
 * process (out of memory). Detach finalizes it (NULL tuner accepted). */
ncclResult_t chrPlanTunerAttach(struct ncclComm* comm);
ncclResult_t chrPlanTunerDetach(struct ncclComm* comm);

#endif
