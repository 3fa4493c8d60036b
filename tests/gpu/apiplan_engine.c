/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * apiplan_engine.c: test_gpu_apiplan's copy-engine checks (apiplan_engine.h).
 * With CHORUS_GPU_CE_MIN_BYTES set (gpu.apiplan.cesend.*), the sends to other ranks of
 * that many bytes or more are one engine work per end, in the point-to-point launch's ceSends in call
 * order, and the simulation copies them pair by pair; on 2 ranks so are the broadcasts (the root's send, the other
 * rank's receive, in transfer class 1; an engine copy at the root out of place), ahead of the sends
 * and out of the collectives' launch; the plans made as if under graph capture must have none. On 2
 * ranks a scenario of sends and broadcasts that the two ranks group differently checks the classes.
 * With CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES set (gpu.apiplan.ceallreduce.*), a 2-rank SIMPLE ring
 * all-reduce of an even count and that many bytes or more is a reduce-scatter in the collectives'
 * launch (work for work as expected) and its halves' engine send and receive (class 1, with the
 * broadcasts' in call order) in the point-to-point launch's ceSends, which the simulation runs
 * after the collectives' launch as the stream does; other all-reduces keep their works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiplan_engine.h"
#include "commstate/comm.h"
#include "config/algo_select.h"
#include "config/param.h"
#include "device/kernels/dev_work.h"
#include "gpu_sim.h"
#include "nccl.h"
#include "plan/plan.h"

static uint64_t ceMin;             /* CHORUS_GPU_CE_MIN_BYTES as the test runs with it (0: off) */
static uint64_t ceBcastMin;        /* the broadcasts' floor: CHORUS_GPU_CE_BCAST_MIN_BYTES, 0 there: ceMin */
static long ceSendWorks, ceRecvWorks; /* sends to other ranks / receives from them as engine works */
static long ceMixedPlans;          /* rank plans with an engine work and a lane transfer to one peer, one direction */
static long ceCapturedPlans;       /* rank plans made as under graph capture, checked to have no engine work */
static long ceBcastSends, ceBcastRecvs; /* 2-rank broadcasts as engine transfers (class 1): the root's, the other's */
static long ceBcastCopies;         /* ... the root's engine copies of its own buffer (out of place) */
static long ceClassScenarios;      /* the sends-and-broadcasts-across-groups scenario, run and passed */
static uint64_t ceArMin;           /* CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES as the test runs with it (0: off) */
static long ceArTasks;             /* 2-rank all-reduces planned as a reduce-scatter and an engine all-gather */
static long ceArScatterWorks;      /* ... their reduce-scatter works in the collectives' launch */
static long ceArSends, ceArRecvs;  /* ... their halves' engine sends and receives (class 1) */
static long ceArKept;              /* all-reduces of that size that keep their works (odd count, LL, tree, pair, n != 2) */

/* The floors as the library reads them (environment, configuration file, default: core/config), so
 * that a chorus.ini of the developer's does not make the expected plans differ from the real ones;
 * test_config checks that reading. */
void apiEngineInit(void) {
  ceMin = (uint64_t)chrParamInt(CHR_P_GPU_CE_MIN_BYTES);
  const uint64_t bcast = (uint64_t)chrParamInt(CHR_P_GPU_CE_BCAST_MIN_BYTES);
  ceBcastMin = bcast > 0 ? bcast : ceMin;
  ceArMin = (uint64_t)chrParamInt(CHR_P_GPU_CE_ALLREDUCE_MIN_BYTES);
}

int apiEngineOn(void) { return ceMin > 0 || ceBcastMin > 0 || ceArMin > 0; }

/* The engine all-reduce's own cases and verdict need a floor the cases reach (MBs): set low, as
 * gpu.apiplan.ceallreduce.* does; the default (1 GiB) only has every plan checked against it. */
static int ceArLow(void) { return ceArMin > 0 && ceArMin <= (1u << 20); }

/* What dev_launch.c makes an engine work (read from the environment, not the library): a send to
 * another rank or a receive from one of at least CHORUS_GPU_CE_MIN_BYTES, outside graph capture. */
static int wantsEngine(const struct chrCollTask* t, int rank, int capturing) {
  return ceMin > 0 && !capturing && (t->func == ncclFuncSend || t->func == ncclFuncRecv) && t->root != rank &&
         t->count > 0 && (uint64_t)t->count * (uint64_t)t->typeSize >= ceMin;
}

/* ... and a broadcast of two ranks of at least CHORUS_GPU_CE_BCAST_MIN_BYTES (128 MiB by default; 0:
 * CHORUS_GPU_CE_MIN_BYTES): the root's send and the other rank's receive, in transfer class 1 (the
 * collectives'), with, at the root out of place, an engine copy of its buffer. */
static int wantsEngineBcast(const struct chrCollTask* t, int capturing) {
  return ceBcastMin > 0 && !capturing && t->func == ncclFuncBroadcast && t->comm->nRanks == 2 && t->count > 0 &&
         (uint64_t)t->count * (uint64_t)t->typeSize >= ceBcastMin;
}

/* ... and a 2-rank all-reduce of at least CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES with an even count,
 * planned as SIMPLE ring works (not LL, the tree or the pair exchange): a reduce-scatter on the
 * kernels and its halves crossing on the engine (class 1, numbered with the broadcasts). */
static int wantsEngineAllReduce(const struct chrCollTask* t, int capturing) {
  return ceArMin > 0 && !capturing && t->func == ncclFuncAllReduce && t->comm->nRanks == 2 && t->count > 0 &&
         t->count % 2 == 0 && (uint64_t)t->count * (uint64_t)t->typeSize >= ceArMin && t->algo == CHR_ALGO_RING &&
         t->proto == CHR_PROTO_SIMPLE && !t->pairExchange;
}

/* The reduce-scatter work of channel c of such an all-reduce of rank `rank`, as dev_launch.c must make
 * it from the all-reduce's work: a reduce-scatter of recvcount half = count / 2 over the whole input,
 * into block `rank` of the output, channel c's share of the half; len 0: no work. */
static struct chrWork ceArScatterWork(const struct chrCollTask* t, int rank, int c) {
  const uint64_t half = (uint64_t)t->count / 2;
  struct chrWork w = t->works[c];
  w.pattern = CHR_PAT_RING_REDUCESCATTER;
  w.func = ncclFuncReduceScatter;
  w.count = half;
  w.sendbuff = (uint64_t)(uintptr_t)t->sendbuff;
  w.recvbuff = (uint64_t)(uintptr_t)t->recvbuff + (uint64_t)rank * half * (uint64_t)t->typeSize;
  chrChannelRange(half, t->nChannels, c, chrAlignElems(t->typeSize), &w.start, &w.len);
  return w;
}

/* The copy-engine works, as dev_launch.c must make them: the broadcasts' and the all-reduces' first
 * (class 1, in call order among the collectives), then the sends' and receives' (class 0), each in
 * call order; the copies among them go to the launch's copies, the rest to its ceSends, each list in
 * this order. */
struct ceExpect {
  const struct chrCollTask* t;
  int isSend, peer, cls, copy; /* copy: the root's engine copy of its own buffer (a local work) */
  int ar;                      /* an all-reduce's half: elements [block * half, +half) of its output */
  uint64_t buf, count;         /* the buffer and elements a transfer moves */
};

static int expectedEngineWorks(const struct chrCollTask* head, int rank, int capturing, struct ceExpect* out, int cap) {
  int k = 0;
  for (const struct chrCollTask* t = head; t; t = t->next) {
    const uint64_t send = (uint64_t)(uintptr_t)t->sendbuff, recv = (uint64_t)(uintptr_t)t->recvbuff;
    if (k + 2 > cap) return -1;
    if (wantsEngineAllReduce(t, capturing)) { /* my half to the peer, then the peer's half from it */
      const uint64_t half = (uint64_t)t->count / 2, bytes = half * (uint64_t)t->typeSize;
      const int peer = 1 - rank;
      out[k++] = (struct ceExpect){t, 1, peer, CHR_WORK_CLASS_COLL, 0, 1, recv + (uint64_t)rank * bytes, half};
      out[k++] = (struct ceExpect){t, 0, peer, CHR_WORK_CLASS_COLL, 0, 1, recv + (uint64_t)peer * bytes, half};
      continue;
    }
    if (!wantsEngineBcast(t, capturing)) continue;
    const int root = t->root == rank;
    out[k++] = (struct ceExpect){t, root, root ? 1 - rank : t->root, CHR_WORK_CLASS_COLL, 0, 0, root ? send : recv,
                                 t->count};
    if (root && t->sendbuff != t->recvbuff) out[k++] = (struct ceExpect){t, 1, rank, CHR_WORK_CLASS_COLL, 1, 0, send, t->count};
  }
  for (const struct chrCollTask* t = head; t; t = t->next) {
    if (!wantsEngine(t, rank, capturing)) continue;
    if (k + 1 > cap) return -1;
    const int isSend = t->func == ncclFuncSend;
    out[k++] = (struct ceExpect){t, isSend, t->root, CHR_WORK_CLASS_P2P, 0, 0,
                                 (uint64_t)(uintptr_t)(isSend ? t->sendbuff : t->recvbuff), t->count};
  }
  return k;
}

static const char* ceWhat(const struct ceExpect* e) {
  if (e->ar) return e->isSend ? "all-reduce's send of its reduced half" : "all-reduce's receive of the peer's half";
  return e->copy ? "root's engine copy of a broadcast" : e->cls == CHR_WORK_CLASS_COLL ? (e->isSend ? "broadcast's send" :
         "broadcast's receive") : e->isSend ? "send" : "receive";
}

/* Whether w is the work e expects. */
static int ceMatches(const struct chrWork* w, const struct ceExpect* e) {
  const struct chrCollTask* t = e->t;
  if (e->copy)
    return w->pattern == CHR_PAT_LOCAL && (w->flags & CHR_WORK_ENGINE) && w->func == ncclFuncSend && w->nLinks == 0 &&
           w->start == 0 && w->len == t->count && w->typeSize == t->typeSize && w->proto == CHR_PROTO_SIMPLE &&
           w->sendbuff == (uint64_t)(uintptr_t)t->sendbuff && w->recvbuff == (uint64_t)(uintptr_t)t->recvbuff;
  return w->pattern == (e->isSend ? CHR_PAT_P2P_SEND : CHR_PAT_P2P_RECV) && w->flags == CHR_WORK_ENGINE &&
         w->func == (e->isSend ? ncclFuncSend : ncclFuncRecv) && w->nLinks == 1 && w->links[0].peer == e->peer &&
         w->links[0].isSend == e->isSend && w->links[0].p2p && w->links[0].conn == e->cls && w->start == 0 &&
         w->len == e->count && w->count == e->count && w->typeSize == t->typeSize && w->chunkElems == w->len &&
         w->proto == CHR_PROTO_SIMPLE && w->op == CHR_DEV_SUM && w->opArg == 0 &&
         (e->isSend ? w->sendbuff : w->recvbuff) == e->buf && (e->isSend ? w->recvbuff : w->sendbuff) == 0;
}

static int checkAgainst(const char* name, int rank, const struct chrCollTask* head, const struct chrDevLaunchPlan* p,
                        int capturing, const struct ceExpect* want, int nWant, int* bcastCopies);

/* The engine works of a rank's plan, against its tasks (head: call order): one per send or receive
 * that wants one, and the works of each broadcast and all-reduce that wants them, none other, in
 * the point-to-point launch's copies and ceSends, the collectives' first (in their call order), then
 * the sends' (in theirs) (the device library numbers them per peer, direction and class in the order
 * it finds them, and both ends must number alike), each one piece (a whole buffer, or an all-reduce's
 * half) with one link to the peer that names the class. Such a broadcast has no collective work and
 * no call number; such an all-reduce's collective works are its reduce-scatter's: the collectives'
 * launch holds exactly those and the planned works of the other collectives, numbered 0.. in call
 * order. Counts them, and the plans where one goes to a peer that a lane transfer of the same
 * direction goes to as well (sizes mixed in one group). */
int apiEngineCheckPlan(const char* name, int rank, const struct chrCollTask* head, const struct chrDevLaunchPlan* p,
                          int capturing, int* bcastCopies) {
  int cap = 0;
  for (const struct chrCollTask* t = head; t; t = t->next) cap += 2;
  struct ceExpect* want = malloc(sizeof(struct ceExpect) * (size_t)(cap ? cap : 1));
  const int nWant = want ? expectedEngineWorks(head, rank, capturing, want, cap) : -1;
  const int bad = nWant < 0 ? (fprintf(stderr, "test bug: too many engine works\n"), 1)
                            : checkAgainst(name, rank, head, p, capturing, want, nWant, bcastCopies);
  free(want);
  if (!bad && capturing) ceCapturedPlans++;
  return bad;
}

/* apiEngineCheckPlan against the expected engine works want[0 .. nWant). */
static int checkAgainst(const char* name, int rank, const struct chrCollTask* head, const struct chrDevLaunchPlan* p,
                        int capturing, const struct ceExpect* want, int nWant, int* bcastCopies) {
  const struct chrDevLaunch* l = &p->p2p;
  int nCopies = 0, nSends = 0; /* matched so far */
  for (int k = 0; k < nWant; k++) {
    const struct ceExpect* e = &want[k];
    const char* list = e->copy ? "copies" : "ceSends";
    const int at = e->copy ? nCopies++ : nSends++;
    const struct chrWork* w = e->copy ? (at < l->nCopies ? &l->copies[at] : NULL) : (at < l->nCeSends ? &l->ceSends[at] : NULL);
    if (w == NULL) {
      fprintf(stderr, "FAIL %s: rank %d: the %s %s rank %d expected as entry %d of the launch's %s, which holds %d%s\n",
              name, rank, ceWhat(e), e->copy ? "of" : e->isSend ? "to" : "from", e->peer, at, list,
              e->copy ? l->nCopies : l->nCeSends, capturing ? " (capturing)" : "");
      return 1;
    }
    if (!ceMatches(w, e)) {
      fprintf(stderr, "FAIL %s: rank %d: entry %d of the launch's %s (pattern %d, flags %d, func %d, %d links, peer %d, "
              "class %d, [%llu, +%llu) of %llu at 0x%llx) is not the %s %s rank %d of %llu elements at 0x%llx (class %d), "
              "in call order\n", name, rank, at, list, w->pattern, w->flags, w->func, w->nLinks,
              w->nLinks ? w->links[0].peer : -1, w->nLinks ? w->links[0].conn : -1, (unsigned long long)w->start,
              (unsigned long long)w->len, (unsigned long long)w->count,
              (unsigned long long)(w->pattern == CHR_PAT_P2P_RECV ? w->recvbuff : w->sendbuff), ceWhat(e),
              e->copy ? "of" : e->isSend ? "to" : "from", e->peer, (unsigned long long)e->count,
              (unsigned long long)e->buf, e->cls);
      return 1;
    }
    ceSendWorks += !e->copy && e->cls == CHR_WORK_CLASS_P2P && e->isSend;
    ceRecvWorks += !e->copy && e->cls == CHR_WORK_CLASS_P2P && !e->isSend;
    ceBcastSends += !e->copy && !e->ar && e->cls == CHR_WORK_CLASS_COLL && e->isSend;
    ceBcastRecvs += !e->copy && !e->ar && e->cls == CHR_WORK_CLASS_COLL && !e->isSend;
    ceBcastCopies += e->copy;
    ceArSends += e->ar && e->isSend;
    ceArRecvs += e->ar && !e->isSend;
  }
  *bcastCopies = nCopies;
  if (nSends != l->nCeSends) {
    fprintf(stderr, "FAIL %s: rank %d: the launch's ceSends hold %d transfers, %d expected%s\n", name, rank, l->nCeSends,
            nSends, capturing ? " (capturing)" : "");
    return 1;
  }
  for (int i = nCopies; i < l->nCopies; i++) /* the rest: a rank's large copies to itself */
    if (l->copies[i].pattern != CHR_PAT_LOCAL || !(l->copies[i].flags & CHR_WORK_ENGINE) || l->copies[i].func != ncclFuncSend) {
      fprintf(stderr, "FAIL %s: rank %d: entry %d of the launch's copies (pattern %d, flags %d, func %d) is no copy to "
              "itself\n", name, rank, i, l->copies[i].pattern, l->copies[i].flags, l->copies[i].func);
      return 1;
    }
  int mixed = 0, total = 0;
  for (int ch = 0; ch < l->nChannels; ch++) total += l->nWorks[ch];
  for (int i = 0; i < total; i++) {
    const struct chrWork* w = &l->works[i];
    if (w->flags & CHR_WORK_ENGINE) {
      fprintf(stderr, "FAIL %s: rank %d: engine work (pattern %d, %llu bytes) among the kernels' works%s\n", name, rank,
              w->pattern, (unsigned long long)(w->len * w->typeSize), capturing ? " (capturing)" : "");
      return 1;
    }
    if (w->pattern != CHR_PAT_P2P_SEND && w->pattern != CHR_PAT_P2P_RECV) {
      if (w->pattern != CHR_PAT_LOCAL) {
        fprintf(stderr, "FAIL %s: rank %d: pattern %d in the point-to-point launch\n", name, rank, w->pattern);
        return 1;
      }
      continue;
    }
    for (int j = 0; j < l->nCeSends && !mixed; j++)
      mixed = l->ceSends[j].links[0].conn == CHR_WORK_CLASS_P2P && l->ceSends[j].pattern == w->pattern &&
              l->ceSends[j].links[0].peer == w->links[0].peer;
  }
  /* The collectives' launch, work for work: on each channel the works of every collective but the
   * engine broadcasts, in call order, their calls numbered 0.. without gaps (both ranks leave out the
   * same calls, so the launcher cuts alike); each the task's planned work, but an engine all-reduce's,
   * which are its reduce-scatter works (ceArScatterWork), and nothing else. */
  const struct chrDevLaunch* coll = &p->coll;
  int at[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], call = 0; /* channel ch's works: [at, end) */
  for (int ch = 0, sum = 0; ch < CHR_DEV_MAX_CHANNELS; ch++) {
    at[ch] = sum;
    sum += ch < coll->nChannels ? coll->nWorks[ch] : 0;
    end[ch] = sum;
  }
  long scatterWorks = 0, arTasks = 0, kept = 0;
  for (const struct chrCollTask* t = head; t; t = t->next) {
    if (t->func == ncclFuncSend || t->func == ncclFuncRecv || wantsEngineBcast(t, capturing)) continue;
    const int ar = wantsEngineAllReduce(t, capturing);
    arTasks += ar;
    kept += !ar && !capturing && t->func == ncclFuncAllReduce && ceArMin > 0 &&
            (uint64_t)t->count * (uint64_t)t->typeSize >= ceArMin;
    for (int c = 0; c < t->nChannels; c++) {
      struct chrWork want = ar ? ceArScatterWork(t, rank, c) : t->works[c];
      if (want.pattern == CHR_PAT_NONE || want.len == 0) continue;
      want.call = call;
      const int ch = t->chanBase + c;
      const struct chrWork* got = ch < CHR_DEV_MAX_CHANNELS && at[ch] < end[ch] ? &coll->works[at[ch]] : NULL;
      if (got == NULL || memcmp(got, &want, sizeof(want)) != 0) {
        fprintf(stderr, "FAIL %s: rank %d: channel %d of the collectives' launch: %s (pattern %d, call %d, [%llu, +%llu) "
                "of %llu, in 0x%llx, out 0x%llx), expected %s work (pattern %d, call %d, [%llu, +%llu) of %llu, in 0x%llx, "
                "out 0x%llx) of function %d%s\n", name, rank, ch, got ? "a work" : "no work", got ? got->pattern : -1,
                got ? got->call : -1, got ? (unsigned long long)got->start : 0ull, got ? (unsigned long long)got->len : 0ull,
                got ? (unsigned long long)got->count : 0ull, got ? (unsigned long long)got->sendbuff : 0ull,
                got ? (unsigned long long)got->recvbuff : 0ull, ar ? "an engine all-reduce's reduce-scatter" : "the planned",
                want.pattern, want.call, (unsigned long long)want.start, (unsigned long long)want.len,
                (unsigned long long)want.count, (unsigned long long)want.sendbuff, (unsigned long long)want.recvbuff,
                (int)t->func, capturing ? " (capturing)" : "");
        return 1;
      }
      at[ch]++;
      scatterWorks += ar;
    }
    call++;
  }
  for (int ch = 0; ch < coll->nChannels; ch++)
    if (at[ch] != end[ch] || coll->nCut[ch] != coll->nWorks[ch]) {
      fprintf(stderr, "FAIL %s: rank %d: channel %d of the collectives' launch holds %d works past the %d expected, %d of "
              "%d cut by call%s\n", name, rank, ch, end[ch] - at[ch], at[ch] - (end[ch] - coll->nWorks[ch]), coll->nCut[ch],
              coll->nWorks[ch], capturing ? " (capturing)" : "");
      return 1;
    }
  if (coll->nCopies != 0 || coll->nCeSends != 0) {
    fprintf(stderr, "FAIL %s: rank %d: the collectives' launch holds %d copy-engine copies and %d transfers%s\n", name,
            rank, coll->nCopies, coll->nCeSends, capturing ? " (capturing)" : "");
    return 1;
  }
  ceMixedPlans += mixed;
  ceArScatterWorks += scatterWorks;
  ceArTasks += arTasks;
  ceArKept += kept;
  return 0;
}

/* Transfer classes across groups (CHORUS_GPU_CE_MIN_BYTES, and the broadcasts' floor, of 1 MiB or
 * less, 2 ranks). NCCL orders a
 * rank's collectives among themselves and its point-to-point calls among themselves, not the two
 * together: rank 0 runs group A {send 1 MiB to 1} then group B {broadcast 1 MiB from 0}, rank 1 one
 * group {broadcast from 0, receive 1 MiB from 0}. The device library numbers each rank's engine
 * transfers over the comm's life (per peer, direction and class), so each rank's launches run
 * through the simulation as one plan, works after works (all on channel 0: every transfer is on the
 * engine). With the broadcast's transfer in class 1 the send meets the receive and the broadcast its
 * own; in one class with the send (every conn forced to 0 here, as a planner that forgot the class
 * would make them), rank 1's broadcast output gets the send's bytes, and the check must see it. */
static int ceScenarioRun(ncclComm_t* comms, const struct chrWork* const* works, const int* nWorks, char** bufs,
                         const struct chrSimRegion* regions, int oneClass, char* what, size_t whatLen) {
  enum { MIB = 1 << 20 };
  memset(bufs[0], 0x11, MIB); /* rank 0: the send's input */
  memset(bufs[1], 0x22, MIB); /* rank 0: the broadcast's input */
  memset(bufs[2], NC_POISON, MIB); /* rank 0: the broadcast's output */
  memset(bufs[3], NC_POISON, MIB); /* rank 1: the broadcast's output */
  memset(bufs[4], NC_POISON, MIB); /* rank 1: the receive's output */
  struct chrWork* copy[2] = {NULL, NULL};
  struct chrSimRank ranks[2];
  int ok = 1;
  for (int r = 0; r < 2; r++) {
    copy[r] = malloc(sizeof(struct chrWork) * (size_t)(nWorks[r] ? nWorks[r] : 1));
    if (copy[r] == NULL) ok = 0;
    else memcpy(copy[r], works[r], sizeof(struct chrWork) * (size_t)nWorks[r]);
    for (int i = 0; copy[r] && oneClass && i < nWorks[r]; i++)
      if (chrWorkIsEngineTransfer(&copy[r][i])) copy[r][i].links[0].conn = CHR_WORK_CLASS_P2P;
    ranks[r] = (struct chrSimRank){copy[r], &nWorks[r], 1, NULL};
  }
  char err[512] = "";
  int res = -1;
  if (ok) res = chrSimRun(2, comms[0]->ringOrder, ranks, regions, 5, err, sizeof(err));
  free(copy[0]);
  free(copy[1]);
  if (!ok) {
    snprintf(what, whatLen, "out of memory");
    return -1;
  }
  if (res != 0) {
    snprintf(what, whatLen, "simulation: %s", err);
    return 1;
  }
  static const struct { int buf; unsigned char want; const char* name; } outs[3] = {
      {2, 0x22, "rank 0's broadcast output"}, {3, 0x22, "rank 1's broadcast output"}, {4, 0x11, "rank 1's receive output"}};
  for (int o = 0; o < 3; o++)
    for (size_t i = 0; i < MIB; i++)
      if ((unsigned char)bufs[outs[o].buf][i] != outs[o].want) {
        snprintf(what, whatLen, "%s holds 0x%02x at byte %zu, expected 0x%02x (the %s's bytes)", outs[o].name,
                 (unsigned char)bufs[outs[o].buf][i], i, outs[o].want, outs[o].want == 0x22 ? "broadcast" : "send");
        return 1;
      }
  return 0;
}

static int checkClassScenario(ncclComm_t* comms) {
  enum { MIB = 1 << 20 };
  char* bufs[5];
  struct chrSimRegion regions[5];
  for (int i = 0; i < 5; i++) {
    bufs[i] = malloc(MIB);
    if (bufs[i] == NULL) return 1;
    regions[i] = (struct chrSimRegion){(uint64_t)(uintptr_t)bufs[i], bufs[i], MIB};
  }
  const size_t count = MIB / 4; /* float32 */
  struct chrCollTask a0, b0, b1, r1;
  struct chrCollTask* all[4] = {&a0, &b0, &b1, &r1};
  const struct {
    ncclComm_t comm;
    ncclFunc_t func;
    const void* send;
    void* recv;
    int root;
  } spec[4] = {{comms[0], ncclFuncSend, bufs[0], NULL, 1},       /* rank 0, group A */
               {comms[0], ncclFuncBroadcast, bufs[1], bufs[2], 0}, /* rank 0, group B */
               {comms[1], ncclFuncBroadcast, bufs[3], bufs[3], 0}, /* rank 1, group A': broadcast, then */
               {comms[1], ncclFuncRecv, NULL, bufs[4], 0}};        /* the receive */
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    struct chrCollTask* t = all[i];
    memset(t, 0, sizeof(*t));
    t->comm = spec[i].comm;
    t->func = spec[i].func;
    t->sendbuff = spec[i].send;
    t->recvbuff = spec[i].recv;
    t->count = count;
    t->type = ncclFloat32;
    t->typeSize = 4;
    t->userOp = ncclSum;
    t->root = spec[i].root;
    t->onDevice = 1;
    if (!bad && chrPlanTask(t) != ncclSuccess) {
      fprintf(stderr, "FAIL ce classes: planning: %s\n", ncclGetLastError(NULL));
      bad = 1;
    }
  }
  b1.next = &r1;
  struct chrCollTask* groups[3] = {&a0, &b0, &b1}; /* rank 0: A, B; rank 1: A' */
  struct chrDevLaunchPlan plans[3];
  int built = 0;
  for (int g = 0; g < 3 && !bad; g++, built++)
    if (chrDevBuildLaunch(groups[g]->comm, groups[g], 0, &plans[g]) != ncclSuccess) {
      fprintf(stderr, "FAIL ce classes: launch of group %d: %s\n", g, ncclGetLastError(NULL));
      bad = 1;
    }
  /* Every work on the engine, in the point-to-point launch's copies and ceSends; no kernel work. */
  for (int g = 0; g < built && !bad; g++) {
    const int rank = groups[g]->comm->rank;
    int bcastCopies = 0;
    if (apiEngineCheckPlan("ce classes", rank, groups[g], &plans[g], 0, &bcastCopies)) bad = 1;
    else if (plans[g].coll.nChannels != 0 || plans[g].p2p.nChannels != 0 || plans[g].p2p.nCopies != bcastCopies) {
      fprintf(stderr, "FAIL ce classes: group %d of rank %d: %d collective channels, %d point-to-point channels, %d "
              "copies, %d of them broadcasts' (every work on the engine expected)\n", g, rank, plans[g].coll.nChannels,
              plans[g].p2p.nChannels, plans[g].p2p.nCopies, bcastCopies);
      bad = 1;
    }
  }
  struct chrWork *rank0 = NULL, *flat[3] = {NULL, NULL, NULL};
  int flatWorks[3][CHR_DEV_MAX_CHANNELS];
  for (int g = 0; g < built && !bad; g++)
    if (chrSimFlattenLaunch(&plans[g].p2p, &flat[g], flatWorks[g]) < 0) bad = 1;
  if (!bad) {
    const int n0 = flatWorks[0][0] + flatWorks[1][0];
    rank0 = malloc(sizeof(struct chrWork) * (size_t)(n0 ? n0 : 1));
    if (rank0 == NULL) bad = 1;
    else {
      memcpy(rank0, flat[0], sizeof(struct chrWork) * (size_t)flatWorks[0][0]);
      memcpy(rank0 + flatWorks[0][0], flat[1], sizeof(struct chrWork) * (size_t)flatWorks[1][0]);
      const struct chrWork* works[2] = {rank0, flat[2]};
      const int nWorks[2] = {n0, flatWorks[2][0]};
      char what[512];
      if (ceScenarioRun(comms, works, nWorks, bufs, regions, 0, what, sizeof(what)) != 0) {
        fprintf(stderr, "FAIL ce classes: rank 0 {send to 1}, {broadcast from 0}; rank 1 {broadcast from 0, receive from "
                "0}: %s\n", what);
        bad = 1;
      } else if (ceScenarioRun(comms, works, nWorks, bufs, regions, 1, what, sizeof(what)) != 1) {
        fprintf(stderr, "FAIL ce classes: with the broadcast's transfers in the send's class, the scenario still passed "
                "(the check cannot see a broadcast paired with a send)\n");
        bad = 1;
      } else {
        ceClassScenarios++;
      }
    }
  }
  free(rank0);
  for (int g = 0; g < 3; g++) free(flat[g]);
  for (int g = 0; g < built; g++) chrDevFreeLaunch(&plans[g]);
  for (int i = 0; i < 4; i++) free(all[i]->works);
  for (int i = 0; i < 5; i++) free(bufs[i]);
  return bad;
}

/* More all-reduces for CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES: the public-API cases hold few SIMPLE
 * all-reduces of an even count (none in place, no average), so every op in and out of place in
 * several types at 3/4 Mi + 2 elements (SIMPLE on 2 ranks: 768 KiB and more; halves that do not
 * start on a 64-byte boundary), and groups that mix them with a broadcast (class 1 with them when
 * CHORUS_GPU_CE_MIN_BYTES is set too), a reduce-scatter, an odd all-reduce that keeps its works and
 * a send ring, on one stream and on two. *count cases, in static storage. */
static const struct ncCase* ceArCases(int n, int* count) {
  enum { MAX_CE_AR_CASES = 96 };
  static struct ncCase cases[MAX_CE_AR_CASES];
  const size_t MB = 1u << 20, big = 3 * MB / 4 + 2;
  static const int types[] = {ncclFloat32, ncclBfloat16, ncclFloat16, ncclInt32, ncclUint8, ncclFloat8e4m3};
  int k = 0;
  struct ncOp ops[NC_MAX_OPS];
  for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++)
    for (int o = 0; o < OP_COUNT; o++)
      for (int ip = 0; ip < 2 && k < MAX_CE_AR_CASES; ip++) {
        memset(ops, 0, sizeof(ops));
        ops[0] = (struct ncOp){.func = F_ALLREDUCE, .type = types[ti], .op = o, .inPlace = ip, .count = big,
                               .seed = 0xce000ull + (uint64_t)k * 131};
        ncMakeCase(&cases[k++], ops, 1, n);
      }
  for (int streams = 1; streams <= 2 && k < MAX_CE_AR_CASES; streams++) {
    memset(ops, 0, sizeof(ops));
    ops[0] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_SUM, .inPlace = 1, .count = big};
    ops[1] = (struct ncOp){.func = F_BROADCAST, .type = ncclFloat32, .root = n - 1, .count = MB / 4};
    ops[2] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclBfloat16, .op = OP_AVG, .count = big};
    ops[3] = (struct ncOp){.func = F_REDUCESCATTER, .type = ncclInt32, .op = OP_MAX, .count = MB / 8};
    ops[4] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_PREMUL_HOST, .inPlace = 1, .count = big + 1};
    ops[5] = (struct ncOp){.func = F_RING, .type = ncclInt32, .count = MB / 4};
    ops[6] = (struct ncOp){.func = F_ALLREDUCE, .type = ncclFloat32, .op = OP_MIN, .count = big};
    for (int i = 0; i < 7; i++) {
      ops[i].stream = streams == 2 ? i % 2 : 0;
      ops[i].seed = 0xce100ull + (uint64_t)k * 131 + (uint64_t)i;
    }
    ncMakeCase(&cases[k++], ops, 7, n);
  }
  *count = k;
  return cases;
}

const struct ncCase* apiEngineAllReduceCases(int n, int* count) {
  *count = 0;
  return ceArLow() ? ceArCases(n, count) : NULL;
}

int apiEngineClassScenario(ncclComm_t* comms, int n) {
  return n == 2 && ceMin > 0 && ceMin <= (1u << 20) && ceBcastMin <= (1u << 20) ? checkClassScenario(comms) : 0;
}

int apiEngineVerdict(int n) {
  int failures = 0;
  /* CHORUS_GPU_CE_MIN_BYTES: the cases hold sends to other ranks of up to MBs, so some must have gone
   * to the copy engine, every send with its receive, and plans made as under capture were checked
   * (none had any); above one byte (gpu.apiplan.cesend.mixed.*), some group must have sent to one
   * peer both through the engine and through the lanes (a small all-to-all and a large ring in one
   * group). */
  if (ceMin > 0 && n > 1 && (ceSendWorks == 0 || ceSendWorks != ceRecvWorks || ceCapturedPlans == 0)) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu, but %ld engine sends and %ld engine receives were planned (%ld "
            "plans checked as captured)\n", (unsigned long long)ceMin, ceSendWorks, ceRecvWorks, ceCapturedPlans);
    failures++;
  }
  /* ... and on 2 ranks, with the broadcasts' floor (CHORUS_GPU_CE_BCAST_MIN_BYTES, else
   * CHORUS_GPU_CE_MIN_BYTES) at 1 MiB or less, the broadcasts too (the cases hold broadcasts of up
   * to MBs, in and out of place), each send with its receive; on more ranks none (the plans were
   * checked against the floor either way). With both floors at 1 MiB or less, the scenario of sends
   * and broadcasts interleaved differently across groups ran (checkClassScenario). */
  if (ceBcastMin > 0 && ceBcastMin <= (1u << 20) && n == 2 &&
      (ceBcastSends == 0 || ceBcastSends != ceBcastRecvs || ceBcastCopies == 0)) {
    fprintf(stderr, "FAIL: broadcasts on the engine from %llu bytes on 2 ranks, but %ld broadcast engine sends, %ld "
            "broadcast engine receives and %ld root copies were planned\n", (unsigned long long)ceBcastMin, ceBcastSends,
            ceBcastRecvs, ceBcastCopies);
    failures++;
  }
  if (n != 2 && ceBcastSends + ceBcastRecvs + ceBcastCopies != 0) {
    fprintf(stderr, "FAIL: %ld broadcast engine works planned on %d ranks (2 only)\n",
            ceBcastSends + ceBcastRecvs + ceBcastCopies, n);
    failures++;
  }
  if (ceMin > 0 && ceMin <= (1u << 20) && ceBcastMin <= (1u << 20) && n == 2 && ceClassScenarios != 1) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu on 2 ranks, but the transfer-class scenario did not pass\n",
            (unsigned long long)ceMin);
    failures++;
  }
  if (ceMin > 1 && n > 1 && ceMixedPlans == 0) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_MIN_BYTES=%llu, but no plan had an engine work and a lane transfer to one peer\n",
            (unsigned long long)ceMin);
    failures++;
  }
  /* CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES at 1 MiB or less on 2 ranks: the cases hold SIMPLE all-reduces
   * of MBs, so some must have become a reduce-scatter and an engine all-gather (each send with its
   * receive, checked as captured too); on more ranks none, whatever the floor. */
  if (ceArLow() && n == 2 &&
      (ceArTasks == 0 || ceArScatterWorks == 0 || ceArSends != ceArTasks || ceArRecvs != ceArTasks || ceCapturedPlans == 0)) {
    fprintf(stderr, "FAIL: CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES=%llu on 2 ranks, but %ld all-reduces were planned on the "
            "engine (%ld reduce-scatter works, %ld engine sends, %ld engine receives; %ld plans checked as captured)\n",
            (unsigned long long)ceArMin, ceArTasks, ceArScatterWorks, ceArSends, ceArRecvs, ceCapturedPlans);
    failures++;
  }
  if (n != 2 && ceArTasks + ceArScatterWorks + ceArSends + ceArRecvs != 0) {
    fprintf(stderr, "FAIL: %ld engine all-reduces planned on %d ranks (2 only)\n", ceArTasks, n);
    failures++;
  }
  return failures;
}

const char* apiEngineSummary(void) {
  static char line[512];
  snprintf(line, sizeof line, "%ld engine sends and %ld engine receives, %ld plans with both an engine work and a lane "
           "transfer to one peer, engine broadcasts: %ld sends, %ld receives, %ld root copies, %ld transfer-class "
           "scenarios; engine all-reduces: %ld (%ld reduce-scatter works, %ld sends, %ld receives), %ld all-reduces of "
           "that size kept", ceSendWorks, ceRecvWorks, ceMixedPlans, ceBcastSends, ceBcastRecvs, ceBcastCopies,
           ceClassScenarios, ceArTasks, ceArScatterWorks, ceArSends, ceArRecvs, ceArKept);
  return line;
}
