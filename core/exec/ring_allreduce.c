/*
 * ring_allreduce.c: the ring all-reduce as a sequence of steps per channel.
 *
 * Channel c owns a contiguous range of the buffer. The range is processed in loops of
 * nRanks * chunkElems elements; a loop is cut into nRanks blocks, one per ring position. With p my
 * position in the ring and n ranks, a loop is 2n-1 steps:
 *   s = 0           send  pre(in[block p])
 *   s = 1 .. n-2    recv, send  recv + pre(in[block p-s])                  (reduce-scatter)
 *   s = n-1         recv, out[block p+1] = post(recv + pre(in[block p+1])), send it
 *   s = n .. 2n-2   recv, out[block p+1-t] = recv, send it unless t = n-1 (t = s-n+1; all-gather)
 * Every rank reads each input block once and writes each output block once, so in-place is safe:
 * a block is always read (reduce-scatter) before it is overwritten (all-gather).
 */
#include "comm/comm.h"
#include "exec/ring.h"

static void counts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  int n = t->comm->nRanks;
  size_t start, count;
  chrChannelRange(t->count, t->nChannels, channel, &start, &count);
  uint64_t loops = count == 0 ? 0 : DIVUP(count, (size_t)n * t->chunkElems);
  *nSteps = loops * (uint64_t)(2 * n - 1);
  nRecvs[CHR_RING_RECV] = loops * (uint64_t)(2 * n - 2);
  nRecvs[CHR_RING_SEND] = 0;
}

static void step(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  int n = t->comm->nRanks;
  size_t start, count;
  chrChannelRange(t->count, t->nChannels, channel, &start, &count);
  uint64_t perLoop = (uint64_t)(2 * n - 1);
  uint64_t loop = index / perLoop;
  int s = (int)(index % perLoop);
  size_t loopStart = start + (size_t)loop * (size_t)n * t->chunkElems;
  size_t loopCount = start + count - loopStart;
  if (loopCount > (size_t)n * t->chunkElems) loopCount = (size_t)n * t->chunkElems;
  size_t blockSize = DIVUP(loopCount, (size_t)n);
  int pos = t->ringPos;

  int block;
  chrStepInit(st, s > 0, 1);
  if (s < n) {
    block = ((pos - s) % n + n) % n;
    st->final = (s == n - 1);
  } else {
    int tt = s - n + 1;
    block = ((pos + 1 - tt) % n + n) % n;
    st->nSend = tt < n - 1;
  }
  size_t bStart = (size_t)block * blockSize;
  size_t bEnd = bStart + blockSize;
  if (bStart > loopCount) bStart = loopCount;
  if (bEnd > loopCount) bEnd = loopCount;
  st->count = bEnd - bStart;
  size_t off = (loopStart + bStart) * t->typeSize;
  if (s < n) st->local = (const char*)t->sendbuff + off;
  if (s >= n - 1) st->out = (char*)t->recvbuff + off;
}

const struct chrAlgo chrRingAllReduce = {"RING", chrRingLinks, counts, step};
