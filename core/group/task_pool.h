/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task_pool.h: the tasks of a thread's calls. A call makes a task and its group's end frees it, so
 * a thread keeps a few freed tasks (with their works arrays) for its next calls instead of going
 * back to the allocator twice per call.
 */
#ifndef CHORUS_TASK_POOL_H_
#define CHORUS_TASK_POOL_H_

#include "hostdev/task.h"

/* A task with every field zero but its works array (kept for plan/works.c, worksCap entries). NULL
 * when out of memory. */
struct chrCollTask* chrTaskNew(void);
/* Give back a task (its communicator reference already dropped). */
void chrTaskFree(struct chrCollTask* t);

#endif /* CHORUS_TASK_POOL_H_ */
