/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_allreduce: ncclAllReduce on host buffers with N ranks as N processes (tools/launch.c).
 *
 *   test_allreduce <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]
 *
 * With CHORUS_RANK/CHORUS_NRANKS and NCCL_COMM_ID set, the process runs just that rank (one process
 * per host, as tests/net/netns_run.sh starts them).
 *
 * Every datatype x every op (sum prod max min avg, premulsum with a host-immediate and with a
 * "device" scalar) x sizes 0, 1, 1031 and --medium bytes, in place and out of place; plus two large
 * cases (float sum, int8 sum, --big bytes) and genuinely random float32/float64 sums.
 *
 * Data is random per rank from a seed. The data and the independent reference of the exact cases are
 * colls_data.c's, shared with test_colls: each reference regenerates every rank's data and reduces it
 * with the test's own code (float formats decoded/encoded by tools/perf/numeric.c, never by the
 * library):
 * - integers: any values (two's-complement wrap is exact in any order), except avg whose sum must
 *   not wrap; compared bit for bit;
 * - floats: small integers (sum, avg, premulsum) or signed powers of two (prod) bounded so that
 *   every partial result is exact in the type, so the order of reduction does not matter and the
 *   result is compared bit for bit; max/min on random finite values, bit for bit; avg within a
 *   bound (see avgTolerance in colls_data.c); the random float case within a bound (see randomCase).
 * Out of place, the send buffer must be unchanged; in both modes the GUARD elements before and after
 * the buffers must be (colls_check.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colls_check.h"
#include "colls_data.h"
#include "launch.h"
#include "numeric.h"

/* --- the plan: every case and its reference, computed once, before the ranks are forked ---------- */

/* The reference of a case is the same on every rank; computing it once in the launching process
 * (which has not touched the library yet) and sharing it with the forked ranks copy-on-write saves
 * n-1 of n identical computations, which on 2 cores decides whether 8 ranks fit in a minute. */
typedef struct {
  chrTestCase c;
  chrTestRef ref;
} plannedCase;

static plannedCase* plan;
static int nplanned;

/* Sizes 0, 1, 1031 and --medium bytes; the seeds are those of chrTestSeedOf with collective 0. */
static int planCases(const chrTestArgs* a, int nranks) {
  plan = calloc(NUM_SIZES * ncclNumTypes * CHR_TOP_COUNT, sizeof(plannedCase));
  if (!plan) return 1;
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++)
      for (int op = 0; op < CHR_TOP_COUNT; op++) {
        plannedCase* p = &plan[nplanned++];
        size_t count = chrTestCountOf(a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, 1);
        if (chrTestCaseInit(&p->c, (ncclDataType_t)type, (chrTestOp)op, count, nranks, chrTestSeedOf(0, s, type, op)) ||
            chrTestRefCompute(&p->c, &p->ref))
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

/* --- running one case --------------------------------------------------------------------------- */

/* Runs one case out of place and in place; returns non-zero only on an NCCL error (then the rank
 * aborts and leaves its buffers to the exit). A wrong result counts one failure per case, and the
 * ranks carry on so that they stay in step. */
static int runCase(chrTestRank* st, const plannedCase* pc) {
  const chrTestCase* c = &pc->c;
  const size_t n = c->count, ts = (size_t)c->t->size;
  int bad = 0;
  uint64_t scalar = 0;
  ncclRedOp_t op;
  chrTestSetCase(st, "allreduce %s %s count %zu: creating the op", c->t->name, chrTestOpNames[c->op], n);
  NCCL_OK(chrTestCreateOp(st->comm, st->rank, c, &scalar, &op));

  /* Out of place: the result, the guards of recvbuff, and sendbuff unchanged (guards included). */
  chrTestBuf send, recv;
  ALLOC_OK(chrTestBufInit(&send, n, ts) || chrTestBufInit(&recv, n, ts));
  for (size_t i = 0; i < n; i++) chrNumStore(send.p, i, (int)ts, chrTestGenBits(c, st->rank, i));
  ALLOC_OK(chrTestSnapshot(&send));
  chrTestSetCase(st, "allreduce %s %s count %zu out-of-place", c->t->name, chrTestOpNames[c->op], n);
  NCCL_OK(ncclAllReduce(send.p, recv.p, n, c->type, op, st->comm, NULL));
  bad += chrTestCheckReduced(st, "result", c, &pc->ref, 0, recv.p, n) + chrTestCheckGuards(st, "recvbuff", &recv);
  bad += chrTestCheckUnchanged(st, "sendbuff", &send);

  /* In place, on the same contribution (the snapshot still holds it, guards and all). */
  memcpy(recv.alloc, send.snap, send.bytes);
  chrTestSetCase(st, "allreduce %s %s count %zu in-place", c->t->name, chrTestOpNames[c->op], n);
  NCCL_OK(ncclAllReduce(recv.p, recv.p, n, c->type, op, st->comm, NULL));
  bad += chrTestCheckReduced(st, "result", c, &pc->ref, 0, recv.p, n) + chrTestCheckGuards(st, "buffer", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  if (chrTestIsPremul(c->op)) NCCL_OK(ncclRedOpDestroy(op, st->comm));
  return 0;
}

/* --- large cases, with a reference in closed form ----------------------------------------------- */

/* Rank r holds base(i) + r * step(i); the sum over ranks is n*base + step*n(n-1)/2. float: base in
 * [-512, 511], step in [-4, 4], so every partial sum is an integer below 2^13, exact in float. int8:
 * full range, wrapping; the sum is computed modulo 256, as the type does. */
static int bigCase(chrTestRank* st, ncclDataType_t type, size_t bytes, int inPlace, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  size_t count = bytes / (size_t)t->size;
  const int64_t n = st->nranks, tri = n * (n - 1) / 2;
  char* send = malloc(count * (size_t)t->size + 1);
  char* recv = inPlace ? send : malloc(count * (size_t)t->size + 1);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: out of memory for %zu bytes\n", st->rank, bytes);
    free(send);
    if (!inPlace) free(recv);
    return 1;
  }
  for (size_t i = 0; i < count; i++) {
    uint64_t h = chrTestMix64(seed ^ i);
    int64_t base = type == ncclFloat32 ? (int64_t)(h & 1023) - 512 : (int64_t)(h & 255);
    int64_t step = type == ncclFloat32 ? (int64_t)((h >> 10) % 9) - 4 : (int64_t)((h >> 8) & 255);
    int64_t v = base + st->rank * step;
    if (type == ncclFloat32) ((float*)send)[i] = (float)v;
    else ((int8_t*)send)[i] = (int8_t)(uint8_t)v;
  }
  if (!inPlace) memset(recv, SENTINEL, count * (size_t)t->size);
  chrTestSetCase(st, "allreduce %s sum count %zu %s (big)", t->name, count, inPlace ? "in-place" : "out-of-place");
  ncclResult_t res = ncclAllReduce(send, recv, count, type, ncclSum, st->comm, NULL);
  if (res != ncclSuccess) {
    free(send);
    if (!inPlace) free(recv);
    return chrTestNcclFailed(st, "ncclAllReduce", res);
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t h = chrTestMix64(seed ^ i);
    int ok;
    if (type == ncclFloat32) {
      int64_t base = (int64_t)(h & 1023) - 512, step = (int64_t)((h >> 10) % 9) - 4;
      ok = ((float*)recv)[i] == (float)(n * base + step * tri);
    } else {
      int64_t base = (int64_t)(h & 255), step = (int64_t)((h >> 8) & 255);
      ok = ((uint8_t*)recv)[i] == (uint8_t)(n * base + step * tri);
    }
    if (!ok && bad++ < MAX_REPORTS)
      fprintf(stderr, "rank %d/%d: %s: element %zu wrong\n", st->rank, st->nranks, st->desc, i);
  }
  if (bad) st->failures++;
  free(send);
  if (!inPlace) free(recv);
  return 0;
}

/* --- genuinely random floats -------------------------------------------------------------------- */

/* Values uniform in [-1, 1). The ring order is unknown, so the result is checked against the sum
 * computed in long double with the classic bound for recursive summation in any order:
 * |fl(sum) - sum| <= (n-1) u sum|x| (to first order, u = unit roundoff of the type), with 1% slack
 * for the second-order term and the reference's own (much smaller) error. A library that adds in a
 * wider type and rounds once is well inside this bound; with one rank the result must be exact. */
static int randomCase(chrTestRank* st, ncclDataType_t type, size_t count, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const int n = st->nranks;
  char* send = malloc(count * (size_t)t->size);
  char* recv = malloc(count * (size_t)t->size);
  if (!send || !recv) {
    free(send);
    free(recv);
    return 1;
  }
  for (size_t i = 0; i < count; i++) {
    double v = (double)(chrTestRnd(seed, st->rank, i) >> 11) * 0x1p-52 - 1.0; /* 53 random bits */
    if (type == ncclFloat32) ((float*)send)[i] = (float)v;
    else ((double*)send)[i] = v;
  }
  chrTestSetCase(st, "allreduce %s random sum count %zu", t->name, count);
  ncclResult_t res = ncclAllReduce(send, recv, count, type, ncclSum, st->comm, NULL);
  if (res != ncclSuccess) {
    free(send);
    free(recv);
    return chrTestNcclFailed(st, "ncclAllReduce", res);
  }
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) {
    long double sum = 0, absSum = 0;
    for (int r = 0; r < n; r++) {
      double v = (double)(chrTestRnd(seed, r, i) >> 11) * 0x1p-52 - 1.0;
      if (type == ncclFloat32) v = (float)v;
      sum += v;
      absSum += fabsl((long double)v);
    }
    double got = type == ncclFloat32 ? ((float*)recv)[i] : ((double*)recv)[i];
    long double tol = (n - 1) * (long double)t->unitRoundoff * absSum * 1.01L;
    if (!(fabsl((long double)got - sum) <= tol) && bad++ < MAX_REPORTS)
      fprintf(stderr, "rank %d/%d: %s: element %zu: got %.17g, exact %.17Lg, bound %.3Lg\n", st->rank, n, st->desc, i, got,
              sum, tol);
  }
  if (bad) st->failures++;
  free(send);
  free(recv);
  return 0;
}

/* --- the rank ------------------------------------------------------------------------------------ */

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  const chrTestArgs* a = arg;
  chrTestRank st = {rank, nranks, NULL, a, 0, 0, ""};
  chrTestSetCase(&st, "allreduce: init");
  ncclResult_t res = ncclCommInitRank(&st.comm, nranks, *id, rank);
  if (res != ncclSuccess) return chrTestNcclFailed(&st, "ncclCommInitRank", res);
  int count = -1, me = -1;
  if (ncclCommCount(st.comm, &count) != ncclSuccess || count != nranks ||
      ncclCommUserRank(st.comm, &me) != ncclSuccess || me != rank) {
    fprintf(stderr, "rank %d: ncclCommCount/UserRank say %d/%d, expected %d/%d\n", rank, count, me, nranks, rank);
    st.failures++;
  }

  for (int i = 0; i < nplanned; i++)
    if (runCase(&st, &plan[i])) goto fail;
  if (a->big > 0) {
    if (bigCase(&st, ncclFloat32, a->big, 0, 0xb16f)) goto fail;
    if (bigCase(&st, ncclInt8, a->big, 1, 0xb168)) goto fail;
  }
  if (randomCase(&st, ncclFloat32, 1031, 0xf32) || randomCase(&st, ncclFloat64, 1031, 0xf64) ||
      randomCase(&st, ncclFloat32, 65536 + 7, 0xf32f)) goto fail;

  chrTestSetCase(&st, "allreduce: destroy");
  res = ncclCommDestroy(st.comm);
  if (res != ncclSuccess) return chrTestNcclFailed(&st, "ncclCommDestroy", res);
  if (st.failures) fprintf(stderr, "rank %d/%d: %d case(s) with wrong results\n", rank, nranks, st.failures);
  return st.failures ? 2 : 0;
fail:
  ncclCommAbort(st.comm);
  return 1;
}
static size_t parseBytes(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <nranks> [--hosts K] [--medium BYTES] [--big BYTES] [--timeout SEC]\n", argv[0]);
    return 2;
  }
  int nranks = atoi(argv[1]);
  chrTestArgs a = {"allreduce", 1, 1 << 20, 64u << 20, 100};
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--hosts") == 0) a.nhosts = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--medium") == 0) a.medium = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--big") == 0) a.big = parseBytes(argv[i + 1]);
    else if (strcmp(argv[i], "--timeout") == 0) a.timeoutSec = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (nranks < 1 || a.nhosts < 1) {
    fprintf(stderr, "%s: bad nranks/hosts\n", argv[0]);
    return 2;
  }
  if (chrTestBuildTables() || planCases(&a, nranks)) {
    fprintf(stderr, "%s: out of memory while computing the references\n", argv[0]);
    return 1;
  }
  int rc = chrLaunchRanksOrEnv(nranks, a.nhosts, a.timeoutSec, rankMain, &a);
  freePlan();
  return rc;
}
