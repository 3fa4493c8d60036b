/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_calls.c: CHORUS_CHECK_CALLS=1, every rank's collective calls compared before they run.
 *
 * Ranks that disagree on a call (another collective, count, type, op or root, or one rank a call
 * ahead) give garbage or hang, in NCCL as in Chorus. With the check on, the outermost group end (or
 * a bare call) all-gathers, per communicator, the signatures of this rank's collective calls in it
 * over the bootstrap before planning anything, and every rank fails with ncclInvalidUsage naming its
 * call and the first rank's that differs; the communicator is then failed, as its ranks' calls no
 * longer line up. Sends and receives of their own are not compared (a group of them need not involve
 * every rank, so no all-gather can wait for everyone); all-to-all, gather and scatter are, as one
 * call each. Communicators are visited in commHash order, so ranks that share several agree on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "commstate/comm.h"
#include "group/check_calls.h"
#include "hostdev/task.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/profiler_plugin.h"

#define MAX_SIGS 8 /* calls per group compared one by one; beyond, their digest */

struct callSig {
  uint64_t seq;   /* the comm's collective call number */
  uint64_t count;
  int32_t func, type, op, root;
};

struct groupSigs {
  uint32_t n;
  uint32_t pad;
  uint64_t digest; /* of every signature, for the calls past MAX_SIGS */
  struct callSig sig[MAX_SIGS];
};

static int isChecked(const struct chrCollTask* t) {
  return t->callStart && t->apiFunc != ncclFuncSend && t->apiFunc != ncclFuncRecv;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static const char* opName(int op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < (int)(sizeof(names) / sizeof(names[0])) ? names[op] : "a user-defined op";
}

static void describe(const struct callSig* s, char* out, size_t cap) {
  int n = snprintf(out, cap, "call #%llu is %s(count %llu, %s", (unsigned long long)s->seq, chrProfFuncName(s->func),
                   (unsigned long long)s->count, chrProfTypeName(s->type));
  if (n > 0 && (size_t)n < cap && s->op >= 0) n += snprintf(out + n, cap - (size_t)n, ", %s", opName(s->op));
  if (n > 0 && (size_t)n < cap && s->root >= 0) n += snprintf(out + n, cap - (size_t)n, ", root %d", (int)s->root);
  if (n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, ")");
}

static int sameSig(const struct callSig* a, const struct callSig* b) {
  return a->seq == b->seq && a->count == b->count && a->func == b->func && a->type == b->type && a->op == b->op &&
         a->root == b->root;
}

/* The first difference between this rank's calls and rank r's, as a message; 0 when they agree. */
static int differ(const struct groupSigs* me, const struct groupSigs* them, int rank, int r, char* msg, size_t cap) {
  char mine[160], theirs[160];
  const uint32_t n = me->n < them->n ? me->n : them->n;
  for (uint32_t i = 0; i < n && i < MAX_SIGS; i++) {
    if (sameSig(&me->sig[i], &them->sig[i])) continue;
    describe(&me->sig[i], mine, sizeof(mine));
    describe(&them->sig[i], theirs, sizeof(theirs));
    snprintf(msg, cap, "rank %d's %s, but rank %d's %s", rank, mine, r, theirs);
    return 1;
  }
  if (me->n != them->n) {
    snprintf(msg, cap, "rank %d makes %u collective calls in this group, rank %d makes %u", rank, me->n, r, them->n);
    return 1;
  }
  if (me->digest != them->digest) {
    snprintf(msg, cap, "rank %d's and rank %d's calls differ after the first %d of the group", rank, r, MAX_SIGS);
    return 1;
  }
  return 0;
}

static ncclResult_t checkComm(struct ncclComm* comm, struct chrCollTask* list) {
  struct groupSigs mine;
  memset(&mine, 0, sizeof(mine));
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm || !isChecked(t)) continue;
    struct callSig s = {.seq = comm->checkedCalls + mine.n,
                        .count = t->count,
                        .func = (int32_t)t->apiFunc,
                        .type = (int32_t)t->type,
                        .op = t->apiFunc == ncclFuncAllReduce || t->apiFunc == ncclFuncReduce ||
                                      t->apiFunc == ncclFuncReduceScatter
                                  ? (int32_t)t->userOp
                                  : -1,
                        .root = t->apiFunc == ncclFuncBroadcast || t->apiFunc == ncclFuncReduce ||
                                        t->apiFunc == ncclFuncGather || t->apiFunc == ncclFuncScatter
                                    ? t->root
                                    : -1};
    if (mine.n < MAX_SIGS) mine.sig[mine.n] = s;
    mine.digest = mix(mix(mix(mix(mix(mine.digest, s.seq), s.count), (uint64_t)s.func), (uint64_t)s.type),
                      ((uint64_t)(uint32_t)s.op << 32) | (uint32_t)s.root);
    mine.n++;
  }
  if (mine.n == 0) return ncclSuccess;
  comm->checkedCalls += mine.n;
  struct groupSigs* all = calloc((size_t)comm->nRanks, sizeof(*all));
  if (all == NULL) return chrFail(ncclSystemError, "CHORUS_CHECK_CALLS: out of memory for %d ranks' calls", comm->nRanks);
  all[comm->rank] = mine;
  ncclResult_t res = chrBootstrapAllGather(comm->bootstrap, all, sizeof(*all));
  char msg[512];
  for (int r = 0; res == ncclSuccess && r < comm->nRanks; r++) {
    if (r == comm->rank || !differ(&mine, &all[r], comm->rank, r, msg, sizeof(msg))) continue;
    res = chrFail(ncclInvalidUsage, "CHORUS_CHECK_CALLS: the ranks of comm %p disagree: %s", (void*)comm, msg);
    break;
    chrCommSetAsyncError(comm, res);
  }
  free(all);
  return res;
}

static int byHash(const void* a, const void* b) {
  const struct ncclComm* x = *(struct ncclComm* const*)a;
  const struct ncclComm* y = *(struct ncclComm* const*)b;
  return x->commHash < y->commHash ? -1 : x->commHash > y->commHash;
}

ncclResult_t chrCheckCalls(struct chrCollTask* list) {
  int n = 0, cap = 0;
  struct ncclComm** comms = NULL;
  ncclResult_t res = ncclSuccess;
  for (struct chrCollTask* t = list; t && res == ncclSuccess; t = t->next) {
    if (!isChecked(t)) continue;
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = comms[i] == t->comm;
    if (seen) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 4;
      struct ncclComm** more = realloc(comms, (size_t)cap * sizeof(*comms));
      if (more == NULL) res = chrFail(ncclSystemError, "CHORUS_CHECK_CALLS: out of memory");
      else comms = more;
    }
    if (res == ncclSuccess) comms[n++] = t->comm;
  }
  if (n > 1) qsort(comms, (size_t)n, sizeof(*comms), byHash);
  /* Every comm takes part in its exchange even after one failed: its other ranks wait for it. */
  for (int i = 0; i < n; i++) {
    ncclResult_t one = checkComm(comms[i], list);
    if (one == ncclSuccess) continue;
    chrCommNoteError(comms[i]);
    if (res == ncclSuccess) res = one;
  }
  free(comms);
  return res;
}
