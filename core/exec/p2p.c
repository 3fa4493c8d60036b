/*
 * p2p.c: ncclSend and ncclRecv as step programs on the comm's point-to-point link to the peer.
 * The message is cut into steps of at most chunkElems; both ends compute the same cut from count.
 * A count of 0 moves nothing (as in NCCL, a zero-byte send/recv is a no-op).
 */
#include "comm/comm.h"
#include "exec/ring.h"

static int links(const struct chrCollTask* t, int channel, struct chrLinkUse* uses) {
  uses[0].peer = t->root;
  uses[0].isSend = t->func == ncclFuncSend;
  uses[0].p2p = 1;
  uses[0].conn = 0;
  return 1;
}

static void counts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  *nSteps = t->count == 0 ? 0 : DIVUP(t->count, t->chunkElems);
  nRecvs[0] = t->func == ncclFuncRecv ? *nSteps : 0;
}

static void step(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  size_t off = (size_t)index * t->chunkElems;
  size_t len = t->count - off < t->chunkElems ? t->count - off : t->chunkElems;
  chrStepInit(st, 0, 0);
  st->count = len;
  if (t->func == ncclFuncSend) {
    st->nSend = 1;
    st->send[0] = 0;
    st->local = (const char*)t->sendbuff + off * t->typeSize;
  } else {
    st->nRecv = 1;
    st->recv[0] = 0;
    st->out = (char*)t->recvbuff + off * t->typeSize;
  }
}

const struct chrAlgo chrP2pAlgo = {"P2P", links, counts, step};
