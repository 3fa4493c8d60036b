/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_plan.h: test plans. Builds, for one call of N ranks, every rank's works (hostdev/work.h) the way
 * the planner does: ring patterns split over channels with chrChannelRange, the double binary tree
 * on four lanes, point-to-point as sends on channel 0 and receives on channel 1 (so a rank's sends
 * and receives progress side by side), local for one rank.
 */
#ifndef CHORUS_TESTS_GPU_PLAN_H_
#define CHORUS_TESTS_GPU_PLAN_H_

#include <stdint.h>
#include "hostdev/work.h"

#define CT_MAX_CHANNELS 8
#define CT_MAX_WORKS 64 /* per channel */

enum chrTestFunc {
  CT_AR_RING,       /* all-reduce on the ring */
  CT_AR_TREE,       /* all-reduce on the double binary tree (4 lanes) */
  CT_REDUCESCATTER,
  CT_ALLGATHER,
  CT_BROADCAST,
  CT_REDUCE,
  CT_ALLTOALL,      /* every rank sends `count` elements to every rank (itself included) */
  CT_LOCAL,         /* one rank: out = post(pre(in)) */
  CT_AR_PAIR,       /* all-reduce of 2 ranks in one exchange (CHR_PAT_PAIR_ALLREDUCE) */
  CT_NUM_FUNCS
};

struct chrTestCall {
  int func;
  int type, typeSize;
  int op;           /* chrRedKind */
  int proto;        /* CHR_PROTO_SIMPLE or CHR_PROTO_LL */
  int root;
  int inPlace;
  int scalarPtr;    /* PreMulSum: opArg is the scalar's device address */
  int nChannels;    /* ring channels */
  uint64_t count;   /* API count: all-reduce, broadcast, reduce: elements; reduce-scatter: per rank
                       (recvcount); all-gather: per rank (sendcount); all-to-all: per peer */
  uint64_t opArg;
  uint64_t chunkElems;
};

struct chrTestPlan {
  int nChannels; /* channels used (max over works + 1) */
  int nCalls;    /* calls added: each work carries its call's index (chrWork.call) */
  int nWorks[CT_MAX_CHANNELS];
  struct chrWork works[CT_MAX_CHANNELS][CT_MAX_WORKS];
};

const char* chrTestFuncName(int func);

/* Elements of the send and receive buffers one rank needs. */
void chrTestBufferElems(const struct chrTestCall* call, int nRanks, uint64_t* sendElems, uint64_t* recvElems);

/* The send and receive addresses of `rank` for a call whose buffers are at send/recv (out of place)
 * or in the receive buffer alone (in place: NCCL's layout for each function). */
void chrTestAddresses(const struct chrTestCall* call, int rank, uint64_t send, uint64_t recv, uint64_t* sendbuff,
                      uint64_t* recvbuff);

/* Appends rank's works for the call to the plan. Returns 0, or -1 if the plan is full. */
int chrTestAddCall(struct chrTestPlan* plan, const struct chrTestCall* call, int nRanks, const int* ringOrder, int rank,
                   uint64_t sendbuff, uint64_t recvbuff);

/* The plan's works channel after channel, as chrDevLaunch takes them: on each channel its sends and
 * receives after its other works (the order the launcher runs them in, as the core's planner makes
 * it), each in call order; returns the total. */
int chrTestFlatten(const struct chrTestPlan* plan, struct chrWork* out, int* nWorks);

/* Binary tree over positions 0..n-1 rooted at 0 (tree 0; tree 1 mirrors positions). */
void chrTestBinaryTree(int p, int n, int* parent, int* c0, int* c1);

#endif /* CHORUS_TESTS_GPU_PLAN_H_ */
