/*
 * ring_colls.c: broadcast, reduce, all-gather and reduce-scatter on the ring, as step programs.
 * p is this rank's ring position; block b of a buffer belongs to user rank b. Each program works
 * through its channel's share of the elements in loops of at most chunkElems per step.
 *
 * reduce-scatter (n steps per loop): s = 0 sends pre(in[rank at p-1]); s = 1..n-2 receive, add
 *   pre(in[rank at p-1-s]) and send; s = n-1 receives, adds pre(in[my block]) and writes out (final).
 * all-gather (n steps per loop): s = 0 copies my input to out[my block] and sends it; s = 1..n-1
 *   receive the block of the rank at p-s into out and pass it on, except at the last step.
 * broadcast (one step per loop): a chain from the root along the ring; the last rank only receives.
 * reduce (one step per loop): a chain along the ring that ends at the root, which applies post.
 */
#include "comm/comm.h"
#include "exec/ring.h"

static size_t loopsOf(const struct chrCollTask* t, int channel, size_t* start, size_t* count) {
  chrChannelRange(t->count, t->nChannels, channel, start, count);
  return *count == 0 ? 0 : DIVUP(*count, t->chunkElems);
}

/* The elements loop `loop` covers, as an offset from the start of a block, and how many. */
static void loopSpan(const struct chrCollTask* t, int channel, uint64_t loop, size_t* off, size_t* n) {
  size_t start, count;
  chrChannelRange(t->count, t->nChannels, channel, &start, &count);
  *off = start + (size_t)loop * t->chunkElems;
  *n = start + count - *off;
  if (*n > t->chunkElems) *n = t->chunkElems;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

static int rootPos(const struct chrCollTask* t) {
  for (int i = 0; i < t->comm->nRanks; i++)
    if (t->comm->ringOrder[i] == t->root) return i;
  return 0;
}

/* ---- reduce-scatter ---- */
static void rsCounts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  size_t start, count;
  uint64_t loops = loopsOf(t, channel, &start, &count);
  int n = t->comm->nRanks;
  *nSteps = loops * (uint64_t)n;
  nRecvs[CHR_RING_RECV] = loops * (uint64_t)(n - 1);
  nRecvs[CHR_RING_SEND] = 0;
}

static void rsStep(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  int n = t->comm->nRanks;
  uint64_t loop = index / (uint64_t)n;
  int s = (int)(index % (uint64_t)n);
  size_t off, len;
  loopSpan(t, channel, loop, &off, &len);
  int block = chrRingRank(t->comm, t->ringPos - 1 - s);
  chrStepInit(st, s > 0, s < n - 1);
  st->count = len;
  st->local = (const char*)t->sendbuff + ((size_t)block * t->count + off) * t->typeSize;
  if (s == n - 1) {
    st->out = (char*)t->recvbuff + off * t->typeSize;
    st->final = 1;
  }
}

/* ---- all-gather ---- */
static void agCounts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  rsCounts(t, channel, nSteps, nRecvs);
}

static void agStep(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  int n = t->comm->nRanks;
  uint64_t loop = index / (uint64_t)n;
  int s = (int)(index % (uint64_t)n);
  size_t off, len;
  loopSpan(t, channel, loop, &off, &len);
  int block = chrRingRank(t->comm, t->ringPos - s);
  chrStepInit(st, s > 0, s < n - 1);
  st->count = len;
  if (s == 0) st->local = (const char*)t->sendbuff + off * t->typeSize;
  st->out = (char*)t->recvbuff + ((size_t)block * t->count + off) * t->typeSize;
}

/* ---- broadcast ---- */
static void bcastCounts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  size_t start, count;
  uint64_t loops = loopsOf(t, channel, &start, &count);
  int d = mod(t->ringPos - rootPos(t), t->comm->nRanks);
  *nSteps = loops;
  nRecvs[CHR_RING_RECV] = d == 0 ? 0 : loops;
  nRecvs[CHR_RING_SEND] = 0;
}

static void bcastStep(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  int n = t->comm->nRanks;
  int d = mod(t->ringPos - rootPos(t), n);
  size_t off, len;
  loopSpan(t, channel, index, &off, &len);
  chrStepInit(st, d > 0, d < n - 1);
  st->count = len;
  st->out = (char*)t->recvbuff + off * t->typeSize;
  if (d == 0) {
    st->local = (const char*)t->sendbuff + off * t->typeSize;
    if (st->local == st->out) st->out = NULL; /* in place: the root's output is already there */
  }
}

/* ---- reduce ---- */
static void reduceCounts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  size_t start, count;
  uint64_t loops = loopsOf(t, channel, &start, &count);
  int d = mod(t->ringPos - rootPos(t) - 1, t->comm->nRanks);
  *nSteps = loops;
  nRecvs[CHR_RING_RECV] = d == 0 ? 0 : loops;
  nRecvs[CHR_RING_SEND] = 0;
}

static void reduceStep(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  int n = t->comm->nRanks;
  int d = mod(t->ringPos - rootPos(t) - 1, n);
  size_t off, len;
  loopSpan(t, channel, index, &off, &len);
  chrStepInit(st, d > 0, d < n - 1);
  st->count = len;
  st->local = (const char*)t->sendbuff + off * t->typeSize;
  if (d == n - 1) {
    st->out = (char*)t->recvbuff + off * t->typeSize;
    st->final = 1;
  }
}

const struct chrAlgo chrRingReduceScatter = {"RING", chrRingLinks, rsCounts, rsStep};
const struct chrAlgo chrRingAllGather = {"RING", chrRingLinks, agCounts, agStep};
const struct chrAlgo chrRingBroadcast = {"RING", chrRingLinks, bcastCounts, bcastStep};
const struct chrAlgo chrRingReduce = {"RING", chrRingLinks, reduceCounts, reduceStep};
