/*
 * task.h: one collective or point-to-point call, as the API layer checked it and the planner sized it,
 * and the step programs that algorithms give the executor.
 */
#ifndef CHORUS_TASK_H_
#define CHORUS_TASK_H_

#include <stddef.h>
#include <stdint.h>
#include "exec/reduce.h"
#include "nccl.h"
#include "plugin/common.h"

struct ncclComm;

#define CHR_STEP_MAX_LINKS 3 /* a tree node: two children and a parent */
#define CHR_TASK_MAX_LINKS 6 /* links one task uses on one channel */

/* What one step of one channel does. Steps run in order on each channel; both ends of every link
 * walk the same sequence, so sizes agree without any message saying them.
 * The value computed is  v = recv[0] OP ... OP recv[nRecv-1] OP pre(local)  (terms that are absent
 * are left out; pre() is the PreMulSum scalar, applied to the local input only); it is written to
 * `out` (if not NULL) and to every send slot. With no recv and no local input nothing is computed. */
struct chrStep {
  int nRecv, nSend;
  int recv[CHR_STEP_MAX_LINKS]; /* indices into the task's links on this channel */
  int send[CHR_STEP_MAX_LINKS];
  const void* local;
  void* out;
  size_t count;                 /* elements */
  int final;                    /* the reduction is complete here: apply the op's post step */
};

/* A link a task needs on a channel. */
struct chrLinkUse {
  int peer;
  int isSend;
  int p2p;  /* a point-to-point link of the comm (comm->p2pSend/p2pRecv), not a channel's ring link */
  int conn; /* which point-to-point connection index (0 .. CHR_P2P_CONNS-1) */
};

struct chrCollTask;
struct chrAlgo {
  const char* name;
  /* The links the task uses on `channel`; returns how many (<= CHR_TASK_MAX_LINKS). */
  int (*links)(const struct chrCollTask* task, int channel, struct chrLinkUse* uses);
  /* Steps on `channel`, and receives per link (index as in links()). */
  void (*counts)(const struct chrCollTask* task, int channel, uint64_t* nSteps, uint64_t* nRecvs);
  /* Step `index` of `channel`; only called for index < nSteps. */
  void (*step)(const struct chrCollTask* task, int channel, uint64_t index, struct chrStep* step);
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
  chrRedOp opNoPre;      /* the same reduction without the pre-multiplication, for partial sums */
  int root;              /* root, or the peer of a send/recv */
  int ringPos;           /* this rank's position in the ring */
  /* Plan (plan/plan.c). */
  const struct chrAlgo* algo;
  int nChannels;
  size_t chunkElems;     /* elements per step slot */
  float estimatedUs;
};

/* Position helpers shared by the ring algorithms. */
int chrRingRank(const struct ncclComm* comm, int pos); /* rank at ring position pos (mod nRanks) */

#endif /* CHORUS_TASK_H_ */
