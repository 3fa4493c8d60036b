/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_plan.c: test plans (gpu_plan.h). */
#include "gpu_plan.h"

#include <string.h>
#include "config/algo_select.h"
#include "plugin/common.h"

const char* chrTestFuncName(int func) {
  static const char* names[CT_NUM_FUNCS] = {"allreduce-ring", "allreduce-tree", "reducescatter", "allgather",
                                            "broadcast",      "reduce",         "alltoall",      "local",
                                            "allreduce-pair"};
  return func >= 0 && func < CT_NUM_FUNCS ? names[func] : "?";
}

void chrTestBufferElems(const struct chrTestCall* call, int nRanks, uint64_t* sendElems, uint64_t* recvElems) {
  uint64_t n = (uint64_t)nRanks, c = call->count;
  switch (call->func) {
    case CT_REDUCESCATTER: *sendElems = n * c; *recvElems = c; break;
    case CT_ALLGATHER: *sendElems = c; *recvElems = n * c; break;
    case CT_ALLTOALL: *sendElems = n * c; *recvElems = n * c; break;
    default: *sendElems = c; *recvElems = c; break;
  }
}

void chrTestAddresses(const struct chrTestCall* call, int rank, uint64_t send, uint64_t recv, uint64_t* sendbuff,
                      uint64_t* recvbuff) {
  uint64_t block = call->count * (uint64_t)call->typeSize * (uint64_t)rank;
  *sendbuff = send;
  *recvbuff = recv;
  if (!call->inPlace) return;
  switch (call->func) {
    case CT_REDUCESCATTER: *sendbuff = recv; *recvbuff = recv + block; break; /* recv = send + rank block */
    case CT_ALLGATHER: *sendbuff = recv + block; break;                      /* send = recv + rank block */
    default: *sendbuff = recv; break;
  }
}

void chrTestBinaryTree(int p, int n, int* parent, int* c0, int* c1) {
  if (p == 0) {
    int top = 1;
    while (top * 2 < n) top *= 2;
    *parent = -1;
    *c0 = n > 1 ? top : -1;
    *c1 = -1;
    return;
  }
  int bit = 1;
  while (!(p & bit)) bit <<= 1;
  int up = (p ^ bit) | (bit << 1);
  if (up >= n) up = p ^ bit;
  *parent = up;
  int low = bit >> 1;
  *c0 = low ? p - low : -1;
  *c1 = -1;
  for (int l = low; l > 0; l >>= 1)
    if (p + l < n) {
      *c1 = p + l;
      break;
    }
}

static struct chrWork* newWork(struct chrTestPlan* plan, int channel) {
  if (channel >= CT_MAX_CHANNELS || plan->nWorks[channel] >= CT_MAX_WORKS) return NULL;
  struct chrWork* w = &plan->works[channel][plan->nWorks[channel]++];
  memset(w, 0, sizeof *w);
  w->call = plan->nCalls; /* the launcher cuts between calls */
  if (channel + 1 > plan->nChannels) plan->nChannels = channel + 1;
  return w;
}

static void fillCommon(struct chrWork* w, const struct chrTestCall* call, int nRanks, int func, uint64_t sendbuff,
                       uint64_t recvbuff) {
  w->func = (uint8_t)func;
  w->proto = (uint8_t)call->proto;
  w->type = (uint8_t)call->type;
  w->typeSize = (uint8_t)call->typeSize;
  int reduces = call->func == CT_AR_RING || call->func == CT_AR_TREE || call->func == CT_AR_PAIR ||
                call->func == CT_REDUCESCATTER || call->func == CT_REDUCE || call->func == CT_LOCAL;
  w->op = (uint8_t)(reduces ? call->op : 0);
  w->flags = (uint8_t)(reduces && call->scalarPtr ? CHR_WORK_SCALAR_PTR : 0);
  w->opArg = reduces ? call->opArg : 0;
  w->nRanks = nRanks;
  w->count = call->count;
  w->chunkElems = call->chunkElems;
  w->sendbuff = sendbuff;
  w->recvbuff = recvbuff;
}

static void setLink(struct chrWork* w, int i, int peer, int isSend, int p2p, int conn) {
  w->links[i].peer = peer;
  w->links[i].isSend = (uint8_t)isSend;
  w->links[i].p2p = (uint8_t)p2p;
  w->links[i].conn = (uint8_t)conn;
}

static int addRing(struct chrTestPlan* plan, const struct chrTestCall* call, int n, const int* ringOrder, int rank,
                   uint64_t sendbuff, uint64_t recvbuff) {
  static const int patterns[] = {[CT_AR_RING] = CHR_PAT_RING_ALLREDUCE, [CT_REDUCESCATTER] = CHR_PAT_RING_REDUCESCATTER,
                                 [CT_ALLGATHER] = CHR_PAT_RING_ALLGATHER, [CT_BROADCAST] = CHR_PAT_RING_BROADCAST,
                                 [CT_REDUCE] = CHR_PAT_RING_REDUCE, [CT_AR_PAIR] = CHR_PAT_PAIR_ALLREDUCE};
  static const int funcs[] = {[CT_AR_RING] = ncclFuncAllReduce, [CT_REDUCESCATTER] = ncclFuncReduceScatter,
                              [CT_ALLGATHER] = ncclFuncAllGather, [CT_BROADCAST] = ncclFuncBroadcast,
                              [CT_REDUCE] = ncclFuncReduce, [CT_AR_PAIR] = ncclFuncAllReduce};
  int pos = 0, rootPos = 0;
  for (int i = 0; i < n; i++) {
    if (ringOrder[i] == rank) pos = i;
    if (ringOrder[i] == call->root) rootPos = i;
  }
  for (int c = 0; c < call->nChannels; c++) {
    struct chrWork* w = newWork(plan, c);
    if (w == NULL) return -1;
    fillCommon(w, call, n, funcs[call->func], sendbuff, recvbuff);
    w->pattern = (uint8_t)patterns[call->func];
    w->ringPos = pos;
    if (call->func == CT_BROADCAST) w->dist = chrMod(pos - rootPos, n);
    if (call->func == CT_REDUCE) w->dist = chrMod(pos - rootPos - 1, n);
    chrChannelRange(call->count, call->nChannels, c, chrAlignElems(call->typeSize), &w->start, &w->len);
    w->nLinks = 2;
    setLink(w, CHR_RING_SEND, ringOrder[chrMod(pos + 1, n)], 1, 0, 0);
    setLink(w, CHR_RING_RECV, ringOrder[chrMod(pos - 1, n)], 0, 0, 0);
  }
  return 0;
}

static int addTree(struct chrTestPlan* plan, const struct chrTestCall* call, int n, const int* ringOrder, int rank,
                   uint64_t sendbuff, uint64_t recvbuff) {
  int pos = 0;
  for (int i = 0; i < n; i++)
    if (ringOrder[i] == rank) pos = i;
  for (int t = 0; t < 2; t++) {
    int p = t == 0 ? pos : n - 1 - pos, nodes[3];
    chrTestBinaryTree(p, n, &nodes[0], &nodes[1], &nodes[2]);
    for (int i = 0; i < 3; i++)
      if (nodes[i] >= 0) nodes[i] = ringOrder[t == 0 ? nodes[i] : n - 1 - nodes[i]];
    int parent = nodes[0], child[2], nc = 0;
    if (nodes[1] >= 0) child[nc++] = nodes[1];
    if (nodes[2] >= 0) child[nc++] = nodes[2];
    uint64_t start, len;
    chrChannelRange(call->count, 2, t, chrAlignElems(call->typeSize), &start, &len);
    if (parent < 0) {
      struct chrWork* w = newWork(plan, 2 * t);
      if (w == NULL) return -1;
      fillCommon(w, call, n, ncclFuncAllReduce, sendbuff, recvbuff);
      w->pattern = CHR_PAT_TREE_ROOT;
      w->start = start;
      w->len = len;
      w->nLinks = (uint8_t)(2 * nc);
      for (int i = 0; i < nc; i++) {
        setLink(w, i, child[i], 0, 1, t);
        setLink(w, nc + i, child[i], 1, 1, t);
      }
      continue;
    }
    for (int down = 0; down < 2; down++) {
      struct chrWork* w = newWork(plan, 2 * t + down);
      if (w == NULL) return -1;
      fillCommon(w, call, n, ncclFuncAllReduce, sendbuff, recvbuff);
      w->pattern = down ? CHR_PAT_TREE_DOWN : CHR_PAT_TREE_UP;
      if (down) w->op = 0; /* the down pass copies */
      if (down) w->flags = 0, w->opArg = 0;
      w->start = start;
      w->len = len;
      w->nLinks = (uint8_t)(nc + 1);
      for (int i = 0; i < nc; i++) setLink(w, i, child[i], down, 1, t);
      setLink(w, nc, parent, !down, 1, t);
    }
  }
  return 0;
}

static int addAlltoall(struct chrTestPlan* plan, const struct chrTestCall* call, int n, int rank, uint64_t sendbuff,
                       uint64_t recvbuff) {
  uint64_t block = call->count * (uint64_t)call->typeSize;
  for (int k = 0; k < n; k++) {
    int to = (rank + k) % n, from = (rank - k + n) % n;
    struct chrWork* s = newWork(plan, 0);
    struct chrWork* r = newWork(plan, 1);
    if (s == NULL || r == NULL) return -1;
    fillCommon(s, call, n, ncclFuncSend, sendbuff + (uint64_t)to * block, 0);
    s->pattern = CHR_PAT_P2P_SEND;
    s->len = call->count;
    s->nLinks = 1;
    setLink(s, 0, to, 1, 1, 0);
    fillCommon(r, call, n, ncclFuncRecv, 0, recvbuff + (uint64_t)from * block);
    r->pattern = CHR_PAT_P2P_RECV;
    r->len = call->count;
    r->nLinks = 1;
    setLink(r, 0, from, 0, 1, 0);
  }
  return 0;
}

static int addCallWorks(struct chrTestPlan* plan, const struct chrTestCall* call, int nRanks, const int* ringOrder,
                        int rank, uint64_t sendbuff, uint64_t recvbuff) {
  switch (call->func) {
    case CT_AR_RING:
    case CT_AR_PAIR:
    case CT_REDUCESCATTER:
    case CT_ALLGATHER:
    case CT_BROADCAST:
    case CT_REDUCE: return addRing(plan, call, nRanks, ringOrder, rank, sendbuff, recvbuff);
    case CT_AR_TREE: return addTree(plan, call, nRanks, ringOrder, rank, sendbuff, recvbuff);
    case CT_ALLTOALL: return addAlltoall(plan, call, nRanks, rank, sendbuff, recvbuff);
    case CT_LOCAL: {
      struct chrWork* w = newWork(plan, 0);
      if (w == NULL) return -1;
      fillCommon(w, call, nRanks, ncclFuncAllReduce, sendbuff, recvbuff);
      w->pattern = CHR_PAT_LOCAL;
      w->len = call->count;
      return 0;
    }
    default: return -1;
  }
}

int chrTestAddCall(struct chrTestPlan* plan, const struct chrTestCall* call, int nRanks, const int* ringOrder, int rank,
                   uint64_t sendbuff, uint64_t recvbuff) {
  const int res = addCallWorks(plan, call, nRanks, ringOrder, rank, sendbuff, recvbuff);
  plan->nCalls++;
  return res;
}

int chrTestFlatten(const struct chrTestPlan* plan, struct chrWork* out, int* nWorks) {
  int k = 0;
  for (int c = 0; c < plan->nChannels; c++) {
    nWorks[c] = plan->nWorks[c];
    for (int transfers = 0; transfers < 2; transfers++) /* the channel's other works first, each in call order */
      for (int i = 0; i < plan->nWorks[c]; i++)
        if (chrWorkIsTransfer(&plan->works[c][i]) == transfers) out[k++] = plan->works[c][i];
  }
  return k;
}
