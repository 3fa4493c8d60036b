/*
 * plan.h: choosing how a task runs: algorithm, channels, chunk size, and the time estimate that
 * ncclGroupSimulateEnd reports. (The tuner plugin hook goes here.)
 */
#ifndef CHORUS_PLAN_H_
#define CHORUS_PLAN_H_

#include "exec/task.h"

/* Choose algorithm, protocol, channels and step size, then write the task's works (chrPlanWorks). */
ncclResult_t chrPlanTask(struct chrCollTask* task);
/* The task's works, one per channel (plan/works.c); replaces any it had. */
ncclResult_t chrPlanWorks(struct chrCollTask* task);
/* Binary tree over positions 0..n-1 rooted at 0 (the double binary tree's shape; -1: none). */
void chrBinaryTree(int p, int n, int* parent, int* c0, int* c1);

#endif
