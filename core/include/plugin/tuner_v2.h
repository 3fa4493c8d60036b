/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/tuner_v2.h: tuner plugin ABI version 2 (the NCCL 2.21 generation). FROZEN.
 *
 * A tuner plugin is a shared library that exports the object
 *     const ncclTuner_v2_t ncclTunerPlugin_v2;
 * The core dlopen()s the library (RTLD_NOW|RTLD_LOCAL) and reads the object by name. A library may
 * export several versions (ncclTunerPlugin_v6, _v5, ...); the core takes the newest it knows.
 *
 * What a tuner does: for each collective the core is about to plan, it may choose the algorithm, the
 * protocol and the number of channels. In this version it answers with a choice (later versions edit
 * a cost table instead); the core applies a choice only when that (algorithm, protocol) pair can run
 * for the call, and otherwise keeps its own.
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
#ifndef CHORUS_PLUGIN_TUNER_V2_H_
#define CHORUS_PLUGIN_TUNER_V2_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"
#include "plugin/tuner_common.h"

/* The object ncclTunerPlugin_v2 (32 bytes, 4 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* A communicator of nRanks ranks over nNodes nodes is being created. logFunction: the core's
   * logger (thread-safe). Out: *context, the plugin's state for this communicator. A failure means
   * the communicator runs without this tuner. */
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);

  /* Choose how to run one collective.
   *   collType        ncclFuncBroadcast .. ncclFuncAllReduce
   *   nBytes          element size x count, where count is multiplied by the number of ranks for
   *                   AllGather and ReduceScatter (the size of the whole buffer)
   *   collNetSupport  1 when the COLLNET algorithms can run for this call
   *   nvlsSupport     1 when the NVLS algorithms can run for this call
   *   numPipeOps      number of operations grouped into this one (1 when not batched)
   * In: *algorithm = *protocol = -1 (NCCL_ALGO_UNDEF, NCCL_PROTO_UNDEF), *nChannels = 0.
   * Out: *algorithm (NCCL_ALGO_*) and *protocol (NCCL_PROTO_*), both, to choose that pair; leaving
   * them -1 keeps the core's choice. *nChannels > 0 sets the number of channels; 0 keeps the core's. */
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels);

  /* The communicator is being destroyed: release context. */
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

#endif /* CHORUS_PLUGIN_TUNER_V2_H_ */
