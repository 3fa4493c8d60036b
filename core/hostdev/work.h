/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * work.h: a plan as plain data. A work is what one channel of one rank runs for one operation; the
 * planner writes them, and the host executor and the CUDA kernels read the same works with the same
 * step math (below), so the host-buffer test matrix proves the plans that GPUs run.
 *
 * A work holds no pointer but the user's buffers (as addresses) and never a function: it can be
 * printed, hashed, compared and copied into kernel arguments. The step math is header-only, inline,
 * and compiles as C11 (host) and CUDA C++ (device: CHR_HD marks it __host__ __device__).
 *
 * Step programs. A work runs as a sequence of steps on its channel. Both ends of every link walk the
 * same sequence, so sizes agree without any message saying them. Step `i` says which of the work's
 * links it receives from and sends to, which elements of the local input it reads (localOff) and of
 * the output it writes (outOff), how many (count), and whether the reduction finishes here (final).
 * The value computed is  v = recv[0] OP ... OP recv[nRecv-1] OP pre(local)  (absent terms are left
 * out; pre() is the PreMulSum scalar, applied to the local input only); it goes to the output (when
 * outOff >= 0) and to every send link.
 */
#ifndef CHORUS_HOSTDEV_WORK_H_
#define CHORUS_HOSTDEV_WORK_H_

#include <stdint.h>

#ifdef __CUDACC__
#define CHR_HD __host__ __device__ __forceinline__
#else
#define CHR_HD static inline
#endif

#define CHR_STEP_MAX_LINKS 3 /* a tree node: two children and a parent */
#define CHR_WORK_MAX_LINKS 6 /* links one work uses (a tree root: 2 children, both directions) */

/* What a channel runs. RING_*: the ring algorithms; TREE_ROOT/UP/DOWN: the lanes of a double binary
 * tree all-reduce (the root's one lane, the up and down passes of other nodes); LOCAL: a one-rank
 * communicator (out = post(pre(in))); PAIR_ALLREDUCE: the all-reduce of a 2-rank ring in one exchange
 * (below). */
enum chrPattern {
  CHR_PAT_NONE = 0,
  CHR_PAT_LOCAL,
  CHR_PAT_RING_ALLREDUCE,
  CHR_PAT_RING_REDUCESCATTER,
  CHR_PAT_RING_ALLGATHER,
  CHR_PAT_RING_BROADCAST,
  CHR_PAT_RING_REDUCE,
  CHR_PAT_TREE_ROOT,
  CHR_PAT_TREE_UP,
  CHR_PAT_TREE_DOWN,
  CHR_PAT_P2P_SEND,
  CHR_PAT_P2P_RECV,
  CHR_PAT_PAIR_ALLREDUCE,
  CHR_PAT_COUNT
};

/* Ring links: index 0 sends to the next rank, index 1 receives from the previous one. */
#define CHR_RING_SEND 0
#define CHR_RING_RECV 1

/* A link a work uses: a ring link of its channel, or a point-to-point connection to `peer`. */
struct chrWorkLink {
  int32_t peer;
  uint8_t isSend;
  uint8_t p2p;  /* a point-to-point link (conn = its connection index), not the channel's ring link */
  uint8_t conn;
  uint8_t pad;
};

/* Work flags. */
#define CHR_WORK_SCALAR_PTR 0x1 /* opArg is the address of the PreMulSum scalar (device-resident) */
#define CHR_WORK_ENGINE 0x2     /* a local copy, or a send/receive to another rank, that the device launcher runs as
                                   a separate copy beside the kernel (core/exec/dev_launch.c) */

/* The transfer class of an engine send or receive (CHR_WORK_ENGINE on a P2P work): its links[0].conn.
 * The device library numbers engine transfers per peer, direction and class, so a rank's
 * point-to-point calls and its collectives (a broadcast of two ranks, an all-reduce's halves) never
 * share numbers. */
#define CHR_WORK_CLASS_P2P 0
#define CHR_WORK_CLASS_COLL 1
#define CHR_WORK_CLASSES 2

struct chrWork {
  uint8_t pattern;     /* enum chrPattern */
  uint8_t func;        /* ncclFunc_t */
  uint8_t proto;       /* CHR_PROTO_* (hostdev/algo_ids.h) */
  uint8_t type;        /* ncclDataType_t */
  uint8_t op;          /* chrRedKind (hostdev/reduce_op.h); chrRedSum for functions that only copy */
  uint8_t typeSize;
  uint8_t nLinks;
  uint8_t flags;
  int32_t nRanks;
  int32_t ringPos;     /* this rank's position in the ring */
  int32_t dist;        /* broadcast: ring distance from the root; reduce: distance from the root's
                          successor (the chain ends at the root) */
  int32_t call;        /* the collective's index among its rank's collectives in one launch plan, in
                          call order (core/exec/dev_launch.c): launches are cut between calls */
  uint64_t count;      /* elements of the whole operation, as the API defines them for func */
  uint64_t start;      /* this work's elements: [start, start + len) of a block */
  uint64_t len;
  uint64_t chunkElems; /* elements per step */
  uint64_t sendbuff;   /* user addresses */
  uint64_t recvbuff;
  uint64_t opArg;      /* PreMulSum: the scalar's bytes (or address, CHR_WORK_SCALAR_PTR); SumPostDiv: divisor */
  struct chrWorkLink links[CHR_WORK_MAX_LINKS];
};

/* One step. Offsets are in elements; -1: no local input / no output. */
struct chrStep {
  int nRecv, nSend;
  int recv[CHR_STEP_MAX_LINKS]; /* indices into the work's links */
  int send[CHR_STEP_MAX_LINKS];
  int64_t localOff;
  int64_t outOff;
  uint64_t count;
  int final; /* the reduction is complete here: apply the op's post step */
};

CHR_HD uint64_t chrDivUp(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
CHR_HD int chrMod(int a, int n) { return ((a % n) + n) % n; }

/* Channel c's share [*start, *start + *count) of `total` elements split over nChannels. */
/* Channel ranges and ring all-reduce blocks start on multiples of CHR_ALIGN_BYTES (relative to the
 * buffer), so that when the user's buffers are 16-byte aligned, every channel's and block's span is
 * too, and the kernels move 16-byte packs everywhere (an 8 MB all-reduce over 24 channels otherwise
 * splits at 349528-byte boundaries, and every channel falls back to element-wise copies). */
#define CHR_ALIGN_BYTES 64
CHR_HD uint64_t chrAlignElems(int typeSize) {
  return typeSize <= 0 || typeSize >= CHR_ALIGN_BYTES ? 1 : (uint64_t)(CHR_ALIGN_BYTES / typeSize);
}
CHR_HD uint64_t chrRoundUp(uint64_t a, uint64_t m) { return chrDivUp(a, m) * m; }

/* Elements [*start, *start + *count) of `total` for `channel`: equal shares rounded up to `align`
 * elements (the last channels may get less, or nothing). */
CHR_HD void chrChannelRange(uint64_t total, int nChannels, int channel, uint64_t align, uint64_t* start,
                            uint64_t* count) {
  uint64_t per = chrRoundUp(chrDivUp(total, (uint64_t)nChannels), align < 1 ? 1 : align);
  uint64_t s = per * (uint64_t)channel;
  if (s > total) s = total;
  uint64_t e = s + per;
  if (e > total) e = total;
  *start = s;
  *count = e - s;
}

CHR_HD void chrStepClear(struct chrStep* st) {
  st->nRecv = st->nSend = 0;
  for (int i = 0; i < CHR_STEP_MAX_LINKS; i++) st->recv[i] = st->send[i] = 0;
  st->localOff = st->outOff = -1;
  st->count = 0;
  st->final = 0;
}

/* A ring step that receives (recv != 0) and/or sends (send != 0). */
CHR_HD void chrStepRing(struct chrStep* st, int recv, int send) {
  chrStepClear(st);
  if (recv) { st->nRecv = 1; st->recv[0] = CHR_RING_RECV; }
  if (send) { st->nSend = 1; st->send[0] = CHR_RING_SEND; }
}

/* A send to another rank or a receive from one (not a rank's copy to itself, CHR_PAT_LOCAL). */
CHR_HD int chrWorkIsTransfer(const struct chrWork* w) {
  return w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV;
}

/* ... that the copy engine runs, beside the kernels (CHR_WORK_ENGINE). */
CHR_HD int chrWorkIsEngineTransfer(const struct chrWork* w) {
  return chrWorkIsTransfer(w) && (w->flags & CHR_WORK_ENGINE) != 0;
}

/* Tree lanes' link order. Root: children's recv links [0, nc), their send links [nc, 2nc). Up: the
 * children's recv links [0, nc), the parent's send link nc. Down: the children's send links [0, nc),
 * the parent's recv link nc. nc = the number of children. */
CHR_HD int chrTreeChildren(const struct chrWork* w) {
  return w->pattern == CHR_PAT_TREE_ROOT ? w->nLinks / 2 : w->nLinks - 1;
}

/* Loops (of up to chunkElems per step, or nRanks * chunkElems for the ring all-reduce). */
CHR_HD uint64_t chrWorkLoops(const struct chrWork* w) {
  if (w->len == 0) return 0;
  uint64_t perLoop = w->pattern == CHR_PAT_RING_ALLREDUCE ? (uint64_t)w->nRanks * w->chunkElems : w->chunkElems;
  return chrDivUp(w->len, perLoop);
}

/* Steps of the work, and receives per link (nRecvs[i] for link i; CHR_WORK_MAX_LINKS entries). */
CHR_HD void chrWorkCounts(const struct chrWork* w, uint64_t* nSteps, uint64_t* nRecvs) {
  uint64_t loops = chrWorkLoops(w);
  uint64_t n = (uint64_t)w->nRanks;
  for (int i = 0; i < CHR_WORK_MAX_LINKS; i++) nRecvs[i] = 0;
  switch (w->pattern) {
    case CHR_PAT_LOCAL: *nSteps = w->len > 0 ? 1 : 0; break;
    case CHR_PAT_RING_ALLREDUCE:
      *nSteps = loops * (2 * n - 1);
      nRecvs[CHR_RING_RECV] = loops * (2 * n - 2);
      break;
    case CHR_PAT_PAIR_ALLREDUCE:
      *nSteps = loops * 2;
      nRecvs[CHR_RING_RECV] = loops;
      break;
    case CHR_PAT_RING_REDUCESCATTER:
    case CHR_PAT_RING_ALLGATHER:
      *nSteps = loops * n;
      nRecvs[CHR_RING_RECV] = loops * (n - 1);
      break;
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_RING_REDUCE:
      *nSteps = loops;
      nRecvs[CHR_RING_RECV] = w->dist == 0 ? 0 : loops;
      break;
    case CHR_PAT_TREE_ROOT:
    case CHR_PAT_TREE_UP: {
      int nc = chrTreeChildren(w);
      *nSteps = loops;
      for (int i = 0; i < nc; i++) nRecvs[i] = loops; /* the children's partial sums */
      break;
    }
    case CHR_PAT_TREE_DOWN:
      *nSteps = loops;
      nRecvs[chrTreeChildren(w)] = loops; /* from the parent */
      break;
    case CHR_PAT_P2P_SEND: *nSteps = loops; break;
    case CHR_PAT_P2P_RECV: *nSteps = loops; nRecvs[0] = loops; break;
    default: *nSteps = 0; break;
  }
}

/* Elements of loop `loop` (not for the ring all-reduce): offset from the start of a block, count. */
CHR_HD void chrLoopSpan(const struct chrWork* w, uint64_t loop, uint64_t* off, uint64_t* n) {
  *off = w->start + loop * w->chunkElems;
  *n = w->start + w->len - *off;
  if (*n > w->chunkElems) *n = w->chunkElems;
}

/*
 * Ring all-reduce. The channel's range is processed in loops of nRanks * chunkElems elements; a loop
 * is cut into nRanks blocks, one per ring position. With p my position and n ranks, a loop is 2n-1
 * steps:
 *   s = 0           send  pre(in[block p])
 *   s = 1 .. n-2    recv, send  recv + pre(in[block p-s])                  (reduce-scatter)
 *   s = n-1         recv, out[block p+1] = post(recv + pre(in[block p+1])), send it
 *   s = n .. 2n-2   recv, out[block p+1-t] = recv, send it unless t = n-1 (t = s-n+1; all-gather)
 * Every rank reads each input block once and writes each output block once, so in place is safe: a
 * block is always read (reduce-scatter) before it is overwritten (all-gather).
 */
CHR_HD void chrStepRingAllReduce(const struct chrWork* w, uint64_t index, struct chrStep* st) {
  int n = w->nRanks;
  uint64_t perLoop = (uint64_t)(2 * n - 1);
  uint64_t loop = index / perLoop;
  int s = (int)(index % perLoop);
  uint64_t loopElems = (uint64_t)n * w->chunkElems;
  uint64_t loopStart = w->start + loop * loopElems;
  uint64_t loopCount = w->start + w->len - loopStart;
  if (loopCount > loopElems) loopCount = loopElems;
  uint64_t blockSize = chrRoundUp(chrDivUp(loopCount, (uint64_t)n), chrAlignElems(w->typeSize));
  int pos = w->ringPos, block;
  chrStepRing(st, s > 0, 1);
  if (s < n) {
    block = chrMod(pos - s, n);
    st->final = (s == n - 1);
  } else {
    int t = s - n + 1;
    block = chrMod(pos + 1 - t, n);
    st->nSend = t < n - 1;
  }
  uint64_t bStart = (uint64_t)block * blockSize;
  uint64_t bEnd = bStart + blockSize;
  if (bStart > loopCount) bStart = loopCount;
  if (bEnd > loopCount) bEnd = loopCount;
  st->count = bEnd - bStart;
  int64_t off = (int64_t)(loopStart + bStart);
  if (s < n) st->localOff = off;
  if (s >= n - 1) st->outOff = off;
}

/*
 * The all-reduce of two ranks in one exchange, each loop of chunkElems elements in 2 steps:
 *   s = 0   send  pre(in)
 *   s = 1   recv, out = post(recv + pre(in))
 * The ring's 3 steps per loop (send half, reduce and send it back, receive) wait for the peer twice;
 * these wait once, and each link still carries the loop's bytes once. Both ranks compute the same
 * sum of the same two terms (the ops are commutative), so their outputs agree bit for bit. In place
 * is safe: step 1 reads each input element before it writes that output element.
 */
CHR_HD void chrStepPairAllReduce(const struct chrWork* w, uint64_t index, struct chrStep* st) {
  uint64_t off, len;
  chrLoopSpan(w, index / 2, &off, &len);
  const int recv = (int)(index % 2);
  chrStepRing(st, recv, !recv);
  st->count = len;
  st->localOff = (int64_t)off;
  if (recv) {
    st->outOff = (int64_t)off;
    st->final = 1;
  }
}

/*
 * The other ring patterns. p is this rank's ring position; block b of a buffer belongs to user rank
 * b (ringOrder[pos] is the user rank at ring position pos).
 * reduce-scatter (n steps per loop): s = 0 sends pre(in[rank at p-1]); s = 1..n-2 receive, add
 *   pre(in[rank at p-1-s]) and send; s = n-1 receives, adds pre(in[my block]) and writes out (final).
 * all-gather (n steps per loop): s = 0 copies my input to out[my block] and sends it; s = 1..n-1
 *   receive the block of the rank at p-s into out and pass it on, except at the last step.
 * broadcast (one step per loop): a chain from the root along the ring; the last rank only receives.
 * reduce (one step per loop): a chain along the ring that ends at the root, which applies post.
 */
CHR_HD void chrStepRingOther(const struct chrWork* w, const int* ringOrder, uint64_t index, struct chrStep* st) {
  int n = w->nRanks;
  uint64_t off, len;
  if (w->pattern == CHR_PAT_RING_REDUCESCATTER || w->pattern == CHR_PAT_RING_ALLGATHER) {
    uint64_t loop = index / (uint64_t)n;
    int s = (int)(index % (uint64_t)n);
    chrLoopSpan(w, loop, &off, &len);
    chrStepRing(st, s > 0, s < n - 1);
    st->count = len;
    if (w->pattern == CHR_PAT_RING_REDUCESCATTER) {
      int block = ringOrder[chrMod(w->ringPos - 1 - s, n)];
      st->localOff = (int64_t)((uint64_t)block * w->count + off);
      if (s == n - 1) {
        st->outOff = (int64_t)off;
        st->final = 1;
      }
    } else {
      int block = ringOrder[chrMod(w->ringPos - s, n)];
      if (s == 0) st->localOff = (int64_t)off;
      st->outOff = (int64_t)((uint64_t)block * w->count + off);
    }
    return;
  }
  chrLoopSpan(w, index, &off, &len);
  int d = w->dist;
  chrStepRing(st, d > 0, d < n - 1);
  st->count = len;
  if (w->pattern == CHR_PAT_RING_BROADCAST) {
    st->outOff = (int64_t)off;
    if (d == 0) {
      st->localOff = (int64_t)off;
      if (w->sendbuff == w->recvbuff) st->outOff = -1; /* in place: the root's output is already there */
    }
  } else { /* reduce */
    st->localOff = (int64_t)off;
    if (d == n - 1) {
      st->outOff = (int64_t)off;
      st->final = 1;
    }
  }
}

/* Tree lanes: the root reduces its children's sums with its input, writes the output and sends it
 * straight back down; an up lane sends children + input to the parent; a down lane passes the
 * parent's result to the output and the children. */
CHR_HD void chrStepTree(const struct chrWork* w, uint64_t index, struct chrStep* st) {
  uint64_t off, len;
  chrLoopSpan(w, index, &off, &len);
  chrStepClear(st);
  st->count = len;
  int nc = chrTreeChildren(w);
  if (w->pattern == CHR_PAT_TREE_ROOT) {
    st->nRecv = nc;
    st->nSend = nc;
    for (int i = 0; i < nc; i++) {
      st->recv[i] = i;
      st->send[i] = nc + i;
    }
    st->localOff = st->outOff = (int64_t)off;
    st->final = 1;
  } else if (w->pattern == CHR_PAT_TREE_UP) {
    st->nRecv = nc;
    for (int i = 0; i < nc; i++) st->recv[i] = i;
    st->nSend = 1;
    st->send[0] = nc;
    st->localOff = (int64_t)off;
  } else {
    st->nRecv = 1;
    st->recv[0] = nc;
    st->nSend = nc;
    for (int i = 0; i < nc; i++) st->send[i] = i;
    st->outOff = (int64_t)off;
  }
}

/* Step `index` (< the work's nSteps) of a work. ringOrder: user rank at each ring position (read by
 * reduce-scatter and all-gather only). */
CHR_HD void chrWorkStep(const struct chrWork* w, const int* ringOrder, uint64_t index, struct chrStep* st) {
  uint64_t off, len;
  switch (w->pattern) {
    case CHR_PAT_RING_ALLREDUCE: chrStepRingAllReduce(w, index, st); return;
    case CHR_PAT_PAIR_ALLREDUCE: chrStepPairAllReduce(w, index, st); return;
    case CHR_PAT_RING_REDUCESCATTER:
    case CHR_PAT_RING_ALLGATHER:
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_RING_REDUCE: chrStepRingOther(w, ringOrder, index, st); return;
    case CHR_PAT_TREE_ROOT:
    case CHR_PAT_TREE_UP:
    case CHR_PAT_TREE_DOWN: chrStepTree(w, index, st); return;
    case CHR_PAT_P2P_SEND:
    case CHR_PAT_P2P_RECV:
      chrLoopSpan(w, index, &off, &len);
      chrStepClear(st);
      st->count = len;
      if (w->pattern == CHR_PAT_P2P_SEND) {
        st->nSend = 1;
        st->localOff = (int64_t)off;
      } else {
        st->nRecv = 1;
        st->outOff = (int64_t)off;
      }
      return;
    case CHR_PAT_LOCAL:
      chrStepClear(st);
      st->count = w->len;
      st->localOff = st->outOff = 0;
      st->final = 1;
      return;
    default: chrStepClear(st); return;
  }
}

#endif /* CHORUS_HOSTDEV_WORK_H_ */
