/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_launch.h: a comm's GPU launches for a group's planned device tasks, made whole (every work,
 * copy-engine and self-copy works included, in the order it runs), so that the device library only
 * checks and queues them (hostdev/dev_api.h, struct chrDevLaunch).
 */
#ifndef CHORUS_DEV_LAUNCH_H_
#define CHORUS_DEV_LAUNCH_H_

#include "hostdev/dev_api.h"
#include "hostdev/task.h"

/* The two launches of one comm and group, queued in this order on one stream: the collectives'
 * (kernel works only: channel c's, in call order, every one cut by call) and the point-to-point
 * launch (lane k's sends on channel 2k, its receives on 2k + 1, in round order after the channel's
 * copies to itself; the copy engine's copies and transfers). mem: what the works live in. */
struct chrDevLaunchPlan {
  struct chrDevLaunch coll, p2p;
  struct chrWork* mem[2];
};

/* comm's launches for the tasks of `list` that are comm's (planned, chrPlanTask). capturing: the
 * launch stream is being captured into a CUDA graph, so no task goes to the copy engine but a rank's
 * large copies to itself (CHORUS_GPU_SELF_COPY_ENGINE). Exposed for the CPU test that runs them
 * through the simulation (tests/gpu/test_gpu_apiplan.c). */
ncclResult_t chrDevBuildLaunch(struct ncclComm* comm, struct chrCollTask* list, int capturing,
                               struct chrDevLaunchPlan* plan);
void chrDevFreeLaunch(struct chrDevLaunchPlan* plan);

#endif /* CHORUS_DEV_LAUNCH_H_ */
