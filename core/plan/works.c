/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * works.c: a planned task becomes plain works, one per channel (hostdev/work.h).
 *
 * Everything a step program needs is decided here and written into the work: the pattern, the links
 * (ring neighbours, or the tree's parent and children, or the send/recv peer), this channel's range of
 * elements, the step size, the reduction and its scalar. The executor and the kernels then need
 * nothing of the communicator but the ring order (which user rank sits at each ring position).
 *
 * Double binary tree (all-reduce): trees are built over ring positions (ranks of one host are adjacent
 * there). Tree 0 is a binary tree rooted at position 0 whose shape comes from the binary digits of the
 * position; tree 1 is its mirror image (position n-1-p), so the leaves of one tree are inner nodes of
 * the other and both halves of the bandwidth are used. Tree t reduces half t of the elements, up the
 * tree and back down. Its lanes (the task's "channels"): lane 2t is the upward pass, lane 2t+1 the
 * downward one, so the two passes pipeline independently chunk by chunk; the root's one lane (2t)
 * receives from its children, finishes the reduction and sends straight back down, and its lane 2t+1
 * is empty. A task may run several copies of the pair (GPU buffers, for bandwidth): its lanes come
 * in groups of CHR_TREE_LANES, copy k being lanes 4k..4k+3; the elements split into 2 parts per
 * copy, and tree t of copy k reduces part 2k+t over point-to-point connection index 2k+t. One copy
 * (the host's four lanes) is the pair above.
 */
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "exec/reduce.h"
#include "hostdev/algo_ids.h"
#include "log/check.h"
#include "log/log.h"
#include "plan/plan.h"

/* Binary tree over positions 0..n-1 rooted at 0: position p's lowest set bit b makes it the parent
 * of p-b/2 and p+b/2 (when those exist) and the child of the position with that bit cleared and the
 * next one set (or cleared only, when that is past the end). */
void chrBinaryTree(int p, int n, int* parent, int* c0, int* c1) {
  int bit = 1;
  while (bit < n && !(p & bit)) bit <<= 1;
  if (p == 0) {
    *parent = -1;
    int top = 1;
    while (top * 2 < n) top *= 2;
    *c0 = n > 1 ? top : -1;
    *c1 = -1;
    return;
  }
  int up = (p ^ bit) | (bit << 1);
  if (up >= n) up = p ^ bit;
  *parent = up;
  int low = bit >> 1;
  *c0 = low ? p - low : -1;
  int d1 = -1;
  for (int l = low; l > 0; l >>= 1)
    if (p + l < n) { d1 = p + l; break; }
  *c1 = d1;
}

static int ringRank(const struct ncclComm* comm, int pos) { return comm->ringOrder[chrMod(pos, comm->nRanks)]; }

static int ringPosOf(const struct ncclComm* comm, int rank) {
  for (int i = 0; i < comm->nRanks; i++)
    if (comm->ringOrder[i] == rank) return i;
  return 0;
}

static void addLink(struct chrWork* w, int peer, int isSend, int p2p, int conn) {
  struct chrWorkLink* l = &w->links[w->nLinks++];
  l->peer = peer;
  l->isSend = (uint8_t)isSend;
  l->p2p = (uint8_t)p2p;
  l->conn = (uint8_t)conn;
  l->pad = 0;
}

/* Lane `lane` of the double binary trees (t->nChannels / CHR_TREE_LANES copies). */
static void treeLane(const struct chrCollTask* t, int lane, int ringPos, struct chrWork* w) {
  const struct ncclComm* comm = t->comm;
  int n = comm->nRanks, tree = lane % CHR_TREE_LANES / 2, down = lane % 2;
  int part = lane / CHR_TREE_LANES * 2 + tree, nParts = t->nChannels / CHR_TREE_LANES * 2;
  int p = tree == 0 ? ringPos : n - 1 - ringPos;
  int pos[3];
  chrBinaryTree(p, n, &pos[0], &pos[1], &pos[2]);
  int rank[3], nc = 0, child[2];
  for (int i = 0; i < 3; i++) /* positions back from the mirror, then to ranks */
    rank[i] = pos[i] < 0 ? -1 : ringRank(comm, tree == 0 ? pos[i] : n - 1 - pos[i]);
  if (rank[1] >= 0) child[nc++] = rank[1];
  if (rank[2] >= 0) child[nc++] = rank[2];
  chrChannelRange(t->count, nParts, part, chrAlignElems(t->typeSize), &w->start, &w->len);
  if (rank[0] < 0) { /* the root: one lane, both directions to each child */
    if (down) { w->pattern = CHR_PAT_NONE; w->len = 0; return; }
    w->pattern = CHR_PAT_TREE_ROOT;
    for (int i = 0; i < nc; i++) addLink(w, child[i], 0, 1, part);
    for (int i = 0; i < nc; i++) addLink(w, child[i], 1, 1, part);
    return;
  }
  w->pattern = down ? CHR_PAT_TREE_DOWN : CHR_PAT_TREE_UP;
  if (down) { /* the down pass copies the root's result: Sum, no scalar (the launcher checks) */
    w->op = chrRedSum;
    w->flags &= (uint8_t)~CHR_WORK_SCALAR_PTR;
    w->opArg = 0;
  }
  for (int i = 0; i < nc; i++) addLink(w, child[i], down, 1, part);
  addLink(w, rank[0], !down, 1, part);
}

static uint8_t ringPattern(ncclFunc_t func) {
  switch (func) {
    case ncclFuncAllReduce: return CHR_PAT_RING_ALLREDUCE;
    case ncclFuncReduceScatter: return CHR_PAT_RING_REDUCESCATTER;
    case ncclFuncAllGather: return CHR_PAT_RING_ALLGATHER;
    case ncclFuncBroadcast: return CHR_PAT_RING_BROADCAST;
    case ncclFuncReduce: return CHR_PAT_RING_REDUCE;
    default: return CHR_PAT_NONE;
  }
}

/* The reduction as a work carries it: builtin ops resolved for this communicator; a PreMulSum op
 * created by the user carries its scalar's bytes, or its address when it lives on the device. */
static ncclResult_t workOp(const struct chrCollTask* t, struct chrWork* w) {
  int reduces = t->func == ncclFuncAllReduce || t->func == ncclFuncReduce || t->func == ncclFuncReduceScatter;
  chrRedOp op;
  if (!reduces) {
    w->op = chrRedSum;
    return ncclSuccess;
  }
  if ((int)t->userOp < ncclNumOps) {
    CHECK(chrRedOpFromBuiltin(t->userOp, t->type, t->comm->nRanks, &op));
  } else {
    const struct chrUserRedOp* u = &t->comm->userOps[(int)t->userOp - ncclNumOps];
    if (u->residence == ncclScalarDevice) {
      w->op = chrRedPreMulSum;
      w->flags |= CHR_WORK_SCALAR_PTR;
      w->opArg = (uint64_t)(uintptr_t)u->scalarPtr;
      return ncclSuccess;
    }
    CHECK(chrRedOpPreMulSum(t->type, u->scalar, &op));
  }
  w->op = (uint8_t)op.kind;
  if (op.kind == chrRedPreMulSum) memcpy(&w->opArg, op.scalar.bytes, sizeof(w->opArg));
  if (op.kind == chrRedSumPostDiv) w->opArg = op.divisor;
  return ncclSuccess;
}

ncclResult_t chrPlanWorks(struct chrCollTask* t) {
  struct ncclComm* comm = t->comm;
  if (t->works == NULL || t->worksCap < t->nChannels) {
    free(t->works);
    t->worksCap = 0;
    t->works = calloc((size_t)t->nChannels, sizeof(struct chrWork));
    if (t->works == NULL) return chrFail(ncclSystemError, "out of memory planning %d channels", t->nChannels);
    t->worksCap = t->nChannels;
  } else {
    memset(t->works, 0, (size_t)t->nChannels * sizeof(struct chrWork));
  }
  int ringPos = ringPosOf(comm, comm->rank);
  for (int c = 0; c < t->nChannels; c++) {
    struct chrWork* w = &t->works[c];
    w->func = (uint8_t)t->func;
    w->proto = (uint8_t)(t->proto < 0 ? CHR_PROTO_SIMPLE : t->proto);
    w->type = (uint8_t)t->type;
    w->typeSize = (uint8_t)t->typeSize;
    w->nRanks = comm->nRanks;
    w->ringPos = ringPos;
    w->count = t->count;
    w->chunkElems = t->chunkElems;
    w->sendbuff = (uint64_t)(uintptr_t)t->sendbuff;
    w->recvbuff = (uint64_t)(uintptr_t)t->recvbuff;
    CHECK(workOp(t, w));
    if (t->func == ncclFuncSend || t->func == ncclFuncRecv) {
      int isSend = t->func == ncclFuncSend;
      w->pattern = isSend ? CHR_PAT_P2P_SEND : CHR_PAT_P2P_RECV;
      addLink(w, t->root, isSend, 1, c); /* lane c: p2p connection index c, share c of the elements */
      chrChannelRange(t->count, t->nChannels, c, chrAlignElems(t->typeSize), &w->start, &w->len);
    } else if (comm->nRanks == 1) {
      w->pattern = c == 0 ? CHR_PAT_LOCAL : CHR_PAT_NONE;
      w->start = 0;
      w->len = c == 0 ? t->count : 0;
    } else if (t->algo == CHR_ALGO_TREE) {
      treeLane(t, c, ringPos, w);
    } else {
      w->pattern = ringPattern(t->func);
      if (t->pairExchange) w->pattern = CHR_PAT_PAIR_ALLREDUCE; /* the planner's choice (plan_dev.c) */
      /* Every channel runs the comm's one ring; a GPU may have more channels than the host's
       * CHR_MAX_CHANNELS, and those take the ring of the host channel they fold onto. */
      const struct chrChannel* ch = &comm->channels[c % CHR_MAX_CHANNELS];
      addLink(w, ch->ringNext, 1, 0, 0); /* CHR_RING_SEND */
      addLink(w, ch->ringPrev, 0, 0, 0); /* CHR_RING_RECV */
      chrChannelRange(t->count, t->nChannels, c, chrAlignElems(t->typeSize), &w->start, &w->len);
      if (w->pattern == CHR_PAT_RING_BROADCAST) w->dist = chrMod(ringPos - ringPosOf(comm, t->root), comm->nRanks);
      if (w->pattern == CHR_PAT_RING_REDUCE) w->dist = chrMod(ringPos - ringPosOf(comm, t->root) - 1, comm->nRanks);
    }
  }
  return ncclSuccess;
}
