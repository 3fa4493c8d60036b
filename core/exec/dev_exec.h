/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_exec.h: running tasks on GPU buffers: their works become kernel launches on the user's stream
 * (the device library, cuda/device_lib.h), and the call returns without waiting, as NCCL's do.
 */
#ifndef CHORUS_DEV_EXEC_H_
#define CHORUS_DEV_EXEC_H_

#include "hostdev/dev_consts.h"
#include "hostdev/task.h"

/* Reorder *list: host tasks first, then device tasks, each in call order; *devTasks is the first
 * device task (NULL when none). A task that moves no bytes joins the device tasks (as a no-op) when
 * its comm runs device tasks in this list, or has device state and no host task here. A comm with
 * both host and device tasks fails the list with ncclInvalidUsage (nothing runs). */
ncclResult_t chrDevPartition(struct chrCollTask** list, struct chrCollTask** devTasks);

/* One comm's launches for a list of planned device tasks: the collectives' works channel after
 * channel (nColl[c] on channel c), then the point-to-point works channel after channel (nP2p[c] on
 * channel c: lane k's sends on 2k, its receives on 2k + 1), each channel's in round order
 * (dev_exec.c). capturing: the launch stream is being captured into a CUDA graph, so no send
 * becomes an engine work (CHORUS_GPU_CE_MIN_BYTES; otherwise those go first on channel 0, in call
 * order), nor an all-reduce's halves (CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES). Exposed for the CPU test
 * that runs them through the simulation. */
struct chrDevLaunchPlan {
  struct chrWork* coll;
  int nColl[CHR_DEV_MAX_CHANNELS];
  int collChannels;
  struct chrWork* p2p;
  int nP2p[CHR_DEV_MAX_CHANNELS];
  int p2pChannels;
};
ncclResult_t chrDevBuildLaunch(struct ncclComm* comm, struct chrCollTask* list, int capturing,
                               struct chrDevLaunchPlan* plan);
void chrDevFreeLaunch(struct chrDevLaunchPlan* plan);

/* Launch every device task of the list (NULL-terminated), each comm's tasks as one launch on its
 * first task's stream (the group's other streams of that comm are joined before and after). Returns
 * the first error; a comm whose launch failed gets it as its async error. */
ncclResult_t chrDevExecTasks(struct chrCollTask* list);

#endif /* CHORUS_DEV_EXEC_H_ */
