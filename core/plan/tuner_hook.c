/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_hook.c: the planner's side of the tuner plugin. Opens the tuner for a communicator (what its
 * init is told), and implements the two hooks the planner calls (comm->tunerHook, tunerChunkHook).
 *
 * The planner honours the plugin's algorithm, protocol, channel count and chunk size, but never takes
 * an answer it cannot run. A table in which the plugin made a -1 entry non-negative (the pair cannot
 * run for this call, or NCCL_ALGO / NCCL_PROTO removed it) or left nothing that can run, an error
 * returned by the plugin, or a negative channel count, is refused: the table (or the channel count,
 * or the chunk size) goes back to the planner's own, with one WARN naming the plugin per communicator,
 * collective and kind of refusal (later ones are traced). With CHORUS_PLUGIN_STRICT=1 a refusal fails
 * the collective instead.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "config/algo_select.h"
#include "plan/plan.h"
#include "plugin/tuner_plugin.h"

/* Kinds of refusal; with the collective (0..4) they index one bit of chrTuner.refusedWarned. */
enum { REFUSE_ERROR, REFUSE_ENABLED, REFUSE_NOTHING, REFUSE_CHANNELS, REFUSE_CHUNK, REFUSE_KINDS };

static const char* collName(ncclFunc_t f) {
  static const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  return (int)f >= 0 && (int)f < NCCL_NUM_FUNCTIONS ? names[f] : "?";
}

/* The plugin's answer cannot be used. Strict: fail the call. Otherwise WARN the first time for this
 * communicator, collective and kind, and go on with the planner's own choice. */
static ncclResult_t refuse(struct ncclComm* comm, ncclFunc_t func, int kind, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ncclResult_t refuse(struct ncclComm* comm, ncclFunc_t func, int kind, const char* fmt, ...) {
  struct chrTuner* tuner = comm->tuner;
  char why[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  if (chrParamInt(CHR_P_PLUGIN_STRICT) != 0)
    return chrFail(ncclInvalidUsage, "TUNER/Plugin: tuner plugin %s (ABI v%d) for %s: %s; failing because "
                   "CHORUS_PLUGIN_STRICT=1", tuner->name, tuner->version, collName(func), why);
  unsigned bit = 1u << ((unsigned)func * REFUSE_KINDS + (unsigned)kind);
  if ((__atomic_fetch_or(&tuner->refusedWarned, bit, __ATOMIC_RELAXED) & bit) == 0)
    WARN("TUNER/Plugin: refusing what tuner plugin %s (ABI v%d) chose for %s on comm 0x%llx: %s; using Chorus's own "
         "choice (said once per communicator and collective)", tuner->name, tuner->version, collName(func),
         (unsigned long long)comm->commHash, why);
  else
    TRACE(NCCL_TUNING, "tuner %s for %s refused again: %s", tuner->name, collName(func), why);
  return ncclSuccess;
}

/* Why an entry was -1 before the plugin saw it, for the refusal message. */
static const char* ignoredBecause(ncclFunc_t func, int algo, int proto) {
  unsigned algos = CHR_ALL_ALGOS, protos = CHR_ALL_PROTOS;
  if (chrAllowedAlgos(func, &algos) != ncclSuccess || chrAllowedProtos(func, &protos) != ncclSuccess) return "";
  if (!(algos & (1u << algo))) return ", removed by NCCL_ALGO";
  if (!(protos & (1u << proto))) return ", removed by NCCL_PROTO";
  return ", Chorus cannot run it for this call";
}

static ncclResult_t collInfoHook(struct ncclComm* comm, ncclFunc_t func, size_t bytes, float* table, int numAlgo,
                                 int numProto, int* nChannels) {
  if (numAlgo != CHR_NUM_ALGOS || numProto != CHR_NUM_PROTOS)
    return chrFail(ncclInternalError, "tuner hook: cost table of %dx%d", numAlgo, numProto);
  enum { N = CHR_NUM_ALGOS * CHR_NUM_PROTOS };
  float before[N];
  memcpy(before, table, sizeof(before));
  *nChannels = 0;
  int asked = 0;
  /* numPipeOps 1: Chorus plans each task on its own; regBuff 0: it registers no user buffers. */
  ncclResult_t res = chrTunerGetCollInfo(comm->tuner, func, bytes, 1, table, numAlgo, numProto, 0, &asked);
  if (res != ncclSuccess) {
    memcpy(table, before, sizeof(before));
    return refuse(comm, func, REFUSE_ERROR, "%s", chrThreadLastError());
  }
  int best = -1;
  for (int i = 0; i < N; i++) {
    if (!(before[i] >= 0.0f) && table[i] >= 0.0f) {
      int a = i / CHR_NUM_PROTOS, p = i % CHR_NUM_PROTOS;
      float now = table[i];
      memcpy(table, before, sizeof(before));
      return refuse(comm, func, REFUSE_ENABLED, "it set %s/%s to %g, an entry that was -1 (cannot be used%s)",
                    chrAlgoName(a), chrProtoName(p), (double)now, ignoredBecause(func, a, p));
    }
    if (table[i] >= 0.0f && (best < 0 || table[i] < table[best])) best = i;
  }
  if (best < 0) {
    memcpy(table, before, sizeof(before));
    return refuse(comm, func, REFUSE_NOTHING, "it left no entry that can run (every one is -1)");
  }
  if (asked < 0) {
    CHECK(refuse(comm, func, REFUSE_CHANNELS, "it asked for %d channels", asked));
  } else {
    *nChannels = asked;
  }
  TRACE(NCCL_TUNING, "tuner %s: %s %zu bytes -> %s/%s, nChannels %d", comm->tuner->name, collName(func), bytes,
        chrAlgoName(best / CHR_NUM_PROTOS), chrProtoName(best % CHR_NUM_PROTOS), asked);
  return ncclSuccess;
}

static ncclResult_t chunkHook(struct ncclComm* comm, ncclFunc_t func, size_t bytes, int algo, int proto, int nChannels,
                              size_t* chunkBytes) {
  size_t mine = *chunkBytes;
  ncclResult_t res = chrTunerGetChunkSize(comm->tuner, func, bytes, algo, proto, nChannels, chunkBytes);
  if (res != ncclSuccess) {
    *chunkBytes = mine;
    return refuse(comm, func, REFUSE_CHUNK, "%s", chrThreadLastError());
  }
  return ncclSuccess;
}

/* Ranks that share a host are Chorus's fastest domain (shared memory), so they stand in for NCCL's
 * NVLink domains. */
static void nvlDomains(const struct ncclComm* comm, ncclNvlDomainInfo_v6_t* info) {
  int minRanks = comm->nRanks, maxRanks = 0;
  for (int node = 0; node < comm->nNodes; node++) {
    int count = 0;
    for (int r = 0; r < comm->nRanks; r++) count += comm->nodeOfRank[r] == node;
    if (count < minRanks) minRanks = count;
    if (count > maxRanks) maxRanks = count;
  }
  info->nNvlDomains = comm->nNodes;
  info->minRanksPerNvlDomain = comm->nNodes > 0 ? minRanks : 0;
  info->maxRanksPerNvlDomain = maxRanks;
}

ncclResult_t chrPlanTunerAttach(struct ncclComm* comm) {
  struct chrTunerCommInfo info;
  memset(&info, 0, sizeof(info));
  info.commHash = comm->commHash;
  info.nRanks = (size_t)comm->nRanks;
  info.nNodes = (size_t)comm->nNodes;
  if (comm->nodeOfRank != NULL) nvlDomains(comm, &info.nvlDomain);
  chrPlanTunerConstants(comm, &info.constants);
  info.net = comm->net;
  CHECK(chrTunerOpen(&info, &comm->tuner));
  if (comm->tuner != NULL) {
    comm->tunerHook = collInfoHook;
    comm->tunerChunkHook = chunkHook;
  }
  return ncclSuccess;
}

ncclResult_t chrPlanTunerDetach(struct ncclComm* comm) {
  comm->tunerHook = NULL;
  comm->tunerChunkHook = NULL;
  ncclResult_t res = chrTunerClose(comm->tuner);
  comm->tuner = NULL;
  return res;
}
