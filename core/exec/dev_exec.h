/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_exec.h: running tasks on GPU buffers: their works become kernel launches on the user's stream
 * (the device library, cuda/device_lib.h), and the call returns without waiting, as NCCL's do.
 */
#ifndef CHORUS_DEV_EXEC_H_
#define CHORUS_DEV_EXEC_H_

#include "hostdev/task.h"

/* Reorder *list: host tasks first, then device tasks, each in call order; *devTasks is the first
 * device task (NULL when none). A task that moves no bytes joins the device tasks (as a no-op) when
 * its comm runs device tasks in this list, or has device state and no host task here. A comm with
 * both host and device tasks fails the list with ncclInvalidUsage (nothing runs). */
ncclResult_t chrDevPartition(struct chrCollTask** list, struct chrCollTask** devTasks);

/* Launch every device task of the list (NULL-terminated), each comm's tasks as one launch on its
 * first task's stream (the group's other streams of that comm are joined before and after). Returns
 * the first error; a comm whose launch failed gets it as its async error. */
ncclResult_t chrDevExecTasks(struct chrCollTask* list);

#endif /* CHORUS_DEV_EXEC_H_ */
