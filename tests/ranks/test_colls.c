/*
 * test_colls: correctness of the collectives (other than all-reduce, see test_allreduce.c) and of
 * send/recv on host buffers, N ranks as N processes (tools/launch.c), public API only.
 *
 *   test_colls <coll> <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]
 *   coll: broadcast reduce allgather reducescatter gather scatter alltoall sendrecv
 *
 * The transport follows from --hosts (1: shm; nranks: net; in between: mixed) and from the
 * environment (CHORUS_TRANSPORT, NCCL_ALGO, ...), which the test takes as it is.
 *
 * Sizes: 0, 1, 1031 elements and --medium bytes (for the collectives whose buffers hold one block per
 * rank, the whole buffer is --medium bytes), each for every datatype (and every op for reduce and
 * reduce-scatter), in place and out of place with NCCL's in-place layouts, and for every root of the
 * rooted collectives; plus one --big float case per collective.
 * Data (colls_data.c): random bit patterns for the copying collectives, which must arrive bit for bit;
 * test_allreduce.c's exact-integer design for the reducing ones, so results compare bit for bit
 * (avg on floats within a stated bound). Every buffer has GUARD sentinel elements before and after it
 * that must stay untouched; send buffers must be unchanged; buffers a rank does not own in a rooted
 * collective (reduce/gather recvbuff off the root, broadcast/scatter sendbuff off the root) must be
 * untouched.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colls_data.h"
#include "launch.h"
#include "numeric.h"

#define GUARD 16          /* sentinel elements before and after every buffer */
#define SENTINEL 0x5Au    /* fill byte of outputs and guards */
#define MAX_REPORTS 5     /* mismatches printed per case */
#define NUM_SIZES 4       /* 0, 1, 1031, medium */

typedef struct {
  const char* coll;
  int nhosts;
  size_t medium, big;
  int timeoutSec;
} testArgs;

typedef struct {
  int rank, nranks;
  ncclComm_t comm;
  const testArgs* a;
  int failures;    /* cases with a wrong result */
  int reports;     /* mismatches printed for the current case */
  char desc[192];  /* the current case, for messages */
} rankState;

/* --- buffers with guards ------------------------------------------------------------------------ */

typedef struct {
  unsigned char* alloc;  /* GUARD + elems + GUARD elements, all SENTINEL at first */
  unsigned char* p;      /* the first of the elems */
  unsigned char* snap;   /* a copy of alloc, taken by snapshot() */
  size_t elems, ts, bytes;
} gbuf;

static int gbufInit(gbuf* b, size_t elems, size_t ts) {
  b->elems = elems;
  b->ts = ts;
  b->bytes = (elems + 2 * GUARD) * ts;
  b->alloc = malloc(b->bytes);
  b->snap = NULL;
  if (!b->alloc) {
    fprintf(stderr, "out of memory for %zu bytes\n", b->bytes);
    return 1;
  }
  memset(b->alloc, SENTINEL, b->bytes);
  b->p = b->alloc + GUARD * ts;
  return 0;
}

static void gbufFree(gbuf* b) {
  free(b->alloc);
  free(b->snap);
  b->alloc = b->snap = NULL;
}

static unsigned char* at(const gbuf* b, size_t elem) { return b->p + elem * b->ts; }

static int snapshot(gbuf* b) {
  if (!b->snap) b->snap = malloc(b->bytes);
  if (!b->snap) return 1;
  memcpy(b->snap, b->alloc, b->bytes);
  return 0;
}

/* --- checks: each returns the number of problems found and prints the first few ------------------ */

static void setCase(rankState* st, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->desc, sizeof(st->desc), fmt, ap);
  va_end(ap);
  st->reports = 0;
}

static void report(rankState* st, const char* what, long long i, uint64_t got, uint64_t want) {
  if (st->reports++ >= MAX_REPORTS) return;
  fprintf(stderr, "rank %d/%d: %s: %s element %lld: got 0x%llx, expected 0x%llx\n", st->rank, st->nranks, st->desc,
          what, i, (unsigned long long)got, (unsigned long long)want);
}

static int checkGuards(rankState* st, const char* what, const gbuf* b) {
  size_t g = GUARD * b->ts, tail = g + b->elems * b->ts;
  for (size_t i = 0; i < g; i++)
    if (b->alloc[i] != SENTINEL || b->alloc[tail + i] != SENTINEL) {
      char w[96];
      snprintf(w, sizeof(w), "%s guard (%s the buffer) byte", what, b->alloc[i] != SENTINEL ? "before" : "after");
      report(st, w, (long long)i, b->alloc[i] != SENTINEL ? b->alloc[i] : b->alloc[tail + i], SENTINEL);
      return 1;
    }
  return 0;
}

/* The whole buffer, guards included, is what snapshot() saw. */
static int checkUnchanged(rankState* st, const char* what, const gbuf* b) {
  if (memcmp(b->alloc, b->snap, b->bytes) == 0) return 0;
  int ts = (int)b->ts;
  for (size_t i = 0; i < b->bytes / b->ts; i++) {
    uint64_t got = chrNumLoad(b->alloc, i, ts), want = chrNumLoad(b->snap, i, ts);
    if (got != want) report(st, what, (long long)i - GUARD, got, want);
  }
  return 1;
}

/* n elements at `out` hold chrTestCopyBits(seed, srcRank, srcOff + i). */
static int checkCopy(rankState* st, const char* what, const unsigned char* out, size_t n, int ts, uint64_t seed,
                     int srcRank, size_t srcOff) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = chrNumLoad(out, i, ts), want = chrTestCopyBits(ts, seed, srcRank, srcOff + i);
    if (got != want) {
      report(st, what, (long long)i, got, want);
      bad = 1;
    }
  }
  return bad;
}

/* n elements at `out` hold the reference elements refOff.. of a reducing case. */
static int checkReduced(rankState* st, const char* what, const chrTestCase* c, const chrTestRef* ref, size_t refOff,
                        const unsigned char* out, size_t n) {
  const size_t ts = (size_t)c->t->size;
  int avgFloat = c->t->isFloat && c->op == CHR_TOP_AVG;
  if (!avgFloat && memcmp(out, (const unsigned char*)ref->expect + refOff * ts, n * ts) == 0) return 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = chrNumLoad(out, i, (int)ts);
    if (!chrTestRefMatches(c, ref, refOff + i, got)) {
      uint64_t want = avgFloat ? chrNumEncode(c->type, ref->exact[refOff + i]) : chrNumLoad(ref->expect, refOff + i, (int)ts);
      report(st, what, (long long)i, got, want);
      bad = 1;
    }
  }
  return bad;
}

static int ncclFailed(rankState* st, const char* call, ncclResult_t res) {
  const char* last = ncclGetLastError(st->comm);
  fprintf(stderr, "rank %d/%d: %s: %s failed: %s: %s\n", st->rank, st->nranks, st->desc, call,
          ncclGetErrorString(res), last ? last : "");
  return 1;
}

/* An NCCL error ends the rank (the comm is aborted and buffers are left to the exit); wrong results
 * are counted and the ranks carry on, so that they stay in step. */
#define NCCL_OK(call)                                           \
  do {                                                          \
    ncclResult_t res_ = (call);                                 \
    if (res_ != ncclSuccess) return ncclFailed(st, #call, res_); \
  } while (0)
#define ALLOC_OK(expr) \
  do {                 \
    if (expr) return 1; \
  } while (0)

static void endCase(rankState* st, int bad) {
  if (bad) st->failures++;
}

/* --- sizes and seeds ---------------------------------------------------------------------------- */

/* Element count of size index s: the whole buffer is about --medium bytes, split in `blocks` blocks
 * for the collectives that hold one block per rank. */
static size_t countOf(const testArgs* a, int s, size_t ts, int blocks) {
  static const size_t fixed[3] = {0, 1, 1031};
  return s < 3 ? fixed[s] : a->medium / ts / (size_t)blocks;
}

static uint64_t seedOf(int coll, int s, int type, int op) {
  return chrTestMix64(((uint64_t)coll << 48) ^ ((uint64_t)s << 32) ^ ((uint64_t)type << 16) ^ (uint64_t)op);
}

static const char* const modeNames[3] = {"out-of-place", "in-place", "ncclBcast"};
enum { OOP, INPLACE, BCAST };

/* --- reducing collectives: cases and references, computed before the ranks are forked ------------ */

/* The reference of a case is the same on every rank, so the launching process (which has not touched
 * the library yet) computes it once and the forked ranks share it copy-on-write. */
typedef struct {
  chrTestCase c;
  chrTestRef ref;
  size_t count;  /* the count argument of the call: reduce count, reduce-scatter recvcount */
  int isBig;
} plannedCase;

static plannedCase* plan;
static int nplanned;

static int planAdd(ncclDataType_t type, chrTestOp op, size_t count, size_t total, int nranks, uint64_t seed, int big) {
  plannedCase* p = &plan[nplanned++];
  p->count = count;
  p->isBig = big;
  if (chrTestCaseInit(&p->c, type, op, total, nranks, seed)) return 1;
  return chrTestRefCompute(&p->c, &p->ref);
}

/* reduce-scatter reduces nranks * recvcount elements; reduce, count elements. */
static int planReductions(const testArgs* a, int nranks, int scatter) {
  plan = calloc(NUM_SIZES * ncclNumTypes * CHR_TOP_COUNT + 1, sizeof(plannedCase));
  if (!plan) return 1;
  int blocks = scatter ? nranks : 1;
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++)
      for (int op = 0; op < CHR_TOP_COUNT; op++) {
        size_t count = countOf(a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, blocks);
        if (planAdd((ncclDataType_t)type, (chrTestOp)op, count, count * (size_t)blocks, nranks,
                    seedOf(scatter, s, type, op), 0))
          return 1;
      }
  if (a->big > 0) {
    size_t count = a->big / 4 / (size_t)blocks;
    if (planAdd(ncclFloat32, CHR_TOP_SUM, count, count * (size_t)blocks, nranks, seedOf(scatter, 9, 0, 0), 1)) return 1;
  }
  return 0;
}

static void freePlan(void) {
  for (int i = 0; i < nplanned; i++) {
    chrTestCaseFree(&plan[i].c);
    chrTestRefFree(&plan[i].ref);
  }
  free(plan);
}

/* Creates the op of a case. The "device" scalar is set after creation (it must be read when the
 * collective runs); the host-immediate one is overwritten after creation (it must have been copied). */
static ncclResult_t createOp(rankState* st, const chrTestCase* c, uint64_t* scalar, ncclRedOp_t* op) {
  static const ncclRedOp_t builtin[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  if (!chrTestIsPremul(c->op)) {
    *op = builtin[c->op];
    return ncclSuccess;
  }
  uint64_t want = chrNumEncodeInt(c->type, chrTestScalarOf(c, st->rank));
  uint64_t decoy = chrNumEncodeInt(c->type, 5);
  int imm = c->op == CHR_TOP_PREMUL_IMM;
  *scalar = imm ? want : decoy;
  ncclResult_t res = ncclRedOpCreatePreMulSum(op, scalar, c->type, imm ? ncclScalarHostImmediate : ncclScalarDevice,
                                              st->comm);
  if (res != ncclSuccess) return res;
  *scalar = imm ? decoy : want;
  return ncclSuccess;
}

static void fillContribution(const chrTestCase* c, int rank, unsigned char* p) {
  for (size_t i = 0; i < c->count; i++) chrNumStore(p, i, c->t->size, chrTestGenBits(c, rank, i));
}

/* --- reduce ------------------------------------------------------------------------------------- */

/* contrib: this rank's data, generated once per case (generating it costs more than a small reduce). */
static int reduceOne(rankState* st, const plannedCase* pc, int root, int mode, ncclRedOp_t op,
                     const unsigned char* contrib) {
  const chrTestCase* c = &pc->c;
  const size_t n = pc->count, ts = (size_t)c->t->size;
  const int me = st->rank;
  int bad = 0;
  gbuf send, recv = {0};
  ALLOC_OK(gbufInit(&send, n, ts));
  if (n) memcpy(send.p, contrib, n * ts);
  setCase(st, "reduce %s %s count %zu root %d %s", c->t->name, chrTestOpNames[c->op], n, root, modeNames[mode]);
  if (mode == OOP) {
    ALLOC_OK(gbufInit(&recv, n, ts) || snapshot(&send) || snapshot(&recv));
    NCCL_OK(ncclReduce(send.p, recv.p, n, c->type, op, root, st->comm, NULL));
    bad += checkUnchanged(st, "sendbuff", &send);
    if (me == root) bad += checkReduced(st, "result", c, &pc->ref, 0, recv.p, n) + checkGuards(st, "recvbuff", &recv);
    else bad += checkUnchanged(st, "non-root recvbuff", &recv);
  } else {
    ALLOC_OK(snapshot(&send));
    NCCL_OK(ncclReduce(send.p, send.p, n, c->type, op, root, st->comm, NULL));
    if (me == root) bad += checkReduced(st, "result", c, &pc->ref, 0, send.p, n) + checkGuards(st, "buffer", &send);
    else bad += checkUnchanged(st, "non-root buffer", &send);
  }
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

/* Every root for the small sizes; for the medium size one root per case, rotating with the type and
 * op so that every root still sees medium-sized cases (every root x every medium case would not fit
 * in the time budget of 8 ranks on 2 cores shared with other tests). */
static int rootsFor(int s, int type, int op, int nranks, int* roots) {
  if (s < 3) {
    for (int r = 0; r < nranks; r++) roots[r] = r;
    return nranks;
  }
  roots[0] = (type * CHR_TOP_COUNT + op) % nranks;
  return 1;
}

static int runReduce(rankState* st) {
  for (int i = 0; i < nplanned; i++) {
    const plannedCase* pc = &plan[i];
    int roots[64], nroots;
    if (pc->isBig) {
      roots[0] = st->nranks - 1;
      nroots = 1;
    } else {
      nroots = rootsFor(pc->count > 1031 ? 3 : 0, pc->c.type, pc->c.op, st->nranks, roots);
    }
    uint64_t scalar = 0;
    ncclRedOp_t op;
    setCase(st, "reduce %s %s: creating the op", pc->c.t->name, chrTestOpNames[pc->c.op]);
    NCCL_OK(createOp(st, &pc->c, &scalar, &op));
    unsigned char* contrib = malloc(pc->count * (size_t)pc->c.t->size + 1);
    ALLOC_OK(contrib == NULL);
    fillContribution(&pc->c, st->rank, contrib);
    for (int r = 0; r < nroots; r++)
      for (int mode = OOP; mode <= (pc->isBig ? OOP : INPLACE); mode++)
        if (reduceOne(st, pc, roots[r], mode, op, contrib)) return 1;
    free(contrib);
    if (chrTestIsPremul(pc->c.op)) NCCL_OK(ncclRedOpDestroy(op, st->comm));
  }
  return 0;
}

/* --- reduce-scatter ----------------------------------------------------------------------------- */

static int runReduceScatter(rankState* st) {
  const int me = st->rank, nr = st->nranks;
  for (int i = 0; i < nplanned; i++) {
    const plannedCase* pc = &plan[i];
    const chrTestCase* c = &pc->c;
    const size_t n = pc->count, ts = (size_t)c->t->size;
    uint64_t scalar = 0;
    ncclRedOp_t op;
    setCase(st, "reducescatter %s %s: creating the op", c->t->name, chrTestOpNames[c->op]);
    NCCL_OK(createOp(st, c, &scalar, &op));
    for (int mode = OOP; mode <= (pc->isBig ? OOP : INPLACE); mode++) {
      int bad = 0;
      gbuf send, recv = {0};
      ALLOC_OK(gbufInit(&send, n * (size_t)nr, ts));
      fillContribution(c, me, send.p);
      setCase(st, "reducescatter %s %s recvcount %zu %s", c->t->name, chrTestOpNames[c->op], n, modeNames[mode]);
      if (mode == OOP) {
        ALLOC_OK(gbufInit(&recv, n, ts) || snapshot(&send));
        NCCL_OK(ncclReduceScatter(send.p, recv.p, n, c->type, op, st->comm, NULL));
        bad += checkUnchanged(st, "sendbuff", &send);
        bad += checkReduced(st, "result", c, &pc->ref, (size_t)me * n, recv.p, n) + checkGuards(st, "recvbuff", &recv);
      } else {
        /* recvbuff = sendbuff + rank * recvcount; the other blocks of sendbuff are not checked (NCCL
         * makes no promise about them in place). */
        NCCL_OK(ncclReduceScatter(send.p, at(&send, (size_t)me * n), n, c->type, op, st->comm, NULL));
        bad += checkReduced(st, "result", c, &pc->ref, (size_t)me * n, at(&send, (size_t)me * n), n);
        bad += checkGuards(st, "buffer", &send);
      }
      endCase(st, bad);
      gbufFree(&send);
      gbufFree(&recv);
    }
    if (chrTestIsPremul(c->op)) NCCL_OK(ncclRedOpDestroy(op, st->comm));
  }
  return 0;
}

/* --- broadcast ---------------------------------------------------------------------------------- */

static int broadcastOne(rankState* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  int bad = 0;
  gbuf send, recv = {0};
  setCase(st, "broadcast %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  ALLOC_OK(gbufInit(&send, n, ts));
  if (st->rank == root) chrTestFillCopy(send.p, n, (int)ts, seed, root, 0);
  if (mode == OOP) {
    /* Off the root, sendbuff is not used: it must stay untouched. */
    ALLOC_OK(gbufInit(&recv, n, ts) || snapshot(&send));
    NCCL_OK(ncclBroadcast(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += checkUnchanged(st, st->rank == root ? "sendbuff" : "non-root sendbuff", &send);
    bad += checkCopy(st, "result", recv.p, n, (int)ts, seed, root, 0) + checkGuards(st, "recvbuff", &recv);
  } else {
    if (mode == INPLACE) NCCL_OK(ncclBroadcast(send.p, send.p, n, type, root, st->comm, NULL));
    else NCCL_OK(ncclBcast(send.p, n, type, root, st->comm, NULL));
    bad += checkCopy(st, "result", send.p, n, (int)ts, seed, root, 0) + checkGuards(st, "buffer", &send);
  }
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

static int runBroadcast(rankState* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = countOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, 1);
      int roots[64], nroots = rootsFor(s, type, 0, st->nranks, roots);
      for (int r = 0; r < nroots; r++)
        for (int mode = OOP; mode <= BCAST; mode++)
          if (broadcastOne(st, (ncclDataType_t)type, n, roots[r], mode, seedOf(2, s, type, roots[r]))) return 1;
    }
  if (st->a->big && broadcastOne(st, ncclFloat32, st->a->big / 4, st->nranks - 1, OOP, seedOf(2, 9, 0, 0))) return 1;
  return 0;
}

/* --- all-gather --------------------------------------------------------------------------------- */

static int allGatherOne(rankState* st, ncclDataType_t type, size_t n, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  gbuf send = {0}, recv;
  setCase(st, "allgather %s sendcount %zu %s", t->name, n, modeNames[mode]);
  ALLOC_OK(gbufInit(&recv, n * (size_t)nr, ts));
  if (mode == OOP) {
    ALLOC_OK(gbufInit(&send, n, ts));
    chrTestFillCopy(send.p, n, (int)ts, seed, me, 0);
    ALLOC_OK(snapshot(&send));
    NCCL_OK(ncclAllGather(send.p, recv.p, n, type, st->comm, NULL));
    bad += checkUnchanged(st, "sendbuff", &send);
  } else {
    /* sendbuff = recvbuff + rank * sendcount */
    chrTestFillCopy(at(&recv, (size_t)me * n), n, (int)ts, seed, me, 0);
    NCCL_OK(ncclAllGather(at(&recv, (size_t)me * n), recv.p, n, type, st->comm, NULL));
  }
  for (int r = 0; r < nr; r++) bad += checkCopy(st, "result", at(&recv, (size_t)r * n), n, (int)ts, seed, r, 0);
  bad += checkGuards(st, "recvbuff", &recv);
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

static int runAllGather(rankState* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = countOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      for (int mode = OOP; mode <= INPLACE; mode++)
        if (allGatherOne(st, (ncclDataType_t)type, n, mode, seedOf(3, s, type, mode))) return 1;
    }
  if (st->a->big && allGatherOne(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, INPLACE, seedOf(3, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- gather ------------------------------------------------------------------------------------- */

static int gatherOne(rankState* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  gbuf send = {0}, recv;
  setCase(st, "gather %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  ALLOC_OK(gbufInit(&recv, n * (size_t)nr, ts));
  if (mode == OOP) {
    /* Off the root, recvbuff is not used: it must stay untouched. */
    ALLOC_OK(gbufInit(&send, n, ts));
    chrTestFillCopy(send.p, n, (int)ts, seed, me, 0);
    ALLOC_OK(snapshot(&send) || snapshot(&recv));
    NCCL_OK(ncclGather(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += checkUnchanged(st, "sendbuff", &send);
  } else {
    /* sendbuff = recvbuff + rank * count (on the root: + root * count, NCCL's in-place condition);
     * off the root, the whole buffer must stay as it was. */
    chrTestFillCopy(at(&recv, (size_t)me * n), n, (int)ts, seed, me, 0);
    ALLOC_OK(snapshot(&recv));
    NCCL_OK(ncclGather(at(&recv, (size_t)me * n), recv.p, n, type, root, st->comm, NULL));
  }
  if (me == root) {
    for (int r = 0; r < nr; r++) bad += checkCopy(st, "result", at(&recv, (size_t)r * n), n, (int)ts, seed, r, 0);
    bad += checkGuards(st, "recvbuff", &recv);
  } else {
    bad += checkUnchanged(st, "non-root recvbuff", &recv);
  }
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

/* --- scatter ------------------------------------------------------------------------------------ */

static int scatterOne(rankState* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  gbuf send, recv = {0};
  setCase(st, "scatter %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  /* The root's blocks: block r is chrTestCopyBits(seed, root, r * n + i). */
  ALLOC_OK(gbufInit(&send, n * (size_t)nr, ts));
  if (me == root) chrTestFillCopy(send.p, n * (size_t)nr, (int)ts, seed, root, 0);
  if (mode == OOP) {
    /* Off the root, sendbuff is not used: it must stay untouched. */
    ALLOC_OK(gbufInit(&recv, n, ts) || snapshot(&send));
    NCCL_OK(ncclScatter(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += checkUnchanged(st, me == root ? "sendbuff" : "non-root sendbuff", &send);
    bad += checkCopy(st, "result", recv.p, n, (int)ts, seed, root, (size_t)me * n) + checkGuards(st, "recvbuff", &recv);
  } else {
    /* recvbuff = sendbuff + rank * count (on the root: + root * count, NCCL's in-place condition).
     * The root's buffer must come back as it was; elsewhere only the own block changes. */
    ALLOC_OK(snapshot(&send));
    NCCL_OK(ncclScatter(send.p, at(&send, (size_t)me * n), n, type, root, st->comm, NULL));
    if (me == root) {
      bad += checkUnchanged(st, "buffer", &send);
    } else {
      bad += checkCopy(st, "result", at(&send, (size_t)me * n), n, (int)ts, seed, root, (size_t)me * n);
      memcpy(at(&send, (size_t)me * n), send.snap + (GUARD + (size_t)me * n) * ts, n * ts); /* checked above */
      bad += checkUnchanged(st, "other blocks of the buffer", &send);
    }
  }
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

typedef int (*rootedFn)(rankState*, ncclDataType_t, size_t, int, int, uint64_t);

static int runRooted(rankState* st, rootedFn fn, int collId) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = countOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      int roots[64], nroots = rootsFor(s, type, 0, st->nranks, roots);
      for (int r = 0; r < nroots; r++)
        for (int mode = OOP; mode <= INPLACE; mode++)
          if (fn(st, (ncclDataType_t)type, n, roots[r], mode, seedOf(collId, s, type, roots[r]))) return 1;
    }
  if (st->a->big && fn(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, st->nranks / 2, OOP, seedOf(collId, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- all-to-all --------------------------------------------------------------------------------- */

/* Block j of rank r's sendbuff goes to rank j: element i of it is chrTestCopyBits(seed, r, j*n + i).
 * Out of place only: NCCL defines no in-place layout for all-to-all. */
static int allToAllOne(rankState* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  gbuf send, recv;
  setCase(st, "alltoall %s count %zu", t->name, n);
  ALLOC_OK(gbufInit(&send, n * (size_t)nr, ts) || gbufInit(&recv, n * (size_t)nr, ts));
  chrTestFillCopy(send.p, n * (size_t)nr, (int)ts, seed, me, 0);
  ALLOC_OK(snapshot(&send));
  NCCL_OK(ncclAlltoAll(send.p, recv.p, n, type, st->comm, NULL));
  bad += checkUnchanged(st, "sendbuff", &send);
  for (int r = 0; r < nr; r++) bad += checkCopy(st, "result", at(&recv, (size_t)r * n), n, (int)ts, seed, r, (size_t)me * n);
  bad += checkGuards(st, "recvbuff", &recv);
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

static int runAllToAll(rankState* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = countOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      if (allToAllOne(st, (ncclDataType_t)type, n, seedOf(7, s, type, 0))) return 1;
    }
  if (st->a->big && allToAllOne(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, seedOf(7, 9, 0, 0))) return 1;
  return 0;
}

/* --- send/recv ---------------------------------------------------------------------------------- */

/* A message from rank src to rank dst: element i is chrTestCopyBits(seed, src, dst * 2^32 + i), so
 * every (sender, receiver) pair carries its own data. Counts differ per pair (both ends compute them). */
static size_t msgOffset(int dst) { return (size_t)dst << 32; }
static size_t pairCount(size_t base, int src, int dst) { return base ? base + (size_t)((src * 5 + dst * 3) % 7) : 0; }

/* Each rank sends to rank+1 and receives from rank-1, in one group. */
static int ringShift(rankState* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr;
  int bad = 0;
  gbuf send, recv;
  setCase(st, "sendrecv ring shift %s count %zu", t->name, n);
  ALLOC_OK(gbufInit(&send, n, ts) || gbufInit(&recv, n, ts));
  chrTestFillCopy(send.p, n, (int)ts, seed, me, msgOffset(next));
  ALLOC_OK(snapshot(&send));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send.p, n, type, next, st->comm, NULL));
  NCCL_OK(ncclRecv(recv.p, n, type, prev, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad += checkUnchanged(st, "sendbuff", &send);
  bad += checkCopy(st, "received", recv.p, n, (int)ts, seed, prev, msgOffset(me)) + checkGuards(st, "recvbuff", &recv);
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

/* Every rank sends to and receives from every other rank (and itself with withSelf) in ONE group.
 * The receives are posted first, in descending peer order, then the sends: a library that ran the
 * operations one by one in call order would deadlock here. */
static int allPairs(rankState* st, ncclDataType_t type, size_t base, int withSelf, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  gbuf send[64], recv[64];
  memset(send, 0, sizeof(send));
  memset(recv, 0, sizeof(recv));
  setCase(st, "sendrecv all pairs%s %s base count %zu", withSelf ? " with self" : "", t->name, base);
  for (int p = 0; p < nr; p++) {
    if (p == me && !withSelf) continue;
    ALLOC_OK(gbufInit(&send[p], pairCount(base, me, p), ts) || gbufInit(&recv[p], pairCount(base, p, me), ts));
    chrTestFillCopy(send[p].p, send[p].elems, (int)ts, seed, me, msgOffset(p));
    ALLOC_OK(snapshot(&send[p]));
  }
  NCCL_OK(ncclGroupStart());
  for (int p = nr - 1; p >= 0; p--)
    if (p != me || withSelf) NCCL_OK(ncclRecv(recv[p].p, recv[p].elems, type, p, st->comm, NULL));
  for (int p = 0; p < nr; p++)
    if (p != me || withSelf) NCCL_OK(ncclSend(send[p].p, send[p].elems, type, p, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  for (int p = 0; p < nr; p++) {
    if (p == me && !withSelf) continue;
    char what[64];
    snprintf(what, sizeof(what), "from rank %d: received", p);
    bad += checkCopy(st, what, recv[p].p, recv[p].elems, (int)ts, seed, p, msgOffset(me));
    snprintf(what, sizeof(what), "from rank %d: recvbuff", p);
    bad += checkGuards(st, what, &recv[p]);
    snprintf(what, sizeof(what), "to rank %d: sendbuff", p);
    bad += checkUnchanged(st, what, &send[p]);
    gbufFree(&send[p]);
    gbufFree(&recv[p]);
  }
  endCase(st, bad);
  return 0;
}

/* A group whose only peer is this rank: the receive posted before the send. */
static int sendToSelf(rankState* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank;
  int bad = 0;
  gbuf send, recv;
  setCase(st, "sendrecv to self %s count %zu", t->name, n);
  ALLOC_OK(gbufInit(&send, n, ts) || gbufInit(&recv, n, ts));
  chrTestFillCopy(send.p, n, (int)ts, seed, me, msgOffset(me));
  ALLOC_OK(snapshot(&send));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclRecv(recv.p, n, type, me, st->comm, NULL));
  NCCL_OK(ncclSend(send.p, n, type, me, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad += checkUnchanged(st, "sendbuff", &send);
  bad += checkCopy(st, "received", recv.p, n, (int)ts, seed, me, msgOffset(me)) + checkGuards(st, "recvbuff", &recv);
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

/* Two messages to the same peer in one group arrive in the order they were posted. */
static int twoToSamePeer(rankState* st, uint64_t seed) {
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr;
  const size_t n1 = 100, n2 = 3001;
  int bad = 0;
  gbuf s1, s2, r1, r2;
  setCase(st, "sendrecv two messages to the same peer (float counts %zu, %zu)", n1, n2);
  ALLOC_OK(gbufInit(&s1, n1, 4) || gbufInit(&s2, n2, 4) || gbufInit(&r1, n1, 4) || gbufInit(&r2, n2, 4));
  chrTestFillCopy(s1.p, n1, 4, seed, me, 0);
  chrTestFillCopy(s2.p, n2, 4, seed, me, 1u << 20);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(s1.p, n1, ncclFloat32, next, st->comm, NULL));
  NCCL_OK(ncclRecv(r1.p, n1, ncclFloat32, prev, st->comm, NULL));
  NCCL_OK(ncclSend(s2.p, n2, ncclFloat32, next, st->comm, NULL));
  NCCL_OK(ncclRecv(r2.p, n2, ncclFloat32, prev, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad += checkCopy(st, "first message", r1.p, n1, 4, seed, prev, 0) + checkGuards(st, "first recvbuff", &r1);
  bad += checkCopy(st, "second message", r2.p, n2, 4, seed, prev, 1u << 20) + checkGuards(st, "second recvbuff", &r2);
  endCase(st, bad);
  gbufFree(&s1);
  gbufFree(&s2);
  gbufFree(&r1);
  gbufFree(&r2);
  return 0;
}

/* Outside any group: rank 0 sends then receives, the last rank receives then sends. */
static int pingPong(rankState* st, size_t n, uint64_t seed) {
  const int me = st->rank, last = st->nranks - 1;
  if (last == 0 || (me != 0 && me != last)) return 0;
  const int peer = me == 0 ? last : 0;
  int bad = 0;
  gbuf send, recv;
  setCase(st, "sendrecv ping-pong without a group, int64 count %zu", n);
  ALLOC_OK(gbufInit(&send, n, 8) || gbufInit(&recv, n, 8));
  chrTestFillCopy(send.p, n, 8, seed, me, 0);
  if (me == 0) {
    NCCL_OK(ncclSend(send.p, n, ncclInt64, peer, st->comm, NULL));
    NCCL_OK(ncclRecv(recv.p, n, ncclInt64, peer, st->comm, NULL));
  } else {
    NCCL_OK(ncclRecv(recv.p, n, ncclInt64, peer, st->comm, NULL));
    NCCL_OK(ncclSend(send.p, n, ncclInt64, peer, st->comm, NULL));
  }
  bad += checkCopy(st, "received", recv.p, n, 8, seed, peer, 0) + checkGuards(st, "recvbuff", &recv);
  endCase(st, bad);
  gbufFree(&send);
  gbufFree(&recv);
  return 0;
}

/* One group holding an all-reduce, a broadcast, an all-gather, a reduce and a send/recv ring shift
 * (p2p first or last), every result checked. */
static int mixedGroup(rankState* st, int p2pFirst, uint64_t seed) {
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr, broot = nr - 1;
  const size_t n = 1031, np2p = 4099;
  int bad = 0;
  gbuf ar, bs, br, ags, agr, rs, rr, ps, pr;
  setCase(st, "mixed group (p2p %s)", p2pFirst ? "first" : "last");
  ALLOC_OK(gbufInit(&ar, n, 4) || gbufInit(&bs, n, 4) || gbufInit(&br, n, 4) || gbufInit(&ags, n, 1) ||
           gbufInit(&agr, n * (size_t)nr, 1) || gbufInit(&rs, n, 8) || gbufInit(&rr, n, 8) || gbufInit(&ps, np2p, 8) ||
           gbufInit(&pr, np2p, 8));
  for (size_t i = 0; i < n; i++) {
    ((uint32_t*)ar.p)[i] = (uint32_t)i * (uint32_t)(me + 1);
    ((int64_t*)rs.p)[i] = (int64_t)i + me;
  }
  if (me == broot) chrTestFillCopy(bs.p, n, 4, seed, broot, 0);
  chrTestFillCopy(ags.p, n, 1, seed, me, 0);
  chrTestFillCopy(ps.p, np2p, 8, seed, me, msgOffset(next));
  ALLOC_OK(snapshot(&rr));
  NCCL_OK(ncclGroupStart());
  for (int pass = 0; pass < 2; pass++) {
    if (pass == (p2pFirst ? 0 : 1)) {
      NCCL_OK(ncclSend(ps.p, np2p, ncclFloat64, next, st->comm, NULL));
      NCCL_OK(ncclRecv(pr.p, np2p, ncclFloat64, prev, st->comm, NULL));
    } else {
      NCCL_OK(ncclAllReduce(ar.p, ar.p, n, ncclUint32, ncclSum, st->comm, NULL));
      NCCL_OK(ncclBroadcast(bs.p, br.p, n, ncclFloat32, broot, st->comm, NULL));
      NCCL_OK(ncclAllGather(ags.p, agr.p, n, ncclInt8, st->comm, NULL));
      NCCL_OK(ncclReduce(rs.p, rr.p, n, ncclInt64, ncclSum, 0, st->comm, NULL));
    }
  }
  NCCL_OK(ncclGroupEnd());
  const uint32_t tri = (uint32_t)(nr * (nr + 1) / 2);
  for (size_t i = 0; i < n; i++) {
    uint32_t got = ((uint32_t*)ar.p)[i];
    if (got != (uint32_t)i * tri) {
      report(st, "all-reduce (uint32 sum)", (long long)i, got, (uint32_t)i * tri);
      bad = 1;
    }
    int64_t want = (int64_t)nr * (int64_t)i + (int64_t)nr * (nr - 1) / 2;
    if (me == 0 && ((int64_t*)rr.p)[i] != want) {
      report(st, "reduce (int64 sum, root 0)", (long long)i, (uint64_t)((int64_t*)rr.p)[i], (uint64_t)want);
      bad = 1;
    }
  }
  if (me != 0) bad += checkUnchanged(st, "reduce: non-root recvbuff", &rr);
  bad += checkCopy(st, "broadcast (float, root n-1)", br.p, n, 4, seed, broot, 0);
  for (int r = 0; r < nr; r++) bad += checkCopy(st, "all-gather (int8)", agr.p + (size_t)r * n, n, 1, seed, r, 0);
  bad += checkCopy(st, "send/recv (float64)", pr.p, np2p, 8, seed, prev, msgOffset(me));
  bad += checkGuards(st, "all-reduce", &ar) + checkGuards(st, "broadcast", &br) + checkGuards(st, "all-gather", &agr) +
         checkGuards(st, "reduce", &rr) + checkGuards(st, "recv", &pr);
  endCase(st, bad);
  gbuf* all[] = {&ar, &bs, &br, &ags, &agr, &rs, &rr, &ps, &pr};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) gbufFree(all[i]);
  return 0;
}

static int runSendRecv(rankState* st) {
  const testArgs* a = st->a;
  const int nr = st->nranks;
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = countOf(a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, 1);
      if (ringShift(st, (ncclDataType_t)type, n, seedOf(8, s, type, 0))) return 1;
    }
  for (int type = 0; type < ncclNumTypes; type++)
    if (allPairs(st, (ncclDataType_t)type, 1031, 0, seedOf(8, 5, type, 0))) return 1;
  if (allPairs(st, ncclInt8, 0, 0, seedOf(8, 6, 0, 0)) || allPairs(st, ncclFloat32, a->medium / 4 / (size_t)nr, 0, seedOf(8, 6, 1, 0)) ||
      allPairs(st, ncclFloat64, 1031, 1, seedOf(8, 6, 2, 0)) ||
      allPairs(st, ncclFloat32, a->medium / 4 / (size_t)nr, 1, seedOf(8, 6, 3, 0)))
    return 1;
  if (sendToSelf(st, ncclInt32, 1031, seedOf(8, 7, 0, 0)) || sendToSelf(st, ncclUint8, a->medium, seedOf(8, 7, 6, 0)))
    return 1;
  if (twoToSamePeer(st, seedOf(8, 7, 1, 0)) || pingPong(st, 1031, seedOf(8, 7, 2, 0)) ||
      pingPong(st, a->medium / 8, seedOf(8, 7, 3, 0)) || mixedGroup(st, 1, seedOf(8, 7, 4, 0)) ||
      mixedGroup(st, 0, seedOf(8, 7, 5, 0)))
    return 1;
  if (a->big && ringShift(st, ncclFloat32, a->big / 4, seedOf(8, 9, 0, 0))) return 1;
  return 0;
}

/* --- the rank ----------------------------------------------------------------------------------- */

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const testArgs* a = arg;
  rankState st = {rank, nranks, NULL, a, 0, 0, ""};
  setCase(&st, "%s: init", a->coll);
  ncclResult_t res = ncclCommInitRank(&st.comm, nranks, *id, rank);
  if (res != ncclSuccess) return ncclFailed(&st, "ncclCommInitRank", res);
  int rc;
  if (strcmp(a->coll, "reduce") == 0) rc = runReduce(&st);
  else if (strcmp(a->coll, "reducescatter") == 0) rc = runReduceScatter(&st);
  else if (strcmp(a->coll, "broadcast") == 0) rc = runBroadcast(&st);
  else if (strcmp(a->coll, "allgather") == 0) rc = runAllGather(&st);
  else if (strcmp(a->coll, "gather") == 0) rc = runRooted(&st, gatherOne, 5);
  else if (strcmp(a->coll, "scatter") == 0) rc = runRooted(&st, scatterOne, 6);
  else if (strcmp(a->coll, "alltoall") == 0) rc = runAllToAll(&st);
  else rc = runSendRecv(&st);
  if (rc) {
    ncclCommAbort(st.comm);
    return 1;
  }
  setCase(&st, "%s: destroy", a->coll);
  res = ncclCommDestroy(st.comm);
  if (res != ncclSuccess) return ncclFailed(&st, "ncclCommDestroy", res);
  if (st.failures) fprintf(stderr, "rank %d/%d: %s: %d case(s) with wrong results\n", rank, nranks, a->coll, st.failures);
  return st.failures ? 2 : 0;
}

static size_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char** argv) {
  static const char* const colls[] = {"broadcast", "reduce", "allgather", "reducescatter", "gather", "scatter",
                                      "alltoall", "sendrecv"};
  if (argc < 3) {
    fprintf(stderr, "usage: %s <coll> <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]\n", argv[0]);
    return 2;
  }
  testArgs a = {argv[1], 1, 300 << 10, 8u << 20, 100};
  int known = 0;
  for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) known |= strcmp(a.coll, colls[i]) == 0;
  int nranks = atoi(argv[2]);
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--hosts") == 0) a.nhosts = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--medium") == 0) a.medium = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--big") == 0) a.big = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--timeout") == 0) a.timeoutSec = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (!known || nranks < 1 || nranks > 64 || a.nhosts < 1) {
    fprintf(stderr, "%s: bad collective, nranks or hosts\n", argv[0]);
    return 2;
  }
  if (chrTestBuildTables()) return 1;
  int scatter = strcmp(a.coll, "reducescatter") == 0;
  if ((scatter || strcmp(a.coll, "reduce") == 0) && planReductions(&a, nranks, scatter)) {
    fprintf(stderr, "%s: out of memory while computing the references\n", argv[0]);
    return 1;
  }
  int rc = chrLaunchRanks(nranks, a.nhosts, a.timeoutSec, rankMain, &a);
  freePlan();
  return rc;
}
