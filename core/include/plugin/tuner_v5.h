/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/tuner_v5.h: tuner plugin ABI version 5 (the NCCL 2.28 generation). FROZEN.
 *
 * A tuner plugin is a shared library that exports the object
 *     const ncclTuner_v5_t ncclTunerPlugin_v5;
 * The core dlopen()s the library (RTLD_NOW|RTLD_LOCAL) and reads the object by name. A library may
 * export several versions (ncclTunerPlugin_v6, _v5, ...); the core takes the newest it knows.
 * Differences from v4: init gets the communicator's id, how its ranks group into fast (NVLink)
 * domains, and the core's tuning constants, which it may edit; destroy is called finalize.
 *
 * General rules for every callback below:
 *  - Plain C calling convention; every callback returns ncclResult_t (ncclSuccess when all is well).
 *  - context is whatever init stored in *context; the core hands it back unchanged and never looks
 *    into it. init is called once per communicator (each gets its own context), finalize once per
 *    successful init, when that communicator is destroyed.
 *  - Threading: calls for one context come from one thread at a time; different communicators (and
 *    so different contexts) may call concurrently, so state shared between contexts must be locked.
 *  - No callback may block or talk to other ranks. Every rank must make the same choice for the same
 *    call: ranks that disagree on the algorithm cannot work together.
 */
#ifndef CHORUS_PLUGIN_TUNER_V5_H_
#define CHORUS_PLUGIN_TUNER_V5_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"
#include "plugin/tuner_common.h"

/* The table dimensions frozen with this layout (v5 and v6 share it); the unversioned NCCL_NUM_*
 * names in tuner_common.h have the same values today. */
#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

/* How the communicator's ranks group into domains joined by the fastest links (12 bytes). */
typedef struct {
  int nNvlDomains;          /* number of domains */
  int minRanksPerNvlDomain; /* ranks in the smallest domain */
  int maxRanksPerNvlDomain; /* ranks in the largest domain */
} ncclNvlDomainInfo_v5_t;

/* The core's performance model (1152 bytes, every field a double). Latencies in microseconds,
 * bandwidths in GB/s. Indexes: [algorithm][protocol], [link kind NCCL_HW_*][algorithm][protocol],
 * [GPU generation NCCL_*_COMPCAP_IDX][node scale NCCL_TUNING_SCALE_*]. */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];                    /* offset 0 */
  double hwLatencies[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];   /* offset 168 */
  double llMaxBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];                       /* offset 672 */
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];           /* offset 768 */
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];           /* offset 864 */
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];                /* offset 960 */
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];            /* offset 1056 */
} ncclTunerConstants_v5_t;

/* The object ncclTunerPlugin_v5 (32 bytes, 4 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* A communicator is being created. Called after the core has set its tuning constants.
   *   commId         the communicator's 64-bit id (the same value the net and profiler plugins get)
   *   nRanks, nNodes its size and the number of nodes it spans
   *   logFunction    the core's logger (thread-safe)
   *   nvlDomainInfo  how its ranks group into fast domains; read-only, valid during the call
   *   constants      the core's model constants for this communicator; the plugin may edit them
   *                  during the call (valid only during the call)
   * Out: *context, the plugin's state for this communicator. */
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants);

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
   *   regBuff        1 when the user buffers are registered with the communicator, else 0
   *   nChannels      in: 0. Out: > 0 sets the number of channels; 0 keeps the core's.
   * After the call the core takes the smallest non-negative entry (algorithms 0..6, then protocols
   * 0..2; ties go to the first). To force a pair, set its entry to 0.0; to forbid one, set it to -1.
   * Never make a -1 entry non-negative: the core refuses such a table and keeps its own choice.
   * Leaving the table alone defers to the core. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);

  /* The communicator is being destroyed: release context. */
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

#endif /* CHORUS_PLUGIN_TUNER_V5_H_ */
