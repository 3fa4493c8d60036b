/*
 * task.h: one collective call, as the API layer checked it and the planner sized it.
 */
#ifndef CHORUS_TASK_H_
#define CHORUS_TASK_H_

#include <stddef.h>
#include <stdint.h>
#include "exec/reduce.h"
#include "nccl.h"
#include "plugin/common.h"

struct ncclComm;

/* What one step of one channel does. Steps run in order on each channel; both ends of every link
 * walk the same sequence, so sizes agree without any message saying them. */
struct chrStep {
  int recv;          /* consume one slot from the channel's recv link */
  int send;          /* fill and post one slot on the channel's send link */
  const void* local; /* local input combined with the received data (or sent alone), or NULL */
  void* out;         /* user output to write, or NULL */
  size_t count;      /* elements */
  int final;         /* the reduction is complete here: apply the op's post step */
};

struct chrCollTask;
/* Step `index` of `channel`. Only called for index < the channel's step count. */
typedef void (*chrStepFn)(const struct chrCollTask* task, int channel, uint64_t index, struct chrStep* step);

struct chrAlgo {
  const char* name;
  /* Per-channel counts for this task (after planning): steps and receives. */
  void (*counts)(const struct chrCollTask* task, int channel, uint64_t* nSteps, uint64_t* nRecvs);
  chrStepFn step;
};

struct chrCollTask {
  struct chrCollTask* next;
  struct ncclComm* comm;
  ncclFunc_t func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;          /* elements, as the API defines them for func */
  ncclDataType_t type;
  size_t typeSize;
  ncclRedOp_t userOp;
  chrRedOp op;           /* resolved at execution (device-resident scalars are read then) */
  int root;
  /* Plan (plan/plan.c). */
  const struct chrAlgo* algo;
  int nChannels;
  size_t chunkElems;     /* elements per step slot */
  float estimatedUs;
};

#endif /* CHORUS_TASK_H_ */
