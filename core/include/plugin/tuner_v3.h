/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/tuner_v3.h: tuner plugin ABI version 3 (the NCCL 2.22 generation). FROZEN.
 *
 * A tuner plugin is a shared library that exports the object
 *     const ncclTuner_v3_t ncclTunerPlugin_v3;
 * The core dlopen()s the library (RTLD_NOW|RTLD_LOCAL) and reads the object by name. A library may
 * export several versions (ncclTunerPlugin_v6, _v5, ...); the core takes the newest it knows.
 * Differences from v2: getCollInfo edits a cost table instead of returning a choice.
 *
 * General rules for every callback below:
 *  - Plain C calling convention; every callback returns ncclResult_t (ncclSuccess when all is well).
 *  - context is whatever init stored in *context; the core hands it back unchanged and never looks
 *    into it. init is called once per communicator (each gets its own context), destroy once per
 *    successful init, when that communicator is destroyed.
 *  - Threading: calls for one context come from one thread at a time; different communicators (and
 *    so different contexts) may call concurrently, so state shared between contexts must be locked.
 *  - No callback may block or talk to other ranks. Every rank must make the same choice for the same
 *    call: ranks that disagree on the algorithm cannot work together.
 */
#ifndef CHORUS_PLUGIN_TUNER_V3_H_
#define CHORUS_PLUGIN_TUNER_V3_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"
#include "plugin/tuner_common.h"

/* The object ncclTunerPlugin_v3 (32 bytes, 4 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* A communicator of nRanks ranks over nNodes nodes is being created. logFunction: the core's
   * logger (thread-safe). Out: *context, the plugin's state for this communicator. A failure means
   * the communicator runs without this tuner. */
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);

  /* Choose how to run one collective by editing its cost table.
   *   collType       ncclFuncBroadcast .. ncclFuncAllReduce
   *   nBytes         element size x count, where count is multiplied by the number of ranks for
   *                  AllGather and ReduceScatter (the size of the whole buffer)
   *   numPipeOps     number of operations grouped into this one (1 when not batched)
   *   collCostTable  declared float** but it points at ONE contiguous float[numAlgo][numProto]
   *                  (numAlgo = NCCL_NUM_ALGORITHMS, numProto = NCCL_NUM_PROTOCOLS): entry (a, p) is
   *                  ((float*)collCostTable)[a * numProto + p], the core's estimate in microseconds,
   *                  or NCCL_ALGO_PROTO_IGNORE (-1) when that pair cannot run for this call (not
   *                  supported, or removed by NCCL_ALGO / NCCL_PROTO).
   *   nChannels      in: 0. Out: > 0 sets the number of channels; 0 keeps the core's.
   * After the call the core takes the smallest non-negative entry (algorithms 0..6, then protocols
   * 0..2; ties go to the first). To force a pair, set its entry to 0.0; to forbid one, set it to -1.
   * Never make a -1 entry non-negative: the core refuses such a table and keeps its own choice.
   * Leaving the table alone defers to the core. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);

  /* The communicator is being destroyed: release context. */
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

#endif /* CHORUS_PLUGIN_TUNER_V3_H_ */
