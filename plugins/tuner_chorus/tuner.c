/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner.c: the reference tuner's behaviour, written once; versions.c exports it as every ABI version.
 *
 * init reads the rules (rules.c) and keeps those whose ranks=/nodes= fit the communicator, in order.
 * It reports, with one WARN naming the rule, a rule that names an algorithm the collectives it lists
 * cannot use (TREE for AllGather, ...) or, when the core passes its tuning constants (v5+), a pair the
 * core says it cannot run on this communicator (baseLatencies of -1, which is how Chorus marks them;
 * NVIDIA's NCCL never does, so the check is silent there). A malformed rule fails init.
 *
 * For each call the first rule matching the collective and nBytes decides, and no other: its
 * algorithm/protocol (or the cheapest runnable entry among those it allows, for "*") gets cost 0.0,
 * so it wins, and its channel count is passed on. If the table says none of what it allows can run
 * for the call, the rule defers to the core, with one WARN per rule and communicator.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner_chorus.h"

#define TC_LOG(ctx, level, flags, ...)                                          \
  do {                                                                         \
    if ((ctx)->log) (ctx)->log((level), (flags), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

static int fits(long long value, long long lo, long long hi) { return value >= lo && (hi < 0 || value <= hi); }

/* The warnings of init about one rule that applies to this communicator. */
static void checkRule(struct tcContext* ctx, const struct tcRule* r, const ncclTunerConstants_v6_t* k) {
  if (r->algo != TC_ANY && !r->anyColl)
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++)
      if ((r->collMask & (1u << f)) && !tcAlgoServes(r->algo, f))
        TC_LOG(ctx, NCCL_LOG_WARN, NCCL_INIT | NCCL_TUNING,
               "Chorus tuner: TUNER_RULE_%d \"%s\": %s cannot run %s; the rule will leave %s to the core", r->number,
               r->text, tcAlgoName(r->algo), tcCollName(f), tcCollName(f));
  /* One rank runs no algorithm at all (the core copies locally and never asks): nothing to check. */
  if (k == NULL || ctx->nRanks < 2) return;
  int runnable = 0;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      if ((r->algo == TC_ANY || r->algo == a) && (r->proto == TC_ANY || r->proto == p) && k->baseLatencies[a][p] >= 0.0)
        runnable = 1;
  if (!runnable)
    TC_LOG(ctx, NCCL_LOG_WARN, NCCL_INIT | NCCL_TUNING,
           "Chorus tuner: TUNER_RULE_%d \"%s\": this communicator (%zu ranks, %zu nodes) cannot run %s/%s (its "
           "tuning constants mark it -1); the rule will leave its calls to the core",
           r->number, r->text, ctx->nRanks, ctx->nNodes, tcAlgoName(r->algo), tcProtoName(r->proto));
}

ncclResult_t tcInit(void** context, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                    const ncclTunerConstants_v6_t* constants) {
  *context = NULL;
  struct tcContext* ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return ncclSystemError;
  ctx->log = logFunction;
  ctx->nRanks = nRanks;
  ctx->nNodes = nNodes;
  struct tcRule* all = calloc(TC_MAX_RULES, sizeof(*all));
  if (all == NULL) {
    free(ctx);
    return ncclSystemError;
  }
  int nAll = 0;
  char err[1024];
  if (tcParseRules(all, &nAll, err, sizeof(err)) != 0) {
    TC_LOG(ctx, NCCL_LOG_WARN, NCCL_INIT | NCCL_TUNING, "Chorus tuner: %s", err);
    free(all);
    free(ctx);
    return ncclInvalidArgument;
  }
  for (int i = 0; i < nAll; i++) {
    const struct tcRule* r = &all[i];
    if (!fits((long long)nRanks, r->minRanks, r->maxRanks) || !fits((long long)nNodes, r->minNodes, r->maxNodes))
      continue;
    ctx->rules[ctx->nRules++] = *r;
    checkRule(ctx, r, constants);
  }
  TC_LOG(ctx, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING,
         "Chorus tuner: %d of %d rules apply to this communicator (%zu ranks, %zu nodes)", ctx->nRules, nAll, nRanks,
         nNodes);
  free(all);
  *context = ctx;
  return ncclSuccess;
}

/* A matching rule whose choice cannot run for this call: said once per rule and communicator. */
static void cannotRun(struct tcContext* ctx, const struct tcRule* r, ncclFunc_t collType, size_t nBytes) {
  int index = (int)(r - ctx->rules);
  uint64_t bit = 1ull << index;
  if (ctx->refusedWarned & bit) return;
  ctx->refusedWarned |= bit;
  TC_LOG(ctx, NCCL_LOG_WARN, NCCL_TUNING,
         "Chorus tuner: TUNER_RULE_%d \"%s\" matches %s of %zu bytes, but %s/%s cannot run for it; leaving the choice "
         "to the core (said once per communicator)", r->number, r->text, tcCollName(collType), nBytes,
         tcAlgoName(r->algo), tcProtoName(r->proto));
}

/* The first call a rule decides, per rule and communicator, at INFO (NCCL_DEBUG_SUBSYS=TUNING): what a
 * user looks for to see that the rule took effect. */
static void applied(struct tcContext* ctx, const struct tcRule* r, ncclFunc_t collType, size_t nBytes, int algo,
                    int proto) {
  uint64_t bit = 1ull << (int)(r - ctx->rules);
  if (ctx->appliedSaid & bit) return;
  ctx->appliedSaid |= bit;
  TC_LOG(ctx, NCCL_LOG_INFO, NCCL_TUNING,
         "Chorus tuner: TUNER_RULE_%d \"%s\" chose %s/%s%s for %s of %zu bytes (said once per rule and communicator)",
         r->number, r->text, algo >= 0 ? tcAlgoName(algo) : "(the core's)", proto >= 0 ? tcProtoName(proto) : "(the core's)",
         r->channels > 0 ? ", its channels" : "", tcCollName(collType), nBytes);
}

ncclResult_t tcGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes, float* table, int numAlgo, int numProto,
                           int* nChannels) {
  struct tcContext* ctx = context;
  if (ctx == NULL || table == NULL || nChannels == NULL) return ncclInternalError;
  const struct tcRule* r = tcMatch(ctx, collType, nBytes);
  if (r == NULL) return ncclSuccess; /* defer */
  if (r->algo != TC_ANY || r->proto != TC_ANY) {
    int best = -1;
    for (int a = 0; a < numAlgo; a++)
      for (int p = 0; p < numProto; p++) {
        int i = a * numProto + p;
        if ((r->algo == TC_ANY || r->algo == a) && (r->proto == TC_ANY || r->proto == p) && table[i] >= 0.0f &&
            (best < 0 || table[i] < table[best]))
          best = i;
      }
    if (best < 0) {
      cannotRun(ctx, r, collType, nBytes);
      return ncclSuccess; /* the rule decides, and it cannot: the core's own choice, channels included */
    }
    table[best] = 0.0f;
    applied(ctx, r, collType, nBytes, best / numProto, best % numProto);
  } else {
    applied(ctx, r, collType, nBytes, -1, -1);
  }
  if (r->channels > 0) *nChannels = r->channels;
  return ncclSuccess;
}

ncclResult_t tcGetChoice(void* context, ncclFunc_t collType, size_t nBytes, int* algorithm, int* protocol,
                         int* nChannels) {
  struct tcContext* ctx = context;
  if (ctx == NULL) return ncclInternalError;
  const struct tcRule* r = tcMatch(ctx, collType, nBytes);
  if (r == NULL) return ncclSuccess;
  /* v2 answers a whole pair: "*" for the protocol means SIMPLE, which every core runs; a rule without
   * an algorithm cannot be said in v2 and leaves the pair to the core. */
  if (r->algo != TC_ANY) {
    *algorithm = r->algo;
    *protocol = r->proto != TC_ANY ? r->proto : NCCL_PROTO_SIMPLE;
  }
  applied(ctx, r, collType, nBytes, r->algo != TC_ANY ? *algorithm : -1, r->algo != TC_ANY ? *protocol : -1);
  if (r->channels > 0) *nChannels = r->channels;
  return ncclSuccess;
}

ncclResult_t tcGetChunkSize(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto, size_t* chunkSize) {
  struct tcContext* ctx = context;
  if (ctx == NULL || chunkSize == NULL) return ncclInternalError;
  const struct tcRule* r = tcMatch(ctx, collType, nBytes);
  if (r != NULL && r->chunk > 0 && (r->algo == TC_ANY || r->algo == algo) && (r->proto == TC_ANY || r->proto == proto))
    *chunkSize = (size_t)r->chunk;
  return ncclSuccess;
}

ncclResult_t tcFinalize(void* context) {
  free(context);
  return ncclSuccess;
}
