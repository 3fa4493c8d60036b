/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * apiplan_engine.h: the copy-engine part of test_gpu_apiplan (gpu.apiplan.cesend.*,
 * gpu.apiplan.ceallreduce.*): what the planner must make of sends, 2-rank broadcasts and 2-rank
 * all-reduces with CHORUS_GPU_CE_MIN_BYTES / CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES set, read from the
 * environment as the test runs (not from the library), and the counts that prove those paths ran.
 */
#ifndef CHORUS_TESTS_GPU_APIPLAN_ENGINE_H_
#define CHORUS_TESTS_GPU_APIPLAN_ENGINE_H_

#include "exec/dev_launch.h"
#include "hostdev/task.h"
#include "nccl.h"
#include "nccl_cases.h"

/* Reads the two thresholds from the environment. */
void apiEngineInit(void);

/* 1 when either threshold is set (plans are then also checked as made under graph capture). */
int apiEngineOn(void);

/* A rank's plan p of the tasks from head (call order), made capturing or not: its copy-engine works
 * exactly as the planner must make them, in the point-to-point launch's copies and ceSends; the
 * collectives' launch work for work. *bcastCopies: how many of the launch's copies (the first ones)
 * are broadcasts'. Counts what it saw. 0 when right. */
int apiEngineCheckPlan(const char* name, int rank, const struct chrCollTask* head, const struct chrDevLaunchPlan* p,
                       int capturing, int* bcastCopies);

/* Extra all-reduce cases when CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES is set (else none). */
const struct ncCase* apiEngineAllReduceCases(int n, int* count);

/* The transfer-class scenario on 2 ranks with CHORUS_GPU_CE_MIN_BYTES of 1 MiB or less (else 0). */
int apiEngineClassScenario(ncclComm_t* comms, int n);

/* After every case: the failures of the counts (the paths the settings ask for were taken, and
 * only on the rank counts they apply to), each printed. */
int apiEngineVerdict(int n);

/* The counts, for the summary line. */
const char* apiEngineSummary(void);

#endif /* CHORUS_TESTS_GPU_APIPLAN_ENGINE_H_ */
