/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_chorus.h: the reference tuner's rules (rules.c) and its per-communicator context (tuner.c).
 * Internal to libnccl-tuner-chorus.so; nothing here is exported.
 */
#ifndef CHORUS_TUNER_CHORUS_H_
#define CHORUS_TUNER_CHORUS_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/tuner.h"

#define TC_PLUGIN_NAME "Chorus"
#define TC_MAX_RULES 64         /* TUNER_RULE_1 .. TUNER_RULE_64 */
#define TC_RULE_TEXT_MAX 256    /* longest rule kept for messages */
#define TC_ANY (-1)

/* One rule: "<collectives> [<bytes range>] [ranks=a-b] [nodes=a-b] -> <algo> [<proto>] [<channels>] [chunk=<bytes>]" */
struct tcRule {
  int number;                  /* n of TUNER_RULE_n */
  char text[TC_RULE_TEXT_MAX]; /* as written, for messages */
  unsigned collMask;           /* bit f for ncclFunc_t f (0..4) */
  int anyColl;                 /* "*" */
  uint64_t minBytes, maxBytes; /* inclusive */
  long long minRanks, maxRanks, minNodes, maxNodes; /* inclusive */
  int algo, proto;             /* NCCL_ALGO_* / NCCL_PROTO_*, or TC_ANY */
  int channels;                /* > 0: nChannels; 0: keep */
  uint64_t chunk;              /* > 0: getChunkSize answer; 0: keep */
};

struct tcContext {
  ncclDebugLogger_t log;
  size_t nRanks, nNodes;
  int nRules;
  struct tcRule rules[TC_MAX_RULES]; /* only the rules that apply to this communicator, in order */
  uint64_t refusedWarned;            /* rules already WARNed as not runnable for a call (bit = index) */
  uint64_t appliedSaid;              /* rules whose first choice was already logged (bit = index) */
};

/* Read TUNER_RULE_1 .. TUNER_RULE_64 from the environment into rules (numbered order). On a malformed
 * rule: returns -1 with a message naming it in err. */
int tcParseRules(struct tcRule* rules, int* nRules, char* err, size_t errCap);
/* Parse one rule (tests use it directly). 0, or -1 with the problem in err. */
int tcParseRule(const char* text, int number, struct tcRule* rule, char* err, size_t errCap);
/* First rule of ctx matching (collType, nBytes), or NULL. */
const struct tcRule* tcMatch(const struct tcContext* ctx, ncclFunc_t collType, size_t nBytes);

const char* tcAlgoName(int algo);
const char* tcProtoName(int proto);
const char* tcCollName(int coll);
/* 1 when NCCL defines `algo` for collective `coll` (TREE only for AllReduce, PAT only for AllGather
 * and ReduceScatter, ...). */
int tcAlgoServes(int algo, int coll);

/* The version-neutral implementation (tuner.c); versions.c wraps it for each exported ABI. */
ncclResult_t tcInit(void** context, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                    const ncclTunerConstants_v6_t* constants);
ncclResult_t tcGetCollInfo(void* context, ncclFunc_t collType, size_t nBytes, float* table, int numAlgo, int numProto,
                           int* nChannels);
/* v2: the choice as (algorithm, protocol), -1 for "keep". */
ncclResult_t tcGetChoice(void* context, ncclFunc_t collType, size_t nBytes, int* algorithm, int* protocol,
                         int* nChannels);
ncclResult_t tcGetChunkSize(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto, size_t* chunkSize);
ncclResult_t tcFinalize(void* context);

#endif /* CHORUS_TUNER_CHORUS_H_ */
