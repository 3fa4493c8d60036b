/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_sim.c: the reference simulation of step programs (gpu_sim.h). */
#include "gpu_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device/kernels/dev_comm.h"
#include "exec/reduce.h"

struct simMsg {
  char* data;
  size_t bytes;
};

/* A connection: at most CHR_DEV_STEPS messages sent and not yet consumed, as the slots allow. */
struct simConn {
  struct simMsg q[CHR_DEV_STEPS];
  uint64_t sent, consumed;
};

struct simCursor {
  int work, started;
  uint64_t step, nSteps;
};

struct sim {
  int n;
  const int* ringOrder;
  const struct chrSimRank* ranks;
  const struct chrSimRegion* regions;
  int nRegions;
  struct simConn* conns;
  size_t nRing;
  char* err;
  size_t errLen;
};

static int fail(struct sim* s, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, s->errLen, fmt, ap);
  va_end(ap);
  return -1;
}

static char* hostOf(struct sim* s, uint64_t dev, size_t bytes) {
  for (int i = 0; i < s->nRegions; i++) {
    const struct chrSimRegion* r = &s->regions[i];
    if (dev >= r->dev && dev - r->dev <= r->bytes && bytes <= r->bytes - (dev - r->dev)) return r->host + (dev - r->dev);
  }
  return NULL;
}

static struct simConn* connOf(struct sim* s, int rank, int channel, const struct chrWorkLink* L) {
  const size_t n = (size_t)s->n;
  if (!L->p2p) return &s->conns[(size_t)channel * n + (size_t)(L->isSend ? rank : L->peer)];
  const size_t from = L->isSend ? (size_t)rank : (size_t)L->peer, to = L->isSend ? (size_t)L->peer : (size_t)rank;
  return &s->conns[s->nRing + ((size_t)L->conn * n + from) * n + to];
}

static int buildOp(struct sim* s, const struct chrWork* w, chrRedOp* op, chrRedOp* opNoPre) {
  memset(op, 0, sizeof *op);
  op->type = (ncclDataType_t)w->type;
  op->kind = (chrRedKind)w->op;
  op->divisor = 1;
  if (w->op == chrRedPreMulSum) {
    if (w->flags & CHR_WORK_SCALAR_PTR) {
      const char* p = hostOf(s, w->opArg, w->typeSize);
      if (p == NULL) return fail(s, "PreMulSum scalar at 0x%llx is in no region", (unsigned long long)w->opArg);
      memcpy(op->scalar.bytes, p, w->typeSize);
    } else {
      memcpy(op->scalar.bytes, &w->opArg, w->typeSize);
    }
  }
  if (w->op == chrRedSumPostDiv) op->divisor = w->opArg ? w->opArg : 1;
  *opNoPre = *op;
  if (op->kind == chrRedPreMulSum) opNoPre->kind = chrRedSum;
  return 0;
}

/* v = recv[0] OP ... OP recv[k-1] OP pre(local), post at the final step: exec.c's order. */
static void compute(const chrRedOp* op, const chrRedOp* opNoPre, const struct chrStep* st, const void** recv,
                    const void* local, char* v, size_t bytes) {
  size_t n = st->count;
  if (local) {
    const void* first = NULL;
    if (st->nRecv > 1) {
      chrReduce(opNoPre, v, NULL, recv[0], recv[1], n);
      for (int k = 2; k < st->nRecv; k++) chrReduce(opNoPre, v, NULL, v, recv[k], n);
      first = v;
    } else if (st->nRecv == 1) {
      first = recv[0];
    }
    chrReduce(op, v, NULL, first, local, n);
  } else if (st->nRecv == 1) {
    memcpy(v, recv[0], bytes);
  } else if (st->nRecv > 1) {
    chrReduce(opNoPre, v, NULL, recv[0], recv[1], n);
    for (int k = 2; k < st->nRecv; k++) chrReduce(opNoPre, v, NULL, v, recv[k], n);
  }
  if (st->final && op->kind == chrRedSumPostDiv) chrReducePost(op, v, v, n);
}

static int rankWorks(const struct chrSimRank* rk) {
  int total = 0;
  for (int c = 0; c < rk->nChannels; c++) total += rk->nWorks[c];
  return total;
}

/* The first engine work of a rank at or after works[from] that sends to `peer` (isSend) or receives
 * from it, of transfer class cls (links[0].conn: CHR_WORK_CLASS_P2P, CHR_WORK_CLASS_COLL); -1 when
 * none is left. Works in array order, channel after channel: the order in which the device library
 * finds and numbers them. */
static int nextEngine(const struct chrSimRank* rk, int from, int isSend, int peer, int cls) {
  const int total = rankWorks(rk);
  for (int i = from; i < total; i++) {
    const struct chrWork* w = &rk->works[i];
    if (chrWorkIsEngineTransfer(w) && (w->pattern == CHR_PAT_P2P_SEND) == isSend && w->links[0].peer == peer &&
        w->links[0].conn == cls)
      return i;
  }
  return -1;
}

static int countEngine(const struct chrSimRank* rk, int isSend, int peer, int cls) {
  int k = 0;
  for (int i = nextEngine(rk, 0, isSend, peer, cls); i >= 0; i = nextEngine(rk, i + 1, isSend, peer, cls)) k++;
  return k;
}

/* The engine works of the plans. Per ordered pair (r, p) and transfer class, the k-th engine send of
 * r to p meets the k-th engine receive of p from r of the same class, as the device library numbers
 * them (a class of its own for the collectives' transfers, so a broadcast never meets a send); each
 * pair must move the same bytes, and the sender's bytes are copied into the receiver's buffer. Run
 * after every channel's works have finished: on the GPU the copies run on a side stream beside the
 * launch's kernels, unordered with them, and the operations of one group are unordered (as with
 * NCCL), so a correct plan gives the same result either way; after is the order the stream's join
 * makes visible to later work. */
static int runEngineP2p(struct sim* s) {
  for (int r = 0; r < s->n; r++) {
    const struct chrSimRank* rk = &s->ranks[r];
    const int total = rankWorks(rk);
    for (int i = 0; i < total; i++) {
      const struct chrWork* w = &rk->works[i];
      if (!chrWorkIsEngineTransfer(w)) continue;
      const struct chrWorkLink* L = &w->links[0];
      if (w->nLinks != 1 || !L->p2p || L->peer < 0 || L->peer >= s->n || L->peer == r ||
          L->isSend != (w->pattern == CHR_PAT_P2P_SEND) || L->conn >= CHR_WORK_CLASSES)
        return fail(s, "rank %d: engine work %d has %d links, the first to rank %d (p2p %d, send %d, class %d)", r, i,
                    w->nLinks, L->peer, L->p2p, L->isSend, L->conn);
    }
  }
  for (int r = 0; r < s->n; r++)
    for (int p = 0; p < s->n; p++)
      for (int cls = 0; cls < CHR_WORK_CLASSES && p != r; cls++) {
        const struct chrSimRank* from = &s->ranks[r];
        const struct chrSimRank* to = &s->ranks[p];
        const int nSend = countEngine(from, 1, p, cls), nRecv = countEngine(to, 0, r, cls);
        if (nSend != nRecv)
          return fail(s, "engine transfers of class %d from rank %d to rank %d: %d sends, %d receives", cls, r, p, nSend,
                      nRecv);
        int i = nextEngine(from, 0, 1, p, cls), j = nextEngine(to, 0, 0, r, cls);
        for (int k = 0; i >= 0 && j >= 0;
             k++, i = nextEngine(from, i + 1, 1, p, cls), j = nextEngine(to, j + 1, 0, r, cls)) {
          const struct chrWork* ws = &from->works[i];
          const struct chrWork* wr = &to->works[j];
          const size_t bytes = (size_t)(ws->len * ws->typeSize);
          if (bytes != (size_t)(wr->len * wr->typeSize))
            return fail(s, "engine transfer %d of class %d from rank %d to rank %d: the send moves %zu bytes, the receive "
                        "%zu", k, cls, r, p, bytes, (size_t)(wr->len * wr->typeSize));
          if (bytes == 0) continue;
          const char* src = hostOf(s, ws->sendbuff + ws->start * ws->typeSize, bytes);
          char* dst = hostOf(s, wr->recvbuff + wr->start * wr->typeSize, bytes);
          if (src == NULL || dst == NULL)
            return fail(s, "engine transfer %d of class %d from rank %d to rank %d: %s outside every buffer", k, cls, r, p,
                        src == NULL ? "the send's input" : "the receive's output");
          memmove(dst, src, bytes);
        }
      }
  return 0;
}

/* Runs one step if its data and slots are there: 1 ran, 0 not ready, -1 error. */
static int tryStep(struct sim* s, int rank, int channel, const struct chrWork* w, uint64_t index) {
  struct chrStep st;
  chrWorkStep(w, s->ringOrder, index, &st);
  struct simConn* rc[CHR_STEP_MAX_LINKS];
  struct simConn* sc[CHR_STEP_MAX_LINKS];
  for (int k = 0; k < st.nRecv; k++) {
    rc[k] = connOf(s, rank, channel, &w->links[st.recv[k]]);
    if (rc[k]->sent == rc[k]->consumed) return 0;
  }
  for (int j = 0; j < st.nSend; j++) {
    sc[j] = connOf(s, rank, channel, &w->links[st.send[j]]);
    if (sc[j]->sent - sc[j]->consumed >= CHR_DEV_STEPS) return 0;
  }
  const size_t bytes = (size_t)st.count * w->typeSize;
  const void* recv[CHR_STEP_MAX_LINKS];
  for (int k = 0; k < st.nRecv; k++) {
    struct simMsg* m = &rc[k]->q[rc[k]->consumed % CHR_DEV_STEPS];
    if (m->bytes != bytes)
      return fail(s, "rank %d channel %d step %llu: received %zu bytes, expected %zu", rank, channel,
                  (unsigned long long)index, m->bytes, bytes);
    recv[k] = m->data;
  }
  const char* local = NULL;
  char* out = NULL;
  if (st.localOff >= 0 && bytes > 0) {
    local = hostOf(s, w->sendbuff + (uint64_t)st.localOff * w->typeSize, bytes);
    if (local == NULL) return fail(s, "rank %d channel %d step %llu: input outside every buffer", rank, channel, (unsigned long long)index);
  }
  if (st.outOff >= 0 && bytes > 0) {
    out = hostOf(s, w->recvbuff + (uint64_t)st.outOff * w->typeSize, bytes);
    if (out == NULL) return fail(s, "rank %d channel %d step %llu: output outside every buffer", rank, channel, (unsigned long long)index);
  }
  chrRedOp op, opNoPre;
  if (buildOp(s, w, &op, &opNoPre)) return -1;
  char* v = (char*)malloc(bytes ? bytes : 1);
  if (v == NULL) return fail(s, "out of memory");
  if (bytes > 0) compute(&op, &opNoPre, &st, recv, local, v, bytes);
  if (out) memcpy(out, v, bytes);
  for (int j = 0; j < st.nSend; j++) {
    struct simMsg* m = &sc[j]->q[sc[j]->sent % CHR_DEV_STEPS];
    m->data = j == 0 ? v : (char*)malloc(bytes ? bytes : 1);
    if (m->data == NULL) return fail(s, "out of memory");
    if (j > 0) memcpy(m->data, v, bytes);
    m->bytes = bytes;
    sc[j]->sent++;
  }
  if (st.nSend == 0) free(v);
  for (int k = 0; k < st.nRecv; k++) {
    struct simMsg* m = &rc[k]->q[rc[k]->consumed % CHR_DEV_STEPS];
    free(m->data);
    m->data = NULL;
    rc[k]->consumed++;
  }
  return 1;
}

int chrSimRun(int nRanks, const int* ringOrder, const struct chrSimRank* ranks, const struct chrSimRegion* regions,
              int nRegions, char* err, size_t errLen) {
  struct sim s = {nRanks, ringOrder, ranks, regions, nRegions, NULL, 0, err, errLen};
  int maxChannels = 0;
  for (int r = 0; r < nRanks; r++)
    if (ranks[r].nChannels > maxChannels) maxChannels = ranks[r].nChannels;
  s.nRing = (size_t)maxChannels * (size_t)nRanks;
  const size_t nConns = s.nRing + (size_t)CHR_DEV_P2P_CONNS * nRanks * nRanks;
  s.conns = (struct simConn*)calloc(nConns, sizeof(struct simConn));
  struct simCursor* cur = (struct simCursor*)calloc((size_t)nRanks * (size_t)(maxChannels ? maxChannels : 1), sizeof *cur);
  int* firstWork = (int*)calloc((size_t)nRanks * (size_t)(maxChannels + 1), sizeof(int));
  int res = 0;
  if (s.conns == NULL || cur == NULL || firstWork == NULL) {
    res = fail(&s, "out of memory");
    goto done;
  }
  for (int r = 0; r < nRanks; r++)
    for (int c = 0; c < ranks[r].nChannels; c++)
      firstWork[r * (maxChannels + 1) + c + 1] = firstWork[r * (maxChannels + 1) + c] + ranks[r].nWorks[c];
  for (;;) {
    int progress = 0, busy = 0;
    for (int r = 0; r < nRanks; r++) {
      /* The rank's running kernel: the earliest launch any of its channels still has work in. */
      int running = 0;
      if (ranks[r].launch) {
        running = -1;
        for (int c = 0; c < ranks[r].nChannels; c++) {
          const struct simCursor* k = &cur[r * maxChannels + c];
          if (k->work >= ranks[r].nWorks[c]) continue;
          const int l = ranks[r].launch[firstWork[r * (maxChannels + 1) + c] + k->work];
          if (running < 0 || l < running) running = l;
        }
      }
      for (int c = 0; c < ranks[r].nChannels; c++) {
        struct simCursor* k = &cur[r * maxChannels + c];
        for (;;) {
          if (k->work >= ranks[r].nWorks[c]) break;
          const int at = firstWork[r * (maxChannels + 1) + c] + k->work;
          if (ranks[r].launch && ranks[r].launch[at] != running) break; /* a later kernel */
          const struct chrWork* w = &ranks[r].works[at];
          if (!k->started) {
            uint64_t nRecvs[CHR_WORK_MAX_LINKS];
            chrWorkCounts(w, &k->nSteps, nRecvs);
            if (chrWorkIsEngineTransfer(w)) k->nSteps = 0; /* on the copy engine, no step: runEngineP2p moves it */
            k->step = 0;
            k->started = 1;
          }
          if (k->step == k->nSteps) {
            k->work++;
            k->started = 0;
            progress = 1;
            continue;
          }
          int ran = tryStep(&s, r, c, w, k->step);
          if (ran < 0) {
            res = -1;
            goto done;
          }
          if (!ran) break;
          k->step++;
          progress = 1;
        }
        if (k->work < ranks[r].nWorks[c]) busy = 1;
      }
    }
    if (!busy) break;
    if (!progress) {
      res = fail(&s, "the plans deadlock (no rank can take a step)");
      goto done;
    }
  }
  for (size_t i = 0; i < nConns; i++)
    if (s.conns[i].sent != s.conns[i].consumed) {
      res = fail(&s, "connection %zu: %llu steps sent, %llu received", i, (unsigned long long)s.conns[i].sent,
                 (unsigned long long)s.conns[i].consumed);
      break;
    }
  if (res == 0) res = runEngineP2p(&s);
done:
  if (s.conns)
    for (size_t i = 0; i < nConns; i++)
      for (int j = 0; j < CHR_DEV_STEPS; j++) free(s.conns[i].q[j].data);
  free(s.conns);
  free(cur);
  free(firstWork);
  return res;
}

int chrSimFlattenLaunch(const struct chrDevLaunch* l, struct chrWork** flat, int* nWorks) {
  int kernel = 0;
  for (int c = 0; c < l->nChannels; c++) kernel += l->nWorks[c];
  const int engine = l->nCopies + l->nCeSends, total = kernel + engine;
  *flat = malloc(sizeof(struct chrWork) * (size_t)(total > 0 ? total : 1));
  if (*flat == NULL) return -1;
  if (l->nCopies > 0) memcpy(*flat, l->copies, sizeof(struct chrWork) * (size_t)l->nCopies);
  if (l->nCeSends > 0) memcpy(*flat + l->nCopies, l->ceSends, sizeof(struct chrWork) * (size_t)l->nCeSends);
  if (kernel > 0) memcpy(*flat + engine, l->works, sizeof(struct chrWork) * (size_t)kernel);
  memset(nWorks, 0, sizeof(int) * CHR_DEV_MAX_CHANNELS);
  for (int c = 0; c < l->nChannels; c++) nWorks[c] = l->nWorks[c];
  nWorks[0] += engine;
  return l->nChannels > 0 ? l->nChannels : 1;
}
