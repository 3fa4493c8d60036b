/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_colls: correctness of the collectives (other than all-reduce, see test_allreduce.c) and of
 * send/recv on host buffers, N ranks as N processes (tools/launch.c), public API only.
 *
 *   test_colls <coll> <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]
 *   coll: broadcast reduce allgather reducescatter gather scatter alltoall sendrecv
 *
 * The transport follows from --hosts (1: shm; nranks: net; in between: mixed) and from the
 * environment (CHORUS_TRANSPORT, NCCL_ALGO, ...), which the test takes as it is.
 * With CHORUS_RANK/CHORUS_NRANKS and NCCL_COMM_ID set, the process runs just that rank (one process
 * per host, as tests/net/netns_run.sh starts them); the references are the same.
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

#include "colls_check.h"
#include "colls_data.h"
#include "launch.h"
#include "numeric.h"

static const char* const modeNames[3] = {"out-of-place", "in-place", "ncclBcast"};
enum { OOP, INPLACE, BCAST };

/* --- reducing collectives: cases and references, computed before the ranks are forked ------------ */

/* The reference of a case is the same on every rank, so the launching process (which has not touched
 * the library yet) computes it once and the forked ranks share it copy-on-write. */
typedef struct {
  chrTestCase c;
  chrTestRef ref;
  size_t count; /* the count argument of the call: reduce count, reduce-scatter recvcount */
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
static int planReductions(const chrTestArgs* a, int nranks, int scatter) {
  plan = calloc(NUM_SIZES * ncclNumTypes * CHR_TOP_COUNT + 1, sizeof(plannedCase));
  if (!plan) return 1;
  int blocks = scatter ? nranks : 1;
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++)
      for (int op = 0; op < CHR_TOP_COUNT; op++) {
        size_t count = chrTestCountOf(a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, blocks);
        if (planAdd((ncclDataType_t)type, (chrTestOp)op, count, count * (size_t)blocks, nranks,
                    chrTestSeedOf(scatter, s, type, op), 0))
          return 1;
      }
  if (a->big > 0) {
    size_t count = a->big / 4 / (size_t)blocks;
    if (planAdd(ncclFloat32, CHR_TOP_SUM, count, count * (size_t)blocks, nranks, chrTestSeedOf(scatter, 9, 0, 0), 1))
      return 1;
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
static ncclResult_t createOp(chrTestRank* st, const chrTestCase* c, uint64_t* scalar, ncclRedOp_t* op) {
  static const ncclRedOp_t builtin[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  if (!chrTestIsPremul(c->op)) {
    *op = builtin[c->op];
    return ncclSuccess;
  }
  uint64_t want = chrNumEncodeInt(c->type, chrTestScalarOf(c, st->rank));
  uint64_t decoy = chrNumEncodeInt(c->type, 5);
  int imm = c->op == CHR_TOP_PREMUL_IMM;
  *scalar = imm ? want : decoy;
  ncclResult_t res =
      ncclRedOpCreatePreMulSum(op, scalar, c->type, imm ? ncclScalarHostImmediate : ncclScalarDevice, st->comm);
  if (res != ncclSuccess) return res;
  *scalar = imm ? decoy : want;
  return ncclSuccess;
}

static void fillContribution(const chrTestCase* c, int rank, unsigned char* p) {
  for (size_t i = 0; i < c->count; i++) chrNumStore(p, i, c->t->size, chrTestGenBits(c, rank, i));
}

/* --- reduce ------------------------------------------------------------------------------------- */

/* contrib: this rank's data, generated once per case (generating it costs more than a small reduce). */
static int reduceOne(chrTestRank* st, const plannedCase* pc, int root, int mode, ncclRedOp_t op,
                     const unsigned char* contrib) {
  const chrTestCase* c = &pc->c;
  const size_t n = pc->count, ts = (size_t)c->t->size;
  const int me = st->rank;
  int bad = 0;
  chrTestBuf send, recv = {0};
  ALLOC_OK(chrTestBufInit(&send, n, ts));
  if (n) memcpy(send.p, contrib, n * ts);
  chrTestSetCase(st, "reduce %s %s count %zu root %d %s", c->t->name, chrTestOpNames[c->op], n, root, modeNames[mode]);
  if (mode == OOP) {
    ALLOC_OK(chrTestBufInit(&recv, n, ts) || chrTestSnapshot(&send) || chrTestSnapshot(&recv));
    NCCL_OK(ncclReduce(send.p, recv.p, n, c->type, op, root, st->comm, NULL));
    bad += chrTestCheckUnchanged(st, "sendbuff", &send);
    if (me == root)
      bad += chrTestCheckReduced(st, "result", c, &pc->ref, 0, recv.p, n) + chrTestCheckGuards(st, "recvbuff", &recv);
    else
      bad += chrTestCheckUnchanged(st, "non-root recvbuff", &recv);
  } else {
    ALLOC_OK(chrTestSnapshot(&send));
    NCCL_OK(ncclReduce(send.p, send.p, n, c->type, op, root, st->comm, NULL));
    if (me == root)
      bad += chrTestCheckReduced(st, "result", c, &pc->ref, 0, send.p, n) + chrTestCheckGuards(st, "buffer", &send);
    else
      bad += chrTestCheckUnchanged(st, "non-root buffer", &send);
  }
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
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

static int runReduce(chrTestRank* st) {
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
    chrTestSetCase(st, "reduce %s %s: creating the op", pc->c.t->name, chrTestOpNames[pc->c.op]);
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

static int runReduceScatter(chrTestRank* st) {
  const int me = st->rank, nr = st->nranks;
  for (int i = 0; i < nplanned; i++) {
    const plannedCase* pc = &plan[i];
    const chrTestCase* c = &pc->c;
    const size_t n = pc->count, ts = (size_t)c->t->size;
    uint64_t scalar = 0;
    ncclRedOp_t op;
    chrTestSetCase(st, "reducescatter %s %s: creating the op", c->t->name, chrTestOpNames[c->op]);
    NCCL_OK(createOp(st, c, &scalar, &op));
    for (int mode = OOP; mode <= (pc->isBig ? OOP : INPLACE); mode++) {
      int bad = 0;
      chrTestBuf send, recv = {0};
      ALLOC_OK(chrTestBufInit(&send, n * (size_t)nr, ts));
      fillContribution(c, me, send.p);
      chrTestSetCase(st, "reducescatter %s %s recvcount %zu %s", c->t->name, chrTestOpNames[c->op], n, modeNames[mode]);
      if (mode == OOP) {
        ALLOC_OK(chrTestBufInit(&recv, n, ts) || chrTestSnapshot(&send));
        NCCL_OK(ncclReduceScatter(send.p, recv.p, n, c->type, op, st->comm, NULL));
        bad += chrTestCheckUnchanged(st, "sendbuff", &send);
        bad += chrTestCheckReduced(st, "result", c, &pc->ref, (size_t)me * n, recv.p, n) +
               chrTestCheckGuards(st, "recvbuff", &recv);
      } else {
        /* recvbuff = sendbuff + rank * recvcount; the other blocks of sendbuff are not checked (NCCL
         * makes no promise about them in place). */
        NCCL_OK(ncclReduceScatter(send.p, chrTestAt(&send, (size_t)me * n), n, c->type, op, st->comm, NULL));
        bad += chrTestCheckReduced(st, "result", c, &pc->ref, (size_t)me * n, chrTestAt(&send, (size_t)me * n), n);
        bad += chrTestCheckGuards(st, "buffer", &send);
      }
      chrTestEndCase(st, bad);
      chrTestBufFree(&send);
      chrTestBufFree(&recv);
    }
    if (chrTestIsPremul(c->op)) NCCL_OK(ncclRedOpDestroy(op, st->comm));
  }
  return 0;
}

/* --- broadcast ---------------------------------------------------------------------------------- */

static int broadcastOne(chrTestRank* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  int bad = 0;
  chrTestBuf send, recv = {0};
  chrTestSetCase(st, "broadcast %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  ALLOC_OK(chrTestBufInit(&send, n, ts));
  if (st->rank == root) chrTestFillCopy(send.p, n, (int)ts, seed, root, 0);
  if (mode == OOP) {
    /* Off the root, sendbuff is not used: it must stay untouched. */
    ALLOC_OK(chrTestBufInit(&recv, n, ts) || chrTestSnapshot(&send));
    NCCL_OK(ncclBroadcast(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += chrTestCheckUnchanged(st, st->rank == root ? "sendbuff" : "non-root sendbuff", &send);
    bad +=
        chrTestCheckCopy(st, "result", recv.p, n, (int)ts, seed, root, 0) + chrTestCheckGuards(st, "recvbuff", &recv);
  } else {
    if (mode == INPLACE)
      NCCL_OK(ncclBroadcast(send.p, send.p, n, type, root, st->comm, NULL));
    else
      NCCL_OK(ncclBcast(send.p, n, type, root, st->comm, NULL));
    bad += chrTestCheckCopy(st, "result", send.p, n, (int)ts, seed, root, 0) + chrTestCheckGuards(st, "buffer", &send);
  }
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

static int runBroadcast(chrTestRank* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = chrTestCountOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, 1);
      int roots[64], nroots = rootsFor(s, type, 0, st->nranks, roots);
      for (int r = 0; r < nroots; r++)
        for (int mode = OOP; mode <= BCAST; mode++)
          if (broadcastOne(st, (ncclDataType_t)type, n, roots[r], mode, chrTestSeedOf(2, s, type, roots[r]))) return 1;
    }
  if (st->a->big && broadcastOne(st, ncclFloat32, st->a->big / 4, st->nranks - 1, OOP, chrTestSeedOf(2, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- all-gather --------------------------------------------------------------------------------- */

static int allGatherOne(chrTestRank* st, ncclDataType_t type, size_t n, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  chrTestBuf send = {0}, recv;
  chrTestSetCase(st, "allgather %s sendcount %zu %s", t->name, n, modeNames[mode]);
  ALLOC_OK(chrTestBufInit(&recv, n * (size_t)nr, ts));
  if (mode == OOP) {
    ALLOC_OK(chrTestBufInit(&send, n, ts));
    chrTestFillCopy(send.p, n, (int)ts, seed, me, 0);
    ALLOC_OK(chrTestSnapshot(&send));
    NCCL_OK(ncclAllGather(send.p, recv.p, n, type, st->comm, NULL));
    bad += chrTestCheckUnchanged(st, "sendbuff", &send);
  } else {
    /* sendbuff = recvbuff + rank * sendcount */
    chrTestFillCopy(chrTestAt(&recv, (size_t)me * n), n, (int)ts, seed, me, 0);
    NCCL_OK(ncclAllGather(chrTestAt(&recv, (size_t)me * n), recv.p, n, type, st->comm, NULL));
  }
  for (int r = 0; r < nr; r++)
    bad += chrTestCheckCopy(st, "result", chrTestAt(&recv, (size_t)r * n), n, (int)ts, seed, r, 0);
  bad += chrTestCheckGuards(st, "recvbuff", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

static int runAllGather(chrTestRank* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = chrTestCountOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      for (int mode = OOP; mode <= INPLACE; mode++)
        if (allGatherOne(st, (ncclDataType_t)type, n, mode, chrTestSeedOf(3, s, type, mode))) return 1;
    }
  if (st->a->big &&
      allGatherOne(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, INPLACE, chrTestSeedOf(3, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- gather ------------------------------------------------------------------------------------- */

static int gatherOne(chrTestRank* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  chrTestBuf send = {0}, recv;
  chrTestSetCase(st, "gather %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  ALLOC_OK(chrTestBufInit(&recv, n * (size_t)nr, ts));
  if (mode == OOP) {
    /* Off the root, recvbuff is not used: it must stay untouched. */
    ALLOC_OK(chrTestBufInit(&send, n, ts));
    chrTestFillCopy(send.p, n, (int)ts, seed, me, 0);
    ALLOC_OK(chrTestSnapshot(&send) || chrTestSnapshot(&recv));
    NCCL_OK(ncclGather(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += chrTestCheckUnchanged(st, "sendbuff", &send);
  } else {
    /* sendbuff = recvbuff + rank * count (on the root: + root * count, NCCL's in-place condition);
     * off the root, the whole buffer must stay as it was. */
    chrTestFillCopy(chrTestAt(&recv, (size_t)me * n), n, (int)ts, seed, me, 0);
    ALLOC_OK(chrTestSnapshot(&recv));
    NCCL_OK(ncclGather(chrTestAt(&recv, (size_t)me * n), recv.p, n, type, root, st->comm, NULL));
  }
  if (me == root) {
    for (int r = 0; r < nr; r++)
      bad += chrTestCheckCopy(st, "result", chrTestAt(&recv, (size_t)r * n), n, (int)ts, seed, r, 0);
    bad += chrTestCheckGuards(st, "recvbuff", &recv);
  } else {
    bad += chrTestCheckUnchanged(st, "non-root recvbuff", &recv);
  }
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

/* --- scatter ------------------------------------------------------------------------------------ */

static int scatterOne(chrTestRank* st, ncclDataType_t type, size_t n, int root, int mode, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  chrTestBuf send, recv = {0};
  chrTestSetCase(st, "scatter %s count %zu root %d %s", t->name, n, root, modeNames[mode]);
  /* The root's blocks: block r is chrTestCopyBits(seed, root, r * n + i). */
  ALLOC_OK(chrTestBufInit(&send, n * (size_t)nr, ts));
  if (me == root) chrTestFillCopy(send.p, n * (size_t)nr, (int)ts, seed, root, 0);
  if (mode == OOP) {
    /* Off the root, sendbuff is not used: it must stay untouched. */
    ALLOC_OK(chrTestBufInit(&recv, n, ts) || chrTestSnapshot(&send));
    NCCL_OK(ncclScatter(send.p, recv.p, n, type, root, st->comm, NULL));
    bad += chrTestCheckUnchanged(st, me == root ? "sendbuff" : "non-root sendbuff", &send);
    bad += chrTestCheckCopy(st, "result", recv.p, n, (int)ts, seed, root, (size_t)me * n) +
           chrTestCheckGuards(st, "recvbuff", &recv);
  } else {
    /* recvbuff = sendbuff + rank * count (on the root: + root * count, NCCL's in-place condition).
     * The root's buffer must come back as it was; elsewhere only the own block changes. */
    ALLOC_OK(chrTestSnapshot(&send));
    NCCL_OK(ncclScatter(send.p, chrTestAt(&send, (size_t)me * n), n, type, root, st->comm, NULL));
    if (me == root) {
      bad += chrTestCheckUnchanged(st, "buffer", &send);
    } else {
      bad += chrTestCheckCopy(st, "result", chrTestAt(&send, (size_t)me * n), n, (int)ts, seed, root, (size_t)me * n);
      memcpy(chrTestAt(&send, (size_t)me * n), send.snap + (GUARD + (size_t)me * n) * ts, n * ts); /* checked above */
      bad += chrTestCheckUnchanged(st, "other blocks of the buffer", &send);
    }
  }
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

typedef int (*rootedFn)(chrTestRank*, ncclDataType_t, size_t, int, int, uint64_t);

static int runRooted(chrTestRank* st, rootedFn fn, int collId) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = chrTestCountOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      int roots[64], nroots = rootsFor(s, type, 0, st->nranks, roots);
      for (int r = 0; r < nroots; r++)
        for (int mode = OOP; mode <= INPLACE; mode++)
          if (fn(st, (ncclDataType_t)type, n, roots[r], mode, chrTestSeedOf(collId, s, type, roots[r]))) return 1;
    }
  if (st->a->big &&
      fn(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, st->nranks / 2, OOP, chrTestSeedOf(collId, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- all-to-all --------------------------------------------------------------------------------- */

/* Block j of rank r's sendbuff goes to rank j: element i of it is chrTestCopyBits(seed, r, j*n + i).
 * Out of place only: NCCL defines no in-place layout for all-to-all. */
static int allToAllOne(chrTestRank* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  chrTestBuf send, recv;
  chrTestSetCase(st, "alltoall %s count %zu", t->name, n);
  ALLOC_OK(chrTestBufInit(&send, n * (size_t)nr, ts) || chrTestBufInit(&recv, n * (size_t)nr, ts));
  chrTestFillCopy(send.p, n * (size_t)nr, (int)ts, seed, me, 0);
  ALLOC_OK(chrTestSnapshot(&send));
  NCCL_OK(ncclAlltoAll(send.p, recv.p, n, type, st->comm, NULL));
  bad += chrTestCheckUnchanged(st, "sendbuff", &send);
  for (int r = 0; r < nr; r++)
    bad += chrTestCheckCopy(st, "result", chrTestAt(&recv, (size_t)r * n), n, (int)ts, seed, r, (size_t)me * n);
  bad += chrTestCheckGuards(st, "recvbuff", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

static int runAllToAll(chrTestRank* st) {
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = chrTestCountOf(st->a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, st->nranks);
      if (allToAllOne(st, (ncclDataType_t)type, n, chrTestSeedOf(7, s, type, 0))) return 1;
    }
  if (st->a->big && allToAllOne(st, ncclFloat32, st->a->big / 4 / (size_t)st->nranks, chrTestSeedOf(7, 9, 0, 0)))
    return 1;
  return 0;
}

/* --- the rank ----------------------------------------------------------------------------------- */

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const chrTestArgs* a = arg;
  chrTestRank st = {rank, nranks, NULL, a, 0, 0, ""};
  chrTestSetCase(&st, "%s: init", a->coll);
  ncclResult_t res = ncclCommInitRank(&st.comm, nranks, *id, rank);
  if (res != ncclSuccess) return chrTestNcclFailed(&st, "ncclCommInitRank", res);
  int rc;
  if (strcmp(a->coll, "reduce") == 0)
    rc = runReduce(&st);
  else if (strcmp(a->coll, "reducescatter") == 0)
    rc = runReduceScatter(&st);
  else if (strcmp(a->coll, "broadcast") == 0)
    rc = runBroadcast(&st);
  else if (strcmp(a->coll, "allgather") == 0)
    rc = runAllGather(&st);
  else if (strcmp(a->coll, "gather") == 0)
    rc = runRooted(&st, gatherOne, 5);
  else if (strcmp(a->coll, "scatter") == 0)
    rc = runRooted(&st, scatterOne, 6);
  else if (strcmp(a->coll, "alltoall") == 0)
    rc = runAllToAll(&st);
  else
    rc = chrTestRunSendRecv(&st);
  if (rc) {
    ncclCommAbort(st.comm);
    return 1;
  }
  chrTestSetCase(&st, "%s: destroy", a->coll);
  res = ncclCommDestroy(st.comm);
  if (res != ncclSuccess) return chrTestNcclFailed(&st, "ncclCommDestroy", res);
  if (st.failures)
    fprintf(stderr, "rank %d/%d: %s: %d case(s) with wrong results\n", rank, nranks, a->coll, st.failures);
  return st.failures ? 2 : 0;
}

static size_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k')
    v *= 1024;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char** argv) {
  static const char* const colls[] = {"broadcast", "reduce",  "allgather", "reducescatter",
                                      "gather",    "scatter", "alltoall",  "sendrecv"};
  if (argc < 3) {
    fprintf(stderr, "usage: %s <coll> <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]\n", argv[0]);
    return 2;
  }
  chrTestArgs a = {argv[1], 1, 300 << 10, 8u << 20, 100};
  int known = 0;
  for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) known |= strcmp(a.coll, colls[i]) == 0;
  int nranks = atoi(argv[2]);
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--hosts") == 0)
      a.nhosts = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--medium") == 0)
      a.medium = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--big") == 0)
      a.big = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--timeout") == 0)
      a.timeoutSec = atoi(argv[i + 1]);
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
  int rc = chrLaunchRanksOrEnv(nranks, a.nhosts, a.timeoutSec, rankMain, &a);
  freePlan();
  return rc;
}
