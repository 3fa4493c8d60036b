/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task.h: one collective or point-to-point call, as the API layer checked it, and the plan the
 * planner made for it: plain works, one per channel (hostdev/work.h), that the host executor runs on
 * host buffers and the CUDA kernels on device buffers.
 */
#ifndef CHORUS_HOSTDEV_TASK_H_
#define CHORUS_HOSTDEV_TASK_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/reduce_op.h"
#include "hostdev/work.h"
#include "nccl.h"
#include "plugin/common.h"

struct ncclComm;

struct chrCollTask {
  struct chrCollTask* next;
  struct ncclComm* comm;
  ncclFunc_t func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;          /* elements, as the API defines them for func */
  size_t sendElems, recvElems; /* elements of sendbuff this rank reads and of recvbuff it writes (the API's
                                  check of the call; exec/direct.c registers that much) */
  ncclDataType_t type;
  size_t typeSize;
  ncclRedOp_t userOp;
  chrRedOp op;           /* resolved at execution (device-resident scalars are read then) */
  chrRedOp opNoPre;      /* the same reduction without the pre-multiplication, for partial sums */
  int root;              /* root, or the peer of a send/recv */
  ncclFunc_t apiFunc;    /* the call as the program made it: func, or the all-to-all, gather or scatter that
                            this send or receive is part of (CHORUS_CHECK_CALLS compares calls) */
  int callStart;         /* the call's first task: a call's signature is counted once */
  /* Where it runs. onDevice: its buffers are GPU memory; it launches kernels on `stream` (an opaque
   * cudaStream_t) and returns without waiting. noop: it moves no bytes and its comm runs device
   * tasks in this group, so it is dropped (the host executor never sees it). */
  int onDevice, noop;
  cudaStream_t stream;
  int chanBase;          /* device collectives: works[c] runs on channel chanBase + c (a send or receive:
                            lane c, on channel 2c or 2c + 1, dev_launch.c) */
  /* Plan (plan/plan.c). */
  int algo, proto;       /* CHR_ALGO_*, CHR_PROTO_* (hostdev/algo_ids.h) */
  int nChannels;
  size_t chunkElems;     /* elements per step slot */
  int pairExchange;      /* a 2-rank all-reduce of GPU buffers in one exchange (plan_dev.c decides,
                            plan/works.c writes CHR_PAT_PAIR_ALLREDUCE) */
  float estimatedUs;
  struct chrWork* works; /* nChannels entries, one per channel (plan/works.c) */
  int worksCap;          /* entries works has room for */
  /* Device launch (dev_launch.c): a rank's send to itself and its receive from itself that run as
   * local copies point at each other (func tells which is the send); NULL otherwise. Set afresh for
   * every launch of the comm, so a pairing never outlives its launch. */
  struct chrCollTask* selfPair;
  /* Profiler events (profile/profile.h): the CollApi/P2pApi event of the call and the Coll/P2p event
   * of the task, parents of the events that follow (NULL without a profiler). */
  void* profApi;
  void* profColl;
};

/* The launch channel of a device task's work c. */
static inline int chrDevTaskChannel(const struct chrCollTask* t, int c) {
  if (t->func == ncclFuncSend) return 2 * c;
  if (t->func == ncclFuncRecv) return 2 * c + 1;
  return t->chanBase + c;
}

#endif /* CHORUS_HOSTDEV_TASK_H_ */
