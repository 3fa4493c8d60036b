/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec.h: the host executor. Runs checked, planned tasks on host buffers to completion on the
 * calling thread. Tasks of one communicator run in call order; tasks of different communicators
 * progress together in one loop, so one thread can drive many communicators (nccl-tests -g) without
 * deadlock.
 */
#ifndef CHORUS_EXEC_H_
#define CHORUS_EXEC_H_

#include "hostdev/task.h"

/* Run every task of the list (any mix of communicators). Frees nothing. Returns the first error;
 * a communicator whose task failed at run time gets the error as its async error. */
ncclResult_t chrExecTasks(struct chrCollTask* list);

#endif
