/*
 * plan.h: choosing how a task runs: algorithm, channels, chunk size, and the time estimate that
 * ncclGroupSimulateEnd reports. (The tuner plugin hook goes here.)
 */
#ifndef CHORUS_PLAN_H_
#define CHORUS_PLAN_H_

#include "exec/task.h"

ncclResult_t chrPlanTask(struct chrCollTask* task);

#endif
